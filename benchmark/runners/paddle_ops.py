"""Operator and layer cases on paddle: one public API call, or one layer's forward, in dynamic,
static or to_static mode.

A backward case times forward + backward (`paddle.grad` with a fixed output gradient, so no
gradient accumulates between iterations); a forward case times the call alone. A layer (a class on
the allowlist's `layer` section) is built once from its case's `args`, outside the timed region;
its backward gives the gradients of its parameters as well as its inputs'.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from benchmark.config.attr_types import mistyped
from benchmark.datamodel.case import Case, Spec, Tensor
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
    # an input stands for a tensor or a list of them (one element: a *varargs list unpacks)
    kwargs = {**({k: [None] for k in inputs} if isinstance(inputs, dict) else {}), **attrs}
    more, kwargs = as_call(fn, kwargs)
    try:
        sig.bind(*args, *more, **kwargs)
    except TypeError as e:
        params = ", ".join(p for p in sig.parameters if p != "name")
        return f"{name}({params}) does not accept these inputs and attrs: {e}"
    return mistyped(name, sig, attrs)


def _varargs(fn) -> tuple[list[str], str] | None:
    """(the parameters before it, the name) of `fn`'s *varargs parameter (a layer's: its
    forward's, as Layer.__call__ takes *inputs); None when it has none or no signature."""
    try:
        params = list(inspect.signature(getattr(fn, "forward", fn)).parameters.values())
    except (TypeError, ValueError):
        return None
    star = next((p for p in params if p.kind is inspect.Parameter.VAR_POSITIONAL), None)
    return None if star is None else ([p.name for p in params[: params.index(star)]], star.name)


def as_call(fn, kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """(args, kwargs) to call `fn` with these keyword values: a tensor list named as the function's
    *varargs (paddle.einsum's *operands) is passed unpacked, with the parameters before it
    positionally; anything else stays a keyword."""
    plan = _varargs(fn)
    if plan is None or not isinstance(kwargs.get(plan[1]), (list, tuple)):
        return [], kwargs
    before, star = plan
    kwargs = dict(kwargs)
    args = [kwargs.pop(n) for n in before if n in kwargs]
    return [*args, *kwargs.pop(star)], kwargs


def _star_list(fn, spec: Spec) -> tuple[list[str], str] | None:
    """`_varargs(fn)` when one of the case's tensor lists is passed as that *varargs; else None."""
    plan = _varargs(fn)
    return plan if plan is not None and plan[1] in (spec.lists or {}) else None


def resolve_layer(name: str):
    """The layer class `name` names, or ValueError saying why (allowlist section `layer`)."""
    pc.paddle()
    return resolve_allowed("layer", name, noun="a layer class", classes=True)


def layer_binder(
    name: str, args: dict[str, Any], inputs: Any, attrs: dict[str, Any]
) -> tuple[str, str] | None:
    """`config.load_*` hook for layer cases: None when the class resolves, its constructor accepts
    `args` and its forward the inputs and attrs, else (the field at fault, the reason)."""
    try:
        cls = resolve_layer(name)
    except ValueError as e:
        return "layer", str(e)
    for fld, what, fn, kwargs in (
        ("args", "constructor", cls.__init__, dict(args)),
        ("inputs", "forward", cls.forward, {**dict.fromkeys(inputs), **attrs}),
    ):
        sig = inspect.signature(fn)
        try:
            sig.bind(None, **kwargs)
        except TypeError as e:
            params = ", ".join(p for p in sig.parameters if p not in ("self", "name"))
            return fld, f"{name}'s {what} ({params}) does not accept these {fld}: {e}"
        reason = mistyped(f"{name}'s {what}", sig, args if fld == "args" else attrs)
        if reason:
            return ("args" if fld == "args" else "attrs"), reason
    return None


def _layer_factory(spec: Spec):
    """A function that builds the case's layer (called where its parameters must live: in dynamic
    mode after the place is set, in static mode inside the program), cast to the inputs' dtype."""
    cls = resolve_layer(spec.layer or "")
    floating = [t.dtype for t in (spec.inputs or {}).values() if t.dtype.startswith(("float", "bfloat"))]

    def build():
        if not floating or floating[0] == "float32":
            return cls(**spec.args)
        # built in the inputs' dtype (casting after building breaks the RNN layers' flat weights)
        pd = pc.paddle()
        before = pd.get_default_dtype()
        pd.set_default_dtype(floating[0])
        try:
            return cls(**spec.args)
        finally:
            pd.set_default_dtype(before)

    return build


def prepare(case: Case) -> Prepared:
    spec = case.spec
    place, mode = case.place, case.mode
    if (spec.op is None and spec.layer is None) or spec.inputs is None:
        raise ValueError(f"{case.case_id}: not an op or layer case (kind {spec.kind!r})")
    pc.set_place(place)
    # an op is called as it is; a layer is built (in static mode: inside the program) and called
    build = _layer_factory(spec) if spec.layer else (lambda fn=resolve_op(spec.op or ""): fn)
    attrs = dict(spec.attrs)
    inputs = spec.inputs
    arrays = pc.make_arrays(inputs, spec.seed)
    grad_names = [n for n, t in inputs.items() if t.wants_grad()] if spec.backward else []
    if spec.backward and not grad_names:
        raise RunnerUnavailable(f"{case.case_id}: backward requested but no input is floating point")
    info = {"layer": spec.layer, "mode": mode} if spec.layer else {"op": spec.op, "mode": mode}
    if mode == "static":
        step, outputs = _static(build, spec, arrays, attrs, grad_names, place)
    else:
        step, outputs = _eager(build(), spec, arrays, attrs, grad_names, place, jit=(mode == "to_static"))
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
    # reach the op as one list (Spec.grouped), unpacked only where it is the op's *varargs: the
    # signature is read once here, never in the timed step (it costs instructions per call).
    plan = _star_list(fn, spec)
    if plan is not None:
        before, star = plan

        def call(ts):
            kwargs = {**spec.grouped(dict(zip(names, ts, strict=True))), **attrs}
            args = [kwargs.pop(n) for n in before if n in kwargs]
            return pc.first_tensor(fn(*args, *kwargs.pop(star), **kwargs))
    else:

        def call(ts):
            return pc.first_tensor(fn(**spec.grouped(dict(zip(names, ts, strict=True))), **attrs))

    target = pd.jit.to_static(call) if jit else call
    grad_ts = [t for n, t in zip(names, tensors, strict=True) if n in grad_names]
    params = _trainable(fn) if grad_names else []
    grad_ts += params
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
            for n, g in zip(grad_names + _param_names(params), grads, strict=True):
                result[f"grad_{n}"] = pc.to_numpy(g)
        return result

    return step, outputs


def _trainable(fn) -> list:
    """A layer's parameters that take a gradient (none for an op)."""
    parameters = getattr(fn, "parameters", None)
    return [p for p in parameters() if not p.stop_gradient] if callable(parameters) else []


def _param_names(params: list) -> list[str]:
    return [f"param{i}" for i in range(len(params))]


def _static(build, spec: Spec, arrays, attrs, grad_names, place):
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
            fn = build()
            args, kwargs = as_call(fn, {**spec.grouped(vars_), **attrs})
            out = pc.first_tensor(fn(*args, **kwargs))
            fetch = [out]
            params = _trainable(fn) if grad_names else []
            if grad_names:
                fetch += list(pd.static.gradients([out], [vars_[n] for n in grad_names] + params))
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
        for n, g in zip(grad_names + _param_names(params), res[1:], strict=True):
            out[f"grad_{n}"] = np.asarray(g)
        return out

    return step, outputs
