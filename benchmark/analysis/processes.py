"""A result's worker-process values summarised: the run value, its interval and the spread between processes."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from benchmark.analysis.summary import process_level_ci, summarize
from benchmark.datamodel.metrics import CONFIDENCE
from benchmark.datamodel.result import ProcessValue, Stats, ok_process_values


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
