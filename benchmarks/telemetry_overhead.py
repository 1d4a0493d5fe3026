#!/usr/bin/env python3
"""Measure what the NVML sampler thread costs CPU-place timings.

Two workloads are timed per round: a fixed CPU-bound numpy computation, and a tiny Python callable
called many times per round (the case most sensitive to the sampler thread taking the GIL). For each
sampler interval, blocks of rounds without the sampler (A) and with it running on the fake NVML (B)
alternate in one process (ABAB..., the order flipped every other pair so drift cancels). The sampler
is started and stopped outside the timed rounds, as the harness does around warmup and the last sync.

Reported per workload and interval:
- the relative difference of the medians of all per-round times, (B - A) / A, with a percentile
  bootstrap 95% CI (rounds resampled within each condition);
- the paired estimate: the median over AB pairs of median(B block) / median(A block) - 1, with a
  bootstrap CI over pairs; it cancels slow drift (other processes on a shared machine) between pairs;
- the sampler's own cost: time of one tick (all its queries) taken on this thread, and that cost as a
  fraction of the interval (an upper bound on the CPU share it can take from the measured thread).
Target: at most 1%.

    python benchmarks/telemetry_overhead.py [--intervals 0.1 0.01] [--pairs 24] [--block-s 0.25]

The fake's `--call-delay-us` models the driver's latency per query. The fake is pure Python and holds
the GIL while it "waits", so it is a pessimistic model of the real ctypes calls, which release it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # single-threaded numpy: the sampler competes with one thread

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark.telemetry.sampler import NvmlSampler  # noqa: E402
from tests.fakes.fake_pynvml import FakeNvml  # noqa: E402


def numpy_workload() -> Callable[[], None]:
    """About a millisecond of single-threaded numpy per call; one round is a few calls."""
    x = np.random.default_rng(0).standard_normal(100_000)

    def run() -> None:
        for _ in range(4):
            np.cumsum(np.sin(x))

    return run


def tiny_workload() -> Callable[[], None]:
    """A trivial callable called 20,000 times per round (tens of ns each)."""

    def tiny(a=1):
        return a + 1

    def run() -> None:
        for _ in range(20_000):
            tiny()

    return run


def time_block(run: Callable[[], None], seconds: float) -> list[float]:
    """Per-round seconds for rounds of `run` until `seconds` have passed."""
    samples, clock = [], time.perf_counter
    end = clock() + seconds
    while True:
        t0 = clock()
        run()
        t1 = clock()
        samples.append(t1 - t0)
        if t1 >= end:
            return samples


def measure(run, interval: float, pairs: int, block_s: float, call_delay_s: float) -> dict[str, list]:
    """Interleaved blocks without (A) and with (B) the sampler."""
    out: dict[str, list] = {"A": [], "B": [], "pair_ratios": [], "samples_taken": []}
    time_block(run, block_s / 2)  # warm up
    for pair in range(pairs):
        block: dict[str, list[float]] = {}
        for cond in "AB" if pair % 2 == 0 else "BA":
            if cond == "A":
                block["A"] = time_block(run, block_s)
                continue
            with NvmlSampler(interval=interval, nvml=FakeNvml(call_delay_s=call_delay_s)) as sampler:
                block["B"] = time_block(run, block_s)
            out["samples_taken"].append(sampler.summary()["samples"])
        out["A"] += block["A"]
        out["B"] += block["B"]
        out["pair_ratios"].append(statistics.median(block["B"]) / statistics.median(block["A"]))
    return out


def tick_cost_s(call_delay_s: float, n: int = 200) -> tuple[float, float]:
    """(wall, cpu) seconds of one sampler tick (all its NVML queries), timed on this thread."""
    sampler = NvmlSampler(nvml=FakeNvml(call_delay_s=call_delay_s)).start()
    sampler.stop()
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    for _ in range(n):
        sampler._sample()
    return (time.perf_counter() - wall0) / n, (time.thread_time() - cpu0) / n


def bootstrap_ci(a: list[float], b: list[float], n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile CI of median(b)/median(a) - 1."""
    rng = np.random.default_rng(seed)
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    ia = rng.integers(0, len(a_arr), size=(n_boot, len(a_arr)))
    ib = rng.integers(0, len(b_arr), size=(n_boot, len(b_arr)))
    ratios = np.median(b_arr[ib], axis=1) / np.median(a_arr[ia], axis=1) - 1
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(low), float(high)


def paired_ci(ratios: list[float], n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(estimate, low, high): median of per-pair ratios - 1 and its 95% bootstrap CI over pairs."""
    rng = np.random.default_rng(seed)
    arr = np.asarray(ratios)
    boots = np.median(arr[rng.integers(0, len(arr), size=(n_boot, len(arr)))], axis=1) - 1
    low, high = np.percentile(boots, [2.5, 97.5])
    return float(np.median(arr) - 1), float(low), float(high)


def report(name: str, interval: float, data: dict[str, list], cost: tuple[float, float]) -> dict:
    med_a, med_b = statistics.median(data["A"]), statistics.median(data["B"])
    low, high = bootstrap_ci(data["A"], data["B"])
    paired, p_low, p_high = paired_ci(data["pair_ratios"])
    row = {
        "workload": name,
        "interval_s": interval,
        "rounds_a": len(data["A"]),
        "rounds_b": len(data["B"]),
        "median_a_s": med_a,
        "median_b_s": med_b,
        "rel_diff": med_b / med_a - 1,
        "ci95": [low, high],
        "pairs": len(data["pair_ratios"]),
        "paired_rel_diff": paired,
        "paired_ci95": [p_low, p_high],
        "nvml_samples_per_block": statistics.median(data["samples_taken"]),
        "tick_wall_s": cost[0],
        "tick_cpu_s": cost[1],
        "tick_cpu_fraction": cost[1] / interval,
    }
    print(
        f"{name:5s} interval {interval * 1000:3.0f} ms | rounds A/B {row['rounds_a']}/{row['rounds_b']}, "
        f"median A {med_a * 1e3:.4f} ms B {med_b * 1e3:.4f} ms | "
        f"diff of medians {_pct(row['rel_diff'])} CI95 [{_pct(low)}, {_pct(high)}] | "
        f"paired ({row['pairs']} pairs) {_pct(paired)} CI95 [{_pct(p_low)}, {_pct(p_high)}] | "
        f"NVML samples/block {row['nvml_samples_per_block']:g} | "
        f"tick CPU = {row['tick_cpu_fraction'] * 100:.2f}% of the interval",
        flush=True,
    )
    return row


def _pct(x: float) -> str:
    return f"{x * 100:+.2f}%"


def _loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--intervals", type=float, nargs="+", default=[0.1, 0.01])
    parser.add_argument("--pairs", type=int, default=24, help="AB pairs per interval and workload")
    parser.add_argument("--block-s", type=float, default=0.25, help="seconds per block")
    parser.add_argument("--call-delay-us", type=float, default=20.0, help="fake driver latency per query")
    parser.add_argument("--workloads", nargs="+", choices=["numpy", "tiny"], default=["numpy", "tiny"])
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    workloads = {"numpy": numpy_workload(), "tiny": tiny_workload()}
    delay_s = args.call_delay_us * 1e-6
    cost = tick_cost_s(delay_s)
    print(
        f"fake NVML: {args.call_delay_us:g} us per query (GIL released, like ctypes); one sampler tick: "
        f"{cost[0] * 1e6:.0f} us wall, {cost[1] * 1e6:.0f} us CPU",
        flush=True,
    )
    print(f"load average before: {_loadavg()}", flush=True)
    rows = []
    for interval in args.intervals:
        for name in args.workloads:
            data = measure(workloads[name], interval, args.pairs, args.block_s, delay_s)
            rows.append(report(name, interval, data, cost))
    print(f"load average after: {_loadavg()} (on {os.cpu_count()} CPUs; other processes add noise)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
