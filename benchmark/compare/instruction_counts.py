"""Instruction counts of a comparison (`benchmark compare --instructions`).

After the timing job, each selected CPU case that was timed on both sides is counted once on side A
and once on side B: instructions per iteration under callgrind (`benchmark.instructions.counting_pass`), in a
worker of that side's interpreter and environment (this checkout first on its PYTHONPATH), the two
sides' passes side by side. A count does not depend on the machine's load, so one count per side
is enough: the verdict is `benchmark.analysis.deterministic.compare_counts` (B/A of the medians of
the chunks' samples, against the case's instruction `min_effect` and `noise_floor` from the gate
settings). Not after an interrupted timing job. Without valgrind (or its header, or a C compiler)
one line says which package to install and the comparison stays a timing comparison.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from benchmark.analysis.deterministic import compare_counts
from benchmark.compare.job import SIDES, CaseState, CountOutcome, Job
from benchmark.datamodel.verdict import Verdict, verdict_words
from benchmark.gate.settings import DEFAULT_GATES_PATH, load_gates
from benchmark.instructions import callgrind as instructions
from benchmark.instructions.counting_pass import InstructionPass, default_jobs

if TYPE_CHECKING:  # the heavy modules are imported where they are used, so `--help` stays light
    from benchmark.datamodel.case import Case
    from benchmark.datamodel.result import CaseResult


def judge_counts(results: dict[str, CaseResult], min_effect: float, noise_floor: float) -> CountOutcome:
    """The outcome of a case's two counts: an error (or skip) on a side, else the verdict."""

    outcome = CountOutcome(results=results, min_effect=min_effect, noise_floor=noise_floor)
    for label in SIDES:
        r = results[label]
        if r.status != "ok" or not r.samples:
            outcome.message = f"side {label}: {r.message or f'count status {r.status!r}'}"
            outcome.skipped = r.status == "skipped"
            return outcome
    outcome.check = compare_counts(
        results["A"].samples, results["B"].samples, min_effect=min_effect, noise_floor=noise_floor
    )
    return outcome


def gate_settings(gates_path: str | None) -> Callable[[Case], tuple[float, float]]:
    """Each case's (min_effect, noise_floor) of its instruction series, from `gates_path` (default
    configs/gates.yaml): the `instructions` section and the overrides with `metric: instructions`."""

    gates = load_gates(gates_path or DEFAULT_GATES_PATH)

    def settings(case: Case) -> tuple[float, float]:
        g = gates.for_case(case.case_id, case.name, case.place, series_metric="instructions")
        return g.min_effect, g.noise_floor

    return settings


def count_job(
    job: Job,
    *,
    settings: Callable[[Case], tuple[float, float]],
    allocator_control: bool = True,
    say: Callable[[str], None] = lambda line: None,
    warn: Callable[[str], None] = lambda line: None,
    jobs_per_side: int | None = None,
) -> None:
    """Count the job's CPU cases that were timed on both sides (see the module docstring); sets
    each such state's `counts` and `job.instructions`. Without the tooling: `warn` gets one line
    naming the package, and nothing is counted. Ctrl-C (or SIGTERM turned into it) stops the
    counting: the job is then `interrupted`, with the counts finished so far."""

    todo = [s for s in job.states if instructions.eligible(s.case) and s.error is None and s.skipped is None]
    if not todo:
        job.instructions = {"measured": False, "reason": "no CPU case timed on both sides"}
        say("compare: instruction counts: no CPU case timed on both sides")
        return
    try:
        tooling = instructions.find_tooling()
    except instructions.InstructionsUnavailable as e:
        warn(f"compare: {e}")
        job.instructions = {"measured": False, "reason": str(e)}
        return
    per_side = jobs_per_side or max(1, default_jobs() // len(SIDES))
    job.instructions = {"measured": True, "valgrind": tooling.version, "jobs_per_side": per_side}
    say(
        f"compare: counting the instructions of {len(todo)} case(s) on both sides under callgrind "
        f"({per_side} worker(s) per side; each imports paddle under valgrind first)"
    )
    passes = {
        label: InstructionPass(
            tooling,
            allocator_control=allocator_control,
            jobs=per_side,
            python=side.python,
            environ=side.env,
        )
        for label, side in job.sides.items()
    }
    start = time.monotonic()
    try:
        futures = {label: p.start([s.case for s in todo]) for label, p in passes.items()}
        for i, s in enumerate(todo, 1):
            results = {label: _result(futures[label][s.case.id], s.case) for label in SIDES}
            s.counts = judge_counts(results, *settings(s.case))
            say(
                f"compare: instructions {i} of {len(todo)} counted ({s.case.id}: {verdict_words(s.counts.verdict).ab})"
            )
    except KeyboardInterrupt:
        job.interrupted = True
        job.instructions["interrupted"] = True
        job.stopped = f"{job.stopped}; instruction counts interrupted"
    finally:
        for p in passes.values():
            p.close()
        job.instructions["elapsed_s"] = time.monotonic() - start


def _result(future: Future, case: Case) -> CaseResult:
    """A count's result; a worker that could not even be started is an error result of the case."""
    try:
        return future.result()
    except Exception as e:  # e.g. OSError starting valgrind: the case errors, the others go on
        r = instructions.instruction_result_base(case)
        r.status, r.message = "error", f"not counted ({type(e).__name__}: {e})"
        return r


def _change(ratio: float) -> str:
    """B/A as a signed change with two decimals (+2.77%; a change that rounds to 0 is +0.00%)."""
    return f"{round(ratio - 1, 4) + 0.0:+.2%}"


def count_line(s: CaseState) -> str | None:
    """The printed row of a case's instruction verdict (None: not counted)."""
    c: CountOutcome | None = s.counts
    if c is None:
        return None
    head = f"{verdict_words(c.verdict).ab.upper():<13} {s.case.id} [{s.case.place} {s.case.mode}]"
    if c.check is None:
        return f"{head}  instructions: {c.message}"
    d = c.check
    return (
        f"{head}  instructions B/A {d.ratio:.4f} ({_change(d.ratio)}), noise {d.noise:.2%}, "
        f"min effect {d.min_effect:.0%}"
    )


def summary_line(job: Job) -> str | None:
    """What the counting did, in one line (None: not asked for, or not measured: the reason was
    said once, as it happened, and is in the JSON)."""
    info = job.instructions
    if info is None or not info.get("measured"):
        return None
    n = sum(1 for s in job.states if s.counts is not None)
    stopped = ", interrupted" if info.get("interrupted") else ""
    return (
        f"instruction counts of {n} case(s) per side in {info.get('elapsed_s', 0):.0f} s "
        f"({info.get('valgrind')}{stopped}); B/A > 1: B runs more instructions per iteration"
    )


def count_dict(s: CaseState) -> dict[str, Any] | None:
    """A case's `instructions` entry of `benchmark compare --json` (None: not counted)."""
    c: CountOutcome | None = s.counts
    if c is None:
        return None
    d = c.check
    return {
        "verdict": verdict_words(c.verdict).ab,
        "ratio": d.ratio if d else None,
        "noise": d.noise if d else None,
        "median_a": d.median_a if d else None,
        "median_b": d.median_b if d else None,
        "min_effect": c.min_effect,
        "noise_floor": c.noise_floor,
        "message": c.message,
        "samples": {label: list(c.results[label].samples) for label in SIDES},
    }


def side_count_result(s: CaseState, label: str) -> CaseResult | None:
    """The case's instruction result on one side, as stored (None: not counted), with the verdict
    in `compare`."""
    c: CountOutcome | None = s.counts
    if c is None:
        return None
    r = c.results[label]
    r.compare = {
        "side": label,
        "verdict": verdict_words(c.verdict).ab,
        "ratio_b_over_a": c.check.ratio if c.check else None,
        "noise": c.check.noise if c.check else None,
        "min_effect": c.min_effect,
        "noise_floor": c.noise_floor,
    }
    return r


def markdown(job: Job) -> str:
    """The instruction rows of the comparison's Markdown ("" when not asked for)."""
    info = job.instructions
    if info is None:
        return ""
    lines = ["", "### Instruction counts (callgrind, per iteration; deterministic, one count per side)", ""]
    if not info.get("measured"):
        return "\n".join([*lines, f"Not measured: {info.get('reason')}.", ""])
    verdicts = job.count_verdicts()
    more, fewer = verdicts.count(Verdict.REGRESSION), verdicts.count(Verdict.IMPROVEMENT)
    lines += [
        f"**B runs more instructions** in {more} of {len(verdicts)} case(s)."
        if more
        else f"No case runs more instructions in B ({len(verdicts)} case(s) counted, {fewer} fewer).",
        "",
    ]
    lines += ["| Case | Verdict | A | B | B/A | Noise | Min effect |", "|---|---|---:|---:|---:|---:|---:|"]
    for s in job.states:
        c = s.counts
        if c is None:
            continue
        case = f"`{s.case.id}`"
        if c.check is None:
            lines.append(
                f"| {case} | {verdict_words(c.verdict).ab}: {str(c.message).replace('|', '/')} | | | | | |"
            )
            continue
        d = c.check
        lines.append(
            f"| {case} | {verdict_words(d.verdict).ab} | {d.median_a:,.0f} | {d.median_b:,.0f} | {d.ratio:.4f} "
            f"({_change(d.ratio)}) | {d.noise:.2%} | {d.min_effect:.0%} |"
        )
    return "\n".join([*lines, ""])
