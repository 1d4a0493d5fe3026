"""A corrupted worker can do nothing (issue 44): a worker confines itself with Landlock and seccomp
after the framework import, before its first case (`benchmark.execution.confine`). Each rule is
shown by a real worker running hostile code through the test-only hook (`BENCHMARK_WORKER_TEST_HOOK`,
run right after the confinement) and failing at exactly that rule; threads and the framework still
work. Needs Linux with Landlock (ABI >= 1) and seccomp; this machine's kernel has ABI 7."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pytest

from benchmark.execution import confine
from benchmark.execution.workers import Worker
from benchmark.runners.worker import TEST_HOOK_ENV

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or confine.landlock_abi() < 1, reason="needs Linux with Landlock enabled"
)

EPERM = "PermissionError: [Errno 1] Operation not permitted"  # seccomp's answer
EACCES = "PermissionError: [Errno 13] Permission denied"  # Landlock's


def hostile(tmp_path: Path, code: str, **env: str) -> dict:
    """The ready record of a confined worker that ran `code` right after confining itself."""
    hook = tmp_path / "hook.py"
    hook.write_text(code)
    worker = Worker(confine=True, env={**os.environ, **env, TEST_HOOK_ENV: str(hook)})
    try:
        assert worker.wait_ready(), "the worker did not start"
        return worker.ready
    finally:
        worker.close()


def test_the_worker_says_what_holds(tmp_path):
    ready = hostile(tmp_path, "pass")
    assert ready["hook"] == "ok"
    landlock, seccomp = ready["confined"]
    assert landlock.startswith(f"landlock ABI {confine.landlock_abi()}: filesystem")
    assert seccomp == "seccomp: no exec, no new process, no ptrace, no socket but AF_UNIX"


def test_no_execve(tmp_path):
    assert hostile(tmp_path, "import os\nos.execv('/bin/true', ['true'])")["hook"] == EPERM


def test_no_new_process(tmp_path):
    assert hostile(tmp_path, "import os\nif os.fork() == 0:\n    os._exit(0)")["hook"] == EPERM
    # subprocess: the fork (or vfork/clone) is refused before anything runs
    assert hostile(tmp_path, "import subprocess\nsubprocess.run(['/bin/true'])")["hook"] == EPERM


@pytest.mark.parametrize("family", ["AF_INET", "AF_INET6", "AF_PACKET", "AF_NETLINK"])
def test_no_network_socket(tmp_path, family):
    code = f"import socket\nsocket.socket(socket.{family}, socket.SOCK_DGRAM if '{family}' != 'AF_PACKET' else socket.SOCK_RAW)"
    assert hostile(tmp_path, code)["hook"] == EPERM


def test_writes_only_in_its_scratch_directory(tmp_path):
    outside = tmp_path / "planted.txt"
    ready = hostile(tmp_path, f"open({str(outside)!r}, 'w').write('x')")
    assert ready["hook"] == f"{EACCES}: {str(outside)!r}"
    assert not outside.exists()
    inside = "import os, tempfile\np = os.path.join(os.environ['TMPDIR'], 'a')\nopen(p, 'w').write('x')\ntempfile.TemporaryFile().write(b'y')"
    assert hostile(tmp_path, inside)["hook"] == "ok"


def test_no_read_of_the_history(tmp_path):
    db = tmp_path / "results" / "history.sqlite"
    db.parent.mkdir()
    with sqlite3.connect(db) as c:
        c.execute("create table run (id integer)")
    code = f"open({str(db)!r}, 'rb').read(16)"
    assert hostile(tmp_path, code)["hook"] == f"{EACCES}: {str(db)!r}"


def test_no_read_of_the_runners_home(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("secret")
    code = "import os\nopen(os.path.expanduser('~/.ssh/id_ed25519')).read()"
    assert hostile(tmp_path, code, HOME=str(home))["hook"].startswith(EACCES)
    assert hostile(tmp_path, "import os\nos.listdir('/root')")["hook"] == f"{EACCES}: '/root'"


def test_no_secret_in_its_environment_or_its_parents(tmp_path):
    code = (
        "import os\n"
        "assert 'BENCH_TEST_SECRET_TOKEN' not in os.environ, 'in os.environ'\n"
        "assert b'BENCH_TEST_SECRET_TOKEN' not in open('/proc/self/environ', 'rb').read(), 'in /proc/self/environ'\n"
        "open(f'/proc/{os.getppid()}/environ', 'rb').read()\n"
    )
    assert hostile(tmp_path, code, BENCH_TEST_SECRET_TOKEN="s3cr3t")["hook"].startswith(EACCES)


def test_threads_and_the_framework_still_work(tmp_path):
    code = (
        "import threading\n"
        "import paddle\n"
        "out = []\n"
        "t = threading.Thread(target=lambda: out.append(float(paddle.ones([64, 64]).sum())))\n"
        "t.start(); t.join()\n"
        "assert out == [4096.0], out\n"
        "paddle.matmul(paddle.rand([256, 256]), paddle.rand([256, 256]))\n"
    )
    assert hostile(tmp_path, code)["hook"] == "ok"


def test_a_worker_without_the_option_is_not_confined(tmp_path):
    worker = Worker(confine=False)
    try:
        assert worker.wait_ready()
        assert "confined" not in worker.ready
    finally:
        worker.close()


def test_the_suites_workers_confine_themselves_unless_turned_off(monkeypatch):
    confined = Worker(memory_limit=8 * 1024**3)
    monkeypatch.setenv("BENCHMARK_CONFINE", "0")
    plain = Worker(memory_limit=8 * 1024**3)
    try:
        assert confined.wait_ready() and plain.wait_ready()
        assert len(confined.ready["confined"]) == 2 and "confined" not in plain.ready
    finally:
        confined.close()
        plain.close()
    assert confined.scratch and not Path(confined.scratch).exists()  # its scratch is removed


def test_the_filter_is_built_for_the_architectures_it_knows():
    assert len(confine.seccomp_program("x86_64")) % 8 == 0
    assert len(confine.seccomp_program("aarch64")) % 8 == 0
    assert confine.seccomp_program("riscv64") is None  # then the worker says so and goes on
