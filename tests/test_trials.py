"""Worker processes and interleaved trials (issue 11): the schedule, the run value, and the suite
end to end in real worker processes, including one killed with SIGKILL in the middle of a case."""

from __future__ import annotations

import json
import math
import os
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from benchmark.analysis.processes import summarize_processes
from benchmark.datamodel.result import CaseResult, process_entry
from benchmark.execution.measure import MeasureSettings
from benchmark.execution.replies import ChecksRecord, TrialRecord
from benchmark.execution.trials import plan_trials, schedule

PROJECT = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------------------ pure parts


def test_rounds_interleave_every_case_in_a_seeded_random_order():
    keys = [f"case{i}" for i in range(12)]
    rounds = schedule(keys, [3] * 12, seed=5)
    assert len(rounds) == 3
    for r, members in enumerate(rounds):
        assert sorted(k for k, _ in members) == sorted(keys)  # every case once per round
        assert {index for _, index in members} == {r}
    orders = [[k for k, _ in members] for members in rounds]
    assert orders != [keys] * 3  # permuted ...
    assert len({tuple(o) for o in orders}) > 1  # ... and differently in each round
    assert schedule(keys, [3] * 12, seed=5) == rounds  # the seed fixes the order
    assert schedule(keys, [3] * 12, seed=6) != rounds


def test_per_case_process_counts_decide_which_rounds_hold_a_case():
    rounds = schedule(["a", "b", "c"], [1, 3, 2], seed=0)
    assert [sorted(k for k, _ in r) for r in rounds] == [["a", "b", "c"], ["b", "c"], ["b"]]
    trials = [t for r in plan_trials([("a", "A", 1), ("b", "B", 3), ("c", "C", 2)], seed=0) for t in r]
    assert [t.order for t in trials] == list(range(6))
    assert {(t.key, t.index, t.processes) for t in trials if t.key == "b"} == {("b", i, 3) for i in range(3)}
    with pytest.raises(ValueError, match="at least one process"):
        schedule(["a"], [0], seed=0)


def test_the_run_value_is_the_median_of_the_process_values():
    entries = [
        process_entry(0, 11, 0, "ok", [1.0, 1.1, 1.2]),
        process_entry(1, 12, 4, "ok", [2.0, 2.0, 2.1, 9.0, 9.0]),
        process_entry(2, 13, 9, "ok", [1.5, 1.4, 1.6]),
        process_entry(3, 14, 12, "error", None, message="worker process died"),
    ]
    assert [e.value for e in entries] == [1.1, 2.1, 1.5, None]
    pooled, stats = summarize_processes(entries)
    assert len(pooled) == 11 and stats.rounds == 11
    assert stats.median == 1.5  # of the process values, not of the pooled samples (2.0)
    assert stats.processes == 3
    assert stats.between_cv == pytest.approx(statistics.stdev(math.log(v) for v in (1.1, 2.1, 1.5)))
    _, single = summarize_processes(entries[:1])
    assert single.processes == 1 and math.isnan(single.between_cv)
    # Older results and in-process measurement have no processes.
    assert (
        CaseResult.from_dict({**CaseResult("x", "x", "op", "cpu", "dynamic", {}, "h").to_dict()}).processes
        == []
    )


def test_processes_share_the_measurement_budget():
    base = MeasureSettings()
    per = base.per_process(3)
    assert per.max_time == pytest.approx(base.max_time / 3)
    assert per.min_rounds == math.ceil(base.min_rounds / 3)
    assert per.warmup_time == base.warmup_time / 2
    assert base.per_process(1) == base
    assert MeasureSettings.quick().per_process(5).min_rounds == 3


def test_a_case_may_set_its_process_count_and_an_unset_one_leaves_its_series_alone(tmp_path):
    from benchmark.config import load_file

    path = tmp_path / "c.yaml"
    case = "  - {name: c_%s, kind: op, op: paddle.abs, inputs: {x: {shape: [4]}}, places: [cpu]%s}\n"
    path.write_text("cases:\n" + case % ("a", "") + case % ("b", ", measure: {processes: 5}"))
    loaded = load_file(path)
    assert not loaded.issues
    a, b = loaded.cases
    assert "processes" not in a.config["measure"]  # unset: the config (and its hash) as before
    assert a.measure == {} and b.measure == {"processes": 5}
    path.write_text("cases:\n" + case % ("c", ", measure: {processes: 0}"))
    (issue,) = load_file(path).issues
    assert "processes" in str(issue)


def one_case(tmp_path):
    from benchmark.config import load_file

    path = tmp_path / "one.yaml"
    path.write_text(
        "cases:\n  - {name: one, kind: op, op: paddle.abs, inputs: {x: {shape: [4]}}, places: [cpu]}\n"
    )
    (case,) = load_file(path).cases
    return case


def test_a_trial_with_invalid_timings_is_an_error_never_a_number(tmp_path):
    from benchmark.execution.casetrials import CaseTrials
    from benchmark.execution.trials import Trial

    case = one_case(tmp_path)
    state = CaseTrials(case=case, result=CaseResult.for_case(case))
    trial = Trial(case=case, key="one", index=0, processes=2, round=0, order=0)
    reply = {"status": "ok", "samples": [1e-3, float("nan")], "pid": 7, "iterations": 3}
    assert state.add(trial, TrialRecord.from_reply(reply))
    result = state.finish()
    assert result.status == "error" and result.message == "invalid timing samples: 1 of 2 in trial 1"
    assert result.samples == [] and result.processes[0].samples == () and result.processes[0].pid == 7


def test_checks_after_timing_fail_or_err_the_case(tmp_path):
    from benchmark.execution.casetrials import CaseTrials
    from benchmark.execution.trials import Trial

    case = one_case(tmp_path)
    state = CaseTrials(case=case, result=CaseResult.for_case(case))
    for i in range(2):
        trial = Trial(case=case, key="one", index=i, processes=2, round=i, order=i)
        done = state.add(
            trial, TrialRecord.from_reply({"status": "ok", "samples": [2e-3, 2e-3, 2e-3], "pid": 10 + i})
        )
    assert done and state.finish().status == "ok"
    state.apply_checks(
        ChecksRecord.from_reply(
            {"status": "ok", "accuracy": {"reference": "numpy.abs", "status": "failed", "message": "x"}}
        )
    )
    assert state.result.status == "failed" and state.result.message == "accuracy vs numpy.abs: x"
    state.apply_checks(
        ChecksRecord.from_reply({"status": "error", "message": "worker process: died (exit status -11)"})
    )
    assert state.result.status == "error"
    assert state.result.message == "checks after timing: worker process died (exit status -11)"


# ------------------------------------------------------------------------------------------ end to end

CONFIG = """
cases:
  - name: t_abs
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [32, 32]}}
    places: [cpu]
  - name: t_exp
    kind: op
    op: paddle.exp
    inputs: {x: {shape: [32, 32]}}
    places: [cpu]
  - name: t_relu
    kind: op
    op: paddle.nn.functional.relu
    inputs: {x: {shape: [32, 32]}}
    places: [cpu]
    measure: {processes: 1}
  - name: t_prog
    kind: program
    feed: {x: {shape: [8, 8]}}
    ops: [{op: paddle.abs, inputs: [x], out: y}]
    fetch: [y]
    places: [cpu]
    modes: [static]
    measure: {processes: 3}
"""


def suite_command(tmp_path: Path, config: str, *args: str) -> list[str]:
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(textwrap.dedent(config))
    return [
        sys.executable,
        "-m",
        "pytest",
        "benchmark/",
        "-p",
        "no:cacheprovider",
        "--bench-config",
        str(cfg),
        "--bench-json",
        str(tmp_path / "summary.json"),
        *args,
    ]


def _no_constants(name: str):
    raise AssertionError(f"summary.json is not strict JSON: it holds a bare {name}")


def results_by_id(tmp_path: Path) -> tuple[dict, dict]:
    doc = json.loads((tmp_path / "summary.json").read_text(), parse_constant=_no_constants)
    return doc["run"], {r["case_id"]: r for r in doc["results"]}


@pytest.mark.slow
def test_suite_measures_each_case_in_interleaved_worker_processes(tmp_path):
    cmd = suite_command(tmp_path, CONFIG, "--bench-quick", "--bench-no-store", "--bench-processes", "2")
    proc = subprocess.run(
        cmd + ["--bench-seed", "11"], cwd=PROJECT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "4 passed" in proc.stdout
    assert "8 trials in 3 randomized interleaved round(s), seed 11" in proc.stdout
    assert "round 3/3 done" in proc.stdout
    run, results = results_by_id(tmp_path)
    assert run["trials"] == {"processes": 2, "seed": 11, "order": "randomized interleaved rounds"}
    counts = {case_id: len(r["processes"]) for case_id, r in results.items()}
    assert counts == {"t_abs": 2, "t_exp": 2, "t_relu": 1, "t_prog": 3}  # per-case setting honoured
    assert results["t_relu"]["stats"]["between_cv"] is None  # one process: no spread (null, not NaN)
    entries = [(p["order"], p["index"], case_id, p) for case_id, r in results.items() for p in r["processes"]]
    entries.sort()
    assert [e[0] for e in entries] == list(range(8))
    # Interleaved: every trial of round r runs before any of round r + 1; a process per round.
    assert [index for _, index, _, _ in entries] == [0, 0, 0, 0, 1, 1, 1, 2]
    pids = [{p["pid"] for _, index, _, p in entries if index == r} for r in range(3)]
    assert all(len(p) == 1 for p in pids) and len(set().union(*pids)) == 3
    assert os.getpid() not in set().union(*pids)
    for r in results.values():
        values = [p["value"] for p in r["processes"]]
        assert r["status"] == "ok" and all(p["status"] == "ok" for p in r["processes"])
        assert r["stats"]["median"] == pytest.approx(statistics.median(values))
        assert r["stats"]["processes"] == len(values)
        assert len(r["samples"]) == sum(len(p["samples"]) for p in r["processes"])
    # The order is the seed's schedule (the cases in config order; a shuffle depends only on the
    # seed and the number of cases), so the same seed gives the same order again.
    first = [case_id for _, index, case_id, _ in entries if index == 0]
    names = ["t_abs", "t_exp", "t_relu", "t_prog"]
    assert first == [names[i] for i, _ in schedule(range(4), [2, 2, 1, 3], 11)[0]]


def worker_start_cpu_s() -> float:
    """The CPU seconds (user + system) a worker's start costs on this machine: a process importing
    what a worker imports before its ready line (the framework, `runners.framework_available`)."""
    code = (
        "import resource\n"
        "from benchmark import runners\n"
        "runners.framework_available()\n"
        "usage = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(usage.ru_utime + usage.ru_stime)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, check=True
    )
    return float(out.stdout.split()[-1])


SLOW = """
cases:
  - name: k_first
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [16, 16]}}
    places: [cpu]
    measure: {max_time: 0.1, warmup_time: 0.05}
  - name: k_slow
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [32, 32]}}
    places: [cpu]
    measure: {max_time: 30, warmup_time: 0.05, max_rounds: 100000}
  - name: k_last
    kind: op
    op: paddle.exp
    inputs: {x: {shape: [16, 16]}}
    places: [cpu]
    measure: {max_time: 0.1, warmup_time: 0.05}
"""


@pytest.mark.slow
def test_a_killed_worker_fails_its_case_and_the_suite_goes_on(tmp_path):
    """SIGKILL the worker while it times the slow case: that case is an error naming the trial,
    the other cases finish, and every result is in the history."""
    db = f"sqlite:///{tmp_path / 'history.sqlite'}"
    start_cpu_s = worker_start_cpu_s()
    cmd = suite_command(tmp_path, SLOW, "--bench-processes", "2", "--bench-db", db, "--bench-seed", "3")
    proc = subprocess.Popen(cmd, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    parent = psutil.Process(proc.pid)
    log = tmp_path / "workers.log"
    killed = None
    deadline = time.monotonic() + 300
    try:
        # The worker prints nothing we can rely on; wait until it is busy timing k_slow, the first
        # trial of round 1 (seed 3): its CPU time has passed what this machine's worker start (the
        # framework import, measured above, not assumed) costs by half again and 0.5 s, which is
        # burnt timing k_slow (30 s of it), whatever the machine's speed.
        busy_after = 1.5 * start_cpu_s + 0.5
        while killed is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            for child in parent.children():
                try:
                    busy = (
                        "benchmark.runners.worker" in child.cmdline()
                        and sum(child.cpu_times()[:2]) > busy_after
                    )
                except psutil.NoSuchProcess:  # a short-lived child (e.g. a shell) that just exited
                    continue
                if busy:
                    child.send_signal(signal.SIGKILL)
                    killed = child.pid
                    break
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert killed is not None, "no worker was seen running"
    assert log.exists()
    assert proc.returncode == 1, out[-3000:]
    _, results = results_by_id(tmp_path)
    slow = results["k_slow"]
    assert slow["status"] == "error"
    assert slow["message"].startswith("worker process died (exit status -9) during trial 1 of 2"), slow[
        "message"
    ]
    assert [(p["status"], p["pid"]) for p in slow["processes"]] == [("error", killed)]
    assert slow["processes"][0]["samples"] == []
    assert results["k_first"]["status"] == results["k_last"]["status"] == "ok"
    assert [len(results[c]["processes"]) for c in ("k_first", "k_last")] == [2, 2]
    assert "FAILED benchmark/test_cases.py::test_case[k_slow-cpu-dynamic]" in out
    from benchmark.store import open_store

    with open_store(db) as store:
        run = store.run(store.latest_run_id())
        stored = {r.case_id: r for r in store.results(run.id)}
    assert run.status == "complete"
    assert set(stored) == {"k_first", "k_slow", "k_last"}
    assert stored["k_slow"].status == "error" and stored["k_slow"].processes[0].status == "error"
    assert [p.pid for p in stored["k_first"].processes] == [p["pid"] for p in results["k_first"]["processes"]]
    assert stored["k_first"].stats.median == pytest.approx(results["k_first"]["stats"]["median"])


@pytest.mark.slow
def test_processes_zero_measures_in_the_pytest_process(tmp_path):
    cmd = suite_command(tmp_path, CONFIG, "--bench-quick", "--bench-no-store", "--bench-processes", "0")
    proc = subprocess.run(
        cmd + ["-k", "t_abs or t_prog"], cwd=PROJECT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "worker processes" not in proc.stdout
    assert "Name (time in" not in proc.stdout  # one results table: pytest-benchmark keeps quiet
    run, results = results_by_id(tmp_path)
    assert run["trials"] == {"processes": 0, "order": "in-process"}
    assert set(results) == {"t_abs", "t_prog"}
    assert all(r["status"] == "ok" and r["processes"] == [] and r["samples"] for r in results.values())
