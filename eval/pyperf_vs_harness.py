"""The harness against pyperf on the same op cases, alternated in one sitting (issue 29): each
tool's run-to-run CV and its wall time per run.

    python eval/pyperf_vs_harness.py --out DIR [--runs 10] [--cases A,B,...]

Each round runs, in fresh processes, first the harness with its defaults on the cases (`pytest
benchmark/ --bench-place cpu --bench-modes dynamic -k ...`, into DIR/harness.sqlite), then pyperf
with its defaults (20 worker processes, 1 warm-up and 3 values each, its own loop calibration) on
the same cases built by the same runner (eval/pyperf_cases.py, one JSON file per run). Both get one
thread and the harness's allocator settings through the environment (pyperf is told to pass them
to its workers). A run's figure is the harness's run value (the median of its process values)
and pyperf's mean and median of its values; the harness's is also shown adjusted by its probe
(`analysis.adjust`, the gate's estimator, with each run's beta fitted on the other runs). Every run's wall time goes to DIR/runs.jsonl as it
ends; `--summary-only` prints the summary. `--processes N` gives the harness N worker processes a
case, `--tools harness` runs it alone, and a tool `harness:N` is the harness at N processes a case,
so `--tools harness,harness:10,pyperf` alternates three. Needs pyperf (`pip install pyperf`). A benchmark of
the machine it runs on, not a test.
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
from benchmark.execution import measure  # noqa: E402
from benchmark.store import open_store  # noqa: E402

CASES = "abs-1000x1000-fwd,matmul-fwd,softmax-16x1000-fwd,elementwise_mul_smoke-fwd"
PASSED = [*measure.THREAD_VARS, "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "PYTHONPATH"]


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": str(ROOT)}
    env.update({v: "1" for v in measure.THREAD_VARS})
    env.update(
        MALLOC_MMAP_THRESHOLD_=str(measure.MMAP_THRESHOLD_MAX),
        MALLOC_TRIM_THRESHOLD_=str(measure.TRIM_THRESHOLD),
    )
    return env


def _harness(out: Path, cases: list[str], env: dict[str, str], processes: int | None = None) -> dict:
    db = f"sqlite:///{out / 'harness.sqlite'}"
    cmd = [sys.executable, "-m", "pytest", "benchmark/", "-q", "-p", "no:cacheprovider", "--bench-place", "cpu",
           "--bench-modes", "dynamic", "-k", " or ".join(cases), "--bench-db", db]  # fmt: skip
    if processes:
        cmd += ["--bench-processes", str(processes)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    with open_store(db) as store:
        run = store.latest_run_id()
        ok = [r for r in store.results(run) if r.status == "ok" and r.place == "cpu"]
        values = {r.case_id: float(r.stats.median) for r in ok}
        probes = {r.case_id: process_probe(r.processes) for r in ok}
    tool = f"harness-{processes}" if processes else "harness"
    return {
        "tool": tool,
        "wall_s": wall,
        "exit": proc.returncode,
        "run": run,
        "values": values,
        "probes": probes,
    }


def _pyperf(out: Path, cases: list[str], env: dict[str, str], index: int) -> dict:
    path = out / f"pyperf-{index:02d}.json"
    path.unlink(missing_ok=True)
    cmd = [sys.executable, str(ROOT / "eval" / "pyperf_cases.py"), "--cases", ",".join(cases), "-o", str(path),
           "--quiet", "--inherit-environ", ",".join(PASSED)]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    values, medians = {}, {}
    if proc.returncode == 0:
        import pyperf

        for bench in pyperf.BenchmarkSuite.load(str(path)).get_benchmarks():
            values[bench.get_name()] = bench.mean()
            medians[bench.get_name()] = bench.median()
    row = {"tool": "pyperf", "wall_s": wall, "exit": proc.returncode, "values": values, "medians": medians}
    if proc.returncode != 0:
        row["error"] = (proc.stderr or proc.stdout)[-500:]
    return row


def _cv(x: list[float]) -> float:
    a = np.asarray(x, dtype=float)
    return float(np.std(a, ddof=1) / np.mean(a)) if len(a) > 1 else float("nan")


def held_out_adjusted(values: list[float], probes: list[float | None]) -> tuple[list[float], int]:
    """Each run's value divided by the probe factor that the gate's estimator (analysis.adjust)
    fits on the other runs, so no run adjusts itself; and how many of those fits used the probe."""
    out, used = [], 0
    for i, (v, p) in enumerate(zip(values, probes, strict=True)):
        adj = estimate(values[:i] + values[i + 1 :], probes[:i] + probes[i + 1 :])
        out.append(v / adj.factor(p))
        used += adj.used
    return out, used


def summary(out: Path, cases: list[str]) -> None:
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
    figures = {}  # (tool, figure) -> rows; pyperf gives its mean and its median
    for r in rows:
        if r["exit"] == 0:
            figures.setdefault((r["tool"], "mean" if r["tool"] == "pyperf" else "run value"), []).append(
                r["values"]
            )
            if r["tool"] == "pyperf":
                figures.setdefault(("pyperf", "median"), []).append(r["medians"])
    print("\n== run-to-run CV, and the median level, per tool and case ==")
    for (tool, figure), runs in figures.items():
        print(f"{tool} ({figure}), {len(runs)} runs:")
        for c in cases:
            v = [x[c] for x in runs if c in x]
            if v:
                print(f"  {c:<28} CV {_cv(v):6.2%}  level {1e6 * statistics.median(v):9.1f} us")
    with_probes: dict[str, list[dict]] = {}  # harness tool -> its ok runs, in the order they ran
    for r in rows:
        if r["exit"] == 0 and "probes" in r:
            with_probes.setdefault(r["tool"], []).append(r)
    for tool, runs in with_probes.items():
        print(f"{tool} (run value adjusted by the probe, beta fitted on the other runs), {len(runs)} runs:")
        for c in cases:
            pairs = [(r["values"][c], r["probes"].get(c)) for r in runs if c in r["values"]]
            if len(pairs) > 1:
                adjusted, used = held_out_adjusted([v for v, _ in pairs], [p for _, p in pairs])
                print(f"  {c:<28} CV {_cv(adjusted):6.2%}  (probe used in {used} of {len(pairs)} fits)")
    for tool in dict.fromkeys(r["tool"] for r in rows):
        walls = [r["wall_s"] for r in rows if r["tool"] == tool and r["exit"] == 0]
        if walls:
            print(f"{tool}: wall time per run median {statistics.median(walls):.1f} s "
                  f"(min {min(walls):.1f}, max {max(walls):.1f})")  # fmt: skip
    failed = [r for r in rows if r["exit"] != 0]
    if failed:
        print(f"{len(failed)} run(s) failed: " + "; ".join(f"{r['tool']} exit {r['exit']}" for r in failed))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--out", required=True, help="directory for harness.sqlite, pyperf-NN.json and runs.jsonl"
    )
    ap.add_argument("--runs", type=int, default=10, help="runs of each tool, alternated (default 10)")
    ap.add_argument("--cases", default=CASES, help=f"comma-separated CPU op case ids (default {CASES})")
    ap.add_argument(
        "--processes",
        type=int,
        default=None,
        help="the harness's worker processes a case (default: its default)",
    )
    ap.add_argument(
        "--tools",
        default="harness,pyperf",
        help="which tools to run, in this order each round: harness, harness:N (N processes a case) "
        "or pyperf (default harness,pyperf)",
    )
    ap.add_argument("--summary-only", action="store_true", help="print the summary of what --out holds")
    args = ap.parse_args(argv)
    out, cases = Path(args.out), args.cases.split(",")
    if not args.summary_only:
        out.mkdir(parents=True, exist_ok=True)
        env = _env()
        with (out / "runs.jsonl").open("a", encoding="utf-8") as log:
            for i in range(1, args.runs + 1):
                for tool in args.tools.split(","):
                    name, _, n = tool.partition(":")
                    row = (
                        _harness(out, cases, env, int(n) if n else args.processes)
                        if name == "harness"
                        else _pyperf(out, cases, env, i)
                    )
                    log.write(json.dumps(row) + "\n")
                    log.flush()
                    print(f"[{i}/{args.runs}] {row['tool']}: {row['wall_s']:.1f} s, exit {row['exit']}"
                          f"{' ' + row.get('error', '')[-200:] if row['exit'] else ''}", flush=True)  # fmt: skip
    summary(out, cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
