"""The static HTML dashboard of the history (`benchmark report --format html --out DIR`): build it.

:func:`build_dashboard` loads and analyses every series, judges the run, renders the plots
(:mod:`benchmark.report.jobs`: matplotlib trends only for the series that changed unless
``all_plots``) and writes ``index.html`` and ``series/*.html`` (:mod:`benchmark.report.pages`). The
directory opens from disk: no server, no external resource. Timings on 500 series x 365 runs:
benchmarks/bench_report.py.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.run import SIDE_JOBS, SUITE, RunRecord, job_of
from benchmark.datamodel.series import Series
from benchmark.gate.settings import DEFAULT_GATES_PATH, GateError, load_gates, with_min_effect
from benchmark.report import jobs, night, pages
from benchmark.report.htmlkit import Entry
from benchmark.report.parallel import parallel_map
from benchmark.report.run_rows import (
    RUNS_LOOKED_AT,
    STATUS_ORDER,
    Row,
    SeriesAnalysis,
    analyse_one,
    default_min_effect,
    judged_by_series,
    judged_rows,
    judged_run_id,
    latest_complete,
    series_min_effect,
)


@dataclass
class Dashboard:
    """What was written, with the time each stage took (seconds)."""

    out_dir: Path
    index: Path
    entries: list[Entry]
    plot_files: list[str]
    timings: dict[str, float]
    run_id: int | None = None
    rows: list[Row] = field(default_factory=list)


def needs_plot(analysis: SeriesAnalysis) -> bool:
    """Series worth a full matplotlib plot by default: something changed or broke."""
    return (
        analysis.status not in ("ok", "pass", "new") or bool(analysis.change_points) or bool(analysis.alerts)
    )


# ---------------------------------------------------------------------------------------------- build


def _index_order(entry: Entry) -> tuple:
    """What needs a look first: regressions, errors, improvements ...; then by case, place, mode."""
    s = entry.series
    rank = (
        STATUS_ORDER.index(entry.analysis.status)
        if entry.analysis.status in STATUS_ORDER
        else len(STATUS_ORDER)
    )
    return (rank, s.case_id, s.place, s.mode, s.machine)


def _latest_run_ids(entries: list[Entry]) -> set[int]:
    return {rid for rid in (_latest_run_of(en.series) for en in entries) if rid is not None}


def _latest_run_of(series: Series) -> int | None:
    cands = [(t, r) for t, r in zip(series.times, series.run_ids, strict=True)]
    cands += [(o["time"], o["run_id"]) for o in series.others]
    return max(cands)[1] if cands else None


def _attach(entries: list[Entry], rendered: list[jobs.Rendered]) -> None:
    """Each series' trend and telemetry files, by the key their job carried."""
    by_key = {en.series.report_key: en for en in entries}
    for r in rendered:
        en = by_key.get(r.key) if r.key is not None else None
        if en is not None:
            (en.plot_files if r.kind == jobs.TREND else en.telemetry_files).extend(r.files)


def build_dashboard(
    store,
    out_dir: str | Path,
    *,
    patterns: Sequence[str] = ("*",),
    place: str | None = None,
    run_id: int | None = None,
    baseline: int | None = None,
    all_plots: bool = False,
    plots_enabled: bool = True,
    formats: Sequence[str] = ("png",),
    workers: int | None = None,
    progress: bool | None = None,
    min_effect: float | None = None,
) -> Dashboard:
    """Write the dashboard of every series matching `patterns` into `out_dir`.

    `run_id` (default: the latest complete run of the suite) is the run summarised at the top of the index with its A/B
    chart against `baseline` (default: the previous result of each series). Raises LookupError for
    an unknown run and ValueError when no series matches.
    """
    out = Path(out_dir)
    min_effect = default_min_effect() if min_effect is None else min_effect
    timings: dict[str, float] = {}
    with _timed(timings, "load"):
        # the series of the job the dashboard opens on: the suite's, or (--run of a night, a compare
        # side, a bisect build) that job's own
        opened = store.run(run_id) if run_id is not None else None
        series = store.series(patterns, place, job=job_of(opened.trigger) if opened else SUITE)
        if not series:
            raise ValueError(f"no series in {store.display_url} matches {' '.join(patterns)}")
    with _timed(timings, "analyse"):
        entries = _analyse(series, _min_effects(series, min_effect), workers, progress)
    with _timed(timings, "compare"):
        run, rows, results, partial = _compare(store, run_id, baseline, min_effect)
        entries = _judged_status(entries, run, rows)
    with _timed(timings, "plots"):
        (out / "series").mkdir(parents=True, exist_ok=True)
        todo = _jobs(entries, run, rows, results, baseline, out, all_plots, formats) if plots_enabled else []
        rendered = jobs.render_all(todo, workers=workers, progress=progress, description="rendering plots")
        _attach(entries, rendered)
    with _timed(timings, "html"):
        _write_pages(store, entries, out, run, rows, jobs.files_of(rendered, jobs.AB), partial)
    files = jobs.files_of(rendered)
    return Dashboard(out, out / "index.html", entries, files, timings, run.id if run else None, rows)


class _timed:
    """Adds the seconds spent in the block to `timings[name]`."""

    def __init__(self, timings: dict[str, float], name: str) -> None:
        self.timings, self.name = timings, name

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc) -> None:
        self.timings[self.name] = self.timings.get(self.name, 0.0) + time.perf_counter() - self.start


def _min_effects(series: list[Series], min_effect: float) -> list[float]:
    """Each series' minimum effect as the judge applies it (configs/gates.yaml, `min_effect` as the
    default)."""
    try:
        gates = with_min_effect(load_gates(DEFAULT_GATES_PATH), min_effect)
    except GateError:
        return [min_effect] * len(series)
    return [series_min_effect(gates, s) for s in series]


def _analyse(series: list[Series], min_effects: list[float], workers, progress) -> list[Entry]:
    """Change points and alerts of every series (in parallel): what the trend shows."""
    analyses = parallel_map(analyse_one, list(zip(series, min_effects, strict=True)), workers=workers,
                                  progress=progress, description="analysing series")  # fmt: skip
    return [Entry(s, a, jobs.slug_for(s.report_key)) for s, a in zip(series, analyses, strict=True)]


def _judged_status(entries: list[Entry], run: RunRecord | None, rows: list[Row]) -> list[Entry]:
    """Each series' badge is the judge's verdict on its result in the judged run (the one decision
    `benchmark gate` and the reports take); a series without a result in that run says so. Ordered
    for the index."""
    judged = judged_by_series(rows, run.machine if run else "")
    for en in entries:
        en.analysis = en.analysis.with_judged(judged.get(en.series.report_key))
    return sorted(entries, key=_index_order)


def _judged_run(store, run_id: int | None) -> tuple[RunRecord | None, list[RunRecord]]:
    """The run the index opens on, and the suite's partial runs after it: `run_id`, else the latest
    complete run of the suite (`latest_complete`), else (none complete) the latest run."""
    if run_id is not None:
        found = store.run(run_id)
        if found is None:
            raise LookupError(f"there is no run {run_id}")
        return found, []
    run, partial = latest_complete(store.runs(limit=RUNS_LOOKED_AT))
    if run is not None:
        return run, partial
    latest = judged_run_id(store)
    return (store.run(latest) if latest is not None else None), []


def _compare(store, run_id: int | None, baseline: int | None, min_effect: float):
    """(run, A/B rows, results, later partial runs) of the run summarised on the index."""
    run, partial = _judged_run(store, run_id)
    if run is None:
        return None, [], [], []
    return run, judged_rows(store, run.id, baseline, min_effect=min_effect), store.results(run.id), partial


def _jobs(entries, run, rows, results, baseline, out: Path, all_plots: bool, formats) -> list[jobs.PlotJob]:
    """The run's A/B chart, then the trends and NVML timelines of the series that need a plot."""
    shown = [en for en in entries if len(en.series) and (all_plots or needs_plot(en.analysis))]
    keys = {en.series.report_key for en in shown}
    machine = run.machine if run else ""
    timelines = [(k, r) for r in results if (k := jobs.result_key(r, machine)) in keys]
    return jobs.build(out, formats=formats, run_id=run.id if run else None, rows=rows or None,
                      baseline=baseline, trends=[(en.series, en.analysis) for en in shown],
                      telemetry=timelines, series_dir="series")  # fmt: skip


def _write_pages(
    store,
    entries: list[Entry],
    out: Path,
    run: RunRecord | None,
    rows: list[Row],
    ab_files: list[str],
    partial: list[RunRecord],
) -> None:
    runs: dict[int, RunRecord | None] = {}
    configs = _configs(store, entries)
    for en in entries:
        rid = _latest_run_of(en.series)
        if rid is not None and rid not in runs:
            runs[rid] = store.run(rid)
        run_of = runs.get(rid) if rid is not None else None
        html = pages.series_html(en, run_of, configs.get(en.series.key[:2]), out)
        (out / en.page).write_text(html, encoding="utf-8")
    meta = {
        "db": store.display_url,
        "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    (out / "index.html").write_text(
        pages.index_html(
            entries,
            meta,
            pages.run_section(run, rows, ab_files, out, partial) + night.html(_night_of(run)),
            pages.jobs_section(store.runs(None, jobs=SIDE_JOBS)),
        ),
        encoding="utf-8",
    )


def _configs(store, entries: list[Entry]) -> dict[tuple[str, ...], dict[str, Any]]:
    """The config of each case, read from the latest run's results (one query per distinct run)."""
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    wanted = {en.series.key[:2] for en in entries}
    for rid in sorted(_latest_run_ids(entries), reverse=True):
        if wanted <= set(out):
            break
        for r in _results_light(store, rid):
            out.setdefault((r.case_id, r.config_hash), r.config or {})
    return out


def _results_light(store, run_id: int) -> list[CaseResult]:
    try:
        return store.results(run_id)
    except Exception:  # a report never fails for want of a config
        return []


def _night_of(run: RunRecord | None) -> dict[str, Any] | None:
    """The record of a night (`benchmark night`) the run is, else None."""
    found = run.extra.get("night") if run is not None else None
    return found if isinstance(found, dict) else None
