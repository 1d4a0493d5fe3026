"""The reference probe on real runs (issue 29, part 4): run-to-run spread raw and adjusted, the gate
on unchanged code from an empty history (raw and adjusted, a CPU-hogging neighbour included), and
the probe's cost.

    python eval/probe_runs.py --out DIR [--runs 20] [--off 10] [--hog 2] [-- PYTEST_ARGS...]

Runs of the default CPU suite (`pytest benchmark/ --bench-place cpu`), each in a fresh process,
in this order: on-run 1, off-run 1, on-run 2, off-run 2, ... while there are off-runs left
(`--off`), then the remaining on-runs (`--runs` in all), then `--hog` on-runs with a neighbour:
a busy Python loop at normal priority, started before the run and killed after it.

* An *on-run* times the probe (the default) and goes into DIR/on.sqlite; after each, in fresh
  processes, `benchmark gate --run latest --format json` judges it adjusted (the default) and with
  `--no-probe-adjust` (raw). The history starts empty, so the young series' rule judges the first
  runs and the history detector the later ones.
* An *off-run* runs with `--bench-no-probe` into DIR/off.sqlite: its wall time beside the on-run
  before it is the probe's cost (the ratio per pair).

Every run's figures are appended to DIR/runs.jsonl as it ends (nothing is lost if the script is
stopped); `--summary-only` prints the summary of what DIR holds. The summary gives, per time
series of the on-runs without a neighbour: its run values' CV across runs, raw and adjusted (beta
estimated by `benchmark.analysis.adjust.estimate` from those same runs, as the gate would with that
history; 0 where it does not lower the held-out noise), first over the first 10 runs and then over
all; the gates' failures per run; the wall-time ratio of each on/off pair. A benchmark on the
machine it runs on, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark.analysis.adjust import estimate  # noqa: E402
from benchmark.datamodel.result import process_probe  # noqa: E402
from benchmark.store import open_store  # noqa: E402

HOG = "while True:\n    pass\n"


def _suite(db: str, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "benchmark/", "-q", "-p", "no:cacheprovider", "--bench-place",
            "cpu", "--bench-db", db, *extra]  # fmt: skip


def _gate(db: str, env: dict[str, str], *flags: str) -> tuple[int, list[str]]:
    judge = [sys.executable, "-m", "benchmark.cli", "gate", "--format=json"]
    cmd = [*judge, "--run", "latest", "--db", db, *flags]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    try:
        decisions = json.loads(proc.stdout).get("decisions", [])
    except json.JSONDecodeError:
        return proc.returncode, [f"gate output: {(proc.stderr or proc.stdout).strip()[-300:]}"]
    fails = [
        f"{d['case_id']}[{d['mode']}] {d['verdict']} {d['effect']:+.1%}"
        for d in decisions
        if d.get("failing")
    ]
    return proc.returncode, fails


def _one_run(kind: str, db: str, env: dict[str, str], extra: list[str], hog: bool) -> dict:
    neighbour = subprocess.Popen([sys.executable, "-c", HOG]) if hog else None
    try:
        t0 = time.perf_counter()
        proc = subprocess.run(_suite(db, extra), cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    row = {"kind": kind, "hog": hog, "wall_s": wall, "suite_exit": proc.returncode}
    with open_store(db) as store:
        row["run"] = store.latest_run_id()
    if kind == "on":
        row["gate_adjusted"], row["fail_adjusted"] = _gate(db, env)
        row["gate_raw"], row["fail_raw"] = _gate(db, env, "--no-probe-adjust")
    return row


def _series(
    db: str, run_ids: list[int]
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, str]]:
    """Per series (case-place-mode) of the time metric: run values, probes, kinds; runs in order."""
    values: dict[str, list[float]] = {}
    probes: dict[str, list[float]] = {}
    kinds: dict[str, str] = {}
    with open_store(db) as store:
        for run_id in run_ids:
            for r in store.results(run_id):
                if r.status != "ok" or (r.metric or "time") != "time":
                    continue
                key = f"{r.case_id}-{r.place}-{r.mode}"
                kinds[key] = r.kind or "?"
                values.setdefault(key, []).append(float(r.stats.median))
                p = process_probe(r.processes)
                probes.setdefault(key, []).append(float("nan") if p is None else p)
    return values, probes, kinds


def _cv(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1) / np.mean(x))


def cvs(values: list[float], probes: list[float]) -> tuple[float, float, float, bool]:
    """(raw CV, adjusted CV, beta, used) of one series' run values."""
    v, p = np.asarray(values, dtype=float), np.asarray(probes, dtype=float)
    adj = estimate(v, p)
    adjusted = v / np.asarray([adj.factor(x) for x in p])
    return _cv(v), _cv(adjusted), adj.beta, adj.used


def summary(out: Path) -> None:
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
    on = [r for r in rows if r["kind"] == "on"]
    quiet = [r["run"] for r in on if not r["hog"]]
    values, probes, kinds = _series(f"sqlite:///{out / 'on.sqlite'}", quiet)
    for label, n in (("first 10 runs", 10), (f"all {len(quiet)} runs", len(quiet))):
        print(f"\n== run-to-run CV of run values, {label} without a neighbour ==")
        print(f"{'series':<58} {'kind':<8} {'raw CV':>7} {'adj CV':>7} {'beta':>5} used")
        raw_ops, adj_ops = [], []
        for key in sorted(values):
            v, p = values[key][:n], probes[key][:n]
            if len(v) < 3:
                continue
            raw, adj, beta, used = cvs(v, p)
            if kinds[key] == "op":
                raw_ops.append(raw)
                adj_ops.append(adj)
            print(
                f"{key[:58]:<58} {kinds[key]:<8} {raw:7.2%} {adj:7.2%} {beta:5.2f} {'yes' if used else 'no'}"
            )
        if raw_ops:
            print(
                f"op series: {len(raw_ops)}; median CV raw {statistics.median(raw_ops):.2%}, adjusted "
                f"{statistics.median(adj_ops):.2%}; <= 3%: raw {sum(c <= 0.03 for c in raw_ops)}, adjusted "
                f"{sum(c <= 0.03 for c in adj_ops)}"
            )
    print("\n== the gate after each on-run (history from empty) ==")
    for r in on:
        tag = " +neighbour" if r["hog"] else ""
        print(
            f"run {r['run']:>3}{tag}: suite exit {r['suite_exit']}, {r['wall_s']:.1f} s; adjusted exit "
            f"{r['gate_adjusted']} {r['fail_adjusted'][:3]}; raw exit {r['gate_raw']} {r['fail_raw'][:3]}"
        )
    quiet_on = [r for r in on if not r["hog"]]
    for name in ("adjusted", "raw"):
        bad = sum(r[f"gate_{name}"] != 0 for r in quiet_on)
        hog_bad = sum(r[f"gate_{name}"] != 0 for r in on if r["hog"])
        print(f"gate {name}: {bad} failing of {len(quiet_on)} quiet runs; with the neighbour {hog_bad} of "
              f"{len(on) - len(quiet_on)}")  # fmt: skip
    pairs = []
    for i, r in enumerate(rows[:-1]):
        nxt = rows[i + 1]
        if r["kind"] == "on" and nxt["kind"] == "off" and not r["hog"]:
            pairs.append(r["wall_s"] / nxt["wall_s"])
    if pairs:
        print(
            f"\n== cost: on/off wall-time ratio of {len(pairs)} alternated pairs: median {statistics.median(pairs):.3f} "
            f"(min {min(pairs):.3f}, max {max(pairs):.3f}) =="
        )
    run_probes = []
    with open_store(f"sqlite:///{out / 'on.sqlite'}") as store:
        for r in on:
            rec = store.run(r["run"])
            run_probes.append((r["run"], r["hog"], rec.probe_s if rec else None))
    print(
        "run probe (ms): " + ", ".join(f"{i}{'*' if h else ''} {1e3 * p:.2f}" for i, h, p in run_probes if p)
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for on.sqlite, off.sqlite and runs.jsonl")
    ap.add_argument("--runs", type=int, default=20, help="on-runs without a neighbour (default 20)")
    ap.add_argument(
        "--off", type=int, default=10, help="off-runs, alternated with the first on-runs (default 10)"
    )
    ap.add_argument(
        "--hog", type=int, default=2, help="on-runs with a CPU-hogging neighbour at the end (default 2)"
    )
    ap.add_argument("--summary-only", action="store_true", help="print the summary of what --out holds")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments after --")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if not args.summary_only:
        out.mkdir(parents=True, exist_ok=True)
        # this checkout's harness, in the suite and its workers, whatever is installed
        env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": str(ROOT)}
        on_db, off_db = f"sqlite:///{out / 'on.sqlite'}", f"sqlite:///{out / 'off.sqlite'}"
        plan = []
        for i in range(args.runs):
            plan.append(("on", False))
            if i < args.off:
                plan.append(("off", False))
        plan += [("on", True)] * args.hog
        with (out / "runs.jsonl").open("a", encoding="utf-8") as log:
            for k, (kind, hog) in enumerate(plan, start=1):
                extra = [*args.pytest_args, *(["--bench-no-probe"] if kind == "off" else [])]
                row = _one_run(kind, on_db if kind == "on" else off_db, env, extra, hog)
                log.write(json.dumps(row) + "\n")
                log.flush()
                gates = (
                    f"; gate adjusted {row['gate_adjusted']}, raw {row['gate_raw']}" if kind == "on" else ""
                )
                print(f"[{k}/{len(plan)}] {kind}{' +neighbour' if hog else ''} run {row['run']}: "
                      f"{row['wall_s']:.1f} s{gates}", flush=True)  # fmt: skip
    summary(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
