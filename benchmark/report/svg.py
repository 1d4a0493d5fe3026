"""Inline SVG drawn in Python (microseconds each): the index's sparklines and the light trend of a
series page without a matplotlib plot."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from benchmark.report.htmlkit import STATUS_COLORS, Entry, e, fmt_date

SPARK_W, SPARK_H, SPARK_POINTS = 120, 26, 120
SPARK_MIN_SPAN = 0.10  # relative
TREND_W, TREND_H = 960, 240

# ----------------------------------------------------------------------------------------------- SVG


def _downsample(values: np.ndarray, points: int) -> np.ndarray:
    """At most `points` values: the medians of equal buckets (keeps steps, drops single spikes)."""
    if values.size <= points:
        return values
    return np.array([np.median(b) for b in np.array_split(values, points)])


def _scale(values: np.ndarray, lo: float, hi: float, height: float, pad: float) -> np.ndarray:
    span = hi - lo or abs(hi) or 1.0
    return pad + (height - 2 * pad) * (1.0 - (values - lo) / span)


def _spark_range(v: np.ndarray) -> tuple[float, float]:
    """The value range drawn: at least SPARK_MIN_SPAN of the median, so run-to-run noise of a
    steady series stays a flat line and a real step stands out."""
    lo, hi = float(v.min()), float(v.max())
    span = SPARK_MIN_SPAN * abs(float(np.median(v)))
    if hi - lo < span:
        mid = (hi + lo) / 2
        lo, hi = mid - span / 2, mid + span / 2
    return lo, hi


def sparkline_svg(
    values: Sequence[float] | np.ndarray, status: str = "ok", width: int = SPARK_W, height: int = SPARK_H
) -> str:
    """A small inline SVG polyline of the per-run medians (oldest left), the newest run dotted."""
    v = np.asarray(values, dtype=float)
    v = _downsample(v[np.isfinite(v)], SPARK_POINTS)
    if v.size == 0:
        return f'<svg class="spark" width="{width}" height="{height}" role="img" aria-label="no data"></svg>'
    xs = np.linspace(2, width - 4, v.size) if v.size > 1 else np.array([width / 2])
    lo, hi = _spark_range(v)
    ys = _scale(v, lo, hi, height, 3)
    pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys, strict=True))
    color = STATUS_COLORS.get(status, "#546e7a")
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="trend of {v.size} runs"><polyline points="{pts}" fill="none" stroke="{color}" '
        f'stroke-width="1.3"/><circle cx="{xs[-1]:.1f}" cy="{ys[-1]:.1f}" r="2.2" fill="{color}"/></svg>'
    )


def trend_svg(entry: Entry, width: int = TREND_W, height: int = TREND_H) -> str:
    """A light inline trend (median, CI band, change points, alerts) for pages without a PNG plot."""
    s, a = entry.series, entry.analysis
    med = s.values
    if med.size == 0:
        return "<p>No ok result yet.</p>"
    factor, unit = entry.units.factor, entry.units.unit
    lo, hi = s.ci_low * factor, s.ci_high * factor
    m = med * factor
    finite = np.concatenate([x[np.isfinite(x)] for x in (m, lo, hi)])
    vmin, vmax = float(finite.min()), float(finite.max())
    left, right, pad = 64, 10, 12
    n = med.size
    xs = left + (np.arange(n) + 0.5) * (width - left - right) / n
    ys = _scale(m, vmin, vmax, height, pad)
    band = ""
    ok = np.isfinite(lo) & np.isfinite(hi)
    if np.any(ok):
        top = " ".join(
            f"{x:.0f},{y:.1f}" for x, y in zip(xs[ok], _scale(hi[ok], vmin, vmax, height, pad), strict=True)
        )
        bot = " ".join(
            f"{x:.0f},{y:.1f}"
            for x, y in zip(xs[ok][::-1], _scale(lo[ok][::-1], vmin, vmax, height, pad), strict=True)
        )
        band = f'<polygon points="{top} {bot}" fill="#8fb3e8" fill-opacity="0.45"/>'
    line = " ".join(f"{x:.0f},{y:.1f}" for x, y in zip(xs, ys, strict=True))
    marks = []
    step = (width - left - right) / n
    for cp in a.change_points:
        x = left + cp.index * step
        color = STATUS_COLORS["improvement" if cp.direction == "improvement" else "regression"]
        marks.append(
            f'<line class="cp" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height}" stroke="{color}" stroke-dasharray="4 3">'
            f"<title>change point: {e(cp.direction)} {cp.magnitude:+.1%}</title></line>"
        )
    for al in a.alerts:
        color = STATUS_COLORS["improvement" if al.direction == "improvement" else "regression"]
        fill = "none" if al.reverted_at is not None else color
        marks.append(
            f'<circle cx="{xs[al.index]:.1f}" cy="{ys[al.index]:.1f}" r="4.5" fill="{fill}" stroke="{color}">'
            f"<title>gate alert: {e(al.direction)} {al.magnitude:+.1%}</title></circle>"
        )
    axis = (
        f'<text x="{left - 6}" y="{pad + 4}" text-anchor="end">{vmax:.4g} {e(unit)}</text>'
        f'<text x="{left - 6}" y="{height - pad + 4}" text-anchor="end">{vmin:.4g} {e(unit)}</text>'
        f'<line x1="{left}" x2="{left}" y1="0" y2="{height}" stroke="#999"/>'
    )
    return (
        f'<svg class="trend" width="{width}" height="{height + 18}" viewBox="0 0 {width} {height + 18}" role="img" '
        f'aria-label="trend of the median per run">{axis}{band}'
        f'<polyline points="{line}" fill="none" stroke="#1f4e9c" stroke-width="1.4"/>{"".join(marks)}'
        f'<text x="{left}" y="{height + 14}">{e(fmt_date(s.times[0]))}</text>'
        f'<text x="{width - right}" y="{height + 14}" text-anchor="end">{e(fmt_date(s.times[-1]))}</text></svg>'
    )
