"""Matplotlib figures of a run: the A/B chart (one row per case, colored by verdict) and the NVML
telemetry timeline; the shared drawing helpers (display units, figures on an Agg canvas, `save`).

Figures are drawn without pyplot (no global state, safe in worker processes). Artists that tests
and readers look for carry a gid: ``verdict-<name>``, ``equivalence``. The trend plot is
:mod:`benchmark.report.trend`; :mod:`benchmark.report.jobs` renders many figures in parallel.
"""

from __future__ import annotations

import contextlib
import math
import os
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display, ever; a no-op when pyplot is not imported

import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from benchmark.datamodel.metrics import CONFIDENCE  # noqa: E402
from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.verdict import Verdict, verdict_words
from benchmark.report.run_rows import Row  # noqa: E402
from benchmark.text import safe_text  # noqa: E402

RATE_PREFIXES = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"))
VERDICT_COLORS = {
    Verdict.REGRESSION: "#c62828",
    Verdict.IMPROVEMENT: "#2e7d32",
    Verdict.PASS: "#607d8b",
    Verdict.INCONCLUSIVE: "#ef8f00",
}
REGRESSION_COLOR, IMPROVEMENT_COLOR = "#c62828", "#2e7d32"
AB_ROW_INCHES = 0.2
AB_LABEL_CHARS = 72
AB_LABEL_FONTSIZE = 7.5
AB_PLOT_INCHES = 6.5
DPI = 110


# ------------------------------------------------------------------------------------------------ units


def rate_scale(values: Iterable[float], unit: str = "samples/s") -> tuple[float, str]:
    """(factor, unit) for values of a unit that is not seconds (a throughput, a count, bytes): the
    unit with a k, M or G prefix that fits their median (``M samples/s``, ``M instructions``)."""
    x = np.abs(np.asarray(list(values), dtype=float))
    x = x[np.isfinite(x) & (x > 0)]
    ref = float(np.median(x)) if x.size else 1.0
    scale, prefix = 1.0, ""
    for s, p in RATE_PREFIXES:
        if ref >= s:
            scale, prefix = s, p
    return 1.0 / scale, f"{prefix} {unit}".strip() if prefix else unit


def plain_text() -> contextlib.AbstractContextManager:
    """Figures made inside show every label as plain text: `text.parse_math` off, so a case id
    with ``$...$`` is not mathtext (which could fail the plot, or render something else)."""
    return matplotlib.rc_context({"text.parse_math": False})


def new_figure(size: tuple[float, float], **kw) -> Figure:
    """A figure of `size` inches on its own Agg canvas (no pyplot)."""
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


def title_of(
    case_id: str, place: str, mode: str | None = None, extra: str | None = None, width: int = 110
) -> str:
    head = " · ".join(safe_text(p) for p in (case_id, place, mode, extra) if p)
    return "\n".join(textwrap.wrap(head, width, break_long_words=True, break_on_hyphens=False)[:3])


def short(text: str, limit: int) -> str:
    """`text` cut in the middle to at most `limit` characters (both ends carry meaning in case ids)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) * 2 // 3
    return text[:head] + "…" + text[len(text) - (limit - 1 - head) :]


def _ab_label(row: Row) -> str:
    suffix = f" [{row.place}, {row.mode}]"
    suffix = safe_text(suffix)
    return short(safe_text(row.case_id), max(AB_LABEL_CHARS - len(suffix), 20)) + suffix


# -------------------------------------------------------------------------------------------------- A/B


def _ab_rows(rows: Iterable[Row]) -> list[Row]:
    usable = [r for r in rows if math.isfinite(r.ratio)]
    return sorted(usable, key=lambda r: (r.ratio, r.label))


def _pct(values: Iterable[float]) -> np.ndarray:
    return (np.asarray(list(values), dtype=float) - 1.0) * 100.0


def ab_chart(
    rows: Sequence[Row], *, title: str = "A/B: each case against its baseline", xlabel: str | None = None
) -> Figure:
    """Every case's judged change (the effect and interval of its row) sorted, colored by verdict.

    One row of AB_ROW_INCHES per case, so labels never overlap whatever the number of cases; the
    left margin is measured from the widest label (a solved layout would cost seconds at 500 cases).
    """
    data = _ab_rows(rows)
    labels = [_ab_label(r) for r in data]
    many = len(data) > 40
    top_in, bottom_in = (0.95 if many else 0.7), 0.6
    height = top_in + bottom_in + max(len(data), 1) * AB_ROW_INCHES
    fig = new_figure((AB_PLOT_INCHES + 3.0, height))
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
    if data:
        ax.axvline(0.0, color="#333333", lw=0.8, zorder=1)
    ax.set_yticks(y, labels, fontsize=AB_LABEL_FONTSIZE)
    ax.set_ylim(-0.7, len(data) - 0.3)
    ax.xaxis.set_major_formatter(
        FuncFormatter(lambda v, _p: f"{v:+.0f}%" if abs(v) >= 1 or v == 0 else f"{v:+.1f}%")
    )
    conf = data[0].confidence if data else CONFIDENCE
    ax.set_xlabel(xlabel or f"change as the gate judged it (effect vs baseline), {conf:.0%} interval")
    ax.set_ylabel("case [place, mode]")
    ax.grid(True, axis="x", alpha=0.3)
    ax.tick_params(axis="x", labeltop=many, top=many)
    ax.set_title(title, fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        fig.legend(
            loc="upper center", bbox_to_anchor=(0.5, 1 - 0.04 / height), fontsize=8, ncols=5, frameon=False
        )
    if not data:  # no axis to read: only the title and the message, which nothing can overlap
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no case has a baseline to compare with", transform=ax.transAxes, ha="center")
    return fig


def _widest(fig: Figure, labels: Sequence[str], fontsize: float) -> float:
    """Width in inches of the widest of `labels` (the longest few by characters, measured)."""
    if not labels:
        return 0.5
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # new_figure's Agg canvas
    probe = fig.text(0, 0, "", fontsize=fontsize)
    widest = 0.0
    for text in sorted(labels, key=len, reverse=True)[:8]:
        probe.set_text(text)
        widest = max(widest, probe.get_window_extent(renderer).width / fig.dpi)
    probe.remove()
    return widest * 1.03


def _draw_verdict(ax, rows: list[Row], y: np.ndarray, verdict: Verdict, color: str) -> None:
    word = verdict_words(verdict).ab
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
        label=f"{word} ({len(rows)})",
        zorder=3,
    )
    container.lines[0].set_gid(f"verdict-{word}")


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


def has_timeline(result: CaseResult) -> bool:
    tele = result.telemetry or {}
    return bool(tele.get("timeline"))


def telemetry_plot(result: CaseResult) -> Figure | None:
    """NVML utilization, power, memory and SM clock over the run of one result (None without data)."""
    timeline = (result.telemetry or {}).get("timeline") or []
    t = np.array([row.get("t", math.nan) for row in timeline], dtype=float)
    panels = []
    for label, keys, factor in TELEMETRY_PANELS:
        columns = [(key, name, col) for key, name in keys if (col := _column(timeline, key)) is not None]
        if columns:  # a metric NVML never reported gets no panel
            panels.append((label, columns, factor))
    if not timeline or not panels:
        return None
    fig = new_figure((10.0, 1.7 + 1.75 * len(panels)), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (label, columns, factor) in zip(axes, panels, strict=True):
        for key, name, col in columns:
            (line,) = ax.plot(t, col * factor, lw=1.3, label=name)
            line.set_gid(key)
        ax.set_ylabel(label, fontsize=9)
        ax.grid(True, alpha=0.3)
        if len(columns) > 1:
            ax.legend(loc="upper right", fontsize=8)
    axes[0].set_ylim(bottom=0)
    axes[-1].set_xlabel("time since the sampler started (s)")
    summary = (result.telemetry or {}).get("summary") or {}
    device = summary.get("device_name")
    run = f"run {result.run_id}" if result.run_id is not None else None
    fig.suptitle(
        title_of(result.case_id, result.place, result.mode, ", ".join(p for p in (run, device) if p)),
        fontsize=10,
    )
    return fig


def _column(timeline: list[dict[str, Any]], key: str) -> np.ndarray | None:
    values = np.array([np.nan if row.get(key) is None else row[key] for row in timeline], dtype=float)
    return values if np.any(np.isfinite(values)) else None
