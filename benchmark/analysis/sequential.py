"""Sequential A/B of two environments measured in one job (`benchmark compare`): pure statistics.

The unit is a *pair*: one worker process of side A and one of side B, run back to back (in random
order) in the same step of the job, each measuring the case once. A pair's evidence is
d = log(value_B) - log(value_A), where a value is the median of that process's rounds. Pairing
cancels what the machine does slowly (load from neighbours, clocks, thermal state): both sides of
a pair see the same stretch of time.

After each step the B/A ratio exp(mean d) gets a paired t interval on the d's. Verdicts, with
delta = log(1 + min_effect):

* slower: the interval lies above 0 and the estimate exceeds +delta (B is slower, beyond min_effect);
* faster: the interval lies below 0 and the estimate is below -delta;
* same: the interval lies inside (-delta, +delta) (an equivalence test at the same level);
* inconclusive: none of these yet (more pairs would tell; `pairs_needed` estimates how many).

False verdicts are controlled across cases and looks by a union bound: a job's error budget
`alpha` is split evenly over its cases (Bonferroni) and, per case, over its looks with the
convergent spending sequence alpha_k = alpha_case / (k (k + 1)) (the sum over all k is
alpha_case), so looking after every step never spends more than alpha in all. Looks happen
only on a geometric schedule of pair counts (`look_points`), so a long job does not
spread its budget over many nearly identical looks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

SLOWER, FASTER, SAME, INCONCLUSIVE, ERROR = "slower", "faster", "same", "inconclusive", "error"
VERDICTS = (SLOWER, FASTER, SAME, INCONCLUSIVE, ERROR)
MIN_PAIRS = 3  # fewer pairs: no interval (a t interval with 1 degree of freedom is useless)
LOOK_GROWTH = 1.5  # looks at pair counts growing by this factor: 3, 5, 8, 12, 18, 27, 41, 62, 93, ...


@dataclass(frozen=True)
class SequentialOutcome:
    """The sequential A/B of one case after some pairs.

    `ratio`: B/A (exp of the mean log difference; >1: B slower); `ci_low`, `ci_high`: its interval at
    `confidence` (the level this look spends); `pairs`: the pairs used; `look`: which look this is
    (1-based; 0 before the first); `spread`: standard deviation of the log differences;
    `pairs_needed`: for an inconclusive case, about how many pairs in all would decide it at the
    observed spread (None when it cannot be estimated)."""

    verdict: str
    ratio: float
    ci_low: float
    ci_high: float
    confidence: float
    pairs: int
    look: int
    spread: float
    min_effect: float
    pairs_needed: int | None = None

    @property
    def decided(self) -> bool:
        return self.verdict in (SLOWER, FASTER, SAME)


def look_points(limit: int = 10_000, first: int = MIN_PAIRS, growth: float = LOOK_GROWTH) -> list[int]:
    """The pair counts at which a case is looked at: `first`, then each at least `growth` times the
    previous (and at least one more), up to `limit`."""
    if first < 2:
        raise ValueError(f"the first look needs at least 2 pairs, not {first}")
    points = [first]
    while points[-1] < limit:
        points.append(max(points[-1] + 1, math.ceil(points[-1] * growth)))
    return points


def look_number(pairs: int, first: int = MIN_PAIRS, growth: float = LOOK_GROWTH) -> int:
    """How many looks a case with `pairs` pairs has had (0 before the first look point)."""
    return sum(1 for p in look_points(max(pairs, first), first, growth) if p <= pairs)


def look_alpha(alpha: float, cases: int, look: int) -> float:
    """The two-sided error this look may spend: alpha / cases / (look (look + 1))."""
    if not (0 < alpha < 1):
        raise ValueError(f"alpha must be in (0, 1), not {alpha}")
    if cases < 1 or look < 1:
        raise ValueError(f"need cases >= 1 and look >= 1, got {cases}, {look}")
    return alpha / cases / (look * (look + 1))


def pair_differences(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """log(b_i) - log(a_i) of the pairs (process values in seconds; positive and finite)."""
    a_, b_ = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_.shape != b_.shape:
        raise ValueError(f"{a_.size} A values but {b_.size} B values: pairs need one of each")
    if a_.size and not (
        np.all(np.isfinite(a_)) and np.all(np.isfinite(b_)) and a_.min() > 0 and b_.min() > 0
    ):
        raise ValueError("process values must be finite and positive")
    return np.log(b_) - np.log(a_)


def decide(
    a: Sequence[float],
    b: Sequence[float],
    *,
    min_effect: float,
    alpha: float,
    cases: int = 1,
    look: int | None = None,
) -> SequentialOutcome:
    """The verdict for pairs of process values `a[i]`, `b[i]` (seconds per iteration; lower is
    better) at look `look` (default: the look of this many pairs on the schedule) of a job of
    `cases` cases with error budget `alpha`. Fewer than MIN_PAIRS pairs: inconclusive, no interval."""
    if min_effect < 0:
        raise ValueError(f"min_effect must be >= 0, not {min_effect}")
    d = pair_differences(a, b)
    n = int(d.size)
    delta = math.log1p(min_effect)
    if n < MIN_PAIRS:
        ratio = float(math.exp(d.mean())) if n else math.nan
        return SequentialOutcome(
            INCONCLUSIVE, ratio, math.nan, math.nan, math.nan, n, 0, math.nan, min_effect
        )
    k = look if look is not None else max(1, look_number(n))
    a_k = look_alpha(alpha, cases, k)
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    q = float(st.t.ppf(1 - a_k / 2, n - 1))
    half = q * sd / math.sqrt(n)
    lo, hi = mean - half, mean + half
    if lo > 0 and mean > delta:
        verdict = SLOWER
    elif hi < 0 and mean < -delta:
        verdict = FASTER
    elif -delta < lo and hi < delta:
        verdict = SAME
    else:
        verdict = INCONCLUSIVE
    needed = None if verdict != INCONCLUSIVE else pairs_needed(mean, sd, delta, a_k)
    return SequentialOutcome(
        verdict, math.exp(mean), math.exp(lo), math.exp(hi), 1 - a_k, n, k, sd, min_effect, needed
    )


def pairs_needed(mean: float, sd: float, delta: float, alpha_look: float, limit: int = 100_000) -> int | None:
    """About how many pairs would decide a case whose log differences have this mean and spread:
    the n at which the interval's half width (normal quantile at `alpha_look`) fits between the
    estimate and the nearest decision boundary (0 for slower/faster beyond delta; delta for same).
    None when the estimate sits on a boundary or the spread is unknown; capped at `limit`."""
    if not (math.isfinite(mean) and math.isfinite(sd)) or sd <= 0:
        return None
    room = abs(mean) if abs(mean) > delta else delta - abs(mean)
    if room <= 1e-12:
        return None
    z = float(st.norm.ppf(1 - alpha_look / 2))
    return int(min(limit, max(MIN_PAIRS, math.ceil((z * sd / room) ** 2))))


def exit_code(verdicts: Sequence[str]) -> int:
    """As `benchmark gate`: 1 when a case is slower; else 2 when a case could not be measured
    (error); else 0 (faster, same and inconclusive pass)."""
    if SLOWER in verdicts:
        return 1
    if ERROR in verdicts:
        return 2
    return 0
