"""A young series' between-run noise, pooled with the noise of the other series of its machine.

A series with 5 runs has a between-run spread with 2.9 degrees of freedom (`robust.between_run_noise`):
a t test on it needs a step of about 18 spreads before Benjamini-Hochberg over a run's 37 cases
lets it through. The series of
one machine share most of what makes their runs differ (its drift from run to run), so their
spreads say what a series' spread is likely to be. This is the empirical-Bayes moderation of
limma (Smyth 2004, "Linear models and empirical Bayes methods for assessing differential
expression", SAGMB 3:3): each series' variance s² with d degrees of freedom is taken as drawn from
a scaled inverse chi-square prior with d0 degrees of freedom around s0², whose two parameters are
fitted to all series' variances by the moments of their logs (limma's `fitFDist`); a series is
then judged on (d0·s0² + d·s²)/(d0 + d) with d0 + d degrees of freedom. Where the series differ a
lot, d0 comes out small and each keeps close to its own spread; a quiet series is pulled up
towards the others as much as a noisy one is pulled down. Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import special

# Fewer series than this give no prior (their spread of spreads is itself too uncertain).
MIN_SERIES = 5
# d0 where the series' variances spread no more than sampling explains (limma's infinite d0).
MAX_PRIOR_DF = 1000.0


@dataclass(frozen=True)
class NoisePrior:
    """The prior of a machine's between-run noise: s0 (a relative spread, on the log scale) with
    d0 degrees of freedom, fitted to `series` series."""

    sigma: float
    df: float
    series: int
    # The independent run-to-run changes behind the prior: the series of one machine move between
    # the same runs, together, so k runs give k - 1 changes however many series share them. No
    # pooled estimate claims more degrees of freedom than that (None: not capped).
    max_df: float | None = None

    def moderate(self, noise: tuple[float, float]) -> tuple[float, float]:
        """(spread, degrees of freedom) of one series' (spread, degrees of freedom) pooled with
        the prior; the degrees of freedom at most `max_df` (and never below the series' own)."""
        sigma, df = noise
        d0 = self.df
        pooled = d0 + df if self.max_df is None else max(df, min(d0 + df, self.max_df))
        return math.sqrt((d0 * self.sigma**2 + df * sigma**2) / (d0 + df)), pooled


def trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x, x > 0 (limma's Newton iteration, from 0.5 + 1/x)."""
    if x > 1e7:
        return 1.0 / math.sqrt(x)
    if x < 1e-6:
        return 1.0 / x
    y = 0.5 + 1.0 / x
    for _ in range(50):
        tri = float(special.polygamma(1, y))
        step = tri * (1.0 - tri / x) / float(special.polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def noise_prior(noises: Iterable[tuple[float, float] | None], runs: int | None = None) -> NoisePrior | None:
    """The prior fitted to series' (spread, degrees of freedom), e.g. `between_run_noise` of each
    series of a run; None with fewer than MIN_SERIES positive spreads (a deterministic metric has
    none). `runs`: how many distinct runs the spreads come from (their pooled degrees of freedom
    are capped at runs - 1)."""
    kept = [(s, d) for s, d in (n for n in noises if n is not None) if s > 0 and d > 0 and math.isfinite(s)]
    if len(kept) < MIN_SERIES:
        return None
    cap = None if runs is None else float(max(runs - 1, 1))
    s2 = np.array([s * s for s, _ in kept])
    half = np.array([d / 2.0 for _, d in kept])
    e = np.log(s2) - special.digamma(half) + np.log(half)
    mean = float(np.mean(e))
    excess = float(np.var(e, ddof=1) - np.mean(special.polygamma(1, half)))
    if excess <= 0:
        return NoisePrior(sigma=math.sqrt(math.exp(mean)), df=MAX_PRIOR_DF, series=len(kept), max_df=cap)
    d0 = min(2.0 * trigamma_inverse(excess), MAX_PRIOR_DF)
    s0 = math.sqrt(math.exp(mean + float(special.digamma(d0 / 2.0)) - math.log(d0 / 2.0)))
    return NoisePrior(sigma=s0, df=d0, series=len(kept), max_df=cap)
