"""The noise-aware history gate (issue 11, part 5): each run's between-process spread is the floor
under the detector's noise, so the same run values are judged more tightly on a quiet machine than
on a noisy one. Pure numbers, and once through the judge on a real SQLite history.
"""

from __future__ import annotations

import numpy as np
import pytest
from synthetic import result_from_processes

from benchmark.analysis.online import check_latest
from benchmark.analysis.robust import process_noise
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.verdict import Evidence, Verdict
from benchmark.gate.judge import evaluate
from benchmark.gate.settings import load_gates
from benchmark.store import open_store

RUNS, STEP = 30, 1.07  # a 7% step over the two newest runs


def _values(seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    values = list(1e-4 * np.exp(rng.normal(0.0, 0.01, RUNS)))
    values[-2] *= STEP
    values[-1] *= STEP
    return values


@pytest.mark.parametrize(("spread", "alerts"), [(0.01, True), (0.10, False)])
def test_the_between_process_spread_is_the_detectors_floor(spread, alerts):
    values = _values()
    per_run = process_noise(1e-4 * np.exp(np.array([-1.0, 0.0, 1.0]) * spread))  # 3 processes a run
    alert = check_latest(values, min_effect=0.05, noise=[per_run] * RUNS)
    assert (alert is not None and alert.direction == "regression") is alerts


def test_noise_must_have_one_entry_per_run():
    with pytest.raises(ValueError, match="one entry per value"):
        check_latest([1.0, 1.1, 1.2], noise=[0.01])


def _result(level: float, spread: float) -> CaseResult:
    # three processes at level * exp(-spread, 0, +spread): their median is exactly the run value
    per_process = [[level * np.exp(f * spread)] * 5 for f in (-1, 0, 1)]
    return result_from_processes("ops.x[n=1]", per_process, config={"c": 1}, config_hash="cfg-x")


@pytest.mark.parametrize(("spread", "verdict"), [(0.01, Verdict.REGRESSION), (0.10, Verdict.PASS)])
def test_the_judge_is_tighter_on_a_quiet_machine(tmp_path, spread, verdict):
    """The same run values, recorded with a 1% or a 10% spread between their processes."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    machine = {"hostname": "h", "cpu_model": "t", "fingerprint": f"noise{int(spread * 100):03d}"}
    with open_store(url) as st:
        for r, value in enumerate(_values()):
            run_id = st.begin_run(
                MachineDescription.of(machine), RunDescription.of({"started_at": 1.7e9 + r * 86400.0})
            )
            st.add_results(run_id, [_result(value, spread)])
            st.finish_run(run_id)
        (d,) = evaluate(st, run_id, load_gates(None))
    assert d.evidence_kind == Evidence.HISTORY and d.processes == 3
    assert d.verdict == verdict, d
