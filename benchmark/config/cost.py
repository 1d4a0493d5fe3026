"""A rough upper estimate of what running validated cases costs, in seconds (issue 44: a data-only
pull request gets a budget on the GPU runner, checked by `benchmark validate --budget` before
anything runs). No framework is imported; the figures are deliberately generous.

Per item (a case at one place and mode): each worker process runs one trial, which takes the
measure settings' budget (`limits.trial_budget_s`: warmup, then the timed rounds; `--bench-quick`'s
settings by default, with the case's own `measure` on top) plus a start-up allowance; then the
inputs are generated once per process (bytes at `GENERATE_BYTES_PER_S`, and a positive-definite
input's n^3 product at `FLOPS`); then the case is built once per process: its kind's
`build_seconds` (`benchmark.kinds`; a program case `STEP_BUILD_S` a step, branches included: a
`switch_case` of 6,000 branches took 5 min 52 s on the GPU runner, about 0.06 s a step).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from benchmark import kinds
from benchmark.datamodel.case import Case
from benchmark.execution.measure import MeasureSettings
from benchmark.sandbox.limits import QUICK_PROCESSES, trial_budget_s

START_S = 1.0  # preparing a case in a worker that has paddle imported
GENERATE_BYTES_PER_S = 5e8
FLOPS = 2e9  # numpy's matmul on one loaded core
QUICK = dataclasses.asdict(MeasureSettings.quick())  # --bench-quick's settings


def item_seconds(case: Case) -> float:
    """The estimate for one item (see the module's docstring)."""
    spec = case.spec
    measure = {k: v for k, v in spec.measure.model_dump().items() if v is not None}
    settings = {**QUICK, **measure}
    processes = int(measure.get("processes") or QUICK_PROCESSES)
    tensors = {**(spec.inputs or {}), **(spec.feed or {})}
    gen = 0.0
    for t in tensors.values():
        n = math.prod(t.shape)
        gen += n * 8 / GENERATE_BYTES_PER_S
        if t.values == "positive_definite" and len(t.shape) >= 2:
            gen += (n // t.shape[-1] // t.shape[-2]) * t.shape[-1] ** 3 * 2 / FLOPS
    build = kinds.get(case.kind).build_seconds(spec)
    return processes * (START_S + trial_budget_s(settings) + gen + build)


def estimate(cases: Iterable[Case], tag: str | None = None) -> list[tuple[float, Case]]:
    """(seconds, case) of every item (of the cases tagged `tag`, when given), costliest first."""
    rows = [(item_seconds(c), c) for c in cases if tag is None or tag in c.tags]
    return sorted(rows, key=lambda r: -r[0])
