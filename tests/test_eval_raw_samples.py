"""The raw-samples A/B test the gate used before worker processes (eval/raw_samples.py, kept for
eval/gate_false_failures.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from benchmark.analysis.ab_test import Comparison
from benchmark.datamodel.verdict import Verdict

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "eval"))
from raw_samples import compare  # noqa: E402


def lognormal(rng, n, shift=0.0, cv=0.03):
    return np.exp(rng.normal(np.log1p(shift), cv, n))


def test_ten_percent_slower_with_50_samples_each_is_slower_with_ci_excluding_one():
    rng = np.random.default_rng(1)
    c = compare(lognormal(rng, 50), lognormal(rng, 50, shift=0.10))
    assert c.verdict == Verdict.REGRESSION
    assert c.ci_low > 1.0 and c.ci_high > c.ci_low
    assert c.ci_low <= c.ratio <= c.ci_high
    assert c.ratio == pytest.approx(1.10, abs=0.02)
    assert c.p_value < 1e-6
    assert c.more_samples_needed is None
    assert (c.n_baseline, c.n_candidate) == (50, 50)
    assert "worse" in c.reason and "%" in c.reason


def test_faster_and_direction_of_higher_is_better():
    rng = np.random.default_rng(2)
    base, cand = lognormal(rng, 50), lognormal(rng, 50, shift=-0.10)
    assert compare(base, cand).verdict == Verdict.IMPROVEMENT
    # a throughput that drops by 10% got slower
    t = compare(base, cand, higher_is_better=True)
    assert t.verdict == Verdict.REGRESSION
    assert compare(cand, base, higher_is_better=True).verdict == Verdict.IMPROVEMENT


@pytest.mark.parametrize("n", [10, 30, 100])
def test_same_distribution_is_never_slower_or_faster(n):
    verdicts = []
    for seed in range(60):
        rng = np.random.default_rng(seed)
        verdicts.append(compare(lognormal(rng, n), lognormal(rng, n), seed=seed).verdict)
    assert set(verdicts) <= {Verdict.PASS, Verdict.INCONCLUSIVE}
    if n == 100:  # with 100 samples of 3% noise the 99% interval fits inside +-3%
        assert verdicts.count(Verdict.PASS) >= 55


def test_inconclusive_says_how_many_more_samples_settle_it():
    rng = np.random.default_rng(3)
    c = compare(lognormal(rng, 8, cv=0.05), lognormal(rng, 8, shift=0.06, cv=0.05))
    assert c.verdict == Verdict.INCONCLUSIVE
    assert c.ci_low < 1.03 < c.ci_high  # straddles the minimum effect
    assert isinstance(c.more_samples_needed, int) and c.more_samples_needed > 0
    assert f"{c.more_samples_needed} more samples" in c.reason
    # With that many more samples from the same distributions the answer is (usually) settled.
    settled = 0
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        n = 8 + c.more_samples_needed
        settled += compare(lognormal(rng, n, cv=0.05), lognormal(rng, n, shift=0.06, cv=0.05)).verdict != (
            Verdict.INCONCLUSIVE
        )
    assert settled >= 10


def test_small_real_difference_inside_the_minimum_effect_is_same():
    rng = np.random.default_rng(4)
    c = compare(lognormal(rng, 400, cv=0.01), lognormal(rng, 400, shift=0.01, cv=0.01))
    assert c.p_value < 0.01  # the 1% difference is real...
    assert c.verdict == Verdict.PASS  # ...but below the 3% minimum effect


def test_edge_cases():
    c = compare([1.0], [1.0, 2.0])
    assert c.verdict == Verdict.INCONCLUSIVE and c.more_samples_needed == 1
    same = compare([2.0] * 10, [2.0] * 10)
    assert same.verdict == Verdict.PASS and same.ratio == 1.0 and same.p_value == 1.0
    with pytest.raises(ValueError):
        compare([1.0, float("nan")], [1.0, 2.0])
    with pytest.raises(ValueError):
        compare([1.0, 2.0], [1.0, 2.0], min_effect=-0.1)
    zero = compare([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    assert zero.verdict == Verdict.INCONCLUSIVE


def test_deterministic():
    rng = np.random.default_rng(5)
    b, c = lognormal(rng, 30), lognormal(rng, 30, shift=0.04)
    one, two = compare(b, c, seed=7), compare(b, c, seed=7)
    assert one == two
    assert isinstance(one, Comparison)
