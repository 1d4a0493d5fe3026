"""Running the cases: in worker processes before the items run (`measure_in_workers`: trials in
randomized interleaved rounds, `benchmark.execution.trials`, then the checks after timing in a worker of
their own), or inside each item (`run_case`, --bench-processes 0, through pytest-benchmark's
fixture); the bodies of the case and gate items (benchmark/test_cases.py).
"""

from __future__ import annotations

import math
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

from benchmark import kinds, runners
from benchmark.datamodel.case import Case
from benchmark.datamodel.result import CaseResult
from benchmark.execution import measure, trials
from benchmark.execution.casetrials import CaseTrials, apply_checks
from benchmark.execution.replies import ChecksRecord
from benchmark.execution.workers import Worker, Workers
from benchmark.gate.judge import CONFIRMATION_KEY, confirmation_key, judge, judge_attempts, needs_confirmation
from benchmark.plugin.session import BenchSession, item_cases
from benchmark.plugin.terminal import Progress, counts
from benchmark.report.words import format_decision
from benchmark.sandbox import limits
from benchmark.telemetry.devices import nvml_device_index
from benchmark.telemetry.sampler import NvmlSampler


def run_gate(case: Case, bench: BenchSession) -> None:
    """The body of a gate item: fail it when the case regressed (or errored), with the reason."""
    confirm_regressions(bench)
    d = bench.gate_decision(case)
    # None without --bench-instructions
    counted = [bench.gate_decision(case, metric) for metric in ("instructions", "cycles")]
    failing = [x for x in (d, *counted) if x is not None and x.failing]
    if failing:
        pytest.fail("\n".join(format_decision(x) for x in failing), pytrace=False)
    if d is None or d.verdict == "skipped":
        pytest.skip("no result of this case in this run")


# Unchanged cases measured beside a re-measurement (benchmark.analysis.common_shift.MIN_OTHERS).
CONTROL_CASES = 3


def confirm_regressions(bench: BenchSession) -> None:
    """Before the first gate item: judge the run and measure again at once, in fresh worker
    processes, every case whose regression configs/gates.yaml `confirm`s (wall time, by default),
    up to `confirm.rounds` times, the reference probe beside each trial as in the run. A regression
    fails only if every attempt reproduces it (the judge's verdict on the attempt, against the same
    history, is again a regression); otherwise it is `not reproduced`. The attempts are stored with
    the run (`run.extra`), so `benchmark gate` and the reports decide the same later."""
    if bench.decisions is not None or bench.store is None or bench.run_id is None:
        return
    gates = bench.gates()
    decisions = judge(bench.store, bench.run_id, gates).decisions
    cases = {(c.case_id, c.place, c.mode): c for c in bench.expected or []}
    pending = [d for d in decisions if needs_confirmation(d, gates) and (d.case_id, d.place, d.mode) in cases]
    if not pending or bench.processes == 0:
        bench.decisions = {d.key: d for d in decisions}
        return
    progress = Progress(bench.config, 0, 0)
    attempts: dict[str, list[dict[str, Any]]] = {confirmation_key(d): [] for d in pending}
    still = pending
    # Control cases measured beside them: unchanged ones, so the attempt's common shift (the machine
    # now, against the history) is estimated and removed as in the run (benchmark.gate.judge)
    failing = {(d.case_id, d.place, d.mode) for d in pending}
    controls = [
        cases[(d.case_id, d.place, d.mode)]
        for d in decisions
        if d.series_metric == "time" and d.verdict in ("pass", "inconclusive")
        and (d.case_id, d.place, d.mode) in cases and (d.case_id, d.place, d.mode) not in failing
        and kinds.get(cases[(d.case_id, d.place, d.mode)].kind).control
    ][:CONTROL_CASES] if gates.spec.defaults.common_shift else []  # fmt: skip
    for attempt in range(1, gates.spec.confirm.rounds + 1):
        todo = [cases[(d.case_id, d.place, d.mode)] for d in still]
        todo += [c for c in controls if c not in todo]
        progress.line(
            f"benchmark: measuring again {len(still)} regressed case(s) and {len(todo) - len(still)} "
            f"control(s) in fresh worker processes (attempt {attempt} of {gates.spec.confirm.rounds}): "
            f"{', '.join(c.id for c in todo)}"
        )
        results = remeasure(bench, todo, attempt)
        judged = {
            confirmation_key(a): a
            for a in judge_attempts(bench.store, bench.run_id, list(results.values()), gates)
        }
        kept = []
        for d in still:
            a = judged.get(confirmation_key(d))
            attempts[confirmation_key(d)].append(
                {
                    "attempt": attempt,
                    "value": None if a is None else a.value,
                    "effect": math.nan if a is None else a.effect,
                    "verdict": "error" if a is None else str(a.verdict),
                    "probe": "" if a is None else a.probe,
                }
            )
            if a is not None and a.verdict == "regression":
                kept.append(d)
        still = kept
        if not still:
            break
    reproduced = {confirmation_key(d) for d in still}
    confirmation = {
        key: {"attempts": tries, "reproduced": key in reproduced} for key, tries in attempts.items()
    }
    bench.store.set_run_extra(bench.run_id, CONFIRMATION_KEY, confirmation)
    bench.decisions = {d.key: d for d in judge(bench.store, bench.run_id, gates).decisions}
    progress.line(
        f"benchmark: {len(reproduced)} of {len(pending)} regression(s) reproduced when measured again"
    )


def remeasure(bench: BenchSession, cases: list[Case], attempt: int) -> dict[str, CaseResult]:
    """`cases` measured again as in the run (worker processes, randomized interleaved rounds), not
    recorded: case id -> result."""
    states = {c.id: CaseTrials(case=c, result=CaseResult.for_case(c)) for c in cases}
    todo = [(c.id, c, case_processes(bench, c)) for c in cases]
    rounds = trials.plan_trials(todo, bench.seed + attempt)
    out: dict[str, CaseResult] = {}

    def on_record(trial, record) -> None:
        if states[trial.key].add(trial, record):
            out[trial.key] = states[trial.key].finish()

    log = open_worker_log(bench, "a")
    try:
        trials.run_trials(
            rounds,
            lambda: Worker(stderr=log, memory_limit=worker_memory_limit(bench), core=bench.core),
            lambda trial: trial_params(bench, trial),
            on_record,
            should_run=lambda trial: not states[trial.key].done,
        )
    finally:
        if log is not None:
            log.close()
    return out


def start_telemetry(place: str, interval: float):
    """An NVML sampler for a CUDA place, started before warmup; None on CPU or without NVML.

    Without a driver, the session has already said so in one line (`pytest_sessionstart`).
    """
    if not place.startswith("gpu"):
        return None
    from benchmark.telemetry.nvml import nvml_status  # NVML only for GPU places, and only then

    if not nvml_status()[0]:
        return None
    index = nvml_device_index(int(place.split(":")[1]) if ":" in place else 0)
    if index is None:
        return None
    return NvmlSampler(device_index=index, interval=interval).start()


def run_case(case: Case, benchmark, bench: BenchSession) -> CaseResult:
    """Prepare, measure and record one case in this process (--bench-processes 0); skips and
    errors are recorded too, never as numbers. `benchmark`: pytest-benchmark's fixture, or a
    callable returning it (requested only for a case that is measured)."""

    result = CaseResult.for_case(case)
    ok, reason = runners.framework_available(bench.framework)
    if ok:
        ok, reason = runners.place_available(case.place, bench.framework)
    if not ok:
        result.status, result.message = "skipped", reason
        result.finished_at = time.time()
        bench.record(result)
        bench.record_instructions(case, result)
        pytest.skip(reason)
    if not hasattr(benchmark, "pedantic"):
        benchmark = benchmark()
    settings = bench.settings.override(case.measure)
    prepared = None
    sampler = start_telemetry(case.place, bench.config.getoption("bench_nvml_interval"))
    try:
        t0 = time.perf_counter()
        prepared = runners.prepare(case)
        result.prepare_s = time.perf_counter() - t0
        result.extra.update(prepared.info)
        result.extra_keys = ("prepare_s", *prepared.info)  # stored before the timing plan
        measure.measure(benchmark, prepared, case.place, settings).fill(result)
        result.status = "ok"
        checks = checks_wanted(bench, case)
        if checks:  # after the timed measurement, never inside it; what the `checks` worker task does
            from benchmark.runners.worker import run_checks as run_case_checks  # imports the framework

            apply_checks(
                result,
                ChecksRecord.from_reply(
                    {"status": "ok", **run_case_checks(case, prepared, checks, settings)}
                ),
            )
    except runners.RunnerUnavailable as e:
        result.status, result.message = "skipped", str(e)
    except Exception as e:  # noqa: BLE001 - any failure of a case is recorded as that case's error
        result.status = "error"
        result.message = f"{type(e).__name__}: {e}".splitlines()[0][:500]
        result.traceback = traceback.format_exc(limit=8)
    finally:
        if sampler is not None:
            sampler.stop()
            result.telemetry = sampler.telemetry()
        if prepared is not None:
            prepared.close()
        result.finished_at = time.time()
    bench.record(result)
    bench.record_instructions(case, result)
    return item_outcome(case, result, bench)


def check_case(case: Case, bench: BenchSession) -> None:
    """--benchmark-disable: prepare the case and run one step of it in this process, untimed (a
    quick check that a config runs); skipped where it cannot run here; nothing is recorded."""

    ok, reason = runners.framework_available(bench.framework)
    if ok:
        ok, reason = runners.place_available(case.place, bench.framework)
    if not ok:
        pytest.skip(reason)
    try:
        prepared = runners.prepare(case)
    except runners.RunnerUnavailable as e:
        pytest.skip(str(e))
    try:
        prepared.step()
        prepared.sync()
    finally:
        prepared.close()
    bench.checked += 1


def report_case(case: Case, bench: BenchSession) -> CaseResult:
    """The body of an item whose case was measured in worker processes: count its instructions
    (with --bench-instructions), then pass, skip or fail with the recorded result."""
    result = bench.worker_results.get(case.id)
    if result is None:
        why = f"history store: {bench.store_error}" if bench.store_error else "the trials did not reach it"
        pytest.skip(f"not measured ({why})")
    bench.record_instructions(case, result)
    return item_outcome(case, result, bench)


def item_outcome(case: Case, result: CaseResult, bench: BenchSession) -> CaseResult:
    """The case item passes, skips or fails as its recorded result says (warnings with -v)."""
    if result.status == "skipped":
        pytest.skip(result.message or "skipped")
    if result.status in ("error", "failed"):
        pytest.fail(f"{case.id}: {result.message}", pytrace=False)
    if result.warnings and bench.config.getoption("verbose") > 0:
        print("\n".join(f"warning: {w}" for w in result.warnings), file=sys.stderr)
    return result


def case_processes(bench: BenchSession, case: Case) -> int:
    """How many worker processes measure `case` (0: in this process, the run's --bench-processes 0)."""
    if bench.processes == 0:
        return 0
    return int(case.measure.get("processes") or bench.processes)


def worker_memory_limit(bench: BenchSession) -> int:
    """What a timing or checks worker may hold (`benchmark.sandbox.limits.worker_memory_limit` of
    --bench-max-bytes)."""
    return limits.worker_memory_limit(bench.config.getoption("bench_max_bytes"))


def trial_params(bench: BenchSession, trial) -> dict[str, Any]:
    """The `time` request of one trial: the case's settings divided over its processes
    (`MeasureSettings.per_process`)."""
    settings = bench.settings.override(trial.case.measure).per_process(trial.processes)
    return {
        "settings": measure.asdict(settings),
        "allocator_control": not bench.config.getoption("bench_no_malloc_control"),
    }


def checks_wanted(bench: BenchSession, case: Case) -> dict[str, Any]:
    """The checks after timing that `case` gets (in this process with --bench-processes 0): reference
    check (op cases naming a `reference`), torch timing, profile pass; {} when none."""
    opt = bench.config.getoption
    wanted: dict[str, Any] = {
        "accuracy": bool(
            not opt("bench_no_accuracy") and kinds.get(case.kind).accuracy and case.spec.reference
        ),
        "vs_torch": bool(
            opt("bench_vs_torch") and kinds.get(case.kind).vs_torch and bench.framework == "paddle"
        ),
        "profile": bool(opt("bench_profile") or case.spec.profile),
    }
    if not any(wanted.values()):
        return {}
    trace_dir = opt("bench_trace_dir")
    if wanted["profile"] and trace_dir:
        trace = Path(trace_dir) / f"{case.id}.json"
        trace.parent.mkdir(parents=True, exist_ok=True)
        wanted["trace"] = str(trace)
    return wanted


def run_checks(bench: BenchSession, states: dict, keys: list[str], log, progress) -> None:
    """The checks after timing of the cases `keys` (measured ok), in one worker of their own
    after all trials, so that a profiler or a torch import never shares a process with a
    timing; then each case is recorded."""

    progress.line(f"benchmark: checks after timing (reference, torch, profile) of {len(keys)} case(s)")
    traces = bench.config.getoption("bench_trace_dir")  # a confined worker writes them

    def new_worker(_: str) -> Worker:
        return Worker(
            stderr=log, memory_limit=worker_memory_limit(bench), writable=[traces] if traces else []
        )

    with Workers(new_worker) as workers:  # interrupted: the worker goes too
        for key in keys:
            state = states[key]
            if bench.store_error is None:
                settings = bench.settings.override(state.case.measure)
                params = {
                    "settings": measure.asdict(settings),
                    "allocator_control": not bench.config.getoption("bench_no_malloc_control"),
                    "diagnose": checks_wanted(bench, state.case),
                }
                timeout = limits.trial_timeout_s(measure.asdict(settings))
                state.apply_checks(workers.get().checks(state.case, params, timeout_s=timeout))
            bench.record(state.result)


def measure_in_workers(bench: BenchSession, items: list) -> None:
    """Measure every selected case in worker processes, in randomized interleaved rounds
    (`benchmark.execution.trials`), before the items run; each case is recorded (history, JSON) as soon
    as its last trial is in, and its item then reports it."""

    cases = item_cases(items)
    if bench.processes == 0 or not cases:
        return
    todo, states = [], {}
    not_run: dict[str, int] = {}  # reason -> cases
    for case in cases:
        if case.id in states:
            continue
        ok, reason = runners.framework_available(bench.framework)
        if ok:
            ok, reason = runners.place_available(case.place, bench.framework)
        result = CaseResult.for_case(case)
        if not ok:
            result.status, result.message = "skipped", reason
            result.finished_at = time.time()
            bench.worker_results[case.id] = result
            bench.record(result)
            not_run[str(reason)] = not_run.get(str(reason), 0) + 1
            continue
        states[case.id] = CaseTrials(case=case, result=result)
        todo.append((case.id, case, case_processes(bench, case)))
    rounds = trials.plan_trials(todo, bench.seed) if todo else []
    total = sum(len(r) for r in rounds)
    progress = Progress(bench.config, total, len(rounds))
    for reason, n in not_run.items():  # why fewer cases run than pytest collected
        progress.line(f"benchmark: {n} of {len(cases)} collected case(s) not run on this machine: {reason}")
    if not todo:
        return
    progress.line(
        f"benchmark: {len(todo)} case(s) in worker processes ({counts(p for _, _, p in todo)} "
        f"each): {total} trials in {len(rounds)} randomized interleaved round(s), seed {bench.seed}"
    )
    progress.line(f"benchmark: worker output in {bench.json_path.with_name('workers.log')}")
    interval = bench.config.getoption("bench_nvml_interval")

    def should_run(trial) -> bool:
        return bench.store_error is None and not states[trial.key].done

    def on_start(trial, worker):
        progress.start(trial)
        sampler = start_telemetry(trial.case.place, interval)
        if sampler is None:
            return None

        def stop() -> None:
            sampler.stop()
            states[trial.key].telemetry.setdefault(trial.index, sampler.telemetry())

        return stop

    checks: list[str] = []  # cases measured ok that get checks after timing, recorded after them

    def on_record(trial, record) -> None:
        state = states[trial.key]
        progress.done(trial, record)
        if state.add(trial, record):
            result = bench.worker_results[trial.key] = state.finish()
            if result.status == "ok" and checks_wanted(bench, trial.case):
                checks.append(trial.key)
            else:
                bench.record(result)

    log = worker_log(bench)

    def new_worker():
        return Worker(stderr=log, memory_limit=worker_memory_limit(bench), core=bench.core)

    try:
        trials.run_trials(
            rounds,
            new_worker,
            lambda trial: trial_params(bench, trial),
            on_record,
            should_run=should_run,
            on_start=on_start,
            on_round=progress.round_done,
        )
        if checks:
            run_checks(bench, states, checks, log, progress)
        counting = bench.start_instruction_counts([s.case for s in states.values()])
        if counting and bench.instructions is not None:
            progress.line(
                f"benchmark: counting the instructions of {counting} CPU case(s) under callgrind, "
                f"{bench.instructions.jobs} at a time (each item waits for its own count)"
            )
    finally:
        if log is not None:
            log.close()


def worker_log(bench: BenchSession):
    """Where the workers' own output goes (what the framework prints): `workers.log` beside the
    JSON summary, started anew; None (the terminal) when it cannot be opened."""
    return open_worker_log(bench, "w")


def open_worker_log(bench: BenchSession, mode: str):
    """`workers.log` opened with `mode` ("w": anew, "a": appended to), or None."""
    path = bench.json_path.with_name("workers.log")
    try:
        return open(path, mode, encoding="utf-8")  # noqa: SIM115 - closed after the trials
    except OSError:
        return None
