"""Does the gate fail unchanged code? N consecutive runs of one suite selection, gated after each.

    python eval/unchanged_gate.py [--runs 20] [--db URL] [-- PYTEST_ARGS...]

Each run is `pytest benchmark/` (default: the default CPU suite, `--bench-place cpu`) in a fresh
process, writing to one history (default: a fresh SQLite file in the temp dir). After run i it
runs, in fresh processes:

* `benchmark gate --run latest` (the history baseline; the first run has nothing to compare with
  and must pass with a notice), and
* `benchmark gate --run latest --baseline PREVIOUS_RUN_ID` (an A/B against the run before),

and counts the runs where either gate failed (exit 1) or could not decide (exit 2). At the end it
prints per case the run value (median of its per-process values) of every run, their coefficient of
variation across runs (the spread target of issue 11: <= 3% for op cases), the mean between-process
CV inside a run, and each run's wall time. The code never changes between runs, so every failing
run is a false failure. A benchmark, not a test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)


def gate(db: str, env: dict[str, str], baseline: str | None) -> tuple[int, dict]:
    cmd = [sys.executable, "-m", "benchmark.cli", "gate", "--run", "latest", "--db", db, "--format", "json"]
    if baseline is not None:
        cmd += ["--baseline", baseline]
    proc = run(cmd, env)
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        data = {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}
    return proc.returncode, data


def failing(data) -> list[str]:
    decisions = data.get("decisions", []) if isinstance(data, dict) else data
    out = []
    for d in decisions or []:
        if isinstance(d, dict) and d.get("failing"):
            out.append(
                f"{d.get('case_id')}[{d.get('place')},{d.get('mode')},{d.get('metric')}] {d.get('verdict')}"
            )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="consecutive runs (default 20)")
    ap.add_argument("--db", default=None, help="history URL (default: a fresh SQLite file in the temp dir)")
    ap.add_argument("--json", default=None, help="write every figure to this JSON file")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments after --")
    args = ap.parse_args()

    from benchmark.store import open_store

    tmp = Path(tempfile.mkdtemp(prefix="unchanged-gate-"))
    db = args.db or f"sqlite:///{tmp / 'history.sqlite'}"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    suite = [
        sys.executable,
        "-m",
        "pytest",
        "benchmark/",
        "-q",
        "-p",
        "no:cacheprovider",
        "--bench-place",
        "cpu",
    ]
    suite += ["--bench-db", db, "--bench-json", str(tmp / "summary.json"), *args.pytest_args]
    bad_runs, walls, rows = 0, [], []
    previous: int | None = None
    for i in range(1, args.runs + 1):
        t0 = time.perf_counter()
        proc = run(suite, env)
        wall = time.perf_counter() - t0
        walls.append(wall)
        with open_store(db) as store:
            latest = store.latest_run_id()
        code_h, data_h = gate(db, env, None)
        code_p, data_p = (0, {}) if previous is None else gate(db, env, str(previous))
        fails = failing(data_h) + [f"(vs run {previous}) {f}" for f in failing(data_p)]
        bad = code_h != 0 or code_p != 0
        bad_runs += bad
        status = "FAIL" if bad else "pass"
        print(
            f"run {i:2d} (id {latest}): suite exit {proc.returncode}, {wall:5.1f} s; gate history exit {code_h}, "
            f"vs previous exit {code_p}: {status}" + (f": {'; '.join(fails[:4])}" if fails else ""),
            flush=True,
        )
        if bad and not fails:
            print(f"   gate output: {data_h if code_h else data_p}", flush=True)
        rows.append(
            {
                "run": latest,
                "wall_s": wall,
                "suite_exit": proc.returncode,
                "gate_history": code_h,
                "gate_previous": code_p,
                "failing": fails,
            }
        )
        previous = latest

    # Spread of run values across runs, per case.
    per_case: dict[str, list[float]] = {}
    between: dict[str, list[float]] = {}
    kinds: dict[str, str] = {}
    with open_store(db) as store:
        for row in rows:
            for r in store.results(row["run"]):
                if r.status != "ok" or r.metric != "time":
                    continue
                key = f"{r.case_id}-{r.place}-{r.mode}"
                kinds[key] = r.kind or "?"
                per_case.setdefault(key, []).append(float(r.stats.median))
                cv = r.stats.between_cv
                if cv is not None and cv == cv:
                    between.setdefault(key, []).append(float(cv))
    print(f"\n{'case':<62} {'kind':<8} {'runs':>4} {'CV across runs':>14} {'between-process CV':>18}")
    worst: dict[str, float] = {}
    for key in sorted(per_case):
        xs = per_case[key]
        cv = statistics.stdev(xs) / statistics.mean(xs) if len(xs) > 1 else float("nan")
        bcv = statistics.mean(between[key]) if between.get(key) else float("nan")
        worst[kinds[key]] = max(worst.get(kinds[key], 0.0), cv if cv == cv else 0.0)
        print(f"{key:<62} {kinds[key]:<8} {len(xs):>4} {100 * cv:13.2f}% {100 * bcv:17.2f}%")
    print(f"\nunchanged code, {args.runs} runs: {bad_runs} failing run(s) (target 0)")
    print(
        "largest CV across runs per kind: "
        + ", ".join(f"{k} {100 * v:.2f}%" for k, v in sorted(worst.items()))
    )
    print(f"suite wall time: median {statistics.median(walls):.1f} s, max {max(walls):.1f} s")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"runs": rows, "values": per_case, "between_cv": between}, indent=1)
        )
    return 0 if bad_runs == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
