"""The plots a report renders, built in one place and rendered in parallel.

:func:`build` makes every job (the A/B chart of a run, a trend per series, an NVML timeline per
result that has one) for `benchmark plot`, the Markdown report and the HTML dashboard. A job carries
its series key, and :func:`render_all` returns what each job wrote with that key, so files map back
to their series without parsing file names.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.series import Series
from benchmark.report import plots, trend
from benchmark.report.parallel import parallel_map
from benchmark.report.plots import has_timeline
from benchmark.report.run_rows import Row, SeriesAnalysis

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TREND, AB, TELEMETRY = "trend", "ab", "telemetry"


@dataclass(frozen=True)
class PlotJob:
    """One figure to render: `kind` (trend, ab, telemetry), its data, the path without extension, and
    the key of the series it belongs to (None for the A/B chart of a run)."""

    kind: str
    path: str
    data: Any
    analysis: SeriesAnalysis | None = None
    formats: tuple[str, ...] = ("png", "svg")
    title: str | None = None
    key: tuple | None = None


@dataclass(frozen=True)
class Rendered:
    """What one job wrote (no file when there was nothing to plot), with the job's kind and key."""

    kind: str
    key: tuple | None
    files: tuple[str, ...]


def slug_for(key: Sequence[Any]) -> str:
    """A file-name-safe, unique and stable name for a series key (case id, config hash, place, mode,
    machine[, metric])."""
    digest = hashlib.sha1(json.dumps(list(key)).encode()).hexdigest()[:10]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{key[0]}-{key[2]}-{key[3]}").strip("._-")
    return f"{stem[:80]}-{digest}"


def result_key(result: CaseResult, machine: str) -> tuple[str, ...]:
    """The series key of a stored result measured on `machine` (time metric)."""
    return (result.case_id, result.config_hash, result.place, result.mode, machine)


def build(
    out: str | Path,
    *,
    formats: Sequence[str],
    trends: Iterable[tuple[Series, SeriesAnalysis | None]] = (),
    run_id: int | None = None,
    rows: Sequence[Row] | None = None,
    baseline: int | None = None,
    telemetry: Iterable[tuple[tuple, CaseResult]] = (),
    series_dir: str = "",
) -> list[PlotJob]:
    """The jobs of a report, into `out`: the A/B chart of run `run_id` when `rows` is given (first: the
    longest job starts while the others are shared out), a trend per (series, analysis), and an NVML
    timeline per (series key, result) that has one. Trends and timelines go into `out/series_dir`."""

    base, where, fmts = Path(out), Path(out) / series_dir, tuple(formats)
    jobs = []
    if rows is not None:
        if run_id is None:
            raise ValueError("an A/B chart needs the run id of its rows")
        against = f"run {baseline}" if baseline is not None else "its baseline"
        title = f"Run {run_id} against {against}"
        jobs.append(PlotJob(AB, str(base / f"ab-run{run_id}"), list(rows), None, fmts, title))
    for s, analysis in trends:
        path = str(where / f"{slug_for(s.report_key)}.trend")
        jobs.append(PlotJob(TREND, path, s, analysis, fmts, key=s.report_key))
    suffix = f"-run{run_id}" if run_id is not None else ""
    for key, result in telemetry:
        if has_timeline(result):
            path = str(where / f"{slug_for(key)}.telemetry{suffix}")
            jobs.append(PlotJob(TELEMETRY, path, result, None, fmts, key=key))
    return jobs


def render_job(job: PlotJob) -> Rendered:
    """Build and save one figure; returns what was written (nothing when there was nothing to plot).
    Every label is plain text: `text.parse_math` is off, so a ``$`` in a case id is a dollar sign."""

    with plots.plain_text():
        return _render_job(job, plots, trend)


def _render_job(job: PlotJob, plots, trend) -> Rendered:

    fig: Figure | None
    if job.kind == TREND:
        fig = trend.trend_plot(job.data, job.analysis, metric=trend.series_metric(job.data))
    elif job.kind == AB:
        fig = plots.ab_chart(job.data, title=job.title) if job.title else plots.ab_chart(job.data)
    elif job.kind == TELEMETRY:
        fig = plots.telemetry_plot(job.data)
    else:
        raise ValueError(f"unknown plot kind {job.kind!r}")
    files = () if fig is None else tuple(str(p) for p in plots.save(fig, job.path, job.formats))
    return Rendered(job.kind, job.key, files)


def render_all(
    jobs: Sequence[PlotJob],
    *,
    workers: int | None = None,
    progress: bool | None = None,
    description: str = "rendering plots",
) -> list[Rendered]:
    """Render every job, in a process pool unless `workers` is 1; one Rendered per job, in order."""
    return parallel_map(render_job, jobs, workers=workers, progress=progress, description=description)


def files_of(rendered: Iterable[Rendered], kind: str | None = None) -> list[str]:
    """Every file written (of one `kind` when given), in job order."""
    return [f for r in rendered if kind is None or r.kind == kind for f in r.files]
