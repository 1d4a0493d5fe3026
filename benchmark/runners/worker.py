"""Worker processes, worker side: `python -m benchmark.runners.worker --records-fd FD [...]`.

Reads one JSON request per line from stdin (`{"task", "case", "params"}`, see benchmark/execution/workers.py),
prepares the case through `benchmark.runners.prepare` (so framework imports stay in this package),
runs the task and writes one JSON record per request to the records pipe. The framework is
imported once, before the `ready` line, so its cost is paid once for every case the worker serves.
A case that raises yields an error record and the worker goes on with the next request; the worker
exits when stdin closes. With `--fork-per-request` (the instruction-count worker) each request is
served by a child forked after the import, so no request sees what an earlier one left behind.

Tasks (`TASKS`): `instructions` (callgrind instruction counts, `instructions_worker`), `time`
(one timing trial: prepare, warm up, calibrated rounds; `measure.measure_rounds`) and `checks`
(reference check, torch timing, profile pass of a case, without timing it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmark.execution.cores import pin_process
from benchmark.execution.probe import Probe, around
from benchmark.sandbox.limits import WORKER_FRAMEWORK_BYTES

WORKER_FRAMEWORK_GIB = WORKER_FRAMEWORK_BYTES / 1024**3
# This process's reference probe: timed before its first trial and after each (`_time`).
PROBE = Probe()
TaskFn = Callable[[Any, dict[str, Any], argparse.Namespace], dict[str, Any]]


def _instructions(case, params, options) -> dict[str, Any]:
    from benchmark.runners.instructions_worker import measure_instructions

    return measure_instructions(case, params, options)


def _time(case, params, options) -> dict[str, Any]:
    """One timing trial: prepare the case, warm up, calibrate and time rounds (measure.measure_rounds).

    params: `settings` (MeasureSettings fields to override); `diagnose` (optional, after the timed
    rounds, never inside them: `accuracy` true runs the reference check, `vs_torch` true times the
    torch equivalent with the same settings, `profile` true runs the profile pass, writing a chrome
    trace to `trace` if given); `barrier` (optional): after the calibration, write a barrier line
    and wait for the parent's next line before the first timed round. The record's `samples` are
    host seconds per iteration, one per timed round, all from this process; on a device place
    `device_samples` are device seconds per iteration from events around up to 50 further rounds. With `settings.probe` (the default) the
    record's `probe` holds the reference probe's figure around the trial (`seconds`: the geometric
    mean of the probes before and after it) and both probes' parts; the one before is the probe
    after this process's previous trial, or one timed now for its first."""
    from benchmark import runners
    from benchmark.execution import measure

    settings = measure.MeasureSettings().override(params.get("settings") or {})
    if (case.spec.devices or 1) > 1:  # data parallel (a model case; no other kind has devices)
        # data parallel: N ranks through paddle.distributed.launch, timed by the ranks themselves
        from benchmark.runners.models.data_parallel import trial

        return trial(case, settings)
    diagnose = params.get("diagnose") or {}
    before = (PROBE.last or PROBE.run()) if settings.probe else None
    t0, c0 = time.perf_counter(), time.process_time()
    prepared = runners.prepare(case)
    try:
        prepare_s = time.perf_counter() - t0
        counters: dict[str, Any] = {}
        barrier = getattr(options, "barrier", None) if params.get("barrier") else None
        samples, plan = measure.measure_rounds(prepared, settings, counters, barrier)
        timed_end = time.time()
        faults = counters["minor_faults"]
        device = measure.device_times(prepared, plan, min(plan.rounds, 50)) if case.place != "cpu" else None
        peak = prepared.peak_memory() if prepared.peak_memory else None
        info = dict(prepared.info)
        items = prepared.items_per_step
        extra = run_checks(case, prepared, diagnose, settings)
    finally:
        prepared.close()
    case_s, case_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    probe = None
    if before is not None:
        after = PROBE.run()
        probe = {"seconds": around(before, after), "before": before.to_dict(), "after": after.to_dict()}
    return {
        "status": "ok",
        "samples": samples,
        "device_samples": device,
        "iterations": plan.iterations,
        "warmup_iterations": plan.warmup_iterations,
        "estimate_s": plan.estimate,
        "items_per_step": items,
        "peak_memory_bytes": peak,
        "page_faults_per_iter": faults / max(1, (plan.rounds + 1) * plan.iterations),
        "prepare_s": prepare_s,
        "warmup_s": counters["warmup_s"],
        "timed_s": counters["timed_s"],
        "timed_window": [timed_end - counters["timed_s"], timed_end],  # epoch seconds
        "case_s": case_s,
        "case_cpu_s": case_cpu_s,
        "probe": probe,
        "info": info,
        **extra,
    }


def run_checks(case, prepared, diagnose: dict[str, Any], settings) -> dict[str, Any]:
    """The checks `diagnose` asks for, on a prepared case: `accuracy` (reference check),
    `vs_torch` (the torch equivalent timed with `settings`), `profile` (profile pass, a chrome trace
    to `trace` if given). Returns the record fields: accuracy, torch, profile (those asked)."""
    from benchmark import runners

    out: dict[str, Any] = {}
    if diagnose.get("accuracy"):
        out["accuracy"] = runners.check_accuracy(case, prepared)
    if diagnose.get("vs_torch"):
        out["torch"] = torch_timing(case, settings)
    if diagnose.get("profile"):
        out["profile"] = runners.profile_pass(case, prepared, diagnose.get("trace"))
    return out


def _checks(case, params, options) -> dict[str, Any]:
    """The checks after timing, in a worker of their own (no timing here, so they never disturb
    one): prepare the case, run `params["diagnose"]` (see `run_checks`; `settings` as for `time`)."""
    from benchmark import runners
    from benchmark.execution import measure

    settings = measure.MeasureSettings().override(params.get("settings") or {})
    prepared = runners.prepare(case)
    try:
        return {"status": "ok", **run_checks(case, prepared, params.get("diagnose") or {}, settings)}
    finally:
        prepared.close()


def torch_timing(case, settings) -> dict[str, Any]:
    """Time the case's torch equivalent with the same warmup, calibration and sync: its median
    seconds per iteration (the caller forms the paddle/torch ratio), or why it was skipped."""
    from benchmark import runners
    from benchmark.config.selection import as_torch_case
    from benchmark.execution import measure

    ok, reason = runners.framework_available("torch")
    if ok:
        ok, reason = runners.place_available(case.place, "torch")
    if not ok:
        return {"status": "skipped", "message": reason}
    try:
        prepared = runners.prepare(as_torch_case(case))
    except runners.RunnerUnavailable as e:
        return {"status": "skipped", "message": str(e)}
    try:
        samples = measure.measure_plain(prepared, settings)
    finally:
        prepared.close()
    return {
        "status": "ok",
        "median": float(sorted(samples)[len(samples) // 2]),
        "rounds": len(samples),
        "info": prepared.info,
    }


TASKS: dict[str, TaskFn] = {"instructions": _instructions, "time": _time, "checks": _checks}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmark.runners.worker",
        description="Benchmark worker process: serves case requests from stdin, records on --records-fd.",
    )
    p.add_argument("--records-fd", type=int, required=True, help="file descriptor the records are written to")
    p.add_argument("--callgrind-hook", default=None, help="shared library with callgrind client requests")
    p.add_argument(
        "--callgrind-dumps", default=None, help="callgrind's --callgrind-out-file pattern (with %%p)"
    )
    p.add_argument(
        "--memory-limit",
        type=int,
        default=None,
        metavar="BYTES",
        help="host memory this process may hold (RLIMIT_DATA, soft and hard), set before the "
        "framework import; a case that needs more ends as an error naming the limit",
    )
    p.add_argument(
        "--cpu-core",
        type=int,
        default=None,
        metavar="CORE",
        help="run this process, and every thread it starts, on this core (set before the framework import)",
    )
    p.add_argument(
        "--confine",
        default=None,
        metavar="SCRATCH",
        help="after the framework import, confine this process (Landlock, seccomp): no exec, no new "
        "process, no network socket, writes only in SCRATCH (and --confine-write), reads only what the "
        "framework needs; one line says what held",
    )
    p.add_argument(
        "--confine-write",
        action="append",
        default=[],
        metavar="DIR",
        help="with --confine: another directory this process may write in (e.g. the profile traces')",
    )
    p.add_argument(
        "--fork-per-request",
        action="store_true",
        help="serve each request in a child forked from this process after the framework import",
    )
    return p.parse_args(argv)


def limit_memory(limit: int) -> None:
    """Cap this process's data (heap and private writable mappings, RLIMIT_DATA) at `limit` bytes,
    soft and hard, so that nothing the case runs can raise it. RLIMIT_DATA rather than RLIMIT_AS:
    address space that is only reserved (thread stacks' guard areas, malloc arenas, the
    framework's shared libraries) does not count, what a case allocates does; an allocation over
    it fails (numpy and paddle raise MemoryError) instead of the machine swapping."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))


def memory_limit_message(limit: int, error: BaseException) -> str:
    """One line for a case that hit the worker's memory limit, naming the limit."""
    first = (str(error).strip().splitlines() or [""])[0][:300]
    return (
        f"worker memory limit: the case needed more than the {limit / 1024**3:.1f} GiB a worker may hold "
        f"(2 x --bench-max-bytes + {WORKER_FRAMEWORK_GIB:g} GiB for the framework; RLIMIT_DATA): "
        f"{type(error).__name__}: {first}"
    )


# Tests only (tests/test_confine.py): a Python file a confined worker runs right after confining
# itself, as hostile code in a corrupted worker would; its outcome goes into the ready record.
TEST_HOOK_ENV = "BENCHMARK_WORKER_TEST_HOOK"


def _run_test_hook(source: str, path: str) -> str:
    try:
        exec(compile(source, path, "exec"), {"__name__": "__hook__"})  # noqa: S102 - tests only
    except BaseException as e:  # noqa: BLE001 - the hook's outcome is the record
        return f"{type(e).__name__}: {e}".splitlines()[0][:300]
    return "ok"


def serve(options: argparse.Namespace, requests, emit: Callable[[dict[str, Any]], None]) -> None:
    from benchmark import runners

    ok, reason = runners.framework_available()  # the framework import, once
    ready: dict[str, Any] = {}
    if options.confine:  # after the import, before the first case is prepared
        from benchmark.execution.confine import confine

        hook = os.environ.get(TEST_HOOK_ENV)
        source = Path(hook).read_text(encoding="utf-8") if hook else None  # read while it still may
        ready["confined"] = confine(options.confine, options.confine_write)
        if source is not None:
            ready["hook"] = _run_test_hook(source, hook)
    # Nothing timed in this line: a forked child starts from the heap its JSON left, and the
    # varying number of digits of a CPU time (a float's repr) moved a 16x16 abs's instruction count
    # by 0.37% between workers. The parent reads the startup CPU time itself (Worker.ready["cpu_s"]).
    emit({"ready": True, "pid": os.getpid(), "framework": ok, "reason": reason, **ready})
    if options.fork_per_request:
        serve_forked(options, requests, emit, (ok, reason))
        return

    def barrier() -> None:
        # A simultaneous pair (`benchmark compare --pairing simultaneous`): say the case is
        # calibrated, and wait for the parent's go line, sent once both workers of the pair are.
        emit({"barrier": True})
        requests.readline()

    options.barrier = barrier
    allocator_done = False
    for line in requests:
        if not line.strip():
            continue
        emit(handle(line, options, (ok, reason), control_allocator=not allocator_done))
        allocator_done = True


def handle(
    line: str, options: argparse.Namespace, framework: tuple[bool, str | None], control_allocator: bool
):
    """The record of one request line (the task's, or an error or skip record of its case)."""
    from benchmark import runners
    from benchmark.datamodel.case import Case
    from benchmark.execution import measure

    ok, reason = framework
    request = json.loads(line)
    params = request.get("params") or {}
    if control_allocator:
        measure.control_allocator(bool(params.get("allocator_control", True)))
    case = Case.from_json(request["case"])
    try:
        if not ok:
            raise runners.RunnerUnavailable(reason)
        record = TASKS[request["task"]](case, params, options)
    except runners.RunnerUnavailable as e:
        record = {"status": "skipped", "message": str(e)}
    except MemoryError as e:
        limit = getattr(options, "memory_limit", None)
        message = memory_limit_message(limit, e) if limit else f"MemoryError: {e}".splitlines()[0][:500]
        record = {"status": "error", "message": message, "limit": "memory" if limit else None}
    except Exception as e:  # noqa: BLE001 - a case's failure is its record, the worker goes on
        record = {
            "status": "error",
            "message": f"{type(e).__name__}: {e}".splitlines()[0][:500],
            "traceback": traceback.format_exc(limit=8),
        }
    record.setdefault("case_id", case.case_id)
    record.setdefault("pid", os.getpid())
    return record


EXIT_NO_MORE_REQUESTS = 3  # a forked child's exit status when it found the requests closed


def serve_forked(options: argparse.Namespace, requests, emit, framework: tuple[bool, str | None]) -> None:
    """--fork-per-request: each request is served by a child forked from this process, which reads
    that one request, writes its record and exits. This process never reads a request, so every
    child starts from the same state (heap layout, interpreter caches) whatever was served before
    or beside it: one case's allocations cannot move another's instruction count, and a case counts
    the same in a full suite, under -k, or in any of several such workers.

    The parent sends a request only once the previous record is in, so a child reading ahead of
    its line finds nothing more. A child that dies without a record (killed, crashed) gets an error
    record from this process; one that finds the requests closed ends this process too."""
    import signal

    me = os.getpid()
    while True:
        pid = os.fork()
        if pid == 0:  # the child: one request, then out, whatever happens
            code = 1
            try:
                _die_with_parent(signal.SIGKILL, me)
                line = requests.readline()
                if not line:
                    code = EXIT_NO_MORE_REQUESTS
                else:
                    emit(handle(line, options, framework, control_allocator=True))
                    code = 0
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code == EXIT_NO_MORE_REQUESTS:
            return
        if code != 0:
            why = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            emit({"status": "error", "message": f"the process forked for this request {why}"})


def _die_with_parent(sig: int, parent: int) -> None:
    """Linux: this process gets `sig` when its parent (pid `parent`) exits, so that a worker killed
    for a timeout takes its forked child with it; elsewhere nothing."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(sig), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent was already gone
        os._exit(EXIT_NO_MORE_REQUESTS)


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    if options.cpu_core is not None:
        # every thread it has now (an import may already have started some, e.g. a BLAS pool)
        pin_process(os.getpid(), options.cpu_core)
    if options.memory_limit:
        limit_memory(options.memory_limit)
    records = os.fdopen(options.records_fd, "w", encoding="utf-8", buffering=1)

    def emit(record: dict[str, Any]) -> None:
        # Lines padded to a multiple of 512 bytes: their sizes must not move with a timing's digits
        # (what the worker allocates between cases shapes the heap an instruction count sees).
        line = json.dumps(record, default=str)
        records.write(line + " " * (-(len(line) + 1) % 512) + "\n")
        records.flush()

    serve(options, sys.stdin, emit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
