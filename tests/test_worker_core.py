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
from benchmark.execution import cores, measure
from benchmark.execution.workers import Worker

CORES = cores.allowed()
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


def test_auto_prefers_the_highest_core_only_for_one_thread_and_several_cores():
    assert cores.candidates("auto", 1, {0, 1, 2, 3}) == [3, 2, 1, 0]
    assert cores.candidates("AUTO", 1, {2, 5}) == [5, 2]
    assert cores.candidates("auto", 4, {0, 1, 2, 3}) == []  # one core would serialize 4 threads
    assert cores.candidates("auto", 0, {0, 1}) == []  # threads left to the framework
    assert cores.candidates("auto", 1, {0}) == []  # nothing to choose
    assert cores.candidates("off", 1, {0, 1}) == []
    assert cores.candidates(" 2 ", 8, {0, 1, 2}) == [2]  # a number is taken as given


def test_a_core_the_process_may_not_use_or_a_word_is_refused_naming_what_was_expected():
    with pytest.raises(ValueError, match=r"--bench-pin 7: this process may run on core\(s\) 0, 1 only"):
        cores.candidates("7", 1, {0, 1})
    with pytest.raises(ValueError, match=r"--bench-pin 'first': expected auto, off or a core number"):
        cores.candidates("first", 1, {0, 1})


def test_runs_on_one_machine_claim_different_cores_and_a_third_goes_unpinned(tmp_path):
    """The claim is an flock per core: it conflicts between open files even in one process, so
    three claims here behave as three runs would."""
    first = cores.claim([1, 0], lock_dir=str(tmp_path))
    second = cores.claim([1, 0], lock_dir=str(tmp_path))
    third = cores.claim([1, 0], lock_dir=str(tmp_path))
    named = cores.claim([1], explicit=True, lock_dir=str(tmp_path))
    try:
        assert (first.core, second.core) == (1, 0) and first.note is second.note is None
        assert third.core is None
        assert third.note == "every core (1, 0) is claimed by another run on this machine: workers unpinned"
        assert named.core == 1 and named.note == "core 1 is also claimed by another run on this machine"
        first.release()
        again = cores.claim([1, 0], lock_dir=str(tmp_path))
        assert again.core == 1
        again.release()
    finally:
        for c in (first, second, third, named):
            c.release()


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


@needs_two
@pytest.mark.slow
def test_a_worker_pinned_once_ready_runs_with_every_thread_on_that_core(tmp_path):
    """`benchmark compare` pins its workers after their imports (cores.pin_process from the parent):
    the threads the import started and those started later all end on the one core."""
    core = min(CORES)
    (tmp_path / "pin.yaml").write_text(textwrap.dedent(CASES))
    (case,), _ = load_paths([str(tmp_path / "pin.yaml")])
    worker = Worker()
    try:
        assert worker.wait_ready() and worker.ready["cores"] == sorted(CORES)
        cores.pin_process(worker.ready["pid"], core)
        record = worker.trial(
            case, {"settings": measure.asdict(measure.MeasureSettings.quick())}, timeout_s=120
        )
        assert record.status == "ok", record.message
        threads = psutil.Process(worker.ready["pid"]).threads()
        assert len(threads) > 1
        assert {tuple(os.sched_getaffinity(t.id)) for t in threads} == {(core,)}
    finally:
        worker.close()


def _hold(core: int, lock_dir: str) -> cores.Claim:
    """Claim `core` for this test, in `lock_dir`, as another run on this machine would."""
    claim = cores.claim([core], lock_dir=lock_dir)
    assert claim.lock is not None, f"core {core} is already claimed in {lock_dir}"
    return claim


@pytest.mark.slow
def test_the_run_records_its_core_goes_unpinned_when_all_are_claimed_and_refuses_one_out_of_reach(tmp_path):
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(textwrap.dedent(CASES))
    summary = tmp_path / "summary.json"
    base = ["--bench-config", str(cfg), "--bench-quick", "--bench-no-store", "--bench-json", str(summary)]
    # The runs claim their cores in a temporary directory of this test's own (the lock files live in
    # the temporary directory), so that suites run by tests beside this one under pytest -n neither
    # hold the cores this test expects free nor see the ones it holds.
    locks = tmp_path / "locks"
    locks.mkdir()
    mine = {"TMPDIR": str(locks)}
    run_suite(*base, env_extra=mine)
    run = json.loads(summary.read_text())["run"]
    assert run["worker_core"] in CORES if len(CORES) > 1 else run["worker_core"] is None
    if len(CORES) > 1:  # claimed where this test looks
        assert (locks / cores.LOCK_NAME.format(core=run["worker_core"])).exists()
    # Every core claimed, as by other runs on this machine: the run goes unpinned and says so.
    held = [_hold(c, str(locks)) for c in sorted(CORES)]
    try:
        proc = run_suite(*base, env_extra=mine)
    finally:
        for claim in held:
            claim.release()
    run = json.loads(summary.read_text())["run"]
    if len(CORES) > 1:
        assert run["worker_core"] is None and "claimed by another run" in run["worker_core_note"]
        assert "benchmark: every core (" in proc.stdout, proc.stdout[-2000:]
    run_suite(*base, "--bench-pin", "off")
    assert json.loads(summary.read_text())["run"]["worker_core"] is None
    outside = max(CORES) + 1
    proc = run_suite(*base, "--bench-pin", str(outside), check=False)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("ERROR:")]
    assert f"--bench-pin {outside}: this process may run on core(s)" in line
