"""The dashboard's pages: the index (the judged run, then every series with its sparkline and
filters) and one page per series (trend, change points and alerts, telemetry, history, environment).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmark.datamodel.metrics import CONFIDENCE, intervals_line
from benchmark.datamodel.run import RunRecord, job_of
from benchmark.report import words
from benchmark.report.htmlkit import (
    FILTER_JS,
    Entry,
    badge,
    e,
    fmt_date,
    fmt_p,
    options,
    page,
    short_commit,
    status_why,
)
from benchmark.report.run_rows import BASELINE_TEXT, STATUS_ORDER, Row, gate_passed, ran, run_notice, tally
from benchmark.report.svg import sparkline_svg, trend_svg
from benchmark.units import MISSING

# ---------------------------------------------------------------------------------------------- index


def _index_row(entry: Entry) -> str:
    s, a = entry.series, entry.analysis
    latest = float(s.values[-1]) if len(s) else None
    search = f"{s.case_id} {s.name}".lower()
    return (
        f'<tr class="series" data-name="{e(search)}" data-place="{e(s.place)}" data-status="{e(a.status)}">'
        f'<td class="case"><a href="{e(entry.page)}">{e(s.case_id)}</a></td>'
        f"<td>{e(s.place)}</td><td>{e(s.mode)}</td><td>{e(words.short_machine(s.machine))}</td>"
        f'<td class="num">{len(s)}</td><td class="num">{e(entry.units.val(latest))}</td>'
        f'<td class="num judged">{e(judged_effect(a))}</td><td>{e(last_change(entry))}</td>'
        f'<td class="status">{badge(a.status, status_why(a))}</td>'
        f"<td>{sparkline_svg(s.values, a.status)}</td></tr>"
    )


def judged_effect(a) -> str:
    """The judged change of a series in the judged run: the effect with its interval, as `benchmark
    gate` prints it; "-" where the judge gave no number."""
    return a.judged.effect if a.judged is not None and a.judged.effect else MISSING


def last_change(entry: Entry) -> str:
    """The newest change point: its size and how many runs ago the new level started."""
    if not entry.analysis.change_points:
        return MISSING
    cp = entry.analysis.change_points[-1]
    ago = len(entry.series) - cp.index
    return f"{cp.magnitude:+.1%}, {ago} run{'s' if ago != 1 else ''} ago"


def run_section(
    run: RunRecord | None,
    rows: list[Row],
    ab_files: list[str],
    out_dir: Path,
    partial: Sequence[RunRecord] = (),
) -> str:
    """The judged run: its gate verdict, its tally and its A/B chart; `partial`: the suite's partial
    runs after it (the index opens on the latest complete run and says why)."""
    if run is None:
        return ""
    c = tally(rows)
    verdict = '<span class="pass">PASS</span>' if gate_passed(rows) else '<span class="fail">FAIL</span>'
    notice = run_notice(rows)
    if notice:
        verdict += f" <small>({e(notice)})</small>"
    items = "".join(f"<span>{e(k.replace('_', ' '))}: <b>{v}</b></span>" for k, v in c.items())
    img = ""
    png = [f for f in ab_files if f.endswith(".png")]
    if png:
        rel = Path(png[0]).relative_to(out_dir).as_posix()
        svgs = [f for f in ab_files if f.endswith(".svg")]  # the link opens the vector file when rendered
        svg = Path(svgs[0]).relative_to(out_dir).as_posix() if svgs else rel
        img = f'<p class="plot"><a href="{e(svg)}"><img src="{e(rel)}" alt="A/B chart of run {e(run.id)}"></a></p>'
        if len(rows) > 40:
            img = f"<details><summary>A/B chart of all {len(rows)} cases</summary>{img}</details>"
    stamp = fmt_date(run.started_at.timestamp(), True) if isinstance(run.started_at, dt.datetime) else MISSING
    return (
        f'<section id="run"><h2>Run {e(run.id)} · {e(short_commit(run.git_commit))} · {e(stamp)} · '
        f'gate {verdict}</h2>{_which_run(run, partial)}<p class="note">As <code>benchmark gate</code> judges '
        f"it: each result against {BASELINE_TEXT}.</p>"
        f'<div class="summary">{items}</div>{img}</section>'
    )


def _which_run(run: RunRecord, partial: Sequence[RunRecord]) -> str:
    """``run 7, the latest complete run; run 8 was partial: 4 of 90 series`` where later runs were partial."""
    if not partial:
        return ""
    later = "; ".join(
        f"run {r.id} was partial: {ran(r)} of {ran(run)} series"
        if r.status == "complete"
        else f"run {r.id} {r.status}"
        for r in partial
    )
    return f'<p class="note which-run">Run {e(run.id)}, the latest complete run; {e(later)}.</p>'


def jobs_section(runs: list[RunRecord]) -> str:
    """The runs of the side jobs (`benchmark compare`, `bisect`, `night`), one table per job, apart
    from the suite's series above them; "" when the history has none."""
    by_job: dict[str, list[RunRecord]] = {}
    for r in runs:
        by_job.setdefault(job_of(r.trigger), []).append(r)
    tables = "".join(
        f"<h3>{e(job)}</h3><table><thead><tr><th>Run</th><th>Started</th><th>Machine</th><th>Commit</th>"
        '<th class="num">Results</th><th>Note</th></tr></thead><tbody>'
        + "".join(
            f"<tr><td>{e(r.id)}</td><td>{e(r.started_at.strftime('%Y-%m-%d %H:%M'))}</td><td>{e(r.machine)}</td>"
            f'<td>{e(short_commit(r.git_commit))}</td><td class="num">{e(r.results)}</td><td>{e(r.note or "")}</td></tr>'
            for r in job_runs
        )
        + "</tbody></table>"
        for job, job_runs in sorted(by_job.items())
    )
    return f'<section id="jobs"><h2>Jobs</h2>{tables}</section>' if tables else ""


def index_html(entries: list[Entry], meta: dict[str, Any], run_section: str, jobs: str = "") -> str:
    """The index: the judged run, the tally, the filters and one row per series; the series whose
    case was skipped in the run (GPU cases on a CPU machine) get a short section at the end."""
    skipped = [en for en in entries if en.analysis.status == "skipped"]
    entries = [en for en in entries if en.analysis.status != "skipped"]
    places = sorted({en.series.place for en in entries})
    present = {en.analysis.status for en in entries}
    statuses = [s for s in STATUS_ORDER if s in present]
    tally = "".join(
        f"<span>{badge(s)} {sum(en.analysis.status == s for en in entries)}</span>" for s in statuses
    )
    rows = "".join(_index_row(en) for en in entries)
    filters = (
        '<div class="filters"><label>Name <input id="filter-name" type="search" placeholder="case id or name">'
        f'</label><label>Place <select id="filter-place">{options(places, "all places")}</select></label>'
        f'<label>Status <select id="filter-status">{options(statuses, "all statuses")}</select></label>'
        f'<span><b id="shown-count">{len(entries)}</b> of {len(entries)} series shown</span></div>'
    )
    table = (
        '<table id="series"><thead><tr><th>Case</th><th>Place</th><th>Mode</th><th>Machine</th>'
        '<th class="num">Runs</th><th class="num">Latest median</th>'
        '<th class="num" title="the effect and interval the gate judged, as benchmark gate prints them">Change '
        "(judged)</th>"
        f"<th>Last change point</th><th>Status</th><th>Trend</th></tr></thead><tbody>{rows}"
        '<tr id="no-match" hidden><td colspan="10">No series matches the filters.</td></tr></tbody></table>'
    )
    header = (
        f'<h1>Benchmark history</h1><div class="meta">{len(entries)} series{_not_run_count(skipped)} · '
        f"{e(intervals_line())} · history {e(meta['db'])} · generated {e(meta['generated'])}</div>"
    )
    body = f'{run_section}<div class="summary">{tally}</div>{filters}{table}{_not_run(skipped)}{jobs}'
    return page("Benchmark history", header, body, FILTER_JS)


def _not_run_count(skipped: list[Entry]) -> str:
    """`` (+ 4 not run on this machine)`` beside the series count, so both counts of the page agree."""
    return f" (+ {len(skipped)} not run on this machine)" if skipped else ""


def _not_run(entries: list[Entry]) -> str:
    """The skipped series: one line per kind of device and reason, the series folded."""
    if not entries:
        return ""
    reasons = "".join(
        f"<li>{e(line)}</li>"
        for line in words.not_run_lines((en.series.place, _skip_reason(en)) for en in entries)
    )
    links = "".join(
        f'<li class="case"><a href="{e(en.page)}">{e(en.series.case_id)}</a> ({e(en.series.place)}, '
        f"{e(en.series.mode)})</li>"
        for en in entries
    )
    return (
        f'<section id="not-run"><h2>{e(words.not_run_title(len(entries)))}</h2><ul>{reasons}</ul>'
        f"<details><summary>The cases ({len(entries)})</summary><ul>{links}</ul></details></section>"
    )


def _skip_reason(entry: Entry) -> str:
    skips = [o for o in entry.series.others if o.get("status") == "skipped"]
    return (skips[-1].get("message") or "") if skips else ""


# --------------------------------------------------------------------------------------- series page


def _history_rows(entry: Entry) -> str:
    """Newest first; cells without closing tags (valid HTML, a third smaller on long histories)."""
    s, a, u = entry.series, entry.analysis, entry.units
    cps = {cp.index for cp in a.change_points}
    alerts = {al.index: al for al in a.alerts}
    dates = [fmt_date(t) for t in s.times]
    items: list[tuple[float, str]] = []
    for i in range(len(s)):
        med = float(s.values[i])
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
                f"<td>{u.num(med)}<td>{u.num(s.ci_low[i])} – {u.num(s.ci_high[i])}"
                f"<td>{e(', '.join(marks))}</tr>",
            )
        )
    for o in s.others:
        items.append(
            (
                o["time"],
                f'<tr class="bad"><td>{o["run_id"]}<td>{e(fmt_date(o["time"]))}<td>{e(short_commit(o["commit"]))}'
                f'<td>{e(o["status"])}<td colspan="3">{e(o["message"] or "")}</tr>',
            )
        )
    items.sort(key=lambda t: t[0], reverse=True)
    return "".join(html for _, html in items)


def change_table(entry: Entry) -> str:
    s, a, u = entry.series, entry.analysis, entry.units
    if not a.change_points and not a.alerts and not s.events:
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
    for i, what in sorted(s.events.items()):
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


def env_html(record: RunRecord | None, config: dict[str, Any] | None = None) -> str:
    if record is None:
        return "<p>The run is not in the history.</p>"
    run = record.to_dict()
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


def series_html(entry: Entry, run: RunRecord | None, config: dict[str, Any] | None, out_dir: Path) -> str:
    s, a, u = entry.series, entry.analysis, entry.units
    latest = float(s.values[-1]) if len(s) else None
    facts = (
        f"<span>status {badge(a.status, status_why(a))}</span><span>latest median <b>{e(u.val(latest))}</b></span>"
        f"<span>change (judged) <b>{e(judged_effect(a))}</b></span><span>{len(s)} ok runs</span>"
        f"<span>{len(s.others)} without a number</span><span>config {e(s.config_hash)}</span>"
    )
    header = (
        f'<div class="meta"><a href="../index.html" style="color:#c5cfd9">← all series</a></div>'
        f'<h1 class="case">{e(s.case_id)}</h1><div class="meta">{e(s.name)} · {e(s.place)} · {e(s.mode)} · '
        f"machine {e(s.machine)} · {e(intervals_line())}</div>"
    )
    body = (
        f'<div class="summary">{facts}</div>'
        f'<p class="note why"><b>Why {e(a.status)}:</b> {e(status_why(a) or MISSING)}</p>'
        f"<section><h2>Trend</h2>{_plot_block(entry, out_dir)}</section>"
        f"<section><h2>Change points and gate alerts</h2>{change_table(entry)}</section>"
        f"{_telemetry_block(entry)}"
        f'<section><h2>History (newest first)</h2><table class="history"><thead><tr><th>Run</th><th>Date</th>'
        f"<th>Commit</th><th>Status</th><th>Median ({e(u.unit)})</th><th>{CONFIDENCE:.0%} CI ({e(u.unit)})</th>"
        f"<th>Marks</th></tr></thead><tbody>{_history_rows(entry)}</tbody></table></section>"
        f"<section><h2>Environment of the latest run</h2>{env_html(run, config)}</section>"
    )
    return page(f"{s.case_id} · {s.place} · {s.mode}", header, body)
