"""Operator cases on paddle: one public API call, in dynamic, static or to_static mode.

A backward case times forward + backward (`paddle.grad` with a fixed output gradient, so no
gradient accumulates between iterations); a forward case times the call alone.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from benchmark.model import Case, Spec, Tensor
from benchmark.runners import paddle_common as pc
from benchmark.runners.base import Prepared, RunnerUnavailable, resolve_allowed


def resolve_op(name: str):
    """The paddle operator `name` names, or ValueError saying why: only names on the operator
    allowlist resolve (`benchmark.runners.base.resolve_allowed`)."""
    pc.paddle()  # import paddle with the harness's settings before the allowlist imports a namespace
    return resolve_allowed("op", name, noun="an operator function")


def resolver(name: str) -> str | None:
    """`config.load_*` resolver hook: None when `name` resolves, else the reason."""
    try:
        resolve_op(name)
    except ValueError as e:
        return str(e)
    return None


def binder(name: str, inputs: list[str] | dict[str, str], attrs: dict[str, Any]) -> str | None:
    """`config.load_*` binder hook: None when the op accepts these inputs (keyword names, or a list
    of positional inputs) and attrs, else the reason (e.g. a misspelt attribute)."""
    try:
        fn = resolve_op(name)
    except ValueError as e:
        return str(e)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None  # no introspectable signature (a builtin): the call itself will tell
    args = list(inputs) if isinstance(inputs, list) else []
    kwargs = {**({k: None for k in inputs} if isinstance(inputs, dict) else {}), **attrs}
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        params = ", ".join(p for p in sig.parameters if p != "name")
        return f"{name}({params}) does not accept these inputs and attrs: {e}"
    return None


def prepare(case: Case) -> Prepared:
    spec = case.spec
    place, mode = case.place, case.mode
    if spec.op is None or spec.inputs is None:
        raise ValueError(f"{case.case_id}: not an op case (kind {spec.kind!r})")
    pc.set_place(place)
    fn = resolve_op(spec.op)
    attrs = dict(spec.attrs)
    inputs = spec.inputs
    arrays = pc.make_arrays(inputs, spec.seed)
    grad_names = [n for n, t in inputs.items() if t.wants_grad()] if spec.backward else []
    if spec.backward and not grad_names:
        raise RunnerUnavailable(f"{case.case_id}: backward requested but no input is floating point")
    info = {"op": spec.op, "mode": mode}
    if mode == "static":
        step, outputs = _static(fn, spec, arrays, attrs, grad_names, place)
    else:
        step, outputs = _eager(fn, spec, arrays, attrs, grad_names, place, jit=(mode == "to_static"))
    return Prepared(
        step=step,
        sync=pc.synchronizer(place),
        outputs=outputs,
        peak_memory=pc.peak_memory_tracker(place),
        device_timer=pc.device_timer_factory(place),
        close=pc.leave_static if mode == "static" else (lambda: None),
        info=info,
    )


def _eager(fn, spec: Spec, arrays, attrs, grad_names, place, *, jit: bool):
    pd = pc.paddle()
    inputs: dict[str, Tensor] = spec.inputs or {}
    names = list(arrays)
    tensors = [pc.to_tensor(arrays[n], inputs[n].dtype, place, requires_grad=n in grad_names) for n in names]

    # One list argument: to_static does not accept *args signatures. A tensor-list input's tensors
    # reach the op as one list (Spec.grouped).
    def call(ts):
        return pc.first_tensor(fn(**spec.grouped(dict(zip(names, ts, strict=True))), **attrs))

    target = pd.jit.to_static(call) if jit else call
    grad_ts = [t for n, t in zip(names, tensors, strict=True) if n in grad_names]
    if grad_names:
        probe = target(tensors)
        dout = pd.ones_like(probe)

        def step():
            out = target(tensors)
            return pd.grad([out], grad_ts, [dout])
    else:

        def step():
            return target(tensors)

    def outputs() -> dict[str, np.ndarray]:
        out = target(tensors)
        result = {"out": pc.to_numpy(out)}
        if grad_names:
            grads = pd.grad([out], grad_ts, [pd.ones_like(out)])
            for n, g in zip(grad_names, grads, strict=True):
                result[f"grad_{n}"] = pc.to_numpy(g)
        return result

    return step, outputs


def _static(fn, spec: Spec, arrays, attrs, grad_names, place):
    pd = pc.paddle()
    inputs: dict[str, Tensor] = spec.inputs or {}
    main, startup = pd.static.Program(), pd.static.Program()
    # The executor runs PIR programs only in static mode: it stays on until the case is closed.
    pd.enable_static()
    try:
        with pd.static.program_guard(main, startup):
            vars_ = {}
            for n, arr in arrays.items():
                v = pd.static.data(n, list(arr.shape), inputs[n].dtype)
                v.stop_gradient = n not in grad_names
                vars_[n] = v
            out = pc.first_tensor(fn(**spec.grouped(vars_), **attrs))
            fetch = [out]
            if grad_names:
                fetch += list(pd.static.gradients([out], [vars_[n] for n in grad_names]))
        exe = pd.static.Executor(pc.static_place(place))
        exe.run(startup)
    except Exception:
        pd.disable_static()
        raise
    feed = dict(arrays)

    def step():
        return exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)

    def outputs() -> dict[str, np.ndarray]:
        res = exe.run(main, feed=feed, fetch_list=fetch)
        out = {"out": np.asarray(res[0])}
        for n, g in zip(grad_names, res[1:], strict=True):
            out[f"grad_{n}"] = np.asarray(g)
        return out

    return step, outputs
