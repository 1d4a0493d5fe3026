"""The rest of issue 44's list: `tolerance` validated (finite, non-negative, known keys); the two
import tracebacks are one line each; no run is written into a SQLite history that fails
`PRAGMA quick_check`."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmark.config import load_file
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.store import StoreError, open_store


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmark.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "tolerance, message",
    [
        ("{atol: .inf}", "atol: expected a finite non-negative number, got inf"),
        ("{rtol: .nan}", "rtol: expected a finite non-negative number, got nan"),
        ("{rtol: -0.1}", "rtol: expected a finite non-negative number, got -0.1"),
        ("{atl: 0.1}", "unknown key(s) ['atl']: expected rtol and/or atol"),
        ("{atol: yes}", "atol: expected a finite non-negative number, got True"),
    ],
)
def test_a_bad_tolerance_is_refused_by_validation(tmp_path, tolerance, message):
    path = tmp_path / "t.yaml"
    path.write_text(
        "cases:\n  - name: t\n    kind: op\n    op: paddle.abs\n    places: [cpu]\n"
        f"    inputs: {{x: {{shape: [4]}}}}\n    reference: numpy.abs\n    tolerance: {tolerance}\n"
    )
    (issue,) = load_file(path).issues
    assert (issue.case, issue.field, issue.line) == ("t", "tolerance", 8)
    assert message in issue.message


def test_a_good_tolerance_still_validates(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(
        "cases:\n  - name: t\n    kind: op\n    op: paddle.abs\n    places: [cpu]\n"
        "    inputs: {x: {shape: [4]}}\n    reference: numpy.abs\n    tolerance: {rtol: 0.01, atol: 0}\n"
    )
    loaded = load_file(path)
    assert loaded.issues == [] and loaded.cases[0].spec.tolerance == {"rtol": 0.01, "atol": 0}


PYTEST_BENCHMARK = {
    "machine_info": {"node": "n", "processor": "x86_64", "machine": "x86_64", "python_implementation": "CPython",
                     "python_version": "3.11.0", "system": "Linux", "release": "6", "cpu": {"brand_raw": "cpu", "count": 2}},
    "commit_info": {"id": "abc", "time": "2026-01-01T00:00:00+00:00", "branch": "main", "dirty": False, "project": "p"},
    "benchmarks": [{"group": None, "name": "t", "fullname": "t.py::t", "params": None, "param": None,
                    "extra_info": {"benchmark_case": {"case_id": "a", "place": "cpu", "mode": "dynamic"}},
                    "options": {}, "stats": {"min": 1.0, "max": 1.0, "mean": 1.0, "stddev": 0.0, "rounds": 1,
                                             "median": 1.0, "iqr": 0.0, "q1": 1.0, "q3": 1.0, "iqr_outliers": 0,
                                             "stddev_outliers": 0, "outliers": "0;0", "ld15iqr": 1.0, "hd15iqr": 1.0,
                                             "ops": 1.0, "total": 1.0, "data": [1.0], "iterations": 1}}],
    "datetime": "2026-01-01T00:00:00+00:00",
    "version": "4.0.0",
}  # fmt: skip


def test_a_pytest_benchmark_file_with_a_partial_case_is_one_line(tmp_path):
    """extra_info.benchmark_case with only case_id, place and mode was a TypeError traceback."""
    (tmp_path / "pb.json").write_text(json.dumps(PYTEST_BENCHMARK))
    proc = run("import", "--db", f"sqlite:///{tmp_path / 'h.sqlite'}", "pb.json", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.endswith(
        "benchmarks[0] ('t.py::t'): extra_info.benchmark_case: missing name, kind, config_hash, config (a result "
        "the harness wrote has them: name, kind and config_hash strings, config an object)"
    ), line


@pytest.mark.parametrize("depth", [100_000, 500])
def test_a_deeply_nested_legacy_file_is_one_line(tmp_path, depth):
    """A legacy config nested 100,000 deep was a RecursionError traceback."""
    (tmp_path / "deep.json").write_text(
        '[{"op": "abs", "param_info": ' + '{"a": ' * depth + "1" + "}" * depth + "}]"
    )
    proc = run("import-legacy", "deep.json", "--out", "out", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()
    assert (
        line.startswith("benchmark import-legacy: error: deep.json: nested ")
        and "not a legacy config" in line
    )


def test_no_run_goes_into_a_history_that_fails_quick_check(sqlite_url, machine, make_result):
    path = Path(sqlite_url.removeprefix("sqlite:///"))
    with open_store(sqlite_url) as store:
        run_id = store.begin_run(
            MachineDescription.of(machine), RunDescription.of({"started_at": time.time()})
        )
        store.add_results(run_id, [make_result(f"op.case{i}", samples=[1e-3] * 200) for i in range(200)])
        store.finish_run(run_id)
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    last = len(data) // page - 1  # a page of results: corrupt it, keep the header and the schema
    data[last * page + 8 : last * page + 200] = b"\xff" * 192
    path.write_bytes(bytes(data))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with open_store(sqlite_url) as store, pytest.raises(StoreError, match="fails SQLite's quick_check"):
        store.begin_run(MachineDescription.of(machine), RunDescription.of({"started_at": time.time()}))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # nothing written, nothing lost


# --- the cost budget of a data-only pull request (validate --budget) ---------------------------


def test_validate_refuses_cases_over_the_budget_naming_the_costliest(tmp_path):
    """The issue's costly files: a `switch_case` of 6,000 branches (5 min 52 s on the GPU runner) and
    a big float16 positive-definite input (300 s per case before the limit killed it)."""
    branches = ",".join("[{op: paddle.abs,inputs: [x],out: r}]" for _ in range(6000))  # 228 KB
    (tmp_path / "switch.yaml").write_text(
        "cases:\n  - name: sw\n    kind: program\n    places: [gpu]\n    modes: [static]\n    tags: [smoke]\n"
        "    feed: {x: {shape: [4]}, i: {shape: [1], dtype: int32, low: 0, high: 3}}\n"
        f"    ops: [{{op: paddle.static.nn.switch_case, inputs: [i], branches: [{branches}], out: y}}]\n"
        "    fetch: [y]\n"
    )
    (tmp_path / "pd.yaml").write_text(
        "cases:\n  - name: pd\n    kind: op\n    op: paddle.linalg.cholesky\n    places: [gpu]\n    tags: [smoke]\n"
        "    dtypes: [float16]\n    inputs: {x: {shape: [64, 2048, 2048], values: positive_definite}}\n"
    )
    for name, cost in (("switch.yaml", "722"), ("pd.yaml", "1110")):
        proc = run("validate", "--no-resolve", name, "--budget", "600", "--budget-tag", "smoke", cwd=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        (line,) = proc.stdout.splitlines()
        assert line.startswith(
            f"budget: the cases tagged 'smoke' would cost about {cost} s, over the budget of 600 s"
        )
        assert f"{name}:2)" in line  # the costliest case, with its file and line


def test_the_shipped_smoke_subset_is_within_the_workflows_budget(tmp_path):
    from benchmark.config import load_paths
    from benchmark.config.cost import estimate

    cases, issues = load_paths([Path(__file__).resolve().parents[1] / "configs"])
    assert issues == []
    total = sum(s for s, _ in estimate(cases, "smoke"))
    assert 0 < total < 600 / 4  # the budget leaves room for what a pull request adds
