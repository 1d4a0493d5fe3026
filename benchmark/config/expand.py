"""Grid expansion: one validated `CaseSpec` -> its `Case` objects (one per grid point, dtype,
backward/step, place and mode), each with a readable, stable id and the hash of its fully expanded
config; and the checks that need concrete values (shapes, dtypes, memory footprint, the framework's
answers through `Checks`)."""

from __future__ import annotations

import copy
import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from benchmark import kinds
from benchmark.config import indexed
from benchmark.config.schema import DTYPES, MAX_LIST_TENSORS, VAR_RE, TensorSpec, check_dtype
from benchmark.config.yaml_lines import line_for, pydantic_field, pydantic_issues
from benchmark.datamodel.case import Case, Spec, Tensor, config_hash
from benchmark.kinds import op_arguments
from benchmark.kinds.program import branch_lists, program_steps

# What a case id may hold (it names files under --bench-trace-dir): anything else becomes '_'.
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.=+-]|\.(?=\.)")


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
    # layer_binder(layer, args, inputs, attrs) -> None, or (field, reason) where the class does not
    # resolve, its constructor does not take args or its forward the inputs and attrs
    layer_binder: Callable[[str, dict[str, Any], Any, dict[str, Any]], tuple[str, str] | None] | None = None
    models: Iterable[str] | None = None
    model_check: Callable[[str, dict[str, Any], Any], tuple[str | None, int]] | None = None


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


def tensor_bytes(tensors: Mapping[str, Tensor] | None) -> int:
    """Peak bytes of generating the inputs `tensors`, by dtype (see _GENERATION_BYTES)."""
    total = 0
    for t in (tensors or {}).values():
        total += math.prod(t.shape) * _GENERATION_BYTES.get(t.dtype, DTYPES.get(t.dtype, 8))
    return total


def case_count(spec: Any) -> int:
    """How many cases a validated CaseSpec expands to (grid points x dtypes x backward/step x places
    x modes), computed from the lengths alone, without expanding anything."""
    grid = spec.grid if isinstance(spec.grid, list) else list((spec.grid or {}).values())
    sizes = [len(grid) if isinstance(spec.grid, list) else math.prod(len(v) for v in grid)]
    sizes += [len(spec.dtypes), len(_as_list(spec.backward)), len(_as_list(spec.step))]
    sizes += [len(spec.places), len(spec.modes)]
    return math.prod(sizes)


def expand(spec, fname, line, lines, base, issue, checks, max_bytes, max_cases) -> list[Case]:
    """Expand one validated CaseSpec over its grid, dtypes, backward/step, places and modes."""
    name = spec.name
    total = case_count(spec)
    if total > max_cases:
        issue(
            name,
            "grid",
            f"expands to {total} cases, more than the {max_cases} allowed per config entry "
            "(split the entry, or raise the cap with --max-cases / --bench-max-cases)",
            line_for(lines, base + ("grid",)),
        )
        return []
    refused = kinds.get(spec.kind).check_names(spec, checks)
    if refused:
        where, reason = refused
        issue(name, ".".join(map(str, where)), reason, line_for(lines, base + where))
        return []

    body = spec.model_dump(exclude={"grid", "places", "modes", "dtypes", "tags", "description"})
    for group in ("inputs", "feed"):
        for tensor in (body.get(group) or {}).values():
            # Unset, they leave the config (and the config hash of every existing case) as it was.
            parts = tensor.get("tensors") if isinstance(tensor.get("tensors"), list) else []
            for part in [tensor, *parts]:
                for key in ("index", "tensors", "shape", "values"):
                    if part.get(key) is None:
                        part.pop(key, None)
                if isinstance(part.get("values"), dict):  # {boxes_in: x} or {sum_of: boxes}, as written
                    part["values"] = {k: v for k, v in part["values"].items() if v is not None}
    for op in body.get("ops") or []:
        _prune_steps(op)
    if body.get("devices") is None:
        # Unset, it leaves the config (and the config hash of every existing case) as it was.
        body.pop("devices", None)
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
                    problems = (
                        _flatten_lists(cfg)
                        or _check_expanded(cfg, max_bytes)
                        or kinds.get(cfg["kind"]).check_case(cfg, checks, _Sizes(max_bytes))
                    )
                    if problems:
                        for fld, msg in problems:
                            issue(name, *_located(fld, msg, body, spec.grid, point, lines, base))
                        return []
                    variant = _variant_label(point, used, dtype, spec, backward, step)
                    case_id = f"{name}-{variant}" if variant else name
                    if case_id in seen_variants:
                        continue
                    seen_variants.add(case_id)
                    try:
                        typed = Spec.model_validate(cfg)
                    except ValidationError as e:
                        for loc, msg in pydantic_issues(e):
                            issue(
                                name, *_located(pydantic_field(loc), msg, body, spec.grid, point, lines, base)
                            )
                        return []
                    h = config_hash(cfg)
                    tags = tuple(sorted(set(spec.tags)))
                    for place in spec.places:
                        for mode in spec.modes:
                            out.append(
                                Case(
                                    case_id=case_id,
                                    place=place,
                                    mode=mode,
                                    spec=typed,
                                    config_hash=h,
                                    tags=tags,
                                    source=fname,
                                    line=line,
                                    params={**point, "dtype": dtype},
                                )
                            )
    return out


# "unexpected keyword argument 'x'" (binding) or "argument 'x' takes ..." (its type, config.attr_types)
_UNEXPECTED_KEYWORD = re.compile(r"argument '([A-Za-z_][A-Za-z0-9_]*)'")


def _located(fld: str, msg: str, body: dict[str, Any], grid: Any, point: dict[str, Any],
             lines: dict[tuple, int], base: tuple) -> tuple[str, str, int | None]:  # fmt: skip
    """(field, message, line) of a problem of an expanded case, as the file says it: a value that came
    from the grid is reported at that grid value (``grid.shape``, its line), naming the field that
    used it; an attr the operator does not take at its own key; anything else at its own line."""
    path = tuple(int(p) if p.isdigit() else p for p in fld.split("."))
    if fld.endswith("attrs") and (m := _UNEXPECTED_KEYWORD.search(msg)):
        path += (m[1],)
    raw: Any = body
    for part in path:
        raw = raw.get(part) if isinstance(raw, dict) else (raw[part] if isinstance(raw, list) and
                                                             isinstance(part, int) and part < len(raw) else None)  # fmt: skip
    ref = raw[1:] if isinstance(raw, str) and raw.startswith("$") else None
    if ref in point and isinstance(grid, dict) and isinstance(grid.get(ref), list):
        values = grid[ref]
        index = next((i for i, v in enumerate(values) if v == point[ref]), None)
        where = ("grid", ref) if index is None else ("grid", ref, index)
        return (
            f"grid.{ref}",
            f"{msg} (the grid value {point[ref]!r}, used by {'.'.join(map(str, path))})",
            line_for(lines, base + where),
        )
    shown = ".".join(str(p) for p in path)
    return shown, msg, line_for(lines, base + path)


def _variant_label(point, used, dtype, spec, backward, step) -> str:
    parts = [f"{k}_{_fmt(v)}" if len(point) > 1 or k not in used else _fmt(v) for k, v in point.items()]
    if len(spec.dtypes) > 1 or dtype != "float32":
        parts.append(dtype)
    variant = kinds.get(spec.kind).variant
    if variant == "backward" and (isinstance(spec.backward, list) or backward):
        parts.append("bwd" if backward else "fwd")
    if variant == "step":
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
    written = copy.deepcopy(cfg)  # the generators as the config wrote them, for the table's check
    problems = _resolve_indices(cfg) or _check_index_inputs(written)
    if problems:
        return problems
    out_bytes = _value_sized_output(written)
    tensors = {n: Tensor.model_validate(t) for g in ("inputs", "feed") for n, t in (cfg.get(g) or {}).items()}
    need = tensor_bytes(tensors)
    if cfg.get("backward"):
        need *= 3  # inputs, output gradients and input gradients
    if out_bytes and need + out_bytes > max_bytes:
        problems.append(
            (
                "inputs",
                f"the output's size depends on the values: at most about {out_bytes / 1024**3:.1f} GiB, with the "
                f"inputs more than the {max_bytes / 1024**3:.1f} GiB allowed on this machine (--max-bytes / "
                "--bench-max-bytes; refused before allocating)",
            )
        )
    elif need > max_bytes:
        problems.append(
            (
                "inputs" if cfg.get("inputs") else "feed",
                f"the inputs need about {need / 1024**3:.1f} GiB, more than the {max_bytes / 1024**3:.1f} GiB "
                "allowed on this machine (refused before allocating)",
            )
        )
    return problems


def _check_index_inputs(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    """Every index-carrying input of the case's op or layer (and of each program step) comes from the
    generator `configs/index_inputs.yaml` names for it (`benchmark.config.indexed`)."""
    if kinds.get(cfg["kind"]).call:
        rules, name = indexed.rules_for(cfg)
        if not rules:
            return []
        inputs = cfg.get("inputs") or {}
        given = {n: n for n in op_arguments(cfg)}
        return indexed.check_call(
            name, rules, given, inputs, cfg.get("attrs") or {}, cfg.get("args") or {}, "inputs"
        )
    problems: list[tuple[str, str]] = []
    if cfg.get("ops"):  # a program's steps (no other kind has `ops`)
        feed = cfg.get("feed") or {}
        for i, top in enumerate(cfg.get("ops") or []):
            for where, step in program_steps(top, ("ops", i)):
                rules = indexed.rules_of(step["op"])
                if not rules or step.get("branches") is not None:
                    continue
                if isinstance(step["inputs"], list):
                    if any(r for r in rules.values() if "plain" not in r):
                        problems.append(
                            (".".join(map(str, (*where, "inputs"))),
                             f"{step['op']} takes index inputs: name them (inputs: {{parameter: feed}}) so each "
                             "can be checked against its generator")
                        )  # fmt: skip
                    continue
                given = {param: var for param, var in step["inputs"].items() if var in feed}
                given.update({p: f"<step output {v}>" for p, v in step["inputs"].items() if v not in feed})
                problems += indexed.check_call(
                    step["op"], rules, given, feed, step.get("attrs") or {}, {}, "feed"
                )
    return problems


def _value_sized_output(cfg: dict[str, Any]) -> int:
    """Bytes of an op's output whose size its input values set (repeat_interleave, bincount)."""
    if not kinds.get(cfg["kind"]).value_sized_output:
        return 0
    rules, name = indexed.rules_for(cfg)
    return indexed.output_bytes(name or "", rules, cfg.get("inputs") or {}, cfg.get("attrs") or {})


def _resolve_indices(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    """Index inputs (`index: {of, dim}`) become integer inputs drawn in [0, size of that dimension
    of the input they index), in place; one problem per index that names no input or dimension."""
    problems: list[tuple[str, str]] = []
    for group in ("inputs", "feed"):
        tensors = cfg.get(group) or {}
        for iname, spec in tensors.items():
            index = spec.pop("index", None)
            if index is None:
                continue
            fld = f"{group}.{iname}.index"
            of, dim = index.get("of"), index.get("dim")
            low, inclusive = int(index.get("low") or 0), bool(index.get("inclusive"))
            target = tensors.get(of)
            if dim == "count" and of in (cfg.get("lists") or {}):
                spec["low"], spec["high"] = float(low), float(len(cfg["lists"][of]) + inclusive)
                if not spec["low"] < spec["high"]:
                    problems.append(
                        (f"{fld}.low", f"{low} is not below the {len(cfg['lists'][of])} tensors of {of!r}")
                    )
                continue
            if target is None or target is spec or dim == "count":
                others = ", ".join(n for n in tensors if n != iname) or "none"
                problems.append((f"{fld}.of", f"{of!r} is not another input of this case (inputs: {others})"))
                continue
            shape = target["shape"]
            if dim == "min":
                dim = min(range(len(shape)), key=lambda d: shape[d])
            if not isinstance(dim, int) or isinstance(dim, bool) or not -len(shape) <= dim < len(shape):
                problems.append(
                    (
                        f"{fld}.dim",
                        f"expected a dimension of {of!r} (shape {shape}): -{len(shape)} to {len(shape) - 1}",
                    )
                )
                continue
            if not str(spec.get("dtype")).startswith(("int", "uint")):
                problems.append(
                    (
                        f"{group}.{iname}.dtype",
                        f"an index input needs an integer dtype, got {spec.get('dtype')!r}",
                    )
                )
                continue
            if not low < shape[dim] + inclusive:
                problems.append(
                    (f"{fld}.low", f"{low} is not below the size {shape[dim]} of dimension {dim} of {of!r}")
                )
                continue
            # floats, as a plain range is stored: an index input hashes as the range it resolves to
            spec["low"], spec["high"] = float(low), float(shape[dim] + inclusive)
    return problems or _resolve_values(cfg)


def _resolve_values(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    """`values` that name another input become concrete: {boxes_in: x} -> {boxes_in: [H, W]} of
    that NCHW input, {sum_of: boxes} -> {sum_to: its first dimension}; and each fits its input's
    shape and dtype."""
    problems: list[tuple[str, str]] = []
    for group in ("inputs", "feed"):
        tensors = cfg.get(group) or {}
        for iname, spec in tensors.items():
            values, fld = spec.get("values"), f"{group}.{iname}.values"
            shape, dtype = spec["shape"], str(spec.get("dtype"))
            if values is None:
                continue
            if values == "positive_definite":
                if len(shape) < 2 or shape[-1] != shape[-2] or not dtype.startswith("float"):
                    problems.append(
                        (fld, f"positive_definite needs square float matrices, got {dtype} {shape}")
                    )
                continue
            if not isinstance(values, dict):
                continue  # sorted
            kind = next(
                k for k in ("boxes_in", "sum_of", "unpool_of", "nodes_of", "colptr_of") if values.get(k)
            )
            of = values[kind]
            target = tensors.get(of)
            if target is None or target is spec:
                others = ", ".join(n for n in tensors if n != iname) or "none"
                problems.append((fld, f"{of!r} is not another input of this case (inputs: {others})"))
            elif kind in ("unpool_of", "nodes_of", "colptr_of"):
                problems += _resolve_graph_values(cfg, spec, fld, kind, target)
            elif values.get("boxes_in") is not None:
                if len(target["shape"]) != 4 or shape[-1:] != [4] or len(shape) != 2:
                    problems.append(
                        (
                            fld,
                            f"boxes_in: expected [N, 4] boxes in a 4-d NCHW input, got {shape} in {target['shape']}",
                        )
                    )
                elif values.get("side") and max(values["side"]) >= min(target["shape"][2:]):
                    problems.append(
                        (fld, f"side {values['side']}: boxes must fit in the image {target['shape'][2:]}")
                    )
                else:
                    spec["values"] = {"boxes_in": list(target["shape"][2:])}
                    if values.get("side"):
                        spec["values"]["side"] = list(values["side"])
            else:
                if len(shape) != 1 or not dtype.startswith("int"):
                    problems.append((fld, f"sum_of: expected a 1-d integer input, got {dtype} {shape}"))
                else:
                    spec["values"] = {"sum_to": target["shape"][0]}
    return problems


def _resolve_graph_values(cfg, spec, fld, kind, target) -> list[tuple[str, str]]:
    """unpool_of: positions in the output of unpooling `target` (a plain range [0, that output's
    spatial size)); nodes_of: node ids of the CSC graph whose column pointers `target` holds ([0,
    len - 1)); colptr_of: column pointers of the CSC graph whose rows `target` holds (generated:
    ascending from 0 to its length)."""
    shape, tshape, dtype = spec["shape"], target["shape"], str(spec.get("dtype"))
    if not dtype.startswith("int"):
        return [(fld, f"{kind}: expected an integer input, got {dtype}")]
    if kind == "unpool_of":
        size = _unpool_size(tshape, cfg.get("attrs") or {})
        if isinstance(size, str):
            return [(fld, size)]
        if list(shape) != list(tshape):
            return [(fld, f"unpool_of: expected the shape of the pooled input {tshape}, got {shape}")]
        spec.pop("values")
        spec["low"], spec["high"] = 0.0, float(size)
        return []
    if len(shape) != 1 or len(tshape) != 1:
        return [(fld, f"{kind}: expected 1-d inputs, got {shape} and {tshape}")]
    if kind == "nodes_of":
        if tshape[0] < 2:
            return [(fld, f"nodes_of: column pointers of {tshape[0]} entries hold no node")]
        spec.pop("values")
        spec["low"], spec["high"] = 0.0, float(tshape[0] - 1)
        return []
    if shape[0] < 2:
        return [(fld, f"colptr_of: column pointers need at least 2 entries, got {shape}")]
    spec["values"] = {"colptr_to": tshape[0]}
    return []


def _unpool_size(pooled: list[int], attrs: dict[str, Any]) -> int | str:
    """The spatial size of max_unpool{1,2,3}d's output for a pooled NC... input (its formula:
    (in - 1) * stride - 2 * padding + kernel_size, or output_size), or why it cannot be known."""
    nd = len(pooled) - 2
    if nd not in (1, 2, 3):
        return f"unpool_of: expected an N, C, spatial input of 3 to 5 dimensions, got {pooled}"
    if attrs.get("data_format") not in (None, "NCL", "NCHW", "NCDHW"):
        return f"unpool_of: expected channels first, got data_format {attrs.get('data_format')!r}"

    def per_dim(v: Any, default: Any) -> list[int] | None:
        v = default if v is None else v
        v = [v] * nd if isinstance(v, int) and not isinstance(v, bool) else v
        ok = (
            isinstance(v, list)
            and len(v) == nd
            and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
        )
        return v if ok else None

    kernel = per_dim(attrs.get("kernel_size"), None)
    stride = per_dim(attrs.get("stride"), kernel)
    padding = per_dim(attrs.get("padding"), 0)
    if kernel is None or stride is None or padding is None:
        return (
            "unpool_of: expected integer kernel_size (and stride, padding) attrs, one per spatial dimension"
        )
    out = [(n - 1) * s - 2 * p + k for n, s, p, k in zip(pooled[2:], stride, padding, kernel, strict=True)]
    if attrs.get("output_size") is not None:
        given = per_dim(attrs["output_size"][-nd:] if isinstance(attrs["output_size"], list) else None, None)
        if given is None:
            return "unpool_of: expected output_size as a list of integers"
        out = given
    if min(out) <= 0:
        return f"unpool_of: the unpooled output {out} is empty"
    return math.prod(out)


def list_part(name: str, i: int) -> str:
    """The input name of the i-th tensor of the tensor-list input `name`."""
    return f"{name}__{i}"


def _flatten_lists(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    """Each tensor-list input of an op case becomes one input per tensor (``x__0``, ``x__1``, ...,
    in its place) and `lists` names them: each is generated, sized and checked as any input, and the
    runners hand them to the op as one list (`Spec.grouped`)."""
    inputs = cfg.get("inputs")
    if (
        not kinds.get(cfg["kind"]).call
        or not inputs
        or not any(isinstance(t, dict) and "tensors" in t for t in inputs.values())
    ):
        return []
    flat: dict[str, Any] = {}
    lists: dict[str, list[str]] = {}
    for name, tensor in inputs.items():
        if "tensors" not in tensor:
            flat[name] = tensor
            continue
        tensors = tensor["tensors"]
        if not isinstance(tensors, list) or not 1 <= len(tensors) <= MAX_LIST_TENSORS:
            return [
                (
                    f"inputs.{name}.tensors",
                    f"expected a list of 1 to {MAX_LIST_TENSORS} tensors, got {tensors!r}"[:300],
                )
            ]
        lists[name] = [list_part(name, i) for i in range(len(tensors))]
        for i, (part, spec) in enumerate(zip(lists[name], tensors, strict=True)):
            # each tensor as a plain input (a grid gives them bare: the schema fills the defaults)
            try:
                typed = TensorSpec.model_validate({"dtype": tensor.get("dtype", "float32"), **spec})
            except (ValidationError, TypeError) as e:
                return [(f"inputs.{name}.tensors.{i}", str(e).splitlines()[0] if isinstance(e, TypeError) else
                         "; ".join(f"{pydantic_field(loc) or 'value'}: {msg}" for loc, msg in pydantic_issues(e)))]  # fmt: skip
            if typed.tensors is not None:
                return [(f"inputs.{name}.tensors.{i}", "a tensor of a list cannot be a list itself")]
            flat[part] = {k: v for k, v in typed.model_dump().items() if v is not None}
    cfg["inputs"], cfg["lists"] = flat, lists
    return []


class _Sizes:
    """What a kind's case check is lent (`benchmark.kinds.base.Sizes`)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes

    @staticmethod
    def tensor_bytes(tensors: Mapping[str, Any]) -> int:
        return tensor_bytes({n: Tensor.model_validate(t) for n, t in tensors.items()})

    @staticmethod
    def tensor_dtypes(tensors: Mapping[str, Any]) -> list[str]:
        return [Tensor.model_validate(t).dtype for t in tensors.values()]


def _prune_steps(step: dict[str, Any]) -> None:
    """Unset branches and default leave a step (and the config hash of every program) as it was."""
    for key in ("branches", "default"):
        if step.get(key) is None:
            step.pop(key, None)
    for _, steps in branch_lists(step):
        for inner in steps:
            _prune_steps(inner)
