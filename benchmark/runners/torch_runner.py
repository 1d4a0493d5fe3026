"""Operator cases on PyTorch: an optional runner, for GPU machines with torch but no paddle-gpu.

It lets the harness's CUDA timing, event and NVML code be checked where only PyTorch is installed,
and is the first step toward comparing Paddle and PyTorch on the same case (same shapes, same inputs
from the same seed: the arrays come from `paddle_common.make_arrays`, which is numpy-only).

The module is named `torch_runner` (not `torch`) so that it can never shadow `import torch`, even when
`benchmark/runners/` itself ends up on sys.path. torch is imported lazily; a missing torch, or a CUDA
place that this torch build or machine lacks, raises `RunnerUnavailable` (the case is skipped).

The case
--------
Either a `benchmark.datamodel.case.Case` (its typed `spec`, the place from `case.place`) or a plain mapping
with the fields of an op case's config plus `place` and `tf32` (validated as a `benchmark.datamodel.case.Spec`):

    op:       "paddle.abs" / "abs" (looked up in OPS, the paddle -> torch table) or "torch.<public name>"
    torch_op: optional explicit torch function ("torch.mul"); attributes are still renamed by OPS
    inputs:   {name: {shape: [...], dtype: "float32", low: -1.0, high: 1.0, requires_grad: null}},
              passed positionally in this order
    attrs:    paddle keyword attributes, renamed for torch (axis -> dim, keep_dim -> keepdim, ...)
    backward: bool; the step is forward + `torch.autograd.grad` with a ones output gradient built once
              (nothing accumulates into `.grad` between iterations)
    place:    "cpu", "gpu", "gpu:N" (also "cuda", "cuda:N")
    seed:     int (default 0)
    tf32:     bool (default False): TF32 for matmul and cuDNN; the previous setting comes back on close()

Device timer protocol
---------------------
`Prepared.device_timer()` returns an object with

    start() -> None        record a start marker on the device's current stream (non-blocking)
    stop() -> None         record an end marker after the queued work (non-blocking)
    elapsed_s() -> float   wait for the end marker, return device seconds between the two

Here it is backed by two `torch.cuda.Event(enable_timing=True)`; `device_timer` is None on CPU.
`peak_memory()` returns `torch.cuda.max_memory_allocated` since prepare() (which resets it).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmark.datamodel.case import Case, Spec, Tensor
from benchmark.runners.base import Prepared, Runner, RunnerUnavailable, resolve_allowed

_PLACE = re.compile(r"^(cpu|gpu|cuda)(?::(\d+))?$")


@dataclass(frozen=True)
class OpSpec:
    """How a paddle op maps to torch: the torch function and the renaming of paddle attributes."""

    target: str
    attrs: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    # Paddle attributes handled by an adapter around the torch function (see _ADAPTERS).
    adapter: str | None = None


_REDUCE = {"axis": "dim", "keepdim": "keepdim", "keep_dim": "keepdim"}
_AXIS_DIM = {"axis": "dim"}

# paddle name (without "paddle.") -> torch. Small and explicit: anything else needs "torch.<name>".
OPS: dict[str, OpSpec] = {
    "abs": OpSpec("torch.abs"),
    "exp": OpSpec("torch.exp"),
    "sqrt": OpSpec("torch.sqrt"),
    "tanh": OpSpec("torch.tanh"),
    "add": OpSpec("torch.add"),
    "subtract": OpSpec("torch.sub"),
    "multiply": OpSpec("torch.mul"),
    "divide": OpSpec("torch.div"),
    "elementwise_add": OpSpec("torch.add"),
    "elementwise_sub": OpSpec("torch.sub"),
    "elementwise_mul": OpSpec("torch.mul"),
    "elementwise_div": OpSpec("torch.div"),
    "sum": OpSpec("torch.sum", _REDUCE),
    "mean": OpSpec("torch.mean", _REDUCE),
    "reduce_sum": OpSpec("torch.sum", {**_REDUCE, "dim": "dim"}),
    "reduce_mean": OpSpec("torch.mean", {**_REDUCE, "dim": "dim"}),
    "matmul": OpSpec("torch.matmul", adapter="matmul"),
    "transpose": OpSpec("torch.permute", {"perm": "dims"}),
    "softmax": OpSpec("torch.softmax", _AXIS_DIM, {"dim": -1}),
    "nn.functional.softmax": OpSpec("torch.softmax", _AXIS_DIM, {"dim": -1}),
    "nn.functional.log_softmax": OpSpec("torch.log_softmax", _AXIS_DIM, {"dim": -1}),
    "nn.functional.relu": OpSpec("torch.nn.functional.relu"),
    "nn.functional.sigmoid": OpSpec("torch.sigmoid"),
    "nn.functional.silu": OpSpec("torch.nn.functional.silu"),
    "nn.functional.tanh": OpSpec("torch.tanh"),
    "nn.functional.gelu": OpSpec("torch.nn.functional.gelu", adapter="gelu"),
}

_TORCH_DTYPES = {
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float64": "float64",
    "int8": "int8",
    "uint8": "uint8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "bool": "bool",
}


def import_torch():
    """The torch module, or RunnerUnavailable saying it is not installed."""
    try:
        return importlib.import_module("torch")
    except ImportError as e:
        raise RunnerUnavailable(f"torch is not installed ({e}); the torch runner is optional") from e


def parse_place(place: str) -> tuple[str, int | None]:
    """("cpu", None) or ("cuda", index) from "cpu", "gpu", "gpu:N", "cuda", "cuda:N"."""
    m = _PLACE.match(str(place).strip().lower())
    if not m:
        raise ValueError(f"place {place!r}: expected cpu, gpu or gpu:N")
    if m.group(1) == "cpu":
        return "cpu", None
    return "cuda", int(m.group(2) or 0)


def torch_device(torch, place: str):
    """The torch.device for `place`; RunnerUnavailable when this build or machine lacks it."""
    kind, index = parse_place(place)
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        raise RunnerUnavailable(f"place {place}: torch {torch.__version__} ({build}) sees no CUDA device")
    count = torch.cuda.device_count()
    if index >= count:
        raise RunnerUnavailable(f"place {place}: only {count} CUDA device(s) visible")
    return torch.device("cuda", index)


def resolve_torch_name(torch, name: str) -> Callable:
    """The torch function `name` names ("torch.nn.functional.relu"); only names on the operator
    allowlist's `torch_op` list resolve (`benchmark.runners.base.resolve_allowed`)."""
    return resolve_allowed(
        "torch_op",
        name,
        noun="a torch function",
        missing=lambda what: RunnerUnavailable(f"torch {torch.__version__}: {name!r}: {what}"),
    )


def _op_spec(op: str, torch_op: str | None) -> tuple[str, OpSpec | None]:
    """(torch function name, table entry or None) for a case's op and optional torch_op."""
    if op.startswith("torch."):
        return torch_op or op, None
    spec = OPS.get(op.removeprefix("paddle."))
    if torch_op:
        return torch_op, spec
    if spec is None:
        raise RunnerUnavailable(f"op {op!r} has no torch equivalent in the table; set torch_op")
    return spec.target, spec


def torch_kwargs(op: str, spec: OpSpec | None, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Paddle attributes renamed for torch (lists become tuples); passed through for torch.* ops."""
    if spec is None:
        return dict(attrs)
    out = dict(spec.defaults)
    for key, value in attrs.items():
        if key not in spec.attrs:
            raise RunnerUnavailable(f"op {op!r}: attribute {key!r} has no torch mapping")
        out[spec.attrs[key]] = tuple(value) if isinstance(value, list) else value
    return out


def _matmul_adapter(fn: Callable, attrs: Mapping[str, Any]) -> tuple[Callable, dict[str, Any]]:
    tx = bool(attrs.get("transpose_x", attrs.get("trans_x", False)))
    ty = bool(attrs.get("transpose_y", attrs.get("trans_y", False)))
    unknown = set(attrs) - {"transpose_x", "transpose_y", "trans_x", "trans_y"}
    if unknown:
        raise RunnerUnavailable(f"matmul: attributes {sorted(unknown)} have no torch mapping")
    if not (tx or ty):
        return fn, {}

    def matmul(x, y):
        return fn(x.mT if tx and x.dim() > 1 else x, y.mT if ty and y.dim() > 1 else y)

    return matmul, {}


def _gelu_adapter(fn: Callable, attrs: Mapping[str, Any]) -> tuple[Callable, dict[str, Any]]:
    unknown = set(attrs) - {"approximate"}
    if unknown:
        raise RunnerUnavailable(f"gelu: attributes {sorted(unknown)} have no torch mapping")
    return fn, {"approximate": "tanh" if attrs.get("approximate") else "none"}


_ADAPTERS = {"matmul": _matmul_adapter, "gelu": _gelu_adapter}


def resolve(torch, op: str, torch_op: str | None, attrs: Mapping[str, Any]) -> tuple[Callable, dict, str]:
    """(callable, keyword arguments, torch name) for one op case."""
    name, spec = _op_spec(op, torch_op)
    if spec is None and attrs and not op.startswith("torch."):
        raise RunnerUnavailable(
            f"op {op!r} is not in the table: its attributes {sorted(attrs)} cannot be mapped"
        )
    fn = resolve_torch_name(torch, name)
    if spec is not None and spec.adapter:
        fn, kwargs = _ADAPTERS[spec.adapter](fn, attrs)
        return fn, kwargs, name
    return fn, torch_kwargs(op, spec, attrs), name


def _fields(case: Case | Mapping[str, Any]) -> tuple[Spec, str, bool | None]:
    """(typed config, place, tf32 or None for the runner's default) of a Case or a plain mapping."""
    if isinstance(case, Mapping):
        fields = {k: v for k, v in case.items() if k not in ("place", "tf32")}
        spec = Spec.model_validate({"name": "torch_case", "kind": "op", **fields})
        tf32 = case.get("tf32")
        return spec, str(case.get("place", "cpu")), None if tf32 is None else bool(tf32)
    return case.spec, str(case.place), None


def _make_arrays(inputs: Mapping[str, Tensor], seed: int) -> dict[str, np.ndarray]:
    """Inputs from the seed, drawn exactly as the paddle runners draw them (same case, same arrays)."""
    from benchmark.runners.paddle_common import make_arrays  # numpy only; paddle stays unimported

    for name, spec in inputs.items():
        if spec.dtype not in _TORCH_DTYPES:
            raise ValueError(f"input {name!r}: unknown dtype {spec.dtype!r}")
    return make_arrays(inputs, seed)


def _to_tensor(torch, array: np.ndarray, dtype: str, device, requires_grad: bool):
    t = torch.from_numpy(np.ascontiguousarray(array)).to(
        device=device, dtype=getattr(torch, _TORCH_DTYPES[dtype])
    )
    return t.requires_grad_(requires_grad)


def to_numpy(t) -> np.ndarray:
    t = t.detach()
    if str(t.dtype) == "torch.bfloat16":
        t = t.float()
    return t.cpu().numpy()


class CudaEventTimer:
    """The device timer protocol on torch.cuda.Event, recorded on the device's current stream."""

    def __init__(self, torch, device) -> None:
        self._stream = torch.cuda.current_stream(device)
        self._start = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)

    def start(self) -> None:
        self._start.record(self._stream)

    def stop(self) -> None:
        self._end.record(self._stream)

    def elapsed_s(self) -> float:
        self._end.synchronize()
        return self._start.elapsed_time(self._end) / 1000.0


def set_tf32(torch, enabled: bool) -> Callable[[], None]:
    """Set TF32 for matmul and cuDNN; returns a function that restores the previous settings."""
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    before = (matmul.allow_tf32, cudnn.allow_tf32)
    matmul.allow_tf32 = cudnn.allow_tf32 = bool(enabled)

    def restore() -> None:
        matmul.allow_tf32, cudnn.allow_tf32 = before

    return restore


class TorchRunner(Runner):
    """prepare(case) -> Prepared for an op case on torch (see the module docstring)."""

    name = "torch"

    def __init__(self, tf32: bool = False) -> None:
        self.tf32 = tf32

    def prepare(self, case: Case | Mapping[str, Any]) -> Prepared:
        torch = import_torch()
        spec, place, tf32 = _fields(case)
        tf32 = self.tf32 if tf32 is None else tf32
        if spec.op is None or spec.inputs is None:
            raise ValueError(f"not an op case (kind {spec.kind!r}): the torch runner runs op cases")
        device = torch_device(torch, place)
        cuda = device.type == "cuda"
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
        fn, kwargs, name = resolve(torch, spec.op, spec.torch_op, dict(spec.attrs))
        restore_tf32 = set_tf32(torch, tf32)
        try:
            step, outputs = _build(torch, fn, kwargs, spec.inputs, spec, device)
        except Exception:
            restore_tf32()
            raise
        sync = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)
        sync()
        return Prepared(
            step=step,
            sync=sync,
            outputs=outputs,
            peak_memory=(lambda: int(torch.cuda.max_memory_allocated(device))) if cuda else None,
            device_timer=(lambda: CudaEventTimer(torch, device)) if cuda else None,
            close=restore_tf32,
            info=_info(torch, device, name, spec.op, tf32),
        )


def _build(torch, fn, kwargs, inputs: dict[str, Tensor], spec: Spec, device):
    """(step, outputs) with inputs built once on the device."""
    arrays = _make_arrays(inputs, spec.seed)
    backward = spec.backward
    grad_names = [n for n in inputs if backward and inputs[n].wants_grad()]
    if backward and not grad_names:
        raise RunnerUnavailable("backward requested but no input is floating point")
    tensors = [_to_tensor(torch, arrays[n], inputs[n].dtype, device, n in grad_names) for n in inputs]
    grad_ts = [t for n, t in zip(inputs, tensors, strict=True) if n in grad_names]

    def forward():
        return fn(*tensors, **kwargs)

    dout = torch.ones_like(forward()) if backward else None

    def step():
        out = forward()
        return torch.autograd.grad(out, grad_ts, dout) if backward else out

    def outputs() -> dict[str, np.ndarray]:
        out = forward()
        result = {"out": to_numpy(out)}
        if backward:
            grads = torch.autograd.grad(out, grad_ts, torch.ones_like(out))
            result.update({f"grad_{n}": to_numpy(g) for n, g in zip(grad_names, grads, strict=True)})
        return result

    # Forward-only: no input requires grad, so autograd records nothing; no no_grad() wrapper needed.
    return (step if backward else forward), outputs


def _info(torch, device, name: str, op: str, tf32: bool) -> dict[str, Any]:
    info = {
        "framework": "torch",
        "torch_version": torch.__version__,
        "torch_cuda_version": torch.version.cuda,
        "op": op,
        "torch_op": name,
        "tf32": tf32,
        "num_threads": torch.get_num_threads(),
        "device": str(device),
    }
    if device.type == "cuda":
        info["device_name"] = torch.cuda.get_device_name(device)
    return info


RUNNER = TorchRunner()


def prepare(case: Case | Mapping[str, Any]) -> Prepared:
    """Module-level entry point, like the paddle runner modules."""
    return RUNNER.prepare(case)
