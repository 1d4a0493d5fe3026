"""The pieces of tools/evaluate_detector.py: scenarios, detectors, scoring, robustness."""
