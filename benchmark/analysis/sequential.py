"""Sequential A/B of two environments measured in one job (`benchmark compare`): pure statistics.

The unit is a *pair*: one worker process of side A and one of side B, run back to back (in random
order) in the same step of the job, each measuring the case once. A pair's evidence is
d = log(value_B) - log(value_A), where a value is the median of that process's rounds. Pairing
cancels what the machine does slowly (load from neighbours, clocks, thermal state): both sides of
a pair see the same stretch of time.

After each step the B/A ratio gets an interval: where the paired t interval on the d's and the
Wilcoxon signed-rank interval overlap, each at half the look's error, and the estimate is the
Hodges-Lehmann one, exp(median of the Walsh averages) (`decide`). Verdicts (the judge's,
`benchmark.datamodel.verdict.Verdict`; the views word them slower, faster, same), with
delta = log(1 + min_effect):

* regression: the interval lies above 0 and the estimate exceeds +delta (B is slower, beyond min_effect);
* improvement: the interval lies below 0 and the estimate is below -delta;
* pass: the interval lies inside (-delta, +delta) (an equivalence test at the same level);
* inconclusive: none of these yet (more pairs would tell; `pairs_needed` estimates how many).

False verdicts are controlled across cases and looks by a union bound: a job's error budget
`alpha` is split evenly over its cases (Bonferroni) and, per case, over its looks with the
convergent spending sequence alpha_k = alpha_case / (k (k + 1)) (the sum over all k is
alpha_case), so looking after every step never spends more than alpha in all. Looks happen
only on a geometric schedule of pair counts (`look_points`), so a long job does not
spread its budget over many nearly identical looks.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

from benchmark.datamodel.verdict import Verdict

MIN_PAIRS = 3  # fewer pairs: no interval (a t interval with 1 degree of freedom is useless)
LOOK_GROWTH = 1.5  # looks at pair counts growing by this factor: 3, 5, 8, 12, 18, 27, 41, 62, 93, ...


@dataclass(frozen=True)
class SequentialOutcome:
    """The sequential A/B of one case after some pairs.

    `ratio`: B/A (exp of the Hodges-Lehmann estimate of the log differences, or of their mean with
    `robust=False`; >1: B slower); `ci_low`, `ci_high`: its interval at
    `confidence` (the level this look spends); `pairs`: the pairs used; `look`: which look this is
    (1-based; 0 before the first); `spread`: standard deviation of the log differences;
    `pairs_needed`: for an inconclusive case, about how many pairs in all would decide it at the
    observed spread (None when it cannot be estimated)."""

    verdict: Verdict  # regression (B slower), improvement, pass (the same), inconclusive
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
        return self.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.PASS)


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


def look_at(pairs: int, *, final: bool = False) -> int | None:
    """The look a case with `pairs` pairs gets now: its number on the schedule where `pairs` is a
    look point; where it is not, one look more when `final` (the end of the job), else None (no
    look). None below MIN_PAIRS."""
    if pairs < MIN_PAIRS:
        return None
    look = look_number(pairs)
    if pairs == look_points(pairs)[look - 1]:
        return look
    return look + 1 if final else None


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


# Pairs up to which the signed-rank interval uses the exact null distribution (normal beyond).
EXACT_SIGNED_RANK = 200


@functools.lru_cache(maxsize=64)
def _signed_rank_cdf(n: int) -> np.ndarray:
    """P(T+ <= t), t = 0 .. n(n+1)/2, of the Wilcoxon signed-rank statistic of n untied values
    under symmetry about 0 (each rank's sign a fair coin)."""
    p = np.zeros(n * (n + 1) // 2 + 1)
    p[0] = 1.0
    for rank in range(1, n + 1):
        p[rank:] = 0.5 * (p[rank:] + p[:-rank])
        p[:rank] *= 0.5
    return np.cumsum(p)


def signed_rank_interval(d: Sequence[float] | np.ndarray, alpha: float) -> tuple[float, float, float]:
    """(estimate, low, high) of the centre of symmetry of `d`: the Hodges-Lehmann estimate (the
    median of the Walsh averages (d_i + d_j)/2, i <= j) and the 1 - alpha interval that inverts the
    two-sided Wilcoxon signed-rank test (Hollander, Wolfe and Chicken, Nonparametric Statistical
    Methods, 3rd ed., 3.2): between the k-th smallest and the k-th largest Walsh average, k the
    largest with P(T+ <= k - 1) <= alpha/2; exact up to EXACT_SIGNED_RANK values, normal beyond.
    Infinite bounds where n is too small for alpha (2^-n > alpha/2)."""
    x = np.asarray(d, dtype=float)
    n = int(x.size)
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2.0)
    m = walsh.size
    estimate = float(np.median(walsh))
    if n <= EXACT_SIGNED_RANK:
        k = int(np.searchsorted(_signed_rank_cdf(n), alpha / 2.0, side="right"))
    else:
        sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        k = max(0, math.floor(m / 2.0 - float(st.norm.ppf(1 - alpha / 2.0)) * sd))
    if k < 1:
        return estimate, -math.inf, math.inf
    return estimate, float(walsh[k - 1]), float(walsh[m - k])


def decide(
    a: Sequence[float],
    b: Sequence[float],
    *,
    min_effect: float,
    alpha: float,
    cases: int = 1,
    look: int | None = None,
    robust: bool = True,
) -> SequentialOutcome:
    """The verdict for pairs of process values `a[i]`, `b[i]` (seconds per iteration; lower is
    better) at look `look` (default: the look of this many pairs on the schedule) of a job of
    `cases` cases with error budget `alpha`. Fewer than MIN_PAIRS pairs: inconclusive, no interval.

    `robust` (the default): the interval is where the paired t interval and the signed-rank
    interval (`signed_rank_interval`), each at half the look's alpha, overlap, and the estimate is
    the Hodges-Lehmann one. Both cover the same centre (under A/A the log differences are symmetric
    about 0, the two sides being exchangeable; a slowdown shifts them), so by the union bound the
    overlap covers it at the look's level. The t interval decides small samples of a quiet case;
    the signed-rank one keeps an outlying pair (a process that ran on a busy machine) from widening
    the interval as it widens the t interval. False: the t interval alone, at the look's alpha."""
    if min_effect < 0:
        raise ValueError(f"min_effect must be >= 0, not {min_effect}")
    d = pair_differences(a, b)
    n = int(d.size)
    delta = math.log1p(min_effect)
    if n < MIN_PAIRS:
        ratio = float(math.exp(d.mean())) if n else math.nan
        return SequentialOutcome(
            Verdict.INCONCLUSIVE, ratio, math.nan, math.nan, math.nan, n, 0, math.nan, min_effect
        )
    k = look if look is not None else max(1, look_number(n))
    a_k = look_alpha(alpha, cases, k)
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    a_t = a_k / 2 if robust else a_k
    half = float(st.t.ppf(1 - a_t / 2, n - 1)) * sd / math.sqrt(n)
    lo, hi, estimate = mean - half, mean + half, mean
    if robust:
        estimate, lo_w, hi_w = signed_rank_interval(d, a_k / 2)
        lo, hi = max(lo, lo_w), min(hi, hi_w)
        estimate = min(max(estimate, lo), hi) if lo <= hi else estimate
    if lo > hi:  # the two intervals do not overlap: a sample neither describes well
        verdict = Verdict.INCONCLUSIVE
    elif lo > 0 and estimate > delta:
        verdict = Verdict.REGRESSION
    elif hi < 0 and estimate < -delta:
        verdict = Verdict.IMPROVEMENT
    elif -delta < lo and hi < delta:
        verdict = Verdict.PASS
    else:
        verdict = Verdict.INCONCLUSIVE
    needed = None if verdict != Verdict.INCONCLUSIVE else pairs_needed(estimate, sd, delta, a_k)
    return SequentialOutcome(
        verdict, math.exp(estimate), math.exp(lo), math.exp(hi), 1 - a_k, n, k, sd, min_effect, needed
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
    if Verdict.REGRESSION in verdicts:
        return 1
    if Verdict.ERROR in verdicts:
        return 2
    return 0
