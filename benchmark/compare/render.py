"""A `benchmark compare` job rendered: Markdown for a pull-request comment and the A/B chart
(the reports' `ab_chart`, one row per case: B/A change with its interval, colored by verdict)."""

from __future__ import annotations

import math
from pathlib import Path

from benchmark.analysis.ab_test import MAX_MORE
from benchmark.datamodel.verdict import Verdict, verdict_words
from benchmark.report.plots import ab_chart, plain_text, save
from benchmark.report.run_rows import Row
from benchmark.units import MISSING, format_ratio_change, format_seconds

VERDICT_MARK = {
    Verdict.REGRESSION: "🔴 ",
    Verdict.IMPROVEMENT: "🟢 ",
    Verdict.PASS: "⚪ ",
    Verdict.INCONCLUSIVE: "🟠 ",
    Verdict.ERROR: "❌ ",
}
ORDER = {
    Verdict.REGRESSION: 0, Verdict.ERROR: 1, Verdict.IMPROVEMENT: 2, Verdict.INCONCLUSIVE: 3, Verdict.PASS: 4,
    Verdict.SKIPPED: 5,
}  # fmt: skip


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _median(values: list[float]) -> float:
    values = sorted(values)
    if not values:
        return math.nan
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def markdown(job) -> str:
    """The comparison as Markdown: the outcome, both sides, one table row per case (worst first)."""
    a, b = job.sides["A"], job.sides["B"]
    verdicts = job.verdicts()
    slower = verdicts.count(Verdict.REGRESSION)
    errors = verdicts.count(Verdict.ERROR)
    counts = job.count_verdicts()  # --instructions: they set the exit code too, so they lead as well
    in_time = " in time" if counts else ""
    if slower:
        head = f"**B is slower{in_time}** in {slower} of {len(verdicts)} case(s)"
    elif errors:
        head = f"**{errors} case(s) could not be measured**; no case is slower{in_time}"
    else:
        head = f"**No case is slower{in_time}** ({len(verdicts)} case(s))"
    more = counts.count(Verdict.REGRESSION)
    if more:
        head += f"; **B runs more instructions** in {more} of {len(counts)} counted case(s)"
    elif counts:
        head += f"; no case runs more instructions ({len(counts)} counted)"
    lines = [
        "## Benchmark comparison (A/B of two environments)",
        "",
        head + ".",
        "",
        f"- **A** (base): `{a.python}`, paddle {a.paddle_version}",
        f"- **B** (change): `{b.python}`, paddle {b.paddle_version}",
        f"- {job.steps} step(s) in {job.elapsed_s:.0f} s ({job.stopped}); each step one fresh worker "
        f"process per side, in random order; seed {job.seed}",
        f"- Verdicts: B/A ratio of per-process values, paired by step; slower/faster when the interval "
        f"excludes 1 and the change exceeds the minimum effect; same when the interval lies within it. "
        f"False slower/faster verdicts: at most {job.alpha:g} in all, over cases and looks.",
    ]
    if job.run_group:
        lines.append(
            f"- Stored as run group `{job.run_group}` (A: run {job.run_ids.get('A')}, B: run {job.run_ids.get('B')})"
        )
    lines += [
        "",
        f"Intervals: {interval_level(job)}.",
        "",
        "A, B: the median of each side's process values. B/A (paired): the estimate the verdict tests, from "
        "the process values paired by step, so it need not equal B divided by A.",
        "",
        "| verdict | case | place | A median | B median | B/A (paired) | interval | pairs |",
        "|---|---|---|---:|---:|---:|---|---:|",
    ]
    for s in sorted(job.states, key=lambda s: (ORDER.get(s.verdict, 9), s.case.id)):
        d = s.decision
        values = {k: [e.value for e in s.entries[k] if e.status == "ok"] for k in ("A", "B")}
        med = {k: _median(v) for k, v in values.items()}
        ok = d is not None and math.isfinite(d.ci_low)
        interval = f"[{format_ratio_change(d.ci_low)}, {format_ratio_change(d.ci_high)}]" if ok else MISSING
        note = ""
        if s.error or s.skipped:
            note = f" ({_cell(s.error or s.skipped)[:200]})"
        elif d is not None and d.verdict == Verdict.INCONCLUSIVE and ok:
            note = f" ({_cell(inconclusive_words(d))})"
        lines.append(
            "| {v} | `{case}`{note} | {place} {mode} | {a} | {b} | {r} | {i} | {n} |".format(
                v=VERDICT_MARK.get(s.verdict, "") + verdict_words(s.verdict).ab,
                case=s.case.case_id,
                note=note,
                place=s.case.place,
                mode=s.case.mode,
                a=format_seconds(med["A"]),
                b=format_seconds(med["B"]),
                r=format_ratio_change(d.ratio) if d is not None else MISSING,
                i=interval,
                n=len(s.pairs),
            )
        )
    lines.append("")
    return "\n".join(lines)


def rows(job) -> list[Row]:
    """One chart row per case with an interval (the ratio is B/A)."""
    out = []
    for s in job.states:
        d = s.decision
        if d is None or not math.isfinite(d.ci_low):
            continue
        out.append(
            Row(
                case_id=s.case.case_id,
                name=s.case.name,
                place=s.case.place,
                mode=s.case.mode,
                config_hash=s.case.config_hash,
                verdict=s.verdict,
                ratio=d.ratio,
                ci_low=d.ci_low,
                ci_high=d.ci_high,
                confidence=d.confidence,
                min_effect=d.min_effect,
            )
        )
    return out


def chart(job):
    """The A/B chart of the job (a matplotlib Figure)."""

    a, b = job.sides["A"], job.sides["B"]
    title = f"B/A: paddle {b.paddle_version} (B) against {a.paddle_version} (A), {job.steps} steps"
    return ab_chart(
        rows(job), title=title, xlabel=f"change of B against A (paired process values), {interval_level(job)}"
    )


NEAR_MIN_EFFECT = 0.25
"""An estimate within this fraction of the minimum effect from it cannot be settled by more pairs: the
interval shrinks around a change that is as large as the threshold."""


def inconclusive_words(d) -> str:
    """Why a case stayed inconclusive, as a person would say it: how far the interval reaches, and
    whether more pairs would settle it (:class:`benchmark.analysis.sequential.SequentialOutcome`)."""
    reach = max(abs(d.ci_low - 1), abs(d.ci_high - 1))
    within = f"the difference is within ±{reach:.1%}" if reach < 1 else "the interval is wider than ±100%"
    if abs(abs(d.ratio - 1) - d.min_effect) <= NEAR_MIN_EFFECT * d.min_effect:
        return f"{within}; the estimate sits at the {d.min_effect:.0%} minimum effect, more pairs would not settle it"
    more = max(d.pairs_needed - d.pairs, 1) if d.pairs_needed else None
    if more is not None and more > MAX_MORE * max(d.pairs, 1):  # no advice nobody would follow
        return f"{within}; the effect is far below this machine's noise: more pairs would not settle it"
    if more is not None:
        return f"{within}; about {more} more pairs would settle it"
    return f"{within}; more pairs would narrow it"


def interval_level(job) -> str:
    """The level the job's intervals hold at, as a person would say it: the job's false-verdict rate
    spent over its cases and looks (each look's own level is higher, e.g. 99.97%)."""
    n = max(1, sum(1 for s in job.states if s.skipped is None))  # the job splits alpha over these only
    return f"{1 - job.alpha:.0%} interval, adjusted for {n} measured case{'s' if n != 1 else ''} and repeated looks"


def write_chart(job, path: str | Path) -> list[Path]:
    """Write the chart to `path`: its suffix (.png, .svg) picks the format; no such suffix: both."""

    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    with plain_text():  # labels are text, never mathtext
        if fmt in ("png", "svg", "pdf"):
            return save(chart(job), path.with_suffix(""), formats=(fmt,))
        return save(chart(job), path, formats=("png", "svg"))
