"""What type an operator's keyword argument takes, read from a real Python signature (annotations
as strings, as paddle's modules write them, or the default), and the value that does not fit."""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from benchmark.config.attr_types import mistyped, parse


def annotated(
    x,
    axis: int = -1,
    keepdim: bool = False,
    p: float = 2.0,
    size: int | Sequence[int] | None = None,
    mode: _Mode = "nearest",  # noqa: F821  (paddle's aliases are imported only for type checking)
):
    """A function annotated the way paddle's are (strings, names that do not resolve at run time)."""


def plain(x, axis=-1, keepdim=False, p=2.0, mode="nearest", bias=None):
    """An older function without annotations: the defaults say the types."""


def test_plain_annotations_parse_and_anything_else_is_unknown():
    assert parse("int") == ["int"]
    assert parse("int | Sequence[int] | None") == ["int", ("seq", ["int"]), "None"]
    assert parse("tuple[int, ...]") == [("seq", ["int"])]
    assert parse("Size2") is None and parse("int | Tensor") is None and parse("Literal['a']") is None


def test_annotations_say_the_type():
    sig = inspect.signature(annotated)
    assert mistyped("f", sig, {"axis": 1, "keepdim": True, "p": 3, "size": [2, 3], "mode": 7}) is None
    assert mistyped("f", sig, {"axis": "last"}) == (
        "f's argument 'axis' takes an integer (annotated `int` in the signature), not 'last' (str): "
        "paddle would refuse it at run time"
    )
    assert "argument 'axis'" in mistyped("f", sig, {"axis": True})  # a bool is not an integer
    assert "argument 'axis'" in mistyped("f", sig, {"axis": 1.5})
    assert "argument 'p'" in mistyped("f", sig, {"p": "two"})
    assert "argument 'size' takes an integer or a list of (an integer) or null" in mistyped(
        "f", sig, {"size": [2, "x"]}
    )


def test_without_annotations_the_default_says_the_type():
    sig = inspect.signature(plain)
    assert mistyped("g", sig, {"axis": [0, 1], "keepdim": True, "p": 1, "mode": 3, "bias": "x"}) is None
    reason = mistyped("g", sig, {"keepdim": 1})
    assert reason == (
        "g's argument 'keepdim' takes a boolean or null (its default in the signature is False), not 1 (int): "
        "paddle would refuse it at run time"
    )
    assert "argument 'axis' takes an integer or a list of (an integer) or null" in mistyped(
        "g", sig, {"axis": "last"}
    )
    assert mistyped("g", sig, {"axis": None, "bias": None, "unknown": "x"}) is None
