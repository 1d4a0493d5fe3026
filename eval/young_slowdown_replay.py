"""Does a slowdown that starts at run 6 of a young history fail the gate on every run until it is
reverted? Replayed on recorded runs of unchanged code (issue 29).

    python eval/young_slowdown_replay.py --db URL [--slowdown 0.15] [--start 6] [--until 10] [--trials 40]

The history at URL holds N >= `--until` + 2 runs of unchanged code (e.g. the on-runs of
eval/probe_runs.py). Each trial draws a random order of them (the runs are exchangeable under
unchanged code) and replays the gate run by run from an empty history, with the judge `benchmark
gate` uses (`decide_results`, then Benjamini-Hochberg across the run): one case's results (raw
samples and process values; not its probe, as a slowdown of the framework would leave the probe)
are multiplied by 1 + `--slowdown` from run `--start` to run `--until`, and are back at their
recorded values after it. The slowed case goes round the op series, one per trial.

It prints, per slowed series: its run-to-run spread over the recorded runs (`cv`, the sd of the
log run values); the slowdown its first slowed run needs to be significant on its own against the
`--start` - 1 runs before it with that spread (`needs`: one-sided t at the gate's alpha over the
run's m series, the level Benjamini-Hochberg asks of a run's only change), with the degrees of
freedom of a spread of that many runs; the same with that spread pooled with the prior the judge
fitted at run `--start` (`pooled`, median over the trials; benchmark.analysis.pooled_noise); the
share of
trials where the gate failed it on every slowed run, and on run `--start` and `--start` + 1; the
share where it passed both runs after the revert; and over all trials the other cases' failures
(each a false one). With `--no-probe-adjust` the gate judges raw values; with `--no-pool` young
series keep their own noise (an ablation). A benchmark on recorded data, not a test.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))

from history_gate_replay import _scaled, _series, load  # noqa: E402

from benchmark.analysis.robust import between_run_noise  # noqa: E402
from benchmark.datamodel.series import SeriesKey  # noqa: E402
from benchmark.datamodel.verdict import FAILING  # noqa: E402
from benchmark.gate import judge  # noqa: E402
from benchmark.gate.judge import control_fdr, decide_results  # noqa: E402
from benchmark.gate.settings import load_gates, with_probe_adjust  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", required=True, help="history of runs of unchanged code")
    p.add_argument("--slowdown", type=float, default=0.15)
    p.add_argument("--start", type=int, default=6, help="the first slowed run (1-based; default 6)")
    p.add_argument("--until", type=int, default=10, help="the last slowed run (default 10)")
    p.add_argument("--after", type=int, default=2, help="runs judged after the revert (default 2)")
    p.add_argument("--trials", type=int, default=40)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--first",
        type=int,
        default=None,
        metavar="N",
        help="only the first N recorded runs (e.g. the quiet runs of eval/probe_runs.py, whose runs with "
        "a neighbour come last)",
    )
    p.add_argument("--kind", default="op", help="the kind of the slowed series (default op)")
    p.add_argument("--probe-adjust", action=argparse.BooleanOptionalAction, default=None,
                   help="adjusted by the probe (default: as configs/gates.yaml) or raw")  # fmt: skip
    p.add_argument("--no-pool", action="store_true",
                   help="judge young series on their own between-run noise only, not pooled with the "
                        "run's other series (an ablation of benchmark.analysis.pooled_noise)")  # fmt: skip
    args = p.parse_args(argv)
    judged_priors = []  # the priors the judge fits, one dict per decide_results call
    pool = judge.noise_priors

    def _priors(series):  # the judge's own, kept for the summary; none with --no-pool
        judged_priors.append({} if args.no_pool else pool(series))
        return judged_priors[-1]

    judge.noise_priors = _priors
    runs = load(args.db)[: args.first]
    n = args.until + args.after
    if len(runs) < n:
        p.error(f"{args.db} holds {len(runs)} runs; --until {args.until} + --after {args.after} needs {n}")
    gates = with_probe_adjust(load_gates(None), args.probe_adjust)
    alpha = gates.spec.defaults.alpha
    keys = sorted(set.intersection(*(set(r) for r in runs)))
    targets = [k for k in keys if (runs[0][k].kind or "") == args.kind]
    rng = np.random.default_rng(args.seed)
    every, first_two, clean_after, trials = (collections.Counter() for _ in range(4))
    others: collections.Counter = collections.Counter()
    failed_runs = 0  # judged runs where another series failed (the gate failed unchanged code)
    failed_at: collections.Counter = collections.Counter()  # the same, by the run's position
    priors = []  # the prior the judge fitted at each trial's first slowed run
    for t in range(args.trials):
        target = targets[t % len(targets)]
        order = [runs[i] for i in rng.permutation(len(runs))[:n]]
        timeline = {k: [] for k in keys}
        failed_on = []
        for pos, run in enumerate(order, start=1):
            slowed = args.start <= pos <= args.until
            results = {
                k: dataclasses.replace(_scaled(run[k], 1.0 + args.slowdown) if slowed and k == target else run[k],
                                       run_id=pos)
                for k in keys
            }  # fmt: skip
            if pos > 1:
                bases = {k: _series(k, timeline[k]) for k in keys}
                decisions = decide_results(results.values(), bases, gates)
                if pos == args.start:
                    priors.append(judged_priors[-1].get("time"))
                control_fdr(decisions, alpha)
                failed = {_key(d) for d in decisions if d.verdict in FAILING}
                if target in failed:
                    failed_on.append(pos)
                falsely = failed - {target}
                for f in falsely:
                    others[f] += 1
                failed_runs += bool(falsely)
                failed_at[pos] += bool(falsely)
            for k in keys:
                timeline[k].append((pos, results[k]))
        slowed_runs = set(range(args.start, args.until + 1))
        trials[target] += 1
        every[target] += slowed_runs <= set(failed_on)
        first_two[target] += {args.start, args.start + 1} <= set(failed_on)
        clean_after[target] += not (set(failed_on) - slowed_runs)
    mode = "adjusted by the probe" if gates.spec.defaults.probe_adjust else "raw values"
    print(f"{len(runs)} recorded runs; {len(targets)} {args.kind} series; +{args.slowdown:.0%} on runs "
          f"{args.start}..{args.until}, then {args.after} reverted runs; {args.trials} trials; {mode}")  # fmt: skip
    # What the first slowed run needs to be significant on its own: its run value against the
    # `start - 1` earlier ones and their between-run spread (one-sided t with the degrees of freedom
    # of that spread), alone ('needs') and pooled with the prior the judge fitted ('pooled').
    level = args.start - 1
    _, df = between_run_noise(np.exp(np.arange(level)))
    # As the run's only change among len(keys) series, Benjamini-Hochberg asks p <= alpha / m.
    q = 1 - alpha / len(keys)
    fitted = [x for x in priors if x is not None]
    d0 = float(np.median([x.df for x in fitted])) if fitted else 0.0
    s0 = float(np.median([x.sigma for x in fitted])) if fitted else 0.0
    if fitted:
        print(f"the judge's prior at run {args.start}: median s0 {s0:.2%}, d0 {d0:.1f} "
              f"(d0 {min(x.df for x in fitted):.1f}..{max(x.df for x in fitted):.1f} over {len(fitted)} trials)")  # fmt: skip
    print(f"{'series':<50} {'cv':>6} {'needs':>6} {'pooled':>6} {'trials':>6} {'every':>6} {'1st+2nd':>7} "
          f"{'after ok':>8}")  # fmt: skip
    reachable = 0
    for k in targets:
        if trials[k]:
            name = f"{k.case_id} {k.mode}"
            logs = np.log([float(r[k].stats.median) for r in runs])
            cv = float(np.std(logs, ddof=1))
            needs = math.expm1(float(stats.t.ppf(q, df)) * math.sqrt(1 + 1 / level) * cv)
            sigma = math.sqrt((d0 * s0**2 + df * cv**2) / (d0 + df))
            pooled = math.expm1(float(stats.t.ppf(q, d0 + df)) * math.sqrt(1 + 1 / level) * sigma)
            reachable += (pooled if fitted else needs) <= args.slowdown
            print(f"{name[:50]:<50} {cv:6.1%} {needs:6.1%} {pooled:6.1%} {trials[k]:6d} {every[k] / trials[k]:6.0%} "
                  f"{first_two[k] / trials[k]:7.0%} {clean_after[k] / trials[k]:8.0%}")  # fmt: skip
    print(
        f"series whose +{args.slowdown:.0%} can be significant on run {args.start} alone ("
        f"{'pooled' if fitted else 'needs'} <= +{args.slowdown:.0%}, {level} earlier runs, one-sided t at "
        f"{alpha}/{len(keys)}): {reachable} of {len(targets)}"
    )
    total = sum(trials.values())
    print(f"all: failed on every slowed run in {sum(every.values())} of {total} trials; on runs {args.start} and "
          f"{args.start + 1} in {sum(first_two.values())}; passed after the revert in {sum(clean_after.values())}")  # fmt: skip
    print(f"other series failing: {sum(others.values())} in {total * (n - 1)} judged runs; judged runs "
          f"where one did: {failed_runs} (by run: {', '.join(f'{k}: {failed_at[k]}' for k in range(2, n + 1))}, "
          f"of {total} each)")  # fmt: skip
    for k, c in others.most_common(5):
        print(f"  {k.case_id} {k.place} {k.mode}: {c}")
    return 0


def _key(d) -> SeriesKey:
    """The series key of a decision, as `load` keys the results."""
    return SeriesKey(d.case_id, d.config_hash, d.place, d.mode, d.series_metric)


if __name__ == "__main__":
    sys.exit(main())
