"""A benchmark case: its config's typed parts (`Tensor`, `ProgramStep`, `Spec`, ...) and the expanded `Case`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def config_hash(config: Mapping[str, Any]) -> str:
    """A case config's hash (`SeriesKey.config_hash`): its JSON with sorted keys, sha256, 16 hex
    digits. The one serialisation of every hash the store holds: a changed config starts a new series."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tensor(_Frozen):
    """One generated input: `shape` and `dtype`, values drawn uniformly in [low, high)."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    low: float = -1.0
    high: float = 1.0
    # Whether it gets a gradient in a backward case (None: every floating input does).
    requires_grad: bool | None = None
    # Values beyond a uniform draw (resolved at expansion, `benchmark.config.expand`): "sorted",
    # "positive_definite", {"boxes_in": [height, width]} or {"sum_to": total}.
    values: str | dict[str, Any] | None = None

    def wants_grad(self) -> bool:
        """True when a backward case differentiates with respect to this input."""
        if self.requires_grad is None:
            return self.dtype.startswith(("float", "bfloat"))
        return self.requires_grad


class ProgramStep(_Frozen):
    """One op of a program case: `out = op(*inputs, **attrs)` (inputs by name, or keyword -> name)."""

    op: str
    inputs: list[str] | dict[str, str]
    attrs: dict[str, Any] = Field(default_factory=dict)
    out: str
    # Control flow (cond, case, switch_case): each branch a list of steps whose last output is the
    # branch's result; `default` where the op has one.
    branches: list[list[ProgramStep]] | None = None
    default: list[ProgramStep] | None = None

    def steps(self) -> list[ProgramStep]:
        """This step and, for control flow, every step of its branches (depth first)."""
        inner = [*(self.branches or []), *([self.default] if self.default else [])]
        return [self, *(s for branch in inner for step in branch for s in step.steps())]


class MeasureOverrides(_Frozen):
    """A case's own measurement settings (None: the run's setting)."""

    warmup_time: float | None = None
    min_rounds: int | None = None
    max_time: float | None = None
    round_time: float | None = None
    max_rounds: int | None = None
    processes: int | None = None


class Spec(_Frozen):
    """The fully expanded config of one case (no `$grid` reference left), as validated by
    `benchmark.config`. Fields of the other kinds are None."""

    name: str
    kind: str  # a registered kind (benchmark.kinds), checked by the config schema
    seed: int = 0
    measure: MeasureOverrides = Field(default_factory=MeasureOverrides)
    profile: bool = False
    backward: bool = False
    step: Literal["train", "infer"] | None = None
    # "torch" for the torch twin of an op case (a series of its own); absent for paddle.
    framework: Literal["torch"] | None = None
    # op kind
    op: str | None = None
    inputs: dict[str, Tensor] | None = None
    # Tensor-list inputs: the op's argument -> the inputs (in `inputs`, in order) passed to it as
    # one list, e.g. {"x": ["x__0", "x__1"]} for `paddle.concat(x=[x__0, x__1])`.
    lists: dict[str, list[str]] | None = None
    attrs: dict[str, Any] = Field(default_factory=dict)
    reference: str | None = None
    torch_op: str | None = None
    tolerance: dict[str, float] | None = None
    # layer kind (its inputs, lists and attrs as an op's; `args` builds it)
    layer: str | None = None
    # program kind
    feed: dict[str, Tensor] | None = None
    ops: list[ProgramStep] | None = None
    fetch: list[str] | None = None
    # model kind
    model: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    batch_size: int | None = None
    # data parallel ranks of a model case (paddle.distributed.launch); None: one process
    devices: int | None = None

    @property
    def tensors(self) -> dict[str, Tensor]:
        """The generated inputs: `inputs` of an op case, `feed` of a program case, else none."""
        return dict(self.inputs or self.feed or {})

    def grouped(self, values: dict[str, Any]) -> dict[str, Any]:
        """`values` by input name, with the parts of each tensor-list input gathered into one list
        under the list's name, at the place of its first part (the op's arguments, in order)."""
        part_of = {part: name for name, parts in (self.lists or {}).items() for part in parts}
        out: dict[str, Any] = {}
        for name, value in values.items():
            if name in part_of:
                out.setdefault(part_of[name], []).append(value)
            else:
                out[name] = value
        return out


@dataclass(frozen=True)
class Case:
    """One fully specified benchmark: config + one grid point + place + mode."""

    case_id: str  # stable and readable, without place and mode (a series is case_id+place+mode)
    place: str
    mode: str
    spec: Spec  # fully expanded; identical for every place/mode
    config_hash: str
    tags: tuple[str, ...] = ()
    source: str = ""
    line: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def config(self) -> dict[str, Any]:
        """The expanded config as plain JSON data, exactly the fields the YAML set: what is hashed
        (`config_hash`) and stored with each result."""
        return self.spec.model_dump(mode="json", exclude_unset=True)

    @property
    def id(self) -> str:
        """The pytest item id: case id + place + mode."""
        return f"{self.case_id}-{self.place.replace(':', '')}-{self.mode}"

    @property
    def measure(self) -> dict[str, Any]:
        """The measurement settings this case overrides (those not None)."""
        return self.spec.measure.model_dump(exclude_none=True)

    @property
    def device(self) -> str:
        return "gpu" if self.place.startswith("gpu") else "cpu"

    def to_json(self) -> dict[str, Any]:
        """The case as JSON data (the worker protocol); `from_json` gives it back."""
        return {
            "case_id": self.case_id,
            "place": self.place,
            "mode": self.mode,
            "config": self.config,
            "config_hash": self.config_hash,
            "tags": list(self.tags),
            "source": self.source,
            "line": self.line,
            "params": dict(self.params),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Case:
        """The case `to_json` gave."""
        return cls(
            case_id=data["case_id"],
            place=data["place"],
            mode=data["mode"],
            spec=Spec.model_validate(data["config"]),
            config_hash=data["config_hash"],
            tags=tuple(data.get("tags") or ()),
            source=data.get("source") or "",
            line=data.get("line"),
            params=dict(data.get("params") or {}),
        )
