"""Gate settings: `configs/gates.yaml` -> the thresholds that apply to each case.

    defaults:
      metric: time          # time (lower is better), throughput (higher is better), memory (lower)
      min_effect: 0.05      # smallest relative change that fails a run
      alpha: 0.01           # significance of A/B tests; false discovery rate across a run
      history_runs: 100     # runs of a series the history gate looks at
    instructions:           # instruction-count series (pytest benchmark/ --bench-instructions)
      min_effect: 0.01      # 1%: the counts repeat to ~0.01% between runs
      noise_floor: 0.001    # the noise assumed at least, relative
    overrides:              # first match wins, on top of the defaults
      - match: "lstm-*"     # glob on the case id (or its name)
        place: "gpu*"       # optional glob on the place
        metric: throughput
        min_effect: 0.08

Loaded with the same care as the benchmark configs: safe YAML, unknown fields rejected, one clear
line per problem naming the file and the field.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchmark.paths import GATES_PATH

METRICS = {"time": False, "throughput": True, "memory": False, "instructions": False}  # higher is better?


class GateError(Exception):
    """gates.yaml cannot be used; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GateDefaults(_Strict):
    metric: Literal["time", "throughput", "memory"] = "time"
    min_effect: float = Field(0.05, ge=0, lt=10)
    alpha: float = Field(0.01, gt=0, lt=0.5)
    history_runs: int = Field(100, ge=8)


class GateOverride(_Strict):
    match: str
    place: str | None = None
    # "instructions": the override sets the minimum effect of the case's instruction-count series
    # (pytest --bench-instructions) and leaves its time series alone.
    metric: Literal["time", "throughput", "memory", "instructions"] | None = None
    min_effect: float | None = Field(None, ge=0, lt=10)


class InstructionGate(_Strict):
    """Instruction counts (callgrind, per iteration): nearly deterministic, so a small minimum effect
    and a noise floor instead of a noise estimate (benchmark/analysis/deterministic.py)."""

    min_effect: float = Field(0.01, ge=0, lt=10)
    noise_floor: float = Field(0.001, ge=0, lt=1)


class GatesFile(_Strict):
    defaults: GateDefaults = Field(default_factory=GateDefaults)
    instructions: InstructionGate = Field(default_factory=InstructionGate)
    overrides: list[GateOverride] = Field(default_factory=list)


@dataclass(frozen=True)
class GateSettings:
    """What applies to one case: the metric, its direction and the minimum effect."""

    metric: str
    min_effect: float
    alpha: float
    history_runs: int
    noise_floor: float = 0.0  # relative; the instructions metric's floor under its noise

    @property
    def higher_is_better(self) -> bool:
        return METRICS[self.metric]


@dataclass(frozen=True)
class Gates:
    spec: GatesFile
    source: str

    def for_case(
        self, case_id: str, name: str | None = None, place: str | None = None, series_metric: str = "time"
    ) -> GateSettings:
        """The settings of a case's series: its time series (`series_metric` "time": the metric is
        time or throughput, per the defaults and overrides) or its instruction-count series
        ("instructions": the `instructions` section and the overrides that say `metric: instructions`)."""
        d = self.spec.defaults
        instructions = series_metric == "instructions"
        metric, min_effect = (
            ("instructions", self.spec.instructions.min_effect) if instructions else (d.metric, d.min_effect)
        )
        for o in self.spec.overrides:
            if (o.metric == "instructions") != instructions:
                continue
            hit = fnmatch.fnmatchcase(case_id, o.match) or (
                name is not None and fnmatch.fnmatchcase(name, o.match)
            )
            if hit and (o.place is None or (place is not None and fnmatch.fnmatchcase(place, o.place))):
                metric = o.metric or metric
                min_effect = o.min_effect if o.min_effect is not None else min_effect
                break
        return GateSettings(
            metric=metric,
            min_effect=min_effect,
            alpha=d.alpha,
            history_runs=d.history_runs,
            noise_floor=self.spec.instructions.noise_floor if instructions else 0.0,
        )


def with_min_effect(gates: Gates, min_effect: float | None) -> Gates:
    """The same gates with another default minimum effect (None: unchanged)."""
    if min_effect is None:
        return gates
    defaults = gates.spec.defaults.model_copy(update={"min_effect": float(min_effect)})
    return Gates(gates.spec.model_copy(update={"defaults": defaults}), gates.source)


DEFAULT_GATES_PATH = GATES_PATH


def load_gates(path: str | Path | None) -> Gates:
    """Read gates.yaml; a missing file means the defaults. Raises GateError with a clear line."""
    if path is None or not Path(path).exists():
        return Gates(GatesFile(), "(defaults)")
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise GateError(f"{where}: YAML error: {getattr(e, 'problem', None) or e}") from None
    try:
        return Gates(GatesFile.model_validate(data), str(path))
    except ValidationError as e:
        problems = "; ".join(
            f"field {'.'.join(str(p) for p in err['loc'])!r}: "
            + ("unknown field" if err["type"] == "extra_forbidden" else err["msg"])
            for err in e.errors()
        )
        raise GateError(f"{path}: {problems}") from None
