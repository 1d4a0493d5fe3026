"""Helpers over results (`benchmark.model.CaseResult`): worker-process trials and their summary,
invalid timings, strict JSON."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from benchmark.analysis.summary import process_level_ci, summarize
from benchmark.metrics import CONFIDENCE
from benchmark.model import CaseResult
from benchmark.records import ProcessValue, Stats, ok_process_values


def process_entry(
    index: int,
    pid: int | None,
    order: int,
    status: str,
    samples: list[float] | None = None,
    iterations: int = 1,
    message: str | None = None,
    probe_s: float | None = None,
) -> ProcessValue:
    """One worker-process trial of a case: its raw samples (seconds per iteration, one per round)
    and its value, the median of those samples (None for a trial that did not measure)."""
    values = tuple(float(x) for x in samples or [])
    ok = status == "ok" and bool(values)
    return ProcessValue(
        index=int(index),
        pid=int(pid) if pid is not None else None,
        order=int(order),
        status="ok" if ok else "error",
        value=float(statistics.median(values)) if ok else None,
        samples=values,
        iterations=int(iterations),
        message=message,
        probe_s=probe_s if ok else None,
    )


def between_process_cv(values: list[float]) -> float:
    """The spread of the process values: the sample standard deviation (ddof=1) of their logs
    (about the coefficient of variation for small spreads); NaN with fewer than 2 values."""
    if len(values) < 2:
        return math.nan
    return statistics.stdev(math.log(v) for v in values)


def summarize_processes(processes: Sequence[ProcessValue]) -> tuple[list[float], Stats]:
    """(pooled samples, stats) of a case measured in worker processes.

    The pooled samples are the raw samples of all ok trials; the stats summarize them, except
    `median`, the run value: the median of the per-process values (rounds inside one process are
    not independent evidence, processes are), and, with 2 or more processes, `ci_low`/`ci_high`:
    the interval of the level from the per-process values (`process_level_ci`), which includes
    the spread between processes. `processes` is the number of ok trials and `between_cv` their
    spread (`between_process_cv`).
    """

    pooled = [x for p in processes if p.status == "ok" for x in p.samples]
    stats: dict[str, Any] = summarize(pooled, CONFIDENCE)
    values = ok_process_values(processes)
    if values:
        stats["median"] = float(statistics.median(values))
    if len(values) >= 2:
        stats["ci_low"], stats["ci_high"] = process_level_ci(values, CONFIDENCE)
    stats["processes"] = len(values)
    stats["between_cv"] = between_process_cv(values)
    return pooled, Stats.from_dict(stats)


# The suite warns that a result is imprecise when the interval its table shows reaches further than
# this from the median, on its wider side (an interval about 5% wide).
IMPRECISE_HALF = 0.025


def interval_half(stats: Stats) -> float | None:
    """The interval of a result's level (at `CONFIDENCE`) as its wider side relative to the median:
    what the suite's CI column shows, and what its "imprecise" warning is about. None without one."""
    med, low, high = stats.median, stats.ci_low, stats.ci_high
    if not med or low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return None
    return max(med - low, high - med) / med


def imprecision(stats: Stats) -> str | None:
    """The warning that the shown interval is too wide to trust the value (`IMPRECISE_HALF`), or None."""
    half = interval_half(stats)
    if half is None or half <= IMPRECISE_HALF:
        return None
    return f"imprecise: the {CONFIDENCE:.0%} interval of the median is ±{half:.1%} of it (> ±{IMPRECISE_HALF:.1%})"


def bad_timings(values: Any) -> int:
    """How many of `values` are not timings: not a number, NaN, infinite, zero or negative."""
    if values is None:
        return 0
    bad = 0
    for v in values:
        try:
            x = float(v)
        except (TypeError, ValueError, OverflowError):
            bad += 1
            continue
        if not (math.isfinite(x) and x > 0):
            bad += 1
    return bad


def timing_problem(result: Mapping[str, Any] | CaseResult) -> str | None:
    """Why a result's raw samples cannot be stored (NaN, inf, zero or negative seconds), or None.

    No such value ever reaches the history: the store refuses it, and the suite records the case as
    an error with this reason instead.
    """
    data = result.to_dict() if isinstance(result, CaseResult) else result
    problems = []
    for key in ("samples", "device_samples"):
        values = data.get(key) or []
        bad = bad_timings(values)
        if bad:
            problems.append(f"{bad} of {len(values)} {key.replace('_', ' ')} are not finite positive numbers")
    return "; ".join(problems) or None


def json_safe(value: Any) -> Any:
    """`value` with every NaN or infinite float replaced by None, so that it serialises as strict
    JSON (a bare `NaN` is not JSON; e.g. `between_cv` of a one-process result is NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
