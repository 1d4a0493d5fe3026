"""`--bench-pin`: each timing worker, and every thread it starts, runs on one core (so that a
framework handing work between its threads does not wait for a wake-up on another core)."""

from __future__ import annotations

import json
import os
import textwrap

import psutil
import pytest
from suite_process import run_suite

from benchmark.config import load_paths
from benchmark.execution import measure
from benchmark.execution.workers import Worker

CORES = measure.allowed_cores()
needs_two = pytest.mark.skipif(len(CORES) < 2, reason="pinning needs 2 cores to choose from")

CASES = """
cases:
  - name: pin_static
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [16, 16]}}
    places: [cpu]
    modes: [static]
"""


def test_auto_takes_the_last_allowed_core_only_for_one_thread_and_several_cores():
    assert measure.worker_core("auto", 1, {0, 1, 2, 3}) == 3
    assert measure.worker_core("AUTO", 1, {2, 5}) == 5
    assert measure.worker_core("auto", 4, {0, 1, 2, 3}) is None  # one core would serialize 4 threads
    assert measure.worker_core("auto", 0, {0, 1}) is None  # threads left to the framework
    assert measure.worker_core("auto", 1, {0}) is None  # nothing to choose
    assert measure.worker_core("off", 1, {0, 1}) is None
    assert measure.worker_core(" 2 ", 8, {0, 1, 2}) == 2  # a number is taken as given


def test_a_core_the_process_may_not_use_or_a_word_is_refused_naming_what_was_expected():
    with pytest.raises(ValueError, match=r"--bench-pin 7: this process may run on core\(s\) 0, 1 only"):
        measure.worker_core("7", 1, {0, 1})
    with pytest.raises(ValueError, match=r"--bench-pin 'first': expected auto, off or a core number"):
        measure.worker_core("first", 1, {0, 1})


@needs_two
@pytest.mark.slow
def test_a_pinned_worker_and_every_thread_it_started_run_on_that_core_only(tmp_path):
    core = max(CORES)
    (tmp_path / "pin.yaml").write_text(textwrap.dedent(CASES))
    (case,), issues = load_paths([str(tmp_path / "pin.yaml")])
    assert not issues
    worker = Worker(core=core)
    try:
        assert worker.wait_ready(), "the worker never said it was ready"
        assert worker.ready["cores"] == [core]
        record = worker.trial(
            case, {"settings": measure.asdict(measure.MeasureSettings.quick())}, timeout_s=120
        )
        assert record.status == "ok", record.message
        threads = psutil.Process(worker.ready["pid"]).threads()
        assert len(threads) > 1  # the static executor started threads of its own
        assert {tuple(os.sched_getaffinity(t.id)) for t in threads} == {(core,)}
    finally:
        worker.close()
    unpinned = Worker()
    try:
        assert unpinned.wait_ready() and unpinned.ready["cores"] == sorted(CORES)
    finally:
        unpinned.close()


@pytest.mark.slow
def test_the_run_records_the_core_and_a_core_out_of_reach_stops_the_session_in_one_line(tmp_path):
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(textwrap.dedent(CASES))
    summary = tmp_path / "summary.json"
    base = ["--bench-config", str(cfg), "--bench-quick", "--bench-no-store", "--bench-json", str(summary)]
    run_suite(*base)
    expected = max(CORES) if len(CORES) > 1 else None
    assert json.loads(summary.read_text())["run"]["worker_core"] == expected
    run_suite(*base, "--bench-pin", "off")
    assert json.loads(summary.read_text())["run"]["worker_core"] is None
    outside = max(CORES) + 1
    proc = run_suite(*base, "--bench-pin", str(outside), check=False)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("ERROR:")]
    assert f"--bench-pin {outside}: this process may run on core(s)" in line
