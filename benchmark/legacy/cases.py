"""The cases of one legacy config: the op resolved through the alias table (`benchmark.legacy.ops`)
or generically, shape rules of particular ops (the table's ``adjust``), attributes bound against
the function's signature, a numpy reference where one applies, and the ``lstm`` model case."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

from benchmark.legacy import ops as T
from benchmark.legacy.values import (
    NotConvertible,
    split_params,
)
from benchmark.sandbox import allowlist

_REF = re.compile(
    r"^(?:attr:(?P<attr>[A-Za-z_]\w*)|(?P<input>[A-Za-z_]\w*)\.(?P<dim>-?\d+|min|count|[A-Za-z_]\w*))"
    r"(?P<div>//\d+)?(?P<offset>[+-]\d+)?$"
)
GENERIC_NAMESPACES = ("paddle.nn.functional", "paddle", "paddle.linalg", "paddle.vision.ops")
Resolver = Callable[[str], Any]  # dotted name -> function, or raises ValueError saying why


def _broadcast(a: list[int], b: list[int]) -> list[int]:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da, db = (a[-i] if i <= len(a) else 1), (b[-i] if i <= len(b) else 1)
        if da != db and 1 not in (da, db):
            raise ValueError(f"{a} and {b}")
        out.append(max(da, db))
    return out[::-1]


def _elementwise_shapes(inputs, attrs, notes, apis):
    """Apply the legacy ``axis`` (align y with x from dimension axis) as trailing 1s on y; check broadcasting."""
    if "x" not in inputs or "y" not in inputs:
        return apis
    x, y = inputs["x"]["shape"], inputs["y"]["shape"]
    axis = attrs.get("axis", -1)
    if axis is None:
        axis = -1
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise NotConvertible(f"elementwise axis {axis!r}: expected an integer")
    if axis != -1:
        pad = len(x) - axis - len(y)
        if axis < 0 or pad < 0:
            raise NotConvertible(f"elementwise axis={axis} cannot align y {y} with x {x}", T.SHAPE)
        if pad:
            inputs["y"]["shape"] = y + [1] * pad
            notes.append(f"y reshaped {y} -> {inputs['y']['shape']} to keep the legacy axis={axis} alignment")
    try:
        _broadcast(x, inputs["y"]["shape"])
    except ValueError:
        raise NotConvertible(f"x {x} and y {inputs['y']['shape']} do not broadcast", T.SHAPE) from None
    return apis


def _matmul_shapes(inputs, attrs, notes, apis):
    """The contracted dimensions must agree (after the transposes) and the batch dimensions broadcast."""
    if "x" not in inputs or "y" not in inputs:
        return apis
    x, y = inputs["x"]["shape"], inputs["y"]["shape"]
    if len(x) < 2 or len(y) < 2:
        return apis
    k_x = x[-2] if attrs.get("transpose_x") else x[-1]
    k_y = y[-1] if attrs.get("transpose_y") else y[-2]
    if k_x != k_y:
        raise NotConvertible(f"matmul of x {x} and y {y}: contracted dimensions {k_x} != {k_y}", T.SHAPE)
    try:
        _broadcast(x[:-2], y[:-2])
    except ValueError:
        raise NotConvertible(
            f"matmul of x {x} and y {y}: batch dimensions do not broadcast", T.SHAPE
        ) from None
    return apis


_POOL_RENAMES = {"input": "x", "pool_size": "kernel_size", "pool_stride": "stride", "pool_padding": "padding"}


def _pool2d(inputs, attrs, notes, apis):
    """fluid's pool2d -> max_pool2d / avg_pool2d; global pooling pools the whole plane."""
    for old, new in _POOL_RENAMES.items():
        if old in inputs:
            inputs[new] = inputs.pop(old)
        if old in attrs:
            attrs[new] = attrs.pop(old)
    pool_type = attrs.pop("pool_type", "max")
    if pool_type not in ("max", "avg"):
        raise NotConvertible(f"pool2d pool_type {pool_type!r}: expected max or avg")
    exclusive = attrs.pop("exclusive", True)
    if pool_type == "avg":
        attrs["exclusive"] = exclusive
    if attrs.pop("global_pooling", False):
        shape = inputs["x"]["shape"]
        nhwc = attrs.get("data_format") == "NHWC"
        attrs["kernel_size"] = shape[1:3] if nhwc else shape[2:4]
        attrs["stride"], attrs["padding"] = 1, 0
        notes.append("global pooling: kernel = the input's spatial size")
    return [(f"pool2d_{pool_type}", f"paddle.nn.functional.{pool_type}_pool2d")]


def _expand(inputs, attrs, notes, apis):
    """The legacy ExpandConfig prepends x's batch dimension to a target shape one dimension short."""
    x, shape = (inputs.get("x") or {}).get("shape"), attrs.get("shape")
    if x and isinstance(shape, list) and len(x) == len(shape) + 1:
        attrs["shape"] = [x[0], *shape]
        notes.append(
            f"shape {shape} -> {attrs['shape']}: x's batch dimension prepended, as the legacy test did"
        )
    return apis


def _gram(inputs, attrs, notes, apis):
    """The legacy test factored x @ x.T ([..., m, n] -> [..., m, m]): the input is that square."""
    x = (inputs.get("x") or {}).get("shape")
    if x and len(x) >= 2 and x[-1] != x[-2]:
        inputs["x"]["shape"] = [*x[:-1], x[-2]]
        notes.append(f"x {x} -> {inputs['x']['shape']}: the shape of x @ x.T, which the legacy test factored")
    return apis


def _set_value(inputs, attrs, notes, apis):
    """The legacy test assigned a slice in place (x[:, 10:500:2] = value, or x[:, 0:20, ::2] = 10000);
    paddle.slice_scatter does it out of place, with a value of the slice's shape."""
    x = inputs["x"]["shape"]
    if attrs.pop("is_tensor_value", False):
        axes, starts, ends, strides, what = [1], [10], [min(500, x[1])], [2], "x[:, 10:500:2] = value"
    else:
        axes, starts, ends, strides, what = (
            [1, 2],
            [0, 0],
            [min(20, x[1]), x[2]],
            [1, 2],
            "x[:, 0:20, ::2] = 10000",
        )
    shape = list(x)
    for axis, start, end, stride in zip(axes, starts, ends, strides, strict=True):
        shape[axis] = len(range(start, end, stride))
    inputs["value"] = {"shape": shape, "dtype": inputs["x"]["dtype"]}
    attrs.update(axes=axes, starts=starts, ends=ends, strides=strides)
    notes.append(f"{what} as paddle.slice_scatter (out of place) with a value of the slice's shape {shape}")
    return apis


ADJUST = {
    "set_value": _set_value,
    "elementwise": _elementwise_shapes,
    "matmul": _matmul_shapes,
    "pool2d": _pool2d,
    "expand": _expand,
    "gram": _gram,
}

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


# ------------------------------------------------------------------------------------------
# Conversion
# ------------------------------------------------------------------------------------------


def _description(source: str, index: int, config: dict[str, Any], notes: list[str], why: str) -> str:
    text = f"imported from legacy {source} config #{index}"
    if "repeat" in config:
        text += f" (legacy repeat hint: {config['repeat']} iterations)"
    return "; ".join([text, *([why] if why else []), *notes])


def _tolerance(config: dict[str, Any]) -> dict[str, float] | None:
    atol = config.get("atol")
    if atol is None:
        return None
    if isinstance(atol, str):
        try:
            atol = float(atol)
        except ValueError:
            raise NotConvertible(f"atol {atol!r}: expected a non-negative number") from None
    if isinstance(atol, bool) or not isinstance(atol, (int, float)) or atol < 0:
        raise NotConvertible(f"atol {atol!r}: expected a non-negative number")
    return {"atol": float(atol)}


def _candidates(op: str, entry: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """[(case-name prefix, [paddle names to try, first admitted wins])]."""
    if "apis" in entry:
        return [(f"{op}_{short}", [api]) for short, api in entry["apis"].items()]
    if "api" in entry:
        return [(op, [entry["api"]])]
    return [(op, [f"{ns}.{op}" for ns in GENERIC_NAMESPACES])]


def _resolve_apis(op, entry, resolve, notes) -> list[tuple[str, str, Any]]:
    """[(prefix, api, function or None)]; NotConvertible(unknown op) when nothing resolves."""
    out, refused = [], []
    for prefix, names in _candidates(op, entry):
        if resolve is None:
            if "api" in entry or "apis" in entry:
                out.append((prefix, names[0], None))
            continue
        for name in names:
            try:
                out.append((prefix, name, resolve(name)))
                break
            except ValueError as e:
                refused.append((name, str(e)))
    if not out:
        if resolve is None:
            raise NotConvertible(
                f"legacy op {op!r} is not in the alias table and paddle is not importable here to resolve it",
                T.UNKNOWN_OP,
            )
        tried = "; ".join(msg for _, msg in refused[:2]) if "api" in entry or "apis" in entry else ""
        raise NotConvertible(
            f"legacy op {op!r}: no admitted paddle function "
            + (f"({tried})" if tried else f"(tried {', '.join(n for n, _ in refused)})"),
            T.UNKNOWN_OP,
        )
    if refused and "apis" in entry:
        notes.append("not on the allowlist: " + ", ".join(n for n, _ in refused))
    return out


def _signature(fn) -> inspect.Signature | None:
    if fn is None:
        return None
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _attr_default(sigs: list[inspect.Signature | None], name: str, fallback: Any) -> Any:
    for sig in sigs:
        if sig is not None and name in sig.parameters:
            default = sig.parameters[name].default
            if default is not inspect.Parameter.empty:
                return default
    return fallback


def _ref_value(ref: Any, inputs, attrs, sigs) -> float | int:
    if isinstance(ref, (int, float)) and not isinstance(ref, bool):
        return ref
    m = _REF.match(str(ref))
    if not m:
        raise NotConvertible(f"alias table: bad value reference {ref!r}", T.MALFORMED)
    offset = int(m["offset"] or 0)
    if m["attr"]:
        value = attrs.get(m["attr"])
        if not isinstance(value, int):
            raise NotConvertible(f"attribute {m['attr']!r} (an integer) is missing", T.PARAM)
        return value + offset
    source = inputs.get(m["input"])
    if source is None:
        raise NotConvertible(f"input {m['input']!r} is missing", T.PARAM)
    div = int(m["div"][2:]) if m["div"] else 1
    if m["dim"] == "count" and "tensors" in source:  # a tensor list's length
        return len(source["tensors"]) // div + offset
    shape, dim = source["shape"], m["dim"]
    if dim == "min":
        return min(shape) // div + offset
    dim = int(dim) if re.match(r"^-?\d+$", dim) else attrs.get(dim, _attr_default(sigs, dim, 0))
    if not isinstance(dim, int) or isinstance(dim, bool):
        dim = 0  # an axis left at None (gather, index_select) is the first one
    dim = int(dim)
    if not -len(shape) <= dim < len(shape):
        raise NotConvertible(f"input {m['input']!r} {shape} has no dimension {dim}", T.SHAPE)
    return shape[dim] // div + offset


def _index_generator(api, name, high, low, attrs, sigs) -> dict[str, Any] | None:
    """`index: {of, dim, low, inclusive}` for a range `[low, <input>.<dim>(+1))` of an input the table
    of index inputs wants generated (`benchmark.config.indexed`); None for any other range."""
    from benchmark.config import indexed  # pydantic and numpy: when converting, not at --help time

    rule = indexed.rules_of(str(api or "")).get(name, {})
    m = _REF.match(str(high))
    if "index" not in rule or not m or not m["input"] or m["div"] or m["offset"] not in (None, "+1"):
        return None
    if not isinstance(low, int) or isinstance(low, bool) or low < 0:
        return None
    dim: Any = m["dim"]
    if re.match(r"^-?\d+$", dim):
        dim = int(dim)
    elif dim not in ("min", "count"):
        dim = attrs.get(dim, _attr_default(sigs, dim, 0))
        dim = dim if isinstance(dim, int) and not isinstance(dim, bool) else 0
    out: dict[str, Any] = {"of": m["input"], "dim": dim}
    if low:
        out["low"] = low
    if m["offset"]:
        out["inclusive"] = True
    return out


def _rename(entry, inputs, attrs) -> None:
    for old, new in (entry.get("rename") or {}).items():
        for group in (inputs, attrs):
            if old in group:
                group[new] = group.pop(old)


def _apply_table(entry, inputs, attrs, notes, sigs, apis=()) -> None:
    """drop, set, shape_attrs, extra_inputs, ranges (in that order; after renames and shape rules)."""
    for name, why in {**T.GLOBAL_DROP, **(entry.get("drop") or {})}.items():
        for group in (inputs, attrs):
            if name in group:
                group.pop(name)
                notes.append(f"{name} dropped: {why}")
    for name, value in (entry.get("drop_default") or {}).items():
        if name in attrs:
            if attrs[name] != value:
                raise NotConvertible(
                    f"{name}={attrs[name]!r}: today's API has no such parameter (only {value!r} maps)",
                    T.PARAM,
                )
            attrs.pop(name)
    attrs.update(entry.get("set") or {})
    for name, (source, start) in (entry.get("shape_attrs") or {}).items():
        if source not in inputs:
            raise NotConvertible(f"input {source!r} is missing", T.PARAM)
        attrs[name] = inputs[source]["shape"][start:]
    extra_inputs = dict(entry.get("extra_inputs") or {})
    for flag, flagged in (entry.get("flag_inputs") or {}).items():
        if attrs.pop(flag, False) is True:
            extra_inputs.update(flagged)
            notes.append(f"{flag}=True: the inputs it stands for ({', '.join(flagged)}) are passed")
    for name, spec in extra_inputs.items():
        shape = [int(_ref_value(d, inputs, attrs, sigs)) for d in spec["shape"]]
        dtype = spec.get("dtype") or (next(iter(inputs.values()))["dtype"] if inputs else "float32")
        extra = {"shape": shape, "dtype": dtype}
        for key in ("low", "high"):
            if key in spec:
                extra[key] = spec[key]
        inputs[name] = extra
    for name, spec in (entry.get("ranges") or {}).items():
        if name not in inputs:
            continue
        low = _ref_value(spec["low"], inputs, attrs, sigs)
        high = _ref_value(spec["high"], inputs, attrs, sigs)
        if inputs[name]["dtype"] == "bool":
            continue
        if not high > low:
            raise NotConvertible(f"input {name!r}: empty value range [{low}, {high})", T.SHAPE)
        inputs[name]["low"], inputs[name]["high"] = low, high
        generator = next(
            (g for api in apis if (g := _index_generator(api, name, spec["high"], low, attrs, sigs))), None
        )
        if generator:  # an index-carrying input (configs/index_inputs.yaml): the same range, generated
            del inputs[name]["low"], inputs[name]["high"]
            inputs[name]["index"] = generator
    for name, values in (entry.get("values") or {}).items():
        if name not in inputs:
            raise NotConvertible(f"input {name!r} is missing", T.PARAM)
        inputs[name]["values"] = values


def _bind(api: str, sig: inspect.Signature | None, inputs, attrs, notes) -> None:
    """Checks the function takes these inputs and attrs. A function that takes its tensors as
    *varargs (paddle.einsum's *operands) gets the inputs, in the config's order, as one tensor list
    of that name (the runner unpacks it)."""
    if sig is None:
        return
    variadic = [p.name for p in sig.parameters.values() if p.kind is inspect.Parameter.VAR_POSITIONAL]
    if variadic and inputs and not set(inputs) & set(sig.parameters):
        names = list(inputs)
        parts = [inputs.pop(n) for n in names]
        inputs[variadic[0]] = {"tensors": parts}
        notes.append(f"inputs {', '.join(names)} passed in that order as *{variadic[0]}")
        return
    try:
        sig.bind(**dict.fromkeys(inputs), **attrs)
    except TypeError as e:
        params = ", ".join(p for p in sig.parameters if p != "name")
        raise NotConvertible(f"{api}({params}): {e}", T.PARAM) from None


def _reference(entry, api, attrs) -> str | None:
    name = (entry.get("references") or {}).get(api)
    if not name or not set(attrs) <= T.REFERENCE_ATTRS:
        return None

    return name if allowlist.check("reference", name) is None else None


def op_cases(
    config, source, index, label, batch_size, unknown_dim, backward, resolve
) -> tuple[list[dict], list[str]]:
    op = config["op"]
    entry = T.OPS.get(op, {})
    if "skip" in entry:
        reason, message = entry["skip"]
        raise NotConvertible(f"legacy op {op!r}: {message}", reason)
    notes: list[str] = []
    inputs, attrs = split_params(config.get("param_info"), batch_size, unknown_dim, notes)
    if "layer" in entry:
        return [_layer_case(entry, inputs, attrs, notes, config, source, index, label, backward)], notes
    if "program" in entry:
        return [_program_case(entry, inputs, config, source, index, label, notes)], notes
    apis = _resolve_apis(op, entry, resolve, notes)
    sigs = [_signature(fn) for _, _, fn in apis]
    _rename(entry, inputs, attrs)
    if entry.get("adjust"):
        adjusted = ADJUST[entry["adjust"]](inputs, attrs, notes, [(p, a) for p, a, _ in apis])
        if [(p, a) for p, a, _ in apis] != adjusted:
            apis = []
            for prefix, api in adjusted:
                try:
                    apis.append((prefix, api, resolve(api) if resolve else None))
                except ValueError as e:
                    raise NotConvertible(f"legacy op {op!r}: {e}", T.UNKNOWN_OP) from None
            sigs = [_signature(fn) for _, _, fn in apis]
    _apply_table(entry, inputs, attrs, notes, sigs, [api for _, api, _ in apis])
    unset = sorted(n for n, v in attrs.items() if v is None)
    for name in unset:
        attrs.pop(name)
    if unset:
        notes.append(f"{', '.join(unset)} None in the legacy config: the function's default")
    for (_, api, _), sig in zip(apis, sigs, strict=True):
        _bind(api, sig, inputs, attrs, notes)
    dtypes = sorted({leaf["dtype"] for spec in inputs.values() for leaf in spec.get("tensors", [spec])})
    places = list(entry.get("places") or ["cpu", "gpu"])
    if "float16" in dtypes and places != ["gpu"]:
        places = ["gpu"]
        notes.append("float16: GPU only (the legacy harness disabled float16 on CPU)")
    tolerance = _tolerance(config)
    cases = []
    for prefix, api, _ in apis:
        case: dict[str, Any] = {
            "name": f"{prefix}_legacy_{label}",
            "kind": "op",
            "op": api,
            "description": _description(source, index, config, notes, entry.get("note", "")),
            "inputs": {n: dict(s) for n, s in inputs.items()},
            "places": places,
            "dtypes": dtypes if len(dtypes) == 1 else ["float32"],
            "backward": [False, True] if backward else False,
            "tags": ["imported"],
        }
        if len(dtypes) == 1:  # dtype: $dtype
            case["inputs"] = {n: _without_dtype(s) for n, s in inputs.items()}
        if not inputs:
            case["dtypes"] = ["float32"]
            case["backward"] = False
        if attrs:
            case["attrs"] = dict(attrs)
        reference = _reference(entry, api, attrs)
        if reference:
            case["reference"] = reference
        if tolerance:
            case["tolerance"] = dict(tolerance)
        cases.append(case)
    return cases, notes


def _program_case(entry, inputs, config, source, index, label, notes) -> dict[str, Any]:
    """A legacy test that built a static program (control flow): the entry's steps over the
    config's inputs, in static mode as the legacy harness ran it."""
    program = entry["program"]
    missing = [n for n in program["feed"] if n not in inputs]
    if missing:
        raise NotConvertible(f"input {missing[0]!r} is missing", T.PARAM)
    return {
        "name": f"{config['op']}_legacy_{label}",
        "kind": "program",
        "description": _description(source, index, config, notes, entry.get("note", "")),
        "feed": {n: dict(inputs[n]) for n in program["feed"]},
        "ops": [dict(op) for op in program["ops"]],
        "fetch": list(program["fetch"]),
        "places": list(entry.get("places") or ["cpu", "gpu"]),
        "modes": ["static"],
        "tags": ["imported"],
    }


def _layer_case(entry, inputs, attrs, notes, config, source, index, label, backward) -> dict[str, Any]:
    """A legacy op that built a layer (it created its own weights): a `kind: layer` case of the
    entry's class. `args` maps each constructor argument to ``attr:<legacy attribute>`` or an input's
    dimension (``x.1``); the legacy attributes left over go to the layer's forward."""
    _rename(entry, inputs, attrs)
    for name, why in {**T.GLOBAL_DROP, **(entry.get("drop") or {})}.items():
        if name in attrs:
            attrs.pop(name)
            notes.append(f"{name} dropped: {why}")
    for name, value in (entry.get("drop_default") or {}).items():
        if name in attrs and attrs.pop(name) != value:
            raise NotConvertible(f"{name}: today's layer has no such argument (only {value!r} maps)", T.PARAM)
    args: dict[str, Any] = {}
    for arg, ref in entry["args"].items():
        if isinstance(ref, str) and ref.startswith("attr:"):
            value = attrs.pop(ref[5:], None)
            if value is not None:
                args[arg] = value
        else:
            args[arg] = int(_ref_value(ref, inputs, attrs, []))
    unset = sorted(n for n, v in attrs.items() if v is None)
    for name in unset:
        attrs.pop(name)
    dtypes = sorted({spec["dtype"] for spec in inputs.values()})
    places = list(entry.get("places") or ["cpu", "gpu"])
    if "float16" in dtypes and places != ["gpu"]:
        places = ["gpu"]
        notes.append("float16: GPU only (the legacy harness disabled float16 on CPU)")
    case: dict[str, Any] = {
        "name": f"{config['op']}_legacy_{label}",
        "kind": "layer",
        "layer": entry["layer"],
        "description": _description(source, index, config, notes, entry.get("note", "")),
        "args": args,
        "inputs": {n: _without_dtype(s) for n, s in inputs.items()} if len(dtypes) == 1 else inputs,
        "places": places,
        "dtypes": dtypes if len(dtypes) == 1 else ["float32"],
        "backward": [False, True] if backward else False,
        "tags": ["imported"],
    }
    if attrs:
        case["attrs"] = dict(attrs)
    return case


def _without_dtype(spec: dict[str, Any]) -> dict[str, Any]:
    """An input without its dtype (the case's $dtype), a tensor list's tensors too."""
    if "tensors" in spec:
        return {**spec, "tensors": [{k: v for k, v in s.items() if k != "dtype"} for s in spec["tensors"]]}
    return {k: v for k, v in spec.items() if k != "dtype"}


def lstm_case(config, source, index, label, batch_size, unknown_dim) -> tuple[list[dict], list[str]]:
    params = config.get("param_info") or {}
    unknown = set(params) - LSTM_PARAMS
    if unknown:
        raise NotConvertible(f"lstm: unknown parameter(s) {sorted(unknown)}", T.MODEL)
    inputs, attrs = split_params(params, batch_size, unknown_dim)
    if "inputs" not in inputs:
        raise NotConvertible(
            "lstm: no 'inputs' variable to take batch, sequence and input sizes from", T.MODEL
        )
    shape = inputs["inputs"]["shape"]
    if len(shape) != 3 or inputs["inputs"]["dtype"] != "float32":
        raise NotConvertible(
            f"lstm: inputs must be float32 [batch, seq_len, input_size], got {shape}", T.MODEL
        )
    batch, seq_len, input_size = shape
    hidden, layers = attrs.get("hidden_size"), attrs.get("num_layers", 1)
    direction = attrs.get("direction", "forward")
    if direction != "forward":
        raise NotConvertible(
            f"lstm: direction {direction!r} (the lstm model builder is unidirectional)", T.MODEL
        )
    if not isinstance(hidden, int) or not isinstance(layers, int):
        raise NotConvertible("lstm: hidden_size and num_layers must be integers", T.MODEL)
    if attrs.get("sequence_length", seq_len) != seq_len:
        raise NotConvertible(
            f"lstm: sequence_length {attrs['sequence_length']} != inputs' dimension 1 ({seq_len})", T.MODEL
        )
    notes = [
        "the model starts from zero initial states (the legacy random initial states are not an argument)",
        "timed as the lstm model (LSTM + linear head + cross-entropy), not the bare LSTM layer",
    ]
    states = inputs.get("inital_states") or inputs.get("initial_states")
    if states and states["shape"] != [layers, batch, hidden]:
        raise NotConvertible(
            f"lstm: initial states {states['shape']} != [num_layers, batch, hidden] {[layers, batch, hidden]}",
            T.MODEL,
        )
    case = {
        "name": f"lstm_legacy_{label}",
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
