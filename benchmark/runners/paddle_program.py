"""Program cases: feed -> a list of ops -> fetch.

`static` builds a `paddle.static.Program` and runs it with `paddle.static.Executor` (feeding numpy
arrays and fetching numpy arrays, so feed/fetch cost is part of what is measured, as in
PaddlePaddle's `feed + abs + fetch` benchmark); `dynamic` runs the same op list eagerly on
tensors; `to_static` compiles that eager function with `paddle.jit.to_static`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmark.datamodel.case import Case, ProgramStep, Spec, Tensor
from benchmark.runners import paddle_common as pc
from benchmark.runners.base import Prepared
from benchmark.runners.paddle_ops import resolve_op


def _bind(op: ProgramStep, env: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    if isinstance(op.inputs, list):
        return [env[v] for v in op.inputs], {}
    return [], {k: env[v] for k, v in op.inputs.items()}


def interpret(ops: list[ProgramStep], fns: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    """`env` with the output of every op in `ops` (`fns` maps each op name to its function) added
    under its `out` name. Control flow gets its branches as functions that interpret them."""
    for op in ops:
        fn = fns[op.op]
        if op.branches is not None:
            env[op.out] = pc.first_tensor(_control_flow(op, fn, fns, env))
            continue
        args, kwargs = _bind(op, env)
        env[op.out] = pc.first_tensor(fn(*args, **kwargs, **op.attrs))
    return env


def _control_flow(op: ProgramStep, fn, fns: dict[str, Any], env: dict[str, Any]):
    """cond / switch_case / case (benchmark.config.schema.CONTROL_FLOW) with closures over the
    step's branches: each runs its steps on a copy of `env` and returns its last output."""

    def branch(steps: list[ProgramStep]):
        return lambda: interpret(steps, fns, dict(env))[steps[-1].out]

    args = [env[n] for n in op.inputs]
    branches = [branch(b) for b in op.branches or []]
    default = branch(op.default) if op.default else None
    kind = op.op.rpartition(".")[2]
    if kind == "cond":
        return fn(args[0], branches[0], branches[1])
    if kind == "switch_case":
        return fn(args[0], dict(enumerate(branches)), default=default)
    return fn(list(zip(args, branches, strict=True)), default=default)


def program_parts(spec: Spec) -> tuple[dict[str, Tensor], list[ProgramStep], list[str]]:
    """(feed, ops, fetch) of a program case, once every op input and fetch names a fed or
    earlier-produced variable; ValueError saying which does not."""
    if spec.feed is None or spec.ops is None or spec.fetch is None:
        raise ValueError(f"not a program case (kind {spec.kind!r}): feed, ops and fetch are required")
    _check_names(spec.ops, set(spec.feed), "ops")
    known = set(spec.feed) | {op.out for op in spec.ops}
    for n in spec.fetch:
        if n not in known:
            raise ValueError(f"fetch: variable {n!r} is neither fed nor produced by an op")
    return spec.feed, spec.ops, spec.fetch


def _check_names(ops: list[ProgramStep], known: set[str], where: str) -> None:
    """Every input of `ops` names a variable fed or produced before it (a branch sees what its
    step sees, and its own outputs)."""
    known = set(known)
    for i, op in enumerate(ops):
        names = op.inputs if isinstance(op.inputs, list) else list(op.inputs.values())
        for n in names:
            if n not in known:
                raise ValueError(f"{where}.{i}.inputs: variable {n!r} is neither fed nor produced before")
        for j, branch in enumerate(op.branches or []):
            _check_names(branch, known, f"{where}.{i}.branches.{j}")
        if op.default:
            _check_names(op.default, known, f"{where}.{i}.default")
        known.add(op.out)


def prepare(case: Case) -> Prepared:
    place, mode = case.place, case.mode
    feed, ops, fetch_names = program_parts(case.spec)
    pc.set_place(place)
    fns = {s.op: resolve_op(s.op) for op in ops for s in op.steps()}
    arrays = pc.make_arrays(feed, case.spec.seed)
    if mode == "static":
        step, outputs = _static(feed, ops, fns, arrays, fetch_names, place)
    else:
        step, outputs = _eager(feed, ops, fns, arrays, fetch_names, place, jit=(mode == "to_static"))
    return Prepared(
        step=step,
        sync=pc.synchronizer(place),
        outputs=outputs,
        peak_memory=pc.peak_memory_tracker(place),
        device_timer=pc.device_timer_factory(place),
        close=pc.leave_static if mode == "static" else (lambda: None),
        info={"ops": [op.op for op in ops], "fetch": list(fetch_names), "mode": mode},
    )


def _static(feed, ops, fns, arrays, fetch_names, place):
    pd = pc.paddle()
    main, startup = pd.static.Program(), pd.static.Program()
    # The executor runs PIR programs only in static mode: it stays on until the case is closed.
    pd.enable_static()
    try:
        with pd.static.program_guard(main, startup):
            env = {n: pd.static.data(n, list(a.shape), feed[n].dtype) for n, a in arrays.items()}
            interpret(ops, fns, env)
            fetch = [env[n] for n in fetch_names]
        exe = pd.static.Executor(pc.static_place(place))
        exe.run(startup)
    except Exception:
        pd.disable_static()
        raise
    feed_arrays = dict(arrays)

    def step():
        return exe.run(main, feed=feed_arrays, fetch_list=fetch)

    def outputs() -> dict[str, np.ndarray]:
        return {n: np.asarray(v) for n, v in zip(fetch_names, step(), strict=True)}

    return step, outputs


def _eager(feed, ops, fns, arrays, fetch_names, place, *, jit: bool):
    pd = pc.paddle()
    feed_names = list(arrays)
    tensors = [pc.to_tensor(arrays[n], feed[n].dtype, place, requires_grad=False) for n in feed_names]

    # One list argument: to_static does not accept *args signatures.
    def program(ts):
        env = interpret(ops, fns, dict(zip(feed_names, ts, strict=True)))
        return [env[n] for n in fetch_names]

    target = pd.jit.to_static(program) if jit else program

    def step():
        return target(tensors)

    def outputs() -> dict[str, np.ndarray]:
        return {n: pc.to_numpy(v) for n, v in zip(fetch_names, step(), strict=True)}

    return step, outputs
