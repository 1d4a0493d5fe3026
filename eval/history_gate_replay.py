"""How soon the history gate catches a slowdown, replayed on recorded runs of unchanged code (issue 11).

    python eval/history_gate_replay.py --db URL [--slowdown 0.05] [--trials 200] [--seed 0]

The history at URL holds N runs of the same code (e.g. the 20 runs `eval/unchanged_gate.py`
records). Under unchanged code the runs are exchangeable, so each trial draws a random order of
them, takes the first N-K as the series' history (or `--history H` runs drawn from those N-K
with replacement, as a longer series) and judges the last K (`--after`, default 2) as the runs
after a change: one case's results in those runs (raw samples and per-process values) are
multiplied by (1 + slowdown), as if its operator had slowed down without its config changing. The
judge is the one `benchmark gate` uses (`benchmark.gate.judge.decide_results`, then Benjamini-Hochberg
across the run with `control_fdr`), with the settings of configs/gates.yaml (`--gates`). The
slowed case goes round the recorded time series, one per trial.

It prints, per case: the share of its trials whose gate failed on it by the 1st, 2nd, ... changed
run (`--after`, default 2; target: >= 90% by the second for a 5% slowdown), its between-run noise in the
recording, its minimum effect, and the *bound*: the probability that the best possible test of the
first two changed runs (one with `--after 1`) fails it; and over all trials how often any other
case failed (false alarms). With `--slowdown 0` every failure is a false one. A benchmark on
recorded data, not a test.

The bound is the power of a one-sided z test of the mean of those changed runs against the old
level, at the detector's false-alarm level per run and direction (`Params.alpha / 2`), that knows
the level and the noise exactly (normal, independent runs) and also needs the mean beyond the
minimum effect. Under that noise no test of those runs at that level does better (Neyman-Pearson);
where the bound is under 90%, the series' noise or its minimum effect, not the detector, keeps the
target out of reach.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import statistics
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark.analysis.adjust import estimate  # noqa: E402
from benchmark.analysis.online import Params  # noqa: E402
from benchmark.datamodel.result import (  # noqa: E402
    CaseResult,  # noqa: E402
    ProcessValue,
    ok_process_values,
    process_probe,
)
from benchmark.datamodel.series import Series, SeriesKey  # noqa: E402
from benchmark.datamodel.verdict import FAILING  # noqa: E402
from benchmark.gate.judge import control_fdr, decide_results  # noqa: E402
from benchmark.gate.series import run_value  # noqa: E402
from benchmark.gate.settings import load_gates, with_probe_adjust  # noqa: E402
from benchmark.store import open_store  # noqa: E402


def _scaled(result: CaseResult, factor: float) -> CaseResult:
    """`result` with its raw samples and per-process entries `factor` times as slow."""

    def one(p: ProcessValue) -> ProcessValue:
        value = None if p.value is None else p.value * factor
        return dataclasses.replace(p, value=value, samples=tuple(x * factor for x in p.samples))

    return dataclasses.replace(
        result,
        samples=[x * factor for x in result.samples or []],
        processes=[one(p) for p in result.processes or []],
    )


def _series(key: SeriesKey, history: list[tuple[int, CaseResult]]) -> Series:
    """The series' earlier runs as the store's `baselines` would give them (oldest first)."""
    samples = [np.asarray(r.samples or [], dtype=float) for _, r in history]
    procs = [np.asarray(ok_process_values(r.processes), dtype=float) for _, r in history]
    values = [run_value(p, x) for p, x in zip(procs, samples, strict=True)]
    return Series(
        key=key,
        values=np.asarray(values, dtype=float),
        run_ids=[pos for pos, _ in history],
        result_ids=[pos for pos, _ in history],
        times=[float(pos) for pos, _ in history],
        commits=[None] * len(history),
        samples=samples,
        process_values=procs,
        probes=np.asarray([process_probe(r.processes) or np.nan for _, r in history], dtype=float),
    )


def bound(slowdown: float, noise: float, min_effect: float, runs: int, alpha: float) -> float:
    """The power of the best test of `runs` changed runs (module doc): a one-sided z test at level
    `alpha` of their mean log value, each run with known noise `noise` (sd of the log), that must
    also reach the minimum effect. Pure."""
    se = noise / np.sqrt(runs)
    if se <= 0:
        return float(np.log1p(slowdown) >= np.log1p(min_effect))
    need = max(float(sps.norm.isf(alpha)) * se, float(np.log1p(min_effect)))
    return float(sps.norm.sf((need - np.log1p(slowdown)) / se))


def load(db: str) -> list[dict[SeriesKey, CaseResult]]:
    """The ok time results of every recorded run, oldest run first."""
    url = db if "://" in db else f"sqlite:///{Path(db).resolve()}"
    with open_store(url, create=False, readonly=True) as store:
        run_ids = sorted(r.id if hasattr(r, "id") else r["id"] for r in store.runs(limit=None))
        runs = []
        for run_id in run_ids:
            ok = [r for r in store.results(run_id) if r.status == "ok" and (r.metric or "time") == "time"]
            runs.append({SeriesKey.of(r): r for r in ok})
    return runs


def replay(
    runs,
    gates,
    slowdown: float,
    trials: int,
    seed: int,
    fdr_alpha: float,
    after: int = 2,
    history: int | None = None,
    trace: str | None = None,
):
    """Per slowed case: [trials whose gate failed on it by the 1st, 2nd, ... `after`-th changed
    run, trials]; the other cases' failures (each a false one). `history`: draw that many history
    runs with replacement from the runs not judged as changed (default: each of them once).
    `trace`: print the slowed case's decision at each changed run of the trials that slow the case
    of that id."""
    keys = sorted(set.intersection(*(set(r) for r in runs)))
    rng = np.random.default_rng(seed)
    caught = {k: [0] * (after + 1) for k in keys}
    others: collections.Counter = collections.Counter()
    for t in range(trials):
        target = keys[t % len(keys)]
        name = (target.case_id, target.place, target.mode)
        perm = rng.permutation(len(runs))
        pool = perm[:-after] if history is None else rng.choice(perm[:-after], size=history, replace=True)
        order = [runs[i] for i in [*pool, *perm[-after:]]]
        # run positions 1..N stand in for run ids: what the judge reports, in time order
        timeline: dict[SeriesKey, list[tuple[int, CaseResult]]] = {k: [] for k in keys}
        for pos, run in enumerate(order[:-after], start=1):
            for k in keys:
                timeline[k].append((pos, dataclasses.replace(run[k], run_id=pos)))
        first_hit = None
        for i, run in enumerate(order[-after:]):
            pos = len(order) - after + 1 + i
            results = {
                k: dataclasses.replace(_scaled(run[k], 1.0 + slowdown) if k == target else run[k], run_id=pos)
                for k in keys
            }
            bases = {k: _series(k, timeline[k]) for k in keys}
            decisions = decide_results(results.values(), bases, gates)
            control_fdr(decisions, fdr_alpha)
            failed = {(d.case_id, d.place, d.mode) for d in decisions if d.verdict in FAILING}
            if trace is not None and target.case_id == trace:
                d = next(d for d in decisions if (d.case_id, d.place, d.mode) == name)
                print(f"trial {t + 1}, changed run {i + 1}: {d.verdict.value}; effect {d.effect:+.1%} "
                      f"[{d.ci_low:+.1%}, {d.ci_high:+.1%}], p {d.p_value:.2g}; {d.evidence}; {d.probe}")  # fmt: skip
            if name in failed and first_hit is None:
                first_hit = i
            for f in failed - {name}:
                others[f] += 1
            for k in keys:
                timeline[k].append((pos, results[k]))
        for i in range(after):
            caught[target][i] += first_hit is not None and first_hit <= i
        caught[target][after] += 1
    return caught, others


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--db",
        required=True,
        help="history of N >= 14 runs of unchanged code (SQLAlchemy URL, or a SQLite file's path)",
    )
    parser.add_argument(
        "--slowdown", type=float, default=0.05, help="relative slowdown of the slowed case (0: none)"
    )
    parser.add_argument("--trials", type=int, default=200, help="trials in all, spread over the cases")
    parser.add_argument(
        "--after",
        type=int,
        default=2,
        help="changed runs judged after the change (default 2; the target is by the 2nd)",
    )
    parser.add_argument(
        "--history",
        type=int,
        default=None,
        help="history runs per trial, drawn with replacement from the runs not judged (default: each "
        "once; a nightly's series is longer than a recording, and its gate has more runs to estimate noise from)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the run orders")
    parser.add_argument(
        "--first",
        type=int,
        default=None,
        metavar="N",
        help="only the first N recorded runs (e.g. the quiet runs of eval/probe_runs.py, whose runs with "
        "a neighbour come last)",
    )
    parser.add_argument(
        "--fdr-alpha",
        type=float,
        default=None,
        help="level of Benjamini-Hochberg across the run (default: the gate's alpha, as `benchmark gate`; "
        "1: the detector alone)",
    )
    parser.add_argument("--gates", default=None, help="gate settings (default configs/gates.yaml)")
    parser.add_argument(
        "--trace",
        default=None,
        metavar="CASE_ID",
        help="print that case's decision at each changed run it is slowed in",
    )
    parser.add_argument(
        "--probe-adjust",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="judge on values adjusted by the reference probe where a series' history shows it lowers "
        "its noise (default: probe_adjust of --gates, true), or raw (--no-probe-adjust); a slowed "
        "case's probe does not move, as a slowdown of the framework's would not",
    )
    args = parser.parse_args(argv)
    runs = load(args.db)[: args.first]
    if len(runs) < 14:
        parser.error(
            f"{args.db} holds {len(runs)} runs; the history gate needs 12 earlier runs, so at least 14"
        )
    gates = with_probe_adjust(load_gates(args.gates), args.probe_adjust)
    fdr_alpha = gates.spec.defaults.alpha if args.fdr_alpha is None else args.fdr_alpha
    if not 1 <= args.after <= len(runs) - 12:
        parser.error(
            f"--after {args.after}: expected 1..{len(runs) - 12} (12 earlier runs must stay as history)"
        )
    if args.history is not None and args.history < 12:
        parser.error(f"--history {args.history}: the history gate needs at least 12 earlier runs")
    caught, others = replay(
        runs, gates, args.slowdown, args.trials, args.seed, fdr_alpha, args.after, args.history, args.trace
    )
    drawn = "" if args.history is None else f", histories of {args.history} runs drawn with replacement"
    adjusted = "adjusted by the probe" if gates.spec.defaults.probe_adjust else "raw values"
    print(
        f"{len(runs)} recorded runs, {len(caught)} time series, slowdown {args.slowdown:+.1%}, {args.trials} trials"
        + f", Benjamini-Hochberg at {fdr_alpha:g}{drawn}, {adjusted}"
    )
    print(
        f"{'case':<50} {'place':<5} {'mode':<9} {'noise':>6} {'min eff':>7} "
        + "".join(f" {f'by {i}.':>6}" for i in range(1, args.after + 1))
        + f" {'bound':>6} {'trials':>6}"
    )
    shares, bounds = [], []
    level = Params().alpha / 2
    by_run = min(2, args.after)  # the changed run the target counts by
    for k, counts in caught.items():
        *by, n = counts
        if not n:
            continue
        values = [
            run_value(np.asarray(ok_process_values(r[k].processes)), np.asarray(r[k].samples)) for r in runs
        ]
        logs = np.log(np.asarray(values, dtype=float))
        if gates.spec.defaults.probe_adjust:  # the noise the adjusted values have, as the gate would see it
            probes = [process_probe(r[k].processes) for r in runs]
            adj = estimate(np.exp(logs), probes)
            logs = logs - np.log([adj.factor(p) for p in probes])
        noise = float(np.std(np.diff(logs), ddof=1) / np.sqrt(2))
        min_effect = gates.for_case(k.case_id, runs[0][k].name, k.place, "time").min_effect
        shares.append(by[by_run - 1] / n)
        bounds.append(bound(args.slowdown, noise, min_effect, by_run, level))
        print(
            f"{k.case_id:<50} {k.place:<5} {k.mode:<9} {noise:6.1%} {min_effect:7.0%}"
            + "".join(f" {b / n:6.0%}" for b in by)
            + f" {bounds[-1]:6.0%} {n:6d}"
        )
    print(
        f"cases caught by run {by_run} after the change in >= 90% of their trials: {sum(s >= 0.9 for s in shares)} of {len(shares)}; "
        f"median share {statistics.median(shares):.0%}"
    )
    print(
        f"cases whose bound (the best test of {by_run} changed run(s) at one-sided {level:g}, noise and "
        f"minimum effect as above) reaches 90%: {sum(b >= 0.9 for b in bounds)} of {len(bounds)}"
    )
    judged = args.after * args.trials
    print(
        f"other cases failing: {sum(others.values())} failures in {judged} judged runs ({len(others)} distinct cases)"
    )
    for f, n in others.most_common(5):
        print(f"  {f[0]} {f[1]} {f[2]}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
