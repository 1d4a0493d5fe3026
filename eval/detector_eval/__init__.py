"""The pieces of eval/evaluate_detector.py: scenarios, detectors, scoring, robustness."""
