"""False discovery rate control across cases (benchmark.analysis.fdr)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from benchmark.analysis.fdr import adjust_pvalues, benjamini_hochberg, benjamini_yekutieli


def test_textbook_example():
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    # sorted: 0.005 0.01 0.03 0.04 0.2 ; BH thresholds at q=0.05: 0.01 0.02 0.03 0.04 0.05
    assert benjamini_hochberg(p, 0.05).tolist() == [True, True, True, True, False]
    assert np.allclose(adjust_pvalues(p), [0.025, 0.05, 0.05, 0.025, 0.2])


@pytest.mark.parametrize("method", ["bh", "by"])
def test_matches_scipy(method):
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.uniform(size=80), rng.uniform(0, 1e-3, size=20)])
    assert np.allclose(adjust_pvalues(p, method), stats.false_discovery_control(p, method=method))


def test_nan_is_never_a_discovery_and_does_not_count():
    p = [0.001, np.nan, 0.02, 0.5]
    mask = benjamini_hochberg(p, 0.05)
    assert mask.tolist() == [True, False, True, False]
    assert np.isnan(adjust_pvalues(p)[1])
    assert np.allclose(adjust_pvalues(p)[[0, 2, 3]], adjust_pvalues([0.001, 0.02, 0.5]))
    assert benjamini_hochberg([], 0.05).size == 0


def test_rejects_bad_input():
    with pytest.raises(ValueError):
        benjamini_hochberg([0.5, 1.5])
    with pytest.raises(ValueError):
        benjamini_hochberg([0.5], q=0)
    with pytest.raises(ValueError):
        adjust_pvalues([0.5], method="holm")


def test_by_is_more_conservative_than_bh():
    rng = np.random.default_rng(1)
    p = np.concatenate([rng.uniform(size=400), rng.uniform(0, 0.01, size=100)])
    assert np.all(benjamini_yekutieli(p) <= benjamini_hochberg(p))
    assert benjamini_yekutieli(p).sum() < benjamini_hochberg(p).sum()


def test_controls_the_false_discovery_rate_of_a_500_case_suite():
    """500 cases, 25 truly regressed; the average share of false discoveries stays under q."""
    rng = np.random.default_rng(2)
    q, m, m1 = 0.05, 500, 25
    fdp, power = [], []
    for _ in range(300):
        z = rng.normal(size=m)
        z[:m1] += 3.5
        p = stats.norm.sf(z)  # one-sided: regressions
        mask = benjamini_hochberg(p, q)
        r = mask.sum()
        fdp.append(mask[m1:].sum() / max(r, 1))
        power.append(mask[:m1].mean())
    assert np.mean(fdp) <= q * 1.1  # BH bounds it by q * m0 / m = 0.0475
    assert np.mean(power) > 0.5
    # per-case testing at the same level would flag about 24 innocent cases every night
    assert np.mean([(stats.norm.sf(rng.normal(size=m - m1)) < q).sum() for _ in range(20)]) > 15
