#!/usr/bin/env python
"""Time the HTML dashboard on a synthetic history: 500 series x 365 runs by default (issue 6).

    .venv/bin/python benchmarks/bench_report.py                       # build bench_report.sqlite in the temp dir once, then time
    .venv/bin/python benchmarks/bench_report.py --fresh --jobs 2      # rebuild the history first
    .venv/bin/python benchmarks/bench_report.py --series 50 --runs 60 # a quick, scaled-down run
    .venv/bin/python benchmarks/bench_report.py --all-plots           # a matplotlib plot for every series

The history is written through the store API (`begin_run`, `add_results` with one bulk insert per
run, `finish_run`), each result with --samples raw samples (default 10) drawn around a per-series
level with 1% between-run noise and 2% within-run noise. About 8% of the series get a step
(+-10..25%) somewhere in their history, 2% a step in the last 5 runs, and a few an error or a skip in
the newest run, so the dashboard has change points, alerts and errors to show.

Then it times `build_dashboard` (load, analysis, A/B of the latest run, plots, pages) and prints the
time of each stage, the number of plots, and the size of the output directory.
Target (issue 6): <= 60 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmark.datamodel.environment import MachineDescription, RunDescription  # noqa: E402
from benchmark.datamodel.result import CaseResult  # noqa: E402
from benchmark.report.html import build_dashboard  # noqa: E402
from benchmark.store import open_store  # noqa: E402

DAY = 86400.0
MACHINE = MachineDescription.of(
    {
        "hostname": "bench-host",
        "cpu_model": "Synthetic CPU",
        "cpu_count_logical": 2,
        "fingerprint": "benchreport0001",
    }
)


def fast_stats(samples: np.ndarray) -> list[dict[str, float]]:
    """`summarize` for a (results x rounds) array at once (the same order-statistic CI for n=10)."""
    x = np.sort(samples, axis=1)
    n = x.shape[1]
    q1, med, q3 = np.percentile(x, [25, 50, 75], axis=1)
    j = 2 if n == 10 else max(1, int(n * 0.5 - 0.98 * np.sqrt(n)))
    std = x.std(axis=1, ddof=1)
    mean = x.mean(axis=1)
    keys = ("min", "max", "mean", "median", "stddev", "q1", "q3", "iqr", "ci_low", "ci_high")
    cols = (x[:, 0], x[:, -1], mean, med, std, q1, q3, q3 - q1, x[:, j - 1], x[:, n - j])
    table = np.column_stack(cols)
    return [{"rounds": n, **dict(zip(keys, map(float, row), strict=True))} for row in table]


def plan(n_series: int, n_runs: int, rng: np.random.Generator) -> np.ndarray:
    """Per-run level of every series (runs x series), with steps planted in some of them."""
    base = np.exp(rng.uniform(np.log(2e-6), np.log(0.5), n_series))
    levels = np.tile(base, (n_runs, 1)) * np.exp(rng.normal(0, 0.01, (n_runs, n_series)))
    stepped = rng.choice(n_series, size=max(1, n_series * 8 // 100), replace=False)
    for s in stepped:
        at = int(rng.integers(20, n_runs - 5))
        levels[at:, s] *= 1 + rng.choice([-1, 1]) * rng.uniform(0.10, 0.25)
    recent = rng.choice(n_series, size=max(1, n_series * 2 // 100), replace=False)
    for s in recent:
        levels[n_runs - int(rng.integers(2, 5)) :, s] *= 1.2
    return levels


def build_history(url: str, n_series: int, n_runs: int, n_samples: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    levels = plan(n_series, n_runs, rng)
    t0 = time.time() - n_runs * DAY
    clock = time.perf_counter()
    with open_store(url) as store:
        for r in range(n_runs):
            run = {"started_at": t0 + r * DAY, "git_commit": f"{rng.integers(1 << 62):016x}{r:08x}",
                   "git_branch": "develop", "trigger": "nightly", "env": {"OMP_NUM_THREADS": "1"},
                   "framework": {"paddle_version": "3.0.0"}}  # fmt: skip
            run_id = store.begin_run(MACHINE, RunDescription.of(run))
            samples = levels[r][:, None] * np.exp(rng.normal(0, 0.02, (n_series, n_samples)))
            stats = fast_stats(samples)
            results = [_result(i, samples[i], stats[i], r == n_runs - 1) for i in range(n_series)]
            store.add_results(run_id, [CaseResult.from_dict(d) for d in results])
            store.finish_run(run_id, "complete")
            if r % 50 == 0:
                print(f"  run {r + 1}/{n_runs} stored ({time.perf_counter() - clock:.0f} s)", flush=True)
    return time.perf_counter() - clock


def _result(i: int, samples: np.ndarray, stats: dict, last: bool) -> dict:
    status, message = "ok", None
    if last and i % 250 == 7:
        status, message = "error", "RuntimeError: CUDA error: an illegal memory access was encountered"
    elif last and i % 250 == 11:
        status, message = "skipped", "needs a CUDA place"
    place = "gpu:0" if i % 3 == 0 else "cpu"
    return {
        "case_id": f"ops.op{i // 4:03d}[shape={i % 4},dtype=float32]",
        "name": f"op{i // 4:03d}",
        "kind": "op",
        "place": place,
        "mode": "dynamic" if i % 2 else "static",
        "config": {"op": f"paddle.op{i // 4:03d}", "shape": i % 4},
        "config_hash": f"cfg{i:05d}",
        "status": status,
        "message": message,
        "samples": samples.tolist() if status == "ok" else [],
        "stats": stats if status == "ok" else {},
        "iterations": 100,
        "warmup_rounds": 3,
    }


def dir_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--db",
        default=str(Path(tempfile.gettempdir()) / "bench_report.sqlite"),
        help="SQLite file of the synthetic history",
    )
    ap.add_argument(
        "--out",
        default=str(Path(tempfile.gettempdir()) / "bench_report_html"),
        help="dashboard directory (replaced)",
    )
    ap.add_argument("--series", type=int, default=500, help="number of series")
    ap.add_argument("--runs", type=int, default=365, help="runs per series")
    ap.add_argument("--samples", type=int, default=10, help="raw samples per result")
    ap.add_argument("--seed", type=int, default=0, help="random seed of the synthetic history")
    ap.add_argument("--fresh", action="store_true", help="rebuild the history even if the file exists")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: os.cpu_count())")
    ap.add_argument(
        "--all-plots", action="store_true", help="render a matplotlib trend plot for every series"
    )
    ap.add_argument(
        "--formats", default="png", help="plot formats, comma-separated (the dashboard's default: png)"
    )
    args = ap.parse_args(argv)

    db = Path(args.db)
    if args.fresh and db.exists():
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    url = f"sqlite:///{db.resolve()}"
    if not db.exists():
        print(f"building {args.series} series x {args.runs} runs x {args.samples} samples in {db} ...")
        took = build_history(url, args.series, args.runs, args.samples, args.seed)
        print(f"history built in {took:.1f} s ({db.stat().st_size / 2**20:.1f} MiB)")
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)

    print(f"building the dashboard with {args.jobs or os.cpu_count()} worker(s) ...")
    clock = time.perf_counter()
    with open_store(url, create=False, readonly=True) as store:
        dash = build_dashboard(
            store, out, all_plots=args.all_plots, workers=args.jobs, formats=args.formats.split(",")
        )
    total = time.perf_counter() - clock
    size, n_files = dir_size(out)
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in dash.timings.items())
    statuses = {}
    for en in dash.entries:
        statuses[en.analysis.status] = statuses.get(en.analysis.status, 0) + 1
    print(f"dashboard: {len(dash.entries)} series, {len(dash.plot_files)} plot files, {n_files} files")
    print(f"time: {total:.1f} s ({stages})")
    print(f"size on disk: {size / 2**20:.1f} MiB in {out}")
    print(f"statuses: {statuses}")
    print("target: <= 60 s -> " + ("met" if total <= 60 else "MISSED"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
