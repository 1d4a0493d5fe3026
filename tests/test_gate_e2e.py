"""The gate on a SQLite history of real results, and --bench-gate item outcomes of real suite runs.

The history is one real suite run and replays of its stored results through the store. The
regression is real: `FLAGS_check_nan_inf=1` makes paddle check every operator's output, which
slows the `abs` case many times over while an empty program (no operator) keeps its speed; the
case configs, and so the series, stay the same. Both slow runs are real suite runs: how much slower
`abs` gets depends on the machine and its load (35x to 500x here), and the detector takes a slow run
far beyond the one before it for an outlier, so a made-up first slow run would not do.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark import cli
from benchmark.analysis.processes import summarize_processes
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.result import CaseResult
from benchmark.store import open_store

PROJECT = Path(__file__).resolve().parents[1]
CONFIG = """
cases:
  - {name: g_abs, kind: op, op: paddle.abs, inputs: {x: {shape: [256, 256]}}, places: [cpu]}
  - {name: g_empty, kind: program, feed: {x: {shape: [8, 8]}}, ops: [], fetch: [x], places: [cpu], modes: [static]}
"""
# Only a 4x change counts: the injected slowdown (35x-500x) is far beyond it, and the load of a
# shared machine (which can double an empty program's time between two runs) usually is not.
GATES = "defaults: {min_effect: 3.0}\n"
# The replays' two worker processes lie at these fractions of the run value (a quiet machine's
# spread), and their run values at these fractions of run 1's (the between-run noise).
PROCESS_SPREAD = (0.95, 1.05)
RUN_FACTORS = (1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 0.98, 1.02, 0.99, 1.01, 1.0)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """Run 1 is a real suite run; runs 2..12 replay its stored results through the store, as
    unchanged code on a quiet machine would record them: the history gate needs 12 runs, and 11
    more real suite runs (about 3 minutes on 2 cores) would test nothing the replays do not.

    Each replay's processes are run 1's, scaled to PROCESS_SPREAD around the run value times its
    RUN_FACTORS entry (:func:`replay`). Copied as measured, the two processes of one run would be
    the spread of every run: under load one pair 3x apart made each run's noise a factor of 2, and
    two real slow runs of 35x and 79x raised no alert (p=0.068)."""
    tmp = tmp_path_factory.mktemp("gate")
    (tmp / "cases.yaml").write_text(CONFIG)
    (tmp / "gates.yaml").write_text(GATES)
    url = f"sqlite:///{tmp / 'history.sqlite'}"
    proc = suite(tmp, url, "--bench-gate", "-rA")  # the first run: nothing to compare, the gate items pass
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "PASSED benchmark/test_cases.py::test_gate[g_abs-cpu-dynamic]" in proc.stdout, proc.stdout[-2000:]
    with open_store(url) as store:
        first = store.run(1)
        machine = {**first.machine_info, "fingerprint": first.machine}  # the same series
        recorded = store.results(1)
        assert all([p.status for p in r.processes] == ["ok"] * len(PROCESS_SPREAD) for r in recorded), (
            "measured in worker processes"
        )
        for factor in RUN_FACTORS:
            run_id = store.begin_run(MachineDescription.of(machine), RunDescription.of({"trigger": "local"}))
            store.add_results(run_id, [replay(r, factor) for r in recorded])
            store.finish_run(run_id, "complete")
    return tmp, url


def replay(result: CaseResult, factor: float) -> CaseResult:
    """`result` recorded again at `factor` times its run value, its processes at PROCESS_SPREAD
    around that (each process's rounds scaled with it)."""
    level = statistics.median(p.value for p in result.processes) * factor
    processes = [
        dataclasses.replace(p, value=p.value * k, samples=tuple(x * k for x in p.samples))
        for p, spread in zip(result.processes, PROCESS_SPREAD, strict=True)
        for k in [level * spread / p.value]
    ]
    samples, stats = summarize_processes(processes)
    return dataclasses.replace(
        result, result_id=None, run_id=None, processes=processes, samples=samples, stats=stats
    )


def suite(tmp: Path, url: str, *args: str, slow: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "FLAGS_check_nan_inf": "1" if slow else "0"}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "benchmark/",
        "-p",
        "no:cacheprovider",
        "-q",
        "--bench-quick",
        "--bench-config",
        str(tmp / "cases.yaml"),
        "--bench-db",
        url,
        "--bench-json",
        str(tmp / "s.json"),
        "--bench-gates",
        str(tmp / "gates.yaml"),
        *args,
    ]
    return subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300)


def gate(tmp: Path, url: str, *args: str, gates: Path | None = None) -> subprocess.CompletedProcess:
    """`benchmark gate --db URL --gates GATES ARGS` in a process of its own, as a CI job runs it."""
    cmd = [sys.executable, "-m", "benchmark.cli", *gate_args(tmp, url, *args, gates=gates)]
    return subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=120)


def gate_args(tmp: Path, url: str, *args: str, gates: Path | None = None) -> list[str]:
    return ["gate", "--db", url, "--gates", str(gates or tmp / "gates.yaml"), *args]


@pytest.fixture
def gate_here(capsys):
    """`benchmark gate` in this process (the command closes the history it reads before it
    returns): (exit status, stdout, stderr)."""

    def run(tmp: Path, url: str, *args: str, gates: Path | None = None) -> tuple[int, str, str]:
        capsys.readouterr()
        code = cli.main(gate_args(tmp, url, *args, gates=gates))
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.mark.slow
def test_gate_passes_a_steady_history_then_fails_exactly_the_regressed_case(history, gate_here):
    tmp, url = history
    code, out, err = gate_here(tmp, url, "--run", "latest")
    assert code == 0 and "gate: PASS" in out, out + err
    assert "history: 11 runs" in gate_here(tmp, url, "--all")[1]

    first = suite(tmp, url, "--bench-gate", "-rA", slow=True)  # one slow run is not yet a regression
    assert first.returncode == 0, first.stdout[-3000:]
    assert "PASSED benchmark/test_cases.py::test_gate[g_abs-cpu-dynamic]" in first.stdout
    second = suite(tmp, url, "--bench-gate", "-rA", slow=True)
    assert second.returncode == 1, second.stdout[-3000:]
    out = second.stdout
    assert "FAILED benchmark/test_cases.py::test_gate[g_abs-cpu-dynamic]" in out
    assert "PASSED benchmark/test_cases.py::test_gate[g_empty-cpu-static]" in out
    assert "PASSED benchmark/test_cases.py::test_case[g_abs-cpu-dynamic]" in out
    assert "REGRESSION" in out and "online detector" in out

    # the one gate of this file in its own process
    judged = gate(tmp, url, "--run", "latest", "--format", "json")
    assert judged.returncode == 1, judged.stderr
    decisions = {d["case_id"]: d for d in json.loads(judged.stdout)["decisions"]}
    assert decisions["g_abs"]["verdict"] == "regression" and decisions["g_abs"]["effect"] > 3.0
    assert decisions["g_abs"]["change_run_id"] == 13, "the change is placed at the first slow run"
    # The empty program is not slowed, so it must not fail. Its history is run 1 replayed: when
    # load slowed run 1 (in one CI run, by 4x or more), the later runs are judged an improvement.
    assert decisions["g_empty"]["verdict"] != "regression" and not decisions["g_empty"]["failing"]

    # an A/B against run 12: the same regression, which on CPU wall time does not block there (the
    # re-measurement --bench-gate made was judged against the history, not against run 12)
    code, out, _ = gate_here(tmp, url, "--run", "latest", "--baseline", "12")
    assert code == 0 and "REGRESSION   g_abs [cpu dynamic]" in out and "baseline: run 12" in out
    assert "does not block on cpu" in out


def test_gate_errors_exit_2_and_a_first_run_passes(history, gate_here):
    tmp, url = history
    code, out, _ = gate_here(tmp, url, "--run", "1")  # nothing to compare yet: passes with a notice
    assert code == 0 and "notice: recorded 2 series; nothing to compare yet" in out
    code, _, err = gate_here(tmp, url, "--run", "999")
    assert code == 2 and "there is no run 999" in err
    bad = tmp / "bad.yaml"
    bad.write_text("defaults: {metric: speed}\n")
    code, _, err = gate_here(tmp, url, gates=bad)
    assert code == 2 and "'defaults.metric'" in err


def test_bench_gate_needs_the_store(tmp_path):
    (tmp_path / "cases.yaml").write_text(CONFIG)
    (tmp_path / "gates.yaml").write_text(GATES)
    proc = suite(tmp_path, "sqlite:///unused", "--bench-gate", "--bench-no-store")
    assert proc.returncode != 0 and "cannot run with --bench-no-store" in proc.stdout + proc.stderr
