"""Warmup, calibration, sync timer, allocator control and summary statistics."""

from __future__ import annotations

import time
import types

import numpy as np
import pytest

from benchmark.analysis.summary import (
    bimodality_coefficient,
    median_ci,
    process_level_ci,
    stability_warnings,
    summarize,
)
from benchmark.execution import measure


def test_plan_sizes_rounds_to_round_time_and_bounds_rounds():
    s = measure.MeasureSettings(round_time=0.01, min_rounds=20, max_rounds=500, max_time=1.0)
    p = measure.plan(1e-6, 10, s)
    assert p.iterations == 10_000 and p.rounds == 100
    slow = measure.plan(0.5, 3, s)
    assert slow.iterations == 1 and slow.rounds == 20, "never fewer than min_rounds"
    fast = measure.plan(1e-9, 3, measure.MeasureSettings(round_time=1e-6, max_time=10, max_rounds=500))
    assert fast.rounds == 500, "never more than max_rounds"


def test_warmup_runs_for_its_time_and_estimates_the_steady_state(monkeypatch):
    """On a fake clock (the machine's speed must not decide the test): the first two calls take
    20 ms (compilation, allocation), then each 1 ms; a 0.1 s warm-up runs 2 + 60 calls and
    estimates the steady 1 ms."""
    now = [0.0]
    calls = []
    monkeypatch.setattr(measure, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))

    def step():
        now[0] += 0.02 if len(calls) < 2 else 0.001
        calls.append(1)

    n, est = measure.warmup(
        step, lambda: None, measure.MeasureSettings(warmup_time=0.1, min_warmup_iterations=3)
    )
    assert n == len(calls) == 62
    assert est == pytest.approx(0.001)


def test_overrides_only_touch_known_fields():
    s = measure.MeasureSettings().override({"min_rounds": 7, "max_time": None, "bogus": 1})
    assert s.min_rounds == 7 and s.max_time == measure.MeasureSettings().max_time


def test_sync_timer_synchronizes_the_registered_place():
    synced = []
    timer = measure.timer_for("gpu:0")
    assert timer is not time.perf_counter
    measure._SYNCS["gpu:0"] = lambda: synced.append(1)
    try:
        t0, t1 = timer(), timer()
    finally:
        measure._SYNCS.pop("gpu:0")
    assert len(synced) == 2 and t1 >= t0
    assert measure.timer_for("cpu") is time.perf_counter


def test_allocator_control_sets_thresholds_and_exports_them(monkeypatch):
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    applied = measure.control_allocator(True)
    assert applied["controlled"] is True
    assert applied["mmap_threshold"] == measure.MMAP_THRESHOLD_MAX
    import os

    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == str(measure.TRIM_THRESHOLD)


def test_pin_threads_respects_user_settings(monkeypatch):
    for var in measure.THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "4")
    got = measure.pin_threads(1)
    assert got["OMP_NUM_THREADS"] == "1" and got["MKL_NUM_THREADS"] == "4"


def test_summary_statistics():
    x = np.arange(1, 101, dtype=float)
    s = summarize(x)
    assert s["rounds"] == 100 and s["median"] == 50.5 and s["min"] == 1 and s["max"] == 100
    assert s["iqr"] == pytest.approx(49.5)
    assert s["ci_low"] < 50.5 < s["ci_high"]


def test_median_ci_covers_the_true_median_about_95_percent():
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(2000):
        lo, hi = median_ci(rng.exponential(size=30))
        hits += lo <= np.log(2) <= hi
    assert 0.93 <= hits / 2000 <= 0.99


def test_the_summary_statistics_are_scipy_stats_definitions():
    """The summary computes with scipy.special (no scipy.stats import in every worker): the same
    binomial and t quantiles and bias-corrected skewness/kurtosis as scipy.stats."""
    from scipy import stats as sps

    rng = np.random.default_rng(2)
    for n in [*range(6, 400), 1_000, 10_007, 100_000]:
        x = np.sort(rng.lognormal(size=n))
        j = max(int(sps.binom.ppf(0.025, n, 0.5)), 1)
        assert median_ci(x) == (x[j - 1], x[n - j]), n
    for n in range(2, 40):
        v = rng.lognormal(size=n)
        half = sps.t.ppf(0.975, n - 1) * np.log(v).std(ddof=1) / np.sqrt(n)
        assert process_level_ci(v) == pytest.approx(
            np.exp(np.log(v).mean() + np.array([-half, half])), rel=1e-12
        )
    for n in (4, 5, 20, 300):
        x = np.concatenate([rng.normal(1, 0.01, n), rng.normal(1.3, 0.01, n)])
        g, k = sps.skew(x, bias=False), sps.kurtosis(x, bias=False)
        m = x.size
        assert bimodality_coefficient(x) == pytest.approx(
            (g * g + 1) / (k + 3 * (m - 1) ** 2 / ((m - 2) * (m - 3)))
        )
    assert np.isnan(bimodality_coefficient(np.array([1.0, 1.0, 1.0, 1.0 + 2e-16, 1.0])))


def test_stability_warnings_flag_dispersion_and_bimodality_but_not_a_steady_case():
    rng = np.random.default_rng(1)
    steady = 1e-4 * (1 + 0.005 * rng.standard_normal(100))
    assert stability_warnings(steady) == []
    noisy = 1e-4 * (1 + 0.3 * rng.standard_normal(100)).clip(0.3)
    assert any(w.startswith("unstable") for w in stability_warnings(noisy))
    bimodal = np.concatenate([np.full(50, 1e-4), np.full(50, 1.3e-4)]) * (
        1 + 0.002 * rng.standard_normal(100)
    )
    assert any(w.startswith("bimodal") for w in stability_warnings(bimodal))
    assert any(w.startswith("only 3 rounds") for w in stability_warnings([1.0, 1.0, 1.0]))


def test_format_time_units():
    assert measure.format_time(2.5) == "2.500 s"
    assert measure.format_time(0.0025) == "2.500 ms"
    assert measure.format_time(2.5e-6) == "2.500 µs"
    assert measure.format_time(2.5e-8) == "25.00 ns"
    assert measure.format_time(None) == "-"


def test_in_process_measurement_is_a_typed_record_that_fills_a_result(benchmark):
    from benchmark.datamodel.result import CaseResult
    from benchmark.runners.base import Prepared

    def step():
        return sum(range(100))

    settings = measure.MeasureSettings.quick()
    found = measure.measure(benchmark, Prepared(step=step, items_per_step=8), "cpu", settings)
    assert isinstance(found, measure.Measurement)
    assert len(found.samples) >= settings.min_rounds and all(x > 0 for x in found.samples)
    assert found.stats.median == pytest.approx(float(np.median(found.samples)))
    assert found.device_samples is None and found.peak_memory_bytes is None  # CPU: no device timer
    assert found.throughput == pytest.approx(8 / found.stats.median) and found.batch_size == 8
    result = CaseResult("c", "c", "op", "cpu", "dynamic", {}, "h", extra={"prepare_s": 0.1})
    found.fill(result)
    assert result.samples == found.samples and result.iterations == found.iterations
    assert result.throughput_unit == "samples/s" and result.warmup_rounds == 1
    assert result.prepare_s == 0.1 and result.timing["warmup_iterations"] >= 2 and result.extra == {}
    assert list(result.to_dict()["extra"])[:3] == ["prepare_s", "warmup_iterations", "estimate_s"]
