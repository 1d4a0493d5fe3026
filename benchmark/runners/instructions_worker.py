"""The `instructions` task of a worker running under callgrind (see benchmark/instructions/callgrind.py).

The worker was started with `--instr-atstart=no`: nothing is counted until `measure_instructions`
switches instrumentation on, after the case was prepared and warmed up natively-under-valgrind.
Every chunk is zero counters -> iterations -> dump with a label; the dump's total is read back from
callgrind's output file and the file is deleted.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import time
from typing import Any

from benchmark import runners
from benchmark.instructions.callgrind import (
    CHUNK_INSTRUCTIONS,
    chunk_iterations,
    estimated_cycles,
    read_dump_events,
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
        self.cycles: int | None = None  # the main thread's estimated cycles in the last chunk counted
        self.keep: str | None = None  # a directory the dump files are moved to (a diagnostic), or None

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
            found, events = read_dump_events(path)
            count = events.get("Ir", 0)
            if self.keep:
                os.replace(path, os.path.join(self.keep, f"{label.replace('/', '_')}-{thread:02d}.callgrind"))
            else:
                os.unlink(path)
            if thread == 1:
                if found != label:
                    raise RuntimeError(f"callgrind dump {path} is for {found!r}, expected {label!r}")
                total = count
                self.cycles = estimated_cycles(events)
            else:
                self.other_threads += count
        return total


def quiet() -> None:
    """No collection inside a chunk: when the cyclic GC runs depends on allocation counts carried
    over from everything before, so it would move counts between processes."""
    gc.collect()
    gc.disable()


def heap_layout() -> dict[str, int]:
    """Addresses that show whether two workers' heaps are laid out alike (taken after counting; a
    diagnostic: address-derived keys, e.g. threading.local's, change dict probe counts): a fresh
    Python object's id, a fresh malloc'd block and the program break."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.sbrk.restype = ctypes.c_void_p
    libc.sbrk.argtypes = [ctypes.c_long]
    block = libc.malloc(64)
    libc.free(block)
    return {"object": id(object()), "malloc": int(block or 0), "brk": int(libc.sbrk(0) or 0)}


_CALLGRIND: dict[tuple[str, str], Callgrind] = {}


def measure_instructions(case, params: dict[str, Any], options) -> dict[str, Any]:
    if not options.callgrind_hook or not options.callgrind_dumps:
        raise RuntimeError("the instructions task needs --callgrind-hook and --callgrind-dumps")
    key = (options.callgrind_hook, options.callgrind_dumps)
    cg = _CALLGRIND.get(key) or _CALLGRIND.setdefault(key, Callgrind(*key))
    if not cg.on_valgrind:
        raise RuntimeError("the instructions task must run under valgrind --tool=callgrind")
    warmup = int(params.get("warmup", 50))
    repeats = int(params.get("repeats", 3))
    heavy_chunks = int(params.get("heavy_chunks", 2))
    heavy_probe = bool(params.get("heavy_probe", False))
    heavy_warmup = int(params.get("heavy_warmup", 3))
    cg.keep = params.get("keep_dumps") or None
    if cg.keep:
        os.makedirs(cg.keep, exist_ok=True)
    t0, c0 = time.perf_counter(), time.process_time()
    prepared = runners.prepare(case)
    try:
        step, sync = prepared.step, prepared.sync

        def iteration():
            step()
            sync()

        # Warm up uninstrumented so Python's specialising interpreter and the framework's caches are
        # settled: fixed numbers of iterations, never a time, so every run starts counting from the
        # same state whatever the machine's load. First `heavy_warmup` iterations and the probe: a
        # step that fills a chunk alone (kernel work dominates; 50 iterations of it cost minutes
        # under valgrind) is counted after those; a lighter one gets the rest of `warmup` first.
        first = min(heavy_warmup, warmup)
        for _ in range(first):
            iteration()
        gc_was_enabled = gc.isenabled()
        other0 = cg.other_threads
        t1 = time.perf_counter()
        try:
            quiet()
            cg.start()
            probe = cg.count(iteration, 1, f"{case.id}:probe")
            probe_cycles = cg.cycles
            empty = cg.count(iteration, 0, f"{case.id}:empty")
            empty_cycles = cg.cycles
            n = chunk_iterations(probe - empty)
            cycle_chunks: list[int | None] = []

            def counted(label: str) -> int:
                total = cg.count(iteration, n, label)
                cycle_chunks.append(cg.cycles)
                return total

            # A heavy step has had its instrumented warm-up in the probe and gets `heavy_chunks`
            # chunks (each costs seconds to minutes under callgrind); with `heavy_probe` (a model's
            # step) the probe is a sample too. A light one: the rest of the warm-up, then chunks,
            # the first discarded (the first instrumented chunk still counts ~0.1% more).
            if probe - empty >= CHUNK_INSTRUCTIONS:
                chunks = [probe] if heavy_probe else []
                cycle_chunks += [probe_cycles] if heavy_probe else []
                chunks += [counted(f"{case.id}:chunk{k}") for k in range(heavy_chunks)]
            else:
                cg.stop()
                if gc_was_enabled:
                    gc.enable()
                for _ in range(warmup - first - 1):
                    iteration()
                quiet()
                cg.start()
                chunks = [counted(f"{case.id}:chunk{k}") for k in range(repeats + 1)][1:]
                cycle_chunks = cycle_chunks[1:]
        finally:
            cg.stop()
            if gc_was_enabled:
                gc.enable()
        layout = heap_layout()
        t2 = time.perf_counter()
    finally:
        prepared.close()
    record = {
        "status": "ok",
        "iterations": n,
        "chunks": chunks,
        "empty": empty,
        # estimated cycles (callgrind's cache simulation), chunk by chunk as `chunks`; None where
        # the worker ran without the simulation
        "cycle_chunks": None if None in cycle_chunks else cycle_chunks,
        "cycle_empty": empty_cycles,
        "probe": probe,
        "other_threads": cg.other_threads - other0,
        "warmup": warmup,
        "heap_layout": layout,
        "instrumented_ns": int((t2 - t1) * 1e9),
        "case_ns": int((time.perf_counter() - t0) * 1e9),
        "case_cpu_ns": int((time.process_time() - c0) * 1e9),
    }
    return fixed_size(record, case.case_id)


RECORD_BLOCK = 512


def fixed_size(record: dict[str, Any], case_id: str) -> dict[str, Any]:
    """`record` with the fields the worker's loop adds (case_id, pid) and a `pad` of spaces, so that
    its JSON line is a multiple of RECORD_BLOCK bytes long.

    What the worker allocates between cases shapes the heap the next case is counted in: a record
    whose size moved with a timing (a float's digits) or a count made the next case's count move
    between processes (up to 0.75% for a 100x100 op). So the record carries integers only (counts;
    times in nanoseconds: at least 8 digits, as the counts, so their strings fall in one allocation
    size class), the per-iteration samples are computed by the parent, and the line is padded."""
    record = {**record, "case_id": case_id, "pid": os.getpid(), "pad": ""}
    size = len(json.dumps(record, default=str)) + 1  # the newline the worker writes after it
    record["pad"] = " " * (-size % RECORD_BLOCK)
    return record
