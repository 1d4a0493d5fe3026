"""What a night (`benchmark night`) found, in words: the build it ran, and per failing case the
culprit range (the effect, the last good and first bad build, their paddle commits, the upstream
comparison of the two commits), for the terminal, the Markdown report (and the workflow's job
summary) and the dashboard. Pure: the night's record (``run.extra["night"]``) in, text out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmark.report.htmlkit import e
from benchmark.report.markdown import code, text
from benchmark.units import format_percent

STATUS_WORDS = {
    "step": "bisected",
    "standing": "standing (bisected before)",
    "budget-spent": "budget spent",
    "unresolved": "unresolved (builds skipped)",
    "no-step": "no step between the builds",
    "no-ends": "ends not measured",
    "no-good-night": "no passing night before",
    "no-builds": "no builds to bisect",
    "same-build": "same build as last night",
    "not-bisected": "not bisected",
}


def _short(commit: Any) -> str:
    return str(commit)[:10] if commit else "-"


def _pct(value: Any) -> str:
    return format_percent(value) if isinstance(value, (int, float)) else "-"


def build_line(night: Mapping[str, Any]) -> str:
    """``paddlepaddle 3.2.0 (commit 1a2b3c4d5e, built 2025-08-11, index URL)``."""
    b = night.get("build") or {}
    where = b.get("index") or b.get("python") or "-"
    installed = b.get("installed_version")
    version = b.get("version") or installed or "?"
    also = f", installed as {installed}" if installed and installed != version else ""
    return (
        f"{b.get('package') or 'paddle'} {version} (commit {_short(b.get('commit'))}, built "
        f"{b.get('date') or '-'} [{b.get('date_source') or '-'}]{also}, from {where})"
    )


def lines(night: Mapping[str, Any]) -> list[str]:
    """The night in plain lines (the command's output)."""
    out = [f"night {night.get('stands_for', '-')}: {build_line(night)}"]
    if night.get("same_build_as"):
        out.append(f"  the same build as night run {night['same_build_as']}: recorded, not bisected")
    verdicts = night.get("verdicts") or {}
    effects = night.get("effects") or {}
    for case, verdict in sorted(verdicts.items()):
        out.append(f"  {verdict.upper():<12} {case} {_pct(effects.get(case))}")
    for b in night.get("bisections") or []:
        out.append(
            f"  culprit {b['case']}: {STATUS_WORDS.get(b.get('status', ''), b.get('status'))}: {b.get('message', '')}"
        )
        if b.get("last_good"):
            out.append(
                f"    last good {b['last_good']} ({_short(b.get('good_commit'))}) -> first bad {b['first_bad']} "
                f"({_short(b.get('bad_commit'))}), {_pct(b.get('effect'))}"
                + (f", {b['compare']}" if b.get("compare") else "")
            )
        c = b.get("commits")
        if isinstance(c, Mapping) and c.get("last_good"):
            out.append(
                f"    commits: {_short(c['last_good'])} -> {_short(c['first_bad'])} ({c.get('status')})"
            )
    return out


def markdown(night: Mapping[str, Any]) -> str:
    """The night's section of the Markdown report (and of the workflow's job summary)."""
    b = night.get("bisections") or []
    head = f"### Night {text(night.get('stands_for', '-'))}\n\nBuild: {text(build_line(night))}."
    if night.get("same_build_as"):
        head += f" The same build as night run {text(night['same_build_as'])}: recorded, not bisected."
    if not b:
        return head + "\n\nNo case regressed: nothing to bisect."
    rows = [
        "| Case | Step effect | Culprit range | Last good | First bad | Compare | Status |",
        "|---|---:|---|---|---|---|---|",
    ]
    for x in b:
        good = (
            f"{text(x.get('last_good'))} {code(_short(x.get('good_commit')))}" if x.get("last_good") else ""
        )
        bad = f"{text(x.get('first_bad'))} {code(_short(x.get('bad_commit')))}" if x.get("first_bad") else ""
        span = f"{text(x.get('last_good'))} -> {text(x.get('first_bad'))}" if x.get("last_good") else ""
        link = (
            f"[{_short(x.get('good_commit'))}...{_short(x.get('bad_commit'))}]({x['compare']})"
            if x.get("compare")
            else ""
        )
        commits = x.get("commits")
        if isinstance(commits, Mapping) and commits.get("last_good"):
            span += f"; commits {code(_short(commits['last_good']))} -> {code(_short(commits['first_bad']))}"
        effect = x.get("effect") if x.get("effect") is not None else x.get("night_effect")
        status = STATUS_WORDS.get(x.get("status", ""), str(x.get("status")))
        if x.get("status") not in ("step", "standing"):
            status += f": {text(x.get('message', ''))}"
        rows.append(f"| `{x['case']}` | {_pct(effect)} | {span} | {good} | {bad} | {link} | {status} |")
    return head + f"\n\n**Culprit ranges ({len(b)} failing case(s))**\n\n" + "\n".join(rows)


def html(night: Mapping[str, Any] | None) -> str:
    """The night's section of the dashboard ('' when the run is not a night)."""
    if not night:
        return ""
    b = night.get("bisections") or []
    same = (
        f" The same build as night run {e(night['same_build_as'])}: recorded, not bisected."
        if night.get("same_build_as")
        else ""
    )
    head = f'<section id="night"><h2>Night {e(night.get("stands_for", "-"))}</h2><p>Build: {e(build_line(night))}.{same}</p>'
    if not b:
        return head + "<p>No case regressed: nothing to bisect.</p></section>"
    rows = []
    for x in b:
        link = (
            f'<a href="{e(x["compare"])}">{e(_short(x.get("good_commit")))}...{e(_short(x.get("bad_commit")))}</a>'
            if x.get("compare")
            else ""
        )
        effect = x.get("effect") if x.get("effect") is not None else x.get("night_effect")
        status = STATUS_WORDS.get(x.get("status", ""), str(x.get("status")))
        if x.get("status") not in ("step", "standing"):
            status += f": {x.get('message', '')}"
        rows.append(
            f'<tr><td><code>{e(x["case"])}</code></td><td class="num">{e(_pct(effect))}</td>'
            f"<td>{e(x.get('last_good') or '')} <code>{e(_short(x.get('good_commit')))}</code></td>"
            f"<td>{e(x.get('first_bad') or '')} <code>{e(_short(x.get('bad_commit')))}</code></td>"
            f"<td>{link}</td><td>{e(status)}</td></tr>"
        )
    return (
        head
        + f"<h3>Culprit ranges ({len(b)} failing case(s))</h3><table><thead><tr><th>Case</th><th>Step effect</th>"
        "<th>Last good</th><th>First bad</th><th>Compare</th><th>Status</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></section>"
    )
