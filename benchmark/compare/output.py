"""What a comparison reports: the printed lines, the job as JSON, and both sides stored in the
history as two runs of one run group."""

from __future__ import annotations

import datetime as dt
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmark.analysis import sequential as seq
from benchmark.analysis.processes import summarize_processes
from benchmark.compare.instruction_counts import count_dict, side_count_result
from benchmark.compare.job import SIDES, CaseState, Job
from benchmark.compare.render import inconclusive_words
from benchmark.datamodel import environment
from benchmark.datamodel.result import CaseResult, Stats
from benchmark.datamodel.verdict import Verdict, verdict_words
from benchmark.units import format_ratio_change

if TYPE_CHECKING:  # the heavy modules are imported where they are used, so `--help` stays light
    from benchmark.datamodel.result import CaseResult
    from benchmark.datamodel.verdict import Verdict, verdict_words


def case_line(s: CaseState) -> str:
    """One printed row: verdict, case, B/A ratio, interval, pairs (and what an inconclusive one needs)."""

    head = f"{verdict_words(s.verdict).ab.upper():<13} {s.case.id} [{s.case.place} {s.case.mode}]"
    d = s.decision
    if s.error is not None:
        return f"{head}  {s.error}"
    if s.skipped is not None:
        return f"{head}  {s.skipped}"
    if d is None or not math.isfinite(d.ci_low):
        n = len(s.pairs)
        return f"{head}  {n} pair(s): too few for an interval (at least {seq.MIN_PAIRS})"
    change, low, high = (format_ratio_change(x) for x in (d.ratio, d.ci_low, d.ci_high))
    text = (
        f"{head}  B/A {d.ratio:.3f} ({change}), interval [{low}, {high}], "
        f"{len(s.pairs)} pairs, min effect {d.min_effect:.0%}"
    )
    if d.verdict == Verdict.INCONCLUSIVE:
        text += f": {inconclusive_words(d)}"
    return text


def job_dict(job: Job) -> dict[str, Any]:
    """The job as plain data (`benchmark compare --json`): sides, one entry per case, how it ended."""

    def num(x):
        return x if x is not None and math.isfinite(x) else None

    cases = []
    for s in job.states:
        d = s.decision
        cases.append(
            {
                "case": s.case.id,
                "case_id": s.case.case_id,
                "place": s.case.place,
                "mode": s.case.mode,
                "verdict": verdict_words(s.verdict).ab,
                "ratio": num(d.ratio) if d else None,
                "ci_low": num(d.ci_low) if d else None,
                "ci_high": num(d.ci_high) if d else None,
                "confidence": num(d.confidence) if d else None,
                "look": d.look if d else 0,
                "pairs": len(s.pairs),
                "pairs_needed": d.pairs_needed if d else None,
                "spread": num(d.spread) if d else None,
                "min_effect": s.min_effect,
                "message": s.error or s.skipped,
                "values": {k: [e.value for e in s.entries[k]] for k in SIDES},
                "probes": {k: [e.probe_s for e in s.entries[k]] for k in SIDES},  # None: not timed
                "instructions": count_dict(s),
            }
        )
    return {
        "exit_code": job.exit_code(),
        "sides": {k: {"python": v.python, **v.info} for k, v in job.sides.items()},
        "cases": cases,
        "steps": job.steps,
        "elapsed_s": job.elapsed_s,
        "budget_s": job.budget_s,
        "alpha": job.alpha,
        "stopped": job.stopped,
        "seed": job.seed,
        "pairing": job.pairing,
        "core": job.core,
        "run_group": job.run_group,
        "run_ids": job.run_ids,
        "instructions": job.instructions,
    }


def side_result(state: CaseState, label: str) -> CaseResult:
    """The case's result on one side: per-process entries, pooled samples, run value."""

    r = CaseResult.for_case(state.case)
    r.processes = list(state.entries[label])
    r.finished_at = time.time()
    pooled, stats = summarize_processes(r.processes)
    if state.skipped is not None:
        r.status, r.message = "skipped", state.skipped
    elif stats.processes == 0 or (state.error and state.error.startswith(f"side {label}:")):
        r.status, r.message = "error", state.error or "no trial measured"
        r.samples, r.stats = [], Stats(rounds=0, processes=stats.processes)
    else:
        r.samples, r.stats = pooled, stats
        r.iterations = next((e.iterations for e in r.processes if e.status == "ok"), 1)
    d = state.decision
    r.compare = {
        "side": label,
        "verdict": verdict_words(state.verdict).ab,
        "ratio_b_over_a": d.ratio if d else None,
        "ci_low": d.ci_low if d else None,
        "ci_high": d.ci_high if d else None,
        "confidence": d.confidence if d else None,
        "pairs": len(state.pairs),
        "min_effect": state.min_effect,
    }
    return r


def store_job(store, job: Job, *, root: Path, run_group: str | None = None) -> dict[str, int]:
    """Store both sides as two runs of one run group (default "compare-<UTC timestamp>"), each with
    a note naming its side, interpreter and paddle version, its time results and (--instructions)
    its instruction results; returns the run ids by side."""

    ended = dt.datetime.now(dt.timezone.utc)
    started = ended - dt.timedelta(seconds=job.elapsed_s)  # each side's run spans the whole job
    group = run_group or "compare-" + ended.strftime("%Y%m%dT%H%M%SZ")
    machine = environment.collect_machine()
    fp = machine.get("fingerprint") or environment.fingerprint(machine)
    ids = {}
    for label in SIDES:
        side = job.sides[label]
        run_info = environment.collect_run(side.info.get("framework") or {}, trigger="compare", cwd=root)
        counted = [r for r in (side_count_result(s, label) for s in job.states) if r is not None]
        run_info.update(
            started_at=started,
            run_group=group,
            expected_results=len(job.states) + len(counted),
            note=f"compare side {label}: {side.python}, paddle {side.paddle_version}",
            compare={
                "side": label,
                "python": side.python,
                "python_version": side.info.get("python_version"),
                "seed": job.seed,
                "pairing": job.pairing,
                "core": job.core,
                "steps": job.steps,
                "alpha": job.alpha,
                "stopped": job.stopped,
            },
        )
        if job.instructions is not None:
            run_info["instructions"] = job.instructions
        side_machine = environment.MachineDescription.of({**machine, "fingerprint": f"{fp}/compare-{label}"})
        run_id = store.begin_run(side_machine, environment.RunDescription.of(run_info))
        results = [side_result(s, label) for s in job.states] + counted
        store.add_results(run_id, results)
        if job.interrupted:  # kept, but never a baseline: the gate takes complete runs only
            store.finish_run(
                run_id, "interrupted", finished_at=ended, note=f"{run_info['note']}; {job.stopped}"
            )
        else:
            store.finish_run(run_id, "complete", finished_at=ended, note=run_info["note"])
        ids[label] = run_id
    job.run_ids, job.run_group = ids, group
    return ids
