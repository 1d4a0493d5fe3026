"""The `instructions` task of a worker running under callgrind (see benchmark/instructions.py).

The worker was started with `--instr-atstart=no`: nothing is counted until `measure_instructions`
switches instrumentation on, after the case was prepared and warmed up natively-under-valgrind.
Every chunk is zero counters -> iterations -> dump with a label; the dump's total is read back from
callgrind's output file and the file is deleted.
"""

from __future__ import annotations

import ctypes
import gc
import os
import time
from typing import Any

from benchmark import runners
from benchmark.instructions import (
    CHUNK_INSTRUCTIONS,
    chunk_iterations,
    per_iteration,
    read_dump,
    thread_dumps,
)


class Callgrind:
    """The client requests of the compiled hook, and the dump files they write."""

    def __init__(self, hook: str, dumps: str):
        lib = ctypes.CDLL(hook)
        lib.bench_dump_stats_at.argtypes = [ctypes.c_char_p]
        self.lib = lib
        self.pattern = dumps.replace("%p", str(os.getpid()))
        self.dumps = 0  # callgrind numbers the dumps of a process 1, 2, ...
        self.other_threads = 0  # instructions of threads other than the main one, in counted chunks

    @property
    def on_valgrind(self) -> bool:
        return bool(self.lib.bench_running_on_valgrind())

    def start(self) -> None:
        self.lib.bench_start_instrumentation()

    def stop(self) -> None:
        self.lib.bench_stop_instrumentation()

    def count(self, step, iterations: int, label: str) -> int:
        """Instructions of the main thread in `iterations` calls of `step` (plus the fixed cost of
        this function). Other threads' instructions in the chunk are added to `other_threads`."""
        lib = self.lib
        tag = label.encode()
        lib.bench_zero_stats()
        for _ in range(iterations):
            step()
        lib.bench_dump_stats_at(tag)
        self.dumps += 1
        files = thread_dumps(self.pattern, self.dumps)
        if 1 not in files:
            raise RuntimeError(f"callgrind wrote no main-thread dump {self.pattern}.{self.dumps}[-01]")
        total = 0
        for thread, path in files.items():
            found, count = read_dump(path)
            os.unlink(path)
            if thread == 1:
                if found != label:
                    raise RuntimeError(f"callgrind dump {path} is for {found!r}, expected {label!r}")
                total = count
            else:
                self.other_threads += count
        return total


_CALLGRIND: dict[tuple[str, str], Callgrind] = {}


def measure_instructions(case, params: dict[str, Any], options) -> dict[str, Any]:
    if not options.callgrind_hook or not options.callgrind_dumps:
        raise RuntimeError("the instructions task needs --callgrind-hook and --callgrind-dumps")
    key = (options.callgrind_hook, options.callgrind_dumps)
    cg = _CALLGRIND.get(key) or _CALLGRIND.setdefault(key, Callgrind(*key))
    if not cg.on_valgrind:
        raise RuntimeError("the instructions task must run under valgrind --tool=callgrind")
    min_warmup = int(params.get("warmup", 20))
    warmup_s = float(params.get("warmup_s", 1.0))
    max_warmup = max(min_warmup, int(params.get("max_warmup", 200)))
    max_warmup_s = float(params.get("max_warmup_s", 10.0))
    repeats = int(params.get("repeats", 3))
    t0, c0 = time.perf_counter(), time.process_time()
    prepared = runners.prepare(case)
    try:
        step, sync = prepared.step, prepared.sync

        def iteration():
            step()
            sync()

        # Warm up uninstrumented so Python's specialising interpreter and the framework's caches are
        # settled: at least 3 iterations; then until both `min_warmup` iterations and `warmup_s`
        # seconds are reached, stopping at `max_warmup` iterations or `max_warmup_s` (heavy steps:
        # a model's training step takes seconds under valgrind).
        warmup, start = 0, time.perf_counter()
        while warmup < 3 or (
            (warmup < min_warmup or time.perf_counter() - start < warmup_s)
            and warmup < max_warmup
            and time.perf_counter() - start < max_warmup_s
        ):
            iteration()
            warmup += 1
        # No collection inside a chunk: when the cyclic GC runs depends on allocation counts
        # carried over from everything before, so it would move counts between processes.
        gc_was_enabled = gc.isenabled()
        gc.collect()
        gc.disable()
        t1 = time.perf_counter()
        other0 = cg.other_threads
        cg.start()
        try:
            probe = cg.count(iteration, 1, f"{case.id}:probe")
            empty = cg.count(iteration, 0, f"{case.id}:empty")
            n = chunk_iterations(probe - empty)
            # The first instrumented chunk still counts a little more (~0.1%): it is discarded. A
            # step that fills a chunk alone (a model's) has had its instrumented warm-up in the
            # probe, and gets 2 chunks: each costs seconds to minutes under callgrind.
            if probe - empty >= CHUNK_INSTRUCTIONS:
                chunks = [cg.count(iteration, n, f"{case.id}:chunk{k}") for k in range(min(repeats, 2))]
            else:
                chunks = [cg.count(iteration, n, f"{case.id}:chunk{k}") for k in range(repeats + 1)][1:]
        finally:
            cg.stop()
            if gc_was_enabled:
                gc.enable()
        t2 = time.perf_counter()
    finally:
        prepared.close()
    return {
        "status": "ok",
        "samples": per_iteration(chunks, empty, n),
        "iterations": n,
        "chunks": chunks,
        "empty": empty,
        "probe": probe,
        "other_threads": cg.other_threads - other0,
        "warmup": warmup,
        "instrumented_s": t2 - t1,
        "case_s": time.perf_counter() - t0,
        "case_cpu_s": time.process_time() - c0,
    }
