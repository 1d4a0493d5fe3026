"""The suite's pytest plugin as installed (entry point pytest11 `paddle_benchmark`): it acts only
in sessions that collect benchmark/test_cases.py, from the checkout or from elsewhere, and other
plugins add run metadata through its hook (stored with the run, real SQLite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmark.plugin.session import default_json_path
from benchmark.store import open_store

PROJECT = Path(__file__).resolve().parents[1]

CASES = """
cases:
  - name: plug_abs
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [8, 8]}}
    places: [cpu]
    modes: [dynamic]
"""

META_PLUGIN = """
def pytest_bench_update_run_metadata(config, metadata):
    metadata["kernel_branch"] = "exp-1"
    metadata["patches"] = [1, 2]
"""

BAD_META_PLUGIN = """
def pytest_bench_update_run_metadata(config, metadata):
    metadata["when"] = object()
"""


def pytest_run(cwd: Path, *args: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}  # with $PYTEST_ADDOPTS from tests/conftest.py
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def test_the_plugin_is_inert_in_sessions_without_the_suite(tmp_path):
    (tmp_path / "test_other.py").write_text("def test_one():\n    assert True\n")
    # A config path that does not exist: loading configs would stop the session; inert, it is unused.
    proc = pytest_run(tmp_path, "test_other.py", "-q", "--bench-config", str(tmp_path / "missing.yaml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    assert "benchmark" not in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists(), "no summary, worker log or history written"
    # The checkout named, its suite directory --ignore'd: not collected, so inert too (no config error).
    ignore = [f"--ignore={PROJECT / d}" for d in ("benchmark", "tests", "tools", "eval", "benchmarks")]
    proc = pytest_run(tmp_path, str(PROJECT), *ignore, "--collect-only", "--bench-config", "missing.yaml")
    assert proc.returncode == 5 and "no tests collected" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_the_suite_is_collected_from_another_directory(tmp_path):
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(textwrap.dedent(CASES))
    proc = pytest_run(
        tmp_path, str(PROJECT / "benchmark"), "--collect-only", "-q", "--bench-config", str(cfg)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "benchmark/test_cases.py::test_case[plug_abs-cpu-dynamic]" in proc.stdout
    assert "1 test collected" in proc.stdout
    # The file itself, from the checkout, is the suite too.
    proc = pytest_run(PROJECT, "benchmark/test_cases.py", "--collect-only", "-q", "--bench-config", str(cfg))
    assert proc.returncode == 0 and "1 test collected" in proc.stdout, proc.stdout + proc.stderr


def test_another_plugin_adds_run_metadata_that_is_stored_with_the_run(tmp_path):
    (tmp_path / "meta_plugin.py").write_text(META_PLUGIN)
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(textwrap.dedent(CASES))
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    summary = tmp_path / "summary.json"
    args = ["benchmark/", "-q", "-p", "meta_plugin", "--bench-config", str(cfg), "--bench-quick"]
    args += ["--bench-processes", "0", "--bench-db", url, "--bench-json", str(summary)]
    proc = pytest_run(PROJECT, *args, pythonpath=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # Measured through pytest-benchmark's fixture (--bench-processes 0), still one results table.
    assert "benchmark summary" in proc.stdout and "Name (time in" not in proc.stdout
    expected = {"kernel_branch": "exp-1", "patches": [1, 2]}
    assert json.loads(summary.read_text())["run"]["metadata"] == expected
    with open_store(url) as store:
        (run,) = store.runs()
        assert store.run(run.id).extra["metadata"] == expected


def test_a_run_kept_out_of_the_history_leaves_the_stored_runs_summary_alone(tmp_path):
    """--bench-no-store without --bench-json writes results/no-store/summary.json and says so: the
    last stored run's results/summary.json is not overwritten (issue 45)."""
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(textwrap.dedent(CASES))
    args = ["benchmark/", "-q", "--bench-config", str(cfg), "--bench-quick", "--bench-processes", "0"]
    proc = pytest_run(PROJECT, *args, "--bench-no-store")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"results: {Path('results', 'no-store', 'summary.json')}" in proc.stdout.splitlines()
    assert default_json_path(PROJECT, no_store=False) == PROJECT / "results" / "summary.json"


@pytest.mark.slow
def test_metadata_that_is_not_json_stops_the_session_with_one_line(tmp_path):
    (tmp_path / "bad_meta_plugin.py").write_text(BAD_META_PLUGIN)
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(textwrap.dedent(CASES))
    args = ["benchmark/", "-q", "-p", "bad_meta_plugin", "--bench-config", str(cfg), "--bench-no-store"]
    args += ["--bench-json", str(tmp_path / "summary.json")]
    proc = pytest_run(PROJECT, *args, pythonpath=tmp_path)
    assert proc.returncode == 4, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if "pytest_bench_update_run_metadata" in line]
    assert len(lines) == 1 and "not JSON" in lines[0], proc.stderr
    assert not (tmp_path / "summary.json").exists()


BROKEN = """
  - name: plug_bad
    kind: op
    op: paddle.reshape
    inputs: {x: {shape: [4, 4]}}
    attrs: {shape: [3, 3]}
    places: [cpu]
"""


@pytest.mark.slow
def test_pytest_benchmark_options_the_suite_does_not_use_are_refused_in_one_line(tmp_path):
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(textwrap.dedent(CASES))
    args = ["benchmark/", "--collect-only", "-q", "--bench-config", str(cfg), "--benchmark-min-rounds=3"]
    proc = pytest_run(PROJECT, *args, "--benchmark-json", str(tmp_path / "b.json"), "--benchmark-sort=name")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("ERROR:")]
    assert "pytest-benchmark options not used by this suite: --benchmark-min-rounds (" in line
    assert "--benchmark-json (" in line and "--benchmark-sort (" in line


@pytest.mark.slow
def test_benchmark_disable_runs_each_case_once_untimed_and_records_nothing(tmp_path):
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(CASES + BROKEN)
    summary, db = tmp_path / "summary.json", tmp_path / "history.sqlite"
    args = ["benchmark/", "-q", "--bench-config", str(cfg), "--benchmark-disable"]
    proc = pytest_run(PROJECT, *args, "--bench-json", str(summary), "--bench-db", f"sqlite:///{db}")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "1 failed, 1 passed" in proc.stdout  # the broken config fails, the good one passes
    assert "FAILED benchmark/test_cases.py::test_case[plug_bad-cpu-dynamic]" in proc.stdout
    assert "benchmark: --benchmark-disable: 1 case(s) ran once, untimed; nothing recorded" in proc.stdout
    # The header says what the suite does, not pytest-benchmark's calibration defaults (unused here).
    proc = pytest_run(
        PROJECT, "benchmark/", "--collect-only", "--bench-config", str(cfg), "--benchmark-disable"
    )
    assert "benchmark suite: 2 case(s) selected, each run once, untimed" in proc.stdout, proc.stdout
    assert "(defaults:" not in proc.stdout
    assert not summary.exists() and not db.exists()
    # Nothing to judge or count: refused in one line.
    proc = pytest_run(PROJECT, *args, "--bench-gate", "--collect-only")
    assert proc.returncode == 4 and "--bench-gate cannot run with it" in proc.stderr, proc.stderr
