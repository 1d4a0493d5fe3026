"""`benchmark compare`'s sides and defaults: plain constants, so that `benchmark compare --help` shows
them without importing the job (numpy, scipy)."""

from __future__ import annotations

from benchmark.sandbox.limits import DEFAULT_PROCESSES

SIDES = ("A", "B")
DEFAULT_BUDGET_MIN = 10.0
DEFAULT_ALPHA = 0.01  # a job's error budget for slower/faster verdicts, over all cases and looks
DEFAULT_MIN_EFFECT = 0.02  # differences below 2% are "same"
DEFAULT_MAX_PAIRS = 200
DEFAULT_TRIAL_PROCESSES = DEFAULT_PROCESSES  # each trial gets one suite process's settings (per_process)
# How a pair's two trials run: one after the other, or at the same time on two cores.
PAIRINGS = ("back-to-back", "simultaneous")
DEFAULT_PAIRING = "back-to-back"
