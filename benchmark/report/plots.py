"""Matplotlib plots of the history: trend per series, A/B chart of a run, NVML telemetry timeline.

Every function returns a :class:`matplotlib.figure.Figure` drawn on an Agg canvas (no pyplot, no
global state, safe in worker processes); :func:`save` writes it as PNG and/or SVG. Artists that
tests and readers look for carry a gid: ``median``, ``ci-band``, ``samples``, ``change-point``,
``level``, ``alert``, ``alert-reverted`` (trend); ``verdict-<name>``, ``equivalence`` (A/B).

:func:`render_all` renders many :class:`PlotJob` in a process pool (``os.cpu_count()`` workers by
default; ``jobs=1`` is the serial path) with a progress bar on long work.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display, ever; a no-op when pyplot is not imported

import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator  # noqa: E402

from benchmark.parallel import parallel_map  # noqa: E402
from benchmark.report.compare_runs import (  # noqa: E402
    IMPROVEMENT,
    Row,
    SeriesAnalysis,
    SeriesData,
    analyse,
)

TIME_UNITS = ((1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s"))
RATE_PREFIXES = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"))
VERDICT_COLORS = {
    "slower": "#c62828",
    "faster": "#2e7d32",
    "same": "#607d8b",
    "inconclusive": "#ef8f00",
}
REGRESSION_COLOR, IMPROVEMENT_COLOR = "#c62828", "#2e7d32"
MEDIAN_COLOR, BAND_COLOR, SAMPLE_COLOR = "#1f4e9c", "#8fb3e8", "#6b6b6b"
TREND_SIZE = (11.0, 5.0)
DENSE_RUNS = 120
ZOOM_RUNS = 40
# Fixed margins (inches are fixed too): a solved layout costs more than drawing the plot itself.
TREND_MARGINS = {"left": 0.075, "right": 0.99, "top": 0.885, "bottom": 0.2}
AB_ROW_INCHES = 0.2
AB_LABEL_CHARS = 72
AB_LABEL_FONTSIZE = 7.5
AB_PLOT_INCHES = 6.5
DPI = 110


# ------------------------------------------------------------------------------------------------ units


def time_scale(values: Iterable[float]) -> tuple[float, str]:
    """(factor, unit) that show seconds in ns, µs, ms or s: the largest unit not above the median."""
    x = np.abs(np.asarray(list(values), dtype=float))
    x = x[np.isfinite(x) & (x > 0)]
    ref = float(np.median(x)) if x.size else 1.0
    scale, unit = TIME_UNITS[0]
    for s, u in TIME_UNITS:
        if ref >= s * 0.9995:
            scale, unit = s, u
    return 1.0 / scale, unit


def rate_scale(values: Iterable[float], unit: str = "samples/s") -> tuple[float, str]:
    """(factor, unit) for a throughput: samples/s, k samples/s, M samples/s ..."""
    x = np.abs(np.asarray(list(values), dtype=float))
    x = x[np.isfinite(x) & (x > 0)]
    ref = float(np.median(x)) if x.size else 1.0
    scale, prefix = 1.0, ""
    for s, p in RATE_PREFIXES:
        if ref >= s:
            scale, prefix = s, p
    return 1.0 / scale, f"{prefix} {unit}".strip() if prefix else unit


def format_time(seconds: float | None) -> str:
    """A duration as everywhere (`benchmark.units.format_seconds`): `1.234 ms`, `125.1 µs`."""
    from benchmark.units import format_seconds

    return format_seconds(seconds)


def _new_figure(size: tuple[float, float], **kw) -> Figure:
    fig = Figure(figsize=size, dpi=DPI, **kw)
    FigureCanvasAgg(fig)
    return fig


def save(
    fig: Figure, path_without_ext: str | os.PathLike[str], formats: Sequence[str] = ("png", "svg")
) -> list[Path]:
    """Write `fig` as each format (png, svg, pdf) next to `path_without_ext`; returns the paths."""
    base = Path(path_without_ext)
    base.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for fmt in formats:
        path = base.with_name(f"{base.name}.{fmt}")
        fig.savefig(path, format=fmt, dpi=DPI, metadata=_metadata(fmt))
        out.append(path)
        _freeze_layout(fig)
    return out


def _freeze_layout(fig: Figure) -> None:
    """After the first save the layout is known: keep it instead of solving it again per format."""
    engine = fig.get_layout_engine()
    if engine is not None and type(engine).__name__ != "PlaceHolderLayoutEngine":
        with contextlib.suppress(RuntimeError):  # an engine that cannot be swapped keeps working
            fig.set_layout_engine("none")


def _metadata(fmt: str) -> dict[str, Any] | None:
    # Reproducible files: no creation date in SVG/PDF.
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return None


def _title(
    case_id: str, place: str, mode: str | None = None, extra: str | None = None, width: int = 110
) -> str:
    head = " · ".join(p for p in (case_id, place, mode, extra) if p)
    return "\n".join(textwrap.wrap(head, width, break_long_words=True, break_on_hyphens=False)[:3])


def _short(text: str, limit: int) -> str:
    """`text` cut in the middle to at most `limit` characters (both ends carry meaning in case ids)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) * 2 // 3
    return text[:head] + "…" + text[len(text) - (limit - 1 - head) :]


def _ab_label(row: Row) -> str:
    suffix = f" [{row.place}, {row.mode}]"
    return _short(row.case_id, max(AB_LABEL_CHARS - len(suffix), 20)) + suffix


# ------------------------------------------------------------------------------------------------ trend


def _series_values(series: SeriesData, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list, str]:
    """Per-run value, band, raw points (in display units) and the y-axis label."""
    if metric == "throughput":
        return _throughput_values(series)
    factor, unit = time_scale(series.medians)
    points = [s * factor for s in series.samples] if series.samples is not None else []
    label = f"time per iteration ({unit})"
    return series.medians * factor, series.ci_low * factor, series.ci_high * factor, points, label


def _throughput_values(series: SeriesData):
    """Throughput per run; band and points from the time samples (throughput x median / time)."""
    tp = series.throughput
    k = tp * series.medians  # work per iteration
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = k / series.ci_high, k / series.ci_low
        raw = [ki / s for ki, s in zip(k, series.samples or [], strict=False)] if series.samples else []
    factor, unit = rate_scale(tp, series.throughput_unit or "samples/s")
    return tp * factor, lo * factor, hi * factor, [r * factor for r in raw], f"throughput ({unit})"


def _x_labels(series: SeriesData) -> list[str]:
    labels = []
    for t, commit in zip(series.times, series.commits, strict=True):
        date = dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d")
        labels.append(f"{commit[:7]}\n{date}" if commit else date)
    return labels


def _set_x_axis(ax, series: SeriesData, max_ticks: int, start: int = 0, xlabel: bool = True) -> None:
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
        color = IMPROVEMENT_COLOR if cp.direction == IMPROVEMENT else REGRESSION_COLOR
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


def _draw_events(ax, series: SeriesData, start: int = 0) -> None:
    """Environment changes (driver, kernel, Python upgrades between two runs): a grey dotted line
    before the first run under the new environment, labelled with what changed."""
    events = getattr(series, "events", None) or {}
    labelled = False
    for i, what in sorted(events.items()):
        if i <= start:
            continue
        line = ax.axvline(i - 0.5, color="0.45", ls=":", lw=1.2, zorder=3,
                          label=None if labelled else "environment change")  # fmt: skip
        line.set_gid("environment-event")
        labelled = True
        text = ax.annotate(_short(what, 40), xy=(i - 0.5, 0.0), xycoords=("data", "axes fraction"),
                           xytext=(2, 3), textcoords="offset points", rotation=90, ha="left", va="bottom",
                           fontsize=6.5, color="0.35")  # fmt: skip
        text.set_gid("environment-event-label")


def _draw_alerts(ax, med: np.ndarray, analysis: SeriesAnalysis, start: int = 0) -> None:
    """Diamonds on the runs where the online gate fired: filled, or hollow when it reverted."""
    alerts = [a for a in analysis.alerts if a.index >= start]
    for reverted in (False, True):
        for direction in ("regression", IMPROVEMENT):
            group = [
                a for a in alerts if (a.reverted_at is not None) == reverted and a.direction == direction
            ]
            if not group:
                continue
            color = IMPROVEMENT_COLOR if direction == IMPROVEMENT else REGRESSION_COLOR
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


def series_metric(series: SeriesData) -> str:
    """Model cases (with a throughput) are drawn in samples/s, everything else in time per iteration."""
    tp = np.asarray(series.throughput if series.throughput is not None else [], dtype=float)
    return "throughput" if tp.size and np.isfinite(tp).all() else "time"


def trend_plot(
    series: SeriesData,
    analysis: SeriesAnalysis | None = None,
    *,
    metric: str = "time",
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
    fig = _new_figure(TREND_SIZE)
    if n > DENSE_RUNS:
        grid = fig.add_gridspec(1, 2, width_ratios=(3.2, 1), wspace=0.13, **TREND_MARGINS)
        ax, zoom = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    else:
        fig.subplots_adjust(**TREND_MARGINS)
        ax, zoom = fig.add_subplot(), None
    n_points, hidden = _draw_panel(ax, series, analysis, values, 0, max_ticks)
    if zoom is not None:
        _draw_panel(zoom, series, analysis, values, n - ZOOM_RUNS, 2, xlabel=False)
        zoom.set_title(f"last {ZOOM_RUNS} runs", fontsize=9)
    ax.set_ylabel(values[4])
    metric = getattr(series, "metric", "time")
    title = _title(series.case_id, series.place, series.mode, metric if metric != "time" else None)
    ax.set_title(f"{title}\n{_trend_note(series, analysis, n_points, hidden)}", fontsize=10)
    fig.legend(handles=ax.get_legend_handles_labels()[0], loc="lower center", bbox_to_anchor=(0.5, 0.005), fontsize=8,
               ncols=6, frameon=False)  # fmt: skip
    return fig


def _draw_panel(ax, series: SeriesData, analysis: SeriesAnalysis, values, start: int, max_ticks: int,
                xlabel: bool = True) -> tuple[int, int]:  # fmt: skip
    """Runs start..n-1 of the series on `ax`; returns (raw samples drawn, samples outside the axis)."""
    med, lo, hi, points, _ = values
    n = med.size
    x = np.arange(start, n)
    n_points = _draw_samples(ax, points, start)
    band = ax.fill_between(x, lo[start:], hi[start:], color=BAND_COLOR, alpha=0.45, lw=0,
                           label="95% CI of the median", zorder=2)  # fmt: skip
    band.set_gid("ci-band")
    dense = n - start > DENSE_RUNS  # a zig-zag of hundreds of runs hides the levels: dots, faint line
    (line,) = ax.plot(x, med[start:], color=MEDIAN_COLOR, lw=0.6 if dense else 1.4, marker="o",
                      ms=2.2 if dense else 3, label="median per run", zorder=5)  # fmt: skip
    line.set_gid("median")
    if analysis.change_points:
        _draw_levels(ax, med, analysis, start)
    _draw_change_points(ax, analysis, n, start)
    _draw_events(ax, series, start)
    _draw_alerts(ax, med, analysis, start)
    hidden = _y_limits(ax, med[start:], lo[start:], hi[start:], points[start:])
    _set_x_axis(ax, series, max_ticks, start, xlabel)
    ax.grid(True, axis="y", alpha=0.3)
    return n_points, hidden


def _trend_note(series: SeriesData, analysis: SeriesAnalysis, n_points: int, hidden: int) -> str:
    parts = [
        f"machine {series.machine[:8]}",
        f"status: {analysis.status}",
        f"{len(analysis.change_points)} change point(s)",
    ]
    if n_points:
        parts.append(f"{n_points} raw samples")
    if hidden:
        parts.append(f"{hidden} outside the axis")
    if series.others:
        parts.append(f"{len(series.others)} run(s) without a number")
    return " · ".join(parts)


# -------------------------------------------------------------------------------------------------- A/B


def _ab_rows(rows: Iterable[Row]) -> list[Row]:
    usable = [r for r in rows if math.isfinite(r.ratio)]
    return sorted(usable, key=lambda r: (r.ratio, r.label))


def _pct(values: Iterable[float]) -> np.ndarray:
    return (np.asarray(list(values), dtype=float) - 1.0) * 100.0


def ab_chart(rows: Sequence[Row], *, title: str = "A/B: each case against its baseline") -> Figure:
    """Every case's change of the median with its interval, sorted, colored by verdict.

    One row of AB_ROW_INCHES per case, so labels never overlap whatever the number of cases; the
    left margin is measured from the widest label (a solved layout would cost seconds at 500 cases).
    """
    data = _ab_rows(rows)
    labels = [_ab_label(r) for r in data]
    many = len(data) > 40
    top_in, bottom_in = (0.95 if many else 0.7), 0.6
    height = top_in + bottom_in + max(len(data), 1) * AB_ROW_INCHES
    fig = _new_figure((AB_PLOT_INCHES + 3.0, height))
    ax = fig.add_subplot()
    label_in = _widest(fig, labels, AB_LABEL_FONTSIZE)
    left_in = label_in + 0.55
    fig.set_size_inches(left_in + AB_PLOT_INCHES + 0.35, height)
    width = left_in + AB_PLOT_INCHES + 0.35
    fig.subplots_adjust(
        left=left_in / width, right=1 - 0.35 / width, top=1 - top_in / height, bottom=bottom_in / height
    )
    y = np.arange(len(data))
    for verdict, color in VERDICT_COLORS.items():
        idx = [i for i, r in enumerate(data) if r.verdict == verdict]
        if idx:
            _draw_verdict(ax, [data[i] for i in idx], y[idx], verdict, color)
    _draw_equivalence(ax, data)
    ax.axvline(0.0, color="#333333", lw=0.8, zorder=1)
    ax.set_yticks(y, labels, fontsize=AB_LABEL_FONTSIZE)
    ax.set_ylim(-0.7, len(data) - 0.3)
    ax.xaxis.set_major_formatter(
        FuncFormatter(lambda v, _p: f"{v:+.0f}%" if abs(v) >= 1 or v == 0 else f"{v:+.1f}%")
    )
    conf = data[0].confidence if data else 0.99
    ax.set_xlabel(f"change of the median vs baseline, {conf:.0%} interval")
    ax.set_ylabel("case [place, mode]")
    ax.grid(True, axis="x", alpha=0.3)
    ax.tick_params(axis="x", labeltop=many, top=many)
    ax.set_title(title, fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        fig.legend(
            loc="upper center", bbox_to_anchor=(0.5, 1 - 0.04 / height), fontsize=8, ncols=5, frameon=False
        )
    if not data:
        ax.text(0.5, 0.5, "no case has a baseline to compare with", transform=ax.transAxes, ha="center")
    return fig


def _widest(fig: Figure, labels: Sequence[str], fontsize: float) -> float:
    """Width in inches of the widest of `labels` (the longest few by characters, measured)."""
    if not labels:
        return 0.5
    renderer = fig.canvas.get_renderer()
    probe = fig.text(0, 0, "", fontsize=fontsize)
    widest = 0.0
    for text in sorted(labels, key=len, reverse=True)[:8]:
        probe.set_text(text)
        widest = max(widest, probe.get_window_extent(renderer).width / fig.dpi)
    probe.remove()
    return widest * 1.03


def _draw_verdict(ax, rows: list[Row], y: np.ndarray, verdict: str, color: str) -> None:
    mid = _pct(r.ratio for r in rows)
    lo = _pct(r.ci_low for r in rows)
    hi = _pct(r.ci_high for r in rows)
    err = np.vstack([np.nan_to_num(mid - lo), np.nan_to_num(hi - mid)])
    container = ax.errorbar(
        mid,
        y,
        xerr=err,
        fmt="o",
        ms=4,
        color=color,
        ecolor=color,
        elinewidth=1.6,
        capsize=2,
        label=f"{verdict} ({len(rows)})",
        zorder=3,
    )
    container.lines[0].set_gid(f"verdict-{verdict}")


def _draw_equivalence(ax, data: list[Row]) -> None:
    if not data:
        return
    d = data[0].min_effect
    span = ax.axvspan(
        (1 / (1 + d) - 1) * 100,
        d * 100,
        color="#b0bec5",
        alpha=0.3,
        lw=0,
        zorder=0,
        label=f"within ±{d:.0%} (same)",
    )
    span.set_gid("equivalence")


# -------------------------------------------------------------------------------------------- telemetry

TELEMETRY_PANELS = (
    ("utilization (%)", (("gpu_util", "GPU"), ("mem_util", "memory bus")), 1.0),
    ("power (W)", (("power_w", "board power"),), 1.0),
    ("memory used (GiB)", (("mem_used_bytes", "used"),), 1.0 / 2**30),
    ("SM clock (MHz)", (("sm_clock_mhz", "SM"),), 1.0),
)


def has_timeline(result: dict[str, Any]) -> bool:
    tele = result.get("telemetry") or {}
    return bool(tele.get("timeline"))


def telemetry_plot(result: dict[str, Any]) -> Figure | None:
    """NVML utilization, power, memory and SM clock over the run of one result (None without data)."""
    timeline = (result.get("telemetry") or {}).get("timeline") or []
    t = np.array([row.get("t", math.nan) for row in timeline], dtype=float)
    panels = [
        (label, [(k, name) for k, name in keys if _column(timeline, k) is not None], f)
        for label, keys, f in TELEMETRY_PANELS
    ]
    panels = [p for p in panels if p[1]]
    if not timeline or not panels:
        return None
    fig = _new_figure((10.0, 1.7 + 1.75 * len(panels)), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (label, keys, factor) in zip(axes, panels, strict=True):
        for key, name in keys:
            (line,) = ax.plot(t, _column(timeline, key) * factor, lw=1.3, label=name)
            line.set_gid(key)
        ax.set_ylabel(label, fontsize=9)
        ax.grid(True, alpha=0.3)
        if len(keys) > 1:
            ax.legend(loc="upper right", fontsize=8)
    axes[0].set_ylim(bottom=0)
    axes[-1].set_xlabel("time since the sampler started (s)")
    summary = (result.get("telemetry") or {}).get("summary") or {}
    device = summary.get("device_name")
    run = f"run {result['run_id']}" if result.get("run_id") is not None else None
    fig.suptitle(
        _title(
            result["case_id"], result["place"], result.get("mode"), ", ".join(p for p in (run, device) if p)
        ),
        fontsize=10,
    )
    return fig


def _column(timeline: list[dict[str, Any]], key: str) -> np.ndarray | None:
    values = np.array([np.nan if row.get(key) is None else row[key] for row in timeline], dtype=float)
    return values if np.any(np.isfinite(values)) else None


# ------------------------------------------------------------------------------------- many at once


@dataclass
class PlotJob:
    """One figure to render: `kind` (trend, ab, telemetry), its data, the path without extension."""

    kind: str
    path: str
    data: Any
    analysis: SeriesAnalysis | None = None
    formats: tuple[str, ...] = ("png", "svg")
    title: str | None = None


def render_job(job: PlotJob) -> list[str]:
    """Build and save one figure; returns the written paths (none when there was nothing to plot)."""
    if job.kind == "trend":
        fig = trend_plot(job.data, job.analysis, metric=series_metric(job.data))
    elif job.kind == "ab":
        fig = ab_chart(job.data, title=job.title) if job.title else ab_chart(job.data)
    elif job.kind == "telemetry":
        fig = telemetry_plot(job.data)
    else:
        raise ValueError(f"unknown plot kind {job.kind!r}")
    if fig is None:
        return []
    return [str(p) for p in save(fig, job.path, job.formats)]


def render_all(
    jobs: Sequence[PlotJob],
    *,
    workers: int | None = None,
    progress: bool | None = None,
    description: str = "rendering plots",
) -> list[str]:
    """Render every job, in a process pool unless `workers` is 1; returns all written paths."""
    return parallel_map(
        render_job, jobs, workers=workers, progress=progress, description=description, flatten=True
    )
