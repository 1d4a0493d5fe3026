"""Numbers with units, written one way everywhere: terminal, Markdown, HTML, plots and the CLI.

Durations are in seconds in every record; they are shown in ns, µs, ms or s with
:data:`SIGNIFICANT_DIGITS` significant digits, in the largest unit that keeps the number at or above 1
(``1.234 ms``, ``125.1 µs``, ``5.000 ns``). Only the standard library is imported here.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

SIGNIFICANT_DIGITS = 4
TIME_UNITS: tuple[tuple[float, str], ...] = ((1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s"))
SECONDS = ("s", "sec", "second", "seconds")
MISSING = "-"


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def time_unit(seconds: float) -> tuple[float, str]:
    """(scale, unit) for one duration: the largest unit in which it reads >= 1 after rounding."""
    magnitude = abs(seconds)
    chosen = TIME_UNITS[0]
    for scale, unit in TIME_UNITS:
        if float(f"{magnitude / scale:.{SIGNIFICANT_DIGITS}g}") >= 1:
            chosen = (scale, unit)
    return chosen


def format_seconds(seconds: float | None) -> str:
    """A duration in the unit that fits, 4 significant digits: ``1.234 ms``; ``-`` when missing.

    Zero is ``0 s``; a negative duration (a difference) keeps its sign; 1000 s and more are whole
    seconds with thousands separators (``12,345 s``).
    """
    if not _finite(seconds):
        return MISSING
    assert seconds is not None
    if seconds == 0:
        return "0 s"
    if abs(seconds) >= 1000:
        return f"{seconds:,.0f} s"
    scale, unit = time_unit(seconds)
    return f"{seconds / scale:#.{SIGNIFICANT_DIGITS}g}".rstrip(".") + f" {unit}"


def format_value(value: float | None, unit: str | None = "s") -> str:
    """A measured value with its unit: durations through :func:`format_seconds`, others as 4
    significant digits and the unit (``812.5 MB/s``)."""
    if unit is None or unit in SECONDS:
        return format_seconds(value)
    if not _finite(value):
        return MISSING
    return f"{value:.{SIGNIFICANT_DIGITS}g} {unit}"


def time_scale(values: Iterable[float]) -> tuple[float, str]:
    """(factor, unit) for showing many durations on one axis or in one column: multiply seconds by
    factor; the unit is the one that fits the median of the finite non-zero values (s when none)."""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    if not finite:
        return 1.0, "s"
    scale, unit = time_unit(statistics.median(finite))
    return 1.0 / scale, unit


def format_percent(ratio: float | None, *, signed: bool = True) -> str:
    """A relative change as a percentage with one decimal: ``+3.2%``; ``-`` when missing."""
    if not _finite(ratio):
        return MISSING
    return f"{ratio:+.1%}" if signed else f"{ratio:.1%}"


def format_ratio_change(ratio: float | None) -> str:
    """A ratio new/baseline as a signed change in percent, one decimal (``1.048`` -> ``+4.8%``,
    :func:`format_percent` of ``ratio - 1``); from 2x on as a factor (``12.5`` -> ``x12.5``, with
    thousands separators); ``-`` when missing or not finite."""
    if not _finite(ratio):
        return MISSING
    assert ratio is not None
    return f"x{ratio:,.1f}" if ratio >= 2 else format_percent(ratio - 1)
