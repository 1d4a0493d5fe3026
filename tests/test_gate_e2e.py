"""The gate on a SQLite history of real results, and --bench-gate item outcomes of real suite runs.

The history is one real suite run and replays of its stored results through the store. The
regression is real: `FLAGS_check_nan_inf=1` makes paddle check every operator's output, which
slows the `abs` case many times over while an empty program (no operator) keeps its speed; the
case configs, and so the series, stay the same. Both slow runs are real suite runs: how much slower
`abs` gets depends on the machine and its load (44x to 500x here), and the detector takes a slow run
far beyond the one before it for an outlier, so a made-up first slow run would not do.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.store import open_store

PROJECT = Path(__file__).resolve().parents[1]
CONFIG = """
cases:
  - {name: g_abs, kind: op, op: paddle.abs, inputs: {x: {shape: [256, 256]}}, places: [cpu]}
  - {name: g_empty, kind: program, feed: {x: {shape: [8, 8]}}, ops: [], fetch: [x], places: [cpu], modes: [static]}
"""
GATES = "defaults: {min_effect: 1.0}\n"  # only a doubling counts: the machine is shared and noisy


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """Run 1 is a real suite run; runs 2..12 replay its stored results (processes included) through
    the store, as unchanged code would record them: the history gate needs 12 runs, and 11 more
    real suite runs (about 3 minutes on 2 cores) would test nothing the replays do not."""
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
        recorded = [dataclasses.replace(r, result_id=None, run_id=None) for r in store.results(1)]
        assert all(len(r.processes) >= 2 for r in recorded), "measured in worker processes"
        for _ in range(11):
            run_id = store.begin_run(machine, {"trigger": "local"})
            store.add_results(run_id, recorded)
            store.finish_run(run_id, "complete")
    return tmp, url


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
    """`benchmark gate --db URL --gates GATES ARGS` in a process of its own, as a CI job runs it
    (in this process, a read-only history the command leaves open would outlive it, across the
    suite runs that write the file)."""
    cmd = [
        sys.executable,
        "-m",
        "benchmark.cli",
        "gate",
        "--db",
        url,
        "--gates",
        str(gates or tmp / "gates.yaml"),
    ]
    return subprocess.run([*cmd, *args], cwd=PROJECT, capture_output=True, text=True, timeout=120)


def test_gate_passes_a_steady_history_then_fails_exactly_the_regressed_case(history):
    tmp, url = history
    steady = gate(tmp, url, "--run", "latest")
    assert steady.returncode == 0, steady.stdout + steady.stderr
    assert "gate: PASS" in steady.stdout
    assert "history: 11 runs" in gate(tmp, url, "--all").stdout

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

    judged = gate(tmp, url, "--run", "latest", "--json")
    assert judged.returncode == 1
    decisions = {d["case_id"]: d for d in json.loads(judged.stdout)["decisions"]}
    assert decisions["g_abs"]["verdict"] == "regression" and decisions["g_abs"]["effect"] > 1.0
    assert decisions["g_abs"]["change_run_id"] == 13, "the change is placed at the first slow run"
    assert decisions["g_empty"]["verdict"] in ("pass", "inconclusive")

    ab = gate(tmp, url, "--run", "latest", "--baseline", "12")
    assert (
        ab.returncode == 1
        and "REGRESSION   g_abs [cpu dynamic]" in ab.stdout
        and "baseline: run 12" in ab.stdout
    )


def test_gate_errors_exit_2_and_a_first_run_passes(history):
    tmp, url = history
    first = gate(tmp, url, "--run", "1")  # nothing to compare yet: passes with a notice
    assert first.returncode == 0 and "notice: recorded 2 series; nothing to compare yet" in first.stdout
    missing = gate(tmp, url, "--run", "999")
    assert missing.returncode == 2 and "there is no run 999" in missing.stderr
    bad = tmp / "bad.yaml"
    bad.write_text("defaults: {metric: speed}\n")
    proc = gate(tmp, url, gates=bad)
    assert proc.returncode == 2 and "'defaults.metric'" in proc.stderr


def test_bench_gate_needs_the_store(tmp_path):
    (tmp_path / "cases.yaml").write_text(CONFIG)
    (tmp_path / "gates.yaml").write_text(GATES)
    proc = suite(tmp_path, "sqlite:///unused", "--bench-gate", "--bench-no-store")
    assert proc.returncode != 0 and "cannot run with --bench-no-store" in proc.stdout + proc.stderr
