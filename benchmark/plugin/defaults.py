"""The suite's default worker-process counts: named in the option's help (benchmark/plugin/hooks.py)
and applied by the run (benchmark/plugin/session.py). Standard library only, like the hooks."""

DEFAULT_PROCESSES = 3
QUICK_PROCESSES = 2  # smoke runs: the fewest processes that still show a between-process spread
