"""Instruction counts: a deterministic metric for CPU cases (`pytest benchmark/ --bench-instructions`).

The parent process stays native. CPU cases are sent to worker processes (`benchmark.runners.worker`,
started by `benchmark.instructions.counting_pass`) that run under

    valgrind --tool=callgrind --instr-atstart=no

so a worker pays the framework import under valgrind once (about 15-40 s for paddle) and runs at
near-native-under-valgrind speed until it switches instrumentation on. Each case is counted in a
child forked from a worker for it: the child prepares the case (`benchmark.runners.prepare`), warms
it up uninstrumented, then switches instrumentation on and measures with callgrind's client
requests (`valgrind/callgrind.h`, compiled here into a tiny shared library, `HOOK_SOURCE`):

1. one instrumented iteration (discarded: it calibrates the chunk size and absorbs the first
   instrumented call's extra work),
2. an empty chunk (zero the counters, dump): the fixed cost of the measuring code itself,
3. `REPEATS` chunks of `n` iterations (zero, loop, dump), `n` a power of two chosen from the
   count of step 1 so that a chunk is about `CHUNK_INSTRUCTIONS`;

each dump's `summary:` line is the chunk's instruction count (event `Ir`); (chunk - empty) / n is
one sample of instructions per iteration. Samples become a result of their own with
`metric = "instructions"` (a series of its own in the history, gated at 1% by default, see
configs/gates.yaml).

Why compile the hook instead of pytest-codspeed's: the header ships with Debian's `valgrind` package
and a C compiler is on every machine that builds paddle wheels; pytest-codspeed's hook module is
tied to its own plugin's version and instrument API. Without valgrind (or the header, or `cc`) the
suite says so in one line and measures time only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchmark.analysis.summary import summarize
from benchmark.datamodel.result import CaseResult, Stats
from benchmark.execution import measure
from benchmark.execution.replies import CountRecord

METRIC = "instructions"
UNIT = "instructions"
CYCLES_METRIC = "cycles"  # estimated cycles (CACHE_SIM_ARGS): a series of its own beside the count
CYCLES_UNIT = "cycles"
VALGRIND_PACKAGE = "valgrind"  # the Debian package: valgrind itself and valgrind/callgrind.h
REPEATS = 3
CHUNK_INSTRUCTIONS = 20_000_000
MAX_CHUNK_ITERATIONS = 1024
# Warm-up iterations before counting are set by each case kind (`benchmark.kinds`: its
# `warmup_iterations`): a fixed number, never a time, so that every run of a case starts counting
# from the same state (a time criterion made the number of warm-up iterations, and with it the state
# of the allocator, the specialising interpreter and the GC, vary with the machine's load). A model's
# step takes seconds under valgrind and settles in a few.
# A step that fills a chunk alone (probe >= CHUNK_INSTRUCTIONS) is counted one iteration a chunk:
# after the probe, the kind's `heavy_chunks` chunks; for a model (one to two minutes of CPU an
# iteration under callgrind, a 0.5% target) the probe is its one sample (`heavy_probe`): one
# instrumented iteration (the probe and a second iteration differed by 0.002% for lstm-train and
# lstm-infer, and cost 100 s of CPU more).
# Warm-up iterations before the probe (at most a kind's warm-up iterations): a step that fills a
# chunk alone is counted after these; a lighter one gets the rest of its warm-up first.
HEAVY_WARMUP = 3
# The worker's environment (each unless the user set it): paddle's static executor runs its ops, and
# frees their outputs, on worker threads by default; under valgrind (which serialises threads) what
# the main thread then counts depends on scheduling: which thread's free() returned a block, and so
# how much work the next malloc() does (measured: 0.1-0.15% between processes for a 100x100 program).
# Trace mode runs a program's ops in order on the calling thread, and a negative eager-deletion
# threshold leaves a variable's memory to be freed by that thread when it is next written, instead
# of queueing it to the garbage-collector thread. Counts are then of the serial work; timing is
# unaffected (only the instruction worker gets these flags).
#
# PYTHONSAFEPATH (Python 3.11+) keeps the worker's working directory (or its script's) off sys.path:
# the import system lists every directory on sys.path and keeps the listing, so a file added to one
# moves the heap layout and the count (measured: 417,312 -> 417,508 instructions an iteration, +0.05%,
# for a static 100x100 program after two empty files appeared in the worker's working directory;
# with it, 0, 2 and 5 extra files all counted 416,807). The same holds for PYTHONPATH entries, which
# are kept: count from an installed harness, not a checkout on PYTHONPATH (see the README).
WORKER_ENV = {
    "FLAGS_new_executor_serial_run": "1",
    "FLAGS_enable_pir_in_executor_trace_run": "1",
    "FLAGS_eager_delete_tensor_gb": "-1",
    "PYTHONSAFEPATH": "1",
}
# Python's string hashing is seeded per process: dict probe sequences, and so instruction counts,
# would move by ~0.1-0.2% between processes. A fixed seed (unless the user set one) removes that.
WORKER_HASH_SEED = "0"
# A worker that does not answer within this many seconds for one case is killed (the case errors).
CASE_TIMEOUT_S = 900.0

HOOK_SOURCE = r"""
/* Callgrind client requests for the instruction-count worker (benchmark/instructions/callgrind.py). */
#include <valgrind/callgrind.h>
int bench_running_on_valgrind(void) { return RUNNING_ON_VALGRIND; }
void bench_start_instrumentation(void) { CALLGRIND_START_INSTRUMENTATION; }
void bench_stop_instrumentation(void) { CALLGRIND_STOP_INSTRUMENTATION; }
void bench_zero_stats(void) { CALLGRIND_ZERO_STATS; }
void bench_dump_stats_at(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""

# Callgrind's cache simulation, for the estimated-cycles metric (`estimated_cycles`). The cache
# geometry is fixed rather than read from this machine's CPUID, so that the figure depends on the
# code and its data layout, not on which VM type a runner landed on: 32 KiB 8-way L1 instruction
# and data caches and an 8 MiB 16-way last level, 64-byte lines (a common x86 server core).
CACHE_SIM_ARGS = (
    "--cache-sim=yes",
    "--I1=32768,8,64",
    "--D1=32768,8,64",
    "--LL=8388608,16,64",
)
# Estimated cycles from the simulated events: callgrind's own cycle estimate (KCachegrind's "CEst"
# without the branch simulation): every instruction 1, an L1 miss that hits the last level 10 more,
# a last-level miss 100 more (about the latencies of an L2/L3 hit and of DRAM on current x86 cores,
# in cycles of a 1-instruction-per-cycle core). A change that keeps the instructions but moves data
# out of cache (a layout, a stride, a larger working set) moves this figure and not `Ir`.
L1_MISS_WEIGHT = 10
LL_MISS_WEIGHT = 100
L1_MISS_EVENTS = ("I1mr", "D1mr", "D1mw")
LL_MISS_EVENTS = ("ILmr", "DLmr", "DLmw")

VALGRIND_ARGS = (
    "--tool=callgrind",
    "--instr-atstart=no",  # no instrumentation (and no counting) until the worker asks for it
    *CACHE_SIM_ARGS,
    # One dump file per thread: only the main thread's count is the case's (the framework's
    # background threads wake up on timers, so how much of their work lands in a chunk depends on
    # the machine's load; their total is kept as a diagnostic).
    "--separate-threads=yes",
    # No gdbserver: it is never used here, and with it each worker left two FIFOs and a
    # shared-memory file in /tmp that were not removed when the worker was ended.
    "--vgdb=no",
)


class InstructionsUnavailable(Exception):
    """Instruction counts cannot be measured here; the message is the one line the user sees."""


@dataclasses.dataclass(frozen=True)
class Tooling:
    valgrind: str
    version: str
    hook: str  # path of the compiled client-request library
    # util-linux's setarch, to start the worker with address-space randomization off (None: not
    # found; counts then move by up to ~0.3% between processes, see `no_aslr_prefix`).
    setarch: str | None = None

    def no_aslr_prefix(self) -> list[str]:
        """The command prefix that starts the worker without address-space layout randomization.

        Where the kernel places the stack and the mappings changes pointer hashes and alignment
        paths inside the counted code: with identical environments, a small op counted 21,053 /
        21,086 / 21,124 / 21,150 instructions per iteration in four processes; with randomization
        off every process counts the same layout."""
        if self.setarch is None:
            return []
        return [self.setarch, platform.machine(), "-R"]


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "paddle-benchmark"


def build_hook(cc: str | None = None, cache_dir: Path | None = None) -> str:
    """Compile HOOK_SOURCE into a shared library (cached by source and compiler); returns its path."""
    cc = cc or os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise InstructionsUnavailable(
            "instruction counts need a C compiler (cc) to build the callgrind hook: install Debian package "
            "'gcc'; measuring time only"
        )
    digest = hashlib.sha1(f"{HOOK_SOURCE}\0{cc}".encode()).hexdigest()[:12]
    for directory in (cache_dir or _cache_dir(), Path(tempfile.gettempdir()) / "paddle-benchmark"):
        target = directory / f"callgrind-hook-{digest}.so"
        if target.exists():
            return str(target)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=directory) as tmp:
                src = Path(tmp) / "hook.c"
                src.write_text(HOOK_SOURCE, encoding="utf-8")
                out = Path(tmp) / "hook.so"
                proc = subprocess.run(
                    [cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(src)],
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                if proc.returncode != 0:
                    first = (proc.stderr.strip().splitlines() or ["(no output)"])[0]
                    if "callgrind.h" in proc.stderr:
                        raise InstructionsUnavailable(
                            f"instruction counts need valgrind's header valgrind/callgrind.h: install Debian "
                            f"package '{VALGRIND_PACKAGE}'; measuring time only"
                        )
                    raise InstructionsUnavailable(
                        f"instruction counts: building the callgrind hook with {cc} failed ({first}); "
                        "measuring time only"
                    )
                os.replace(out, target)  # atomic: concurrent suites never load a half-written file
            return str(target)
        except OSError:
            continue
    raise InstructionsUnavailable("instruction counts: no writable cache directory for the callgrind hook")


def find_tooling() -> Tooling:
    """valgrind, its version and the compiled hook, or InstructionsUnavailable with one line."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise InstructionsUnavailable(
            f"instruction counts need valgrind, which is not on PATH: install Debian package "
            f"'{VALGRIND_PACKAGE}' (apt-get install {VALGRIND_PACKAGE}); measuring time only"
        )
    try:
        version = subprocess.run(
            [valgrind, "--version"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        raise InstructionsUnavailable(
            f"instruction counts: {valgrind} does not run ({e}); measuring time only"
        ) from None
    return Tooling(valgrind=valgrind, version=version, hook=build_hook(), setarch=_setarch())


def _setarch() -> str | None:
    """setarch, if it can really turn randomization off here (a container may forbid it)."""
    setarch = shutil.which("setarch")
    if setarch is None:
        return None
    try:
        ok = subprocess.run([setarch, platform.machine(), "-R", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return setarch if ok.returncode == 0 else None


# ------------------------------------------------------------------------------------------------
# Reading callgrind's output (pure: used by the worker and the tests)
# ------------------------------------------------------------------------------------------------

_SUMMARY = re.compile(r"^summary:\s+(\d[\d ]*)")
_EVENTS = re.compile(r"^events:\s+(.*)$")
_TRIGGER = re.compile(r"^desc: Trigger: Client Request: (.*)$")


def read_dump_events(path: str | Path) -> tuple[str | None, dict[str, int]]:
    """(label of the client request that dumped it, the dump's total of each event: ``Ir`` and,
    with the cache simulation, ``I1mr``, ``D1mr``, ... as named on its ``events:`` line)."""
    label, names = None, ["Ir"]
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = _TRIGGER.match(line)
            if m:
                label = m.group(1).strip()
                continue
            m = _EVENTS.match(line)
            if m:
                names = m.group(1).split()
                continue
            m = _SUMMARY.match(line)
            if m:
                values = [int(v) for v in m.group(1).split()]
                # callgrind leaves out a line's trailing zero counts
                values += [0] * (len(names) - len(values))
                return label, dict(zip(names, values, strict=False))
    raise ValueError(f"{path}: no 'summary:' line (not a callgrind dump?)")


def read_dump(path: str | Path) -> tuple[str | None, int]:
    """(label of the client request that dumped it, total instructions `Ir`) of one callgrind dump."""
    label, events = read_dump_events(path)
    return label, events.get("Ir", 0)


def estimated_cycles(events: dict[str, int]) -> int | None:
    """Callgrind's cycle estimate of a dump's events (see L1_MISS_WEIGHT): None without the cache
    simulation's events."""
    if not all(e in events for e in (*L1_MISS_EVENTS, *LL_MISS_EVENTS)):
        return None
    l1 = sum(events[e] for e in L1_MISS_EVENTS)
    ll = sum(events[e] for e in LL_MISS_EVENTS)
    return events["Ir"] + L1_MISS_WEIGHT * l1 + LL_MISS_WEIGHT * ll


# Threads whose dump files are looked for (callgrind numbers a process's threads 1, 2, ...; the
# instruction worker's framework runs few: its thread counts are 1 and its executor is serial).
MAX_THREAD_DUMPS = 32


def thread_dumps(pattern: str, dump: int) -> dict[int, str]:
    """The files of dump number `dump` of a worker (its pid already in `pattern`), by thread number
    (1: the main thread). With `--separate-threads=yes` callgrind writes `PATTERN.DUMP-TT` per
    thread; a file without the suffix (one thread) is thread 1. The names are tried one by one up
    to MAX_THREAD_DUMPS, never listed: a listing's size would depend on what else is in the
    directory, and what the worker allocates between chunks moves the next chunk's count."""
    found: dict[int, str] = {}
    plain = f"{pattern}.{dump}"
    if os.path.exists(plain):
        found[1] = plain
    for thread in range(1, MAX_THREAD_DUMPS + 1):
        path = f"{plain}-{thread:02d}"
        if os.path.exists(path):
            found[thread] = path
    return found


def chunk_iterations(probe: int) -> int:
    """Iterations per chunk for a step that counted `probe` instructions: a power of two (so that
    tiny differences between runs rarely change it) making a chunk about CHUNK_INSTRUCTIONS."""
    n = 1
    while n * 2 <= MAX_CHUNK_ITERATIONS and n * 2 * max(probe, 1) <= CHUNK_INSTRUCTIONS:
        n *= 2
    return n


def per_iteration(chunks: list[int], empty: int, n: int) -> list[float]:
    """Instructions per iteration from chunk totals, net of the empty chunk's fixed cost."""
    return [(c - empty) / n for c in chunks]


# ------------------------------------------------------------------------------------------------
# The parent side: one worker under callgrind for the suite's CPU cases
# ------------------------------------------------------------------------------------------------


def eligible(case) -> bool:
    """Instruction counts are for CPU cases (a GPU case's kernels are not seen by valgrind)."""
    return case.place == "cpu"


# The worker's environment is canonical, because instruction counts depend on it: the environment
# strings sit on the initial stack and are copied to the heap, so their total size shifts addresses,
# and with them pointer hashes and alignment paths (measured: 0.35% on a small op between a 0- and a
# 37-byte extra variable; cf. Mytkowicz et al., "Producing wrong data without doing anything
# obviously wrong!", ASPLOS 2009). Only these variables are passed on, and the block is padded to a
# fixed size, so a worker started by the suite, a script or a test counts the same.
KEEP_ENV = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "TMPDIR",
        "USER",
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "PYTHONHASHSEED",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONWARNINGS",
        "PYTHONHOME",
        "LD_LIBRARY_PATH",
        "CUDA_VISIBLE_DEVICES",
    }
)
KEEP_ENV_PREFIXES = ("FLAGS_", "OMP_", "MKL_", "OPENBLAS_", "MALLOC_", "GLOG_", "KMP_")
ENV_PAD_VAR = "BENCH_ENV_PAD"
ENV_BLOCK_BYTES = 32 * 1024  # environment + arguments padded to a multiple of this
# The worker's working directory: a fixed string (PYTHONSAFEPATH keeps it off the worker's sys.path).
WORKER_CWD = "/"


def worker_env(allocator_control: bool = True, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: the kept variables of the caller's (`environ`, default
    os.environ), plus what makes counts the same whoever starts the worker: WORKER_ENV, a fixed
    hash seed, thread counts of 1 and the suite's allocator thresholds, each unless already set.
    Not padded yet: see `pad_env`."""

    source = os.environ if environ is None else environ
    kept = {k: v for k, v in source.items() if k in KEEP_ENV or k.startswith(KEEP_ENV_PREFIXES)}
    if kept.get("PYTHONPATH"):  # the worker runs in WORKER_CWD: relative entries must not move
        kept["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in kept["PYTHONPATH"].split(os.pathsep) if p
        )
    env = {**WORKER_ENV, **kept}
    env.setdefault("PYTHONHASHSEED", WORKER_HASH_SEED)
    # A worker that wrote bytecode would leave the next one a different import (loading, not
    # compiling), and so a different heap: see `counting_pass.precompile_harness`.
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    for var in measure.THREAD_VARS:
        env.setdefault(var, "1")
    if allocator_control:
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(measure.MMAP_THRESHOLD_MAX))
        env.setdefault("MALLOC_TRIM_THRESHOLD_", str(measure.TRIM_THRESHOLD))
    return dict(sorted(env.items()))


def pythonpath_notice(environ: dict[str, str] | None = None) -> str | None:
    """One line for a run whose workers would get a PYTHONPATH (`environ`, default os.environ):
    its directories' listings are part of the count (see WORKER_ENV), or None."""
    source = os.environ if environ is None else environ
    if not source.get("PYTHONPATH"):
        return None
    return (
        "instruction counts: PYTHONPATH is set; its directories' listings are part of the count "
        "(40 files added to one moved a 16x16 abs by 0.34%): install the harness (pip install -e .) "
        "and unset it for counts that repeat"
    )


def pad_env(env: dict[str, str], argv: list[str], block: int = ENV_BLOCK_BYTES) -> dict[str, str]:
    """`env` plus ENV_PAD_VAR, sized so that the process's argument and environment strings
    (each with its terminating NUL) add up to a multiple of `block` bytes."""
    env = {k: v for k, v in env.items() if k != ENV_PAD_VAR}
    used = sum(len(a.encode()) + 1 for a in argv)
    used += sum(len(k.encode()) + len(v.encode()) + 2 for k, v in env.items())
    used += len(ENV_PAD_VAR) + 2  # "NAME=" and the NUL of the padding variable itself
    env[ENV_PAD_VAR] = "x" * (-used % block)
    return env


def instruction_result_base(case) -> CaseResult:
    """A result of the instructions metric for `case`, started now."""
    return CaseResult.for_case(case, metric=METRIC, unit=UNIT)


def fill_result(result: CaseResult, record: CountRecord, tooling: Tooling | None = None) -> CaseResult:
    """A worker's record -> the instructions result (samples are instructions per iteration)."""

    result.finished_at = time.time()
    if record.status != "ok":
        result.status = record.status
        result.message = record.message or "the instruction-count worker gave no reason"
        if record.traceback:
            result.traceback = record.traceback
        return result
    iterations = record.iterations or 1
    if record.chunks is not None:  # a worker's record: integer chunk totals, the parent divides
        samples = per_iteration(record.chunks, record.empty or 0, iterations)
    else:  # recorded samples (a replay)
        samples = list(record.samples or [])
    result.status = "ok"
    result.samples = samples
    result.iterations = iterations
    result.warmup_rounds = 1
    result.stats = Stats.from_dict(summarize(samples))
    result.callgrind = {
        "tool": "callgrind",
        "event": "Ir",
        "valgrind": tooling.version if tooling else None,
        "address_randomization": None if tooling is None else ("off" if tooling.setarch else "on"),
        "empty_chunk": record.empty,
        "cycle_chunks": record.cycle_chunks,
        "cycle_empty_chunk": record.cycle_empty,
        "cycle_weights": {"L1 miss": L1_MISS_WEIGHT, "LL miss": LL_MISS_WEIGHT},
        "probe": record.probe,
        "other_threads_instructions": record.other_threads,
        "chunks": record.chunks,
        "warmup_iterations": record.warmup,
        "heap_layout": record.heap_layout,
        "instrumented_s": _seconds(record.instrumented_ns),
        "case_s": _seconds(record.case_ns),
        "case_cpu_s": _seconds(record.case_cpu_ns),
        "worker_pid": record.pid,
    }
    return result


def cycles_result(counted: CaseResult) -> CaseResult | None:
    """The estimated-cycles result of a case from its instructions result (the same chunks'
    simulated cache misses, `estimated_cycles`): a series of its own, judged like the count. None
    when the count was made without the cache simulation; an error or a skip carries over."""
    info = counted.callgrind or {}
    result = dataclasses.replace(
        counted,
        metric=CYCLES_METRIC,
        unit=CYCLES_UNIT,
        samples=[],
        stats=Stats(),
        callgrind=None,
        processes=[],
        extra=dict(counted.extra),
    )
    if counted.status != "ok":
        return result
    chunks, empty = info.get("cycle_chunks"), info.get("cycle_empty_chunk")
    if not chunks or empty is None:
        return None
    samples = per_iteration(list(chunks), int(empty), counted.iterations or 1)
    result.samples = samples
    result.stats = Stats.from_dict(summarize(samples))
    result.callgrind = {
        "tool": "callgrind",
        "event": f"Ir + {L1_MISS_WEIGHT} x L1 misses + {LL_MISS_WEIGHT} x LL misses",
        "cache": list(CACHE_SIM_ARGS[1:]),
        "chunks": chunks,
        "empty_chunk": empty,
        "instructions_per_iteration": (counted.stats.median if counted.stats else None),
    }
    return result


def _seconds(ns) -> float | None:
    return None if ns is None else int(ns) / 1e9


def spread(samples: list[float]) -> float:
    """(max - min) / median of a list of counts: the spread figure of eval/instructions_spread.py."""
    xs = sorted(samples)
    if not xs:
        return float("nan")
    med = xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2
    return (xs[-1] - xs[0]) / med if med else float("nan")
