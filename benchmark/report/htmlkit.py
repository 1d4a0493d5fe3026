"""The HTML vocabulary of the dashboard: escaping, one display unit per series, number and date
formats, status badges, the page template (inline CSS, the index's filter script) and the dashboard's
Entry. Everything user-provided goes through :func:`e` (:func:`html.escape`, quotes too).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from benchmark.datamodel.series import Series
from benchmark.report.run_rows import NOT_IN_RUN, SeriesAnalysis
from benchmark.text import safe_text
from benchmark.units import MISSING, SECONDS, SIGNIFICANT_DIGITS, format_value, time_scale

STATUS_COLORS = {
    "regression": "#c62828",
    "error": "#6a1b9a",
    "improvement": "#2e7d32",
    "skipped": "#757575",
    "new": "#1565c0",
    "pass": "#546e7a",
    "ok": "#546e7a",
    "inconclusive": "#ef6c00",
    "wrong": "#6a1b9a",
    NOT_IN_RUN: "#9e9e9e",
}


def e(value: Any) -> str:
    """HTML-escape anything (quotes too, so it is safe in attributes)."""
    return escape(safe_text(value, keep_blanks=True), quote=True)


# ---------------------------------------------------------------------------------------------- model


@dataclass
class Entry:
    """One series on the dashboard."""

    series: Series
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


# ------------------------------------------------------------------------------------------- formats


@dataclass(frozen=True)
class Units:
    """A series' column unit (chosen once from its medians: formatting is the hot loop) and how a
    single value of it is written (:func:`benchmark.units.format_value`, in the unit that fits it)."""

    factor: float
    unit: str
    source: str = "s"
    """The unit the series is stored in."""

    def num(self, value: float | None) -> str:
        """A number in the column unit, 4 significant digits as everywhere (``2.500``)."""
        if value is None or not math.isfinite(value):
            return MISSING
        return f"{value * self.factor:#.{SIGNIFICANT_DIGITS}g}".rstrip(".")

    def val(self, value: float | None) -> str:
        """One value with its own unit: ``125.1 µs``, ``1.234 ms``."""
        return format_value(value, self.source)


def units_for(series: Series) -> Units:
    if series.unit in SECONDS:
        return Units(*time_scale(series.values), source=series.unit)
    return Units(1.0, series.unit, series.unit)


def fmt_p(p: float) -> str:
    if p is None or not math.isfinite(p):
        return MISSING
    return "< 1e-16" if p < 1e-16 else f"{p:.2g}"


def fmt_date(epoch: float | None, with_time: bool = False) -> str:
    if epoch is None:
        return MISSING
    when = dt.datetime.fromtimestamp(epoch, dt.timezone.utc)
    return when.strftime("%Y-%m-%d %H:%M UTC" if with_time else "%Y-%m-%d")


def short_commit(commit: str | None) -> str:
    return commit[:10] if commit else MISSING


def badge(status: str, why: str = "") -> str:
    """A status badge; `why` (the judge's reason) shows on hover."""
    color = STATUS_COLORS.get(status, "#546e7a")
    title = f' title="{e(why)}"' if why else ""
    return f'<span class="badge" style="background:{color}"{title}>{e(status)}</span>'


def status_why(analysis: SeriesAnalysis) -> str:
    """Why a series has its status, in words: the judge's reason on the judged run, or what the
    dashboard's own status means."""
    if analysis.judged is not None and analysis.judged.reason:
        return analysis.judged.reason
    return STATUS_MEANING.get(analysis.status, "")


STATUS_MEANING = {
    "not in run": "the judged run has no result of this series",
    "new": "no earlier result of this series on this machine to compare with",
    "ok": "no change beyond the minimum effect",
    "pass": "no change beyond the minimum effect",
}


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


def options(values: Sequence[str], label: str) -> str:
    opts = "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in values)
    return f'<option value="">{e(label)}</option>{opts}'
