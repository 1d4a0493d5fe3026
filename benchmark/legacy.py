"""Convert PaddlePaddle benchmark API configs (``api/tests_v2/configs/*.json``) into YAML cases.

Pure: parsed JSON in, config dicts (and YAML text) out; `benchmark import-legacy` does the file I/O.

A legacy file is a JSON list of ``{"op", "param_info": {name: {"type", "dtype", "shape" | "value"}},
"atol"?, "repeat"?, "config_id"?}``. Conversion rules:

* shapes are strings such as ``"[-1L, 128L, 8L]"`` (``L``: a Python 2 long); a ``-1`` in the first
  dimension is the batch dimension and becomes ``batch_size``; a ``-1`` anywhere else cannot be
  converted (the legacy harness filled it from data the config does not carry);
* ``type: Variable`` parameters are inputs; any other type is an attribute whose ``value`` string is
  parsed by its type (``int``, ``float``, ``bool`` as ``True``/``False``, ``string`` with ``None``
  meaning null, ``list``/``tuple`` of numbers);
* ``atol`` becomes the case's ``tolerance: {atol: ...}`` (the dtype's default rtol stays);
  ``repeat`` (a suggested iteration count) is kept in the ``description``: this harness calibrates
  its own rounds;
* the legacy ``op`` names map to paddle APIs through `OPS` (each entry says which API and why);
  attributes the modern API does not take are dropped with a note (`OpMapping.dropped`), any other
  unknown attribute makes the config not convertible;
* ``float16`` cases get ``places: [gpu]`` only, with a note: paddle has no float16 CPU kernel for
  several of these ops, and the legacy harness measured float16 on GPU;
* ``lstm`` becomes a ``model: lstm`` case when its arguments map onto the registered builder
  (forward direction, initial-state shape consistent with batch/hidden/layers), else it is reported.

Cases are named ``<op>_legacy_<n>`` (``n``: the config's ``config_id``, else its index), tagged
``imported``, with ``places: [cpu, gpu]``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

_SHAPE = re.compile(r"^\[\s*(-?\d+L?\s*(,\s*-?\d+L?\s*)*)?,?\s*\]$")
DEFAULT_BATCH_SIZE = 16


class NotConvertible(ValueError):
    """A legacy config that cannot be expressed as a case; the message says why."""


@dataclass(frozen=True)
class OpMapping:
    """How one legacy op becomes paddle cases."""

    apis: tuple[tuple[str, str], ...]  # (case-name prefix, paddle API)
    inputs: tuple[str, ...]  # accepted input names (the API's argument names)
    attrs: tuple[str, ...] = ()  # attributes passed through
    dropped: dict[str, str] = field(default_factory=dict)  # attribute -> why it is dropped
    references: dict[str, str] = field(default_factory=dict)  # paddle API -> numpy reference
    torch_ops: dict[str, str] = field(default_factory=dict)  # paddle API -> torch equivalent
    why: str = ""
    adjust: str | None = None  # shape rules checked (and legacy axis applied) before emitting


OPS: dict[str, OpMapping] = {
    "activation": OpMapping(
        apis=(("relu", "paddle.nn.functional.relu"),),
        inputs=("x",),
        torch_ops={"paddle.nn.functional.relu": "torch.relu"},
        why="the legacy 'activation' config does not name its function; relu is the one its models use most",
    ),
    "elementwise": OpMapping(
        apis=(("elementwise_add", "paddle.add"), ("elementwise_mul", "paddle.multiply")),
        inputs=("x", "y"),
        dropped={
            "axis": "modern paddle broadcasts by trailing dimensions; the legacy axis is not an argument"
        },
        adjust="elementwise",
        references={"paddle.add": "numpy.add", "paddle.multiply": "numpy.multiply"},
        torch_ops={"paddle.add": "torch.add", "paddle.multiply": "torch.mul"},
        why="the legacy 'elementwise' config does not say which operation; both add and multiply are emitted",
    ),
    "matmul": OpMapping(
        apis=(("matmul", "paddle.matmul"),),
        inputs=("x", "y"),
        attrs=("transpose_x", "transpose_y"),
        adjust="matmul",
        references={"paddle.matmul": "numpy.matmul"},
        torch_ops={"paddle.matmul": "torch.matmul"},
    ),
    "reduce": OpMapping(
        apis=(("reduce_sum", "paddle.sum"),),
        inputs=("x",),
        attrs=("axis", "keepdim"),
        references={"paddle.sum": "numpy.sum"},
        torch_ops={"paddle.sum": "torch.sum"},
        why="the legacy 'reduce' config does not name its reduction; sum is the one its configs were harvested for",
    ),
    "softmax": OpMapping(
        apis=(("softmax", "paddle.nn.functional.softmax"),),
        inputs=("x",),
        attrs=("axis",),
        torch_ops={"paddle.nn.functional.softmax": "torch.softmax"},
    ),
}


def _elementwise_shapes(inputs: dict[str, dict[str, Any]], attrs: dict[str, Any], notes: list[str]) -> None:
    """Apply the legacy ``axis`` (align y with x from dimension axis) as trailing 1s on y; check broadcasting."""
    x, y = inputs["x"]["shape"], inputs["y"]["shape"]
    axis = attrs.get("axis", -1)
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise NotConvertible(f"elementwise axis {axis!r}: expected an integer")
    if axis != -1:
        pad = len(x) - axis - len(y)
        if axis < 0 or pad < 0:
            raise NotConvertible(f"elementwise axis={axis} cannot align y {y} with x {x}")
        if pad:
            inputs["y"]["shape"] = y + [1] * pad
            notes.append(f"y reshaped {y} -> {inputs['y']['shape']} to keep the legacy axis={axis} alignment")
    try:
        _broadcast(x, inputs["y"]["shape"])
    except ValueError:
        raise NotConvertible(f"x {x} and y {inputs['y']['shape']} do not broadcast") from None


def _broadcast(a: list[int], b: list[int]) -> list[int]:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da, db = (a[-i] if i <= len(a) else 1), (b[-i] if i <= len(b) else 1)
        if da != db and 1 not in (da, db):
            raise ValueError(f"{a} and {b}")
        out.append(max(da, db))
    return out[::-1]


def _matmul_shapes(inputs: dict[str, dict[str, Any]], attrs: dict[str, Any], notes: list[str]) -> None:
    """The contracted dimensions must agree (after the transposes) and the batch dimensions broadcast."""
    x, y = inputs["x"]["shape"], inputs["y"]["shape"]
    if len(x) < 2 or len(y) < 2:
        return
    k_x = x[-2] if attrs.get("transpose_x") else x[-1]
    k_y = y[-1] if attrs.get("transpose_y") else y[-2]
    if k_x != k_y:
        raise NotConvertible(f"matmul of x {x} and y {y}: contracted dimensions {k_x} != {k_y}")
    try:
        _broadcast(x[:-2], y[:-2])
    except ValueError:
        raise NotConvertible(f"matmul of x {x} and y {y}: batch dimensions do not broadcast") from None


_ADJUST = {"elementwise": _elementwise_shapes, "matmul": _matmul_shapes}
# The lstm config maps onto the registered `lstm` model builder (benchmark.runners.models).
LSTM_PARAMS = {
    "inputs",
    "inital_states",
    "initial_states",
    "sequence_length",
    "hidden_size",
    "num_layers",
    "direction",
}


@dataclass
class Report:
    """What happened to one legacy config: ``converted`` (with notes), or ``skipped`` with the reason."""

    source: str
    index: int
    op: str
    status: str  # "converted" | "skipped"
    message: str
    cases: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        head = f"{self.source} #{self.index} ({self.op})"
        if self.status == "skipped":
            return f"{head}: not converted: {self.message}"
        return f"{head}: {', '.join(self.cases)}" + (f" ({self.message})" if self.message else "")


@dataclass
class Conversion:
    """The cases converted from one legacy file and a report per config."""

    source: str
    cases: list[dict[str, Any]] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)

    @property
    def skipped(self) -> list[Report]:
        return [r for r in self.reports if r.status == "skipped"]


# ------------------------------------------------------------------------------------------
# Parsing
# ------------------------------------------------------------------------------------------


def parse_shape(text: Any, batch_size: int = DEFAULT_BATCH_SIZE) -> list[int]:
    """``"[-1L, 128L, 8L]"`` -> ``[batch_size, 128, 8]``; NotConvertible for -1 elsewhere or bad text."""
    if isinstance(text, list):
        dims = text
    else:
        if not isinstance(text, str) or not _SHAPE.match(text.strip()):
            raise NotConvertible(f"shape {text!r} is not a list of integers such as '[-1L, 128L]'")
        inner = text.strip()[1:-1]
        dims = [int(d.strip().rstrip("L")) for d in inner.split(",") if d.strip()]
    out = []
    for i, d in enumerate(dims):
        if not isinstance(d, int) or isinstance(d, bool):
            raise NotConvertible(f"shape {text!r}: dimension {d!r} is not an integer")
        if d == -1 and i == 0:
            d = batch_size
        elif d == -1:
            raise NotConvertible(
                f"shape {text!r}: -1 in dimension {i} (only the first, batch, dimension may be -1)"
            )
        elif d <= 0:
            raise NotConvertible(f"shape {text!r}: dimension {i} is {d}")
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
        parsed = ast.literal_eval(value)  # literals only: never evaluates code
    except (ValueError, SyntaxError) as e:
        raise NotConvertible(f"list value {value!r} is not a literal list ({e})") from None
    if not isinstance(parsed, (list, tuple)) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in parsed
    ):
        raise NotConvertible(f"list value {value!r}: expected a list of numbers")
    return list(parsed)


def parse_value(type_: str, value: Any) -> Any:
    """A typed legacy attribute (value given as a string) -> a plain YAML value."""
    if not isinstance(value, str):
        value = str(value)
    value = value.strip()
    try:
        if type_ == "int":
            return int(value)
        if type_ == "float":
            return float(value)
    except ValueError:
        raise NotConvertible(f"{type_} value {value!r} does not parse") from None
    if type_ == "bool":
        return _parse_bool(value)
    if type_ == "string":
        return None if value == "None" else value
    if type_ in ("list", "tuple"):
        return _parse_sequence(value)
    raise NotConvertible(f"attribute type {type_!r} is not supported (int, float, bool, string, list, tuple)")


def split_params(
    param_info: dict[str, Any], batch_size: int
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """param_info -> (inputs {name: {shape, dtype}}, attrs {name: value})."""
    if not isinstance(param_info, dict) or not param_info:
        raise NotConvertible("param_info is missing or empty")
    inputs, attrs = {}, {}
    for name, spec in param_info.items():
        if not isinstance(spec, dict) or "type" not in spec:
            raise NotConvertible(f"parameter {name!r}: expected a mapping with a 'type'")
        if spec["type"] == "Variable":
            dtype = spec.get("dtype")
            if dtype not in ("float16", "float32", "float64", "int32", "int64", "bool"):
                raise NotConvertible(f"input {name!r}: dtype {dtype!r} is not supported")
            inputs[name] = {"shape": parse_shape(spec.get("shape"), batch_size), "dtype": dtype}
        else:
            attrs[name] = parse_value(spec["type"], spec.get("value"))
    return inputs, attrs


# ------------------------------------------------------------------------------------------
# Conversion
# ------------------------------------------------------------------------------------------


def _label(config: dict[str, Any], index: int) -> int:
    cid = config.get("config_id")
    return cid if isinstance(cid, int) and not isinstance(cid, bool) else index


def _description(source: str, index: int, config: dict[str, Any], notes: list[str], why: str) -> str:
    text = f"imported from legacy {source} config #{index}"
    if "repeat" in config:
        text += f" (legacy repeat hint: {config['repeat']} iterations)"
    return "; ".join([text, *([why] if why else []), *notes])


def _tolerance(config: dict[str, Any]) -> dict[str, float] | None:
    atol = config.get("atol")
    if atol is None:
        return None
    if isinstance(atol, bool) or not isinstance(atol, (int, float)) or atol < 0:
        raise NotConvertible(f"atol {atol!r}: expected a non-negative number")
    return {"atol": float(atol)}


def _op_cases(
    mapping: OpMapping, config, source, index, batch_size, backward
) -> tuple[list[dict], list[str]]:
    inputs, attrs = split_params(config.get("param_info"), batch_size)
    notes: list[str] = []
    unknown_inputs = set(inputs) - set(mapping.inputs)
    if unknown_inputs:
        raise NotConvertible(f"input(s) {sorted(unknown_inputs)} are not arguments of {mapping.apis[0][1]}")
    missing = set(mapping.inputs) - set(inputs)
    if missing:
        raise NotConvertible(f"input(s) {sorted(missing)} of {mapping.apis[0][1]} are missing")
    if mapping.adjust:
        _ADJUST[mapping.adjust](inputs, attrs, notes)
    for name in list(attrs):
        if name in mapping.dropped:
            notes.append(f"attribute {name}={attrs.pop(name)!r} dropped: {mapping.dropped[name]}")
        elif name not in mapping.attrs:
            raise NotConvertible(f"unknown attribute {name!r} for legacy op {config['op']!r}")
    dtypes = sorted({spec["dtype"] for spec in inputs.values()})
    places = ["cpu", "gpu"]
    if "float16" in dtypes:
        places = ["gpu"]
        notes.append("float16: GPU only (paddle has no float16 CPU kernel for several of these ops)")
    tolerance = _tolerance(config)
    label = _label(config, index)
    cases = []
    for prefix, api in mapping.apis:
        case: dict[str, Any] = {
            "name": f"{prefix}_legacy_{label}",
            "kind": "op",
            "op": api,
            "description": _description(source, index, config, notes, mapping.why),
            "inputs": inputs,
            "places": places,
            "dtypes": dtypes if len(dtypes) == 1 else ["float32"],
            "backward": [False, True] if backward else False,
            "tags": ["imported"],
        }
        if len(dtypes) == 1:
            case["inputs"] = {n: {"shape": s["shape"]} for n, s in inputs.items()}  # dtype: $dtype
        if attrs:
            case["attrs"] = dict(attrs)
        if api in mapping.references:
            case["reference"] = mapping.references[api]
        if api in mapping.torch_ops:
            case["torch_op"] = mapping.torch_ops[api]
        if tolerance:
            case["tolerance"] = dict(tolerance)
        cases.append(case)
    return cases, notes


def _lstm_case(config, source, index, batch_size) -> tuple[list[dict], list[str]]:
    params = config.get("param_info") or {}
    unknown = set(params) - LSTM_PARAMS
    if unknown:
        raise NotConvertible(f"lstm: unknown parameter(s) {sorted(unknown)}")
    inputs, attrs = split_params(params, batch_size)
    if "inputs" not in inputs:
        raise NotConvertible("lstm: no 'inputs' variable to take batch, sequence and input sizes from")
    shape = inputs["inputs"]["shape"]
    if len(shape) != 3 or inputs["inputs"]["dtype"] != "float32":
        raise NotConvertible(f"lstm: inputs must be float32 [batch, seq_len, input_size], got {shape}")
    batch, seq_len, input_size = shape
    hidden, layers = attrs.get("hidden_size"), attrs.get("num_layers", 1)
    direction = attrs.get("direction", "forward")
    if direction != "forward":
        raise NotConvertible(f"lstm: direction {direction!r} (the lstm model builder is unidirectional)")
    if not isinstance(hidden, int) or not isinstance(layers, int):
        raise NotConvertible("lstm: hidden_size and num_layers must be integers")
    if attrs.get("sequence_length", seq_len) != seq_len:
        raise NotConvertible(
            f"lstm: sequence_length {attrs['sequence_length']} != inputs' dimension 1 ({seq_len})"
        )
    notes = [
        "the model starts from zero initial states (the legacy random initial states are not an argument)",
        "timed as the lstm model (LSTM + linear head + cross-entropy), not the bare LSTM layer",
    ]
    states = inputs.get("inital_states") or inputs.get("initial_states")
    if states and states["shape"] != [layers, batch, hidden]:
        raise NotConvertible(
            f"lstm: initial states {states['shape']} != [num_layers, batch, hidden] {[layers, batch, hidden]}"
        )
    case = {
        "name": f"lstm_legacy_{_label(config, index)}",
        "kind": "model",
        "model": "lstm",
        "description": _description(source, index, config, notes, ""),
        "args": {
            "batch_size": batch,
            "seq_len": seq_len,
            "input_size": input_size,
            "hidden_size": hidden,
            "num_layers": layers,
        },
        "step": ["train", "infer"],
        "places": ["cpu", "gpu"],
        "tags": ["imported"],
    }
    return [case], notes


def convert_config(
    config: dict[str, Any],
    *,
    source: str,
    index: int,
    batch_size: int = DEFAULT_BATCH_SIZE,
    backward: bool = False,
) -> tuple[list[dict[str, Any]], list[str]]:
    """One legacy config -> (case dicts, notes); raises NotConvertible with the reason."""
    if not isinstance(config, dict):
        raise NotConvertible(f"expected a JSON object, got {type(config).__name__}")
    op = config.get("op")
    if op == "lstm":
        return _lstm_case(config, source, index, batch_size)
    if op not in OPS:
        raise NotConvertible(f"legacy op {op!r} has no mapping (known: {', '.join(sorted([*OPS, 'lstm']))})")
    return _op_cases(OPS[op], config, source, index, batch_size, backward)


def convert(
    configs: Any, *, source: str, batch_size: int = DEFAULT_BATCH_SIZE, backward: bool = False
) -> Conversion:
    """A parsed legacy file (a JSON list of configs) -> Conversion with the cases and one report per config."""
    if batch_size < 1:
        raise ValueError(f"batch_size: expected a positive integer, got {batch_size}")
    result = Conversion(source)
    if isinstance(configs, dict):
        configs = [configs]
    if not isinstance(configs, list):
        result.reports.append(Report(source, 0, "?", "skipped", "expected a JSON list of configs"))
        return result
    for index, config in enumerate(configs):
        op = config.get("op", "?") if isinstance(config, dict) else "?"
        try:
            cases, notes = convert_config(
                config, source=source, index=index, batch_size=batch_size, backward=backward
            )
        except NotConvertible as e:
            result.reports.append(Report(source, index, str(op), "skipped", str(e)))
            continue
        result.cases.extend(cases)
        result.reports.append(
            Report(source, index, str(op), "converted", "; ".join(notes), [c["name"] for c in cases])
        )
    return result


def to_yaml(conversion: Conversion, reports: Iterable[Report] | None = None) -> str:
    """The YAML text of a converted file: a header naming the source and what was not converted."""
    lines = [
        f"# Imported by `benchmark import-legacy` from {conversion.source} (PaddlePaddle benchmark API configs)."
    ]
    for r in reports if reports is not None else conversion.skipped:
        lines.append(f"# not converted: config #{r.index}: {r.message}")
    body = yaml.safe_dump({"cases": conversion.cases}, sort_keys=False, default_flow_style=None, width=110)
    return "\n".join(lines) + "\n" + body
