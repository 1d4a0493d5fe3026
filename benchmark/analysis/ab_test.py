"""A/B comparison of two runs of one case: the per-process values of a baseline and of a candidate.

How two runs of one case are compared (:func:`compare_processes`). The test the gate used before
worker processes, on raw samples (a bootstrap of the ratio of medians and the minimum of the
Mann-Whitney and KS p-values, as Chromium's Pinpoint), lives in ``eval/raw_samples.py`` with the
experiment that showed why it was dropped.

Verdicts
--------
The interval is read against a region of practical equivalence ``[1/(1+d), 1+d]`` with
``d = min_effect`` (equivalence testing, as in Kruschke's ROPE or a TOST): the candidate is
a *regression* (slower) when it is significant and the whole interval lies on the worse side beyond
the minimum effect, an *improvement* (faster) likewise on the better side, *pass* (the same) when
the whole interval lies inside the region (a real but negligible difference passes), and
*inconclusive* when the interval
straddles a boundary. For an inconclusive result, the number of extra processes per side is the
one that would shrink the half-width facing the straddled boundary to the distance between the
point estimate and that boundary: an estimate, assuming the point estimate stays where it is.

The verdicts are the judge's (`benchmark.datamodel.verdict.Verdict`); a regression always means worse: for a
higher-is-better metric (throughput) a lower candidate is a regression.

Processes as the unit (:func:`compare_processes`)
-------------------------------------------------
Rounds inside one process are not independent: a case's level moves 5-25% between processes
(allocator and cache state, what ran before, clocks), so two runs of the same code differ
"significantly" by their raw rounds almost every time. Every comparison of two runs therefore uses
:func:`compare_processes`: one value per worker process (the median of its rounds), compared as
logarithms with Welch's t-test (the effect is the ratio of geometric means; the p-value is
one-sided, in the direction of the estimate; the interval is Welch's at confidence ``1 - 2 alpha``,
so it excludes no change exactly when the test is significant at ``alpha``). When a
side has fewer than 2 process values (older histories, ``--bench-processes 0/1``) the run itself
cannot estimate its variance: the two run values are compared against the between-run noise of
the series' history (``noise``, a standard deviation of log run values, with ``noise_df`` degrees
of freedom), or the verdict is *inconclusive*, saying why. Two or three processes a side estimate
their spread poorly (1-4 degrees of freedom); the spread between processes of the series' earlier
runs, pooled (``spread``), adds its degrees of freedom, never lowering a side's own variance. The verdict rules are those above:
significant and beyond the minimum effect for slower/faster, the whole interval inside the region
for same, and a significant but negligible difference is same too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from benchmark.datamodel.verdict import Verdict
from benchmark.units import format_percent


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`compare_processes`."""

    verdict: Verdict  # regression (B worse), improvement, pass (the same) or inconclusive
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    n_baseline: int
    n_candidate: int
    more_samples_needed: int | None
    reason: str
    min_effect: float
    confidence: float
    higher_is_better: bool = False
    method: str = "samples"
    """samples (raw samples, eval/raw_samples.py), processes (Welch on per-process values),
    history_noise (run values against the history's between-run noise) or none (nothing tested)."""


def _clean(samples: Sequence[float], name: str) -> np.ndarray:
    x = np.asarray(samples, dtype=float).ravel()
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} samples must be finite numbers")
    return x


def _side_variance(x: np.ndarray, spread: tuple[float, float] | None) -> tuple[float, float]:
    """(variance, degrees of freedom) of one side's log process values: its own sample variance,
    or, with the history's pooled spread, the pooled estimate (own and history together) but never
    below its own (so a run noisier than its history is judged by its own spread)."""
    own, df = float(np.var(x, ddof=1)), float(x.size - 1)
    if spread is None or not (spread[1] > 0 and math.isfinite(spread[0])):
        return own, df
    pooled = (own * df + spread[0] * spread[1]) / (df + spread[1])
    return max(own, pooled), df + spread[1]


def _welch(
    lb: np.ndarray, lc: np.ndarray, spread: tuple[float, float] | None = None
) -> tuple[float, float, float]:
    """(difference of means, its standard error, Welch-Satterthwaite degrees of freedom)."""
    (sb, db), (sc, dc) = _side_variance(lb, spread), _side_variance(lc, spread)
    vb, vc = sb / lb.size, sc / lc.size
    se = math.sqrt(vb + vc)
    denom = (vb**2 / db if vb else 0.0) + (vc**2 / dc if vc else 0.0)
    df = (vb + vc) ** 2 / denom if denom > 0 else float(lb.size + lc.size - 2)
    return float(np.mean(lc) - np.mean(lb)), se, df


MAX_MORE = 10  # more processes per side than this many times those measured is not advice


def compare_processes(
    baseline_values: Sequence[float],
    candidate_values: Sequence[float],
    *,
    min_effect: float = 0.03,
    higher_is_better: bool = False,
    alpha: float = 0.01,
    noise: float | None = None,
    noise_df: float | None = None,
    spread: tuple[float, float] | None = None,
) -> Comparison:
    """Compare two runs of one case with worker processes as the unit (see the module docstring).

    ``baseline_values`` / ``candidate_values``: one positive value per ok process of each run
    (seconds per iteration, or items per second with ``higher_is_better``); a run measured in one
    process gives its one run value. ``noise``: the between-run standard deviation of the series'
    log run values (from its history), used only when a side has fewer than 2 values; ``noise_df``
    its degrees of freedom. ``spread``: (variance, degrees of freedom) of log process values within
    a run, pooled over the series' earlier runs (:func:`benchmark.analysis.robust.pooled_process_spread`):
    it adds degrees of freedom to each side's variance, never lowering it below the side's own.
    ``ratio`` is candidate / baseline.
    """
    if min_effect < 0:
        raise ValueError("min_effect must be >= 0")
    if not 0 < alpha < 0.5:
        raise ValueError("alpha must be in (0, 0.5)")
    b = _clean(baseline_values, "baseline")
    c = _clean(candidate_values, "candidate")
    if np.any(b <= 0) or np.any(c <= 0):
        raise ValueError("process values must be positive to compare as a ratio")
    nb, nc = int(b.size), int(c.size)
    confidence = 1.0 - 2.0 * alpha  # two-sided interval matching the one-sided test at alpha
    common = dict(
        n_baseline=nb, n_candidate=nc, min_effect=min_effect, confidence=confidence,
        higher_is_better=higher_is_better,
    )  # fmt: skip
    unit = "processes"
    if nb >= 2 and nc >= 2:
        est, se, df = _welch(np.log(b), np.log(c), spread)
        method = "processes"
        basis = f"Welch t on log values of {nb} vs {nc} processes"
        if spread is not None:
            basis += f", spread pooled with {spread[1]:.0f} df of the history"
    elif nb and nc and noise is not None and math.isfinite(noise) and noise > 0:
        est = math.log(float(np.median(c))) - math.log(float(np.median(b)))
        se, df = math.sqrt(2.0) * noise, float(noise_df or 1.0)
        method, unit = "history_noise", "runs"
        basis = f"run values against the history's between-run noise ({noise:.1%}, {df:.1f} df)"
    else:
        ratio = float(np.median(c) / np.median(b)) if nb and nc else math.nan
        few = "baseline" if nb < 2 else "candidate"
        return Comparison(
            verdict=Verdict.INCONCLUSIVE, ratio=ratio, ci_low=math.nan, ci_high=math.nan, p_value=math.nan,
            more_samples_needed=max(2 - nb, 2 - nc, 0) or None,
            reason=f"inconclusive: the {few} has {min(nb, nc)} process value(s) and the series has no history "
            "to estimate the between-run noise from: no honest variance estimate (measure with "
            "--bench-processes 2 or more, or record more runs)",
            method="none", **common,
        )  # fmt: skip
    ratio = math.exp(est)
    if se == 0:  # identical values on both sides (or exactly repeated): no spread to test against
        p = 1.0 if est == 0 else 0.0
        lo = hi = ratio
    else:
        t = est / se
        p = float(sps.t.sf(abs(t), df))  # one-sided, in the direction of the estimate
        half = float(sps.t.isf(alpha, df)) * se
        lo, hi = math.exp(est - half), math.exp(est + half)
    sign = -1.0 if higher_is_better else 1.0
    bad = sign * est
    bad_lo, bad_hi = sorted((sign * math.log(lo), sign * math.log(hi)))
    d = math.log1p(min_effect)
    change, low, high = (format_percent(x - 1) for x in (ratio, lo, hi))
    effect = f"{change} ({confidence:.0%} CI {low}..{high}), p={p:.2g} one-sided; {basis}"
    bound = f"{min_effect:.1%} minimum effect"
    more: int | None = None
    if bad > d and p <= alpha:
        verdict, reason = Verdict.REGRESSION, f"worse: {effect}; significant and beyond the {bound}"
    elif bad < -d and p <= alpha:
        verdict, reason = Verdict.IMPROVEMENT, f"better: {effect}; significant and beyond the {bound}"
    elif -d <= bad_lo and bad_hi <= d:
        verdict, reason = Verdict.PASS, f"same: {effect}; the whole interval is within the {bound}"
    elif p <= alpha:
        verdict, reason = Verdict.PASS, f"same: {effect}; a real difference, but within the {bound}"
    else:
        verdict = Verdict.INCONCLUSIVE
        half = (bad_hi - bad_lo) / 2
        dist = abs(abs(bad) - d)
        if method == "processes" and dist > 1e-9 and half > 0:
            n = max(nb, nc)
            more = max(1, math.ceil(n * (half / dist) ** 2) - n)
            settle = f"about {more} more {unit} per side would settle it"
            if more > MAX_MORE * n:  # advice nobody would follow: say why instead
                more = None
                settle = f"the effect is far below this machine's noise: more {unit} would not settle it"
        else:
            settle = (
                "more runs would settle it"
                if method == "history_noise"
                else "the estimate sits on the boundary"
            )
        reason = f"inconclusive: {effect}; not significant at {alpha:g}, the interval straddles the {bound}; {settle}"
    return Comparison(
        verdict=verdict, ratio=ratio, ci_low=lo, ci_high=hi, p_value=p, more_samples_needed=more,
        reason=reason, method=method, **common,
    )  # fmt: skip
