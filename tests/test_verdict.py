"""The verdict a user acts on (configs/gates.yaml `blocking`, `confirm`, `common_shift`; `benchmark
ack`): what blocks per place, a regression re-measured or not, the run's common shift, and a
regression that stands until it is reverted or acknowledged. Real SQLite, the real CLI, synthetic
numbers far from any threshold."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from compare_venvs import far_slower_hook, make_venv
from synthetic import gate_rows, result_from_processes, result_from_samples

from benchmark.cli import main
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.gate.judge import CONFIRMATION_KEY
from benchmark.store import open_store

PROJECT = Path(__file__).resolve().parents[1]
MACHINE = {"hostname": "verdict-host", "cpu_model": "test", "fingerprint": "verdictmachine01"}
DAY = 86400.0
OPS = {f"op{i}": 20e-6 * (1 + i) for i in range(6)}
COUNTS = {"op0": 650_000.0, "op1": 230_000.0}


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


def _timed(case_id: str, level: float, rng, place: str) -> object:
    levels = level * np.exp(rng.normal(0.0, 0.01, 3))
    return result_from_processes(
        case_id, [lv * np.exp(rng.normal(0.0, 0.003, 20)) for lv in levels], place=place
    )


def _counted(case_id: str, count: float, metric: str = "instructions") -> object:
    wobble = [count * (1 + 1e-5 * k) for k in (-1, 0, 1)]
    return result_from_samples(case_id, wobble, metric=metric, unit=metric)


def _run(url: str, r: int, rng, *, place: str = "cpu", times=None, counts=None, cycles=None) -> int:
    """One complete run: every op timed at its level (times[case]: a factor), and on CPU op0 and
    op1 counted (counts[case]: a factor) with their estimated cycles (cycles[case]: a factor)."""
    times, counts, cycles = times or {}, counts or {}, cycles or {}
    with open_store(url) as st:
        run_id = st.begin_run(
            MachineDescription.of(MACHINE), RunDescription.of({"started_at": 1.7e9 + r * DAY})
        )
        results = [_timed(c, level * times.get(c, 1.0), rng, place) for c, level in OPS.items()]
        if place == "cpu":
            results += [_counted(c, n * counts.get(c, 1.0)) for c, n in COUNTS.items()]
            results += [_counted(c, 3 * n * cycles.get(c, 1.0), "cycles") for c, n in COUNTS.items()]
        st.add_results(run_id, results)
        st.finish_run(run_id)
    return run_id


def _gate(url: str, run_id: int, capsys, *flags: str) -> tuple[int, dict]:
    code = main(["gate", "--db", url, "--run", str(run_id), "--format", "json", *flags])
    doc = json.loads(capsys.readouterr().out)
    return code, {(d["case_id"], d["metric"]): d for d in doc["decisions"]}


def test_on_cpu_the_count_blocks_and_wall_time_is_shown_without_failing(url, capsys):
    rng = np.random.default_rng(1)
    for r in range(3):
        _run(url, r, rng)
    run_id = _run(url, 3, rng, times={"op3": 1.5}, counts={"op1": 1.02})
    code, d = _gate(url, run_id, capsys)
    assert code == 1
    counted = d[("op1", "instructions")]
    assert counted["verdict"] == "regression" and counted["failing"] and counted["blocking"]
    timed = d[("op3", "time")]
    assert timed["verdict"] == "regression" and not timed["failing"] and not timed["blocking"]
    assert "does not block on cpu, where instructions, cycles block(s)" in timed["reason"]
    assert [k for k, x in d.items() if x["failing"]] == [("op1", "instructions")]
    # the text shows the one that blocks, then the one that does not, each in full
    main(["gate", "--db", url, "--run", str(run_id)])
    rows = gate_rows(capsys.readouterr().out)
    shown = [r for r in rows if r.startswith("REGRESSION")]
    assert (
        shown[0].startswith("REGRESSION   op1 [cpu dynamic] instructions")
        and "op3 [cpu dynamic] time" in shown[1]
    )
    assert rows[-1] == "gate: FAIL (1 failing case(s), 0 improvement(s), 1 regression(s) that do not block)"


def test_one_percent_more_instructions_or_cycles_fails_the_first_run_and_names_the_metric(url, capsys):
    rng = np.random.default_rng(7)
    for r in range(3):
        _run(url, r, rng)
    # a layout change: the same instructions, 1.2% more estimated cycles (cache misses)
    code, d = _gate(url, _run(url, 3, rng, cycles={"op1": 1.012}), capsys)
    assert code == 1 and [k for k, x in d.items() if x["failing"]] == [("op1", "cycles")]
    assert "estimated cycles per iteration +1.20% against the level" in d[("op1", "cycles")]["evidence"]
    # 1% more instructions (and so cycles) of one op, on the first run that has it
    code, d = _gate(url, _run(url, 4, rng, counts={"op0": 1.01}, cycles={"op1": 1.012}), capsys)
    assert code == 1 and d[("op0", "instructions")]["verdict"] == "regression"


def test_on_a_gpu_the_time_blocks(url, capsys):
    rng = np.random.default_rng(2)
    for r in range(3):
        _run(url, r, rng, place="gpu")
    run_id = _run(url, 3, rng, place="gpu", times={"op3": 1.5})
    code, d = _gate(url, run_id, capsys)
    assert code == 1 and d[("op3", "time")]["failing"] and d[("op3", "time")]["blocking"]


def test_a_regression_measured_again_fails_only_if_every_attempt_reproduced_it(url, capsys):
    rng = np.random.default_rng(3)
    for r in range(3):
        _run(url, r, rng)
    run_id = _run(url, 3, rng, times={"op3": 1.5})
    key = "op3|cpu|dynamic|time"
    with open_store(url) as st:  # as `pytest benchmark/ --bench-gate` stores its re-measurements
        attempts = [{"attempt": 1, "effect": 0.48, "verdict": "regression"},
                    {"attempt": 2, "effect": 0.02, "verdict": "pass"}]  # fmt: skip
        st.set_run_extra(run_id, CONFIRMATION_KEY, {key: {"attempts": attempts, "reproduced": False}})
    code, d = _gate(url, run_id, capsys)
    assert code == 0 and d[("op3", "time")]["verdict"] == "not reproduced"
    assert (
        "not reproduced when measured again: +48.0% (regression), +2.0% (pass)"
        in d[("op3", "time")]["reason"]
    )
    assert d[("op3", "time")]["confirmation"] == attempts
    with open_store(url) as st:
        attempts = [{"attempt": 1, "effect": 0.51, "verdict": "regression"},
                    {"attempt": 2, "effect": 0.47, "verdict": "regression"}]  # fmt: skip
        st.set_run_extra(run_id, CONFIRMATION_KEY, {key: {"attempts": attempts, "reproduced": True}})
    code, d = _gate(url, run_id, capsys)
    timed = d[("op3", "time")]
    assert code == 1 and timed["verdict"] == "regression" and timed["failing"] and timed["blocking"]
    assert "reproduced in 2 re-measurement(s): +51.0% (regression), +47.0% (regression)" in timed["reason"]


def test_a_run_where_every_case_moved_together_is_the_machine_not_six_regressions(url, capsys):
    rng = np.random.default_rng(4)
    for r in range(3):
        _run(url, r, rng, place="gpu")
    together = _run(url, 3, rng, place="gpu", times=dict.fromkeys(OPS, 1.4))
    code, d = _gate(url, together, capsys)
    assert code == 0 and all(x["verdict"] != "regression" for x in d.values()), d
    assert all("the run's common shift (+4" in x["evidence"] and "median of 5 other series" in x["evidence"]
               for x in d.values())  # fmt: skip
    # one case moving against the others still stands out, on top of the machine's shift
    alone = _run(url, 4, rng, place="gpu", times={**dict.fromkeys(OPS, 1.4), "op2": 1.4 * 1.5})
    code, d = _gate(url, alone, capsys)
    assert code == 1 and [k for k, x in d.items() if x["failing"]] == [("op2", "time")]
    assert d[("op2", "time")]["effect"] == pytest.approx(0.5, abs=0.1)
    # turned off, the same run is six regressions
    gates = url.removeprefix("sqlite:///").replace("history.sqlite", "gates.yaml")
    with open(gates, "w") as f:
        f.write("defaults: {common_shift: false}\n")
    code, d = _gate(url, together, capsys, "--gates", gates)
    assert code == 1 and sum(x["failing"] for x in d.values()) == len(OPS)


def test_a_regression_stands_until_it_is_acknowledged(url, capsys):
    rng = np.random.default_rng(5)
    for r in range(3):
        _run(url, r, rng)
    first = _run(url, 3, rng, counts={"op0": 1.05})
    code, d = _gate(url, first, capsys)
    assert (
        code == 1 and d[("op0", "instructions")]["reason"] == "instructions per iteration changed at this run"
    )
    # the next run keeps it: it fails again, naming where it was raised
    second = _run(url, 4, rng, counts={"op0": 1.05})
    code, d = _gate(url, second, capsys)
    counted = d[("op0", "instructions")]
    assert code == 1 and counted["verdict"] == "regression" and counted["change_run_id"] == first
    assert f"regressed at run {first} and still does" in counted["reason"]
    # acknowledged from the first regressed run on: that level is the baseline
    assert main(["ack", "op0", "--metric", "instructions", "--run", str(first), "--by", "alice",
                 "--why", "intended: new bounds check (#123)", "--db", url]) == 0  # fmt: skip
    assert capsys.readouterr().out == f"acknowledged op0 [cpu dynamic] instructions at run {first} by alice\n"
    code, d = _gate(url, second, capsys)
    counted = d[("op0", "instructions")]
    assert code == 0 and counted["verdict"] == "pass"
    assert (
        f"level acknowledged at run {first} by alice: intended: new bounds check (#123)"
        in counted["baseline"]
    )
    third = _run(url, 5, rng, counts={"op0": 1.05})
    code, d = _gate(url, third, capsys)
    assert code == 0 and d[("op0", "instructions")]["verdict"] == "pass"
    # the acknowledged run itself now starts the series' level
    code, d = _gate(url, first, capsys)
    assert code == 0 and d[("op0", "instructions")]["verdict"] == "new"
    with open_store(url, create=False, readonly=True) as st:
        (series_acks,) = st.acknowledgements(range(1, 100)).values()
    assert [(a.run_id, a.by, a.why) for a in series_acks] == [
        (first, "alice", "intended: new bounds check (#123)")
    ]


def test_ack_refuses_what_it_cannot_find_and_a_missing_history(url, tmp_path, capsys):
    rng = np.random.default_rng(6)
    _run(url, 0, rng)
    assert main(["ack", "nope*", "--why", "x", "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("benchmark ack: error: run 1 has no ok result of 'nope*'")
    missing = tmp_path / "none.sqlite"
    assert main(["ack", "op0", "--why", "x", "--db", str(missing)]) == 2
    assert "no history at" in capsys.readouterr().err and not missing.exists()


SMALL = """
cases:
  - name: verdict_abs
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [16, 16]}}
    places: [cpu]
    modes: [dynamic]
"""
# Each paddle.abs call three times as long and 2 ms more: far beyond any machine's noise.
SLOWER = far_slower_hook(3.0, 2e-3)


@pytest.mark.slow
def test_bench_gate_measures_a_cpu_wall_time_regression_again_and_fails_it_when_it_reproduces(tmp_path):
    """A real suite: a first run, then one where paddle.abs is made far slower (a .pth hook in a
    venv of this interpreter's packages). Its CPU wall time regressed, which blocks only when
    measured again: --bench-gate measures the case again in fresh workers (twice), the regression
    reproduces both times, the gate item fails, and the attempts are stored with the run, so
    `benchmark gate` later gives the same verdict with their figures."""
    import subprocess
    import sys

    cfg = tmp_path / "cases.yaml"
    cfg.write_text(SMALL)
    db = f"sqlite:///{tmp_path / 'h.sqlite'}"

    def suite(python, *args):
        cmd = [str(python), "-m", "pytest", "benchmark/", "-p", "no:cacheprovider", "--bench-config", str(cfg),
               "--bench-quick", "--bench-processes", "4", "--bench-db", db, "--bench-json", str(tmp_path / "s.json"), *args]  # fmt: skip
        return subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=900)

    first = suite(sys.executable)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    slow = suite(make_venv(tmp_path / "slow", hook=SLOWER), "--bench-gate")
    out = slow.stdout + slow.stderr
    assert slow.returncode == 1, out[-4000:]
    assert (
        "measuring again 1 regressed case(s) and 0 control(s) in fresh worker processes (attempt 2 of 2)"
        in out
    )
    assert "1 of 1 regression(s) reproduced when measured again" in out
    with open_store(db, create=False, readonly=True) as st:
        run = st.run(2)
    (attempts,) = [c["attempts"] for c in run.extra[CONFIRMATION_KEY].values() if c["reproduced"]]
    assert len(attempts) == 2 and all(a["verdict"] == "regression" and a["effect"] > 1.0 for a in attempts)
    code = main(["gate", "--db", db, "--run", "2"])
    assert code == 1
