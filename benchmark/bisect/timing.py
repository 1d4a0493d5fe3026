"""Measuring one build of a bisection in time (`benchmark bisect --metric time`): the build against
the first build of the range with the paired sequential test of `benchmark compare` (A = the first
build, B = this one), each case until it is slower, the same or faster, or the budget is spent.

A case's value is the B/A ratio of its time per iteration when the test decided (slower, same or
faster: a ratio that the search compares with the case's minimum effect, as it compares instruction
counts), None when it stayed inconclusive: the search then treats the build as skipped for that
case, and says so, rather than guess.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from benchmark.compare import job as jobs
from benchmark.compare.output import side_result
from benchmark.datamodel.verdict import Verdict
from benchmark.execution import measure

if TYPE_CHECKING:
    from benchmark.compare.sides import Side
    from benchmark.datamodel.case import Case
    from benchmark.datamodel.result import CaseResult

DECIDED = (Verdict.REGRESSION, Verdict.PASS, Verdict.IMPROVEMENT)


def time_build(
    label: str,
    cases: Sequence[Case],
    first: Side,
    side: Side,
    *,
    min_effect: Callable[[Case], float],
    budget_s: float,
    alpha: float = jobs.DEFAULT_ALPHA,
    max_pairs: int = jobs.DEFAULT_MAX_PAIRS,
    say: Callable[[str], None] = lambda line: None,
    results: dict[str, CaseResult] | None = None,
    worker_output=None,
    quick: bool = False,
) -> dict[str, float | None]:
    """Each case's B/A ratio of build `side` against the first build (None: inconclusive or not
    measured; said in one line). `results` gets each case's CaseResult on this build. Ctrl-C
    stops the comparison and is raised again, so that the search stops with what it measured.
    `quick`: the quick measurement settings of `benchmark compare --quick` (a smoke test)."""
    say(
        f"bisect: timing {len(cases)} case(s) on build {label} against the first build (budget {budget_s:.0f} s)"
    )
    job = jobs.run_job(
        cases,
        {"A": first, "B": side},
        min_effect=min_effect,
        settings=dataclasses.replace(
            measure.MeasureSettings.quick() if quick else measure.MeasureSettings(), probe=False
        ),  # pairs are judged on their ratio: no reference probe
        budget_s=budget_s,
        alpha=alpha,
        max_pairs=max_pairs,
        progress=say,
        worker_output=worker_output,
    )
    values: dict[str, float | None] = {}
    for state in job.states:
        if results is not None:
            results[state.case.id] = side_result(state, "B")
        decision = state.decision
        if state.verdict in DECIDED and decision is not None:
            values[state.case.id] = decision.ratio
        else:
            values[state.case.id] = None
            why = state.error or state.skipped or f"inconclusive after {len(state.pairs)} pair(s)"
            say(f"bisect: {state.case.id} on build {label}: {why}")
    if job.interrupted:
        raise KeyboardInterrupt
    return values
