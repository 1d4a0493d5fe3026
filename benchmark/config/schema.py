"""The config schema: pydantic models of a config file and its cases (values may still hold `$grid`
references, checked after expansion), the name patterns and caps, and the plain-data checks.
Every problem becomes one `ConfigIssue` naming the file, the case, the field and the YAML line."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from benchmark import kinds
from benchmark.sandbox import allowlist
from benchmark.sandbox.limits import MEASURE_CEILINGS

MODES = ("dynamic", "static", "to_static")
DTYPES = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "bool": 1,
}
# Every pattern is used with fullmatch (a trailing newline never passes) and is ASCII only.
PLACE_RE = re.compile(r"cpu|gpu(:\d+)?", re.ASCII)
NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*", re.ASCII)
TAG_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*", re.ASCII)
MODEL_RE = re.compile(r"[a-z][a-z0-9_]*", re.ASCII)
KEY_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*", re.ASCII)
VAR_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)", re.ASCII)
# What a case id may hold (it names files under --bench-trace-dir): anything else becomes '_'.
# Caps checked before anything is expanded or allocated; each has an override where it is used.
# (DEFAULT_MAX_CASES and DEFAULT_MAX_BYTES live in benchmark.sandbox.limits, imported above.)
MAX_YAML_DEPTH = 32  # nesting of mappings and lists in a config file
MAX_DEVICES = 64  # data parallel ranks of one model case
MAX_STRING = 256  # characters of a string value in attrs, args or a grid
MAX_VALUES = 10_000  # scalars inside one attrs, args or grid value
# Files under a config directory that hold settings, not cases.
NOT_CASE_FILES = ("gates.yaml", "gates.yml", "allowlist.yaml", "allowlist.yml", "index_inputs.yaml")


class ConfigError(Exception):
    """One or more problems in config files; `issues` holds each as a ConfigIssue."""

    def __init__(self, issues: Sequence[ConfigIssue]):
        self.issues = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))


@dataclass(frozen=True)
class ConfigIssue:
    file: str
    case: str | None
    field: str | None
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        parts = [where]
        if self.case:
            parts.append(f"case {self.case!r}")
        if self.field:
            parts.append(f"field {self.field!r}")
        return ": ".join(parts) + f": {self.message}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class IndexSpec(_Strict):
    """An index input: integers in [low, size of dimension `dim` of input `of`), whatever the grid
    makes that size (resolved after expansion into the input's `low` and `high`); `inclusive` takes
    the size itself too (a length or a count up to it). `dim` may be `min` (the smallest dimension:
    coordinates into every dimension, gather_nd) or, for a tensor-list input, `count` (how many
    tensors it holds: multiplex)."""

    of: str
    dim: int | str = 0
    low: int = Field(default=0, ge=0)
    inclusive: bool = False

    @field_validator("of")
    @classmethod
    def _of(cls, v: str) -> str:
        if not KEY_RE.fullmatch(v):
            raise ValueError(f"{v!r}: expected the name of another input of this case")
        return v

    @field_validator("dim")
    @classmethod
    def _dim(cls, v: int | str) -> int | str:
        if isinstance(v, str) and not VAR_RE.fullmatch(v) and v not in ("min", "count"):
            raise ValueError(f"expected an integer dimension, min, count or a $grid reference, got {v!r}")
        return v


class ValuesOf(_Strict):
    """Values drawn from another input's shape (exactly one of): boxes inside its image, counts adding
    up to its first dimension, positions in the output of unpooling it (max_unpool*'s indices),
    node ids of the CSC graph whose column pointers it is, or the column pointers of the CSC graph
    whose rows it holds."""

    boxes_in: str | None = None
    sum_of: str | None = None
    unpool_of: str | None = None
    nodes_of: str | None = None
    colptr_of: str | None = None
    # with boxes_in: the range of the boxes' sides in pixels (default: 1 to half the image)
    side: list[float] | None = None

    @model_validator(mode="after")
    def _one(self) -> ValuesOf:
        names = [
            n
            for n in (self.boxes_in, self.sum_of, self.unpool_of, self.nodes_of, self.colptr_of)
            if n is not None
        ]
        if len(names) != 1:
            raise ValueError(
                "expected one of boxes_in, sum_of, unpool_of, nodes_of or colptr_of, naming another input"
            )
        if not KEY_RE.fullmatch(names[0]):
            raise ValueError(f"{names[0]!r}: expected the name of another input of this case")
        if self.side is not None and (
            self.boxes_in is None or len(self.side) != 2 or not 0 < self.side[0] <= self.side[1]
        ):
            raise ValueError("side: expected [low, high] with 0 < low <= high, beside boxes_in")
        return self


OPT_IN_TAGS = frozenset(
    {"slow", "pb"}
)  # cases that run only when a tag of theirs is asked for (pb: the legacy corpus)
MAX_LIST_TENSORS = 256  # tensors in one tensor-list input (they count toward the case's memory cap)


class TensorSpec(_Strict):
    shape: Any = None
    # A tensor-list input: the op gets these tensors as one list argument (e.g. paddle.concat's x);
    # each has its own shape and dtype. A case lists at most MAX_LIST_TENSORS of them per input.
    tensors: list[TensorSpec] | str | None = None  # a list, or a $grid reference to one (grids may vary N)
    dtype: str = "$dtype"
    low: float = -1.0
    high: float = 1.0
    # Inputs that get a gradient in backward cases (default: every floating input).
    requires_grad: bool | None = None
    # An index input (its dtype defaults to int64; `low` and `high` come from the indexed input).
    index: IndexSpec | None = None
    # Values an op needs beyond a range (benchmark.datamodel.case.Tensor.values): "sorted" (ascending along the
    # last axis: segment ids), "positive_definite" (square matrices in the last two dimensions:
    # cholesky), {boxes_in: <input>, side: [low, high]} ([N, 4] boxes x1, y1, x2, y2 inside that NCHW
    # input's image, their sides in [low, high] pixels, by default 1 to half the image) or
    # {sum_of: <input>} (integers adding up to that input's first dimension: boxes per image).
    values: Literal["sorted", "positive_definite"] | ValuesOf | None = None

    @model_validator(mode="after")
    def _index_dtype(self) -> TensorSpec:
        if self.index is not None and self.dtype == "$dtype":
            self.dtype = "int64"
        return self

    @model_validator(mode="after")
    def _shape_or_tensors(self) -> TensorSpec:
        if self.tensors is None and self.shape is None:
            raise ValueError("expected a shape (one tensor) or tensors (a list of them)")
        if isinstance(self.tensors, str):
            if not VAR_RE.fullmatch(self.tensors):
                raise ValueError(
                    f"tensors: expected a list of tensors or a $grid reference, got {self.tensors!r}"
                )
        elif self.tensors is not None:
            if self.shape is not None or self.index is not None:
                raise ValueError(
                    "a tensor list gives each tensor its own shape: no shape or index beside tensors"
                )
            if not 1 <= len(self.tensors) <= MAX_LIST_TENSORS:
                raise ValueError(
                    f"tensors: expected 1 to {MAX_LIST_TENSORS} tensors, got {len(self.tensors)}"
                )
            if any(t.tensors is not None for t in self.tensors):
                raise ValueError("tensors: a tensor of a list cannot be a list itself")
        return self

    @field_validator("shape", mode="before")
    @classmethod
    def _shape(cls, v: Any) -> Any:
        if v is None:
            return v
        if isinstance(v, str) and VAR_RE.fullmatch(v):
            return v
        if isinstance(v, list) and all(
            (isinstance(d, int) and not isinstance(d, bool)) or (isinstance(d, str) and VAR_RE.fullmatch(d))
            for d in v
        ):
            return v
        raise ValueError(
            f"expected a list of integers such as [1000, 1000] (an element may be a $grid reference), "
            f"or a $grid reference; got {v!r}"
        )


class MeasureSpec(_Strict):
    warmup_time: float | None = Field(default=None, ge=0, description="seconds of warmup before timing")
    min_rounds: int | None = Field(default=None, ge=1)
    max_time: float | None = Field(default=None, gt=0, description="seconds of timed rounds (target)")
    round_time: float | None = Field(default=None, gt=0, description="target seconds per round")
    max_rounds: int | None = Field(default=None, ge=1)
    processes: int | None = Field(
        default=None,
        ge=1,
        description="worker processes that measure the case (default: the run's --bench-processes)",
    )

    @field_validator(*MEASURE_CEILINGS, mode="after")
    @classmethod
    def _ceiling(cls, v: float | int | None, info: ValidationInfo) -> float | int | None:
        ceiling, unit = MEASURE_CEILINGS[str(info.field_name)]
        if v is not None and v > ceiling:
            raise ValueError(
                f"{v:g} is above the ceiling of {ceiling:g} {unit} a config may ask for "
                "(the sandbox limit on a case's budget, see docs/sandbox.md)"
            )
        return v


# Control flow a program step may run (`op` with `branches`): how its inputs and branches are
# passed. A branch is a list of steps, its result the last step's output; a config gives no other
# function, so these take nothing but the harness's own closures over the branches.
CONTROL_FLOW = {
    "paddle.static.nn.cond": "inputs: [pred]; branches: [when true, when false]",
    "paddle.static.nn.switch_case": "inputs: [index]; branches: [when 0, when 1, ...]; default optional",
    "paddle.static.nn.case": "inputs: [pred, ...]; branches: one per pred, the first true runs; default optional",
}
MAX_BRANCH_DEPTH = 2  # a branch may hold control flow whose branches hold none


class ProgramOp(_Strict):
    op: str
    inputs: list[str] | dict[str, str]
    attrs: dict[str, Any] = Field(default_factory=dict)
    out: str
    # control flow (CONTROL_FLOW): each branch a list of steps; `default` where the op has one
    branches: list[list[ProgramOp]] | None = None
    default: list[ProgramOp] | None = None

    @field_validator("op")
    @classmethod
    def _op_name(cls, v: str) -> str:
        return check_op_name(v)

    @model_validator(mode="after")
    def _branches(self) -> ProgramOp:
        if self.op not in CONTROL_FLOW:
            if self.branches is not None or self.default is not None:
                raise ValueError(f"branches: only control flow takes them ({', '.join(CONTROL_FLOW)})")
            return self
        if self.branches is None or not isinstance(self.inputs, list):
            raise ValueError(f"{self.op} needs a list of inputs and branches: {CONTROL_FLOW[self.op]}")
        if any(not b for b in [*self.branches, *([self.default] if self.default is not None else [])]):
            raise ValueError("branches: each branch is a non-empty list of steps")
        n, name = len(self.branches), self.op.rpartition(".")[2]
        wanted = {"cond": (1, 2, False), "switch_case": (1, None, True), "case": (n, n, True)}[name]
        inputs, branches, default = wanted
        if len(self.inputs) != inputs or (branches is not None and n != branches) or n == 0:
            raise ValueError(f"{self.op}: {CONTROL_FLOW[self.op]}")
        if self.default is not None and not default:
            raise ValueError(f"{self.op} takes no default")
        if _depth(self) > MAX_BRANCH_DEPTH:
            raise ValueError(f"branches nest {_depth(self)} deep, more than {MAX_BRANCH_DEPTH}")
        return self

    @field_validator("attrs")
    @classmethod
    def _plain(cls, v: dict[str, Any]) -> dict[str, Any]:
        return check_plain(v)


def _depth(step: ProgramOp) -> int:
    inner = [s for b in [*(step.branches or []), *([step.default] if step.default else [])] for s in b]
    return 1 + max((_depth(s) for s in inner), default=0) if step.branches is not None else 0


class CaseSpec(_Strict):
    name: str
    kind: str  # a registered kind (benchmark.kinds): its module says which fields it takes

    description: str | None = None
    places: list[str] = Field(default_factory=lambda: ["cpu", "gpu"])
    modes: list[str] = Field(default_factory=lambda: ["dynamic"])
    dtypes: list[str] = Field(default_factory=lambda: ["float32"])
    backward: bool | list[bool] = False
    tags: list[str] = Field(default_factory=list)
    seed: int = 2024
    grid: dict[str, list[Any]] | list[dict[str, Any]] | None = None
    measure: MeasureSpec = Field(default_factory=MeasureSpec)
    profile: bool = False
    # op kind
    op: str | None = None
    inputs: dict[str, TensorSpec] | None = None
    attrs: dict[str, Any] = Field(default_factory=dict)
    reference: str | None = None
    torch_op: str | None = None
    tolerance: dict[str, float] | None = None
    # layer kind: a class on the allowlist's `layer` section, built once from `args` (its constructor's
    # keyword arguments, benchmark.sandbox.nn_layers.check_args); the step is its forward on `inputs` with `attrs`
    layer: str | None = None
    # program kind
    feed: dict[str, TensorSpec] | None = None
    ops: list[ProgramOp] | None = None
    fetch: list[str] | None = None
    # model kind
    model: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    step: Literal["train", "infer"] | list[Literal["train", "infer"]] | None = None
    batch_size: int | str | None = None
    # data parallel: the training step on this many ranks through paddle.distributed.launch (CPU
    # ranks or GPUs), with the throughput per rank and the scaling efficiency against one rank
    devices: int | None = Field(default=None, ge=1, le=MAX_DEVICES)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.fullmatch(v):
            raise ValueError("expected a name of letters, digits, '_', '.', '-' starting with a letter")
        return v

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        kinds.get(v)  # KindError (a ValueError) naming the known kinds
        return v

    @field_validator("places")
    @classmethod
    def _places(cls, v: list[str]) -> list[str]:
        for p in v:
            if not isinstance(p, str) or not PLACE_RE.fullmatch(p):
                raise ValueError(f"unknown place {p!r}: expected 'cpu', 'gpu' or 'gpu:N'")
        if not v:
            raise ValueError("expected at least one place")
        return v

    @field_validator("modes")
    @classmethod
    def _modes(cls, v: list[str]) -> list[str]:
        for m in v:
            if m not in MODES:
                raise ValueError(f"unknown mode {m!r}: expected one of {', '.join(MODES)}")
        if not v:
            raise ValueError("expected at least one mode")
        return v

    @field_validator("dtypes")
    @classmethod
    def _dtypes(cls, v: list[str]) -> list[str]:
        for d in v:
            check_dtype(d)
        return v

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: list[str]) -> list[str]:
        for t in v:
            if not TAG_RE.fullmatch(t):
                raise ValueError(f"tag {t!r}: expected letters, digits and '_' (it becomes a pytest marker)")
        return v

    @field_validator("op")
    @classmethod
    def _op(cls, v: str | None) -> str | None:
        return None if v is None else check_op_name(v)

    @field_validator("layer")
    @classmethod
    def _layer(cls, v: str | None) -> str | None:
        return None if v is None else _allowed("layer", v)

    @field_validator("reference")
    @classmethod
    def _reference(cls, v: str | None) -> str | None:
        return None if v is None else _allowed("reference", v)

    @field_validator("torch_op")
    @classmethod
    def _torch_op(cls, v: str | None) -> str | None:
        return None if v is None else _allowed("torch_op", v)

    @field_validator("attrs", "args")
    @classmethod
    def _plain(cls, v: dict[str, Any]) -> dict[str, Any]:
        return check_plain(v)

    @field_validator("grid")
    @classmethod
    def _grid(cls, v: Any) -> Any:
        points = v if isinstance(v, list) else [v]
        for point in points:
            check_plain(point)
        return v

    @field_validator("tolerance", mode="before")
    @classmethod
    def _tolerance(cls, v: Any) -> Any:
        """rtol and/or atol, each a finite non-negative number (`atol: .inf` would pass every check;
        a misspelt key would leave the default in force), refused here rather than at run time."""
        if v is None:
            return v
        if not isinstance(v, dict):
            raise ValueError(f"expected a mapping with rtol and/or atol, got {v!r}")
        unknown = sorted(str(k) for k in v if k not in ("rtol", "atol"))
        if unknown:
            raise ValueError(f"unknown key(s) {unknown}: expected rtol and/or atol")
        for key, value in v.items():
            if (
                not isinstance(value, (int, float))
                or isinstance(value, bool)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ValueError(f"{key}: expected a finite non-negative number, got {value!r}")
        return v

    @field_validator("model")
    @classmethod
    def _model(cls, v: str | None) -> str | None:
        if v is not None and not MODEL_RE.fullmatch(v):
            raise ValueError(f"{v!r}: expected the name of a registered model builder, e.g. 'lstm'")
        return v

    @model_validator(mode="after")
    def _kind_fields(self) -> CaseSpec:
        kind = kinds.get(self.kind)
        for f in kind.required:
            if getattr(self, f) is None:
                raise ValueError(f"field {f!r} is required for kind {self.kind!r}")
        for f in kind.forbidden:
            if getattr(self, f) is not None:
                raise ValueError(f"field {f!r} does not apply to kind {self.kind!r}")
        if kind.steps is not None and self.step is None:
            self.step = list(kind.steps)
        if self.devices is not None and self.step not in ("train", ["train"]):
            raise ValueError("field 'devices': data parallel runs the train step only (step: train)")
        return self


class FileSpec(_Strict):
    defaults: dict[str, Any] = Field(default_factory=dict)
    cases: list[dict[str, Any]]


def _allowed(field: str, v: str) -> str:
    reason = allowlist.check(field, v)
    if reason:
        raise ValueError(reason)
    return v


def check_op_name(v: str) -> str:
    """`v` when it names an operator on the allowlist (`configs/allowlist.yaml`), else ValueError."""
    return _allowed("op", v)


def check_plain(value: Any) -> Any:
    """`value` when it is plain data: numbers, booleans, None, short strings, and lists or mappings
    (with name-like keys) of those, at most MAX_VALUES scalars; else ValueError saying what is not."""
    count = 0

    def visit(v: Any, where: str) -> None:
        nonlocal count
        count += 1
        if count > MAX_VALUES:
            raise ValueError(f"more than {MAX_VALUES} values: expected a small mapping of plain values")
        if isinstance(v, float) and not math.isfinite(v):
            # stored and hashed as JSON, which has no infinity or NaN: the config would change
            raise ValueError(
                f"{where or 'value'}: {v} is not a finite number (a config holds finite numbers)"
            )
        if v is None or isinstance(v, (bool, int, float)):
            return
        if isinstance(v, str):
            if len(v) > MAX_STRING or not v.isprintable():
                raise ValueError(f"{where}: expected a printable string of at most {MAX_STRING} characters")
            return
        if isinstance(v, list):
            for i, x in enumerate(v):
                visit(x, f"{where}[{i}]")
            return
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str) or not KEY_RE.fullmatch(k):
                    raise ValueError(f"{where}: key {k!r} is not a plain name (letters, digits, '_')")
                visit(x, f"{where}.{k}" if where else k)
            return
        raise ValueError(
            f"{where or 'value'}: {type(v).__name__} is not a plain value "
            "(expected numbers, booleans, null, strings, and lists or mappings of those)"
        )

    visit(value, "")
    return value


def check_dtype(d: Any) -> str:
    if not isinstance(d, str) or d not in DTYPES:
        raise ValueError(f"unknown dtype {d!r}: expected one of {', '.join(DTYPES)}")
    return d
