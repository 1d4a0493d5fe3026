#!/usr/bin/env python
"""Time `benchmark detect` on a long series and measure its peak memory (issue 13).

    python benchmarks/detect_scale.py                 # 10^5 runs: wall time of `detect --format json` (target <= 5 s)
    python benchmarks/detect_scale.py --runs 1000000  # 10^6 runs: peak resident memory stays bounded

The series is white noise at 1% around 1.0 with a +-10% step every 20 000 runs and a one-run
+15% spike every 5 000 runs, written to a CSV in the temp dir. The command runs in a fresh
process (`python -m benchmark.cli detect FILE --format json`); the script prints its wall and CPU time, its peak
resident set size (from `resource.getrusage(RUSAGE_CHILDREN)`, Linux: KiB), the number of change
points and alerts, and whether the output parses as strict JSON (no bare NaN). Timings depend on the
machine and its load; compare runs on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np


def write_csv(path: str, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    log = rng.normal(0.0, 0.01, n)
    for k, at in enumerate(range(20_000, n, 20_000)):
        log[at:] += np.log1p(0.10) * (1 if k % 2 == 0 else -1)
    for at in range(5_000, n, 5_000):
        log[at + 7] += np.log1p(0.15)
    v = np.exp(log)
    with open(path, "w") as fh:
        fh.write("value\n")
        fh.write("\n".join(f"{x:.6g}" for x in v))
        fh.write("\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=100_000, help="length of the series (default 100000)")
    ap.add_argument("--keep", action="store_true", help="keep the CSV (its path is printed)")
    args = ap.parse_args(argv)
    fd, path = tempfile.mkstemp(suffix=".csv", prefix="detect_scale_")
    os.close(fd)
    try:
        write_csv(path, args.runs)
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "benchmark.cli", "detect", path, "--format", "json"],
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - t0
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak_kib, cpu = ru.ru_maxrss, ru.ru_utime + ru.ru_stime
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1

        def strict(x):
            raise ValueError(f"bare {x} in the output")

        doc = json.loads(out.stdout, parse_constant=strict)
        print(
            f"runs {args.runs}: detect --format json {wall:.2f} s wall ({cpu:.2f} s CPU), "
            f"peak RSS {peak_kib / 1024:.0f} MiB, "
            f"{len(doc['change_points'])} change points, {len(doc['alerts'])} alerts, strict JSON"
        )
    finally:
        if args.keep:
            print(path)
        else:
            os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
