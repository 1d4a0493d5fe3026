"""Index-carrying inputs: the integer inputs an allowlisted op (or layer) uses as an index, a count,
a length, a label or a box count, and the generator each must come from
(`configs/index_inputs.yaml`, beside the allowlist and reviewed like it).

A config gives such an input only through the generator the table names for it (`index: {of, dim}`
with the right target, or `values:` of the right kind), never as a plain `low`/`high` range and never
as a plain value in `attrs`: a kernel that does not check its indices (max_unpool2d, the graph ops,
ctc_loss, the RNNs' sequence_length, ...) then never sees one out of range. `check_case` says what is
wrong with one expanded case, in the terms of its fields; no framework is imported here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from benchmark import kinds
from benchmark.paths import CONFIGS_DIR

INDEX_INPUTS_PATH = CONFIGS_DIR / "index_inputs.yaml"
VALUE_KINDS = ("sum_of", "boxes_in", "unpool_of", "nodes_of", "colptr_of")
# An op's parameter whose name says it carries an index, a count, a length or a label
# (tests/test_index_inputs.py: every such parameter of an allowlisted op is in the table).
INDEX_NAME_PARTS = frozenset(
    {"index", "indices", "idx", "idxs", "ids", "label", "labels", "lengths", "length", "num", "nums",
     "count", "counts", "nodes", "colptr", "row", "eids", "repeats", "rowmap", "routemap", "pivots",
     "offset", "buffer", "table", "code"}
)  # fmt: skip


_KINDS = frozenset({"index", "values", "plain", "never", "count", "below_attr", "rows_of", "attr_range"})


class IndexTableError(Exception):
    """The table itself is unreadable or malformed."""


def index_like(param: str) -> bool:
    """True when the parameter's name says it carries an index, count, length or label."""
    return bool(set(param.lower().split("_")) & INDEX_NAME_PARTS)


@functools.lru_cache(maxsize=4)
def load_table(path: str | Path | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """name (op or layer) -> parameter -> its rule, from `configs/index_inputs.yaml`."""
    path = Path(path) if path else INDEX_INPUTS_PATH
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise IndexTableError(f"{path.name}: cannot read the table of index inputs: {e}") from e
    if not isinstance(data, dict) or set(data) - {"ops", "layers"}:
        raise IndexTableError(f"{path.name}: expected a mapping with the keys ops and layers")
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for section in ("ops", "layers"):
        for name, params in (data.get(section) or {}).items():
            if not isinstance(params, dict):
                raise IndexTableError(f"{path.name}: {name}: expected a mapping of parameter -> rule")
            table[name] = {}
            for param, rule in params.items():
                rule = {"plain": rule} if isinstance(rule, str) else rule
                if not isinstance(rule, dict) or len(set(rule) & _KINDS) != 1:
                    raise IndexTableError(
                        f"{path.name}: {name}.{param}: expected one of {', '.join(sorted(_KINDS))}"
                    )
                table[name][str(param)] = rule
    return table


def describe(
    rule: Mapping[str, Any], attrs: Mapping[str, Any] | None = None, args: Mapping[str, Any] | None = None
) -> str:
    """The generator a rule asks for, as a config writes it (a dimension given by the call's attrs or
    the layer's args resolved from them where they are given)."""
    if "index" in rule:
        ix = rule["index"]
        dim = ix.get("dim", 0)
        if isinstance(dim, dict) and attrs is not None:
            dim = _resolve_dim(dim, attrs, args or {}, 0)
        if isinstance(dim, dict):
            dim = f"<its {dim['attr']} attr>" if "attr" in dim else "<the time axis>"
        extra = "".join(f", {k}: {str(ix[k]).lower()}" for k in ("low", "inclusive") if k in ix)
        return f"index: {{of: {ix['of']}, dim: {dim}{extra}}}"
    if "values" in rule:
        ((kind, of),) = rule["values"].items()
        return f"values: {{{kind}: {of}}}"
    if "below_attr" in rule:
        return f"low >= 0 and high <= its {rule['below_attr']} attribute"
    if "rows_of" in rule:
        return f"the first dimension of {rule['rows_of']}"
    if "count" in rule:
        return "counts from 0 (low >= 0)"
    return "no generator"


def _resolve_dim(dim: Any, attrs: Mapping[str, Any], args: Mapping[str, Any], rank: int) -> Any:
    if isinstance(dim, dict):
        if "attr" in dim:
            dim = attrs.get(dim["attr"], dim.get("default", 0))
        elif dim.get("time"):
            dim = 0 if args.get("time_major") else 1
    if isinstance(dim, int) and not isinstance(dim, bool) and rank and -rank <= dim < rank:
        return dim % rank
    return dim


def rules_for(cfg: Mapping[str, Any], table: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None):
    """(the table's rules, the name) for an expanded op or layer case (no rules when it names neither)."""
    name = cfg.get(kinds.get(cfg["kind"]).call or "")
    return rules_of(name or "", table), name


def rules_of(name: str, table: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None):
    """The table's rules for the op or layer `name`; paddle.Tensor.<x> takes those of paddle.<x>."""
    table = load_table() if table is None else table
    if name not in table and name.startswith("paddle.Tensor."):
        name = "paddle." + name.removeprefix("paddle.Tensor.")
    return table.get(name, {})


def _is_int(spec: Mapping[str, Any]) -> bool:
    dtype = str(spec.get("dtype"))
    return dtype.startswith(("int", "uint")) or (spec.get("index") is not None and dtype == "$dtype")


def check_call(
    name: str,
    rules: Mapping[str, Mapping[str, Any]],
    given: Mapping[str, str],
    tensors: Mapping[str, Mapping[str, Any]],
    attrs: Mapping[str, Any],
    args: Mapping[str, Any],
    where: str,
) -> list[tuple[str, str]]:
    """(field, reason) for each index-carrying parameter of one call of `name` that does not come from
    its generator. `given` maps the call's parameters to the case's input names (op cases: the same
    name; program steps: the feed variable), `tensors` the case's inputs as written (before their
    ranges are resolved), `where` the field prefix of those inputs ('inputs' or 'feed')."""
    problems: list[tuple[str, str]] = []
    for param, rule in rules.items():
        if "plain" in rule:
            continue
        what = rule.get("what", "an index")
        head = f"{param!r} of {name} is {what}"
        if "attr_range" in rule:  # an integer attribute the kernel trusts: given, and within the range
            value, (least, most) = attrs.get(param), rule["attr_range"]
            if (
                not isinstance(value, int)
                or isinstance(value, bool)
                or value < least
                or (most is not None and value > most)
            ):
                within = f"from {least}" + (f" to {most}" if most is not None else "")
                problems.append(
                    (f"attrs.{param}", f"{head}: expected an integer {within} in attrs (the kernel does not "
                     f"check it: outside, or left at its default, it kills the worker), got {value!r}")
                )  # fmt: skip
            continue
        if attrs.get(param) is not None and "count" not in rule and "below_attr" not in rule:
            problems.append(
                (f"attrs.{param}", f"{head}: a plain value is refused; give it as an input with "
                 f"{describe(rule, attrs, args)} (docs/sandbox.md)")
            )  # fmt: skip
            continue
        if param not in given:
            continue
        var = given[param]
        if "never" in rule:
            problems.append(
                (f"{where}.{var}", f"{param!r} of {name} cannot be given by a config: {rule['never']}")
            )
            continue
        spec = tensors.get(var)
        if spec is None:
            problems.append(
                (where, f"{head}: it must be fed from an input with {describe(rule, attrs, args)}, not from another "
                 "step's output (its values could not be kept in range)")
            )  # fmt: skip
            continue
        if rule.get("int_only") and not _is_int(spec):
            continue
        reason = _check_generator(head, rule, spec, given, tensors, attrs, args)
        if reason:
            problems.append((f"{where}.{var}", reason))
    return problems


def _check_generator(head, rule, spec, given, tensors, attrs, args) -> str | None:
    want = describe(rule, attrs, args)
    if "count" in rule:
        if float(spec.get("low", 0)) < 0:
            return f"{head}: expected counts from 0 (low >= 0), got low: {spec.get('low')}"
        return None
    if "rows_of" in rule:
        other = tensors.get(given.get(rule["rows_of"], ""), {})
        rows, mine = (other.get("shape") or [None])[:1], (spec.get("shape") or [None])[:1]
        if rows != mine:
            return f"{head}: expected its first dimension to be {rows[0]} (that of {rule['rows_of']!r}), got {mine[0]}"
        return None
    if "below_attr" in rule:
        bound = attrs.get(rule["below_attr"])
        if spec.get("index") is not None or spec.get("values") is not None:
            return f"{head}: expected a range inside [0, {rule['below_attr']}), not a generator"
        if not isinstance(bound, int) or isinstance(bound, bool):
            return f"{head}: expected the attribute {rule['below_attr']!r} to bound it, got {bound!r}"
        low, high = float(spec.get("low", -1.0)), float(spec.get("high", 1.0))
        if not (low >= 0 and high <= bound):
            return (f"{head}: expected low >= 0 and high <= {rule['below_attr']} ({bound}), "
                    f"got low {low:g} and high {high:g}")  # fmt: skip
        return None
    if "index" in rule:
        ix, mine = rule["index"], spec.get("index")
        target = given.get(ix["of"])
        want = want.replace(f"of: {ix['of']}", f"of: {target}", 1)
        if not isinstance(mine, dict):
            if spec.get("values") not in (None, "sorted"):
                return f"{head}: expected {want}, got values: {spec['values']!r}"
            return f"{head}: a plain low/high range is refused; use {want} (docs/sandbox.md)"
        if mine.get("of") != target:
            return f"{head}: expected {want}, got of: {mine.get('of')!r}"
        rank = len((tensors.get(target) or {}).get("shape") or [])
        expected = ix.get("dim", 0)
        if expected in ("min", "count"):
            ok = mine.get("dim") == expected
        else:
            ok = _resolve_dim(mine.get("dim", 0), attrs, args, rank) == _resolve_dim(
                expected, attrs, args, rank
            )
        if not ok:
            return f"{head}: expected {want}, got dim: {mine.get('dim', 0)!r}"
        if int(mine.get("low", 0)) < int(ix.get("low", 0)):
            return f"{head}: expected {want}, got low: {mine.get('low')}"
        if mine.get("inclusive") and not ix.get("inclusive"):
            return f"{head}: expected {want}: inclusive reaches one past the last valid value"
        return None
    kind, of = next(iter(rule["values"].items()))
    target = given.get(of)
    want = want.replace(f"{kind}: {of}", f"{kind}: {target}", 1)
    mine = spec.get("values")
    if not isinstance(mine, dict) or mine.get(kind) != target:
        if spec.get("index") is None and mine is None:
            return f"{head}: a plain low/high range is refused; use {want} (docs/sandbox.md)"
        return f"{head}: expected {want}, got {spec.get('index') or mine!r}"
    length = rule.get("length_of")
    if length:
        tshape = (tensors.get(given.get(length["of"], ""), {}) or {}).get("shape") or []
        shape, dim = spec.get("shape") or [], length.get("dim", 0)
        size = tshape[dim] if isinstance(tshape, list) and len(tshape) > dim else "?"
        if shape != [size]:
            return f"{head}: expected shape [{size}] (one entry per dimension {dim} of {length['of']!r}), got {shape}"
    return None


def output_bytes(name: str, rules: Mapping[str, Mapping[str, Any]], tensors, attrs) -> int:
    """Bytes of an output whose size depends on an input's values (`count` rules), at the most the
    values allow: repeat_interleave's repeats ({of: x}: x's elements times the largest repeat) and
    bincount's x ({bins: true}: one int64 bin per value up to the largest, or minlength); 0 when the
    call has none."""
    for param, rule in rules.items():
        if "count" not in rule:
            continue
        if param in attrs:
            most = attrs[param]
            most = max(most) if isinstance(most, list) and most else most
        elif param in tensors:
            most = float(tensors[param].get("high", 1)) - 1
        else:
            continue
        if not isinstance(most, (int, float)) or isinstance(most, bool):
            return 0
        if rule["count"].get("bins"):
            minlength = attrs.get("minlength") if isinstance(attrs.get("minlength"), int) else 0
            return int(max(most + 1, minlength, 1) * 8)
        x = tensors.get(rule["count"]["of"]) or {}
        shape = x.get("shape") if isinstance(x.get("shape"), list) else []
        return int(math.prod(shape) * max(float(most), 1.0) * 8)
    return 0
