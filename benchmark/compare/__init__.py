"""`benchmark compare`: two environments (e.g. the develop build and a PR build of paddle) measured
in one job, on one machine, with sequential stopping.

Each side is an interpreter (VENV/bin/python) with its own paddle; the harness's code comes from
this checkout (its root goes first on the workers' PYTHONPATH), so only the framework differs.
The job runs in *steps*. A step starts a fresh worker process of side A and one of side B, in a
random order; each serves one timing trial (`time` task: prepare, warm up, calibrated rounds) of
every case still open, in a random permutation of its own. The two trials of a case in one step
form a *pair*; after the step every open case gets the sequential verdict of
`benchmark.analysis.sequential` (paired log ratios, alpha spent over cases and looks). A case
stays open while it is inconclusive; the job ends when no case is open, when the next step would
overrun the budget, or at `max_pairs`.

Both sides are stored in the history as two runs of one run group ("compare-<UTC timestamp>"),
each with a note naming its side, interpreter and paddle version, and with per-process entries.
They live in series of their own: the machine fingerprint gets a "/compare-A" or "/compare-B"
suffix, so a PR build never becomes a baseline of the suite's history on this machine.

Modules: `run` (`compare`: the whole job behind `benchmark compare`, from its request to the exit
status), `sides` (checking each side's interpreter), `job` (steps, workers, sequential stopping),
`output` (the printed lines, the JSON, storing both sides in the history), `counts` (with
`--instructions`: both sides' instruction counts under callgrind after the timing, and their
verdict). Each imports its heavy dependencies where it uses them, so `benchmark compare --help`
stays light.
"""
