"""The worker's `--fork-per-request` mode (what the instruction-count workers run under callgrind),
natively, with real processes: each request is served by a fresh child forked after the framework
import, so no request sees what an earlier one changed; a child killed mid-request gives an error
record and the worker serves the next request; closing the requests ends the worker."""

from __future__ import annotations

import os
import signal
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from benchmark.config import load_paths
from benchmark.execution.workers import Worker

# A worker entry with one extra task: it counts the requests its process served (a module global)
# and, when asked, waits (to be killed mid-request).
ENTRY = textwrap.dedent(
    """
    import os, sys, time
    from benchmark.runners import worker

    SERVED = []

    def probe(case, params, options):
        SERVED.append(case.case_id)
        if params.get("mark"):  # the test waits for this file before it kills a process
            with open(params["mark"], "w") as f:
                f.write(str(os.getpid()))
        if params.get("wait"):
            time.sleep(float(params["wait"]))
        return {"status": "ok", "served_here": len(SERVED), "ppid": os.getppid()}

    worker.TASKS["probe"] = probe
    sys.exit(worker.main())
    """
)

CASE = """
cases:
  - name: tiny
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [2, 2]}}
    places: [cpu]
    modes: [dynamic]
"""


@pytest.fixture
def forked(tmp_path):
    script = tmp_path / "entry.py"
    script.write_text(ENTRY)
    (tmp_path / "tiny.yaml").write_text(CASE)
    cases, issues = load_paths([str(tmp_path / "tiny.yaml")])
    assert not issues and cases
    w = Worker(args=["--fork-per-request"], entry=(str(script),), cwd=str(tmp_path))
    assert w.wait_ready(timeout_s=120), "the worker never said it was ready"
    yield w, cases[0]
    w.close()


def test_every_request_is_served_by_a_fresh_child_of_the_worker(forked):
    worker, case = forked
    records = [worker.request("probe", case, timeout_s=60) for _ in range(3)]
    assert [r["status"] for r in records] == ["ok"] * 3, records
    # Each child saw only its own request: what the previous one appended is not there.
    assert [r["served_here"] for r in records] == [1, 1, 1]
    assert {r["ppid"] for r in records} == {worker.ready["pid"]}  # children of the worker ...
    assert len({r["pid"] for r in records}) == 3  # ... a new one each time
    assert worker.ready["pid"] not in {r["pid"] for r in records}


def test_the_ready_record_has_the_workers_startup_cpu_time_read_by_the_parent(forked):
    """The worker's ready line carries nothing timed (its JSON's size would shape the heap every
    forked child starts from); the parent adds the worker's CPU time as it reads the line."""
    worker, _ = forked
    cpu = worker.ready["cpu_s"]
    assert isinstance(cpu, float) and cpu > 0  # at least the framework's import
    later = psutil.Process(worker.ready["pid"]).cpu_times()
    assert cpu <= later.user + later.system


def wait_for_mark(mark: Path, timeout_s: float = 60.0) -> int:
    """The pid the serving child wrote to `mark` once inside its request."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if mark.exists() and mark.read_text():
            return int(mark.read_text())
        time.sleep(0.05)
    raise AssertionError("the child never started its request")


def gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.1)
    return False


def test_a_child_killed_mid_request_is_an_error_record_and_the_worker_goes_on(forked, tmp_path):
    worker, case = forked
    mark = tmp_path / "child.pid"
    killed: list[int] = []

    def kill_the_child() -> None:
        pid = wait_for_mark(mark)
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    t = threading.Thread(target=kill_the_child)
    t.start()
    record = worker.request("probe", case, {"wait": 30, "mark": str(mark)}, timeout_s=60)
    t.join()
    assert killed and killed[0] != worker.ready["pid"]
    assert record["status"] == "error"
    assert "killed by signal 9" in record["message"], record
    after = worker.request("probe", case, timeout_s=60)
    assert after["status"] == "ok" and after["served_here"] == 1, after
    assert worker.alive()


def test_closing_the_requests_ends_the_worker(forked):
    worker, case = forked
    pid = worker.ready["pid"]
    assert worker.request("probe", case, timeout_s=60)["status"] == "ok"
    worker.close(timeout_s=30)
    assert worker.proc.returncode == 0
    assert gone(pid)


def test_a_worker_killed_takes_its_forked_child_with_it(forked, tmp_path):
    worker, case = forked
    mark = tmp_path / "child.pid"
    seen: list[int] = []

    def kill_the_worker() -> None:
        seen.append(wait_for_mark(mark))
        worker.proc.kill()

    t = threading.Thread(target=kill_the_worker)
    t.start()
    record = worker.request("probe", case, {"wait": 60, "mark": str(mark)}, timeout_s=90)
    t.join()
    assert record["status"] == "error", record
    assert gone(seen[0]), "the forked child outlived its worker"
