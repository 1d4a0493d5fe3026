"""`benchmark report --format md`: a run's results as Markdown for a pull request comment or a CI summary.

Text people can copy and search: the counts, the gate verdict, a table of regressions and of
improvements (case, place, mode, baseline median, new median, effect with its interval, evidence,
baseline used), what the online history detector says, the inconclusive cases and the errors, and
where the plots are. The decisions come from :func:`benchmark.report.run_rows.judged_rows`;
this module only formats them (a pure function of its arguments).

Everything that comes from a user (case ids, messages, commits) is escaped for GitHub-flavoured
Markdown: case ids go in code spans, other text has ``| < > & * _ [ ] ` \\`` neutralised, so a case
named ``<script>`` or ``a|b`` neither injects HTML nor breaks a table.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from typing import Any

from benchmark.datamodel.metrics import CONFIDENCE, intervals_line
from benchmark.datamodel.run import RunRecord
from benchmark.datamodel.verdict import verdict_words
from benchmark.report import words
from benchmark.report.run_rows import BASELINE_TEXT, ERROR_STATUSES, Row, gate_passed, run_notice, tally
from benchmark.text import safe_text
from benchmark.units import format_percent, format_value

MAX_TABLE_ROWS = 100
INLINE_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")


# -------------------------------------------------------------------------------------------- escaping


def text(value: Any) -> str:
    """Plain Markdown text: one line, HTML and emphasis characters neutralised, pipes escaped."""
    s = safe_text(" ".join(str("" if value is None else value).split()))
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return INLINE_SPECIAL.sub(r"\\\1", s)


def code(value: Any) -> str:
    """A code span that survives backticks and pipes inside a GFM table cell."""
    s = safe_text(" ".join(str("" if value is None else value).split())).replace("|", "\\|")
    if not s:
        return ""
    fence = "`"
    while fence in s:
        fence += "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


# ------------------------------------------------------------------------------------------- formats


def pct(ratio: float) -> str:
    """A ratio new/baseline as a change: ``+4.8%`` (`benchmark.units.format_percent`)."""
    return format_percent(ratio - 1)


def effect(row: Row) -> str:
    """The change with its interval, as `benchmark gate` writes it: ``+4.8% (+2.1% .. +7.6%)``."""
    return words.effect(row.ratio - 1, row.ci_low - 1, row.ci_high - 1)


def evidence(row: Row) -> str:
    parts = []
    if math.isfinite(row.p_value):
        parts.append(f"p={row.p_value:.2g}")
    if math.isfinite(row.q_value):
        parts.append(f"q={row.q_value:.2g}")
    return ", ".join(parts) or "-"


def baseline_used(row: Row) -> str:
    if row.baseline_run_id is None:
        return "-"
    commit = f" {code(row.baseline_commit[:10])}" if row.baseline_commit else ""
    return f"run {row.baseline_run_id}{commit}"


def _when(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return text(value) if value else "-"


# ---------------------------------------------------------------------------------------------- parts


def _table(
    header: Sequence[str], align: Sequence[str], lines: list[list[str]], limit: int = MAX_TABLE_ROWS
) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(cells) + " |" for cells in lines[:limit]]
    if len(lines) > limit:
        out.append(f"\n_... and {len(lines) - limit} more (see the HTML report)._")
    return "\n".join(out)


def _change_table(rows: list[Row]) -> str:
    if not rows:
        return "_None._"
    ordered = sorted(rows, key=lambda r: -abs(math.log(r.ratio)) if r.ratio > 0 else 0)
    lines = [
        [code(r.case_id), text(r.place), text(r.mode), *_medians(r), effect(r), evidence(r), baseline_used(r)]
        for r in ordered
    ]  # fmt: skip
    header = [
        "case",
        "place",
        "mode",
        "baseline median",
        "new median",
        "effect",
        "evidence",
        "baseline",
    ]
    return _table(header, ("---", "---", "---", "---:", "---:", "---", "---", "---"), lines)


def _medians(r: Row) -> tuple[str, str]:
    """The baseline and new median cells: raw, or where the judge adjusted them by the reference
    probe, the new raw value with its adjusted one beside it and the baseline marked adjusted."""
    if r.adjusted_median is None:
        return format_value(r.baseline_median, r.unit), format_value(r.new_median, r.unit)
    return (
        f"{format_value(r.baseline_median, r.unit)} (adjusted)",
        f"{format_value(r.new_median, r.unit)} (adjusted {format_value(r.adjusted_median, r.unit)})",
    )


def _history_table(rows: list[Row]) -> str:
    flagged = [r for r in rows if r.history]
    if not flagged:
        return "_No series raised an alert on its history at this run._"
    lines = [
        [code(r.case_id), text(r.place), text(r.mode), text(r.history), pct(1 + r.history_magnitude),
         f"run {r.history_change_run_id}" if r.history_change_run_id is not None else "-", text(verdict_words(r.verdict).ab)]
        for r in flagged
    ]  # fmt: skip
    header = ["case", "place", "mode", "direction", "level change", "new level since", "A/B verdict"]
    return _table(header, ("---", "---", "---", "---", "---:", "---", "---"), lines)


def _events_and_reverts(rows: list[Row]) -> str:
    """Environment changes in the judged histories (one line per change, with its series) and the
    series whose recent alert came back to the old level; "" when there are none."""
    lines = [
        f"- run {run}: after {text(label)} ({len(series)} series: "
        f"{words.named([f'{code(r.case_id)} ({text(r.place)}, {text(r.mode)})' for r in series])})"
        for run, label, series in words.events_by_change(rows)
    ]
    lines += [
        f"- {code(r.case_id)} ({text(r.place)}, {text(r.mode)}): {text(r.revert)}" for r in rows if r.revert
    ]
    if not lines:
        return ""
    return "### Environment changes and levels that came back\n\n" + "\n".join(lines)


def _inconclusive(rows: list[Row]) -> str:
    items = [r for r in rows if r.verdict == "inconclusive"]
    if not items:
        return ""
    lines = [[code(r.case_id), text(r.place), text(r.mode), effect(r), text(r.reason)] for r in items]
    table = _table(["case", "place", "mode", "effect", "why"], ("---", "---", "---", "---", "---"), lines)
    return f"\n<details><summary>Inconclusive ({len(items)})</summary>\n\n{table}\n\n</details>\n"


def _problems(rows: list[Row]) -> str:
    items = [r for r in rows if r.verdict in ERROR_STATUSES]
    if not items:
        return ""
    lines = [
        [code(r.case_id), text(r.place), text(r.mode), text(r.verdict), text(r.message or r.reason)]
        for r in items
    ]
    table = _table(["case", "place", "mode", "status", "message"], ("---", "---", "---", "---", "---"), lines)
    return f"\n### Errors ({len(items)})\n\n{table}\n"


def _not_run(rows: list[Row]) -> str:
    """The skipped cases, last and short: one line per kind of device and reason, the cases folded."""
    items = [r for r in rows if r.verdict == "skipped"]
    if not items:
        return ""
    reasons = "\n".join(
        f"- {text(line)}" for line in words.not_run_lines((r.place, r.message or r.reason) for r in items)
    )
    names = ", ".join(f"{code(r.case_id)} ({text(r.place)}, {text(r.mode)})" for r in items[:MAX_TABLE_ROWS])
    more = f" and {len(items) - MAX_TABLE_ROWS} more" if len(items) > MAX_TABLE_ROWS else ""
    return (
        f"### {words.not_run_title(len(items))}\n\n{reasons}\n\n"
        f"<details><summary>The cases ({len(items)})</summary>\n\n{names}{more}\n\n</details>"
    )


def _counts_table(rows: list[Row]) -> str:
    c = tally(rows)
    keys = ("cases", "regressions", "improvements", "inconclusive", "pass", "new", "errors", "skipped")
    return _table(list(keys), ("---:",) * len(keys), [[str(c[k]) for k in keys]])


def _gate_line(rows: list[Row], baseline: int | None = None) -> str:
    """The judge's verdict on the run (benchmark.gate.judge), as `benchmark gate` prints it."""
    notice = run_notice(rows, baseline)
    if notice:
        return f"**Gate: PASS** ({text(notice)})"
    c = tally(rows)
    tested = sum(1 for r in rows if math.isfinite(r.p_value))
    effects = sorted({r.min_effect for r in rows if r.metric == "time"})
    if len(effects) == 1:
        min_effect = f"minimum effect {effects[0]:.0%}"
    else:
        min_effect = "minimum effect per case (configs/gates.yaml)"
    verdict = "PASS" if gate_passed(rows) else "FAIL"
    why = f"{c['regressions']} regression(s)" if verdict == "FAIL" else "no regression"
    extra = f", {c['errors']} error(s)" if c["errors"] else ""
    return (
        f"**Gate: {verdict}** ({why}{extra}; {min_effect}, worker processes as the unit, "
        f"Benjamini-Hochberg FDR over {tested} comparisons)"
    )


def _header(run: RunRecord, baseline_run: RunRecord | None, db: str | None, level: float) -> str:
    commit = run.git_commit
    branch = f" ({text(run.git_branch)})" if run.git_branch else ""
    parts = [
        f"Run **{run.id}**",
        f"commit {code(commit[:10]) if commit else '-'}{branch}",
        _when(run.started_at),
    ]
    if run.machine:
        parts.append(f"machine {code(words.short_machine(run.machine, 12))}")
    if db:
        parts.append(f"history {code(db)}")
    parts.append(intervals_line(level))
    if baseline_run is None:
        base = f"Baseline: {BASELINE_TEXT}."
    else:
        bc = baseline_run.git_commit
        base = f"Baseline: run **{baseline_run.id}**, commit {code(bc[:10]) if bc else '-'}, {_when(baseline_run.started_at)}."
    return f"## Benchmark report: run {run.id}\n\n" + " · ".join(parts) + f"\n\n{base}"


def render(
    run: RunRecord,
    rows: list[Row],
    *,
    baseline_run: RunRecord | None = None,
    plots: str | None = None,
    db: str | None = None,
) -> str:
    """The Markdown report of one run. `plots` says where the plots are (a path, a URL or a hint)."""
    regressions = [r for r in rows if r.regressed]
    improvements = [r for r in rows if r.improved]
    sections = [
        _header(run, baseline_run, db, rows[0].confidence if rows else CONFIDENCE),
        _gate_line(rows, baseline_run.id if baseline_run else None),
        _counts_table(rows),
        f"### Regressions ({len(regressions)})\n\n{_change_table(regressions)}",
        f"### Improvements ({len(improvements)})\n\n{_change_table(improvements)}",
    ]
    if baseline_run is None:
        sections.append(f"### History (online detector over the last 100 runs)\n\n{_history_table(rows)}")
        events = _events_and_reverts(rows)
        if events:
            sections.append(events)
    tail = _inconclusive(rows) + _problems(rows)
    if tail:
        sections.append(tail.strip("\n"))
    sections.append(
        f"### Plots\n\n{plots or 'Not rendered: `benchmark plot --run ' + str(run.id) + ' --out DIR`.'}"
    )
    not_run = _not_run(rows)  # skipped cases (GPU cases on a CPU machine) never fill the first screen
    if not_run:
        sections.append(not_run)
    return "\n\n".join(sections) + "\n"
