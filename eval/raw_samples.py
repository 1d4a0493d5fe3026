"""The A/B test of raw samples that the gate used before worker processes (and no longer does).

Kept for `eval/gate_false_failures.py`, which shows why it was dropped: rounds inside one process are
not independent, so two runs of unchanged code differ "significantly" almost every time (see
`benchmark.analysis.ab_test`'s docstring for the method, and `compare_processes` for what replaced
it). Effect: the ratio of medians; interval: a percentile bootstrap; significance: the Bonferroni-
corrected minimum of the Mann-Whitney and Kolmogorov-Smirnov p-values (as Chromium's Pinpoint).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps

from benchmark.analysis.ab_test import Comparison, _clean
from benchmark.datamodel.verdict import Verdict
from benchmark.units import format_percent


def bootstrap_ratio_of_medians(
    baseline: np.ndarray,
    candidate: np.ndarray,
    *,
    n_boot: int = 2000,
    confidence: float = 0.99,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of median(candidate) / median(baseline).

    Resamples are drawn as one index matrix per side and reduced with ``np.median(axis=1)``; large
    samples are processed in row blocks so memory stays bounded (about 8 MB per block).
    """
    rng = np.random.default_rng(seed)
    nb, nc = baseline.size, candidate.size
    rows = max(1, min(n_boot, 1_000_000 // max(nb, nc, 1)))
    meds_b = np.empty(n_boot)
    meds_c = np.empty(n_boot)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        meds_b[start:stop] = np.median(baseline[rng.integers(0, nb, size=(stop - start, nb))], axis=1)
        meds_c[start:stop] = np.median(candidate[rng.integers(0, nc, size=(stop - start, nc))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = meds_c / meds_b
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return (math.nan, math.nan)
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(ratios, [tail, 1.0 - tail])
    return (float(lo), float(hi))


def _p_value(baseline: np.ndarray, candidate: np.ndarray) -> float:
    if np.ptp(np.concatenate([baseline, candidate])) == 0:
        return 1.0
    p_mw = sps.mannwhitneyu(baseline, candidate, alternative="two-sided").pvalue
    p_ks = sps.ks_2samp(baseline, candidate).pvalue
    return float(min(1.0, 2.0 * min(p_mw, p_ks)))


def compare(
    baseline_samples: Sequence[float],
    candidate_samples: Sequence[float],
    *,
    min_effect: float = 0.03,
    higher_is_better: bool = False,
    alpha: float = 0.01,
    n_boot: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare a candidate's raw samples with a baseline's (see the module docstring).

    ``min_effect`` is relative (0.03 = 3%), ``alpha`` is both the significance level and one minus
    the confidence of the bootstrap interval.
    """
    if min_effect < 0:
        raise ValueError("min_effect must be >= 0")
    if not 0 < alpha < 1:
        raise ValueError("alpha must be in (0, 1)")
    b = _clean(baseline_samples, "baseline")
    c = _clean(candidate_samples, "candidate")
    nb, nc = int(b.size), int(c.size)
    confidence = 1.0 - alpha
    common = dict(
        n_baseline=nb,
        n_candidate=nc,
        min_effect=min_effect,
        confidence=confidence,
        higher_is_better=higher_is_better,
    )
    if nb < 2 or nc < 2:
        ratio = float(np.median(c) / np.median(b)) if nb and nc and np.median(b) != 0 else math.nan
        return Comparison(
            verdict=Verdict.INCONCLUSIVE,
            ratio=ratio,
            ci_low=math.nan,
            ci_high=math.nan,
            p_value=math.nan,
            more_samples_needed=max(2 - nb, 2 - nc),
            reason=f"need at least 2 samples per side (baseline {nb}, candidate {nc})",
            **common,
        )
    med_b, med_c = float(np.median(b)), float(np.median(c))
    if med_b <= 0 or med_c <= 0:
        return Comparison(
            verdict=Verdict.INCONCLUSIVE,
            ratio=med_c / med_b if med_b != 0 else math.nan,
            ci_low=math.nan,
            ci_high=math.nan,
            p_value=_p_value(b, c),
            more_samples_needed=None,
            reason="medians must be positive to compare as a ratio",
            **common,
        )
    ratio = med_c / med_b
    lo, hi = bootstrap_ratio_of_medians(b, c, n_boot=n_boot, confidence=confidence, seed=seed)
    p = _p_value(b, c)

    # Work in "badness" = log ratio oriented so that positive means worse.
    sign = -1.0 if higher_is_better else 1.0
    est = sign * math.log(ratio)
    ends = sorted((sign * math.log(lo), sign * math.log(hi)))
    bad_lo, bad_hi = ends
    d = math.log1p(min_effect)
    interval = f"{confidence:.0%} CI {format_percent(lo - 1)}..{format_percent(hi - 1)}"
    effect = f"median {format_percent(ratio - 1)} ({interval}), p={p:.2g}"
    bound = f"{min_effect:.1%} minimum effect"

    more: int | None = None
    if bad_lo > d and p <= alpha:
        verdict, reason = Verdict.REGRESSION, f"worse: {effect}; the whole interval is beyond the {bound}"
    elif bad_hi < -d and p <= alpha:
        verdict, reason = Verdict.IMPROVEMENT, f"better: {effect}; the whole interval is beyond the {bound}"
    elif -d <= bad_lo and bad_hi <= d:
        verdict = Verdict.PASS
        reason = f"same: {effect}; the whole interval is within the {bound}"
    else:
        verdict = Verdict.INCONCLUSIVE
        # Which region would the point estimate settle in, and which half-widths must shrink?
        needs: list[tuple[float, float]] = []  # (half-width, distance to the boundary)
        if est > d:
            needs.append((est - bad_lo, est - d))
        elif est < -d:
            needs.append((bad_hi - est, -d - est))
        else:
            if bad_hi > d:
                needs.append((bad_hi - est, d - est))
            if bad_lo < -d:
                needs.append((est - bad_lo, est + d))
        if not needs:
            # The interval is clear of the boundaries but the rank tests are not significant.
            more = max(nb, nc)
            reason = (
                f"inconclusive: {effect}; the interval clears the {bound} but p > {alpha:g}; "
                f"about {more} more samples per side may settle it"
            )
        else:
            factors = [(h / dist) ** 2 for h, dist in needs if dist > 1e-9]
            if len(factors) == len(needs):
                f = max(factors + [1.0])
                more = max(1, max(math.ceil(n * f) - n for n in (nb, nc)))
                settle = f"about {more} more samples per side would settle it"
            else:
                settle = "the estimate sits on the minimum effect, so more samples will not settle it"
            reason = f"inconclusive: {effect}; the interval straddles the {bound}; {settle}"
    return Comparison(
        verdict=verdict,
        ratio=ratio,
        ci_low=lo,
        ci_high=hi,
        p_value=p,
        more_samples_needed=more,
        reason=reason,
        **common,
    )
