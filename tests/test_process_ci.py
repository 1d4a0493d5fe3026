"""The confidence interval a run reports comes from its per-process values, so a spread between
worker processes that the rounds inside each process do not show still widens it."""

import math

import numpy as np

from benchmark.analysis.processes import summarize_processes
from benchmark.analysis.summary import median_ci, process_level_ci
from benchmark.datamodel.metrics import CONFIDENCE
from benchmark.datamodel.result import process_entry


def test_level_interval_covers_the_true_level_at_its_confidence():
    rng = np.random.default_rng(7)
    level, trials, hits = 1e-4, 4000, 0
    for _ in range(trials):
        values = level * np.exp(rng.normal(0.0, 0.08, size=3))
        lo, hi = process_level_ci(values)
        hits += lo <= level <= hi
    assert 0.93 <= hits / trials <= 0.97


def test_one_process_has_no_level_interval():
    assert all(math.isnan(x) for x in process_level_ci([1e-4]))


def test_tight_rounds_in_disagreeing_processes_give_a_wide_interval():
    rng = np.random.default_rng(3)
    levels = [100e-6, 110e-6, 121e-6]  # 10% apart, each process's rounds within 0.1%
    entries = [
        process_entry(i, 1000 + i, i, "ok", list(v * (1 + 0.001 * rng.standard_normal(50))))
        for i, v in enumerate(levels)
    ]
    pooled, stats = summarize_processes(entries)
    pooled_lo, pooled_hi = median_ci(pooled)
    assert stats.ci_low < 100e-6 and stats.ci_high > 121e-6
    assert stats.ci_high - stats.ci_low > 2 * (pooled_hi - pooled_lo)
    assert stats.ci_low < stats.median < stats.ci_high


def test_a_single_process_keeps_the_interval_of_its_rounds():
    entries = [process_entry(0, 1000, 0, "ok", [1e-4 + i * 1e-7 for i in range(40)])]
    pooled, stats = summarize_processes(entries)
    assert (stats.ci_low, stats.ci_high) == median_ci(pooled, CONFIDENCE)  # at the one level of every view
