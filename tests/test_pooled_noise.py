"""The prior a young series' between-run noise is pooled with (benchmark.analysis.pooled_noise):
fitted to many series' spreads, it recovers the scaled inverse chi-square it was drawn from; it
keeps each series near its own spread where the series differ a lot; and it refuses too few."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from benchmark.analysis.pooled_noise import MAX_PRIOR_DF, NoisePrior, noise_prior, trigamma_inverse
from benchmark.analysis.robust import between_run_noise


def _spreads(rng, d0: float, s0: float, df: float, n: int) -> list[tuple[float, float]]:
    """n series' (spread, df): true variances from the prior (d0, s0²), each estimated with df."""
    true = d0 * s0**2 / rng.chisquare(d0, n)
    return [(math.sqrt(v), df) for v in true * rng.chisquare(df, n) / df]


@pytest.mark.parametrize(("d0", "s0", "df"), [(5.0, 0.01, 4.0), (20.0, 0.02, 4.0), (2.0, 0.01, 9.0)])
def test_the_prior_is_recovered_from_many_series(d0, s0, df):
    prior = noise_prior(_spreads(np.random.default_rng(1), d0, s0, df, 4000))
    assert prior is not None and prior.series == 4000
    assert prior.df == pytest.approx(d0, rel=0.2)
    assert prior.sigma == pytest.approx(s0, rel=0.05)


def test_alike_series_share_one_spread_and_unalike_ones_keep_their_own():
    rng = np.random.default_rng(2)
    alike = [(0.01 * math.sqrt(rng.chisquare(4) / 4), 4.0) for _ in range(200)]
    prior = noise_prior(alike)
    assert prior is not None and prior.df > 15 and prior.sigma == pytest.approx(0.01, rel=0.1)
    sigma, df = prior.moderate((0.03, 4.0))  # an unlucky estimate is pulled most of the way back
    assert sigma < 0.017 and df == prior.df + 4
    exact = noise_prior([(0.01, 4.0)] * 10)  # no more spread than sampling explains
    assert exact is not None and exact.df == MAX_PRIOR_DF
    # spreads from 0.3% to 16%, as the CPU suite's series on one machine
    unalike = [(s, 2.9) for s in np.geomspace(0.003, 0.16, 37)]
    prior = noise_prior(unalike)
    assert prior is not None and prior.df < 1.5
    sigma, _ = prior.moderate((0.16, 2.9))
    assert 0.12 < sigma <= 0.16  # the noisiest series stays noisy


def test_moderation_is_the_weighted_variance():
    prior = NoisePrior(sigma=0.02, df=6.0, series=10)
    sigma, df = prior.moderate((0.01, 2.0))
    assert df == 8.0 and sigma == pytest.approx(math.sqrt((6 * 0.02**2 + 2 * 0.01**2) / 8))


def test_too_few_series_or_no_spread_give_no_prior():
    assert noise_prior([(0.01, 4.0)] * 4) is None
    assert noise_prior([(0.0, 4.0)] * 10 + [None] * 3) is None  # instruction counts: no spread
    assert noise_prior([(0.01, 4.0), (0.02, 4.0), (0.015, 4.0), (0.012, 4.0), (0.03, 4.0)]) is not None


def test_trigamma_inverse_inverts_trigamma():
    for y in (0.05, 0.7, 3.0, 40.0):
        assert trigamma_inverse(float(special.polygamma(1, y))) == pytest.approx(y, rel=1e-6)


def test_the_between_run_spread_has_the_degrees_of_freedom_of_its_variance():
    """Successive differences share their values: the mean square successive difference of n
    values varies as a chi-square with 2(n-1)²/(3n-4) degrees of freedom, not n-1."""
    rng = np.random.default_rng(4)
    for n in (3, 5, 10):
        est = np.array([between_run_noise(np.exp(rng.normal(0, 0.01, n)))[0] ** 2 for _ in range(20000)])
        _, df = between_run_noise(np.exp(rng.normal(0, 0.01, n)))
        assert 2 * est.mean() ** 2 / est.var() == pytest.approx(df, rel=0.06)


def test_the_prior_never_claims_more_degrees_of_freedom_than_the_independent_changes_behind_it():
    """Series of one machine move between the same runs: 16 series of 5 runs hold 4 independent
    changes while each run's common shift is left in. The prior fitted to spreads that agree would
    claim 1000 degrees of freedom; capped, a series pooled with it is judged on at most 4 (and never
    on fewer than its own)."""
    from benchmark.analysis.pooled_noise import MAX_PRIOR_DF

    same = [(0.02, 3.0)] * 16
    free = noise_prior(same)
    capped = noise_prior(same, runs=5)
    assert free is not None and capped is not None
    assert free.df == MAX_PRIOR_DF and free.moderate((0.02, 3.0))[1] == MAX_PRIOR_DF + 3.0
    assert capped.max_df == 4.0 and capped.moderate((0.02, 3.0))[1] == 4.0
    assert capped.moderate((0.02, 6.0))[1] == 6.0  # a series' own degrees of freedom are its own
