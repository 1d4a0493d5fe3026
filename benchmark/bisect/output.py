"""The printed table, the Markdown and the JSON of a bisection (pure: values in, text out)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmark.bisect.search import INTERRUPTED, NO_ENDS, STEP, UNRESOLVED, SearchResult


def verdict(r: SearchResult) -> str:
    return r.status.upper()


def interrupted(results: Mapping[str, SearchResult]) -> bool:
    return any(r.status == INTERRUPTED for r in results.values())


def table(case_id: str, r: SearchResult, builds: Sequence[str], confirmed: bool | None = None,
          metric: str = "instructions") -> list[str]:  # fmt: skip
    """A case's lines: its verdict, then every build measured or skipped with its value (an
    instruction count, or with `metric` "time" the B/A ratio against the first build), and whether
    the step held when its two builds were measured again (`confirmed`; None: not checked)."""
    again = "" if confirmed is None else ("; confirmed by measuring both builds again" if confirmed
                                          else "; NOT confirmed when both builds were measured again")  # fmt: skip
    lines = [f"{verdict(r):<12} {case_id}: {r.message} (threshold {r.threshold:.2%}){again}"]
    base = r.baseline
    for i in range(r.n):
        if i in r.values:
            v = r.values[i]
            mark = "  last good" if i == r.good else "  first bad" if i == r.bad else ""
            rel = f"{v / base - 1:+.2%}" if base else ""
            value = f"x{v:.3f}" if metric == "time" else f"{v:,.0f}"
            lines.append(f"  build {i:>3} {builds[i]}  {value}  {rel}{mark}")
        elif i in r.skipped:
            why = "skipped (not made, or inconclusive within the budget)" if metric == "time" else "skipped"
            lines.append(f"  build {i:>3} {builds[i]}  {why}")
    for c in r.changes():
        lines.append(
            f"  change {c.direction} between build {c.before} and build {c.after}: {c.ratio - 1:+.2%}"
        )
    return lines


def exit_code(results: Mapping[str, SearchResult]) -> int:
    """0 no step, 1 a step found (or one between skipped builds), 2 a case that could not be
    bisected (its ends not measured); an interrupted bisection is 130, as Ctrl-C elsewhere."""
    statuses = {r.status for r in results.values()}
    if INTERRUPTED in statuses:
        return 130
    if NO_ENDS in statuses:
        return 2
    return 1 if statuses & {STEP, UNRESOLVED} else 0


def markdown(results: Mapping[str, SearchResult], builds: Sequence[str], metric: str) -> str:
    found = [c for c, r in results.items() if r.status in (STEP, UNRESOLVED)]
    lines = [
        "## Bisection",
        "",
        f"**A step in {len(found)} of {len(results)} case(s)** ({metric}, {len(builds)} builds)."
        if found
        else f"No step in {len(results)} case(s) ({metric}, {len(builds)} builds).",
        "",
        "| Case | Verdict | Last good | First bad | Effect | Measured | Skipped |",
        "|---|---|---|---|---:|---:|---|",
    ]
    for case_id, r in results.items():
        good = builds[r.good] if r.good is not None and r.status != "no-step" else ""
        bad = builds[r.bad] if r.bad is not None and r.status != "no-step" else ""
        effect = f"{r.effect:+.2%}" if r.effect is not None else ""
        skipped = ", ".join(builds[i] for i in sorted(r.skipped))
        lines.append(f"| `{case_id}` | {r.status} | {good} | {bad} | {effect} | {r.measured} | {skipped} |")
    return "\n".join([*lines, ""])


def to_dict(
    results: Mapping[str, SearchResult], builds: Sequence[str], metric: str, order: Sequence[int]
) -> dict[str, Any]:
    return {
        "metric": metric,
        "builds": list(builds),
        "measured_order": list(order),
        "exit_status": exit_code(results),
        "cases": {case_id: r.to_dict() for case_id, r in results.items()},
    }
