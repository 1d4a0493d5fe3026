"""Worker processes, parent side: spawn a worker, send it cases, collect one record per case.

A worker is `python -m benchmark.runners.worker` (optionally behind a command prefix such as
`valgrind --tool=callgrind ...`). The protocol is one JSON object per line:

* parent -> worker, on the worker's stdin: `{"task": NAME, "case": Case.to_json(), "params": {...}}`;
* worker -> parent, on a dedicated pipe (the worker's stdout and stderr stay free for whatever the
  framework prints): `{"status": "ok"|"error"|"skipped", ...task fields...}`, one per request, in
  order; first a `{"ready": true, "pid": ...}` line once the worker has imported what it needs
  (`Worker.ready`, to which the parent adds `cpu_s`: the worker's CPU time when the line arrived).

A worker serves any number of requests in the order sent, so one framework import is paid for many
cases; the parent stays native. A worker that dies or exceeds its timeout yields an error record
for the case in progress and is gone (`alive()` is False; start another for the next case).
Task implementations live in `benchmark.runners.worker.TASKS` (the framework side).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import psutil

from benchmark.datamodel.case import Case
from benchmark.execution.confine import worker_env
from benchmark.execution.replies import ChecksRecord, CountRecord, TrialRecord

READY_TIMEOUT_S = 600.0
WORKER_MODULE = "benchmark.runners.worker"


def gpu_limit_env(memory_limit: int) -> dict[str, str]:
    """The environment that caps what paddle's allocator takes from each GPU (read at import;
    without effect on a CPU-only build)."""
    return {"FLAGS_gpu_memory_limit_mb": str(max(1, int(memory_limit) // 1024**2))}


CONFINE_ENV = "BENCHMARK_CONFINE"  # "0": the suite's workers do not confine themselves (docs/sandbox.md)


class Worker:
    """One worker process. `request(task, case, params)` blocks until its record arrives."""

    def __init__(
        self,
        prefix: Sequence[str] = (),
        args: Sequence[str] = (),
        *,
        env: dict[str, str] | None = None,
        stderr=None,
        entry: Sequence[str] = ("-m", WORKER_MODULE),
        python: str | None = None,
        cwd: str | None = None,
        finalize_env: Callable[[list[str]], dict[str, str]] | None = None,
        memory_limit: int | None = None,
        core: int | None = None,
        confine: bool | None = None,
        writable: Sequence[str] = (),
    ):
        """`entry`: what the interpreter runs (default `-m benchmark.runners.worker`; a script that
        wraps `benchmark.runners.worker.main` works too, e.g. to inject work in a measurement test).
        `python`: the interpreter (default this one; another environment's, e.g. for an A/B of two
        framework builds, must be able to import `benchmark`). `cwd`: the worker's working directory.
        `finalize_env`: called with the worker interpreter's own argument list, returns the
        environment to start it with (e.g. padded to a fixed size, see benchmark.instructions.callgrind).
        `memory_limit`: bytes the worker may hold (`benchmark.sandbox.limits.worker_memory_limit`): its
        host data (RLIMIT_DATA, set by the worker on itself before the framework import) and, on
        CUDA places, what each GPU gives it (FLAGS_gpu_memory_limit_mb); None: no limit (the
        instruction-count worker, whose valgrind reserves its own address space).
        `core`: the one core the worker runs on, set by the worker on itself before the framework
        import, so that every thread it starts inherits it; None: the system places it.
        `confine`: the worker confines itself after the framework import (Landlock and seccomp,
        `benchmark.execution.confine`: no exec, no new process, no network socket, writes only in a
        scratch directory made for it here and in `writable`, reads only what the framework needs)
        and starts without the environment's secrets; None: every worker under a memory limit (the
        suite's timing and checks workers) unless $BENCHMARK_CONFINE is 0."""
        if confine is None:
            confine = memory_limit is not None and os.environ.get(CONFINE_ENV, "1") != "0"
        self.scratch: str | None = None
        if confine:
            self.scratch = tempfile.mkdtemp(prefix="bench-worker-")
            for w in writable:  # a rule needs the directory to exist when the worker confines itself
                os.makedirs(w, exist_ok=True)
            args = [
                *args,
                "--confine",
                self.scratch,
                *(a for w in writable for a in ("--confine-write", str(w))),
            ]
            env = {**worker_env(os.environ if env is None else env), "TMPDIR": self.scratch}
        if core is not None:
            args = [*args, "--cpu-core", str(int(core))]
        if memory_limit is not None:
            args = [*args, "--memory-limit", str(int(memory_limit))]
            env = {**(os.environ if env is None else env), **gpu_limit_env(memory_limit)}
        read_fd, write_fd = os.pipe()
        # The fd in a fixed width: which fd the pipe got must not change the worker's argument
        # strings (their sizes shift its heap layout, and with it an instruction count).
        client = [python or sys.executable, *entry, "--records-fd", f"{write_fd:04d}", *args]
        cmd = [*prefix, *client]
        if finalize_env is not None:
            env = finalize_env(client)
        self.command = cmd
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=stderr,  # None: the parent's own stdout/stderr (what the framework prints)
            stderr=stderr,
            pass_fds=(write_fd,),
            env=env,
            cwd=cwd,
            text=True,
        )
        os.close(write_fd)
        self._records = os.fdopen(read_fd, "r", encoding="utf-8")
        self._buffer = ""
        self.ready: dict[str, Any] | None = None
        self.requests = 0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read_line(self, deadline: float) -> str | None:
        """The next record line, or None when the worker died or the deadline passed."""
        fd = self._records.fileno()
        while "\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return None  # every writer closed: the worker exited
            self._buffer += chunk.decode("utf-8", errors="replace")
        line, self._buffer = self._buffer.split("\n", 1)
        return line

    def _ready(self, line: str) -> dict[str, Any]:
        """The ready record, with `cores`: the cores the worker may run on, and `cpu_s`: the worker's
        CPU seconds (user + system) so far, both read here rather than sent, so that the worker
        writes nothing that depends on a timing or the machine (its heap at that point is where
        every forked child starts from). Read from the pid the worker reports, which behind a
        command prefix need not be the one this class started. None where not readable."""

        ready = json.loads(line)
        try:
            process = psutil.Process(ready["pid"])
            times = process.cpu_times()
            ready["cpu_s"] = times.user + times.system
            ready["cores"] = sorted(process.cpu_affinity()) if hasattr(process, "cpu_affinity") else None
        except psutil.Error:
            ready["cpu_s"] = ready["cores"] = None
        return ready

    def _fail(self, why: str) -> dict[str, Any]:
        code = self.proc.poll()
        self.close()
        detail = f" (exit status {code})" if code not in (None, 0) else ""
        return {"status": "error", "message": f"worker process: {why}{detail}"}

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> bool:
        """Block until the worker has imported what it needs (its ready line); False when it died
        or did not get there in time (then `request` answers with an error record). Lets a caller
        start several workers at once and time nothing until all are ready."""
        if self.ready is None and self.alive():
            line = self._read_line(time.monotonic() + timeout_s)
            if line is not None:
                self.ready = self._ready(line)
        return self.ready is not None

    def request(
        self, task: str, case: Case, params: dict[str, Any] | None = None, *, timeout_s: float
    ) -> dict:
        """Send one case; its record, or an error record if the worker died or timed out."""
        failed = self.send(task, case, params)
        return failed if failed is not None else self.receive(timeout_s=timeout_s)

    def send(self, task: str, case: Case, params: dict[str, Any] | None = None) -> dict | None:
        """Send one request without waiting for its record (`receive` reads it); None when sent,
        else the error record of a worker that is not there to take it."""
        if not self.alive():
            return self._fail("not running")
        if not self.wait_ready():
            return self._fail("did not start (no ready line)")
        message = {"task": task, "case": case.to_json(), "params": params or {}}
        failed = self._write(json.dumps(message), "exited before the request")
        if failed is None:
            self.requests += 1
        return failed

    def release(self) -> None:
        """The go line a worker waits for at a barrier (`params["barrier"]` of a `time` request)."""
        self._write("go", "exited at the barrier")

    def _write(self, line: str, why: str) -> dict | None:
        stdin = self.proc.stdin
        assert stdin is not None  # opened with stdin=PIPE
        try:
            stdin.write(line + "\n")
            stdin.flush()
        except (BrokenPipeError, OSError):
            return self._fail(why)
        return None

    def receive(self, *, timeout_s: float) -> dict:
        """The next record of the request sent (or its barrier line, `{"barrier": true}`), or an
        error record if the worker died or did not answer within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        line = self._read_line(deadline)
        if line is None:
            if time.monotonic() < deadline:  # the records pipe closed: the worker is exiting
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=5.0)
            why = "died" if not self.alive() else f"no answer within {timeout_s:.0f} s, killed"
            return self._fail(why)
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            return self._fail(f"unreadable record {line[:200]!r}")

    def trial(self, case: Case, params: dict[str, Any] | None = None, *, timeout_s: float) -> TrialRecord:
        """One `time` request: the trial's record (a failure record if the worker died or timed out)."""
        return TrialRecord.from_reply(self.request("time", case, params, timeout_s=timeout_s))

    def checks(self, case: Case, params: dict[str, Any] | None = None, *, timeout_s: float) -> ChecksRecord:
        """One `checks` request: the checks' record (a failure record if the worker died or timed out)."""
        return ChecksRecord.from_reply(self.request("checks", case, params, timeout_s=timeout_s))

    def count(self, case: Case, params: dict[str, Any] | None = None, *, timeout_s: float) -> CountRecord:
        """One `instructions` request: the count's record (a failure record if the worker died)."""
        return CountRecord.from_reply(self.request("instructions", case, params, timeout_s=timeout_s))

    def close(self, timeout_s: float = 30.0) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                if self.proc.stdin is not None:
                    self.proc.stdin.close()  # end of requests: the worker exits
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._records.closed:
            self._records.close()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


class Workers:
    """The worker loop every caller shares (the suite's trials and checks, `benchmark compare`'s
    steps): named slots, each holding at most one live worker started on demand by `start(label)`
    and replaced when it died (the dead one closed). Every worker it started and did not close yet
    is kept, so `close()` ends them all and `kill()` kills them. As a context manager: closed on the
    way out, killed first when an exception (KeyboardInterrupt included) leaves the block."""

    def __init__(self, start: Callable[[str], Worker]):
        self._start = start
        self.current: dict[str, Worker] = {}
        self.open: list[Worker] = []  # started and not yet closed here

    def start(self, label: str = "", factory: Callable[[], Worker] | None = None) -> Worker:
        """A fresh worker in slot `label`, from `factory` when given (e.g. a first start that differs
        from a replacement), else from the slots' `start`."""
        worker = factory() if factory is not None else self._start(label)
        self.current[label] = worker
        self.open.append(worker)
        return worker

    def get(self, label: str = "") -> Worker:
        """The live worker of slot `label`; a fresh one when it has none or its worker died."""
        worker = self.current.get(label)
        if worker is not None and worker.alive():
            return worker
        if worker is not None:
            self._close(worker)
        return self.start(label)

    def retire(self, label: str = "") -> None:
        """Close the worker of slot `label` (e.g. at the end of a round); the next `get` starts one."""
        worker = self.current.pop(label, None)
        if worker is not None:
            self._close(worker)

    def _close(self, worker: Worker) -> None:
        worker.close()
        if worker in self.open:
            self.open.remove(worker)

    def close(self) -> None:
        """End every worker: close its stdin (it exits) and reap it."""
        for worker in list(self.open):
            self._close(worker)
        self.current.clear()

    def kill(self) -> None:
        """Kill every worker (an interrupt: nothing they would still send is wanted)."""
        for worker in self.open:
            if worker.alive():
                worker.proc.kill()
        self.close()

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.kill()
        else:
            self.close()
