"""The honest A/B (issue 11, part 2): worker processes are the unit of every comparison of two runs.

Unchanged code is simulated as it behaves on these machines: each worker process settles at its
own level, lognormal around the true one with a 10% spread between processes, and its rounds are
tight around that level (1%). Rounds are therefore not independent evidence, and a test that takes
them as such (the old raw-rounds A/B) calls two runs of the same code different most of the time.
The process A/B's false-failure rate is the contract: at most alpha.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from synthetic import result_from_processes

from benchmark.analysis.ab_test import compare_processes
from benchmark.analysis.robust import between_run_noise, pooled_process_spread, process_noise
from benchmark.cli import main
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.verdict import Verdict
from benchmark.store import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "eval"))
from raw_samples import compare  # noqa: E402  (the old raw-samples test, eval/raw_samples.py)

ALPHA, MIN_EFFECT = 0.01, 0.05
BETWEEN, WITHIN, ROUNDS = 0.10, 0.01, 30  # between-process spread, within-process spread, rounds


def _run(rng, processes: int, level: float = 1e-4, between: float = BETWEEN) -> list[np.ndarray]:
    """The raw rounds of one run: one array per worker process."""
    levels = level * np.exp(rng.normal(0.0, between, processes))
    return [lv * np.exp(rng.normal(0.0, WITHIN, ROUNDS)) for lv in levels]


def _values(run: list[np.ndarray]) -> np.ndarray:
    return np.array([np.median(x) for x in run])


@pytest.mark.parametrize("processes", [3, 5])
def test_false_failure_rate_on_unchanged_code_is_at_most_alpha(processes):
    rng = np.random.default_rng(100 + processes)
    trials = 2000
    verdicts = [
        compare_processes(
            _values(_run(rng, processes)), _values(_run(rng, processes)), min_effect=MIN_EFFECT, alpha=ALPHA
        ).verdict
        for _ in range(trials)
    ]
    false_failures = verdicts.count(Verdict.REGRESSION) / trials
    # alpha = 1%: 2000 trials put the binomial standard error at 0.22%; 1.5% is alpha plus 2 SE
    assert false_failures <= 0.015, false_failures
    assert verdicts.count(Verdict.IMPROVEMENT) / trials <= 0.015


def test_with_the_historys_pooled_spread_the_rate_stays_at_most_alpha_and_two_processes_suffice():
    """The between-process spread of 10 earlier runs, pooled, lends each side its degrees of
    freedom: unchanged code still fails at most alpha, and a large slowdown measured in only 2
    processes a side (--bench-quick) is caught, which 2 processes alone (1 df a side) cannot."""
    rng = np.random.default_rng(11)
    trials, false_failures = 1500, 0
    for _ in range(trials):
        spread = pooled_process_spread([_values(_run(rng, 3)) for _ in range(10)])
        c = compare_processes(_values(_run(rng, 3)), _values(_run(rng, 3)), min_effect=MIN_EFFECT, alpha=ALPHA,
                              spread=spread)  # fmt: skip
        false_failures += c.verdict == Verdict.REGRESSION
    assert false_failures / trials <= 0.015
    base, slow = [7.2e-6, 4.7e-6], [881e-6, 271e-6]  # measured: abs 256x256 under FLAGS_check_nan_inf
    spread = pooled_process_spread([base] * 10)
    assert compare_processes(base, slow, min_effect=1.0, alpha=ALPHA).verdict == "inconclusive"
    caught = compare_processes(base, slow, min_effect=1.0, alpha=ALPHA, spread=spread)
    assert caught.verdict == Verdict.REGRESSION and "pooled with 10 df" in caught.reason


def test_the_old_raw_rounds_test_fails_unchanged_code_most_of_the_time():
    """The same kind of data through the old gate's A/B: each run measured in one process (as
    before worker processes), its rounds taken as independent samples. In runs of an 8-case suite,
    most runs of unchanged code fail."""
    rng = np.random.default_rng(7)
    runs, cases = 25, 8
    old = [
        [compare(_run(rng, 1)[0], _run(rng, 1)[0], min_effect=MIN_EFFECT, alpha=ALPHA) for _ in range(cases)]
        for _ in range(runs)
    ]
    flat = [c for run in old for c in run]
    significant = sum(c.p_value <= ALPHA for c in flat) / len(flat)
    failing_runs = sum(any(c.verdict == Verdict.REGRESSION for c in run) for run in old) / runs
    assert significant > 0.8, significant  # "two runs of the same code differ", almost always
    assert failing_runs > 0.5, failing_runs


def test_a_20_percent_slowdown_with_5_processes_a_side_is_caught():
    """Sensitivity at a 5% between-process spread (a quiet machine). At 10% the same test catches
    it in about half of the runs at alpha = 1%: the spread, not the test, is the limit."""
    rng = np.random.default_rng(3)
    trials = 500
    caught = sum(
        compare_processes(
            _values(_run(rng, 5, between=0.05)),
            _values(_run(rng, 5, level=1.2e-4, between=0.05)),
            min_effect=MIN_EFFECT,
            alpha=ALPHA,
        ).verdict
        == Verdict.REGRESSION
        for _ in range(trials)
    )
    assert caught / trials >= 0.9, caught / trials


def test_a_throughput_drop_is_slower_and_a_negligible_difference_is_same():
    base, new = [100.0, 101.0, 99.0, 100.5], [80.0, 81.0, 79.5, 80.2]
    c = compare_processes(base, new, min_effect=MIN_EFFECT, higher_is_better=True, alpha=ALPHA)
    assert (
        c.verdict == Verdict.REGRESSION
        and c.method == "processes"
        and c.ratio == pytest.approx(0.8, abs=0.01)
    )
    same = compare_processes(base, [100.2, 100.8, 99.5, 100.1], min_effect=MIN_EFFECT, alpha=ALPHA)
    assert same.verdict == Verdict.PASS and same.ci_low > 1 / 1.05 and same.ci_high < 1.05


def test_a_side_with_one_process_uses_the_history_noise_or_is_inconclusive():
    alone = compare_processes([1.0e-4], [1.3e-4], min_effect=MIN_EFFECT, alpha=ALPHA)
    assert alone.verdict == "inconclusive" and alone.method == "none"
    assert "no honest variance estimate" in alone.reason and math.isnan(alone.p_value)
    history = [1.0e-4, 1.01e-4, 0.99e-4, 1.005e-4, 0.998e-4, 1.002e-4]
    sigma, df = between_run_noise(history)
    assert 0.001 < sigma < 0.02 and df == pytest.approx(2 * 5**2 / 14)  # 6 values: 3.6 df, not 5
    noisy = compare_processes(
        [1.0e-4], [1.3e-4], min_effect=MIN_EFFECT, alpha=ALPHA, noise=sigma, noise_df=df
    )
    assert noisy.verdict == Verdict.REGRESSION and noisy.method == "history_noise"
    small = compare_processes(
        [1.0e-4], [1.005e-4], min_effect=MIN_EFFECT, alpha=ALPHA, noise=sigma, noise_df=df
    )
    assert small.verdict != Verdict.REGRESSION
    assert between_run_noise(history[:2]) is None
    assert math.isnan(process_noise([1.0])) and process_noise([1.0, 1.1, 0.9]) > 0


def test_bad_process_values_are_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="positive"):
        compare_processes([1.0, -1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="finite"):
        compare_processes([1.0, float("nan")], [1.0, 1.0])


# ------------------------------------------------------------------------------ two recorded runs

MACHINE = {"hostname": "ab-host", "cpu_model": "test", "fingerprint": "abmachine000001"}
CASES = {f"ops.case{i}[n=64]": 10e-6 * (i + 1) for i in range(8)}


def _result(case_id: str, run: list[np.ndarray]) -> CaseResult:
    return result_from_processes(case_id, run)


def test_two_recorded_runs_of_identical_code_pass_the_ab(tmp_path, capsys):
    """Real SQLite, real gate command: the second run of unchanged code (10% between processes)
    passes against the history (the A/B fallback) and against run 1 (--baseline 1)."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    rng = np.random.default_rng(21)
    with open_store(url) as st:
        for r in range(2):
            run_id = st.begin_run(
                MachineDescription.of(MACHINE), RunDescription.of({"started_at": 1.7e9 + r * 86400.0})
            )
            st.add_results(run_id, [_result(c, _run(rng, 3, level)) for c, level in CASES.items()])
            st.finish_run(run_id)
    for args in ([], ["--baseline", "1"]):
        assert main(["gate", "--db", url, "--run", "2", "--format", "json", *args]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["passed"] and doc["notice"] is None
        kinds = {d["evidence_kind"] for d in doc["decisions"]}
        assert kinds == {"ab_processes"}, kinds
        assert all(d["verdict"] in ("pass", "inconclusive") for d in doc["decisions"])
        assert all(d["processes"] == 3 for d in doc["decisions"])


def test_advice_to_measure_more_is_given_only_where_it_is_practical():
    # a small, well-measured difference near the bound: a few more processes would settle it
    near = compare_processes([1.0, 1.02, 0.98, 1.0], [1.0, 1.06, 0.98, 1.04], min_effect=0.05)
    assert near.verdict == "inconclusive" and "more processes per side would settle it" in near.reason
    assert near.more_samples_needed is not None and near.more_samples_needed <= 10 * 4
    # a tiny difference under a large spread: thousands more would be needed; no number is given
    far = compare_processes([1.0, 1.4], [1.02, 1.38], min_effect=0.05)
    assert far.verdict == "inconclusive" and far.more_samples_needed is None
    assert "far below this machine's noise" in far.reason and "per side would" not in far.reason


def test_the_gate_machine_line_fits_100_columns():
    from benchmark.analysis.adjust import MachineSpeed
    from benchmark.report.words import machine_line

    slow = machine_line(12345, MachineSpeed(probe_s=0.0388, usual_s=0.0205, runs=6))
    fast = machine_line(12345, MachineSpeed(probe_s=0.0105, usual_s=0.0205, runs=6))
    assert slow is not None and fast is not None
    assert "1.89x slower" in slow and "regressions" in slow and "faster" in fast and "improvements" in fast
    assert max(len(slow), len(fast)) <= 100
