"""The job of a comparison: steps of a fresh worker per side, timing every still-open case once on
each side (cases in a random order), and the sequential verdict of every case after each step.
A pair's two trials run back to back (the side first drawn per case; both sides' workers on one
core, `core`, once they are ready) or, with `pairing` "simultaneous", at the same time, each side's
worker pinned to its own core and the cores swapped from step to step (`serve_simultaneous`)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from benchmark.analysis import sequential as seq
from benchmark.compare.sides import CompareError, Side
from benchmark.datamodel.verdict import Verdict, verdict_words
from benchmark.execution import measure, trials
from benchmark.execution.cores import allowed as allowed_cores
from benchmark.execution.cores import pin_process
from benchmark.execution.replies import TrialRecord
from benchmark.execution.workers import Worker, Workers

if TYPE_CHECKING:  # the heavy modules are imported where they are used, so `--help` stays light
    from benchmark.analysis.deterministic import CountComparison
    from benchmark.analysis.sequential import SequentialOutcome
    from benchmark.datamodel.case import Case
    from benchmark.datamodel.result import CaseResult, ProcessValue
    from benchmark.execution import measure

from benchmark.compare.settings import (  # noqa: F401 (the defaults, read from here too)
    DEFAULT_ALPHA,
    DEFAULT_BUDGET_MIN,
    DEFAULT_MAX_PAIRS,
    DEFAULT_MIN_EFFECT,
    DEFAULT_PAIRING,
    DEFAULT_TRIAL_PROCESSES,
    PAIRINGS,
    SIDES,
)


@dataclasses.dataclass
class CountOutcome:
    """A case's instruction counts on both sides and the verdict on them."""

    results: dict[str, CaseResult]  # by side: metric "instructions", samples per iteration
    min_effect: float
    noise_floor: float
    check: CountComparison | None = None
    message: str | None = None  # why there is no check (a side's error or skip)
    skipped: bool = False

    @property
    def verdict(self) -> Verdict:
        if self.check is not None:
            return self.check.verdict
        return Verdict.SKIPPED if self.skipped else Verdict.ERROR


@dataclasses.dataclass
class CaseState:
    """One case during the job: its per-process entries per side, pairs and current decision."""

    case: Case
    min_effect: float
    entries: dict[str, list[ProcessValue]] = dataclasses.field(default_factory=lambda: {s: [] for s in SIDES})
    pairs: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    decision: SequentialOutcome | None = None
    error: str | None = None
    skipped: str | None = None
    counts: CountOutcome | None = None  # with --instructions: both sides' counts and their verdict

    @property
    def key(self) -> str:
        return self.case.id

    @property
    def open(self) -> bool:
        return self.error is None and self.skipped is None and not (self.decision and self.decision.decided)

    @property
    def verdict(self) -> Verdict:
        if self.error is not None:
            return Verdict.ERROR
        if self.skipped is not None:
            return Verdict.SKIPPED
        return self.decision.verdict if self.decision else Verdict.INCONCLUSIVE


@dataclasses.dataclass
class Job:
    """What a comparison measured and decided."""

    sides: dict[str, Side]
    states: list[CaseState]
    steps: int = 0
    elapsed_s: float = 0.0
    budget_s: float = 0.0
    alpha: float = DEFAULT_ALPHA
    stopped: str = ""  # why the job ended
    seed: int = 0
    run_ids: dict[str, int] = dataclasses.field(default_factory=dict)
    run_group: str | None = None
    interrupted: bool = False  # stopped by Ctrl-C or SIGTERM: what was measured is kept
    # With --instructions: {"measured": False, "reason": ...} or {"measured": True, "valgrind": ...}
    instructions: dict[str, Any] | None = None
    pairing: str = DEFAULT_PAIRING  # how each pair's two trials ran (PAIRINGS)
    core: int | None = None  # the one core back-to-back pairs ran on (None: unpinned)

    def verdicts(self) -> list[Verdict]:
        return [s.verdict for s in self.states]

    def count_verdicts(self) -> list[Verdict]:
        """The instruction verdicts of the counted cases (--instructions)."""
        return [s.counts.verdict for s in self.states if s.counts is not None]

    def exit_code(self) -> int:
        """1 when a case is slower in time or in instructions; else 2 when one could not be
        measured (or the job was interrupted); else 0."""

        code = seq.exit_code(self.verdicts() + self.count_verdicts())
        return 2 if self.interrupted and code == 0 else code


def start_worker(side: Side, output=None, core: int | None = None):
    """A fresh worker process of `side` (benchmark.execution.workers.Worker with its interpreter and
    env), on `core` from its start when one is given."""

    return Worker(python=side.python, env=side.env, stderr=output, core=core)


def _side_record(record: TrialRecord, worker, label: str) -> TrialRecord:
    """A trial's record, its error message naming the side and the exit status of a worker that died."""
    if record.status == "error" and not worker.alive():
        code = worker.proc.returncode
        return dataclasses.replace(record, message=f"{record.message} (exit status {code}, side {label})")
    return record


def serve_pairs(
    workers: Workers,
    members: Sequence[CaseState],
    params: Sequence[dict],
    rng: random.Random,
    order: int,
) -> dict[str, dict[str, tuple[TrialRecord, int]]]:
    """One timing trial of each of `members` (in that order) on both sides back to back, the side
    that goes first drawn per case, so the two halves of a pair are seconds apart whatever else
    the step holds. `workers`: one slot per side, whose `start` replaces a side's worker that died.
    Returns {side: {case key: (its trial record, its trial order)}}."""

    got: dict[str, dict[str, tuple[TrialRecord, int]]] = {label: {} for label in workers.current}
    for state, p in zip(members, params, strict=True):
        labels = list(workers.current)
        rng.shuffle(labels)
        for label in labels:
            worker = workers.get(label)
            record = _side_record(
                worker.trial(state.case, p, timeout_s=trials.TRIAL_TIMEOUT_S), worker, label
            )
            got[label][state.key] = (record, order)
            order += 1
    return got


def pair_cores(step: int, cores: Sequence[int]) -> dict[str, int]:
    """The core of each side in step `step` of a simultaneous job: the first two of `cores`,
    swapped from one step to the next, so that neither side keeps the better core."""
    first, second = cores[0], cores[1]
    return {"A": first, "B": second} if step % 2 == 0 else {"A": second, "B": first}


def free_cores() -> list[int]:
    """The cores this process may run on (its affinity), in order."""
    return sorted(allowed_cores())


def pin(worker, core: int | None) -> None:
    """Pin a worker process (and the threads it starts later) to one core; nothing where the system
    has no affinity call or the process is gone."""
    if core is None or not hasattr(os, "sched_setaffinity"):
        return
    with contextlib.suppress(OSError):
        os.sched_setaffinity(worker.proc.pid, {core})


def serve_simultaneous(
    workers: Workers,
    members: Sequence[CaseState],
    params: Sequence[dict],
    rng: random.Random,
    order: int,
) -> dict[str, dict[str, tuple[TrialRecord, int]]]:
    """One timing trial of each of `members` on both sides at the same time, each side's worker on
    its own core: both get the request, prepare, warm up and calibrate the case, and wait at a
    barrier; once both are there, both are released and time their rounds side by side (the same
    settings, so about the same length). A side that fails before the barrier releases the other,
    which times alone; `workers`' `start` replaces a side whose worker died (on the same core).
    Returns {side: {case key: (its trial record, its trial order)}}, as `serve_pairs`."""

    got: dict[str, dict[str, tuple[TrialRecord, int]]] = {label: {} for label in workers.current}
    timeout = trials.TRIAL_TIMEOUT_S
    for state, p in zip(members, params, strict=True):
        labels = list(workers.current)
        rng.shuffle(labels)
        early: dict[str, dict] = {}
        for label in labels:
            failed = workers.get(label).send("time", state.case, {**p, "barrier": True})
            if failed is not None:
                early[label] = failed
        for label in labels:
            if label not in early:
                reply = workers.current[label].receive(timeout_s=timeout)
                if not reply.get("barrier"):
                    early[label] = reply  # it ended before the barrier (an error, a skip)
        for label in labels:
            if label not in early:
                workers.current[label].release()
        for label in labels:
            worker = workers.current[label]
            reply = early[label] if label in early else worker.receive(timeout_s=timeout)
            got[label][state.key] = (_side_record(TrialRecord.from_reply(reply), worker, label), order)
            order += 1
    return got


def side_workers(
    sides: dict[str, Side], output, core: int | None = None, cores: dict[str, int] | None = None
) -> Workers:
    """One worker slot per side; a side's worker that dies is replaced by a fresh one on `core`
    (back-to-back pairs) or pinned to its side's core of `cores` (simultaneous pairs)."""

    def start(label: str) -> Worker:
        worker = start_worker(sides[label], output, core)
        pin(worker, (cores or {}).get(label))
        return worker

    return Workers(start)


def trial_settings(case: Case, base: measure.MeasureSettings, processes: int) -> dict[str, Any]:
    """The `time` request's settings of one trial of `case`: `base` with the case's own `measure`
    overrides, per process as in a suite run of `processes` worker processes."""

    return measure.asdict(base.override(case.measure).per_process(processes))


def measured(states: Sequence[CaseState]) -> int:
    """The cases alpha is split over: all but those skipped (e.g. a GPU case on a CPU machine),
    which never get a verdict (skips are known after the first step, before any look)."""
    return max(1, sum(1 for s in states if s.skipped is None))


def _decide(state: CaseState, alpha: float, cases: int, *, final: bool = False) -> None:
    """Look at a case when its pair count is on the look schedule (or, `final`, once more at the
    end of the job when it is not, as one further look)."""

    look = seq.look_at(len(state.pairs), final=final)
    if look is None:
        return
    a, b = zip(*state.pairs, strict=True)
    state.decision = seq.decide(a, b, min_effect=state.min_effect, alpha=alpha, cases=cases, look=look)


def run_job(
    cases: Sequence[Case],
    sides: dict[str, Side],
    *,
    min_effect: Callable[[Case], float],
    settings: measure.MeasureSettings,
    budget_s: float = DEFAULT_BUDGET_MIN * 60,
    alpha: float = DEFAULT_ALPHA,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    processes: int = DEFAULT_TRIAL_PROCESSES,
    seed: int | None = None,
    progress: Callable[[str], None] = lambda line: None,
    on_step: Callable[[Job], None] | None = None,
    worker_output=None,
    allocator_control: bool = True,
    pairing: str = DEFAULT_PAIRING,
    core: int | None = None,
) -> Job:
    """Measure `cases` on both sides in alternating randomized steps until each is decided, the
    budget would be overrun or `max_pairs` is reached (see the module docstring). `min_effect(case)`
    is the smallest relative difference that counts. `core`: the one core both sides' workers of
    back-to-back pairs run on, from when they are ready (their imports run side by side before);
    None: unpinned. Simultaneous pairs take their own two cores. Returns the job (not stored); Ctrl-C (or
    SIGTERM, which `compare` turns into it) ends it early with what was measured, `interrupted`."""
    if set(sides) != set(SIDES):
        raise ValueError(f"sides must be {SIDES}, got {sorted(sides)}")
    if not cases:
        raise CompareError("no case selected")
    seed = random.SystemRandom().randrange(2**31) if seed is None else seed
    rng = random.Random(seed)
    states = [CaseState(case=c, min_effect=float(min_effect(c))) for c in cases]
    job = Job(sides=sides, states=states, budget_s=budget_s, alpha=alpha, seed=seed, pairing=pairing)
    job.core = core if pairing == "back-to-back" else None
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {', '.join(PAIRINGS)}, not {pairing!r}")
    cores = free_cores() if pairing == "simultaneous" else []
    if pairing == "simultaneous" and len(cores) < 2:
        raise CompareError(
            f"--pairing simultaneous needs 2 cores to run the sides on, this process may use {len(cores)}"
        )
    plan = StepPlan(
        settings,
        max_pairs,
        processes,
        allocator_control,
        worker_output,
        progress,
        on_step,
        pairing,
        tuple(cores),
        job.core,
    )
    start = time.monotonic()
    try:
        finished = _steps(job, plan, rng, start)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM turned into it by `compare`: keep what was measured
        job.stopped = f"interrupted after {job.steps} step(s)"
        job.interrupted = True
        finished = None
    if finished is not None:
        finished.close()
    for s in states:
        if s.open:
            _decide(s, alpha, measured(states), final=True)
    job.elapsed_s = time.monotonic() - start
    return job


@dataclasses.dataclass(frozen=True)
class StepPlan:
    """How `run_job` measures each step (the job itself holds the cases, sides, budget and alpha)."""

    settings: measure.MeasureSettings
    max_pairs: int
    processes: int
    allocator_control: bool
    worker_output: Any
    progress: Callable[[str], None]
    on_step: Callable[[Job], None] | None
    pairing: str = "back-to-back"
    cores: tuple[int, ...] = ()  # the cores the sides of a simultaneous pair run on
    core: int | None = None  # the core both sides of a back-to-back pair run on


def _steps(job: Job, plan: StepPlan, rng: random.Random, start: float) -> Workers | None:
    """The steps of `run_job` until every case is decided or a limit is reached; returns the last
    step's workers (to close). A step interrupted midway adds nothing: its workers are killed and
    its pairs dropped, so both sides keep the same number of trials."""
    states, sides, alpha, budget_s = job.states, job.sides, job.alpha, job.budget_s
    max_pairs, worker_output = plan.max_pairs, plan.worker_output
    order = 0
    step_times: list[float] = []
    finished: Workers | None = None  # the previous step's workers, closed while the next ones start
    while True:
        open_states = [s for s in states if s.open and len(s.pairs) < max_pairs]
        if not open_states:
            job.stopped = "every case decided" if all(not s.open for s in states) else f"{max_pairs} pairs"
            break
        elapsed = time.monotonic() - start
        if step_times and elapsed + max(step_times[-3:]) > budget_s:
            job.stopped = f"budget of {budget_s / 60:.1f} min"
            break
        t_step = time.monotonic()
        # Both workers of the step start at once and import paddle side by side (while the previous
        # step's workers exit); nothing is timed until both are ready (an idle worker waits on its
        # stdin and costs no CPU).
        labels = list(SIDES)
        rng.shuffle(labels)
        cores = pair_cores(job.steps, plan.cores) if plan.pairing == "simultaneous" else None
        workers = side_workers(sides, worker_output, plan.core, cores)
        for label in labels:  # pinned before they import the framework; onto `plan.core` once ready
            workers.start(label, functools.partial(start_worker, sides[label], worker_output))
            pin(workers.current[label], (cores or {}).get(label))
        if finished is not None:
            finished.close()
        finished = workers
        try:
            for w in workers.current.values():
                w.wait_ready()
                if plan.core is not None and w.ready is not None:  # imported: now onto the one core
                    pin_process(w.ready["pid"], plan.core)
            members = list(open_states)
            rng.shuffle(members)
            params = [
                {
                    "settings": trial_settings(m.case, plan.settings, plan.processes),
                    "allocator_control": plan.allocator_control,
                }
                for m in members
            ]
            serve = serve_simultaneous if plan.pairing == "simultaneous" else serve_pairs
            got = serve(workers, members, params, rng, order)
            order += 2 * len(members)
        except BaseException:
            workers.kill()
            raise
        job.steps += 1
        for s in open_states:
            for label in SIDES:
                rec, rec_order = got[label].get(s.key) or (TrialRecord.failed("no record"), order)
                if rec.skipped:
                    s.skipped = f"side {label}: {rec.message or 'skipped'}"
                    continue
                entry, message = rec.entry(len(s.entries[label]), rec_order)
                s.entries[label].append(entry)
                if message is not None and s.error is None:
                    s.error = f"side {label}: {message}"
            if s.error is None and s.skipped is None:
                a, b = s.entries["A"][-1].value, s.entries["B"][-1].value
                assert a is not None and b is not None  # both trials were ok
                s.pairs.append((a, b))
                _decide(s, alpha, measured(states))
        step_times.append(time.monotonic() - t_step)
        job.elapsed_s = time.monotonic() - start
        plan.progress(step_line(job))
        if plan.on_step is not None:
            plan.on_step(job)
    return finished


def step_line(job: Job) -> str:
    """One progress line after a step: how many cases are open and what is decided."""
    counts: dict[str, int] = {}
    for s in job.states:
        word = verdict_words(s.verdict).ab
        counts[word] = counts.get(word, 0) + 1
    open_ = sum(1 for s in job.states if s.open)
    what = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    return (
        f"compare: step {job.steps} done after {job.elapsed_s:.0f} s of {job.budget_s:.0f} s: "
        f"{open_} case(s) still open; {what}"
    )
