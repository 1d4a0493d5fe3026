"""`compare`: the whole job behind `benchmark compare`, from a request to its exit status.

Checks the request, selects the cases (loaded and validated without importing paddle here), opens
the history, checks both sides, runs the job, prints one line per case, stores both sides and writes
the Markdown, JSON and chart asked for. Expected failures raise `CompareError` (a ValueError),
`GateError`, `StoreError` or `OSError`; the command turns them into one line and exit status 2.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from benchmark import runners
from benchmark.compare import instruction_counts as counts
from benchmark.compare import job as jobs
from benchmark.compare import render as comparison
from benchmark.compare.live import Progress
from benchmark.compare.output import case_line, job_dict, store_job
from benchmark.compare.render import interval_level
from benchmark.compare.sides import CompareError, check_sides
from benchmark.config import load_paths, selection
from benchmark.execution import cores, measure
from benchmark.gate.settings import load_gates, with_min_effect
from benchmark.paths import CHECKOUT_DIR, CONFIGS_DIR, db_url
from benchmark.store import open_store

if TYPE_CHECKING:
    from benchmark.datamodel.case import Case


@dataclasses.dataclass(frozen=True)
class Request:
    """What `benchmark compare` was asked (its options; see the command's help for each)."""

    a: str
    b: str
    configs: list[str] = dataclasses.field(default_factory=list)
    keyword: str | None = None
    tags: str | None = None
    place: str | None = None
    modes: str | None = None
    budget_min: float = jobs.DEFAULT_BUDGET_MIN
    min_effect: float | None = None
    gates: str | None = None
    alpha: float = jobs.DEFAULT_ALPHA
    max_pairs: int = jobs.DEFAULT_MAX_PAIRS
    processes: int = jobs.DEFAULT_TRIAL_PROCESSES
    quick: bool = False
    threads: int = 1
    seed: int | None = None
    db: str | None = None
    store: bool = True
    markdown: str | None = None
    plot: str | None = None
    json: str | None = None
    worker_log: str = os.devnull
    quiet: bool = False
    instructions: bool = False
    pairing: str = jobs.DEFAULT_PAIRING
    pin: str = "off"
    probe: bool = False


def check_request(req: Request) -> None:
    """Raise CompareError naming the first option out of range."""
    if not (0 < req.alpha < 0.5):
        raise CompareError(f"--alpha {req.alpha}: expected a probability in (0, 0.5)")
    if not (req.budget_min > 0 and math.isfinite(req.budget_min)):
        raise CompareError(f"--budget-min {req.budget_min}: expected a positive number of minutes")
    if req.max_pairs < 3:
        raise CompareError(f"--max-pairs {req.max_pairs}: at least 3 pairs are needed for an interval")
    if req.processes < 1:
        raise CompareError(f"--processes {req.processes}: expected 1 or more")
    if req.min_effect is not None and not (0 <= req.min_effect < 1):
        raise CompareError(f"--min-effect {req.min_effect}: expected a fraction in [0, 1), e.g. 0.02")
    try:
        cores.candidates(req.pin, req.threads, cores.allowed())
    except ValueError as e:
        raise CompareError(str(e).replace("--bench-pin", "--pin")) from None


def claim_core(req: Request) -> cores.Claim:
    """The one core both sides of back-to-back pairs run on (`--pin`, as the suite's `--bench-pin`),
    held until the job ends so that another run on this machine takes another core; simultaneous
    pairs take their own two cores and claim none here."""
    if req.pairing != "back-to-back":
        return cores.Claim(None)
    return cores.claim_for(req.pin, req.threads)  # its --pin checked by check_request


def select_cases(req: Request) -> list[Case]:
    """The cases to compare: loaded and validated (without importing paddle here), then filtered by
    --place, --modes, --tags (default: all but 'slow') and -k (`benchmark.config.selection`).
    Default configs: the harness's configs/."""

    paths = req.configs or [str(CONFIGS_DIR)]
    cases, issues = load_paths(paths, checks=runners.config_checks(resolve=False))
    if issues:
        raise CompareError(
            f"invalid benchmark config: {issues[0]}"
            + (f" (and {len(issues) - 1} more)" if len(issues) > 1 else "")
        )
    try:
        csv = selection.csv
        out = selection.select_cases(cases, csv(req.place), csv(req.tags), csv(req.modes), req.keyword)
    except ValueError as e:  # a malformed -k
        raise CompareError(str(e)) from None
    if not out:
        raise CompareError("no case matches the selection (configs, --place, --modes, --tags, -k)")
    return out


def min_effects(req: Request) -> Callable[[Case], float]:
    """Each case's smallest relative difference that counts: --min-effect, else per case from
    --gates (whose default --min-effect replaces), else the default."""
    if req.gates is None:
        value = jobs.DEFAULT_MIN_EFFECT if req.min_effect is None else req.min_effect
        return lambda case: value

    gates = with_min_effect(load_gates(req.gates), req.min_effect)
    return lambda case: gates.for_case(case.case_id, case.name, case.place).min_effect


def compare(req: Request) -> int:
    """Run the comparison `req` describes; returns the exit status (0: no case slower in B, 1: one
    is, 2: a case could not be measured on a side). Progress goes to stderr, results to stdout."""

    def say(line: str) -> None:
        if not req.quiet:
            print(line, file=sys.stderr, flush=True)

    def warn(line: str) -> None:  # shown even with --quiet
        print(line, file=sys.stderr, flush=True)

    root = CHECKOUT_DIR  # the harness's code the workers import, and its commit
    check_request(req)
    min_effect = min_effects(req)
    count_settings = counts.gate_settings(req.gates) if req.instructions else None
    cases = select_cases(req)
    store = open_store(db_url(req.db)) if req.store else None
    core = claim_core(req)
    if core.note:
        warn(f"compare: {core.note}")
    try:
        measure.pin_threads(req.threads or None)
        measure.control_allocator(True)
        say(f"compare: checking side A ({req.a}) and side B ({req.b})")
        sides = check_sides({"A": req.a, "B": req.b}, root, say)
        settings = measure.MeasureSettings.quick() if req.quick else measure.MeasureSettings()
        # A pair's two sides run seconds apart and are judged on their ratio: the reference probe
        # only where asked (--probe), recorded beside each value, not used by the verdicts.
        settings = dataclasses.replace(settings, probe=req.probe)
        say(
            f"compare: {len(cases)} case(s), budget {req.budget_min:g} min, alpha {req.alpha:g} over all "
            f"cases and looks"
        )
        with open(req.worker_log, "a", encoding="utf-8") as log, _sigterm_interrupts():
            with Progress(req.quiet) as live:  # the live table ends before the results are printed
                job = jobs.run_job(
                    cases,
                    sides,
                    min_effect=min_effect,
                    settings=settings,
                    budget_s=req.budget_min * 60,
                    alpha=req.alpha,
                    max_pairs=req.max_pairs,
                    processes=req.processes,
                    seed=req.seed,
                    on_step=live.step,  # a live table of the estimates on a terminal, a line now and then off one
                    worker_output=log,
                    pairing=req.pairing,
                    core=core.core,
                )
                live.step(job, final=True)  # the table ends on the final decisions, as printed below
            print(f"{sides['A'].describe()}\n{sides['B'].describe()}")
            for s in job.states:
                print(case_line(s))
            print(
                f"{job.steps} step(s) in {job.elapsed_s:.0f} s ({job.stopped}); {pairs_text(job)}; seed {job.seed}; "
                f"B/A > 1: B is slower; intervals: {interval_level(job)}",
                flush=True,
            )
            if count_settings is not None and job.interrupted:
                job.instructions = {"measured": False, "reason": "the timing job was interrupted"}
            elif count_settings is not None:
                counts.count_job(job, settings=count_settings, say=say, warn=warn)
            _print_counts(job)
        if job.interrupted:
            say(f"compare: {job.stopped}; storing and writing what was measured")
        if store is not None:
            ids = store_job(store, job, root=root)
            what = "interrupted runs" if job.interrupted else "run group"
            print(f"stored as {what} {job.run_group}: side A run {ids['A']}, side B run {ids['B']}")
    finally:
        core.release()
        if store is not None:
            store.close()
    _write_outputs(job, req)
    return job.exit_code()


def pairs_text(job: jobs.Job) -> str:
    """How the pairs ran, for the summary line."""
    where = f" on core {job.core}" if job.core is not None else ""
    return f"{job.pairing} pairs{where}"


def _print_counts(job: jobs.Job) -> None:
    for s in job.states:
        line = counts.count_line(s)
        if line is not None:
            print(line)
    summary = counts.summary_line(job)
    if summary is not None:
        print(summary)


@contextlib.contextmanager
def _sigterm_interrupts():
    """While the job runs, SIGTERM (a CI job's timeout, `kill`) stops it as Ctrl-C does, so the
    pairs measured so far are stored and printed instead of lost."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave SIGTERM alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _write_outputs(job: jobs.Job, req: Request) -> None:

    if req.markdown:
        Path(req.markdown).write_text(comparison.markdown(job) + counts.markdown(job), encoding="utf-8")
        print(f"wrote {req.markdown}")
    if req.json:
        Path(req.json).write_text(json.dumps(job_dict(job), indent=1, default=str), encoding="utf-8")
        print(f"wrote {req.json}")
    if req.plot:
        for path in comparison.write_chart(job, req.plot):
            print(f"wrote {path}")
