"""The trend plot of one series: per-run median with its interval band, raw samples, change points,
environment events and gate alerts (gids ``median``, ``ci-band``, ``samples``, ``change-point``,
``level``, ``environment-event``, ``alert``, ``alert-reverted``), with a zoom on the last runs of a
long history. Drawn with the helpers of :mod:`benchmark.report.plots`.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

from benchmark.analysis.adjust import estimate
from benchmark.datamodel.metrics import CONFIDENCE, TIME, get_metric, views_of
from benchmark.datamodel.series import Series
from benchmark.datamodel.verdict import Verdict
from benchmark.report.plots import (
    IMPROVEMENT_COLOR,
    REGRESSION_COLOR,
    new_figure,
    rate_scale,
    short,
    title_of,
)
from benchmark.report.run_rows import SeriesAnalysis, analyse
from benchmark.units import time_scale

MEDIAN_COLOR, BAND_COLOR, SAMPLE_COLOR, PROCESS_COLOR = "#1f4e9c", "#8fb3e8", "#6b6b6b", "#d9822b"
ADJUSTED_COLOR = "#7b1fa2"
TREND_SIZE = (11.0, 5.0)
DENSE_RUNS = 120
ZOOM_RUNS = 40
# Fixed margins (inches are fixed too): a solved layout costs more than drawing the plot itself.
TREND_MARGINS = {"left": 0.075, "right": 0.99, "top": 0.885, "bottom": 0.2}


def _series_values(series: Series, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list, str]:
    """Per-run value, band, raw points (in display units) and the y-axis label: the metric's label
    and its unit (durations in ns .. s, other units with k, M, G)."""
    m = get_metric(metric)
    if m.rate:
        return _rate_values(series, m.label)
    values = series.values
    factor, unit = time_scale(values) if m.seconds else rate_scale(values, series.unit or m.unit)
    points = [s * factor for s in series.samples]
    label = f"{m.label} ({unit})"
    lo, hi = series.ci_low * factor, series.ci_high * factor
    if _by_process(series):  # the process values are drawn instead of an interval pooled over them
        lo, hi = np.full_like(lo, np.nan), np.full_like(hi, np.nan)
    return values * factor, lo, hi, points, label


def _by_process(series: Series) -> bool:
    """Whether the series' runs were measured in worker processes (their values are loaded)."""
    return any(v.size > 1 for v in series.process_values)


def _draw_processes(ax, series: Series, metric: str, start: int) -> None:
    """Each run's worker-process values (a short dash each): their spread is what the gate judges, and
    one slow process shows as one dash instead of stretching an interval."""
    m = get_metric(metric)
    if m.rate or not _by_process(series):
        return
    factor = (
        time_scale(series.values)[0] if m.seconds else rate_scale(series.values, series.unit or m.unit)[0]
    )
    xs = [i for i, v in enumerate(series.process_values) if i >= start for _ in range(v.size)]
    ys = [x * factor for i, v in enumerate(series.process_values) if i >= start for x in v]
    if xs:
        dashes = ax.scatter(xs, ys, marker="_", s=90, linewidths=1.6, color=PROCESS_COLOR, zorder=6,
                            label="worker process values")  # fmt: skip
        dashes.set_gid("processes")


def _rate_values(series: Series, label: str):
    """Throughput per run; band and points from the time samples (throughput x median / time)."""
    tp = series.throughput
    k = tp * series.values  # work per iteration
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = k / series.ci_high, k / series.ci_low
        raw = [ki / s for ki, s in zip(k, series.samples or [], strict=False)] if series.samples else []
    factor, unit = rate_scale(tp, series.throughput_unit or "samples/s")
    return tp * factor, lo * factor, hi * factor, [r * factor for r in raw], f"{label} ({unit})"


def _x_labels(series: Series) -> list[str]:
    """Short commit and date per run; a commit measured in several runs gets each run's number among
    them (``1a2b3c4 #2``), so its runs are told apart."""
    labels = []
    runs = Counter(c for c in series.commits if c)
    seen: Counter[str] = Counter()
    for t, commit in zip(series.times, series.commits, strict=True):
        date = dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d")
        seen[commit or ""] += 1
        number = f" #{seen[commit]}" if commit and runs[commit] > 1 else ""
        labels.append(f"{commit[:7]}{number}\n{date}" if commit else date)
    return labels


def _set_x_axis(ax, series: Series, max_ticks: int, start: int = 0, xlabel: bool = True) -> None:
    """Runs start..n-1 on the x axis, labelled with short commit and date at up to `max_ticks` runs."""
    labels = _x_labels(series)
    n = len(labels)
    ticks = [
        int(t)
        for t in MaxNLocator(nbins=max_ticks, integer=True).tick_values(start, max(n - 1, start))
        if start <= t < n
    ]
    # A label centred on the last runs would stick out of the panel: keep the right edge clear.
    ticks = [t for t in ticks if t <= start + (n - 1 - start) * 0.94] or ticks[:1]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: labels[int(x)] if 0 <= int(x) < n else ""))
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlim(start - 0.8, max(n - 0.2, start + 0.8))
    if xlabel:
        has_commit = any(series.commits)
        ax.set_xlabel(f"run ({'commit, ' if has_commit else ''}date UTC; {n} runs)")


def _draw_samples(ax, points: list[np.ndarray], start: int = 0) -> int:
    if not points[start:]:
        return 0
    rng = np.random.default_rng(0)
    xs = np.concatenate([np.full(len(p), i, dtype=float) for i, p in enumerate(points) if i >= start])
    ys = np.concatenate(points[start:])
    xs = xs + rng.uniform(-0.18, 0.18, xs.size)
    sc = ax.scatter(xs, ys, s=5, color=SAMPLE_COLOR, alpha=0.35, linewidths=0, label="raw samples", zorder=1)
    sc.set_gid("samples")
    sc.set_rasterized(True)  # thousands of dots: keep the SVG small
    return int(ys.size)


def _y_limits(ax, med: np.ndarray, lo: np.ndarray, hi: np.ndarray, points: list[np.ndarray]) -> int:
    """Fit the axis to the medians, bands and the bulk of the samples; returns the points left out."""
    core = [med, lo, hi]
    allp = np.concatenate(points) if points else np.empty(0)
    if allp.size:
        core.append(np.quantile(allp, [0.005, 0.995]))
    vals = np.concatenate([np.asarray(c, dtype=float).ravel() for c in core])
    vals = vals[np.isfinite(vals)]
    if not vals.size:
        return 0
    a, b = float(vals.min()), float(vals.max())
    pad = (b - a) * 0.08 or abs(a) * 0.05 or 1.0
    a, b = a - pad, b + pad
    ax.set_ylim(max(a, 0.0) if a > -pad * 2 and float(vals.min()) >= 0 else a, b)
    lo_lim, hi_lim = ax.get_ylim()
    return int(np.sum((allp < lo_lim) | (allp > hi_lim)))


def _draw_levels(ax, med: np.ndarray, analysis: SeriesAnalysis, start: int = 0) -> None:
    """The median level of each segment between change points, as a step line."""
    bounds = [0, *(c.index for c in analysis.change_points), med.size]
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        if b <= max(a, start):
            continue
        level = float(np.nanmedian(med[a:b]))
        label = "level between change points" if i == 0 else None
        x0 = max(a, start)
        (line,) = ax.plot(
            [x0 - 0.4, b - 0.6], [level, level], color="#222222", lw=1.2, alpha=0.7, zorder=4, label=label
        )
        line.set_gid("level")


def _draw_change_points(ax, analysis: SeriesAnalysis, n: int, start: int = 0) -> None:
    labelled: set[str] = set()
    for cp in analysis.change_points:
        if cp.index <= start:
            continue
        color = IMPROVEMENT_COLOR if cp.direction == Verdict.IMPROVEMENT else REGRESSION_COLOR
        label = None if cp.direction in labelled else f"change point ({cp.direction})"
        labelled.add(cp.direction)
        line = ax.axvline(cp.index - 0.5, color=color, ls="--", lw=1.3, alpha=0.9, zorder=3, label=label)
        line.set_gid("change-point")
        near_right = cp.index - start > 0.85 * (n - start)  # the label goes left of the line there
        text = ax.annotate(
            f"{cp.magnitude:+.1%}",
            xy=(cp.index - 0.5, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(-3 if near_right else 3, -3),
            textcoords="offset points",
            ha="right" if near_right else "left",
            va="top",
            fontsize=8,
            color=color,
            fontweight="bold",
        )
        text.set_gid("change-point-label")


def _draw_events(ax, series: Series, start: int = 0) -> None:
    """Environment changes (driver, kernel, Python upgrades between two runs): a grey dotted line
    before the first run under the new environment, labelled with what changed."""
    events = series.events
    labelled = False
    for i, what in sorted(events.items()):
        if i <= start:
            continue
        line = ax.axvline(i - 0.5, color="0.45", ls=":", lw=1.2, zorder=3,
                          label=None if labelled else "environment change")  # fmt: skip
        line.set_gid("environment-event")
        labelled = True
        text = ax.annotate(short(what, 40), xy=(i - 0.5, 0.0), xycoords=("data", "axes fraction"),
                           xytext=(2, 3), textcoords="offset points", rotation=90, ha="left", va="bottom",
                           fontsize=6.5, color="0.35")  # fmt: skip
        text.set_gid("environment-event-label")


def _draw_alerts(ax, med: np.ndarray, analysis: SeriesAnalysis, start: int = 0) -> None:
    """Diamonds on the runs where the online gate fired: filled, or hollow when it reverted."""
    alerts = [a for a in analysis.alerts if a.index >= start]
    for reverted in (False, True):
        for direction in (Verdict.REGRESSION, Verdict.IMPROVEMENT):
            group = [
                a for a in alerts if (a.reverted_at is not None) == reverted and a.direction == direction
            ]
            if not group:
                continue
            color = IMPROVEMENT_COLOR if direction == Verdict.IMPROVEMENT else REGRESSION_COLOR
            label = f"gate alert ({direction}{', reverted' if reverted else ''})"
            sc = ax.scatter(
                [a.index for a in group],
                [med[a.index] for a in group],
                s=70,
                marker="D",
                facecolors="none" if reverted else color,
                edgecolors=color,
                linewidths=1.5,
                zorder=6,
                label=label,
            )
            sc.set_gid("alert-reverted" if reverted else "alert")


def series_metric(series: Series) -> str:
    """The metric a series is drawn in: a rate computed from its results where it has one for every
    run (model cases: throughput in samples/s), else its own (time per iteration, instructions ...)."""
    tp = np.asarray(series.throughput if series.throughput is not None else [], dtype=float)
    if tp.size and np.isfinite(tp).all():
        rate = next((m.name for m in views_of(series.metric) if m.rate), None)
        if rate is not None:
            return rate
    return series.metric


def trend_plot(
    series: Series,
    analysis: SeriesAnalysis | None = None,
    *,
    metric: str = TIME,
    max_ticks: int = 10,
) -> Figure:
    """Per-run median with its CI band, raw samples, change points and gate alerts of one series.

    `fig.axes[0]` holds the whole history. A long history (more than DENSE_RUNS runs) gets a
    second panel on the right with its last ZOOM_RUNS runs, where a recent change is not a few
    pixels wide.
    """
    analysis = analysis or analyse(series)
    values = _series_values(series, metric)
    n = values[0].size
    fig = new_figure(TREND_SIZE)
    if n > DENSE_RUNS:
        grid = fig.add_gridspec(1, 2, width_ratios=(3.2, 1), wspace=0.13, **TREND_MARGINS)
        ax, zoom = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    else:
        fig.subplots_adjust(**TREND_MARGINS)
        ax, zoom = fig.add_subplot(), None
    n_points, hidden = _draw_panel(ax, series, analysis, values, 0, max_ticks, metric=metric)
    if zoom is not None:
        _draw_panel(zoom, series, analysis, values, n - ZOOM_RUNS, 2, xlabel=False, metric=metric)
        zoom.set_title(f"last {ZOOM_RUNS} runs", fontsize=9)
    ax.set_ylabel(values[4])
    stored = series.metric
    title = title_of(series.case_id, series.place, series.mode, stored if stored != TIME else None)
    ax.set_title(f"{title}\n{_trend_note(series, analysis, n_points, hidden)}", fontsize=10)
    fig.legend(handles=ax.get_legend_handles_labels()[0], loc="lower center", bbox_to_anchor=(0.5, 0.005), fontsize=8,
               ncols=6, frameon=False)  # fmt: skip
    return fig


def _draw_panel(ax, series: Series, analysis: SeriesAnalysis, values, start: int, max_ticks: int,
                xlabel: bool = True, metric: str = TIME) -> tuple[int, int]:  # fmt: skip
    """Runs start..n-1 of the series on `ax`; returns (raw samples drawn, samples outside the axis)."""
    med, lo, hi, points, _ = values
    n = med.size
    x = np.arange(start, n)
    n_points = _draw_samples(ax, points, start)
    if np.isfinite(lo[start:]).any():
        band = ax.fill_between(x, lo[start:], hi[start:], color=BAND_COLOR, alpha=0.45, lw=0,
                               label=f"{CONFIDENCE:.0%} CI of the level", zorder=2)  # fmt: skip
        band.set_gid("ci-band")
    _draw_processes(ax, series, metric, start)
    dense = n - start > DENSE_RUNS  # a zig-zag of hundreds of runs hides the levels: dots, faint line
    (line,) = ax.plot(x, med[start:], color=MEDIAN_COLOR, lw=0.6 if dense else 1.4, marker="o",
                      ms=2.2 if dense else 3, label="median per run", zorder=5)  # fmt: skip
    line.set_gid("median")
    _draw_adjusted(ax, series, med, start)
    if analysis.change_points:
        _draw_levels(ax, med, analysis, start)
    _draw_change_points(ax, analysis, n, start)
    _draw_events(ax, series, start)
    _draw_alerts(ax, med, analysis, start)
    hidden = _y_limits(ax, med[start:], lo[start:], hi[start:], points[start:])
    _set_x_axis(ax, series, max_ticks, start, xlabel)
    ax.grid(True, axis="y", alpha=0.3)
    return n_points, hidden


def _draw_adjusted(ax, series: Series, med: np.ndarray, start: int) -> None:
    """The run values adjusted by the reference probe, dashed beside the raw ones, where the
    series' history shows its values follow the probe (`benchmark.analysis.adjust.estimate` over
    the whole series); nothing otherwise."""
    probes = series.probes
    if probes.size != med.size or not np.isfinite(probes).any():
        return
    adj = estimate(med, probes)
    if not adj.used:
        return
    factors = np.array([adj.factor(p) for p in probes])
    x = np.arange(start, med.size)
    (line,) = ax.plot(x, (med / factors)[start:], color=ADJUSTED_COLOR, lw=1.0, ls="--", marker=None,
                      label=f"adjusted by the machine probe (beta {adj.beta:.2f})", zorder=4)  # fmt: skip
    line.set_gid("adjusted")


def _trend_note(series: Series, analysis: SeriesAnalysis, n_points: int, hidden: int) -> str:
    parts = [
        f"machine {series.machine[:8]}",
        f"status: {analysis.status}"
        + (f", {analysis.judged.effect}" if analysis.judged and analysis.judged.effect else ""),
        f"{len(analysis.change_points)} change point(s)",
    ]
    if n_points:
        parts.append(f"{n_points} raw samples")
    if hidden:
        parts.append(f"{hidden} outside the axis")
    if series.others:
        parts.append(f"{len(series.others)} run(s) without a number")
    return " · ".join(parts)
