"""GPU telemetry: an NVML sampler thread that runs beside a measured case.

Usage (the harness starts it before warmup and stops it after the last device synchronize)::

    with NvmlSampler(device_index=0, interval=0.1) as sampler:
        ...warmup, timed rounds, final sync...
    result.telemetry = sampler.telemetry()   # {"summary": {...}, "timeline": [...]} or None

API
---
- ``nvml_status(nvml=None) -> (available, reason)``: imports ``pynvml`` (nvidia-ml-py) lazily and calls
  ``nvmlInit`` once per process (once per injected module); the answer is cached.
- ``warn_once(nvml=None, emit=None) -> bool``: when NVML is unavailable, emits exactly one line
  ``GPU telemetry unavailable: <reason>`` (once per process; ``emit`` defaults to stderr) and returns
  whether NVML is available.
- ``NvmlSampler(device_index=0, interval=0.1, nvml=None, emit=None)``: ``start()``/``stop()`` or a
  context manager. ``summary()``, ``timeline()`` and ``telemetry()`` read the samples. ``nvml`` is the
  module to use (default: ``import pynvml``); tests inject a fake with the same functions.
  ``device_index`` is NVML's index or a ``GPU-``/``MIG-`` identifier; ``nvml_device_index(cuda_index)``
  maps a ``gpu:N`` place to it under CUDA_VISIBLE_DEVICES (indices, ``GPU-<uuid>`` or a unique prefix,
  ``MIG-<uuid>``, ``MIG-GPU-<uuid>/<gi>/<ci>``).
- ``resolve_device(device, nvml=None) -> DeviceTarget``: the NVML handles behind it, through
  ``nvmlDeviceGetHandleByUUID`` and the boards' MIG device handles. On a MIG slice, memory is read
  from the slice, clocks, temperature and clock-event reasons from its board, and the board's
  utilization, power and energy are *not recorded* (they are shared with the other slices; never the
  whole board's power for one slice). ``device_attribution_note`` (also said by ``warn_once`` and
  the sampler, once per process) is the one line about what cannot be attributed; the summary
  carries it as ``attribution`` with ``not_attributed``.
- ``summarize_timeline(rows)``, ``energy_j(rows)``, ``decode_throttle_reasons(mask)``: pure helpers.

Units: utilization in percent, memory in bytes, power in W (NVML reports mW), clocks in MHz,
temperature in degrees C, the energy counter in mJ (NVML's unit; the summary gives joules), ``t`` in
seconds since ``start()``.

Interval
--------
Default 100 ms; floor 10 ms (``MIN_INTERVAL_S``; a smaller request is raised to it with a warning).
NVML's utilization counters are averaged by the driver over a sample period of 1/6 s to 1 s depending
on the product, and board power on recent GPUs is a 1 s running average, so samples faster than ~100 ms
re-read strongly correlated values; below 10 ms they carry no new information at all while the
sampler's own cost (a handful of driver calls, each a few to tens of microseconds) keeps growing.

Cost on the measured thread
---------------------------
All NVML calls happen on the sampler's daemon thread, which sleeps in ``Event.wait``. The measured
thread only starts the thread (waiting for the first sample, before warmup) and stops it (after the
last sync); it holds no lock the sampler takes. The samples list is appended by the sampler thread
only and read after it has been joined.

What remains is the GIL: pynvml calls the driver through ctypes, which releases and retakes the GIL
around each of the 8 queries of a tick, so a tick costs the measured thread up to ~9 GIL handoffs
(each a few microseconds on an idle machine, up to a scheduler time slice on an oversubscribed one).
``scripts/telemetry_overhead.py`` measures it: at the 100 ms default it is within noise; at 10 ms it
can exceed 1% on a loaded machine, hence 100 ms as the default.

Errors
------
A metric that raises ``NVMLError_NotSupported`` is recorded as ``None`` and not queried again (listed
in ``summary()["unsupported"]``). Any other error (an ``NVMLError`` or anything else) in the sampler
thread is caught, counted and listed in ``summary()["errors"]``; it never reaches the benchmark.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import statistics
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_INTERVAL_S = 0.1
MIN_INTERVAL_S = 0.01
UNAVAILABLE_PREFIX = "GPU telemetry unavailable: "
MAX_ERRORS_LISTED = 10

# Clock event ("throttle") reason bits, identical to nvmlClocksEventReason* / nvmlClocksThrottleReason*.
THROTTLE_REASON_BITS: dict[int, str] = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}
# The reasons that mean the GPU ran slower than it could for the work it had (not idle, not a user
# setting): a case that saw one of these is marked `throttled`.
PERFORMANCE_THROTTLE_REASONS = frozenset(
    {
        "sw_power_cap",
        "hw_slowdown",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
        "hw_power_brake_slowdown",
        "board_limit",
        "reliability",
    }
)
# Newer name first; the *ThrottleReasons entry point is deprecated but is all that older drivers have.
_THROTTLE_FNS = ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0

_status_lock = threading.Lock()
_status_by_module: weakref.WeakKeyDictionary[Any, tuple[bool, str]] = weakref.WeakKeyDictionary()
_warned_modules: weakref.WeakSet[Any] = weakref.WeakSet()
_import_failure: dict[str, Any] = {}


def nvml_device_index(cuda_index: int = 0, environ: Mapping[str, str] | None = None) -> int | str | None:
    """Which device NVML should sample for CUDA device `cuda_index` (NVML ignores CUDA_VISIBLE_DEVICES;
    CUDA does not): NVML's index (int) for an index entry, the entry itself (str) for a device named by
    UUID (``GPU-...``) or MIG instance (``MIG-...``, ``MIG-GPU-<uuid>/<gi>/<ci>``), which `NvmlSampler`
    resolves through NVML (`resolve_device`). None when CUDA_VISIBLE_DEVICES lists fewer devices.
    Index entries assume CUDA_DEVICE_ORDER=PCI_BUS_ID where it matters.
    """
    visible = (os.environ if environ is None else environ).get("CUDA_VISIBLE_DEVICES")
    if visible is None or not visible.strip():
        return cuda_index
    entries = []
    for entry in (e.strip() for e in visible.split(",")):
        if not (entry.isdigit() or entry.startswith(("GPU-", "MIG-"))):
            break  # CUDA ignores a bad entry and every entry after it
        entries.append(entry)
    if cuda_index >= len(entries):
        return None
    entry = entries[cuda_index]
    return int(entry) if entry.isdigit() else entry


# Readings that belong to the whole board: on a MIG slice they are not the case's, and are not recorded.
BOARD_SHARED_METRICS = ("utilization", "power", "energy")


class DeviceNotFound(LookupError):
    """The CUDA device cannot be matched to an NVML device (the reason is the message)."""


@dataclass
class DeviceTarget:
    """What the sampler reads for one CUDA device: `handle` (memory; everything on a whole GPU) and
    `board` (the physical GPU: clocks, temperature, clock-event reasons). On a MIG slice the board's
    utilization, power and energy are shared with the other slices and are not recorded
    (`not_attributed`); `note` says so in one line."""

    handle: Any
    board: Any
    label: str
    uuid: str | None = None
    mig: bool = False
    not_attributed: tuple[str, ...] = ()
    note: str | None = None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _uuid(nv, handle) -> str | None:
    try:
        return _text(nv.nvmlDeviceGetUUID(handle))
    except Exception:
        return None


def _mig_on(nv, board) -> bool:
    fn = getattr(nv, "nvmlDeviceGetMigMode", None)
    if fn is None:
        return False
    try:
        current = fn(board)[0]
    except Exception:  # NotSupported: not a MIG-capable GPU
        return False
    return int(current) == int(getattr(nv, "NVML_DEVICE_MIG_ENABLE", 1))


def _mig_devices(nv, board) -> list[Any]:
    """The MIG device handles of `board` (empty where MIG is off or the driver has no MIG calls)."""
    if not _mig_on(nv, board):
        return []
    try:
        slots = int(nv.nvmlDeviceGetMaxMigDeviceCount(board))
    except Exception:
        return []
    handles = []
    for slot in range(slots):
        try:
            handles.append(nv.nvmlDeviceGetMigDeviceHandleByIndex(board, slot))
        except Exception:  # NotFound: an empty slot
            continue
    return handles


def _boards(nv) -> list[tuple[int, Any]]:
    out = []
    for index in range(int(nv.nvmlDeviceGetCount())):
        with contextlib.suppress(Exception):
            out.append((index, nv.nvmlDeviceGetHandleByIndex(index)))
    return out


def _board_index(nv, board) -> int | None:
    try:
        return int(nv.nvmlDeviceGetIndex(board))
    except Exception:
        return None


def _whole_gpu(nv, board, index: int | None, uuid: str | None) -> DeviceTarget:
    return DeviceTarget(handle=board, board=board, label=f"GPU {index}", uuid=uuid)


def _mig_target(nv, mig, board, index: int | None, uuid: str | None) -> DeviceTarget:
    ids = []
    for name in ("nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId"):
        with contextlib.suppress(Exception):
            ids.append(str(int(getattr(nv, name)(mig))))
    label = f"MIG {'/'.join(ids) or '?'} on GPU {index}"
    note = (
        f"GPU telemetry on {label} ({uuid}): utilization, power and energy are the whole board's, shared "
        "with its other MIG slices, and are not recorded for the case; memory is the slice's, clocks, "
        "temperature and throttling the board's"
    )
    return DeviceTarget(
        handle=mig,
        board=board,
        label=label,
        uuid=uuid,
        mig=True,
        not_attributed=BOARD_SHARED_METRICS,
        note=note,
    )


def _unattributable_mig_board(nv, board, index: int, count: int) -> DeviceTarget:
    """A MIG-enabled board named by index: which of its `count` slices this process uses is unknown."""
    note = (
        f"GPU telemetry on GPU {index}: MIG is on with {count} slices and CUDA_VISIBLE_DEVICES names the "
        "board, not a slice (use its MIG-... UUID), so utilization, power, energy and memory cannot be "
        "attributed and are not recorded; clocks, temperature and throttling are the board's"
    )
    return DeviceTarget(
        handle=None,
        board=board,
        label=f"GPU {index} (MIG)",
        uuid=_uuid(nv, board),
        mig=True,
        not_attributed=(*BOARD_SHARED_METRICS, "memory"),
        note=note,
    )


def _by_uuid(nv, wanted: str, candidates) -> Any | None:
    """The one candidate handle whose UUID is `wanted` or starts with it (CUDA accepts a unique prefix)."""
    exact = [h for h, u in candidates if u == wanted]
    if exact:
        return exact[0]
    prefixed = [h for h, u in candidates if u and u.startswith(wanted)]
    if len(prefixed) > 1:
        raise DeviceNotFound(f"{wanted} matches {len(prefixed)} NVML devices (CUDA needs a unique prefix)")
    return prefixed[0] if prefixed else None


def resolve_device(device: int | str, nvml=None) -> DeviceTarget:
    """The NVML device(s) behind a CUDA device given as NVML index, ``GPU-<uuid>`` (or a unique prefix),
    ``MIG-<uuid>`` or ``MIG-GPU-<uuid>/<gi>/<ci>``; raises DeviceNotFound with the reason.

    UUIDs go through ``nvmlDeviceGetHandleByUUID`` first, then through every board's UUID and MIG
    device handles (older drivers do not look MIG UUIDs up, and CUDA accepts unique prefixes). A
    board in MIG mode named by index stands for one of its slices: the one slice if there is one,
    otherwise nothing shared is attributed.
    """
    nv = _resolve(nvml)
    if isinstance(device, int) or (isinstance(device, str) and device.isdigit()):
        index = int(device)
        try:
            board = nv.nvmlDeviceGetHandleByIndex(index)
        except Exception as exc:
            raise DeviceNotFound(f"GPU {index} not available to NVML ({_error_text(exc)})") from None
        slices = _mig_devices(nv, board)
        if len(slices) == 1:
            return _mig_target(nv, slices[0], board, index, _uuid(nv, slices[0]))
        if slices or _mig_on(nv, board):
            return _unattributable_mig_board(nv, board, index, len(slices))
        return _whole_gpu(nv, board, index, _uuid(nv, board))
    wanted = str(device)
    legacy_mig = wanted.startswith("MIG-GPU-")
    lookup_error = None
    if not legacy_mig:
        try:
            handle = nv.nvmlDeviceGetHandleByUUID(wanted)
        except Exception as exc:
            lookup_error, handle = _error_text(exc), None
        if handle is not None:
            return _target_of(nv, handle, wanted)
    boards = _boards(nv)
    if legacy_mig:  # MIG-GPU-<board uuid>/<gpu instance>/<compute instance> (drivers before R470)
        board_uuid, _, ids = wanted[len("MIG-") :].partition("/")
        for index, board in boards:
            if _uuid(nv, board) != board_uuid:
                continue
            for mig in _mig_devices(nv, board):
                gi_ci = []
                for name in ("nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId"):
                    with contextlib.suppress(Exception):
                        gi_ci.append(str(int(getattr(nv, name)(mig))))
                if "/".join(gi_ci) == ids:
                    return _mig_target(nv, mig, board, index, wanted)
        raise DeviceNotFound(f"{wanted}: no such MIG instance among NVML's {len(boards)} GPU(s)")
    if wanted.startswith("MIG-"):
        candidates = [
            ((index, board, mig), _uuid(nv, mig))
            for index, board in boards
            for mig in _mig_devices(nv, board)
        ]
        found = _by_uuid(nv, wanted, candidates)
        if found is not None:
            index, board, mig = found
            return _mig_target(nv, mig, board, index, _uuid(nv, mig))
    else:
        found = _by_uuid(nv, wanted, [((index, board), _uuid(nv, board)) for index, board in boards])
        if found is not None:
            return _target_of(nv, found[1], wanted)
    reason = f" (nvmlDeviceGetHandleByUUID: {lookup_error})" if lookup_error else ""
    raise DeviceNotFound(f"{wanted}: not found among NVML's devices{reason}")


def _target_of(nv, handle, wanted: str) -> DeviceTarget:
    """A target for a handle NVML gave for a UUID: a MIG device or a whole board."""
    is_mig = False
    fn = getattr(nv, "nvmlDeviceIsMigDeviceHandle", None)
    if fn is not None:
        with contextlib.suppress(Exception):
            value = fn(handle)
            is_mig = bool(int(getattr(value, "value", value)))
    if is_mig:
        try:
            board = nv.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(handle)
        except Exception as exc:
            raise DeviceNotFound(f"{wanted}: MIG device without a parent GPU ({_error_text(exc)})") from None
        return _mig_target(nv, handle, board, _board_index(nv, board), _uuid(nv, handle) or wanted)
    index = _board_index(nv, handle)
    slices = _mig_devices(nv, handle)
    if len(slices) == 1:
        return _mig_target(nv, slices[0], handle, index, _uuid(nv, slices[0]))
    if slices or _mig_on(nv, handle):
        return _unattributable_mig_board(nv, handle, index if index is not None else -1, len(slices))
    return _whole_gpu(nv, handle, index, _uuid(nv, handle) or wanted)


def decode_throttle_reasons(mask: int | None) -> list[str]:
    """Names of the bits set in an NVML clock-event (throttle) reason bitmask."""
    if not mask:
        return []
    names = [name for bit, name in THROTTLE_REASON_BITS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_REASON_BITS)
    if unknown:
        names.append(f"unknown_0x{unknown:x}")
    return names


def _import_pynvml():
    """The real nvidia-ml-py module, imported on first use."""
    return importlib.import_module("pynvml")


def _resolve(nvml):
    """The NVML module to use: the injected one, else pynvml. Raises ImportError when missing."""
    return nvml if nvml is not None else _import_pynvml()


def _error_text(exc: BaseException) -> str:
    """'message (ExceptionType)': NVML's messages alone ('Unknown Error') do not say what failed."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:  # an NVMLError whose code has no message and no library to ask
        text = ""
    return f"{text} ({name})" if text and text != name else name


def _try_init(module) -> tuple[bool, str]:
    """Call nvmlInit once and describe the outcome."""
    try:
        module.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return False, f"nvmlInit failed: {_error_text(exc)}"
    atexit.register(_shutdown_quietly, module)
    try:
        count = int(module.nvmlDeviceGetCount())
    except Exception as exc:
        return False, f"nvmlDeviceGetCount failed: {_error_text(exc)}"
    if count < 1:
        return False, "NVML reports no GPU"
    driver = "unknown"
    with contextlib.suppress(Exception):
        driver = str(module.nvmlSystemGetDriverVersion())
    return True, f"NVML ok: driver {driver}, {count} GPU(s)"


def _shutdown_quietly(module) -> None:
    with contextlib.suppress(Exception):
        module.nvmlShutdown()


def nvml_status(nvml=None) -> tuple[bool, str]:
    """(available, reason): whether NVML can be used, trying nvmlInit once per process and module."""
    with _status_lock:
        try:
            module = _resolve(nvml)
        except ImportError as exc:
            _import_failure.setdefault("reason", f"nvidia-ml-py (pynvml) is not importable: {exc}")
            return False, _import_failure["reason"]
        if module not in _status_by_module:
            _status_by_module[module] = _try_init(module)
        return _status_by_module[module]


def _default_emit(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def warn_once(nvml=None, emit: Callable[[str], None] | None = None, *, device_note: bool = True) -> bool:
    """Report, once per process (and module), that GPU telemetry is unavailable; return availability.

    With NVML available and `device_note`, say in one line (once) when CUDA device 0 cannot be
    attributed: a UUID or MIG id NVML does not know, or a MIG slice whose board-wide readings are not
    recorded (`device_attribution_note`)."""
    available, reason = nvml_status(nvml)
    if available:
        if device_note:
            device_attribution_note(0, nvml=nvml, emit=emit)
        return True
    with _status_lock:
        first = _first_warning(nvml)
    if first:
        (emit or _default_emit)(UNAVAILABLE_PREFIX + reason)
    return False


def device_attribution_note(
    cuda_index: int = 0,
    nvml=None,
    emit: Callable[[str], None] | None = None,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """The one line about CUDA device `cuda_index`'s telemetry that cannot be attributed to a case
    (emitted once per process), or None when NVML sees that device whole."""
    device = nvml_device_index(cuda_index, environ)
    if device is None:
        line = (
            f"GPU telemetry not attributed to the case: CUDA device {cuda_index} is not in "
            f"CUDA_VISIBLE_DEVICES={(os.environ if environ is None else environ).get('CUDA_VISIBLE_DEVICES')!r}"
        )
    else:
        try:
            line = resolve_device(device, nvml).note
        except DeviceNotFound as exc:
            line = f"GPU telemetry not attributed to the case: {exc}"
        except Exception as exc:  # a broken driver: the sampler will say what it can
            line = f"GPU telemetry not attributed to the case: {_error_text(exc)}"
    if line:
        _say_once(line, emit)
    return line


def _first_warning(nvml) -> bool:
    """True the first time it is asked about this module (or about pynvml failing to import)."""
    try:
        module = _resolve(nvml)
    except ImportError:
        first = not _import_failure.get("warned")
        _import_failure["warned"] = True
        return first
    if module in _warned_modules:
        return False
    _warned_modules.add(module)
    return True


_said: set[str] = set()


def _say_once(line: str, emit: Callable[[str], None] | None = None) -> None:
    """Emit `line` once per process (the same device note is not repeated for every case)."""
    with _status_lock:
        if line in _said:
            return
        _said.add(line)
    (emit or _default_emit)(line)


def reset_status() -> None:
    """Forget cached init results and warnings (for tests)."""
    with _status_lock:
        _status_by_module.clear()
        _warned_modules.clear()
        _import_failure.clear()
        _said.clear()


def _is_nvml_error(module, exc: BaseException, code: int) -> bool:
    base = getattr(module, "NVMLError", None)
    return base is not None and isinstance(exc, base) and getattr(exc, "value", None) == code


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _present(rows: list[dict[str, Any]], key: str) -> list[Any]:
    return [row[key] for row in rows if row.get(key) is not None]


def integrate_power_j(rows: list[dict[str, Any]]) -> float | None:
    """Energy in joules by the trapezoid rule over (t, power_w); None with fewer than two readings."""
    points = [(row["t"], row["power_w"]) for row in rows if row.get("power_w") is not None]
    if len(points) < 2:
        return None
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(points, points[1:], strict=False))


def energy_j(rows: list[dict[str, Any]]) -> tuple[float | None, str | None]:
    """(joules, source): the energy counter's delta when it was read, else integrated power."""
    counter = _present(rows, "energy_mj")
    if len(counter) >= 2 and counter[-1] >= counter[0]:
        return (counter[-1] - counter[0]) / 1000.0, "counter"
    integrated = integrate_power_j(rows)
    return (integrated, "integrated_power") if integrated is not None else (None, None)


def summarize_timeline(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-result summary of a timeline (pure; see NvmlSampler.summary for the other fields)."""
    gpu = _present(rows, "gpu_util")
    mem = _present(rows, "mem_util")
    power = _present(rows, "power_w")
    sm = _present(rows, "sm_clock_mhz")
    temp = _present(rows, "temperature_c")
    used = _present(rows, "mem_used_bytes")
    reasons = sorted({name for row in rows for name in row.get("throttle_reasons") or []})
    energy, source = energy_j(rows)
    return {
        "samples": len(rows),
        "gpu_util_mean": _mean(gpu),
        "gpu_util_max": max(gpu, default=None),
        "mem_util_mean": _mean(mem),
        "mem_util_max": max(mem, default=None),
        "mem_used_max_bytes": max(used, default=None),
        "power_mean_w": _mean(power),
        "power_max_w": max(power, default=None),
        "energy_j": energy,
        "energy_source": source,
        "sm_clock_min_mhz": min(sm, default=None),
        "sm_clock_max_mhz": max(sm, default=None),
        "temperature_max_c": max(temp, default=None),
        "throttled": any(name in PERFORMANCE_THROTTLE_REASONS for name in reasons),
        "throttle_reasons": reasons,
    }


class NvmlSampler:
    """Samples one GPU through NVML on a daemon thread between start() and stop()."""

    def __init__(
        self,
        device_index: int | str = 0,
        interval: float = DEFAULT_INTERVAL_S,
        nvml=None,
        emit: Callable[[str], None] | None = None,
    ) -> None:
        # NVML's index, or a GPU-/MIG- identifier from CUDA_VISIBLE_DEVICES (`nvml_device_index`).
        self.device_index: int | str = (
            int(device_index) if not isinstance(device_index, str) or device_index.isdigit() else device_index
        )
        self.target: DeviceTarget | None = None
        self.interval = self._checked_interval(interval)
        self._nvml_arg = nvml
        self._emit = emit
        self._nv = None
        self._handle = None
        self._device_name: str | None = None
        self._thread: threading.Thread | None = None
        self._stop_event = threading.Event()
        self._first_sample = threading.Event()
        self._rows: list[dict[str, Any]] = []
        self._unsupported: set[str] = set()
        self._errors: dict[str, int] = {}
        self._error_count = 0
        self._throttle_fn_name: str | None = None
        self._t0 = 0.0
        self._duration: float | None = None
        self.available = False
        self.reason: str | None = None

    @staticmethod
    def _checked_interval(interval: float) -> float:
        interval = float(interval)
        if interval < MIN_INTERVAL_S:
            warnings.warn(
                f"NVML sampling interval {interval * 1000:g} ms is below the {MIN_INTERVAL_S * 1000:g} ms "
                f"floor (the driver averages these counters over longer windows); using the floor",
                stacklevel=3,
            )
            return MIN_INTERVAL_S
        return interval

    # -- lifecycle (called on the measured thread, outside the timed region) --------------------------

    def start(self) -> NvmlSampler:
        """Start sampling; returns self. Without NVML it reports once and does nothing."""
        if self._thread is not None:
            raise RuntimeError("NvmlSampler already started")
        if not warn_once(self._nvml_arg, emit=self._emit, device_note=False):
            self.reason = nvml_status(self._nvml_arg)[1]
            return self
        if not self._open_device():
            return self
        self.available = True
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
        self._thread.start()
        self._first_sample.wait(timeout=max(1.0, 10 * self.interval))
        return self

    def stop(self) -> None:
        """Take a last sample and end the thread. Safe to call twice, or without start()."""
        thread = self._thread
        if thread is None or self._stop_event.is_set():
            return
        self._stop_event.set()
        thread.join(timeout=max(2.0, 5 * self.interval))
        self._duration = time.perf_counter() - self._t0
        if thread.is_alive():
            self._record_error("stop", RuntimeError("sampler thread did not stop in time (NVML call hung?)"))

    def __enter__(self) -> NvmlSampler:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _open_device(self) -> bool:
        self._nv = _resolve(self._nvml_arg)
        try:
            self.target = resolve_device(self.device_index, self._nv)
        except DeviceNotFound as exc:
            self.reason = str(exc)
            _say_once(f"GPU telemetry not attributed to the case: {exc}", self._emit)
            return False
        self._handle = self.target.handle if self.target.handle is not None else self.target.board
        if self.target.note:
            _say_once(self.target.note, self._emit)
        with contextlib.suppress(Exception):
            self._device_name = _text(self._nv.nvmlDeviceGetName(self._handle))
        self._throttle_fn_name = self._pick_throttle_fn()
        return True

    def _pick_throttle_fn(self) -> str | None:
        return next((name for name in _THROTTLE_FNS if callable(getattr(self._nv, name, None))), None)

    # -- the sampler thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        next_at = time.perf_counter()
        while True:
            self._sample_safely()
            self._first_sample.set()
            now = time.perf_counter()
            next_at = max(next_at + self.interval, now)  # late (starved thread): skip, don't burst
            if self._stop_event.wait(next_at - now):
                self._sample_safely()  # the closing sample, after the last synchronize
                return

    def _sample_safely(self) -> None:
        try:
            self._rows.append(self._sample())
        except Exception as exc:  # never let the thread die
            self._record_error("sample", exc)

    def _sample(self) -> dict[str, Any]:
        nv, h = self._nv, self._handle
        board = self.target.board if self.target is not None else h  # clocks, temperature, throttling
        t = time.perf_counter() - self._t0
        util = self._read("utilization", lambda: nv.nvmlDeviceGetUtilizationRates(h))
        mem = self._read("memory", lambda: nv.nvmlDeviceGetMemoryInfo(h))
        power = self._read("power", lambda: nv.nvmlDeviceGetPowerUsage(h))
        mask = self._read_throttle_mask(board)
        return {
            "t": t,
            "gpu_util": getattr(util, "gpu", None),
            "mem_util": getattr(util, "memory", None),
            "mem_used_bytes": getattr(mem, "used", None),
            "power_w": power / 1000.0 if power is not None else None,
            "sm_clock_mhz": self._read("sm_clock", lambda: nv.nvmlDeviceGetClockInfo(board, NVML_CLOCK_SM)),
            "mem_clock_mhz": self._read(
                "mem_clock", lambda: nv.nvmlDeviceGetClockInfo(board, NVML_CLOCK_MEM)
            ),
            "temperature_c": self._read(
                "temperature", lambda: nv.nvmlDeviceGetTemperature(board, NVML_TEMPERATURE_GPU)
            ),
            "throttle_mask": mask,
            "throttle_reasons": decode_throttle_reasons(mask),
            "energy_mj": self._read("energy", lambda: nv.nvmlDeviceGetTotalEnergyConsumption(h)),
        }

    def _read(self, metric: str, call: Callable[[], Any]) -> Any:
        """One metric, or None when it is not supported, not the case's (MIG), or failed this time."""
        if metric in self._unsupported or (self.target is not None and metric in self.target.not_attributed):
            return None
        try:
            return call()
        except Exception as exc:
            self._read_failed(metric, exc)
            return None

    def _read_failed(self, metric: str, exc: BaseException) -> None:
        if _is_nvml_error(self._nv, exc, NVML_ERROR_NOT_SUPPORTED):
            self._unsupported.add(metric)
        else:
            self._record_error(metric, exc)

    def _read_throttle_mask(self, handle=None) -> int | None:
        """The clock event reasons bitmask; falls back to the legacy entry point on older drivers."""
        handle = self._handle if handle is None else handle
        name = self._throttle_fn_name
        if name is None:
            self._unsupported.add("throttle_reasons")
        if name is None or "throttle_reasons" in self._unsupported:
            return None
        try:
            return getattr(self._nv, name)(handle)
        except Exception as exc:
            legacy = _THROTTLE_FNS[-1]
            missing = _is_nvml_error(self._nv, exc, NVML_ERROR_FUNCTION_NOT_FOUND)
            if missing and name != legacy and callable(getattr(self._nv, legacy, None)):
                self._throttle_fn_name = legacy
                return self._read_throttle_mask(handle)
            self._read_failed("throttle_reasons", exc)
            return None

    def _record_error(self, where: str, exc: BaseException) -> None:
        self._error_count += 1
        key = f"{where}: {_error_text(exc)}"
        if key in self._errors or len(self._errors) < MAX_ERRORS_LISTED:
            self._errors[key] = self._errors.get(key, 0) + 1

    # -- results (read after stop()) -------------------------------------------------------------------

    def timeline(self) -> list[dict[str, Any]]:
        """Every sample: t (s since start) and each metric (None where unsupported or failed)."""
        return [dict(row, throttle_reasons=list(row["throttle_reasons"])) for row in list(self._rows)]

    def summary(self) -> dict[str, Any]:
        """Means, maxima, energy, clocks, throttling, sample count, duration, errors."""
        if not self.available:
            return {"available": False, "reason": self.reason, "device_index": self.device_index}
        rows = list(self._rows)
        summary = {"available": True, "device_index": self.device_index, "device_name": self._device_name}
        target = self.target
        if target is not None:
            summary.update(
                device=target.label,
                uuid=target.uuid,
                mig=target.mig,
                not_attributed=list(target.not_attributed),
                attribution=target.note,
            )
        summary.update(summarize_timeline(rows))
        duration = self._duration if self._duration is not None else time.perf_counter() - self._t0
        summary.update(
            duration_s=duration,
            interval_s=self.interval,
            unsupported=sorted(self._unsupported),
            errors=[f"{key} (x{count})" if count > 1 else key for key, count in self._errors.items()],
            error_count=self._error_count,
        )
        return summary

    def telemetry(self) -> dict[str, Any] | None:
        """What CaseResult.telemetry holds: {"summary": ..., "timeline": [...]}, or None without NVML."""
        if not self.available:
            return None
        return {"summary": self.summary(), "timeline": self.timeline()}
