"""What `benchmark plot` and `benchmark report --format md` produce from an open history: the plot
files of some series (and of a run), and the Markdown report of a run with its plots. The HTML
dashboard is :func:`benchmark.report.html.build_dashboard`.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.series import Series
from benchmark.report import jobs, markdown, night
from benchmark.report.parallel import parallel_map
from benchmark.report.run_rows import (
    Row,
    analyse_one,
    default_min_effect,
    judged_by_series,
    judged_rows,
    judged_run_id,
)


def matches(case_id: str, where: str, patterns: Sequence[str], place: str | None) -> bool:
    """A case at a place is selected by `patterns` (a glob with * or ?, else a substring; none: all)
    and `place` (cpu, gpu:0; 'gpu' matches every GPU; None: all)."""
    if place and not (where == place or where.startswith(f"{place}:")):
        return False
    return not patterns or any(
        fnmatchcase(case_id, p) if set("*?") & set(p) else p in case_id for p in patterns
    )


def plot_history(
    store,
    out: str | Path,
    *,
    patterns: Sequence[str] = (),
    place: str | None = None,
    last: int | None = None,
    run_id: int | None = None,
    baseline: int | None = None,
    formats: Sequence[str] = ("png", "svg"),
    workers: int | None = None,
) -> list[jobs.Rendered]:
    """A trend plot per matching series (their history up to `run_id` when given); with `run_id`, also
    the run's A/B chart against `baseline` (default: each series' previous result) and the NVML
    timeline of each of its results that has one. Raises ValueError when nothing matches."""
    series = store.series(list(patterns) or ["*"], place, last=last, run_id=run_id)
    series = [s for s in series if len(s.run_ids)]  # a series that never produced a number has no trend
    if not series and run_id is None:
        raise ValueError(f"no series in {store.display_url} matches {' '.join(patterns or ['*'])}")
    min_effect = default_min_effect()
    analyses = parallel_map(analyse_one, [(s, min_effect) for s in series], workers=workers,
                            description="analysing series")  # fmt: skip
    # Each title's status and effect are the judge's on the run (default: the latest suite run), as in
    # `benchmark gate`, the reports and the dashboard.
    judged_run = run_id if run_id is not None else judged_run_id(store)
    judged = store.run(judged_run) if judged_run is not None else None
    if run_id is not None and judged is None:
        raise LookupError(f"there is no run {run_id} in {store.display_url}")
    all_rows = judged_rows(store, judged.id, baseline, min_effect=min_effect) if judged else []
    if judged is not None:
        by_series = judged_by_series(all_rows, judged.machine)
        analyses = [a.with_judged(by_series.get(s.report_key)) for s, a in zip(series, analyses, strict=True)]
    rows: list[Row] | None = None
    timelines: list[tuple[tuple, CaseResult]] = []
    if run_id is not None:
        rows = [r for r in all_rows if matches(r.case_id, r.place, patterns, place)]
        timelines = [
            (jobs.result_key(r, judged.machine if judged else ""), r)
            for r in store.results(run_id)
            if matches(r.case_id, r.place, patterns, place)
        ]
    todo = jobs.build(out, formats=formats, run_id=run_id, rows=rows, baseline=baseline,
                      trends=list(zip(series, analyses, strict=True)), telemetry=timelines)  # fmt: skip
    return jobs.render_all(todo, workers=workers)


def markdown_report(
    store,
    run_id: int,
    *,
    baseline: int | None = None,
    out: str | Path | None = None,
    plots_url: str | None = None,
    formats: Sequence[str] = ("png", "svg"),
    min_effect: float | None = None,
    workers: int | None = None,
) -> str:
    """The Markdown report of run `run_id` (:func:`benchmark.report.markdown.render`). With `out`, the
    A/B chart and the trend plots of the series that changed are rendered there, and the report says
    so (unless `plots_url` says where readers find them)."""
    min_effect = default_min_effect() if min_effect is None else min_effect
    rows = judged_rows(store, run_id, baseline, min_effect=min_effect)
    run = store.run(run_id)
    if run is None:
        raise LookupError(f"there is no run {run_id} in {store.display_url}")
    where = plots_url
    if out is not None:
        changed = {r.case_id for r in rows if r.regressed or r.improved or r.history}
        loaded = store.series(sorted(changed), run_id=run_id) if changed else []
        series = [s for s in loaded if s.case_id in changed]
        ab_files = _changed_plots(rows, series, run_id, baseline, Path(out), min_effect, formats, workers)
        where = where or _plots_note(Path(out), len(series), ab_files)
    base = store.run(baseline) if baseline else None
    report = markdown.render(run, rows, baseline_run=base, plots=where, db=store.display_url)
    if isinstance(run.extra.get("night"), dict):  # a night of `benchmark night`: its culprit ranges first
        head, sep, rest = report.partition("\n\n### Regressions")
        report = f"{head}\n\n{night.markdown(run.extra['night'])}{sep}{rest}"
    return report


def _changed_plots(rows: list[Row], series: list[Series], run_id: int, baseline: int | None, out: Path,
                   min_effect: float, formats: Sequence[str], workers: int | None) -> list[str]:  # fmt: skip
    """The A/B chart of the run and the trend plots of the series that changed; the A/B files."""
    machine = next((s.machine for s in series), "")
    judged = judged_by_series(rows, machine)  # the plot's status is the judge's, as in the report
    trends = [(s, analyse_one((s, min_effect)).with_judged(judged.get(s.report_key))) for s in series]
    todo = jobs.build(out, formats=formats, run_id=run_id, rows=rows, baseline=baseline, trends=trends)
    return jobs.files_of(jobs.render_all(todo, workers=workers), jobs.AB)


def _plots_note(out: Path, n_trends: int, ab_files: list[str]) -> str:
    ab = next(iter(ab_files), None)
    note = f"In {markdown.code(out)}: the A/B chart {markdown.code(Path(ab).name) if ab else '-'}"
    if n_trends:
        note += f" and the trend plots of the {n_trends} changed series (`*.trend.png`)"
    return note + "."
