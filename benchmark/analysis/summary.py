"""Summary statistics of one result's raw samples, and pyperf-style stability warnings.

Every worker process and suite run imports this module: it uses `scipy.special` (the binomial
and Student t quantiles, the functions `scipy.stats` calls) rather than `scipy.stats`, whose
import costs about half a second of CPU more per process.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median from order statistics.

    Uses the binomial(n, 1/2) quantiles of the ranks, so it holds for any continuous distribution.
    With fewer than 6 samples no interval reaches 95%; the full range is returned.
    """
    x = np.sort(np.asarray(samples, dtype=float))
    n = x.size
    if n == 0:
        return (math.nan, math.nan)
    if n < 6:
        return (float(x[0]), float(x[-1]))
    # [x_(j), x_(n-j+1)] (1-based) with j the smallest rank whose binomial cdf reaches alpha/2
    # covers the median with probability >= 1 - alpha.
    alpha = 1.0 - confidence
    j = max(_half_binomial_quantile(alpha / 2, n), 1)
    return (float(x[j - 1]), float(x[n - j]))


def _half_binomial_quantile(q: float, n: int) -> int:
    """The smallest k with P(Binomial(n, 1/2) <= k) >= q (scipy.stats.binom.ppf(q, n, 0.5))."""
    k = max(math.ceil(special.bdtrik(q, n, 0.5)) - 1, 0)
    while special.bdtr(k, n, 0.5) < q:
        k += 1
    while k > 0 and special.bdtr(k - 1, n, 0.5) >= q:
        k -= 1
    return int(k)


def process_level_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Confidence interval of a run's level from its per-process values (one value per worker
    process): Student's t interval on their logs, so it includes the spread between processes,
    which the rounds inside one process do not show. NaNs with fewer than 2 values."""
    x = np.log(np.asarray(values, dtype=float))
    n = x.size
    if n < 2:
        return (math.nan, math.nan)
    half = float(special.stdtrit(n - 1, 0.5 + confidence / 2)) * float(x.std(ddof=1)) / math.sqrt(n)
    mid = float(x.mean())
    return (math.exp(mid - half), math.exp(mid + half))


def bimodality_coefficient(samples: Sequence[float]) -> float:
    """Sarle's bimodality coefficient; above 5/9 (0.555) hints at two modes."""
    x = np.asarray(samples, dtype=float)
    n = x.size
    if n < 4 or np.ptp(x) == 0:
        return 0.0
    # the bias-corrected sample skewness and excess kurtosis (scipy.stats' skew and kurtosis with
    # bias=False, NaN where the variance is lost to rounding)
    d = x - x.mean()
    m2, m3, m4 = float(np.mean(d**2)), float(np.mean(d**3)), float(np.mean(d**4))
    if m2 <= (np.finfo(float).eps * float(x.mean())) ** 2:
        return math.nan
    g = math.sqrt((n - 1.0) * n) / (n - 2.0) * m3 / m2**1.5
    k = ((n * n - 1.0) * m4 / m2**2 - 3 * (n - 1) ** 2) / ((n - 2) * (n - 3))
    return float((g * g + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3))))


def summarize(samples: Sequence[float], confidence: float = 0.95) -> dict[str, float]:
    """min/max/mean/median/stddev/quartiles/IQR/CI of the median/CV of the samples."""
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        return {"rounds": 0}
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    lo, hi = median_ci(x, confidence)
    std = float(x.std(ddof=1)) if x.size > 1 else 0.0
    mean = float(x.mean())
    return {
        "rounds": int(x.size),
        "min": float(x.min()),
        "max": float(x.max()),
        "mean": mean,
        "median": float(med),
        "stddev": std,
        "q1": float(q1),
        "q3": float(q3),
        "iqr": float(q3 - q1),
        "ci_low": lo,
        "ci_high": hi,
        "confidence": confidence,
        "cv": std / mean if mean else math.nan,
        "mad": float(np.median(np.abs(x - med))),
    }


def stability_warnings(
    samples: Sequence[float],
    *,
    max_rel_iqr: float = 0.10,
    min_rounds: int = 10,
    bimodal_threshold: float = 0.555,
) -> list[str]:
    """Reasons to distrust a result, in the spirit of pyperf's `check` warnings. Whether the result's
    interval is too wide is not said here: the suite's table says it from the interval it shows
    (`benchmark.datamodel.result.imprecision`)."""
    x = np.asarray(samples, dtype=float)
    out: list[str] = []
    if x.size < min_rounds:
        out.append(f"only {x.size} rounds (< {min_rounds}): the spread is poorly known")
    if x.size == 0:
        return out
    s = summarize(x)
    med = s["median"]
    if med > 0:
        rel_iqr = s["iqr"] / med
        if rel_iqr > max_rel_iqr:
            out.append(f"unstable: IQR is {rel_iqr:.1%} of the median (> {max_rel_iqr:.0%})")
        if s["max"] > 0 and s["min"] / med < 0.5:
            out.append(f"outlier: the fastest round is {s['min'] / med:.0%} of the median")
    if (
        x.size >= 20
        and bimodality_coefficient(x) > bimodal_threshold
        and (s["iqr"] / med if med else 0) > 0.02
    ):
        out.append("bimodal: samples look like two populations (check allocator, frequency or thread state)")
    return out


# Warnings that describe a result's samples without making its value unreliable or a setting wrong:
# the suite counts them in one line at the end (each case's list, `-v` and the record keep them all).
# By the prefix a warning starts with (before its first ":"), what a case with it does, in words.
DIAGNOSTICS = {
    "bimodal": "look bimodal (two populations of rounds)",
    "outlier": "have an outlying fastest round",
    "processes disagree": "have worker processes that disagree",
}


def diagnostic_kind(warning: str) -> str | None:
    """The kind of a diagnostic warning (a key of DIAGNOSTICS), or None for a warning that earns its
    line: the value is unreliable (unstable, imprecise, too few rounds) or a setting is wrong."""
    kind = warning.split(":", 1)[0]
    return kind if kind in DIAGNOSTICS else None
