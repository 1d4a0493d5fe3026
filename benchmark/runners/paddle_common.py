"""Shared paddle plumbing for the paddle runners: places, inputs from the seed, sync, memory, events.

Written to work on Paddle 2.6 and 3.x, CPU-only and CUDA builds: every device API that raises on
a CPU-only build (synchronize, Event, memory stats) is only reached for a CUDA place.

Device APIs take ``"gpu:N"`` (never a bare ``"gpu"``): ``paddle.device.cuda.max_memory_allocated``
and ``reset_max_memory_allocated`` accept an int, a ``CUDAPlace`` or ``"gpu:N"`` and raise
``ValueError: The current string gpu is not expected`` for ``"gpu"`` (2.6.2 and 3.x alike), so every
place goes through `cuda_place_name` first.

What Paddle 2.6 lacks, and what the harness does about it (`gpu_notes` says it once per run):

- ``paddle.device.Event.elapsed_time`` is ``return 0`` in 2.6, and ``paddle.device.cuda.Event``
  (``core.CUDAEvent``) has no ``elapsed_time`` at all: device (event) timing is refused there
  (`event_timing_support`), the device timer is None and no device sample is stored, never a 0.
  On other versions the first timer of a place is probed: events around real work that read 0 (or
  fail) turn device timing off the same way.
- ``paddle.device.cuda.reset_max_memory_allocated`` does not exist in 2.6: without a reset the
  counter holds the process's peak since start, not the case's, so peak memory is not recorded.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from benchmark.datamodel.case import Tensor
from benchmark.runners.base import RunnerUnavailable


@functools.lru_cache(maxsize=1)
def paddle():
    try:
        with warnings.catch_warnings():
            # Paddle warns on import when ccache is missing (it matters only for building C++
            # extensions, which the harness never does); it must not open every command's output.
            warnings.filterwarnings("ignore", message="No ccache found", category=UserWarning)
            import paddle as _paddle
    except ImportError as e:
        raise RunnerUnavailable(import_failure(e)) from e
    return _paddle


def import_failure(e: ImportError) -> str:
    """Why paddle cannot be used: absent, or installed but failing to import (e.g. a missing
    `setuptools`, which paddle imports at start-up), with the error that stopped it."""
    if isinstance(e, ModuleNotFoundError) and e.name == "paddle":
        return f"paddle is not installed ({e}); install the 'cpu' or 'gpu' extra"
    return f"paddle is installed but failed to import: {type(e).__name__}: {e}"


def cuda_index(place: str) -> int:
    """The CUDA device index of a ``gpu`` / ``gpu:N`` place (``gpu`` is device 0)."""
    head, _, index = str(place).partition(":")
    if head not in ("gpu", "cuda") or (index and not index.isdigit()):
        raise ValueError(f"place {place!r}: expected gpu or gpu:N")
    return int(index) if index else 0


def cuda_place_name(place: str) -> str:
    """``"gpu:N"`` for a ``gpu`` / ``gpu:N`` place: the only string form paddle's device APIs accept."""
    return f"gpu:{cuda_index(place)}"


def version_tuple(version: str) -> tuple[int, ...]:
    """The leading numbers of a version string: "2.6.2" -> (2, 6, 2), "3.0.0rc1" -> (3, 0, 0);
    paddle's develop builds read "0.0.0"."""
    return tuple(int(n) for n in re.findall(r"\d+", re.match(r"[\d.]*", str(version)).group())[:3])


def _is_legacy(pd) -> bool:
    """Paddle 1.x/2.x (not a develop build, whose version reads 0.0.0)."""
    major = (version_tuple(getattr(pd, "__version__", "0")) or (0,))[0]
    return 0 < major < 3


def event_timing_support(pd=None) -> tuple[bool, str]:
    """(usable, reason): whether this paddle's CUDA events can time the device, by version and API."""
    pd = pd or paddle()
    version = getattr(pd, "__version__", "?")
    if _is_legacy(pd):
        return False, (
            f"device timing off: Paddle {version}'s paddle.device.Event.elapsed_time returns 0 and "
            "paddle.device.cuda.Event has no elapsed_time, so no device samples are stored (Paddle >= 3.0 has them)"
        )
    event_cls = getattr(pd.device, "Event", None) or getattr(pd.device.cuda, "Event", None)
    if event_cls is None or not callable(getattr(event_cls, "elapsed_time", None)):
        return False, f"device timing off: Paddle {version} has no CUDA event with elapsed_time"
    return True, ""


def peak_memory_support(cuda=None, version: str | None = None) -> tuple[bool, str]:
    """(usable, reason): peak memory needs ``reset_max_memory_allocated`` (absent in Paddle 2.6)."""
    if cuda is None:
        pd = paddle()
        cuda, version = pd.device.cuda, pd.__version__
    missing = [n for n in ("reset_max_memory_allocated", "max_memory_allocated") if not hasattr(cuda, n)]
    if missing:
        return False, (
            f"peak device memory off: Paddle {version or '?'} has no paddle.device.cuda.{missing[0]} (without a "
            "reset the counter holds the process's peak since start, not the case's), so none is stored"
        )
    return True, ""


def gpu_notes(pd=None) -> list[str]:
    """One line per device measurement this CUDA build cannot make (empty on CPU-only builds)."""
    pd = pd or paddle()
    if not pd.device.is_compiled_with_cuda():
        return []
    notes = []
    for ok, reason in (event_timing_support(pd), peak_memory_support(pd.device.cuda, pd.__version__)):
        if not ok:
            notes.append(reason)
    notes.extend(reason for reason in _probe_failures.values() if reason not in notes)
    return notes


def place_available(place: str) -> tuple[bool, str]:
    """Whether this build and machine have `place`; the reason when not."""
    pd = paddle()
    if place == "cpu":
        return True, ""
    if not pd.device.is_compiled_with_cuda():
        return False, f"place {place}: this paddle build has no CUDA (CPU-only build)"
    count = pd.device.cuda.device_count()
    index = cuda_index(place)
    if index >= count:
        return False, f"place {place}: only {count} CUDA device(s) visible"
    return True, ""


def set_place(place: str) -> None:
    ok, reason = place_available(place)
    if not ok:
        raise RunnerUnavailable(reason)
    paddle().set_device(place)


def synchronizer(place: str, pd=None):
    """A function that waits for all queued work on `place` (a no-op on CPU)."""
    if place == "cpu":
        return lambda: None
    pd = pd or paddle()
    sync = getattr(pd.device, "synchronize", None) or pd.device.cuda.synchronize
    name = cuda_place_name(place)
    return lambda: sync(name)


def random_array(spec: Tensor, rng: np.random.Generator) -> np.ndarray:
    """An input drawn uniformly in [low, high) with the spec's shape and dtype, generated in that
    dtype (no float64 or int64 intermediate, so host memory is what `config.expand.tensor_bytes`
    says); float16 and bfloat16 are drawn in float32 first."""
    dtype, shape, low, high = spec.dtype, spec.shape, spec.low, spec.high
    if dtype == "bool":
        return rng.integers(0, 2, size=shape, dtype=np.int8).view(np.bool_)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)  # the range clipped to what the dtype holds
        lo = min(max(int(low), info.min), info.max)
        return rng.integers(lo, min(max(int(high), lo + 1), info.max + 1), size=shape, dtype=dtype)
    draw = "float64" if dtype == "float64" else "float32"
    a = rng.random(shape, dtype=draw)
    a *= high - low
    a += low
    return a if dtype in ("float64", "float32", "bfloat16") else a.astype(dtype)


def shaped_values(spec: Tensor, a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`a` (drawn as `random_array` draws) made into the values `spec.values` asks for."""
    values = spec.values
    if values == "sorted":
        return np.sort(a, axis=-1)
    if values == "positive_definite":  # A Aᵀ / n + I: symmetric, eigenvalues >= 1
        n = a.shape[-1]
        return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n, dtype=a.dtype)).astype(a.dtype)
    if isinstance(values, dict) and "boxes_in" in values:  # boxes inside the image
        height, width = values["boxes_in"]
        low, high = values.get("side") or (1.0, min(height, width) / 2)
        n = a.shape[0]
        w, h = low + rng.random(n) * (high - low), low + rng.random(n) * (high - low)
        x1, y1 = rng.random(n) * (width - w), rng.random(n) * (height - h)
        return np.stack([x1, y1, x1 + w, y1 + h], axis=1).astype(a.dtype)
    if isinstance(values, dict) and "sum_to" in values:  # as even as possible, the remainder in front
        parts = len(a)
        base, extra = divmod(int(values["sum_to"]), parts)
        return np.array([base + (i < extra) for i in range(parts)], dtype=a.dtype)
    if isinstance(values, dict) and "colptr_to" in values:  # CSC column pointers: 0, ascending, edges
        edges, n = int(values["colptr_to"]), len(a)
        inner = np.sort(rng.integers(0, edges + 1, size=n - 2))
        return np.concatenate([[0], inner, [edges]]).astype(a.dtype)
    return a


def make_arrays(specs: Mapping[str, Tensor], seed: int) -> dict[str, np.ndarray]:
    """The inputs `specs` describe, drawn in order from one generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    return {name: shaped_values(spec, random_array(spec, rng), rng) for name, spec in specs.items()}


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
    return pd.CUDAPlace(cuda_index(place))


def static_place(place: str):
    return _place_obj(place)


def peak_memory_tracker(place: str, cuda=None):
    """Resets the device's peak-memory counter and returns a reader of it; None on CPU, and None
    where the counter cannot be reset (Paddle 2.6: `peak_memory_support` says why)."""
    if place == "cpu":
        return None
    version = None
    if cuda is None:
        pd = paddle()
        cuda, version = pd.device.cuda, pd.__version__
    if not peak_memory_support(cuda, version)[0]:
        return None
    name = cuda_place_name(place)
    cuda.reset_max_memory_allocated(name)
    return lambda: int(cuda.max_memory_allocated(name))


class CudaEventTimer:
    """Device time between start() and stop() from CUDA events (device timer protocol)."""

    def __init__(self, place: str, pd=None):
        pd = pd or paddle()
        event_cls = getattr(pd.device, "Event", None) or pd.device.cuda.Event
        self._start = event_cls(enable_timing=True)
        self._end = event_cls(enable_timing=True)

    def start(self) -> None:
        self._start.record()

    def stop(self) -> None:
        self._end.record()

    def elapsed_s(self) -> float:
        self._end.synchronize()
        return float(self._start.elapsed_time(self._end)) / 1000.0


# place -> reason, for places whose events read 0 (or failed) around real work.
_probe_failures: dict[str, str] = {}
_probed: set[str] = set()


def _probe_work(pd):
    """A few microseconds of real device work (a 512x512 matmul) on the current place, run eagerly
    even when a static case has switched static mode on (then it is switched back on after)."""
    static = callable(getattr(pd, "in_dynamic_mode", None)) and not pd.in_dynamic_mode()
    if static:
        pd.disable_static()
    try:
        x = pd.ones([512, 512], dtype="float32")
        return pd.matmul(x, x)
    finally:
        if static:
            pd.enable_static()


def probe_event_timing(place: str, pd=None, work=None) -> tuple[bool, str]:
    """Time real work with the events once per place: a non-positive reading (a stub that returns 0)
    or an error turns device timing off for that place, with the reason."""
    pd = pd or paddle()
    name = cuda_place_name(place)
    if name in _probed:
        return name not in _probe_failures, _probe_failures.get(name, "")
    _probed.add(name)
    try:
        timer = CudaEventTimer(name, pd)
        timer.start()
        (work or _probe_work)(pd)
        timer.stop()
        elapsed = timer.elapsed_s()
    except Exception as e:  # noqa: BLE001 - any failure means: no device timing here
        _probe_failures[name] = f"device timing off on {name}: CUDA events failed ({type(e).__name__}: {e})"
    else:
        if not elapsed > 0:
            _probe_failures[name] = (
                f"device timing off on {name}: CUDA events read {elapsed!r} s around real work "
                f"(Paddle {getattr(pd, '__version__', '?')}), so no device samples are stored"
            )
    return name not in _probe_failures, _probe_failures.get(name, "")


def device_timer_factory(place: str, pd=None):
    """A factory of CUDA event timers for `place`; None on CPU and wherever events cannot time the
    device (Paddle 2.6, or a place whose probe read 0): no device sample beats a fake one."""
    if place == "cpu":
        return None
    pd = pd or paddle()
    if not event_timing_support(pd)[0] or not probe_event_timing(place, pd)[0]:
        return None
    name = cuda_place_name(place)
    return lambda: CudaEventTimer(name, pd)


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
    if info["compiled_with_cuda"]:
        # What this build can measure on the device, with the run (one line each where it cannot).
        info["device_timing"] = "cuda events" if event_timing_support(pd)[0] else "off"
        info["gpu_notes"] = gpu_notes(pd)
    try:
        info["num_threads"] = pd.get_flags(["FLAGS_paddle_num_threads"]).get("FLAGS_paddle_num_threads")
    except Exception:  # noqa: BLE001
        info["num_threads"] = None
    return info
