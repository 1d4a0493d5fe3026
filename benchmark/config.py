"""Benchmark configs: YAML files -> validated schema -> expanded Case objects.

A config file holds `cases:` (a list), optionally with `defaults:` merged into each of them. Each
entry is one of three kinds:

* ``op``: one public paddle API call, e.g. ``op: paddle.abs``, with named ``inputs`` (shape, dtype,
  value range) and keyword ``attrs``;
* ``program``: a static program (``feed`` -> ``ops`` -> ``fetch``) run by ``paddle.static.Executor``
  (mode ``static``), eagerly (``dynamic``) or compiled (``to_static``);
* ``model``: a registered model builder (see ``benchmark.runners.models``) with ``args`` and a
  ``train`` or ``infer`` step.

A parameter ``grid`` (a mapping of name -> list of values, expanded as a product, or a list of
mappings, one point each) is substituted into any string value that is exactly ``$name``; the
dtype list and ``backward``/``step`` lists are grid dimensions too. Each expanded case gets a readable,
stable id and a hash of its fully expanded config.

Configs are data: files are read with ``yaml.safe_load`` semantics (a tag that would construct an
object is an error), names are checked against strict patterns, and nothing is executed. Every
problem is reported as one ``ConfigIssue`` naming the file, the case, the field and the YAML line.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from benchmark import allowlist
from benchmark.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_CASES

KINDS = ("op", "program", "model")
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
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.=+-]|\.(?=\.)")
# Caps checked before anything is expanded or allocated; each has an override where it is used.
# (DEFAULT_MAX_CASES and DEFAULT_MAX_BYTES live in benchmark.limits, imported above.)
MAX_YAML_DEPTH = 32  # nesting of mappings and lists in a config file
MAX_STRING = 256  # characters of a string value in attrs, args or a grid
MAX_VALUES = 10_000  # scalars inside one attrs, args or grid value
# Files under a config directory that hold settings, not cases.
NOT_CASE_FILES = ("gates.yaml", "gates.yml", "allowlist.yaml", "allowlist.yml")


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


# --------------------------------------------------------------------------------------------
# Schema (pydantic). Values may still hold `$grid` references; they are checked after expansion.
# --------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class TensorSpec(_Strict):
    shape: Any
    dtype: str = "$dtype"
    low: float = -1.0
    high: float = 1.0
    # Inputs that get a gradient in backward cases (default: every floating input).
    requires_grad: bool | None = None

    @field_validator("shape", mode="before")
    @classmethod
    def _shape(cls, v: Any) -> Any:
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
    warmup_time: float | None = Field(None, ge=0, description="seconds of warmup before timing")
    min_rounds: int | None = Field(None, ge=1)
    max_time: float | None = Field(None, gt=0, description="seconds of timed rounds (target)")
    round_time: float | None = Field(None, gt=0, description="target seconds per round")
    max_rounds: int | None = Field(None, ge=1)
    processes: int | None = Field(
        None,
        ge=1,
        le=64,
        description="worker processes that measure the case (default: the run's --bench-processes)",
    )


class ProgramOp(_Strict):
    op: str
    inputs: list[str] | dict[str, str]
    attrs: dict[str, Any] = Field(default_factory=dict)
    out: str

    @field_validator("op")
    @classmethod
    def _op_name(cls, v: str) -> str:
        return check_op_name(v)

    @field_validator("attrs")
    @classmethod
    def _plain(cls, v: dict[str, Any]) -> dict[str, Any]:
        return check_plain(v)


class CaseSpec(_Strict):
    name: str
    kind: Literal["op", "program", "model"]
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
    # program kind
    feed: dict[str, TensorSpec] | None = None
    ops: list[ProgramOp] | None = None
    fetch: list[str] | None = None
    # model kind
    model: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    step: Literal["train", "infer"] | list[Literal["train", "infer"]] | None = None
    batch_size: int | str | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.fullmatch(v):
            raise ValueError("expected a name of letters, digits, '_', '.', '-' starting with a letter")
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

    @field_validator("model")
    @classmethod
    def _model(cls, v: str | None) -> str | None:
        if v is not None and not MODEL_RE.fullmatch(v):
            raise ValueError(f"{v!r}: expected the name of a registered model builder, e.g. 'lstm'")
        return v

    @model_validator(mode="after")
    def _kind_fields(self) -> CaseSpec:
        required = {"op": ("op", "inputs"), "program": ("feed", "ops", "fetch"), "model": ("model",)}
        for f in required[self.kind]:
            if getattr(self, f) is None:
                raise ValueError(f"field {f!r} is required for kind {self.kind!r}")
        foreign = {
            "op": ("feed", "ops", "fetch", "model", "step"),
            "program": ("op", "inputs", "model", "step", "reference"),
            "model": ("op", "inputs", "feed", "ops", "fetch", "reference"),
        }[self.kind]
        for f in foreign:
            if getattr(self, f) is not None:
                raise ValueError(f"field {f!r} does not apply to kind {self.kind!r}")
        if self.kind == "model" and self.step is None:
            self.step = ["train", "infer"]
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


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One fully specified benchmark: config + one grid point + place + mode."""

    name: str
    kind: str
    case_id: str  # stable and readable, without place and mode (a series is case_id+place+mode)
    place: str
    mode: str
    config: dict[str, Any]  # fully expanded (JSON-able); identical for every place/mode
    config_hash: str
    tags: list[str]
    source: str
    line: int | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """The pytest item id: case id + place + mode."""
        return f"{self.case_id}-{self.place.replace(':', '')}-{self.mode}"

    @property
    def measure(self) -> dict[str, Any]:
        return {k: v for k, v in (self.config.get("measure") or {}).items() if v is not None}

    @property
    def device(self) -> str:
        return "gpu" if self.place.startswith("gpu") else "cpu"


def safe_id(text: str) -> str:
    """`text` with every character a file name or a pytest id could trip on replaced by '_'
    (path separators, '..', spaces, non-ASCII), so a case id never leaves --bench-trace-dir."""
    return _ID_UNSAFE.sub("_", text)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "x".join(_fmt(x) for x in v) or "scalar"
    if isinstance(v, dict):
        return "_".join(f"{k}{_fmt(x)}" for k, x in v.items())
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def config_hash(config: dict[str, Any]) -> str:
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _substitute(value: Any, params: dict[str, Any], used: set[str]) -> Any:
    if isinstance(value, str):
        m = VAR_RE.fullmatch(value)
        if m:
            key = m.group(1)
            if key not in params:
                raise KeyError(key)
            used.add(key)
            return copy.deepcopy(params[key])
        return value
    if isinstance(value, list):
        return [_substitute(v, params, used) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, params, used) for k, v in value.items()}
    return value


def _grid_points(grid: dict[str, list[Any]] | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    if grid is None:
        return [{}]
    if isinstance(grid, list):
        return [dict(p) for p in grid]
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(grid[k] for k in keys))]


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list) else [v]


# Bytes per element while an input is generated on the host and held as a tensor: float16 and
# bfloat16 are drawn in float32 first (see runners.paddle_common.random_array).
_GENERATION_BYTES = {"float16": 6, "bfloat16": 6}


def tensor_bytes(specs: dict[str, Any] | None) -> int:
    """Peak bytes of generating `specs`' inputs, by dtype (see _GENERATION_BYTES)."""
    total = 0
    for spec in (specs or {}).values():
        shape = spec.get("shape") or []
        dtype = spec.get("dtype")
        total += math.prod(shape) * _GENERATION_BYTES.get(dtype, DTYPES.get(dtype, 8))
    return total


# --------------------------------------------------------------------------------------------
# Loading: YAML -> (spec, line map) with issues collected, never raised one at a time.
# --------------------------------------------------------------------------------------------


def _display_path(path: Path) -> str:
    """The path relative to the working directory when it is below it (shorter, copyable)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


class ConfigYAMLError(yaml.YAMLError):
    """A YAML construct configs do not allow (anchors, aliases, merge keys, deep nesting)."""

    def __init__(self, problem: str, mark: yaml.Mark | None):
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark


class _LineLoader(yaml.SafeLoader):
    """SafeLoader for configs: no anchors, aliases or merge keys (so nothing expands behind a name,
    and no alias bomb), nesting at most MAX_YAML_DEPTH deep, checked while composing, before any
    value is constructed."""

    _depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise ConfigYAMLError(
                "YAML anchors and aliases are not allowed in configs (use `defaults:` or a grid)",
                event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise ConfigYAMLError(f"nesting deeper than {MAX_YAML_DEPTH} levels", event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        for key, _ in node.value:
            if key.tag == "tag:yaml.org,2002:merge":
                raise ConfigYAMLError("YAML merge keys ('<<') are not allowed in configs", key.start_mark)
        return super().construct_mapping(node, deep=deep)


def _load_with_lines(text: str) -> tuple[Any, dict[tuple, int]]:
    loader = _LineLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[tuple, int] = {}

        def walk(n: yaml.Node, path: tuple) -> None:
            lines.setdefault(path, n.start_mark.line + 1)
            if isinstance(n, yaml.MappingNode):
                for k, v in n.value:
                    key = k.value if isinstance(k, yaml.ScalarNode) else str(k)
                    lines[path + (key,)] = k.start_mark.line + 1
                    walk(v, path + (key,))
            elif isinstance(n, yaml.SequenceNode):
                for i, v in enumerate(n.value):
                    walk(v, path + (i,))

        if node is None:
            return None, {}
        walk(node, ())
        data = loader.construct_document(node)
        return data, lines
    finally:
        loader.dispose()


_UNION_TAG = re.compile(
    r"^(str|int|float|bool|none|[a-z]+\[.*\]|function-(after|before|wrap|plain)\[.*\]|literal\[.*\])$"
)


def _clean_loc(loc: tuple) -> tuple:
    """Drop pydantic's union-member and validator tags from an error location."""
    return tuple(p for p in loc if not (isinstance(p, str) and _UNION_TAG.match(p)))


def _pyd_field(loc: tuple) -> str:
    return ".".join(str(p) for p in _clean_loc(loc))


def _pyd_issues(err: ValidationError) -> list[tuple[tuple, str]]:
    """One (location, message) per field: union alternatives are merged into one message."""
    grouped: dict[tuple, list[str]] = {}
    for e in err.errors():
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field"
        loc = _clean_loc(tuple(e["loc"]))
        if msg not in grouped.setdefault(loc, []):
            grouped[loc].append(msg)
    return [(loc, " or ".join(msgs)) for loc, msgs in grouped.items()]


def _line_for(lines: dict[tuple, int], path: tuple) -> int | None:
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get(())


@dataclass
class LoadedFile:
    path: str
    cases: list[Case]
    issues: list[ConfigIssue]


@dataclass(frozen=True)
class Checks:
    """What validation asks the framework side (`benchmark.runners.config_checks()`); each None
    where the framework is not importable here (names are still checked against the allowlist).

    resolver(op) -> reason or None: the op resolves to an allowlisted function;
    binder(op, inputs, attrs) -> reason or None: the function accepts these inputs and attrs;
    models: the registered model builders; model_check(model, args, batch_size) -> (reason or
    None, estimated bytes).
    """

    resolver: Callable[[str], str | None] | None = None
    binder: Callable[[str, Any, dict[str, Any]], str | None] | None = None
    models: Iterable[str] | None = None
    model_check: Callable[[str, dict[str, Any], Any], tuple[str | None, int]] | None = None


def load_file(
    path: str | Path,
    *,
    resolver: Callable[[str], str | None] | None = None,
    models: Iterable[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    display: str | None = None,
    checks: Checks | None = None,
    max_cases: int = DEFAULT_MAX_CASES,
) -> LoadedFile:
    """Load, validate and expand one YAML file. Never raises for bad content: see `.issues`.

    `checks` (or the older `resolver` and `models` alone) asks the framework side what the
    allowlist cannot tell; `max_bytes` caps a case's inputs or model, `max_cases` the cases one
    config entry expands to. Both are checked before anything is expanded or allocated.
    """
    checks = checks or Checks(resolver=resolver, models=models)
    path = Path(path)
    fname = display or _display_path(path)
    issues: list[ConfigIssue] = []

    def issue(case: str | None, fld: str | None, msg: str, line: int | None = None) -> None:
        issues.append(ConfigIssue(fname, case, fld, msg, line))

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        issue(None, None, f"cannot read file: {e}")
        return LoadedFile(fname, [], issues)
    try:
        data, lines = _load_with_lines(text)
    except ConfigYAMLError as e:
        issue(None, None, e.problem, e.problem_mark.line + 1 if e.problem_mark else None)
        return LoadedFile(fname, [], issues)
    except yaml.constructor.ConstructorError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else None
        issue(None, None, f"YAML tag not allowed (configs are data, no objects): {e.problem}", line)
        return LoadedFile(fname, [], issues)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        issue(None, None, f"YAML syntax error: {problem}", line)
        return LoadedFile(fname, [], issues)
    if data is None:
        issue(None, None, "empty file: expected a mapping with a 'cases' list")
        return LoadedFile(fname, [], issues)
    if not isinstance(data, dict):
        issue(None, None, f"expected a mapping with a 'cases' list, got {type(data).__name__}", 1)
        return LoadedFile(fname, [], issues)
    try:
        fspec = FileSpec.model_validate(data)
    except ValidationError as e:
        for loc, msg in _pyd_issues(e):
            issue(None, _pyd_field(loc), msg, _line_for(lines, loc))
        return LoadedFile(fname, [], issues)
    if not fspec.cases:
        issue(None, "cases", "expected at least one case", _line_for(lines, ("cases",)))

    cases: list[Case] = []
    for idx, raw in enumerate(fspec.cases):
        base = ("cases", idx)
        cname = raw.get("name") if isinstance(raw, dict) else None
        label = cname if isinstance(cname, str) else f"#{idx + 1}"
        merged = {**copy.deepcopy(fspec.defaults), **raw}
        try:
            spec = CaseSpec.model_validate(merged)
        except ValidationError as e:
            for loc, msg in _pyd_issues(e):
                issue(label, _pyd_field(loc) or None, msg, _line_for(lines, base + loc))
            continue
        cases.extend(
            _expand(spec, fname, _line_for(lines, base), lines, base, issue, checks, max_bytes, max_cases)
        )
    return LoadedFile(fname, cases, issues)


def _expand(spec, fname, line, lines, base, issue, checks, max_bytes, max_cases) -> list[Case]:
    """Expand one validated CaseSpec over its grid, dtypes, backward/step, places and modes."""
    name = spec.name
    resolver, models = checks.resolver, checks.models
    grid = spec.grid if isinstance(spec.grid, list) else list((spec.grid or {}).values())
    sizes = [len(grid) if isinstance(spec.grid, list) else math.prod(len(v) for v in grid)]
    sizes += [len(spec.dtypes), len(_as_list(spec.backward)), len(_as_list(spec.step))]
    sizes += [len(spec.places), len(spec.modes)]
    total = math.prod(sizes)
    if total > max_cases:
        issue(
            name,
            "grid",
            f"expands to {total} cases, more than the {max_cases} allowed per config entry "
            "(split the entry, or raise the cap with --max-cases / --bench-max-cases)",
            _line_for(lines, base + ("grid",)),
        )
        return []
    if spec.kind == "op" and resolver:
        reason = resolver(spec.op)
        if reason:
            issue(name, "op", reason, _line_for(lines, base + ("op",)))
            return []
    if spec.kind == "program" and resolver:
        for i, pop in enumerate(spec.ops or []):
            reason = resolver(pop.op)
            if reason:
                issue(name, f"ops.{i}.op", reason, _line_for(lines, base + ("ops", i, "op")))
                return []
    if spec.kind == "model" and models is not None and spec.model not in set(models):
        issue(
            name,
            "model",
            f"unknown model {spec.model!r}: expected one of the registered builders "
            f"({', '.join(sorted(models))})",
            _line_for(lines, base + ("model",)),
        )
        return []

    body = spec.model_dump(exclude={"grid", "places", "modes", "dtypes", "tags", "description"})
    if body["measure"].get("processes") is None:
        # Unset, it leaves the config (and so the config hash of every existing case) as it was.
        body["measure"].pop("processes", None)
    out: list[Case] = []
    seen_variants: set[str] = set()
    for point in _grid_points(spec.grid):
        for dtype in spec.dtypes:
            for backward in _as_list(spec.backward):
                for step in _as_list(spec.step):
                    params = {**point, "dtype": dtype}
                    used: set[str] = set()
                    try:
                        cfg = _substitute(body, params, used)
                    except KeyError as e:
                        issue(name, "grid", f"'${e.args[0]}' is used but not defined in the grid", line)
                        return []
                    cfg["backward"] = backward
                    cfg["step"] = step
                    cfg["kind"] = spec.kind
                    problems = _check_expanded(cfg, max_bytes) or _check_framework(cfg, checks, max_bytes)
                    if problems:
                        for fld, msg in problems:
                            issue(name, fld, msg, _line_for(lines, base + tuple(fld.split(".")[:1])))
                        return []
                    variant = _variant_label(point, used, dtype, spec, backward, step)
                    case_id = f"{name}-{variant}" if variant else name
                    if case_id in seen_variants:
                        continue
                    seen_variants.add(case_id)
                    h = config_hash(cfg)
                    for place in spec.places:
                        for mode in spec.modes:
                            tags = sorted(set(spec.tags))
                            out.append(
                                Case(
                                    name=name,
                                    kind=spec.kind,
                                    case_id=case_id,
                                    place=place,
                                    mode=mode,
                                    config=cfg,
                                    config_hash=h,
                                    tags=tags,
                                    source=fname,
                                    line=line,
                                    params={**point, "dtype": dtype},
                                )
                            )
    return out


def _variant_label(point, used, dtype, spec, backward, step) -> str:
    parts = [f"{k}_{_fmt(v)}" if len(point) > 1 or k not in used else _fmt(v) for k, v in point.items()]
    if len(spec.dtypes) > 1 or dtype != "float32":
        parts.append(dtype)
    if spec.kind in ("op", "program") and (isinstance(spec.backward, list) or backward):
        parts.append("bwd" if backward else "fwd")
    if spec.kind == "model":
        parts.append(step)
    return safe_id("-".join(p.replace(" ", "") for p in parts))


def _check_expanded(cfg: dict[str, Any], max_bytes: int) -> list[tuple[str, str]]:
    """Checks that need concrete values: shapes, dtypes, memory footprint."""
    problems: list[tuple[str, str]] = []
    for group in ("inputs", "feed"):
        for iname, spec in (cfg.get(group) or {}).items():
            fld = f"{group}.{iname}"
            shape = spec.get("shape")
            if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) for d in shape
            ):
                problems.append((f"{fld}.shape", f"expected a list of positive integers, got {shape!r}"))
                continue
            bad = [d for d in shape if d <= 0]
            if bad:
                problems.append(
                    (f"{fld}.shape", f"dimension {bad[0]} in {shape}: expected positive integers")
                )
            try:
                check_dtype(spec.get("dtype"))
            except ValueError as e:
                problems.append((f"{fld}.dtype", str(e)))
            if not spec["low"] < spec["high"] and not (spec["low"] == spec["high"] == 0):
                problems.append((f"{fld}.low", f"expected low < high, got {spec['low']} and {spec['high']}"))
    if problems:
        return problems
    need = tensor_bytes(cfg.get("inputs")) + tensor_bytes(cfg.get("feed"))
    if cfg.get("backward"):
        need *= 3  # inputs, output gradients and input gradients
    if need > max_bytes:
        problems.append(
            (
                "inputs" if cfg.get("inputs") else "feed",
                f"the inputs need about {need / 1024**3:.1f} GiB, more than the {max_bytes / 1024**3:.1f} GiB "
                "allowed on this machine (refused before allocating)",
            )
        )
    return problems


def _check_framework(cfg: dict[str, Any], checks: Checks, max_bytes: int) -> list[tuple[str, str]]:
    """Checks the framework side answers for one expanded case: the op's signature binds the case's
    inputs and attrs; a model's args are known and its estimated footprint fits `max_bytes`."""
    problems: list[tuple[str, str]] = []
    if checks.binder and cfg["kind"] == "op":
        reason = checks.binder(cfg["op"], dict.fromkeys(cfg["inputs"]), cfg.get("attrs") or {})
        if reason:
            problems.append(("attrs", reason))
    if checks.binder and cfg["kind"] == "program":
        for i, op in enumerate(cfg["ops"]):
            inputs = op["inputs"] if isinstance(op["inputs"], list) else dict.fromkeys(op["inputs"])
            reason = checks.binder(op["op"], inputs, op.get("attrs") or {})
            if reason:
                problems.append((f"ops.{i}.attrs", reason))
    if checks.model_check and cfg["kind"] == "model":
        reason, need = checks.model_check(cfg["model"], cfg.get("args") or {}, cfg.get("batch_size"))
        if reason:
            problems.append(("args", reason))
        elif need > max_bytes:
            problems.append(
                (
                    "args",
                    f"the model needs about {need / 1024**3:.1f} GiB (weights, gradients, optimizer state, "
                    f"activations), more than the {max_bytes / 1024**3:.1f} GiB allowed (refused before "
                    "allocating; raise it with --max-bytes / --bench-max-bytes)",
                )
            )
    return problems


def find_config_files(paths: Iterable[str | Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files.extend(
                sorted(
                    f
                    for f in p.rglob("*")
                    if f.suffix in (".yaml", ".yml") and f.is_file() and f.name not in NOT_CASE_FILES
                )
            )
        else:
            files.append(p)
    return files


def load_paths(
    paths: Iterable[str | Path],
    *,
    resolver: Callable[[str], str | None] | None = None,
    models: Iterable[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    checks: Checks | None = None,
    max_cases: int = DEFAULT_MAX_CASES,
) -> tuple[list[Case], list[ConfigIssue]]:
    """Load every config under `paths`; check ids are unique across files."""
    cases: list[Case] = []
    issues: list[ConfigIssue] = []
    files = find_config_files(paths)
    for p in paths:
        if not Path(p).exists():
            issues.append(ConfigIssue(str(p), None, None, "no such file or directory"))
    first_seen: dict[str, Case] = {}
    reported: set[tuple[str, int | None, str]] = set()
    for f in files:
        if not f.exists():
            continue
        loaded = load_file(
            f, resolver=resolver, models=models, max_bytes=max_bytes, checks=checks, max_cases=max_cases
        )
        issues.extend(loaded.issues)
        for c in loaded.cases:
            prev = first_seen.get(c.id)
            if prev is not None and (prev.source != c.source or prev.line != c.line):
                if (c.source, c.line, c.case_id) in reported:
                    continue
                reported.add((c.source, c.line, c.case_id))
                issues.append(
                    ConfigIssue(
                        c.source,
                        c.name,
                        "name",
                        f"duplicate case id {c.case_id!r} (also defined in {prev.source}:{prev.line})",
                        c.line,
                    )
                )
                continue
            first_seen.setdefault(c.id, c)
            cases.append(c)
    return cases, issues
