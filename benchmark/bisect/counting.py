"""Measuring one build of a bisection: the selected CPU cases' instruction counts under callgrind
in that build's interpreter, with this checkout's harness first on its PYTHONPATH (as `benchmark
compare --instructions` counts each side). A build whose interpreter cannot import paddle and the
harness is skipped with one line."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from benchmark.compare.sides import CompareError, check_side
from benchmark.instructions.counting_pass import InstructionPass

if TYPE_CHECKING:
    from benchmark.compare.sides import Side
    from benchmark.datamodel.case import Case
    from benchmark.datamodel.result import CaseResult
    from benchmark.instructions.callgrind import Tooling


def count_build(
    label: str,
    python: str,
    cases: Sequence[Case],
    *,
    root: Path,
    tooling: Tooling,
    say: Callable[[str], None] = lambda line: None,
    results: dict[str, CaseResult] | None = None,
    sides: dict[str, Side] | None = None,
    jobs: int = 1,
) -> dict[str, float | None] | None:
    """Each case's instructions per iteration (the median of its samples; None: not counted) on
    the build `python`, counted in up to `jobs` workers at once; None when the build cannot be
    used (said in one line). `results` gets each case's CaseResult, `sides["side"]` the build's
    checked interpreter."""

    try:
        side = check_side(label, python, root)
    except CompareError as e:
        say(f"bisect: skipping build {e}")
        return None
    if sides is not None:
        sides["side"] = side
    say(f"bisect: counting {len(cases)} case(s) on {side.describe()}")
    counter = InstructionPass(tooling, python=side.python, environ=side.env, jobs=min(jobs, len(cases)))
    values: dict[str, float | None] = {}
    try:
        futures = counter.start(list(cases))
        for case in cases:
            r = futures[case.id].result()
            if results is not None:
                results[case.id] = r
            values[case.id] = statistics.median(r.samples) if r.status == "ok" and r.samples else None
            if values[case.id] is None:
                say(f"bisect: {case.id} not counted on build {label} ({r.message or r.status})")
    finally:
        counter.close()
    return values
