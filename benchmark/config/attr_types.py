"""The type an operator's keyword argument takes, read from its Python signature, and the first
config value that does not fit it (issue 45: `axis: "last"` used to pass validation and fail in the
worker). No framework is imported here: the runners pass the signature in.

Where the type comes from, first that applies:

* paddle's annotation, when it is made only of ``int``, ``float``, ``bool``, ``str``, ``None`` and
  sequences (``Sequence[...]``, ``list[...]``, ``tuple[...]``) of those; any other name in it (an
  alias such as ``Size2``, ``Tensor``, ``Literal[...]``) leaves the argument unchecked;
* without an annotation, the default: a bool takes booleans, an int integers (or a list of them), a
  float numbers (and each null).

The allowlist's table of index inputs (`configs/index_inputs.yaml`, ``attr_range``) types the
attributes a kernel trusts; `benchmark.config.indexed` checks those.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import Any

_SCALARS = ("int", "float", "bool", "str", "None")
_SEQUENCES = frozenset({"Sequence", "list", "List", "tuple", "Tuple"})
_WORDS = {"int": "an integer", "float": "a number", "bool": "a boolean", "str": "a string", "None": "null"}
# One alternative of a union: a scalar's name, or ("seq", the union its elements may be).
_Type = str | tuple[str, list[Any]]


def _split(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def parse(annotation: str) -> list[_Type] | None:
    """The union `annotation` (a string, as paddle's modules write them) says, or None when a part of
    it is not a plain type (the argument is then not checked)."""
    union: list[_Type] = []
    for part in (p.strip() for p in _split(annotation, "|")):
        if part in _SCALARS:
            union.append(part)
            continue
        m = re.fullmatch(r"(?:typing\.)?(\w+)\[(.*)\]", part)
        if not m or m[1] not in (*_SEQUENCES, "Optional"):
            return None
        inner: list[_Type] = []
        for arg in (a.strip() for a in _split(m[2], ",")):
            if arg == "...":
                continue
            parsed = parse(arg)
            if parsed is None:
                return None
            inner += parsed
        union += [*inner, "None"] if m[1] == "Optional" else [("seq", inner)]
    return union


def fits(value: Any, union: list[_Type]) -> bool:
    """Whether `value` (plain config data) is one of `union`'s alternatives (an int is a number, a
    bool is neither)."""
    return any(_fits_one(value, alt) for alt in union)


def _fits_one(value: Any, alt: _Type) -> bool:
    if isinstance(alt, tuple):
        return isinstance(value, list) and all(fits(v, alt[1]) for v in value)
    if alt == "None":
        return value is None
    if alt == "bool":
        return isinstance(value, bool)
    if alt == "str":
        return isinstance(value, str)
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (alt == "float" and isinstance(value, float))


def _expected(param: inspect.Parameter) -> tuple[list[_Type], str] | None:
    """(the union the argument takes, where that comes from), or None when the signature says nothing
    plain about it."""
    if isinstance(param.annotation, str):
        union = parse(param.annotation)
        return None if union is None else (union, f"annotated `{param.annotation}` in the signature")
    if param.annotation is not inspect.Parameter.empty:
        return None
    default = param.default
    union: list[_Type] | None = None
    if isinstance(default, bool):
        union = ["bool"]
    elif isinstance(default, int):
        union = ["int", ("seq", ["int"])]
    elif isinstance(default, float):
        union = ["float"]
    # an older function often takes None for "unset" whatever its default: not refused
    return None if union is None else ([*union, "None"], f"its default in the signature is {default!r}")


def _words(union: list[_Type]) -> str:
    words = [_WORDS[a] if isinstance(a, str) else f"a list of ({_words(a[1])})" for a in union]
    return " or ".join(dict.fromkeys(words))


def mistyped(name: str, sig: inspect.Signature, values: Mapping[str, Any]) -> str | None:
    """The first of `values` (keyword arguments of `name`) whose type its parameter in `sig` does not
    take, as a reason naming the argument, the value, the expected type and where it comes from;
    None when all fit (or nothing says)."""
    for key, value in values.items():
        param = sig.parameters.get(key)
        if param is None or value is None and param.default is None:
            continue
        expected = _expected(param)
        if expected is None or fits(value, expected[0]):
            continue
        union, source = expected
        return (
            f"{name}'s argument {key!r} takes {_words(union)} ({source}), not {value!r} "
            f"({type(value).__name__}): paddle would refuse it at run time"
        )
    return None
