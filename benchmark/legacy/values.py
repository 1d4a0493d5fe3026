"""Parsing the values of a legacy config: shapes (``"[-1L, 128L]"``, batch and unknown dimensions),
attribute values by their declared type, and a config's parameters split into inputs and attributes."""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from benchmark.legacy import ops as T

_SHAPE = re.compile(r"^\[\s*(-?\d+L?\s*(,\s*-?\d+L?\s*)*)?,?\s*\]$")
_LONG = re.compile(r"(\d)[lL]\b")
DEFAULT_BATCH_SIZE = 16
DEFAULT_UNKNOWN_DIM = 16  # the legacy harness's init_from_json(unknown_dim=16)
DTYPES = ("float16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool")


class NotConvertible(ValueError):
    """A legacy config that cannot be expressed as a case; the message says why, `reason` its category."""

    def __init__(self, message: str, reason: str = T.VALUE):
        super().__init__(message)
        self.reason = reason


def parse_shape(
    text: Any, batch_size: int = DEFAULT_BATCH_SIZE, unknown_dim: int = DEFAULT_UNKNOWN_DIM
) -> list[int]:
    """``"[-1L, 128L, -1L]"`` -> ``[batch_size, 128, unknown_dim]``; NotConvertible for bad text."""
    if isinstance(text, list):
        dims = text
    else:
        if isinstance(text, str) and text.strip().startswith("[") and not text.strip().endswith("]"):
            text = text.strip() + "]"  # one corpus shape lacks its "]"; the legacy parser ignored brackets
        if not isinstance(text, str) or not _SHAPE.match(text.strip()):
            raise NotConvertible(f"shape {text!r} is not a list of integers such as '[-1L, 128L]'", T.SHAPE)
        inner = text.strip()[1:-1]
        dims = [int(d.strip().rstrip("L")) for d in inner.split(",") if d.strip()]
    out = []
    for i, d in enumerate(dims):
        if not isinstance(d, int) or isinstance(d, bool):
            raise NotConvertible(f"shape {text!r}: dimension {d!r} is not an integer", T.SHAPE)
        if d == -1:
            d = batch_size if i == 0 else unknown_dim
        elif d <= 0:
            raise NotConvertible(f"shape {text!r}: dimension {i} is {d}", T.SHAPE)
        out.append(d)
    return out


def _parse_bool(value: str) -> bool:
    if value in ("True", "true"):
        return True
    if value in ("False", "false"):
        return False
    raise NotConvertible(f"bool value {value!r}: expected True or False")


def _parse_sequence(value: str) -> list[Any]:
    try:
        parsed = ast.literal_eval(_LONG.sub(r"\1", value))  # literals only: never evaluates code
    except (ValueError, SyntaxError) as e:
        raise NotConvertible(f"list value {value!r} is not a literal list ({e})") from None
    if not isinstance(parsed, (list, tuple)) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in parsed
    ):
        raise NotConvertible(f"list value {value!r}: expected a list of numbers")
    return list(parsed)


_INT_TYPES = ("int", "int32", "int64", "long")
_FLOAT_TYPES = ("float", "float32", "float64")


def parse_value(type_: str, value: Any) -> Any:
    """A typed legacy attribute (value given as a string) -> a plain YAML value."""
    if not isinstance(value, str):
        value = str(value)
    value = value.strip()
    if value == "None" and type_ != "string":
        return None
    try:
        if type_ in _INT_TYPES:
            return int(_LONG.sub(r"\1", value))
        if type_ in _FLOAT_TYPES:
            return float(value)
    except ValueError:
        raise NotConvertible(f"{type_} value {value!r} does not parse") from None
    if type_ == "bool":
        return _parse_bool(value)
    if type_ in ("string", "str"):
        return None if value == "None" else value
    if type_ in ("list", "tuple"):
        return _parse_sequence(value)
    raise NotConvertible(
        f"attribute type {type_!r} is not supported (int, float, bool, string, list, tuple)", T.VALUE
    )


def _input_spec(name: str, spec: dict[str, Any], batch_size: int, unknown_dim: int, notes: list[str]):
    dtype = spec.get("dtype")
    if dtype in T.DTYPE_ALIASES:
        notes.append(f"input {name}: legacy dtype {dtype!r} read as {T.DTYPE_ALIASES[dtype]}")
        dtype = T.DTYPE_ALIASES[dtype]
    if dtype not in DTYPES:
        raise NotConvertible(f"input {name!r}: dtype {dtype!r} is not supported", T.DTYPE)
    shape = parse_shape(spec.get("shape"), batch_size, unknown_dim)
    raw = str(spec.get("shape"))
    if raw.count("-1") > (1 if raw.replace(" ", "").startswith("[-1") else 0):
        notes.append(f"input {name}: -1 outside the batch dimension filled with {unknown_dim}")
    return {"shape": shape, "dtype": dtype}


def _list_spec(name: str, spec: dict[str, Any], batch_size: int, unknown_dim: int, notes: list[str]) -> list:
    """A `list<Variable>` parameter -> its tensors, in the legacy order (x0, x1, ..., x10)."""
    parts = [(k, v) for k, v in spec.items() if k != "type"]
    if not parts or not all(isinstance(v, dict) and v.get("type") == "Variable" for _, v in parts):
        raise NotConvertible(
            f"parameter {name!r}: a list<Variable> whose items are not all tensors", T.MALFORMED
        )

    def order(item: tuple[str, Any]) -> tuple[int, str]:
        digits = item[0][len(item[0].rstrip("0123456789")) :]
        return (int(digits) if digits else -1, item[0])

    return [
        _input_spec(f"{name}[{i}]", v, batch_size, unknown_dim, notes)
        for i, (_, v) in enumerate(sorted(parts, key=order))
    ]


def split_params(
    param_info: dict[str, Any],
    batch_size: int = DEFAULT_BATCH_SIZE,
    unknown_dim: int = DEFAULT_UNKNOWN_DIM,
    notes: list[str] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """param_info -> (inputs {name: {shape, dtype}}, attrs {name: value})."""
    notes = [] if notes is None else notes
    if not isinstance(param_info, dict) or not param_info:
        raise NotConvertible("param_info is missing or empty", T.MALFORMED)
    inputs, attrs = {}, {}
    for name, spec in param_info.items():
        if not isinstance(spec, dict) or "type" not in spec:
            raise NotConvertible(f"parameter {name!r}: expected a mapping with a 'type'", T.MALFORMED)
        if spec["type"] == "Variable":
            inputs[name] = _input_spec(name, spec, batch_size, unknown_dim, notes)
        elif spec["type"] == "list<Variable>":
            inputs[name] = {"tensors": _list_spec(name, spec, batch_size, unknown_dim, notes)}
        else:
            attrs[name] = parse_value(spec["type"], spec.get("value"))
            if isinstance(attrs[name], float) and not math.isfinite(attrs[name]):
                raise NotConvertible(
                    f"parameter {name!r} = {attrs[name]}: a config holds finite numbers (JSON has no infinity)",
                    T.VALUE,
                )
    return inputs, attrs
