"""The one place the store's rows become `Series`: a series' history (`Store.series`, read by the
reports, the dashboard and the trend plots) and a run's baselines (`Store.baselines`, read by the
judge) take their per-run process values and probe figure from here, by the one rule of
`benchmark.records` (`ok_process_values`, `process_probe`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from benchmark.analysis.events import environment_events
from benchmark.analysis.summary import median_ci, process_level_ci
from benchmark.datamodel.metrics import CONFIDENCE
from benchmark.datamodel.result import ProcessValue, ok_process_values, process_probe
from benchmark.datamodel.series import HistoryPoint, Series


def per_run_processes(
    result_ids: Sequence[int], processes: Mapping[int, Sequence[ProcessValue]]
) -> tuple[list[np.ndarray], np.ndarray]:
    """(process values, probe figure) of each result: its ok trials' values, in trial order (an
    empty array for a result measured in one process) and their median probe (NaN: none timed)."""
    values = [np.asarray(ok_process_values(processes.get(r)), dtype=float) for r in result_ids]
    probes = [process_probe(processes.get(r)) for r in result_ids]
    return values, np.array([math.nan if p is None else p for p in probes], dtype=float)


def _ts(value: Any) -> float:
    return value.timestamp() if hasattr(value, "timestamp") else float(value)


def _finite(values: Any) -> np.ndarray:
    x = np.asarray(values if values is not None else [], dtype=float).ravel()
    return x[np.isfinite(x)]


def _series_of(points: list[HistoryPoint]) -> Series:
    first = points[0]
    ok = [p for p in points if p.status == "ok" and p.median is not None]
    s = Series(
        key=first.key,
        name=first.name or first.case_id,
        machine=first.machine or "",
        series_id=first.series_id or 0,
        job=first.job,
        unit=(ok[-1].unit if ok else first.unit) or "s",
        run_ids=[p.run_id for p in ok],
        result_ids=[p.result_id for p in ok],
        times=[_ts(p.started_at) for p in ok],
        commits=[p.git_commit for p in ok],
        values=np.array([p.median for p in ok], dtype=float),
        ci_low=np.array([run_interval(p)[0] for p in ok], dtype=float),
        ci_high=np.array([run_interval(p)[1] for p in ok], dtype=float),
        rounds=[int(p.rounds or 0) for p in ok],
        throughput=np.array([np.nan if p.throughput is None else p.throughput for p in ok], dtype=float),
        throughput_unit=next((p.throughput_unit for p in reversed(ok) if p.throughput_unit), None),
    )
    if ok and ok[0].samples is not None:
        s.samples = [_finite(p.samples) for p in ok]
    if ok and ok[0].processes is not None:
        s.process_values, s.probes = per_run_processes(
            s.result_ids, {p.result_id: p.processes or () for p in ok}
        )
    # Environment changes between consecutive runs (driver, kernel, Python): events on the series.
    s.events = environment_events([p.machine_env for p in ok])
    s.others = [
        {"run_id": p.run_id, "time": _ts(p.started_at), "commit": p.git_commit, "status": p.status,
         "message": p.message}
        for p in points
        if p.status != "ok" or p.median is None
    ]  # fmt: skip
    return s


def run_interval(p: HistoryPoint) -> tuple[float, float]:
    """The interval of a run's level at `CONFIDENCE`, the one level of every view: from its ok
    process values (2 or more) or its rounds where the point has them, else as stored when stored at
    that level; NaNs otherwise (an older run's 95% interval is not shown as a 98% one)."""
    values = ok_process_values(p.processes)
    if len(values) >= 2:
        return process_level_ci(values, CONFIDENCE)
    samples = _finite(p.samples)
    if samples.size:
        return median_ci(samples.tolist(), CONFIDENCE)
    if p.stats.confidence == CONFIDENCE and p.stats.ci_low is not None and p.stats.ci_high is not None:
        return p.stats.ci_low, p.stats.ci_high
    return math.nan, math.nan


def series_from_points(points: Iterable[HistoryPoint]) -> list[Series]:
    """Group `Store.history` points (ordered by series, then time) into series."""
    groups: dict[tuple, list[HistoryPoint]] = {}
    for p in points:
        groups.setdefault((*p.key, p.machine), []).append(p)
    return [_series_of(g) for g in groups.values()]


def upto(s: Series, run_id: int) -> Series | None:
    """The series cut after its result of `run_id`; None when it has none in that run."""
    if run_id in s.run_ids:
        end = s.run_ids.index(run_id) + 1
    elif any(o["run_id"] == run_id for o in s.others):
        t = next(o["time"] for o in s.others if o["run_id"] == run_id)
        end = int(np.searchsorted(np.asarray(s.times), t, side="right"))
    else:
        return None
    cut = s.head(end)
    limit = s.times[end - 1] if end else -math.inf
    cut.others = [o for o in s.others if o["time"] <= limit or o["run_id"] == run_id]
    return cut
