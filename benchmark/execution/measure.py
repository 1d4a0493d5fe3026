"""Timing: warmup by time, calibrated rounds, device sync, raw samples.

A worker process's trial times a case with `measure_rounds` (synchronized rounds, the first one
discarded), with the case's budget divided over its processes (`MeasureSettings.per_process`).
In-process measurement (`--bench-processes 0`) goes through pytest-benchmark instead (`measure`):
it runs the timed loop (`benchmark.pedantic`) and keeps the per-round samples and its own
statistics. Either way this module decides how long to warm up and how many iterations a round and
how many rounds a case get, supplies the timer that synchronizes the device at both ends of every
round, and reads the raw samples back into a `CaseResult`.

Why not pytest-benchmark's own calibration: it sizes rounds to ~timer precision x 10 (microseconds),
so every sample of a fast op is a handful of iterations, and it warms up by iteration count. Here a
round lasts `round_time` (default 10 ms), warmup lasts `warmup_time` of wall time (default 0.3 s,
at least 3 iterations), and a case gets `max_time` of timed rounds but never fewer than
`min_rounds` — the median of many 10 ms rounds is what makes run-to-run numbers repeatable.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from benchmark.analysis.summary import stability_warnings, summarize
from benchmark.datamodel.metrics import CONFIDENCE
from benchmark.datamodel.result import CaseResult, Stats
from benchmark.units import format_seconds

# glibc mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# glibc caps a user-set mmap threshold at HEAP_MAX/2 = 32 MiB on 64-bit systems.
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
TRIM_THRESHOLD = 1024 * 1024 * 1024
# Rough cost of one minor page fault (map + zero a 4 KiB page), to judge whether faults matter.
FAULT_COST_S = 1e-6


@dataclass(frozen=True)
class MeasureSettings:
    warmup_time: float = 0.3
    min_warmup_iterations: int = 3
    round_time: float = 0.01
    min_rounds: int = 20
    max_rounds: int = 2000
    max_time: float = 1.0
    # Time the reference probe (benchmark/execution/probe.py) before a worker's first trial and
    # after each, outside the trial's timing.
    probe: bool = True

    @classmethod
    def quick(cls) -> MeasureSettings:
        """Short settings for smoke runs and tests (numbers are rough, flows are exercised)."""
        return cls(warmup_time=0.02, min_warmup_iterations=2, round_time=0.002, min_rounds=5, max_time=0.05)

    def override(self, overrides: dict[str, Any]) -> MeasureSettings:
        known = {k: v for k, v in overrides.items() if k in asdict(self) and v is not None}
        return replace(self, **known)

    def per_process(self, processes: int) -> MeasureSettings:
        """The settings of one of `processes` worker-process trials of a case, so that P trials
        together cost about what one in-process measurement did: each process gets `max_time / P`
        of timed rounds and `ceil(min_rounds / P)` rounds at least (3 at least), and warms up for
        `warmup_time / 2` (a trial runs in a worker that is already warm from other cases; the case
        itself still warms up, with at least `min_warmup_iterations`). P <= 1: unchanged."""
        if processes <= 1:
            return self
        return replace(
            self,
            warmup_time=self.warmup_time / 2,
            max_time=self.max_time / processes,
            min_rounds=max(3, math.ceil(self.min_rounds / processes)),
        )


@dataclass
class Plan:
    iterations: int
    rounds: int
    warmup_iterations: int
    estimate: float  # seconds per iteration seen during warmup


# ------------------------------------------------------------------------------------------
# Process environment: threads and allocator (applied before the framework is imported)
# ------------------------------------------------------------------------------------------

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "FLAGS_paddle_num_threads")


def pin_threads(n: int | None) -> dict[str, str]:
    """Set thread-count variables the user did not set; returns what is in force."""
    if n:
        for var in THREAD_VARS:
            os.environ.setdefault(var, str(n))
    return {var: os.environ[var] for var in THREAD_VARS if var in os.environ}


def control_allocator(enable: bool = True) -> dict[str, Any]:
    """Keep large freed blocks in the heap so timed rounds do not measure page faults.

    glibc returns blocks above the mmap threshold to the OS on free(), so the next iteration's
    allocation page-faults again (a 1000x1000 `abs` measured 90 us or 1.8 ms depending on this).
    mallopt() raises the mmap threshold to its maximum and the trim threshold far above it. The
    variables are exported too, so child processes start the same way. Returns what was applied.
    """
    applied: dict[str, Any] = {"controlled": False}
    if not enable:
        return applied
    os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(MMAP_THRESHOLD_MAX))
    os.environ.setdefault("MALLOC_TRIM_THRESHOLD_", str(TRIM_THRESHOLD))
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        mallopt = None
    if mallopt is None:
        applied["reason"] = "mallopt unavailable (not glibc)"
        return applied
    mmap_ok = mallopt(_M_MMAP_THRESHOLD, int(os.environ["MALLOC_MMAP_THRESHOLD_"]))
    trim_ok = mallopt(_M_TRIM_THRESHOLD, int(os.environ["MALLOC_TRIM_THRESHOLD_"]))
    applied.update(
        controlled=bool(mmap_ok and trim_ok),
        mmap_threshold=int(os.environ["MALLOC_MMAP_THRESHOLD_"]),
        trim_threshold=int(os.environ["MALLOC_TRIM_THRESHOLD_"]),
    )
    return applied


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


# ------------------------------------------------------------------------------------------
# Timers, warmup and calibration
# ------------------------------------------------------------------------------------------

_SYNCS: dict[str, Callable[[], None]] = {}


class SyncTimer:
    """pytest-benchmark timer for a device place: synchronizes the device, then reads the clock.

    pytest-benchmark reads the timer once before and once after each round, so every timed round
    starts with an idle device and ends only when the device has finished its work. The sync
    function of the place is registered by `measure()` once the case's runner is prepared.
    """

    def __init__(self, place: str):
        self.place = place
        self.__name__ = f"SyncTimer[{place}]"
        self.__module__ = __name__

    def __call__(self) -> float:
        sync = _SYNCS.get(self.place)
        if sync is not None:
            sync()
        return time.perf_counter()

    def __repr__(self) -> str:
        return self.__name__


def timer_for(place: str):
    return time.perf_counter if place == "cpu" else SyncTimer(place)


def warmup(step: Callable[[], Any], sync: Callable[[], None], settings: MeasureSettings) -> tuple[int, float]:
    """Run `step` for `warmup_time` (at least `min_warmup_iterations`); returns (iterations, s/iter).

    The estimate is the median of the last half of the warmup iterations, so the first calls
    (allocation, kernel selection, program compilation) do not inflate it.
    """
    times: list[float] = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
        if (
            len(times) >= settings.min_warmup_iterations
            and time.perf_counter() - start >= settings.warmup_time
        ):
            break
    tail = sorted(times[len(times) // 2 :])
    return len(times), tail[len(tail) // 2]


def plan(estimate: float, warmup_iterations: int, settings: MeasureSettings) -> Plan:
    est = max(estimate, 1e-9)
    iterations = max(1, round(settings.round_time / est))
    per_round = iterations * est
    rounds = max(settings.min_rounds, min(settings.max_rounds, math.ceil(settings.max_time / per_round)))
    return Plan(iterations=iterations, rounds=rounds, warmup_iterations=warmup_iterations, estimate=est)


def device_times(prepared, p: Plan, rounds: int) -> list[float] | None:
    """Device seconds per iteration for `rounds` rounds, from events around each round's loop."""
    if prepared.device_timer is None:
        return None
    out = []
    for _ in range(rounds):
        timer = prepared.device_timer()
        prepared.sync()
        timer.start()
        for _ in range(p.iterations):
            prepared.step()
        timer.stop()
        prepared.sync()
        out.append(timer.elapsed_s() / p.iterations)
    return out


@dataclass
class Measurement:
    """What one in-process measurement (`measure`) found: raw samples (host seconds per iteration,
    one per round) and their summary, the warmup and iteration counts, device samples (seconds per
    iteration from device events, where the device timed it), minor page faults per iteration, peak
    device memory, stability warnings, throughput of model cases, and the timing plan."""

    samples: list[float]
    iterations: int
    warmup_rounds: int
    stats: Stats
    device_samples: list[float] | None
    page_faults_per_iter: float
    peak_memory_bytes: int | None
    warnings: list[str]
    timing: dict[str, Any]  # the timing plan (CaseResult.timing)
    throughput: float | None = None
    throughput_unit: str | None = None
    batch_size: int | None = None

    def fill(self, result: CaseResult) -> None:
        """Set the measured fields of `result`, the timing plan included."""
        result.samples = self.samples
        result.iterations = self.iterations
        result.warmup_rounds = self.warmup_rounds
        result.stats = self.stats
        result.device_samples = self.device_samples
        result.page_faults_per_iter = self.page_faults_per_iter
        result.peak_memory_bytes = self.peak_memory_bytes
        result.warnings = self.warnings
        result.timing = {**(result.timing or {}), **self.timing}
        if self.throughput is not None:
            result.throughput = self.throughput
            result.throughput_unit = self.throughput_unit
            result.batch_size = self.batch_size


def measure(benchmark, prepared, place: str, settings: MeasureSettings) -> Measurement:
    """Warm up, calibrate and time `prepared.step` through the pytest-benchmark fixture.

    Returns the Measurement (`Measurement.fill` puts it into a CaseResult).
    """
    _SYNCS[place] = prepared.sync
    try:
        t0 = time.perf_counter()
        n_warm, estimate = warmup(prepared.step, prepared.sync, settings)
        p = plan(estimate, n_warm, settings)
        t1 = time.perf_counter()
        faults0 = minor_faults()
        benchmark.pedantic(prepared.step, rounds=p.rounds, iterations=p.iterations, warmup_rounds=1)
        faults = minor_faults() - faults0
        t2 = time.perf_counter()
        samples = [float(x) for x in benchmark.stats.stats.data]
        dev = device_times(prepared, p, min(p.rounds, 50))
    finally:
        _SYNCS.pop(place, None)
    stats = summarize(samples, CONFIDENCE)
    per_iter = faults / ((p.rounds + 1) * p.iterations)
    found = Measurement(
        samples=samples,
        iterations=p.iterations,
        warmup_rounds=1,
        stats=Stats.from_dict(stats),
        device_samples=dev,
        page_faults_per_iter=per_iter,
        peak_memory_bytes=prepared.peak_memory() if prepared.peak_memory else None,
        warnings=stability_warnings(samples, min_rounds=min(10, settings.min_rounds)),
        timing={
            "warmup_iterations": n_warm,
            "estimate_s": estimate,
            "round_time": settings.round_time,
            "warmup_s": t1 - t0,
            "timed_s": t2 - t1,
        },
    )
    median = stats.get("median") or 0.0
    if median and per_iter * FAULT_COST_S > 0.02 * median:
        found.warnings.append(
            f"page faults: {per_iter:.1f} minor faults per iteration (~"
            f"{per_iter * FAULT_COST_S / median:.0%} of the time); the timing includes "
            "memory mapping (allocator not controlled, or tensors above the mmap threshold)"
        )
    if prepared.items_per_step and samples:
        found.throughput = prepared.items_per_step / stats["median"]
        found.throughput_unit = f"{prepared.info.get('items_unit') or 'samples'}/s"
        found.batch_size = prepared.items_per_step
    return found


def measure_plain(prepared, settings: MeasureSettings) -> list[float]:
    """The same warmup, calibration and synchronized rounds as `measure`, without pytest-benchmark
    (for a second measurement inside one item, e.g. the torch equivalent of a case)."""
    return measure_rounds(prepared, settings)[0]


def measure_rounds(
    prepared,
    settings: MeasureSettings,
    counters: dict[str, Any] | None = None,
    before_timing: Callable[[], None] | None = None,
) -> tuple[list[float], Plan]:
    """Warm up, calibrate and time synchronized rounds: (seconds per iteration per round, plan).
    What a worker process's `time` task runs (benchmark/runners/worker.py). `counters`, if given,
    gets `minor_faults` (the minor page faults of the timed rounds, warmup excluded), `warmup_s`
    and `timed_s` (wall seconds of the warmup and of the timed rounds). `before_timing`, if given,
    is called between the calibration and the first timed round (a barrier with another worker)."""
    t0 = time.perf_counter()
    n_warm, estimate = warmup(prepared.step, prepared.sync, settings)
    p = plan(estimate, n_warm, settings)
    if before_timing is not None:
        before_timing()
    t1 = time.perf_counter()
    faults0 = minor_faults()
    samples = []
    step, sync = prepared.step, prepared.sync
    for _ in range(p.rounds + 1):
        sync()
        t0 = time.perf_counter()
        for _ in range(p.iterations):
            step()
        sync()
        samples.append((time.perf_counter() - t0) / p.iterations)
    if counters is not None:
        counters["minor_faults"] = minor_faults() - faults0
        counters["warmup_s"], counters["timed_s"] = t1 - t0, time.perf_counter() - t1
    return samples[1:], p


def format_time(seconds: float | None) -> str:
    """Seconds in the unit that fits (ns, µs, ms or s), as everywhere: `benchmark.units.format_seconds`."""

    return format_seconds(seconds)
