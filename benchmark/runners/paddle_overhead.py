"""Framework overhead of a static program case: the program net of an empty one, and feed/fetch cost.

PaddlePaddle's own benchmark learned to time ``feed + abs + fetch`` beside an empty program with
the same feed and fetch: for a small op most of the time is the executor's, not the kernel's.
`decompose(case)` times four variants of a ``program`` case (static mode), interleaved round by
round so that drift on a busy machine hits them alike, and reports medians (seconds per iteration):

``full``
    the program as the case runs it: numpy arrays fed, outputs fetched to numpy.
``empty``
    a program with the same feed (same names, shapes, dtypes) and no ops, fetching the fed
    variables back to numpy (for ``feed x -> abs -> fetch y`` the same bytes as the case).
``resident``
    the same ops with the inputs already in the scope and nothing fetched: the fed variables are
    made persistable (Paddle 3.x PIR skips the feed of a persistable data variable), their tensors
    are placed in the executor's scope once (``scope.var(name).get_tensor().set(array, place)``),
    and the program runs with ``feed={}`` and ``fetch_list=[]`` (the ops still run: PIR does not
    prune them). On a CUDA place each iteration ends with a device sync.
``resident_fetch``
    as ``resident``, but fetching the case's outputs to numpy.

On a CUDA place every round of every variant starts and ends with a device synchronize before the
clock is read (as the suite's own timer does), so a round never ends with work still queued nor
starts with the previous variant's work in flight.

Derived: ``program_net_of_empty = full - empty``, ``feed_fetch_cost = full - resident``,
``fetch_cost = resident_fetch - resident``, ``feed_cost = full - resident_fetch`` (so
``feed_cost + fetch_cost == feed_fetch_cost``). Differences of medians can come out slightly
negative when a part costs less than the noise; they are reported as measured, never clipped.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmark.runners import paddle_common as pc
from benchmark.runners.paddle_ops import resolve_op
from benchmark.runners.paddle_program import interpret, program_parts

PARTS = ("full", "empty", "resident", "resident_fetch")


def _build(pd, program, arrays, fns, *, ops: bool, persistable: bool):
    """(program, startup, fetch values) for the case's feed, with or without its ops."""
    feed, steps, fetch = program
    main, startup = pd.static.Program(), pd.static.Program()
    with pd.static.program_guard(main, startup):
        env = {}
        for name, arr in arrays.items():
            var = pd.static.data(name, list(arr.shape), feed[name].dtype)
            if persistable:
                var.persistable = True
            env[name] = var
        if not ops:
            return main, startup, [env[n] for n in arrays]
        interpret(steps, fns, env)
        return main, startup, [env[n] for n in fetch]


def _variants(pd, program, arrays, fns, place) -> tuple[dict[str, Callable[[], Any]], dict[str, Any]]:
    """The four runnable variants (each in its own scope) and a consistency check of resident vs full."""
    exe = pd.static.Executor(pc.static_place(place))
    full = _build(pd, program, arrays, fns, ops=True, persistable=False)
    empty = _build(pd, program, arrays, fns, ops=False, persistable=False)
    resident = _build(pd, program, arrays, fns, ops=True, persistable=True)
    scopes = {k: pd.static.Scope() for k in ("full", "empty", "resident")}
    for key, (_, startup, _) in (("full", full), ("empty", empty), ("resident", resident)):
        exe.run(startup, scope=scopes[key])
    for name, arr in arrays.items():
        scopes["resident"].var(name).get_tensor().set(arr, pc.static_place(place))
    feed = dict(arrays)
    sync = pc.synchronizer(place)

    def run_resident():
        exe.run(resident[0], feed={}, fetch_list=[], scope=scopes["resident"])
        sync()

    variants = {
        "full": lambda: exe.run(full[0], feed=feed, fetch_list=full[2], scope=scopes["full"]),
        "empty": lambda: exe.run(empty[0], feed=feed, fetch_list=empty[2], scope=scopes["empty"]),
        "resident": run_resident,
        "resident_fetch": lambda: exe.run(
            resident[0], feed={}, fetch_list=resident[2], scope=scopes["resident"]
        ),
    }
    out_full, out_resident = variants["full"](), variants["resident_fetch"]()
    same = all(
        np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(out_full, out_resident, strict=True)
    )
    return variants, {"resident_matches_full": bool(same)}


def _time_rounds(
    variants: dict[str, Callable[[], Any]],
    rounds: int,
    iterations: int,
    sync: Callable[[], None] = lambda: None,
) -> dict[str, list[float]]:
    """Seconds per iteration of each variant, one sample per round, variants interleaved in each round;
    `sync` (the place's device synchronize) runs before each round's first and after its last iteration,
    inside the clock reads at the end."""
    samples: dict[str, list[float]] = {k: [] for k in variants}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(variants))
            for key in order:
                fn = variants[key]
                sync()
                t0 = time.perf_counter()
                for _ in range(iterations):
                    fn()
                sync()
                samples[key].append((time.perf_counter() - t0) / iterations)
    finally:
        if gc_was_enabled:
            gc.enable()
    return samples


def _calibrate(
    fn: Callable[[], Any], warmup: int, round_time: float, sync: Callable[[], None] = lambda: None
) -> int:
    for _ in range(warmup):
        fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    estimate = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(round_time / estimate))


def _iqr(values: list[float]) -> float:
    q = np.percentile(values, [25, 75])
    return float(q[1] - q[0])


def decompose(
    case,
    rounds: int = 15,
    iterations: int | None = None,
    *,
    warmup: int = 3,
    round_time: float = 0.01,
) -> dict[str, Any]:
    """Time the four variants of a static ``program`` case and derive the overhead parts (module doc).

    `iterations` per round defaults to as many as fill `round_time` seconds of the full program.
    Returns ``{"parts": {part: median s/iter}, "iqr": {...}, "samples": {part: [s/iter per round]},
    "program_net_of_empty", "feed_fetch_cost", "feed_cost", "fetch_cost", "rounds", "iterations",
    "checks": {"resident_matches_full": bool}, "unit": "s", ...}``.
    """
    if case.kind != "program" or case.mode != "static":
        raise ValueError(f"{case.id}: overhead decomposition needs a 'program' case in 'static' mode")
    if rounds < 1:
        raise ValueError(f"rounds: expected at least 1, got {rounds}")
    program = program_parts(case.spec)
    feed, steps, _ = program
    pc.set_place(case.place)
    pd = pc.paddle()
    fns = {s.op: resolve_op(s.op) for op in steps for s in op.steps()}
    arrays = pc.make_arrays(feed, case.spec.seed)
    was_dynamic = pd.in_dynamic_mode()
    pd.enable_static()
    try:
        variants, checks = _variants(pd, program, arrays, fns, case.place)
        sync = pc.synchronizer(case.place)
        for key, fn in variants.items():
            n = _calibrate(fn, warmup, round_time, sync)
            if key == "full" and iterations is None:
                iterations = n
        samples = _time_rounds(variants, rounds, int(iterations), sync)
    finally:
        if was_dynamic:
            pd.disable_static()
    parts = {k: statistics.median(v) for k, v in samples.items()}
    return {
        "case": case.id,
        "place": case.place,
        "unit": "s",
        "rounds": rounds,
        "iterations": int(iterations),
        "parts": parts,
        "iqr": {k: _iqr(v) for k, v in samples.items()},
        "samples": samples,
        "program_net_of_empty": parts["full"] - parts["empty"],
        "feed_fetch_cost": parts["full"] - parts["resident"],
        "feed_cost": parts["full"] - parts["resident_fetch"],
        "fetch_cost": parts["resident_fetch"] - parts["resident"],
        "checks": checks,
    }


def format_decomposition(d: dict[str, Any]) -> str:
    """A few lines of text: each part and each derived cost, per iteration (benchmark.units)."""
    from benchmark.units import format_seconds

    lines = [f"{d['case']}: {d['rounds']} rounds x {d['iterations']} iterations (median per iteration)"]
    for key in PARTS:
        lines.append(
            f"  {key:<22}{format_seconds(d['parts'][key]):>12}   IQR {format_seconds(d['iqr'][key])}"
        )
    for key in ("program_net_of_empty", "feed_fetch_cost", "feed_cost", "fetch_cost"):
        lines.append(f"  {key:<22}{format_seconds(d[key]):>12}")
    return "\n".join(lines)
