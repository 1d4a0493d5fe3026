#!/usr/bin/env python
"""Measure the history store at scale: build a synthetic history, then time the suite's queries.

    .venv/bin/python benchmarks/bench_store.py --url sqlite:///bench.sqlite --fresh
    .venv/bin/python benchmarks/bench_store.py --url "$BENCHMARK_TEST_PG_URL" --fresh
    .venv/bin/python benchmarks/bench_store.py --series 100 --runs 100      # a quick, scaled-down run

The synthetic history is --series series x --runs runs results (default 1,000 x 1,000 = 1,000,000),
each with --samples raw samples (default 20), built with bulk inserts. Then, on a fresh Store (as a new
`pytest benchmark/` session would open it), it times:

- storing one more run of --series results through `Store.add_result` (one commit per result, as the
  suite does) and through `Store.add_results` (one transaction);
- `Store.baselines(run, last=100)`: the previous 100 results of every series of that run;
- `Store.history(...)` of one series (all of it, and its last 100);
- the database size.

Targets (issue 3): a 1,000-result run stored in <= 1 s, all baselines in <= 1 s, history in <= 0.2 s.
Nothing here prints the URL's password.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmark.analysis.summary import summarize  # noqa: E402
from benchmark.datamodel.environment import MachineDescription, RunDescription  # noqa: E402
from benchmark.datamodel.result import CaseResult  # noqa: E402
from benchmark.store import open_store  # noqa: E402
from benchmark.store.core import Store  # noqa: E402
from benchmark.store.engine import parse_url, shown, sqlite_path  # noqa: E402
from benchmark.store.tables import CASE, MACHINE, RESULT, RUN, SERIES, Base  # noqa: E402

FINGERPRINT = "bench0fingerprint"
CHUNK = 20_000
COUNTS = ("baselines_series", "baselines_points", "history_rows", "db_size_mib", "results_total")
TARGETS = {"store_run_per_result_commit": 1.0, "baselines_last100": 1.0, "history_one_series": 0.2}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--url",
        default=f"sqlite:///{Path(tempfile.gettempdir()) / 'benchmark-store-bench.sqlite'}",
        help="database URL",
    )
    parser.add_argument("--series", type=int, default=1000, help="number of series (default 1000)")
    parser.add_argument("--runs", type=int, default=1000, help="number of runs (default 1000)")
    parser.add_argument("--samples", type=int, default=20, help="raw samples per result (default 20)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of each measurement (default 3)")
    parser.add_argument("--fresh", action="store_true", help="drop an existing history at the URL first")
    parser.add_argument("--reuse", action="store_true", help="reuse a history this script built before")
    return parser.parse_args(argv)


# ------------------------------------------------------------------------------------------------ build


def drop_everything(url: str) -> None:
    parsed = parse_url(url)
    path = sqlite_path(parsed) if parsed.get_backend_name() == "sqlite" else None
    if path is not None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return
    engine = sa.create_engine(parsed)
    with engine.begin() as conn:
        Base.metadata.drop_all(conn)
        sa.Table("alembic_version", sa.MetaData()).drop(conn, checkfirst=True)
    engine.dispose()


def case_rows(n_series: int) -> list[dict]:
    return [
        {
            "case_id": f"bench.op_{i:04d}[shape={i % 7}x{i % 13}]",
            "name": f"op_{i:04d}",
            "kind": "op",
            "config": {"op": f"op_{i:04d}", "shape": [i % 7, i % 13], "dtype": "float32"},
            "config_hash": f"{i:016x}",
        }
        for i in range(n_series)
    ]


def build(store: Store, n_series: int, n_runs: int, n_samples: int) -> float:
    """Bulk-insert the synthetic history; returns the seconds it took."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(42)
    base_medians = rng.lognormal(mean=-9, sigma=1.5, size=n_series)
    now = dt.datetime.now(dt.timezone.utc)
    start = now - dt.timedelta(days=n_runs + 1)
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(MACHINE),
            [
                {
                    "fingerprint": FINGERPRINT,
                    "hostname": "bench",
                    "info": {"synthetic": True},
                    "created_at": now,
                }
            ],
        )
        machine_id = conn.execute(sa.select(MACHINE.c.id)).scalar_one()
        conn.execute(sa.insert(CASE), case_rows(n_series))
        case_pks = conn.execute(sa.select(CASE.c.id).order_by(CASE.c.id)).scalars().all()
        conn.execute(
            sa.insert(SERIES),
            [{"case_pk": pk, "machine_id": machine_id, "place": "cpu", "mode": "dynamic"} for pk in case_pks],
        )
        series_ids = conn.execute(sa.select(SERIES.c.id).order_by(SERIES.c.id)).scalars().all()
        run_rows = [run_row(machine_id, start + dt.timedelta(days=r), r) for r in range(n_runs)]
        conn.execute(sa.insert(RUN), run_rows)
        runs = conn.execute(sa.select(RUN.c.id, RUN.c.started_at).order_by(RUN.c.id)).all()
    pending: list[dict] = []
    for run_id, started in runs:
        samples = base_medians[:, None] * rng.lognormal(0, 0.03, size=(n_series, n_samples))
        pending.extend(result_rows(run_id, started, series_ids, samples))
        if len(pending) >= CHUNK:
            insert_chunk(store, pending)
            pending = []
        if run_id % max(1, n_runs // 10) == 0:
            print(f"  built {run_id}/{n_runs} runs ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    insert_chunk(store, pending)
    return time.perf_counter() - t0


def run_row(machine_id: int, started: dt.datetime, index: int) -> dict:
    return {
        "machine_id": machine_id,
        "started_at": started,
        "finished_at": started + dt.timedelta(minutes=30),
        "heartbeat_at": started + dt.timedelta(minutes=30),
        "status": "complete",
        "git_commit": f"{index:040x}",
        "git_branch": "develop",
        "git_dirty": False,
        "framework": {"paddle_version": "3.0.0"},
        "env": {"OMP_NUM_THREADS": "1"},
        "trigger": "nightly",
        "tags": [],
        "hostname": "bench",
        "pid": 1,
        "extra": {},
    }


def result_rows(run_id: int, started: dt.datetime, series_ids: list[int], samples: np.ndarray) -> list[dict]:
    q1, med, q3 = np.percentile(samples, [25, 50, 75], axis=1)
    mean, std = samples.mean(axis=1), samples.std(axis=1, ddof=1)
    lo, hi = samples.min(axis=1), samples.max(axis=1)
    return [
        {
            "run_id": run_id,
            "series_id": sid,
            "run_time": started.timestamp(),
            "status": "ok",
            "unit": "s",
            "rounds": samples.shape[1],
            "iterations": 10,
            "warmup_rounds": 2,
            "min": float(lo[i]),
            "max": float(hi[i]),
            "median": float(med[i]),
            "mean": float(mean[i]),
            "stddev": float(std[i]),
            "q1": float(q1[i]),
            "q3": float(q3[i]),
            "iqr": float(q3[i] - q1[i]),
            "ci_low": float(lo[i]),
            "ci_high": float(hi[i]),
            "stats_extra": {},
            "warnings": [],
            "tags": [],
            "extra": {},
            "samples": samples[i].astype("<f8").tobytes(),
        }
        for i, sid in enumerate(series_ids)
    ]


def insert_chunk(store: Store, rows: list[dict]) -> None:
    if rows:
        with store.engine.begin() as conn:
            conn.execute(sa.insert(RESULT), rows)


# ------------------------------------------------------------------------------------------ measurements


def new_run_results(n_series: int, n_samples: int, rng: np.random.Generator) -> list[dict]:
    out = []
    for row in case_rows(n_series):
        samples = (1e-4 * rng.lognormal(0, 0.03, size=n_samples)).tolist()
        out.append(
            {
                **row,
                "place": "cpu",
                "mode": "dynamic",
                "status": "ok",
                "unit": "s",
                "samples": samples,
                "iterations": 10,
                "warmup_rounds": 2,
                "stats": summarize(samples),
                "warnings": [],
                "extra": {},
                "tags": [],
            }
        )
    return out


@dataclass
class Timing:
    """Wall-clock and CPU seconds of repeated measurements. CPU is this process's plus, on
    PostgreSQL, the server backend's: on a busy shared machine it is the better estimate of what the
    wall clock would read on a quiet one (it leaves out waiting for the disk, e.g. commit fsyncs)."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


class CpuClock:
    """CPU seconds used so far by this process and the PostgreSQL backend serving `store`, if any."""

    def __init__(self, store: Store) -> None:
        self.backend = None
        if store.url.get_backend_name() == "postgresql":
            with store.engine.connect() as conn:  # the pool's one connection serves the whole measurement
                pid = conn.execute(sa.select(sa.func.pg_backend_pid())).scalar_one()
            try:
                self.backend = psutil.Process(pid)
                self.backend.cpu_times()
            except (psutil.Error, OSError):
                self.backend = None  # another host, or not allowed to read it: client CPU only

    def __call__(self) -> float:
        total = time.process_time()
        if self.backend is not None:
            times = self.backend.cpu_times()
            total += times.user + times.system
        return total


def timed(fn: Callable[[], object], clock: CpuClock, timing: Timing, repeat: int = 1) -> object:
    """Call `fn` `repeat` times, adding each call's seconds to `timing`; returns the last value."""
    value = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), clock()
        value = fn()
        timing.wall.append(time.perf_counter() - wall)
        timing.cpu.append(clock() - cpu)
    return value


def machine_info() -> dict:
    return {"fingerprint": FINGERPRINT, "hostname": "bench"}


def run_info() -> dict:
    return {"started_at": time.time(), "trigger": "bench", "hostname": "bench", "pid": os.getpid()}


def store_one_run(url: str, results: list[dict], batch: bool, timing: Timing) -> int:
    """Store a run of `results` on a fresh Store (no ids cached, as in a new pytest session)."""
    with open_store(url) as store:
        clock = CpuClock(store)
        run_id = store.begin_run(MachineDescription.of(machine_info()), RunDescription.of(run_info()))
        typed = [CaseResult.from_dict(r) for r in results]
        if batch:
            timed(lambda: store.add_results(run_id, typed), clock, timing)
        else:
            timed(lambda: [store.add_result(run_id, r) for r in typed], clock, timing)
        store.finish_run(run_id)
    return run_id


def measure(url: str, n_series: int, n_samples: int, repeat: int) -> dict[str, object]:
    """Timings and counts."""
    results = new_run_results(n_series, n_samples, np.random.default_rng(7))
    figures: dict[str, object] = {
        name: Timing() for name in ("store_run_per_result_commit", "store_run_one_batch")
    }
    run_id = None
    for _ in range(repeat):
        run_id = store_one_run(url, results, False, figures["store_run_per_result_commit"])
        store_one_run(url, results, True, figures["store_run_one_batch"])
    case_id = results[n_series // 2]["case_id"]
    reads = {
        # The baselines of the last per-result run (the runs stored before it count too).
        "baselines_last100": lambda store: store.baselines(run_id, last=100),
        "history_one_series": lambda store: store.history(case_id),
        "history_one_series_last100": lambda store: store.history(case_id, last=100),
        "runs_last20": lambda store: store.runs(limit=20),
    }
    with open_store(url) as store:
        clock = CpuClock(store)
        values = {}
        for name, read in reads.items():
            figures[name] = Timing()
            values[name] = timed(lambda read=read: read(store), clock, figures[name], repeat)
        figures["baselines_series"] = len(values["baselines_last100"])
        figures["baselines_points"] = sum(len(v) for v in values["baselines_last100"].values())
        figures["history_rows"] = len(values["history_one_series"])
        figures["db_size_mib"] = database_size(store) / 2**20
        figures["results_total"] = result_count(store)
    return figures


def database_size(store: Store) -> int:
    path = sqlite_path(store.url) if store.url.get_backend_name() == "sqlite" else None
    if path is not None:
        return sum(Path(f"{path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{path}{s}").exists())
    with store.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.pg_database_size(sa.func.current_database()))).scalar_one()


def result_count(store: Store) -> int:
    with store.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(RESULT)).scalar_one()


def report(url: str, args: argparse.Namespace, build_s: float | None, figures: dict[str, object]) -> None:
    print(f"store benchmark on {shown(parse_url(url))}")
    print(f"  history: {args.series} series x {args.runs} runs x {args.samples} samples", end="")
    print(f" (built in {build_s:.1f} s)" if build_s is not None else " (reused)")
    print(
        f"  load average (1 min) at start {args.load_at_start:.2f}, at end {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs"
    )
    print(f"  {'':30s} {'wall median':>11s}  {'(min .. max)':17s} {'CPU median':>10s}")
    for key, value in figures.items():
        if key in COUNTS:
            print(f"  {key:30s} {value:>11,.1f}")
            continue
        wall, cpu = statistics.median(value.wall), statistics.median(value.cpu)
        target = TARGETS.get(key)
        verdict = (
            ""
            if target is None
            else f"  target <= {target} s: wall " + ("ok" if wall <= target else "MISSED")
        )
        if target is not None:
            verdict += ", CPU " + ("ok" if cpu <= target else "MISSED")
        spread = f"({min(value.wall):.3f} .. {max(value.wall):.3f})"
        print(f"  {key:30s} {wall:9.3f} s  {spread:17s} {cpu:8.3f} s{verdict}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.load_at_start = os.getloadavg()[0]
    if args.fresh:
        drop_everything(args.url)
    build_s = None
    with open_store(args.url) as store:
        existing = result_count(store)
        if existing and not args.reuse:
            print(
                "the history is not empty: pass --fresh to rebuild it or --reuse to measure it",
                file=sys.stderr,
            )
            return 2
        if not existing:
            build_s = build(store, args.series, args.runs, args.samples)
    figures = measure(args.url, args.series, args.samples, args.repeat)
    report(args.url, args, build_s, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
