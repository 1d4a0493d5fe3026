"""What a layer case may construct, checked without importing any framework.

A `kind: layer` case names a class on the allowlist's `layer` section (`configs/allowlist.yaml`)
and gives its constructor's arguments as `args`. Before anything is imported or built:

- every argument is a number, a boolean, null, a list of those, or a short word (`NCHW`, `zeros`,
  `bidirectional`); never a path, a name or a parameter attribute, so a config cannot make a layer
  read or name anything;
- the layer's parameters are estimated from its arguments (`param_count`) and, with their
  gradients in a backward case, counted against the case's memory cap with its inputs.

Every class on the allowlist has an estimate here (a test checks it), so adding one to the
allowlist means saying here how big it can get.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

# A word a constructor may take (data_format, padding_mode, direction, activation): letters,
# digits and '_', at most 16 characters. No '/', '.', '~' or spaces: no path can be spelt.
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,15}", re.ASCII)
# Arguments that name things (a parameter's name, an initializer, a file): refused whatever their
# value, but `*_attr: false` / `null` (no bias, the default initializer), which names nothing.
_NAMING = re.compile(r"name|.*_attr", re.ASCII)


def _int(args: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = args.get(key, default)
    if value is None:
        raise ValueError(f"{key}: required to build this layer")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**40:
        raise ValueError(f"{key} = {value!r}: expected a non-negative integer")
    return value


def _ints(args: Mapping[str, Any], key: str, n: int, default: int | None = None) -> list[int]:
    """An int-or-list argument (kernel_size, normalized_shape) as `n` integers (n=0: any length)."""
    value = args.get(key, default)
    if isinstance(value, list):
        if (n and len(value) != n) or not value:
            raise ValueError(f"{key} = {value!r}: expected {n or 'some'} integers")
        return [_int({key: v}, key) for v in value]
    return [_int({key: value}, key)] * max(n, 1)


def _conv(dims: int) -> Callable[[Mapping[str, Any]], int]:
    def count(a: Mapping[str, Any]) -> int:
        groups = max(_int(a, "groups", 1), 1)
        cin, cout = _int(a, "in_channels"), _int(a, "out_channels")
        return cin * cout // groups * math.prod(_ints(a, "kernel_size", dims)) + cout

    return count


def _norm(per_feature: int, key: str = "num_features") -> Callable[[Mapping[str, Any]], int]:
    return lambda a: per_feature * _int(a, key)


def _rnn(gates: int, cell: bool = False) -> Callable[[Mapping[str, Any]], int]:
    def count(a: Mapping[str, Any]) -> int:
        i, h = _int(a, "input_size"), _int(a, "hidden_size")
        if cell:
            return gates * (i * h + h * h + 2 * h)
        dirs = 2 if a.get("direction") in ("bidirect", "bidirectional") else 1
        layers = max(_int(a, "num_layers", 1), 1)
        widest = max(i, h * dirs)  # the input of layers after the first is h x directions
        return layers * dirs * (gates * (widest * h + h * h + 2 * h) + 1)  # + paddle's one-element buffer

    return count


def _attention(a: Mapping[str, Any]) -> int:
    e = _int(a, "embed_dim")
    k, v = _int(a, "kdim", e) or e, _int(a, "vdim", e) or e
    return e * e + k * e + v * e + e * e + 4 * e


# leaf name of the allowlisted class -> its parameter count from its constructor arguments (an
# upper bound where the exact count depends on more than the arguments say).
PARAM_COUNT: dict[str, Callable[[Mapping[str, Any]], int]] = {
    "Linear": lambda a: _int(a, "in_features") * _int(a, "out_features") + _int(a, "out_features"),
    "Conv1D": _conv(1),
    "Conv2D": _conv(2),
    "Conv3D": _conv(3),
    "Conv1DTranspose": _conv(1),
    "Conv2DTranspose": _conv(2),
    "Conv3DTranspose": _conv(3),
    # weight, bias, running mean and variance
    "BatchNorm1D": _norm(4),
    "BatchNorm2D": _norm(4),
    "BatchNorm3D": _norm(4),
    "SyncBatchNorm": _norm(4),
    "InstanceNorm1D": _norm(2),
    "InstanceNorm2D": _norm(2),
    "InstanceNorm3D": _norm(2),
    "GroupNorm": _norm(2, "num_channels"),
    "LayerNorm": lambda a: 2 * math.prod(_ints(a, "normalized_shape", 0)),
    "PReLU": lambda a: _int(a, "num_parameters", 1),
    "Embedding": lambda a: _int(a, "num_embeddings") * _int(a, "embedding_dim"),
    "LSTM": _rnn(4),
    "GRU": _rnn(3),
    "SimpleRNN": _rnn(1),
    "LSTMCell": _rnn(4, cell=True),
    "GRUCell": _rnn(3, cell=True),
    "SimpleRNNCell": _rnn(1, cell=True),
    "MultiHeadAttention": _attention,
}


def check_args(layer: str, args: Mapping[str, Any]) -> tuple[str | None, int]:
    """(reason or None, parameter count) for constructing `layer` (a dotted allowlisted name) with
    `args`, without importing anything: the reason names the argument and what was expected."""
    leaf = layer.rpartition(".")[2]
    for key, value in args.items():
        if _NAMING.fullmatch(key) and value not in (None, False):
            return (
                f"args.{key}: a layer case cannot set {key} (it names a parameter, an initializer or "
                "a file); only false or null, for none",
                0,
            )
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and not _WORD.fullmatch(v):
                return (
                    f"args.{key}: {v!r} is not a plain word (letters, digits and '_', at most 16): a "
                    "layer's constructor takes numbers, booleans and words such as 'NCHW', never a path",
                    0,
                )
            if isinstance(v, (dict, list)):
                return f"args.{key}: expected a number, a boolean, a word or a list of those", 0
    count = PARAM_COUNT.get(leaf)
    if count is None:
        return (
            f"{layer!r}: no parameter estimate in benchmark/sandbox/nn_layers.py (add one with the allowlist entry)",
            0,
        )
    try:
        return None, count(args)
    except ValueError as e:
        return f"args.{e}", 0
