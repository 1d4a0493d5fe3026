"""Program cases: feed -> a list of ops -> fetch.

`static` builds a `paddle.static.Program` and runs it with `paddle.static.Executor` (feeding numpy
arrays and fetching numpy arrays, so feed/fetch cost is part of what is measured, as in
PaddlePaddle's `feed + abs + fetch` benchmark); `dynamic` runs the same op list eagerly on
tensors; `to_static` compiles that eager function with `paddle.jit.to_static`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmark.runners import paddle_common as pc
from benchmark.runners.base import Prepared
from benchmark.runners.paddle_ops import resolve_op


def _bind(op: dict[str, Any], env: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    spec = op["inputs"]
    if isinstance(spec, list):
        return [env[v] for v in spec], {}
    return [], {k: env[v] for k, v in spec.items()}


def _interpret(ops: list[dict[str, Any]], fns: list[Any], env: dict[str, Any]) -> dict[str, Any]:
    for op, fn in zip(ops, fns, strict=True):
        args, kwargs = _bind(op, env)
        env[op["out"]] = pc.first_tensor(fn(*args, **kwargs, **(op.get("attrs") or {})))
    return env


def check_program(cfg: dict[str, Any]) -> None:
    """Every op input and fetch names a fed or earlier-produced variable."""
    known = set(cfg["feed"])
    for i, op in enumerate(cfg["ops"]):
        names = op["inputs"] if isinstance(op["inputs"], list) else list(op["inputs"].values())
        for n in names:
            if n not in known:
                raise ValueError(f"ops.{i}.inputs: variable {n!r} is neither fed nor produced before")
        known.add(op["out"])
    for n in cfg["fetch"]:
        if n not in known:
            raise ValueError(f"fetch: variable {n!r} is neither fed nor produced by an op")


def prepare(case) -> Prepared:
    cfg = case.config
    place, mode = case.place, case.mode
    check_program(cfg)
    pc.set_place(place)
    ops = cfg["ops"]
    fns = [resolve_op(op["op"]) for op in ops]
    arrays = pc.make_arrays(cfg["feed"], cfg.get("seed", 0))
    fetch_names = list(cfg["fetch"])
    if mode == "static":
        step, outputs = _static(cfg, ops, fns, arrays, fetch_names, place)
    else:
        step, outputs = _eager(cfg, ops, fns, arrays, fetch_names, place, jit=(mode == "to_static"))
    return Prepared(
        step=step,
        sync=pc.synchronizer(place),
        outputs=outputs,
        peak_memory=pc.peak_memory_tracker(place),
        device_timer=pc.device_timer_factory(place),
        close=pc.leave_static if mode == "static" else (lambda: None),
        info={"ops": [op["op"] for op in ops], "fetch": fetch_names, "mode": mode},
    )


def _static(cfg, ops, fns, arrays, fetch_names, place):
    pd = pc.paddle()
    main, startup = pd.static.Program(), pd.static.Program()
    # The executor runs PIR programs only in static mode: it stays on until the case is closed.
    pd.enable_static()
    try:
        with pd.static.program_guard(main, startup):
            env = {n: pd.static.data(n, list(a.shape), cfg["feed"][n]["dtype"]) for n, a in arrays.items()}
            _interpret(ops, fns, env)
            fetch = [env[n] for n in fetch_names]
        exe = pd.static.Executor(pc.static_place(place))
        exe.run(startup)
    except Exception:
        pd.disable_static()
        raise
    feed = dict(arrays)

    def step():
        return exe.run(main, feed=feed, fetch_list=fetch)

    def outputs() -> dict[str, np.ndarray]:
        return {n: np.asarray(v) for n, v in zip(fetch_names, step(), strict=True)}

    return step, outputs


def _eager(cfg, ops, fns, arrays, fetch_names, place, *, jit: bool):
    pd = pc.paddle()
    feed_names = list(arrays)
    tensors = [
        pc.to_tensor(arrays[n], cfg["feed"][n]["dtype"], place, requires_grad=False) for n in feed_names
    ]

    # One list argument: to_static does not accept *args signatures.
    def program(ts):
        env = _interpret(ops, fns, dict(zip(feed_names, ts, strict=True)))
        return [env[n] for n in fetch_names]

    target = pd.jit.to_static(program) if jit else program

    def step():
        return target(tensors)

    def outputs() -> dict[str, np.ndarray]:
        return {n: pc.to_numpy(v) for n, v in zip(fetch_names, step(), strict=True)}

    return step, outputs
