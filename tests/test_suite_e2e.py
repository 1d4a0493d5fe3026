"""`pytest benchmark/` end to end, in subprocesses started together, on tiny configs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]

TINY = """
cases:
  - name: tiny_abs
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [64, 64]}}
    backward: [false, true]
    places: [cpu, gpu]
    modes: [dynamic, static]
    tags: [smoke]
  - name: tiny_prog
    kind: program
    feed: {x: {shape: [8, 8]}}
    ops: [{op: paddle.abs, inputs: [x], out: y}]
    fetch: [y]
    places: [cpu]
    modes: [static]
    tags: [other]
  - name: tiny_lstm
    kind: model
    model: lstm
    args: {batch_size: 2, seq_len: 3, input_size: 4, hidden_size: 8}
    step: infer
    places: [cpu]
    tags: [other]
  - name: tiny_bad
    kind: op
    op: paddle.reshape
    inputs: {x: {shape: [4, 4]}}
    attrs: {shape: [3, 3]}
    places: [cpu]
    tags: [broken]
"""


DIAG = """
cases:
  - name: right_ref
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [32, 32]}}
    backward: true
    reference: numpy.abs
    places: [cpu]
  - name: wrong_ref
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [32, 32]}}
    reference: numpy.negative
    places: [cpu]
  - name: prog
    kind: program
    feed: {x: {shape: [16, 16]}}
    ops: [{op: paddle.abs, inputs: [x], out: y}]
    fetch: [y]
    places: [cpu]
    modes: [static]
"""


def run_suite(tmp_path: Path, *args: str, config: str = TINY) -> tuple[subprocess.CompletedProcess, Path]:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(textwrap.dedent(config))
    out = tmp_path / "summary.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "benchmark/",
        "-p",
        "no:cacheprovider",
        "--bench-config",
        str(cfg),
        "--bench-quick",
        "--bench-json",
        str(out),
        "--bench-no-store",
        "--bench-processes",
        "1",  # the flows, not the between-process statistics (tests/test_trials.py), are tested here
        *args,
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=600, env=env)
    return proc, out


BAD = "cases:\n  - {name: a, kind: op, op: os.system, inputs: {x: {shape: [2]}}}\n"
SHARD = ["--bench-tags", "all", "--bench-place", "cpu", "--collect-only", "-q"]
RUNS = {  # name: (config, arguments); every suite run of this file
    "every_tag": (TINY, ["--bench-tags", "all", "-rA"]),
    "selected": (TINY, ["--bench-tags", "smoke,other", "-k", "not tiny_abs", "-m", "not model"]),
    "bad_config": (BAD, []),
    "shard_1": (TINY, [*SHARD, "--bench-shard=1/2"]),
    "shard_2": (TINY, [*SHARD, "--bench-shard=2/2"]),
    "diag": (DIAG, ["--bench-tags", "all", "--bench-profile"]),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The suite runs of RUNS, started together, three at a time (they are independent, and one
    run keeps about one core busy): name -> a Future of (the process, its summary path)."""
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {
            name: pool.submit(run_suite, tmp_path_factory.mktemp(name), *args, config=config)
            for name, (config, args) in RUNS.items()
        }
        yield futures
        for future in futures.values():
            future.cancel()


@pytest.fixture(scope="module")
def every_tag(runs) -> tuple[subprocess.CompletedProcess, dict]:
    """One run of every TINY case (the tests below only read it): the process and its summary."""
    proc, out = runs["every_tag"].result()
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, json.loads(out.read_text())


@pytest.mark.slow
def test_suite_runs_cases_and_writes_the_summary(every_tag):
    proc, doc = every_tag
    rows = {(r["case_id"], r["place"], r["mode"]): r for r in doc["results"]}
    ok = rows[("tiny_abs-bwd", "cpu", "static")]
    assert ok["status"] == "ok" and ok["unit"] == "s"
    assert len(ok["samples"]) == ok["stats"]["rounds"] >= 5
    assert ok["stats"]["min"] <= ok["stats"]["median"] <= ok["stats"]["max"]
    assert ok["stats"]["ci_low"] <= ok["stats"]["median"] <= ok["stats"]["ci_high"]
    assert ok["iterations"] >= 1 and ok["config_hash"] and ok["config"]["backward"] is True
    gpu = rows[("tiny_abs-fwd", "gpu", "dynamic")]
    assert gpu["status"] == "skipped" and "CPU-only build" in gpu["message"] and gpu["samples"] == []
    lstm = rows[("tiny_lstm-infer", "cpu", "dynamic")]
    assert lstm["throughput"] > 0 and lstm["throughput_unit"] == "samples/s" and lstm["batch_size"] == 2
    assert doc["run"]["status"] == "complete"
    assert doc["run"]["threads"]["OMP_NUM_THREADS"]
    assert "fingerprint" in doc["machine"]
    # the terminal summary prints median, spread and samples; throughput for the model
    assert "benchmark summary" in proc.stdout and "samples/s" in proc.stdout
    assert "skipped 4 case(s): place gpu" in proc.stdout


def test_a_failing_case_is_recorded_as_error_and_the_suite_goes_on(every_tag):
    proc, doc = every_tag
    assert proc.returncode == 1, proc.stdout[-3000:]
    rows = {r["case_id"]: r for r in doc["results"]}
    assert rows["tiny_bad"]["status"] == "error" and rows["tiny_bad"]["samples"] == []
    assert rows["tiny_bad"]["message"]
    assert rows["tiny_prog"]["status"] == "ok"
    failed = [line.split(" - ")[0] for line in proc.stdout.splitlines() if line.startswith("FAILED ")]
    assert failed == ["FAILED benchmark/test_cases.py::test_case[tiny_bad-cpu-dynamic]"], failed
    assert "PASSED benchmark/test_cases.py::test_case[tiny_lstm-infer-cpu-dynamic]" in proc.stdout


def test_tags_k_and_markers_each_narrow_the_selection(runs):
    """Tags keep tiny_abs, tiny_prog and tiny_lstm (not tiny_bad); -k drops tiny_abs by name; -m
    drops tiny_lstm by its kind marker: one case is left, and only it is measured."""
    proc, out = runs["selected"].result()
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert [r["case_id"] for r in json.loads(out.read_text())["results"]] == ["tiny_prog"]


def test_bad_config_fails_before_running_with_one_line(runs):
    proc, out = runs["bad_config"].result()
    assert proc.returncode != 0
    err = proc.stdout + proc.stderr
    assert "tiny.yaml:2: case 'a': field 'op': 'os.system' is not on the allowlist" in err
    assert "Traceback" not in err
    assert not out.exists()


@pytest.mark.slow
def test_shards_partition_the_cases(runs):
    ids = []
    for name in ("shard_1", "shard_2"):
        proc, _ = runs[name].result()
        assert proc.returncode in (0, 5), proc.stdout[-2000:]
        ids.append({line for line in proc.stdout.splitlines() if "test_case[" in line})
    assert not ids[0] & ids[1]
    assert len(ids[0] | ids[1]) == 7


@pytest.mark.slow
def test_reference_mismatch_fails_the_case_and_profile_pass_is_recorded(runs):
    proc, out = runs["diag"].result()
    assert proc.returncode == 1, proc.stdout[-3000:]
    rows = {r["case_id"]: r for r in json.loads(out.read_text())["results"]}
    right, wrong, prog = rows["right_ref-bwd"], rows["wrong_ref"], rows["prog"]
    assert right["status"] == "ok" and right["accuracy"]["status"] == "passed"
    assert set(right["accuracy"]["outputs"]) >= {"out", "grad_x"} or "grad_x" in right["accuracy"]["message"]
    assert wrong["status"] == "failed" and wrong["accuracy"]["status"] == "failed"
    assert "numpy.negative" in wrong["message"]
    assert wrong["samples"], "the timing of a case that fails its accuracy check is still kept"
    assert "FAILED benchmark/test_cases.py::test_case[wrong_ref-cpu-dynamic]" in proc.stdout
    ops = {row["name"]: row for row in right["profile"]["op_table"]}
    assert ops["abs"]["calls"] == ops["abs_grad"]["calls"] == right["profile"]["steps"]
    assert all(v["count"] == 0 for v in right["profile"]["copies"].values()), "no copies on a CPU build"
    parts = prog["profile"]["overhead"]["parts"]
    assert {"full", "empty", "resident"} <= set(parts)
