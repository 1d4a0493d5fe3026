"""Are a worker's first trials slower than its later ones? Read from a recorded history (issue 29).

    python eval/first_trials.py --db URL [--case SUBSTRING]

In a suite run each round is one worker process serving one trial of every case, in the order of
`result_process.trial_order`; a trial's position in its worker is its order minus the first order
of its round. For every ok trial this takes its value relative to the median of its case's trials
in that run (log ratio), and prints, per case (or per kind and mode) and per position in the worker
(1st, 2nd, 3rd-5th, later), how many trials there are, their median excess over the case's run
median, and how many were over 20% slower. Where a worker's first trials were slow, the first
positions stand out. A benchmark on recorded data, not a test.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark.store import open_store  # noqa: E402

BANDS = ((0, "1st"), (1, "2nd"), (2, "3rd-5th"), (5, "later"))


def band(position: int) -> str:
    name = BANDS[0][1]
    for start, label in BANDS:
        if position >= start:
            name = label
    return name


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", required=True, help="history URL or SQLite path")
    p.add_argument("--case", default=None, help="only cases whose id contains this")
    p.add_argument("--by", choices=("case", "kind"), default="kind", help="group by case or by kind and mode")
    args = p.parse_args(argv)
    url = args.db if "://" in args.db else f"sqlite:///{Path(args.db).resolve()}"
    excess: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    with open_store(url, create=False, readonly=True) as store:
        for run in sorted(store.runs(limit=None), key=lambda r: r.id):
            results = [
                r for r in store.results(run.id) if r.status == "ok" and (r.metric or "time") == "time"
            ]
            trials = [(p.order, p.index) for r in results for p in r.processes or ()]
            if not trials:
                continue
            # a round's trials are consecutive in the order: round k holds the trials with index k
            first = {}
            for order, index in trials:
                first[index] = min(first.get(index, order), order)
            for r in results:
                if args.case and args.case not in r.case_id:
                    continue
                values = [p.value for p in r.processes or () if p.status == "ok" and p.value]
                if len(values) < 2:
                    continue
                mid = statistics.median(values)
                group = r.case_id if args.by == "case" else f"{r.kind} {r.mode}"
                for proc in r.processes or ():
                    if proc.status == "ok" and proc.value:
                        position = proc.order - first[proc.index]
                        excess[(group, band(position))].append(float(np.log(proc.value / mid)))
    groups = sorted({g for g, _ in excess})
    print(f"{'group':<46} {'position':<8} {'trials':>6} {'median excess':>13} {'> +20%':>7}")
    for g in groups:
        for _, label in BANDS:
            x = excess.get((g, label))
            if not x:
                continue
            slow = sum(v > np.log(1.2) for v in x)
            print(f"{g[:46]:<46} {label:<8} {len(x):6d} {np.expm1(np.median(x)):+12.1%} {slow:7d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
