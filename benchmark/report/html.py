"""A static, self-contained HTML dashboard of the history: `benchmark report --format html --out DIR`.

The directory opens from disk with no server and no network: ``index.html`` lists every series
(case, place, mode, latest median, change vs the previous run, status badge, an inline SVG
sparkline) with name/place/status filters in a few lines of inline JavaScript; ``series/*.html`` has
one page per series with its trend plot, change points, online-gate alerts, history table and the
environment of its latest run. Everything user-provided (case ids and names, commits, environment
values, messages) goes through :func:`html.escape`; no external resource is referenced.

Plots: the sparklines and a light inline SVG trend on every series page are drawn here in Python
(microseconds each). A matplotlib trend plot costs 0.3-0.5 s per file format, so by default they are
rendered only for the series that changed (a change point, an alert, an error), in parallel, as PNG
(the page shows the PNG; add "svg" to `formats` for vector files); ``all_plots=True`` renders them for
every series. Measured on 500 series x 365 runs with 2 cores: see scripts/bench_report.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.gates import DEFAULT_GATES_PATH, GateError, load_gates, with_min_effect
from benchmark.parallel import parallel_map
from benchmark.report import jobs, plots
from benchmark.report.compare_runs import (
    BASELINE_TEXT,
    NOT_IN_RUN,
    STATUS_ORDER,
    Row,
    SeriesAnalysis,
    SeriesData,
    analyse_one,
    compare_run,
    counts,
    default_min_effect,
    gate_passed,
    judged_statuses,
    load_series,
    run_notice,
    series_min_effect,
)

SPARK_W, SPARK_H, SPARK_POINTS = 120, 26, 120
SPARK_MIN_SPAN = 0.10  # relative
TREND_W, TREND_H = 960, 240
STATUS_COLORS = {
    "regression": "#c62828",
    "error": "#6a1b9a",
    "improvement": "#2e7d32",
    "skipped": "#757575",
    "new": "#1565c0",
    "ok": "#546e7a",
    "inconclusive": "#ef6c00",
    NOT_IN_RUN: "#9e9e9e",
}


def e(value: Any) -> str:
    """HTML-escape anything (quotes too, so it is safe in attributes)."""
    return escape("" if value is None else str(value), quote=True)


# ---------------------------------------------------------------------------------------------- model


@dataclass
class Entry:
    """One series on the dashboard."""

    series: SeriesData
    analysis: SeriesAnalysis
    slug: str
    plot_files: list[str] = field(default_factory=list)
    telemetry_files: list[str] = field(default_factory=list)

    @property
    def units(self) -> Units:
        return units_for(self.series)

    @property
    def page(self) -> str:
        return f"series/{self.slug}.html"


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
    return analysis.status not in ("ok", "new") or bool(analysis.change_points) or bool(analysis.alerts)


# ------------------------------------------------------------------------------------------- formats


@dataclass(frozen=True)
class Units:
    """One display unit per series (chosen once from its medians: formatting is the hot loop)."""

    factor: float
    unit: str

    def num(self, value: float | None) -> str:
        return "–" if value is None or not math.isfinite(value) else f"{value * self.factor:.4g}"

    def val(self, value: float | None) -> str:
        text = self.num(value)
        return text if text == "–" else f"{text} {self.unit}"


def units_for(series: SeriesData) -> Units:
    if series.unit in ("s", "sec", "seconds"):
        return Units(*plots.time_scale(series.medians))
    return Units(1.0, series.unit)


def fmt_change(change: float) -> str:
    return "–" if change is None or not math.isfinite(change) else f"{change:+.1%}"


def fmt_p(p: float) -> str:
    if p is None or not math.isfinite(p):
        return "–"
    return "< 1e-16" if p < 1e-16 else f"{p:.2g}"


def fmt_date(epoch: float | None, with_time: bool = False) -> str:
    if epoch is None:
        return "–"
    when = dt.datetime.fromtimestamp(epoch, dt.timezone.utc)
    return when.strftime("%Y-%m-%d %H:%M UTC" if with_time else "%Y-%m-%d")


def short_commit(commit: str | None) -> str:
    return commit[:10] if commit else "–"


def badge(status: str) -> str:
    color = STATUS_COLORS.get(status, "#546e7a")
    return f'<span class="badge" style="background:{color}">{e(status)}</span>'


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
    values: Sequence[float], status: str = "ok", width: int = SPARK_W, height: int = SPARK_H
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
    med = s.medians
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


# ------------------------------------------------------------------------------------------- templates

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2733;background:#f6f8fa}
header{background:#1d2733;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}
header .meta{color:#c5cfd9;font-size:12px}main{padding:16px 24px}
a{color:#1558b0}table{border-collapse:collapse;background:#fff;width:100%}
th,td{border-bottom:1px solid #e3e8ee;padding:4px 8px;text-align:left;vertical-align:middle}
th{background:#eef2f6;position:sticky;top:0;font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.case{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12.5px;word-break:break-all}
.badge{color:#fff;border-radius:10px;padding:1px 8px;font-size:12px;white-space:nowrap}
.filters{display:flex;gap:12px;align-items:center;margin:10px 0 12px;flex-wrap:wrap}
.filters input,.filters select{font:inherit;padding:4px 6px}
.summary{display:flex;gap:8px;flex-wrap:wrap;margin:8px 0}.summary span{background:#fff;border:1px solid #e3e8ee;border-radius:6px;padding:4px 10px}
.pass{color:#2e7d32;font-weight:700}.fail{color:#c62828;font-weight:700}
section{background:#fff;border:1px solid #e3e8ee;border-radius:8px;padding:12px 16px;margin:0 0 16px}
section h2{margin:0 0 8px;font-size:16px}.plot img{max-width:100%;height:auto;border:1px solid #e3e8ee}
.trend text{font-size:11px;fill:#444}.note{color:#5b6773;font-size:12px}
dl.env{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}dl.env dt{font-weight:600}
dl.env dd{margin:0;font-family:ui-monospace,monospace;font-size:12px;word-break:break-all}
tr.cp td{background:#fff4e5}tr.bad td{background:#fdecea}
table.history td:nth-child(n+5):nth-child(-n+7),table.history th:nth-child(n+5):nth-child(-n+7){text-align:right;font-variant-numeric:tabular-nums}
"""

FILTER_JS = """
(function () {
  var name = document.getElementById('filter-name');
  var place = document.getElementById('filter-place');
  var status = document.getElementById('filter-status');
  var shown = document.getElementById('shown-count');
  var empty = document.getElementById('no-match');
  var rows = Array.prototype.slice.call(document.querySelectorAll('#series tbody tr.series'));
  function apply() {
    var text = name.value.trim().toLowerCase();
    var n = 0;
    rows.forEach(function (row) {
      var ok = (!text || row.getAttribute('data-name').indexOf(text) >= 0) &&
        (!place.value || row.getAttribute('data-place') === place.value) &&
        (!status.value || row.getAttribute('data-status') === status.value);
      row.hidden = !ok;
      if (ok) { n += 1; }
    });
    shown.textContent = String(n);
    empty.hidden = n !== 0;
  }
  [name, place, status].forEach(function (el) {
    el.addEventListener('input', apply);
    el.addEventListener('change', apply);
  });
  apply();
})();
"""


def page(title: str, header: str, body: str, script: str = "") -> str:
    """A complete HTML document; `title` is escaped here, `header` and `body` are already HTML."""
    js = f"<script>{script}</script>" if script else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{e(title)}</title><style>{CSS}</style></head>"
        f"<body><header>{header}</header><main>{body}</main>{js}</body></html>\n"
    )


def _options(values: Sequence[str], label: str) -> str:
    opts = "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in values)
    return f'<option value="">{e(label)}</option>{opts}'


# ---------------------------------------------------------------------------------------------- index


def _index_row(entry: Entry) -> str:
    s, a = entry.series, entry.analysis
    latest = float(s.medians[-1]) if len(s) else None
    search = f"{s.case_id} {s.name}".lower()
    return (
        f'<tr class="series" data-name="{e(search)}" data-place="{e(s.place)}" data-status="{e(a.status)}">'
        f'<td class="case"><a href="{e(entry.page)}">{e(s.case_id)}</a></td>'
        f"<td>{e(s.place)}</td><td>{e(s.mode)}</td><td>{e(s.machine[:8])}</td>"
        f'<td class="num">{len(s)}</td><td class="num">{e(entry.units.val(latest))}</td>'
        f'<td class="num">{e(fmt_change(a.change_vs_previous))}</td><td>{e(last_change(entry))}</td>'
        f"<td>{badge(a.status)}</td>"
        f"<td>{sparkline_svg(s.medians, a.status)}</td></tr>"
    )


def last_change(entry: Entry) -> str:
    """The newest change point: its size and how many runs ago the new level started."""
    if not entry.analysis.change_points:
        return "–"
    cp = entry.analysis.change_points[-1]
    ago = len(entry.series) - cp.index
    return f"{cp.magnitude:+.1%}, {ago} run{'s' if ago != 1 else ''} ago"


def _run_section(run: dict[str, Any] | None, rows: list[Row], ab_files: list[str], out_dir: Path) -> str:
    if run is None:
        return ""
    c = counts(rows)
    verdict = '<span class="pass">PASS</span>' if gate_passed(rows) else '<span class="fail">FAIL</span>'
    notice = run_notice(rows)
    if notice:
        verdict += f" <small>({e(notice)})</small>"
    items = "".join(f"<span>{e(k.replace('_', ' '))}: <b>{v}</b></span>" for k, v in c.items())
    img = ""
    png = [f for f in ab_files if f.endswith(".png")]
    if png:
        rel = Path(png[0]).relative_to(out_dir).as_posix()
        svg = rel[:-4] + ".svg"
        img = f'<p class="plot"><a href="{e(svg)}"><img src="{e(rel)}" alt="A/B chart of run {e(run["id"])}"></a></p>'
        if len(rows) > 40:
            img = f"<details><summary>A/B chart of all {len(rows)} cases</summary>{img}</details>"
    when = run.get("started_at")
    stamp = fmt_date(when.timestamp(), True) if hasattr(when, "timestamp") else "–"
    return (
        f'<section id="run"><h2>Run {e(run["id"])} · {e(short_commit(run.get("git_commit")))} · {e(stamp)} · '
        f'gate {verdict}</h2><p class="note">As <code>benchmark gate</code> judges it: each result against '
        f"{BASELINE_TEXT}.</p>"
        f'<div class="summary">{items}</div>{img}</section>'
    )


def index_html(entries: list[Entry], meta: dict[str, Any], run_section: str) -> str:
    places = sorted({en.series.place for en in entries})
    present = {en.analysis.status for en in entries}
    statuses = [s for s in STATUS_ORDER if s in present]
    tally = "".join(
        f"<span>{badge(s)} {sum(en.analysis.status == s for en in entries)}</span>" for s in statuses
    )
    rows = "".join(_index_row(en) for en in entries)
    filters = (
        '<div class="filters"><label>Name <input id="filter-name" type="search" placeholder="case id or name">'
        f'</label><label>Place <select id="filter-place">{_options(places, "all places")}</select></label>'
        f'<label>Status <select id="filter-status">{_options(statuses, "all statuses")}</select></label>'
        f'<span><b id="shown-count">{len(entries)}</b> of {len(entries)} series shown</span></div>'
    )
    table = (
        '<table id="series"><thead><tr><th>Case</th><th>Place</th><th>Mode</th><th>Machine</th>'
        '<th class="num">Runs</th><th class="num">Latest median</th><th class="num">vs previous</th>'
        f"<th>Last change point</th><th>Status</th><th>Trend</th></tr></thead><tbody>{rows}"
        '<tr id="no-match" hidden><td colspan="10">No series matches the filters.</td></tr></tbody></table>'
    )
    header = (
        f'<h1>Benchmark history</h1><div class="meta">{len(entries)} series · history {e(meta["db"])} · '
        f"generated {e(meta['generated'])}</div>"
    )
    body = f'{run_section}<div class="summary">{tally}</div>{filters}{table}'
    return page("Benchmark history", header, body, FILTER_JS)


# --------------------------------------------------------------------------------------- series page


def _history_rows(entry: Entry) -> str:
    """Newest first; cells without closing tags (valid HTML, a third smaller on long histories)."""
    s, a, u = entry.series, entry.analysis, entry.units
    cps = {cp.index for cp in a.change_points}
    alerts = {al.index: al for al in a.alerts}
    dates = [fmt_date(t) for t in s.times]
    items: list[tuple[float, str]] = []
    for i in range(len(s)):
        med = float(s.medians[i])
        change = med / float(s.medians[i - 1]) - 1 if i else math.nan
        marks = []
        if i in cps:
            marks.append("change point")
        if i in alerts:
            marks.append(
                f"gate alert ({alerts[i].direction}{', reverted' if alerts[i].reverted_at is not None else ''})"
            )
        cls = ' class="cp"' if i in cps else ""
        items.append(
            (
                s.times[i],
                f"<tr{cls}><td>{s.run_ids[i]}<td>{dates[i]}<td>{e(short_commit(s.commits[i]))}<td>ok"
                f"<td>{u.num(med)}<td>{u.num(s.ci_low[i])} – {u.num(s.ci_high[i])}<td>{fmt_change(change)}"
                f"<td>{e(', '.join(marks))}</tr>",
            )
        )
    for o in s.others:
        items.append(
            (
                o["time"],
                f'<tr class="bad"><td>{o["run_id"]}<td>{e(fmt_date(o["time"]))}<td>{e(short_commit(o["commit"]))}'
                f'<td>{e(o["status"])}<td colspan="4">{e(o["message"] or "")}</tr>',
            )
        )
    items.sort(key=lambda t: t[0], reverse=True)
    return "".join(html for _, html in items)


def _change_table(entry: Entry) -> str:
    s, a, u = entry.series, entry.analysis, entry.units
    if not a.change_points and not a.alerts and not getattr(s, "events", None):
        return "<p>No change point, gate alert or environment change in this history.</p>"
    out = ["<table><thead><tr><th>Kind</th><th>First run of the new level</th><th>Date</th><th>Commit</th>"
           '<th>Direction</th><th class="num">Change</th><th class="num">Level before → after</th>'
           '<th class="num">p-value</th><th>Raised at</th></tr></thead><tbody>']  # fmt: skip
    for cp in a.change_points:
        i = cp.index
        out.append(
            f"<tr><td>change point</td><td>{s.run_ids[i]}</td><td>{e(fmt_date(s.times[i]))}</td>"
            f"<td>{e(short_commit(s.commits[i]))}</td><td>{e(cp.direction)}</td>"
            f'<td class="num">{cp.magnitude:+.1%}</td><td class="num">{e(u.val(cp.before))} → '
            f'{e(u.val(cp.after))}</td><td class="num">{fmt_p(cp.p_value)}</td><td>offline segmentation</td></tr>'
        )
    for al in a.alerts:
        i = al.change_index
        raised = f"run {s.run_ids[al.index]} ({al.runs}-run window, {al.kind})"
        if al.event:
            raised += f"; after {al.event}"
        if al.reverted_at is not None:
            raised += f"; reverted at run {s.run_ids[al.reverted_at]}"
        out.append(
            f"<tr><td>gate alert</td><td>{s.run_ids[i]}</td><td>{e(fmt_date(s.times[i]))}</td>"
            f"<td>{e(short_commit(s.commits[i]))}</td><td>{e(al.direction)}</td>"
            f'<td class="num">{al.magnitude:+.1%}</td><td class="num">{e(u.val(al.baseline))} → '
            f'{e(u.val(al.level))}</td><td class="num">{fmt_p(al.p_value)}</td><td>{e(raised)}</td></tr>'
        )
    for i, what in sorted((getattr(s, "events", None) or {}).items()):
        out.append(
            f"<tr><td>environment change</td><td>{s.run_ids[i]}</td><td>{e(fmt_date(s.times[i]))}</td>"
            f'<td>{e(short_commit(s.commits[i]))}</td><td colspan="4">{e(what)}</td><td>recorded with the runs</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def _flatten(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, dict) for v in value):
        out.append((prefix, json.dumps(value, default=str, sort_keys=True)))
    else:
        out.append(
            (prefix, json.dumps(value, default=str) if isinstance(value, (list, tuple, dict)) else str(value))
        )


def env_html(run: dict[str, Any] | None, config: dict[str, Any] | None = None) -> str:
    if run is None:
        return "<p>The run is not in the history.</p>"
    keys = ("id", "status", "started_at", "finished_at", "git_commit", "git_branch", "git_dirty", "paddle_version",
            "paddle_commit", "cuda_version", "cudnn_version", "trigger", "tags", "hostname", "machine")  # fmt: skip
    pairs: list[tuple[str, str]] = [(k, str(run.get(k))) for k in keys if run.get(k) not in (None, "", [])]
    for group in ("framework", "env", "extra", "machine_info"):
        _flatten(group, run.get(group) or {}, pairs)
    if config:
        _flatten("config", config, pairs)
    items = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in pairs if v not in ("{}", ""))
    return f'<dl class="env">{items}</dl>'


def _plot_block(entry: Entry, out_dir: Path) -> str:
    png = [f for f in entry.plot_files if f.endswith(".png")]
    if not png:
        return (
            f'<div class="plot">{trend_svg(entry)}</div><p class="note">Light trend drawn inline; the full plot '
            "(raw samples, interval band) is rendered for series that changed, or for all with "
            "<code>--all-plots</code>.</p>"
        )
    links = " · ".join(
        f'<a href="{e(Path(f).name)}">{e(Path(f).suffix[1:].upper())}</a>' for f in entry.plot_files
    )
    alt = f"trend of {entry.series.case_id} on {entry.series.place}"
    return f'<p class="plot"><img src="{e(Path(png[0]).name)}" alt="{e(alt)}"></p><p class="note">Files: {links}</p>'


def _telemetry_block(entry: Entry) -> str:
    png = [f for f in entry.telemetry_files if f.endswith(".png")]
    if not png:
        return ""
    return (
        '<section><h2>GPU telemetry of the latest run</h2><p class="plot">'
        f'<img src="{e(Path(png[0]).name)}" alt="NVML telemetry timeline"></p></section>'
    )


def series_html(
    entry: Entry, run: dict[str, Any] | None, config: dict[str, Any] | None, out_dir: Path
) -> str:
    s, a, u = entry.series, entry.analysis, entry.units
    latest = float(s.medians[-1]) if len(s) else None
    facts = (
        f"<span>status {badge(a.status)}</span><span>latest median <b>{e(u.val(latest))}</b></span>"
        f"<span>vs previous <b>{e(fmt_change(a.change_vs_previous))}</b></span><span>{len(s)} ok runs</span>"
        f"<span>{len(s.others)} without a number</span><span>config {e(s.config_hash)}</span>"
    )
    header = (
        f'<div class="meta"><a href="../index.html" style="color:#c5cfd9">← all series</a></div>'
        f'<h1 class="case">{e(s.case_id)}</h1><div class="meta">{e(s.name)} · {e(s.place)} · {e(s.mode)} · '
        f"machine {e(s.machine)}</div>"
    )
    body = (
        f'<div class="summary">{facts}</div>'
        f"<section><h2>Trend</h2>{_plot_block(entry, out_dir)}</section>"
        f"<section><h2>Change points and gate alerts</h2>{_change_table(entry)}</section>"
        f"{_telemetry_block(entry)}"
        f'<section><h2>History (newest first)</h2><table class="history"><thead><tr><th>Run</th><th>Date</th>'
        f"<th>Commit</th><th>Status</th><th>Median ({e(u.unit)})</th><th>95% CI ({e(u.unit)})</th>"
        f"<th>vs previous</th><th>Marks</th></tr></thead><tbody>{_history_rows(entry)}</tbody></table></section>"
        f"<section><h2>Environment of the latest run</h2>{env_html(run, config)}</section>"
    )
    return page(f"{s.case_id} · {s.place} · {s.mode}", header, body)


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


def _latest_run_of(series: SeriesData) -> int | None:
    cands = [(t, r) for t, r in zip(series.times, series.run_ids, strict=True)]
    cands += [(o["time"], o["run_id"]) for o in series.others]
    return max(cands)[1] if cands else None


def _attach(entries: list[Entry], rendered: list[jobs.Rendered]) -> None:
    """Each series' trend and telemetry files, by the key their job carried."""
    by_key = {en.series.key: en for en in entries}
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

    `run_id` (default: the latest run) is the run summarised at the top of the index with its A/B
    chart against `baseline` (default: the previous result of each series). Raises LookupError for
    an unknown run and ValueError when no series matches.
    """
    out = Path(out_dir)
    min_effect = default_min_effect() if min_effect is None else min_effect
    timings: dict[str, float] = {}
    with _timed(timings, "load"):
        series = load_series(store, patterns, place)
        if not series:
            raise ValueError(f"no series in {store.display_url} matches {' '.join(patterns)}")
    with _timed(timings, "analyse"):
        entries = _analyse(series, _min_effects(series, min_effect), workers, progress)
    with _timed(timings, "compare"):
        run, rows, results = _compare(store, run_id, baseline, min_effect)
        entries = _judged_status(entries, run, rows)
    with _timed(timings, "plots"):
        (out / "series").mkdir(parents=True, exist_ok=True)
        todo = _jobs(entries, run, rows, results, baseline, out, all_plots, formats) if plots_enabled else []
        rendered = jobs.render_all(todo, workers=workers, progress=progress, description="rendering plots")
        _attach(entries, rendered)
    with _timed(timings, "html"):
        _write_pages(store, entries, out, run, rows, jobs.files_of(rendered, jobs.AB))
    files = jobs.files_of(rendered)
    return Dashboard(out, out / "index.html", entries, files, timings, run["id"] if run else None, rows)


class _timed:
    """Adds the seconds spent in the block to `timings[name]`."""

    def __init__(self, timings: dict[str, float], name: str) -> None:
        self.timings, self.name = timings, name

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc) -> None:
        self.timings[self.name] = self.timings.get(self.name, 0.0) + time.perf_counter() - self.start


def _min_effects(series: list[SeriesData], min_effect: float) -> list[float]:
    """Each series' minimum effect as the judge applies it (configs/gates.yaml, `min_effect` as the
    default)."""
    try:
        gates = with_min_effect(load_gates(DEFAULT_GATES_PATH), min_effect)
    except GateError:
        return [min_effect] * len(series)
    return [series_min_effect(gates, s) for s in series]


def _analyse(series: list[SeriesData], min_effects: list[float], workers, progress) -> list[Entry]:
    """Change points and alerts of every series (in parallel): what the trend shows."""
    analyses = parallel_map(analyse_one, list(zip(series, min_effects, strict=True)), workers=workers,
                                  progress=progress, description="analysing series")  # fmt: skip
    return [Entry(s, a, jobs.slug_for(s.key)) for s, a in zip(series, analyses, strict=True)]


def _judged_status(entries: list[Entry], run, rows: list[Row]) -> list[Entry]:
    """Each series' badge is the judge's verdict on its result in the judged run (the one decision
    `benchmark gate` and the reports take); a series without a result in that run says so. Ordered
    for the index."""
    statuses = judged_statuses(rows, (run or {}).get("machine") or "")
    for en in entries:
        en.analysis = dataclasses.replace(en.analysis, status=statuses.get(en.series.key, NOT_IN_RUN))
    return sorted(entries, key=_index_order)


def _compare(store, run_id: int | None, baseline: int | None, min_effect: float):
    """(run, A/B rows, results) of the run summarised on the index (default: the latest)."""
    run_id = store.latest_run_id() if run_id is None else run_id
    if run_id is None:
        return None, [], []
    run = store.run(run_id)
    if run is None:
        raise LookupError(f"there is no run {run_id}")
    return run, compare_run(store, run_id, baseline, min_effect=min_effect), store.results(run_id)


def _jobs(entries, run, rows, results, baseline, out: Path, all_plots: bool, formats) -> list[jobs.PlotJob]:
    """The run's A/B chart, then the trends and NVML timelines of the series that need a plot."""
    shown = [en for en in entries if all_plots or needs_plot(en.analysis)]
    keys = {en.series.key for en in shown}
    machine = (run or {}).get("machine") or ""
    timelines = [(k, r) for r in results if (k := jobs.result_key(r, machine)) in keys]
    return jobs.build(out, formats=formats, run_id=run["id"] if run else None, rows=rows or None,
                      baseline=baseline, trends=[(en.series, en.analysis) for en in shown],
                      telemetry=timelines, series_dir="series")  # fmt: skip


def _write_pages(store, entries: list[Entry], out: Path, run, rows: list[Row], ab_files: list[str]) -> None:
    runs: dict[int, dict[str, Any] | None] = {}
    configs = _configs(store, entries)
    for en in entries:
        rid = _latest_run_of(en.series)
        if rid is not None and rid not in runs:
            runs[rid] = store.run(rid)
        html = series_html(en, runs.get(rid), configs.get(en.series.key[:2]), out)
        (out / en.page).write_text(html, encoding="utf-8")
    meta = {
        "db": store.display_url,
        "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    (out / "index.html").write_text(
        index_html(entries, meta, _run_section(run, rows, ab_files, out)), encoding="utf-8"
    )


def _configs(store, entries: list[Entry]) -> dict[tuple[str, str], dict[str, Any]]:
    """The config of each case, read from the latest run's results (one query per distinct run)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    wanted = {en.series.key[:2] for en in entries}
    for rid in sorted(_latest_run_ids(entries), reverse=True):
        if wanted <= set(out):
            break
        for r in _results_light(store, rid):
            out.setdefault((r["case_id"], r["config_hash"]), r.get("config") or {})
    return out


def _results_light(store, run_id: int) -> list[dict[str, Any]]:
    try:
        return store.results(run_id)
    except Exception:  # a report never fails for want of a config
        return []
