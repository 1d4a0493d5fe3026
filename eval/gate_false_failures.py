"""False failures and sensitivity of the run-vs-run A/B, on simulated unchanged code (issue 11).

Each worker process settles at its own level, lognormal around the true one (the between-process
spread, 5% or 10%), and its rounds are tight around that level (1%). Per setting it prints, over
`--trials` pairs of runs:

* ``false``: the share of pairs of unchanged runs the process A/B calls slower (a failed gate);
* ``false+hist``: the same with the between-process spread of 10 earlier runs pooled in;
* ``power20``: the share of 20% slowdowns called slower (with the history's spread);
* ``raw``: the old gate's A/B on unchanged runs as they were measured before worker processes (all
  rounds of a run from one process), rounds taken as independent samples: the share called slower
  (fewer trials: its bootstrap is slow). It does not depend on the processes column.

    python eval/gate_false_failures.py [--trials 2000] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np
from raw_samples import compare  # eval/raw_samples.py, beside this script

from benchmark.analysis.ab_test import compare_processes
from benchmark.analysis.robust import pooled_process_spread
from benchmark.datamodel.verdict import Verdict

ALPHA, MIN_EFFECT, WITHIN, ROUNDS = 0.01, 0.05, 0.01, 30


def _run(rng, processes: int, between: float, factor: float = 1.0) -> list[np.ndarray]:
    levels = 1e-4 * factor * np.exp(rng.normal(0.0, between, processes))
    return [lv * np.exp(rng.normal(0.0, WITHIN, ROUNDS)) for lv in levels]


def _values(run: list[np.ndarray]) -> np.ndarray:
    return np.array([np.median(x) for x in run])


def measure(processes: int, between: float, trials: int, raw_trials: int, rng) -> dict[str, float]:
    kw = {"min_effect": MIN_EFFECT, "alpha": ALPHA}
    false = false_hist = power = 0
    for _ in range(trials):
        spread = pooled_process_spread([_values(_run(rng, processes, between)) for _ in range(10)])
        a, b = _values(_run(rng, processes, between)), _values(_run(rng, processes, between))
        false += compare_processes(a, b, **kw).verdict == Verdict.REGRESSION
        false_hist += compare_processes(a, b, spread=spread, **kw).verdict == Verdict.REGRESSION
        slow = _values(_run(rng, processes, between, 1.2))
        power += compare_processes(a, slow, spread=spread, **kw).verdict == Verdict.REGRESSION
    raw = sum(
        compare(_run(rng, 1, between)[0], _run(rng, 1, between)[0], **kw).verdict == Verdict.REGRESSION
        for _ in range(raw_trials)
    )  # fmt: skip
    return {
        "false": false / trials,
        "false+hist": false_hist / trials,
        "power20": power / trials,
        "raw": raw / raw_trials if raw_trials else float("nan"),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=2000, help="pairs of runs per setting (default 2000)")
    p.add_argument(
        "--raw-trials", type=int, default=200, help="pairs for the slow raw-rounds A/B (default 200)"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"alpha {ALPHA}, min_effect {MIN_EFFECT:.0%}, {ROUNDS} rounds of {WITHIN:.0%} spread per process")
    print(f"{'processes':>9} {'between':>8} {'false':>7} {'false+hist':>10} {'power20':>8} {'raw':>6}")
    for processes in (2, 3, 5):
        for between in (0.05, 0.10):
            m = measure(processes, between, args.trials, args.raw_trials, rng)
            print(f"{processes:>9} {between:>8.0%} {m['false']:>7.2%} {m['false+hist']:>10.2%} "
                  f"{m['power20']:>8.1%} {m['raw']:>6.1%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
