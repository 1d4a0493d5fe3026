"""A change the online detector raised on an earlier run that still holds at the newest run.

The online detector (:mod:`benchmark.analysis.online`) raises a change once, on the run where it
first fires, and takes the new level as the baseline from then on. When the gate could not report
it on that run (Benjamini-Hochberg across a suite demotes a lone alert whose p-value is not small
enough for the number of cases), the change would otherwise pass silently ever after. A standing
change is tested again on each later run with all the runs since it: the mean of the runs since
the change against the level before it, under the series' between-run noise. Pure: numbers in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from benchmark.analysis.online import Alert
from benchmark.analysis.robust import between_run_noise

# A regression stands however old it is, until it comes back or is acknowledged (`benchmark ack`:
# the judge then reads the series from the acknowledged run on). None: no limit.
MAX_STANDING_RUNS: int | None = None
# The level before a change: at most this many runs (the judge's effect interval and `level_test`).
LEVEL_RUNS = 10


@dataclass(frozen=True)
class Standing:
    """`alert` still holds at the newest run: `runs` runs since its change, their level `effect`
    (relative, +0.3 = 30% higher) from the level before it, one-sided `p_value` of `t` (Student,
    `df` degrees of freedom); `se`: the standard error of the log effect."""

    alert: Alert
    runs: int
    effect: float
    t: float
    p_value: float
    se: float
    df: float

    def interval(self, alpha: float) -> tuple[float, float]:
        """The relative effect's two-sided interval at 1 - 2 alpha."""
        half = float(sps.t.isf(alpha, self.df)) * self.se
        log_effect = math.log1p(self.effect)
        return math.expm1(log_effect - half), math.expm1(log_effect + half)


def standing_change(
    values: Sequence[float],
    alerts: Sequence[Alert],
    *,
    min_effect: float,
    higher_is_better: bool = False,
    max_runs: int | None = MAX_STANDING_RUNS,
) -> Standing | None:
    """The newest alert raised before the newest run, tested again (:func:`level_test`) when it is
    a regression that still holds: not reverted, its change at most `max_runs` runs back (None:
    however far). None otherwise."""
    newest = len(values) - 1
    earlier = [a for a in alerts if a.index < newest]
    if not earlier:
        return None
    a = earlier[-1]
    too_old = max_runs is not None and newest - a.change_index >= max_runs
    if a.reverted_at is not None or a.direction != "regression" or too_old:
        return None
    return level_test(values, a, alerts, min_effect=min_effect, higher_is_better=higher_is_better)


def level_start(alerts: Sequence[Alert], end: int, *, before: int, max_runs: int = LEVEL_RUNS) -> int:
    """The first of the runs that make the level in force before run `end`: at most `max_runs`
    runs, none before the last change accepted before run `before` (the change of an alert raised
    before it and not reverted). The level is the runs [start, end); none when start >= end."""
    accepted = max((a.change_index for a in alerts if a.index < before and a.reverted_at is None), default=0)
    return max(accepted, end - max_runs)


def level_test(
    values: Sequence[float],
    alert: Alert,
    alerts: Sequence[Alert],
    *,
    min_effect: float,
    higher_is_better: bool = False,
) -> Standing | None:
    """The runs from `alert`'s change to the newest run against the level before it (at most 10
    runs, since the change accepted before it in `alerts`): Student's t on their log means, with
    the series' between-run noise before the change. None unless the newest run and the mean of
    the runs since the change are both worse than the level before by more than `min_effect`
    (or when the values are not all positive, or the noise cannot be estimated)."""
    v = np.asarray(values, dtype=float)
    if v.size < 2 or not np.all(v > 0):
        return None
    before = np.log(v[level_start(alerts, alert.change_index, before=alert.index) : alert.change_index])
    after = np.log(v[alert.change_index :])
    noise = between_run_noise(v[: alert.change_index].tolist())
    if before.size < 2 or after.size < 1 or noise is None or noise[0] <= 0:
        return None
    sign = -1.0 if higher_is_better else 1.0
    worse = sign * (after.mean() - before.mean())
    newest_worse = sign * (after[-1] - before.mean())
    if worse <= math.log1p(min_effect) or newest_worse <= math.log1p(min_effect):
        return None
    sigma, df = noise
    se = sigma * math.sqrt(1.0 / after.size + 1.0 / before.size)
    t = worse / se
    return Standing(
        alert=alert,
        runs=int(after.size),
        effect=math.expm1(sign * worse),
        t=float(t),
        p_value=float(sps.t.sf(t, df)),
        se=float(se),
        df=float(df),
    )
