"""Shared paddle plumbing for the paddle runners: places, inputs from the seed, sync, memory, events.

Written to work on Paddle 2.6 and 3.x, CPU-only and CUDA builds: every device API that raises on
a CPU-only build (synchronize, Event, memory stats) is only reached for a CUDA place.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from benchmark.runners.base import RunnerUnavailable


@functools.lru_cache(maxsize=1)
def paddle():
    try:
        import paddle as _paddle
    except ImportError as e:  # pragma: no cover - exercised only without paddle
        raise RunnerUnavailable(f"paddle is not installed ({e}); install the 'cpu' or 'gpu' extra") from e
    return _paddle


def place_available(place: str) -> tuple[bool, str]:
    """Whether this build and machine have `place`; the reason when not."""
    pd = paddle()
    if place == "cpu":
        return True, ""
    if not pd.device.is_compiled_with_cuda():
        return False, f"place {place}: this paddle build has no CUDA (CPU-only build)"
    count = pd.device.cuda.device_count()
    index = int(place.split(":")[1]) if ":" in place else 0
    if index >= count:
        return False, f"place {place}: only {count} CUDA device(s) visible"
    return True, ""


def set_place(place: str) -> None:
    ok, reason = place_available(place)
    if not ok:
        raise RunnerUnavailable(reason)
    paddle().set_device(place)


def synchronizer(place: str):
    """A function that waits for all queued work on `place` (a no-op on CPU)."""
    if place == "cpu":
        return lambda: None
    pd = paddle()
    sync = getattr(pd.device, "synchronize", None) or pd.device.cuda.synchronize
    return lambda: sync(place)


def random_array(spec: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """An input drawn uniformly in [low, high) with the spec's shape and dtype."""
    dtype = spec["dtype"]
    shape = tuple(spec["shape"])
    low, high = spec.get("low", -1.0), spec.get("high", 1.0)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(int(low), max(int(high), int(low) + 1), size=shape).astype(dtype)
    np_dtype = "float32" if dtype == "bfloat16" else dtype
    return rng.uniform(low, high, size=shape).astype(np_dtype)


def make_arrays(specs: dict[str, dict[str, Any]], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: random_array(spec, rng) for name, spec in specs.items()}


def to_tensor(array: np.ndarray, dtype: str, place: str, requires_grad: bool):
    pd = paddle()
    t = pd.to_tensor(array, place=_place_obj(place))
    if dtype == "bfloat16":
        t = t.astype("bfloat16")
    t.stop_gradient = not requires_grad
    return t


def is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _place_obj(place: str):
    pd = paddle()
    if place == "cpu":
        return pd.CPUPlace()
    index = int(place.split(":")[1]) if ":" in place else 0
    return pd.CUDAPlace(index)


def static_place(place: str):
    return _place_obj(place)


def peak_memory_tracker(place: str):
    """Resets the device's peak-memory counter and returns a reader of it (None on CPU)."""
    if place == "cpu":
        return None
    cuda = paddle().device.cuda
    if hasattr(cuda, "reset_max_memory_allocated"):
        cuda.reset_max_memory_allocated(place)
    return lambda: int(cuda.max_memory_allocated(place))


class CudaEventTimer:
    """Device time between start() and stop() from CUDA events (device timer protocol)."""

    def __init__(self, place: str):
        pd = paddle()
        event_cls = getattr(pd.device, "Event", None) or pd.device.cuda.Event
        self._start = event_cls(enable_timing=True)
        self._end = event_cls(enable_timing=True)

    def start(self) -> None:
        self._start.record()

    def stop(self) -> None:
        self._end.record()

    def elapsed_s(self) -> float:
        self._end.synchronize()
        return self._start.elapsed_time(self._end) / 1000.0


def device_timer_factory(place: str):
    if place == "cpu":
        return None
    return lambda: CudaEventTimer(place)


def leave_static() -> None:
    """Back to dynamic mode after a static case (the executor needs static mode while it runs)."""
    paddle().disable_static()


def first_tensor(out):
    if isinstance(out, (list, tuple)):
        return out[0]
    return out


def to_numpy(t) -> np.ndarray:
    if hasattr(t, "numpy"):
        if str(getattr(t, "dtype", "")).endswith("bfloat16"):
            t = t.astype("float32")
        return np.asarray(t.numpy())
    return np.asarray(t)


def framework_info() -> dict[str, Any]:
    pd = paddle()
    info: dict[str, Any] = {"framework": "paddle", "paddle_version": pd.__version__}
    version = getattr(pd, "version", None)
    if version is not None:
        info["paddle_commit"] = getattr(version, "commit", None)
        for key in ("cuda", "cudnn"):
            fn = getattr(version, key, None)
            try:
                info[f"{key}_version"] = fn() if callable(fn) else fn
            except Exception:  # noqa: BLE001 - version probes must never fail a run
                info[f"{key}_version"] = None
    info["compiled_with_cuda"] = bool(pd.device.is_compiled_with_cuda())
    try:
        info["num_threads"] = pd.get_flags(["FLAGS_paddle_num_threads"]).get("FLAGS_paddle_num_threads")
    except Exception:  # noqa: BLE001
        info["num_threads"] = None
    return info
