"""Reference implementations for op cases: numpy or torch functions named in a case's ``reference``.

`resolve_reference` admits only the names on the operator allowlist's `reference` list (numeric
numpy, scipy.special and torch functions; configs are data, see `benchmark.sandbox.allowlist`).

`reference_outputs` computes, from the case's own inputs:

* the forward output, in float64 (bfloat16 inputs are first rounded to bfloat16, as the framework
  sees them), with the case's attrs mapped to the reference's keyword names through `NUMPY_ATTRS` /
  `TORCH_ATTRS` (``axis``/``keepdim`` -> numpy ``axis``/``keepdims``, torch ``dim``/``keepdim``);
  ``transpose_x``/``transpose_y`` (matmul) transpose the inputs' last two axes instead;
* for backward cases, the gradients of ``sum(out * dout)`` with ``dout = ones`` (what the paddle
  runner computes): by torch autograd for torch references, analytically for the numpy functions in
  `NUMPY_GRADIENTS`; for any other numpy function the gradient check is reported as not available
  (a note, not a failure).

`check_accuracy(case, prepared)` runs the whole check (framework outputs with TF32 disabled, the
reference, dtype-aware tolerances, comparison) and returns a plain dict for `CaseResult.accuracy`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from benchmark import kinds
from benchmark.datamodel.case import Case
from benchmark.runners import accuracy
from benchmark.runners.base import RunnerUnavailable, resolve_allowed

# paddle attribute -> the reference's keyword. None: handled by transforming the inputs.
NUMPY_ATTRS: dict[str, str | None] = {
    "axis": "axis",
    "keepdim": "keepdims",
    "transpose_x": None,
    "transpose_y": None,
}
TORCH_ATTRS: dict[str, str | None] = {
    "axis": "dim",
    "keepdim": "keepdim",
    "transpose_x": None,
    "transpose_y": None,
}
# The loosest dtype among a case's inputs decides its tolerance.
_LOOSENESS = ["bfloat16", "float16", "float32", "float64"]


# ------------------------------------------------------------------------------------------
# Resolution
# ------------------------------------------------------------------------------------------


def resolve_reference(name: str) -> Callable[..., Any]:
    """The reference function `name` names (``numpy.abs``, ``scipy.special.erf``, ``torch.abs``), or
    ValueError saying why: only names on the operator allowlist's `reference` list resolve.

    Raises RunnerUnavailable (not ValueError) when the name is admitted but its package (torch) is
    not installed here.
    """
    return resolve_allowed(
        "reference", name, missing=lambda what: RunnerUnavailable(f"reference {name!r}: {what}")
    )


# ------------------------------------------------------------------------------------------
# Inputs and attributes
# ------------------------------------------------------------------------------------------


def round_to_bfloat16(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), returned as float32."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32).reshape(np.shape(a))


def reference_inputs(case: Case, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The case's inputs as the reference gets them: floating inputs in float64, bfloat16 rounded first."""
    out = {}
    for name, arr in arrays.items():
        dtype = case.spec.tensors[name].dtype
        if dtype == "bfloat16":
            arr = round_to_bfloat16(arr)
        out[name] = arr.astype(np.float64) if dtype.startswith(("float", "bfloat")) else np.asarray(arr)
    return out


def map_attrs(attrs: dict[str, Any], package: str) -> tuple[dict[str, Any], tuple[bool, bool]]:
    """paddle attrs -> (reference keyword arguments, (transpose_x, transpose_y)); ValueError if unmapped."""
    table = NUMPY_ATTRS if package == "numpy" else TORCH_ATTRS
    kwargs: dict[str, Any] = {}
    for key, value in attrs.items():
        if key not in table:
            raise ValueError(
                f"attribute {key!r} has no {package} equivalent in the reference mapping "
                f"(known: {', '.join(sorted(table))})"
            )
        target = table[key]
        if target is None:
            continue
        if key == "axis":
            if value is None:
                if package == "torch":
                    continue
            elif isinstance(value, list):
                value = tuple(value)
        kwargs[target] = value
    return kwargs, (bool(attrs.get("transpose_x", False)), bool(attrs.get("transpose_y", False)))


def _swap_last(a):
    return a.swapaxes(-1, -2) if hasattr(a, "swapaxes") else a.transpose(-1, -2)


def _apply_transposes(values: list[Any], transposes: tuple[bool, bool]) -> list[Any]:
    out = list(values)
    for i, flag in enumerate(transposes[: len(out)]):
        if flag:
            out[i] = _swap_last(out[i])
    return out


# ------------------------------------------------------------------------------------------
# Analytic gradients for numpy references (dout = ones; returns one gradient per input)
# ------------------------------------------------------------------------------------------


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum `grad` over the dimensions that broadcasting added or stretched to reach it from `shape`."""
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, d in enumerate(shape) if d == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(axis=stretched, keepdims=True)
    return grad.reshape(shape)


def _reduce_grad(x: np.ndarray, dout: np.ndarray, kw: dict[str, Any]) -> np.ndarray:
    axis = kw.get("axis")
    if axis is not None and not kw.get("keepdims", False):
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        dout = np.expand_dims(dout, tuple(a % x.ndim for a in axes))
    return np.broadcast_to(dout, x.shape).copy()


def _mean_grad(x: np.ndarray, dout: np.ndarray, kw: dict[str, Any]) -> np.ndarray:
    axis = kw.get("axis")
    axes = range(x.ndim) if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    count = int(np.prod([x.shape[a] for a in axes])) if x.ndim else 1
    return _reduce_grad(x, dout, kw) / count


def _matmul_grad(x, y, dout, transposes):
    if x.ndim < 2 or y.ndim < 2:
        raise NotImplementedError("matmul gradient reference needs operands of rank >= 2")
    a, b = _apply_transposes([x, y], transposes)
    da = unbroadcast(dout @ _swap_last(b), a.shape)
    db = unbroadcast(_swap_last(a) @ dout, b.shape)
    return _apply_transposes([da, db], transposes)


NUMPY_GRADIENTS: dict[str, Callable[..., list[np.ndarray]]] = {
    "numpy.abs": lambda xs, out, d, kw, t: [np.sign(xs[0]) * d],
    "numpy.absolute": lambda xs, out, d, kw, t: [np.sign(xs[0]) * d],
    "numpy.negative": lambda xs, out, d, kw, t: [-d],
    "numpy.exp": lambda xs, out, d, kw, t: [out * d],
    "numpy.tanh": lambda xs, out, d, kw, t: [(1.0 - out * out) * d],
    "numpy.add": lambda xs, out, d, kw, t: [unbroadcast(d, xs[0].shape), unbroadcast(d, xs[1].shape)],
    "numpy.subtract": lambda xs, out, d, kw, t: [unbroadcast(d, xs[0].shape), unbroadcast(-d, xs[1].shape)],
    "numpy.multiply": lambda xs, out, d, kw, t: [
        unbroadcast(d * xs[1], xs[0].shape),
        unbroadcast(d * xs[0], xs[1].shape),
    ],
    "numpy.sum": lambda xs, out, d, kw, t: [_reduce_grad(xs[0], d, kw)],
    "numpy.mean": lambda xs, out, d, kw, t: [_mean_grad(xs[0], d, kw)],
    "numpy.matmul": lambda xs, out, d, kw, t: _matmul_grad(xs[0], xs[1], d, t),
}


# ------------------------------------------------------------------------------------------
# TF32
# ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def tf32_disabled() -> Iterator[None]:
    """Disable TF32 matmul/conv for paddle (cuBLAS switch, cuDNN flag) and torch (if imported); restore after.

    On Ampere and later GPUs both frameworks may run float32 matmuls in TF32 (10-bit mantissa),
    which would fail a float32 accuracy check for reasons unrelated to the kernel under test. A
    no-op on a CPU-only build.
    """
    restore: list[Callable[[], None]] = []
    try:
        _disable_paddle_tf32(restore)
        _disable_torch_tf32(restore)
        yield
    finally:
        for undo in reversed(restore):
            undo()


def _disable_paddle_tf32(restore: list[Callable[[], None]]) -> None:
    from benchmark.runners import paddle_common as pc

    pd = pc.paddle()
    if not pd.device.is_compiled_with_cuda():
        return
    core = pd.base.core
    if hasattr(core, "get_cublas_switch"):
        previous = bool(core.get_cublas_switch())
        core.set_cublas_switch(False)
        restore.append(lambda: core.set_cublas_switch(previous))
    with contextlib.suppress(Exception):  # the flag is absent from some builds
        old = pd.get_flags(["FLAGS_allow_tf32_cudnn"])["FLAGS_allow_tf32_cudnn"]
        pd.set_flags({"FLAGS_allow_tf32_cudnn": False})
        restore.append(lambda: pd.set_flags({"FLAGS_allow_tf32_cudnn": old}))


def _disable_torch_tf32(restore: list[Callable[[], None]]) -> None:
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    old_matmul, old_cudnn = matmul.allow_tf32, cudnn.allow_tf32
    matmul.allow_tf32 = False
    cudnn.allow_tf32 = False

    def undo() -> None:
        matmul.allow_tf32 = old_matmul
        cudnn.allow_tf32 = old_cudnn

    restore.append(undo)


# ------------------------------------------------------------------------------------------
# Reference outputs
# ------------------------------------------------------------------------------------------


def _grad_names(case: Case) -> list[str]:
    """The inputs a backward case differentiates with respect to (none for a forward case)."""
    if not case.spec.backward:
        return []
    return [n for n, t in case.spec.tensors.items() if t.wants_grad()]


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, (list, tuple)) else out


def _numpy_reference(name, fn, case, inputs, notes) -> dict[str, np.ndarray]:
    kwargs, transposes = map_attrs(dict(case.spec.attrs), "numpy")
    if case.spec.lists:  # a tensor-list input reaches the reference as one list, in its place
        out = np.asarray(_first(fn(*case.spec.grouped(dict(inputs)).values(), **kwargs)), dtype=np.float64)
        if _grad_names(case):
            notes.append(f"gradient reference not available for {name} with a tensor-list input")
        return {"out": out}
    names = list(inputs)
    values = _apply_transposes([inputs[n] for n in names], transposes)
    out = np.asarray(_first(fn(*values, **kwargs)), dtype=np.float64)
    result = {"out": out}
    grad_names = _grad_names(case)
    if not grad_names:
        return result
    grad_fn = NUMPY_GRADIENTS.get(name)
    if grad_fn is None:
        notes.append(
            f"gradient reference not available for {name} (no analytic gradient in the table; "
            "name a torch reference to check gradients)"
        )
        return result
    try:
        grads = grad_fn([inputs[n] for n in names], out, np.ones_like(out), kwargs, transposes)
    except NotImplementedError as e:
        notes.append(f"gradient reference not available for {name}: {e}")
        return result
    for n in grad_names:
        result[f"grad_{n}"] = np.asarray(grads[names.index(n)], dtype=np.float64)
    return result


def _torch_reference(fn, case, inputs) -> dict[str, np.ndarray]:
    import torch

    kwargs, transposes = map_attrs(dict(case.spec.attrs), "torch")
    names = list(inputs)
    grad_names = _grad_names(case)
    tensors = {n: torch.from_numpy(np.ascontiguousarray(a)) for n, a in inputs.items()}
    for n in grad_names:
        tensors[n].requires_grad_(True)
    with torch.enable_grad():
        out = _first(fn(*_apply_transposes([tensors[n] for n in names], transposes), **kwargs))
        result = {"out": out.detach().to(torch.float64).numpy()}
        if grad_names:
            grads = torch.autograd.grad([out], [tensors[n] for n in grad_names], [torch.ones_like(out)])
            for n, g in zip(grad_names, grads, strict=True):
                result[f"grad_{n}"] = g.detach().to(torch.float64).numpy()
    return result


def reference_with_notes(
    case: Case, arrays: dict[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], list[str]]:
    """(reference outputs, notes): like `reference_outputs`, plus what could not be computed and why."""
    name = case.spec.reference
    if not name:
        raise ValueError(f"{case.case_id}: the case names no reference")
    fn = resolve_reference(name)
    inputs = reference_inputs(case, arrays)
    notes: list[str] = []
    if name.startswith("torch.") and case.spec.lists:
        raise ValueError(
            f"{case.case_id}: a torch reference of a tensor-list input is not supported; name a numpy one"
        )
    if name.startswith("torch."):
        with tf32_disabled():
            return _torch_reference(fn, case, inputs), notes
    return _numpy_reference(name, fn, case, inputs, notes), notes


def reference_outputs(case: Case, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Reference ``{"out": ..., "grad_<input>": ...}`` (float64) for an op case, from its inputs `arrays`.

    Gradients appear only for backward cases whose reference can produce them (see the module
    docstring). Raises ValueError for an unusable reference or an attribute without a mapping.
    """
    return reference_with_notes(case, arrays)[0]


def case_dtype(case: Case) -> str:
    """The dtype that decides a case's default tolerance: the loosest floating dtype among its inputs."""
    dtypes = [t.dtype for t in case.spec.tensors.values()]
    floating = [d for d in dtypes if d in _LOOSENESS]
    if floating:
        return min(floating, key=_LOOSENESS.index)
    return dtypes[0] if dtypes else "float32"


def check_accuracy(
    case: Case, prepared, arrays: dict[str, np.ndarray] | None = None
) -> dict[str, Any] | None:
    """The accuracy record of an op case with a ``reference`` (None when there is nothing to check).

    ``status`` is ``passed``, ``failed`` (a mismatch: fails the case's accuracy check and the
    gate), ``error`` (the reference cannot be used: bad name, unmapped attribute) or ``skipped``
    (not checkable here: torch missing, runner without outputs). Never raises for those.
    """
    name = case.spec.reference
    if not kinds.get(case.kind).accuracy or not name:
        return None
    record: dict[str, Any] = {"reference": name, "status": "skipped", "passed": None, "notes": []}
    if prepared.outputs is None:
        record["message"] = "the runner does not expose outputs for this case"
        return record
    if arrays is None:
        from benchmark.runners import paddle_common as pc

        arrays = pc.make_arrays(case.spec.tensors, case.spec.seed)
    try:
        rtol, atol = accuracy.tolerance_for(case_dtype(case), case.spec.tolerance)
        expected, notes = reference_with_notes(case, arrays)
    except RunnerUnavailable as e:
        record["message"] = str(e)
        return record
    except (ValueError, TypeError, RuntimeError) as e:
        record.update(status="error", message=f"reference {name}: {e}")
        return record
    with tf32_disabled():
        actual = prepared.outputs()
        prepared.sync()
    compared = accuracy.compare_outputs(actual, expected, rtol=rtol, atol=atol)
    record.update(compared)
    record["status"] = "passed" if compared["passed"] else "failed"
    record["notes"] = notes
    record["dtype"] = case_dtype(case)
    if notes:
        record["message"] += "; " + "; ".join(notes)
    return record
