"""The judge's decisions in words, written once: `benchmark gate`'s lines, the pytest --bench-gate
items' failure messages and the Markdown report's effects and environment events.

Pure functions of the decisions (:class:`benchmark.datamodel.verdict.Decision`) or the report rows made of them
(:class:`benchmark.report.run_rows.Row`): both carry case_id, place, mode, events and revert.
Markdown escapes what it takes from here; this module writes plain text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any, TypeVar

from benchmark.units import format_percent

T = TypeVar("T")
MAX_NAMED = 5  # series named per environment change; the rest are counted


# An interval's upper bound past this (+999%, ten times the value) is shown as ">+999%": two worker
# processes a side (--bench-quick) give bounds of millions of percent, which say no more than that.
WIDEST = 9.99


def effect(change: float | None, low: float | None = None, high: float | None = None) -> str:
    """A relative change with its interval when there is one: ``+4.8% (+2.1% .. +7.6%)``; an upper
    bound past `WIDEST` as ``>+999%``."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return format_percent(change)
    upper = format_percent(high) if high <= WIDEST else ">+999%"
    return f"{format_percent(change)} ({format_percent(low)} .. {upper})"


def series_label(item: Any) -> str:
    """``case [place mode]``: the series of a decision or a report row."""
    return f"{item.case_id} [{item.place} {item.mode}]"


def format_decision(d: Any) -> str:
    """One line for a decision: verdict, series, metric, effect with interval, evidence, baseline,
    reason (the parts that are empty are left out)."""
    adjusted = getattr(d, "adjusted_value", None) is not None
    parts = [*_head_and_effect(d), d.evidence, f"baseline: {d.baseline}" if d.baseline else "", d.reason,
             d.probe if adjusted else ""]  # fmt: skip
    return "  ".join(p for p in parts if p)


def _head_and_effect(d: Any) -> tuple[str, str]:
    """The start of a decision's line: verdict, series and metric; its effect with interval ('' when
    it has none)."""
    head = f"{str(d.verdict).upper():<12} {series_label(d)} {d.metric}"
    if not math.isfinite(d.effect):
        return head, ""
    adjusted = " probe-adjusted" if getattr(d, "adjusted_value", None) is not None else ""
    return head, f"effect{adjusted} {effect(d.effect, d.ci_low, d.ci_high)}"


BRIEF_WIDTH = 120


def format_decision_brief(d: Any) -> list[str]:
    """A decision in a short row, as lines (the gate's rows that do not fail): verdict, series, metric, effect
    with interval, and what it was compared with; the full reason is in `--json`. A row longer than
    BRIEF_WIDTH (a long case id) goes on with the comparison on a second, indented line."""
    baseline = getattr(d, "baseline", "") or ""
    # the regime that judged it, briefly: "history: 11 runs (1..11)", "A/B vs run 4", "level: ..."
    against = f"A/B vs {baseline.split(' (A/B', 1)[0]}" if "(A/B" in baseline else baseline
    row = "  ".join(p for p in (*_head_and_effect(d), against) if p)
    if len(row) <= BRIEF_WIDTH or not against:
        return [row]
    return ["  ".join(p for p in _head_and_effect(d) if p), f"{'':<13}{against}"]


def regime(d: Any) -> str | None:
    """Which rule judged a decision, in words: the history detector, a young series' level, an
    A/B against a run, the instruction level; None when nothing was judged."""
    kind = str(getattr(d, "evidence_kind", "") or "")
    baseline = str(getattr(d, "baseline", "") or "")
    if kind == "history":
        return "the history detector"
    if kind == "deterministic":
        return "the instruction level"
    if "young series" in baseline or "only 1 earlier run" in baseline:
        return "a young series' level"
    if kind in ("ab_processes", "ab_history_noise"):
        return "an A/B against a run"
    return None


def regime_line(decisions: Iterable[Any]) -> str | None:
    """``judged by: the history detector 30, a young series' level 4; on values adjusted by the
    machine probe: 12`` (None when nothing was)."""
    counts: dict[str, int] = {}
    adjusted = 0
    for d in decisions:
        r = regime(d)
        if r is not None:
            counts[r] = counts.get(r, 0) + 1
            adjusted += getattr(d, "adjusted_value", None) is not None
    if not counts:
        return None
    line = "judged by: " + ", ".join(f"{r} {n}" for r, n in counts.items())
    return line + (f"; on values adjusted by the machine probe: {adjusted}" if adjusted else "")


def machine_line(run_id: int, speed: Any) -> str | None:
    """``machine: run 7 ran 1.89x slower (probe 38.8 ms, usually 20.5): regressions may be the
    machine's`` (at most about 100 columns) for a run whose machine ran at an unusual speed
    (:class:`benchmark.analysis.adjust.MachineSpeed`; `benchmark gate --json` gives its figures), else None."""
    if speed is None or not speed.unusual:
        return None
    slower = speed.ratio > 1
    factor = speed.ratio if slower else 1 / speed.ratio
    return (
        f"machine: run {run_id} ran {factor:.2f}x {'slower' if slower else 'faster'} (probe "
        f"{speed.probe_s * 1e3:.1f} ms, usually {speed.usual_s * 1e3:.1f}): "
        f"{'regressions' if slower else 'improvements'} may be the machine's"
    )


def skipped_lines(decisions: Iterable[Any]) -> list[str]:
    """Skipped decisions collapsed, one line per reason: ``SKIPPED      6 series: place gpu: ...``."""
    by_reason: dict[str, int] = {}
    for d in decisions:
        by_reason[d.reason] = by_reason.get(d.reason, 0) + 1
    return [f"{'SKIPPED':<12} {n} series: {reason}" for reason, n in by_reason.items()]


def events_by_change(items: Iterable[T]) -> list[tuple[int | None, str, list[T]]]:
    """The environment changes of the items' histories, oldest run first: (first run under the new
    environment, what changed, the items whose history has it)."""
    on: dict[tuple[int | None, str], list[T]] = {}
    for item in items:
        for run, label in getattr(item, "events", None) or ():
            on.setdefault((run, label), []).append(item)
    ordered = sorted(on.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or 0))
    return [(run, label, series) for (run, label), series in ordered]


def named(names: list[str]) -> str:
    """The first MAX_NAMED names, then how many more: ``a, b, c, d, e and 3 more``."""
    more = f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
    return ", ".join(names[:MAX_NAMED]) + more


def event_lines(decisions: Iterable[Any]) -> list[str]:
    """One line per environment change in the judged histories (drivers, kernel, Python), with the
    series it is on: ``run 12: after driver 550 -> 560 (2 series: a [cpu dynamic], b [cpu dynamic])``."""
    return [
        f"run {run}: after {label} ({len(items)} series: {named([series_label(d) for d in items])})"
        for run, label, items in events_by_change(decisions)
    ]


def revert_lines(decisions: Iterable[Any]) -> list[str]:
    """One line per series whose recent alert came back to the old level."""
    return [f"{series_label(d)}: {d.revert}" for d in decisions if getattr(d, "revert", "")]


def place_kind(place: str) -> str:
    """What kind of device a place is, for people: ``gpu:0`` -> GPU, ``cpu`` -> CPU."""
    return (place or "?").split(":", 1)[0].upper()


def not_run_lines(cases: Iterable[tuple[str, str]]) -> list[str]:
    """One line per kind of device and reason for the cases a machine did not run, given as
    (place, reason), most first: ``37 GPU cases: needs a CUDA place``."""
    groups: dict[tuple[str, str], int] = {}
    for place, reason in cases:
        key = (place_kind(place), " ".join(str(reason or "no reason given").split()))
        groups[key] = groups.get(key, 0) + 1
    ordered = sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))
    return [f"{n} {kind} case{'s' if n != 1 else ''}: {reason}" for (kind, reason), n in ordered]


def not_run_title(n: int) -> str:
    """The heading of the short section the skipped cases get: ``Not run on this machine: 37 cases``."""
    return f"Not run on this machine: {n} case{'s' if n != 1 else ''}"


def short_machine(machine: str, width: int = 8) -> str:
    """A machine fingerprint cut to `width` characters, with the mark after it kept whole: the side
    of a `benchmark compare` (``55c5827b/compare-A``) or an import (``55c5827b+imported``)."""
    head = re.match(r"[0-9A-Za-z]*", machine).group(0)  # type: ignore[union-attr]  # always matches
    return head[:width] + machine[len(head) :]
