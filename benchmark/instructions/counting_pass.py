"""The instruction-count pass: workers under callgrind that count CPU cases (`--bench-instructions`).

Each worker (`benchmark.execution.workers.Worker` running `benchmark.runners.worker --fork-per-request`
under `valgrind --tool=callgrind --instr-atstart=no`) imports the framework once; every case is then
counted in a child forked for it (`benchmark/runners/instructions_worker.py`), so a case's count
does not depend on the cases counted before it, on the selection, or on which worker served it.
What is measured and how is in `benchmark.instructions.callgrind` and the README's instruction-count section.
"""

from __future__ import annotations

import compileall
import contextlib
import dataclasses
import os
import queue
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from benchmark import kinds
from benchmark.datamodel.result import CaseResult
from benchmark.execution.workers import WORKER_MODULE, Worker
from benchmark.instructions.callgrind import (
    CASE_TIMEOUT_S,
    HEAVY_WARMUP,
    REPEATS,
    VALGRIND_ARGS,
    WORKER_CWD,
    Tooling,
    fill_result,
    instruction_result_base,
    pad_env,
    worker_env,
)


class _Slot:
    """One worker under callgrind and the directory its dump files go to."""

    def __init__(self) -> None:
        self.worker: Any = None  # a benchmark.execution.workers.Worker once started
        self.dumps: tempfile.TemporaryDirectory | None = None

    def clear_dumps(self) -> None:
        """Empty the dump directory before a case: every forked child leaves its end-of-process
        dumps there (a child finds its own chunk dumps by name, so this only keeps it small)."""
        if self.dumps is not None:
            for entry in os.scandir(self.dumps.name):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        if self.dumps is not None:
            self.dumps.cleanup()
            self.dumps = None


_PRECOMPILED: set[str] = set()


def precompile_harness() -> None:
    """Write the bytecode (`__pycache__`) of every module of this package before a worker starts,
    once per process (a no-op for what is up to date; best effort where the package is read-only).

    A worker that imports a module without its bytecode compiles it, and compiling leaves a
    different heap from loading: the first pass after a checkout or an edit counted a 100x100 abs
    0.5% (dynamic) and 0.2% (static) apart from the later passes, which agreed to 0.0001%. The
    workers themselves never write bytecode (PYTHONDONTWRITEBYTECODE, `instructions.worker_env`),
    so whatever is not compiled here is compiled the same way by every worker."""

    root = os.path.dirname(os.path.abspath(__file__))
    if root in _PRECOMPILED:
        return
    _PRECOMPILED.add(root)
    with contextlib.suppress(OSError):
        compileall.compile_dir(root, quiet=2)


def default_jobs() -> int:
    """Workers counting at once by default: one per CPU this process may use (callgrind runs a
    process's threads on one CPU), at most 4 (each holds a framework under valgrind in memory)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


class InstructionPass:
    """Measures the instruction counts of CPU cases in workers under callgrind, started lazily.

    Each worker imports the framework once and then serves every case in a child forked for it
    (`--fork-per-request`), so a case's count does not depend on which cases ran before it, on the
    selection (`-k`), or on which worker served it. `measure(case)` counts one case now (in the
    first worker); `start(cases)` counts many in up to `jobs` workers at once and returns a future
    per case. Each returns a CaseResult with `metric="instructions"` (status ok, or error with the
    reason). A worker that crashed or timed out is replaced for the next case. `close()` ends them.
    """

    def __init__(
        self,
        tooling: Tooling,
        *,
        allocator_control: bool = True,
        timeout_s: float = CASE_TIMEOUT_S,
        entry: tuple[str, ...] | None = None,
        keep_dumps: str | None = None,
        jobs: int = 1,
        python: str | None = None,
        environ: dict[str, str] | None = None,
        cwd: str = WORKER_CWD,
    ):
        """`keep_dumps`: a directory the worker moves callgrind's dump files to (one per chunk and
        thread, named after the chunk's label), e.g. to compare two runs with callgrind_annotate;
        None: they are deleted once read. `jobs`: workers that count at once in `start`.
        `python`: the workers' interpreter (default this one; another environment's must import
        `benchmark`, e.g. through `environ`'s PYTHONPATH). `environ`: the environment whose kept
        variables the workers get (`instructions.worker_env`; default this process's). `cwd`: the
        workers' working directory (its contents do not reach the count: see WORKER_ENV)."""
        self.entry = entry  # None: the default worker entry point (see benchmark.execution.workers.Worker)
        self.tooling = tooling
        self.allocator_control = allocator_control
        self.timeout_s = timeout_s
        self.keep_dumps = keep_dumps
        self.jobs = max(1, int(jobs))
        self.python = python
        self.environ = environ
        self.cwd = cwd
        self._slots = [_Slot() for _ in range(self.jobs)]
        self._free: queue.SimpleQueue[_Slot] = queue.SimpleQueue()
        for slot in self._slots:
            self._free.put(slot)
        self._executor: ThreadPoolExecutor | None = None

    def _start(self, slot: _Slot) -> Worker:
        precompile_harness()
        slot.dumps = tempfile.TemporaryDirectory(prefix="bench-callgrind-")
        # One file per forked child (%p): several children of one worker may write dumps, and
        # each reads back only its own. The directory is the worker's own.
        out = os.path.join(slot.dumps.name, "callgrind.out.%p")
        prefix = [
            *self.tooling.no_aslr_prefix(),
            self.tooling.valgrind,
            *VALGRIND_ARGS,
            f"--callgrind-out-file={out}",
            "--log-fd=2",
            "-q",
        ]
        args = ["--callgrind-hook", self.tooling.hook, "--callgrind-dumps", out, "--fork-per-request"]
        env = worker_env(self.allocator_control, environ=self.environ)
        return Worker(
            python=self.python,
            prefix=prefix,
            args=args,
            env=env,
            cwd=self.cwd,
            finalize_env=lambda argv: pad_env(env, argv),
            entry=self.entry or ("-m", WORKER_MODULE),
        )

    @property
    def worker(self):
        """The first worker (its `ready` record has its pid and startup CPU time), or None."""
        return self._slots[0].worker

    def measure(self, case) -> CaseResult:
        """Count `case` now, in the first worker."""
        return self._measure(self._slots[0], case)

    def _measure(self, slot: _Slot, case) -> CaseResult:
        result = instruction_result_base(case)
        if slot.worker is None or not slot.worker.alive():
            slot.close()
            slot.worker = self._start(slot)
        slot.clear_dumps()
        record = slot.worker.count(
            # Where the case was defined does not reach the worker: a longer path would shift its
            # heap layout, and with it the count (see KEEP_ENV).
            dataclasses.replace(case, source="", line=None),
            {
                "allocator_control": self.allocator_control,
                "warmup": kinds.get(case.kind).warmup_iterations,
                "heavy_chunks": kinds.get(case.kind).heavy_chunks,
                "heavy_probe": kinds.get(case.kind).heavy_probe,
                "heavy_warmup": HEAVY_WARMUP,
                "repeats": REPEATS,
                "keep_dumps": self.keep_dumps,
            },
            timeout_s=self.timeout_s,
        )
        fill_result(result, record, self.tooling)
        return result

    def _measure_free(self, case) -> CaseResult:
        slot = self._free.get()
        try:
            return self._measure(slot, case)
        finally:
            self._free.put(slot)

    def start(self, cases) -> dict[str, Future]:
        """Count `cases` in the background, up to `jobs` at once, models first (the longest);
        returns case id -> a future of its CaseResult."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="callgrind")
        order = sorted(
            cases, key=lambda c: not kinds.get(c.kind).counted_first
        )  # stable: the suite's order otherwise
        return {c.id: self._executor.submit(self._measure_free, c) for c in order}

    def close(self) -> None:
        """Cancel what has not started and end every worker; a worker still counting a case is
        killed, with the child counting it."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
            for slot in self._slots:  # a case in progress: its worker and forked child go, and its
                if slot.worker is not None and slot.worker.alive():  # future gets an error record
                    slot.worker.proc.kill()
            executor.shutdown(wait=True)
        for slot in self._slots:
            slot.close()
