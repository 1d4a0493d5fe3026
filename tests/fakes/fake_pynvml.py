"""A fake of nvidia-ml-py's ``pynvml`` module with scripted behaviour.

It has the names, constants, return types, units and error classes of the real module (checked
against nvidia-ml-py 13.x) for the functions the harness uses:

    nvmlInit, nvmlShutdown, nvmlSystemGetDriverVersion, nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex,
    nvmlDeviceGetName, nvmlDeviceGetUtilizationRates (.gpu/.memory, %), nvmlDeviceGetMemoryInfo
    (.total/.free/.used, bytes), nvmlDeviceGetPowerUsage (mW), nvmlDeviceGetClockInfo (MHz),
    nvmlDeviceGetTemperature (C), nvmlDeviceGetCurrentClocksEventReasons and the deprecated
    nvmlDeviceGetCurrentClocksThrottleReasons (bitmask), nvmlDeviceGetTotalEnergyConsumption (mJ),
    and the device mapping: nvmlDeviceGetHandleByUUID, nvmlDeviceGetUUID, nvmlDeviceGetIndex,
    nvmlDeviceGetMigMode, nvmlDeviceIsMigDeviceHandle, nvmlDeviceGetMaxMigDeviceCount,
    nvmlDeviceGetMigDeviceHandleByIndex, nvmlDeviceGetDeviceHandleFromMigDeviceHandle,
    nvmlDeviceGetGpuInstanceId, nvmlDeviceGetComputeInstanceId (parameter names checked against the
    installed nvidia-ml-py by tests/test_telemetry.py).

MIG: a board listed in ``mig`` has MIG mode on and one MIG device per (GPU instance, compute
instance) pair. A MIG device handle answers the memory query (the slice's memory) and raises
NVMLError_NotSupported for utilization, power, energy, clocks, temperature and clock-event reasons,
which are the board's. Every device query is logged in ``handle_calls`` as (metric, "gpu0" | "mig0/1").

``FakeNvml(**script)`` is one fake driver; pass it where the real module would go
(``NvmlSampler(nvml=FakeNvml(...))``). The module itself also works as a stand-in for ``pynvml``: its
functions go to a default ``FakeNvml`` that ``configure(**script)`` replaces.

Scripted values are indexed by how many times that function has been called on the device (each
sampler tick calls each function once, so the index is the sample number); sequences repeat cyclically.
"""

from __future__ import annotations

import string
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

# -- constants (same values as pynvml) ---------------------------------------------------------------
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_CLOCK_VIDEO = 3

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_ALREADY_INITIALIZED = 5
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNKNOWN = 999

nvmlClocksEventReasonNone = 0x0
nvmlClocksEventReasonGpuIdle = 0x1
nvmlClocksEventReasonApplicationsClocksSetting = 0x2
nvmlClocksEventReasonSwPowerCap = 0x4
nvmlClocksEventReasonHwSlowdown = 0x8
nvmlClocksEventReasonSyncBoost = 0x10
nvmlClocksEventReasonSwThermalSlowdown = 0x20
nvmlClocksEventReasonHwThermalSlowdown = 0x40
nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x80
nvmlClocksEventReasonDisplayClockSetting = 0x100
nvmlClocksThrottleReasonNone = nvmlClocksEventReasonNone
nvmlClocksThrottleReasonGpuIdle = nvmlClocksEventReasonGpuIdle
nvmlClocksThrottleReasonApplicationsClocksSetting = nvmlClocksEventReasonApplicationsClocksSetting
nvmlClocksThrottleReasonSwPowerCap = nvmlClocksEventReasonSwPowerCap
nvmlClocksThrottleReasonHwSlowdown = nvmlClocksEventReasonHwSlowdown
nvmlClocksThrottleReasonSyncBoost = nvmlClocksEventReasonSyncBoost
nvmlClocksThrottleReasonSwThermalSlowdown = nvmlClocksEventReasonSwThermalSlowdown
nvmlClocksThrottleReasonHwThermalSlowdown = nvmlClocksEventReasonHwThermalSlowdown
nvmlClocksThrottleReasonHwPowerBrakeSlowdown = nvmlClocksEventReasonHwPowerBrakeSlowdown
nvmlClocksThrottleReasonDisplayClockSetting = nvmlClocksEventReasonDisplayClockSetting
nvmlClocksThrottleReasonBoardLimit = 0x200
nvmlClocksThrottleReasonReliability = 0x400

# -- errors: NVMLError(value) maps to the subclass for that value, as in pynvml -----------------------
_MESSAGES = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_ALREADY_INITIALIZED: "Already Initialized",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_TIMEOUT: "Timeout",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


class NVMLError(Exception):
    _valClassMapping: dict[int, type] = {}

    def __new__(cls, value):
        if cls is NVMLError:
            cls = NVMLError._valClassMapping.get(value, cls)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __str__(self):
        return _MESSAGES.get(self.value, f"NVML Error with code {self.value}")

    def __eq__(self, other):
        return isinstance(other, NVMLError) and self.value == other.value

    __hash__ = Exception.__hash__


def _make_error_classes() -> None:
    """NVML_ERROR_GPU_IS_LOST -> NVMLError_GpuIsLost, exactly pynvml's naming rule."""
    for const, value in list(globals().items()):
        if not const.startswith("NVML_ERROR_"):
            continue
        name = "NVMLError_" + string.capwords(const.replace("NVML_ERROR_", ""), "_").replace("_", "")

        def new(cls, *args, _value=value):
            return NVMLError.__new__(cls, _value)

        cls = type(name, (NVMLError,), {"__new__": new, "__module__": __name__})
        globals()[name] = cls
        NVMLError._valClassMapping[value] = cls


_make_error_classes()
NVMLError_Uninitialized: type[NVMLError]
NVMLError_NotSupported: type[NVMLError]
NVMLError_LibraryNotFound: type[NVMLError]
NVMLError_Unknown: type[NVMLError]


# -- return types ------------------------------------------------------------------------------------
class c_nvmlUtilization_t:  # the real ctypes structure's name
    def __init__(self, gpu: int, memory: int) -> None:
        self.gpu = gpu
        self.memory = memory


class c_nvmlMemory_t:
    def __init__(self, total: int, used: int) -> None:
        self.total = total
        self.used = used
        self.free = total - used


class _Handle:
    def __init__(self, index: int) -> None:
        self.index = index

    @property
    def label(self) -> str:
        return f"gpu{self.index}"


class _MigHandle(_Handle):
    """A MIG device: slot `slot` of board `index` (GPU instance `gi`, compute instance `ci`)."""

    def __init__(self, index: int, slot: int, gi: int, ci: int) -> None:
        super().__init__(index)
        self.slot, self.gi, self.ci = slot, gi, ci

    @property
    def label(self) -> str:
        return f"mig{self.index}/{self.slot}"


NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1
MAX_MIG_DEVICES = 7


def board_uuid(index: int) -> str:
    return f"GPU-{index:08x}-1111-2222-3333-444455556666"


def mig_uuid(index: int, slot: int) -> str:
    return f"MIG-{index:04x}{slot:04x}-aaaa-bbbb-cccc-ddddeeeeffff"


def _cycle(value) -> Sequence:
    return list(value) if isinstance(value, Iterable) and not isinstance(value, str | bytes) else [value]


GiB = 1 << 30

# Metric names, as used by `unsupported` and `fail_at`, and the function behind each.
METRIC_FUNCTIONS = {
    "utilization": "nvmlDeviceGetUtilizationRates",
    "memory": "nvmlDeviceGetMemoryInfo",
    "power": "nvmlDeviceGetPowerUsage",
    "clock": "nvmlDeviceGetClockInfo",
    "temperature": "nvmlDeviceGetTemperature",
    "throttle": "nvmlDeviceGetCurrentClocksEventReasons",
    "energy": "nvmlDeviceGetTotalEnergyConsumption",
}


class FakeNvml:
    """One fake NVML library with one or more GPUs and scripted readings.

    Script (all optional):
      library_missing: nvmlInit raises NVMLError_LibraryNotFound (no driver installed).
      init_error: an NVML error code nvmlInit raises instead (e.g. NVML_ERROR_DRIVER_NOT_LOADED).
      device_count, name, driver_version, memory_total.
      gpu_util, mem_util (%), mem_used (bytes), power_mw, sm_clock, mem_clock (MHz), temperature (C):
        a value or a sequence indexed by call number (cyclic).
      throttle_window: (first, stop) call numbers during which `throttle_mask` is reported;
        `idle_mask` outside it (default 0).
      energy_start_mj, energy_step_mj: the energy counter starts there and grows by step per call.
      unsupported: metric names (see METRIC_FUNCTIONS) that raise NVMLError_NotSupported.
      fail_at: {metric: call numbers} at which the call raises `fail_error()`
        (default NVMLError(NVML_ERROR_UNKNOWN)); fail_error may build any exception.
      missing_functions: function names absent from this "module" (an older nvidia-ml-py).
      call_delay_s: time each device query takes (the real driver: tens of microseconds).
      uuids: the boards' UUIDs (default `board_uuid(i)`).
      mig: {board index: [(gpu instance id, compute instance id), ...]}: MIG mode on for those
        boards, one MIG device per pair (UUID `mig_uuid(board, slot)`), memory `mig_memory_total`.
      mig_uuid_lookup: whether nvmlDeviceGetHandleByUUID finds MIG UUIDs (older drivers: no).
    """

    def __new__(cls, *, missing_functions: Iterable[str] = (), **script):
        missing = frozenset(missing_functions)
        if missing:  # a subclass that hides them, so the common case pays nothing for the feature
            cls = type("FakeNvmlWithout", (_WithoutFunctions,), {"_missing": missing})
        return super().__new__(cls)

    def __init__(
        self,
        *,
        library_missing: bool = False,
        init_error: int | None = None,
        device_count: int = 1,
        name: str = "NVIDIA Fake GPU",
        driver_version: str = "550.54.15",
        memory_total: int = 80 * GiB,
        gpu_util=50,
        mem_util=20,
        mem_used=10 * GiB,
        power_mw=300_000,
        sm_clock=1980,
        mem_clock=2619,
        temperature=60,
        throttle_window: tuple[int, int] | None = None,
        throttle_mask: int = nvmlClocksEventReasonSwPowerCap,
        idle_mask: int = 0,
        energy_start_mj: int = 5_000_000,
        energy_step_mj: int = 30_000,
        unsupported: Iterable[str] = (),
        fail_at: dict[str, Iterable[int]] | None = None,
        fail_error: Callable[[], BaseException] | None = None,
        missing_functions: Iterable[str] = (),
        call_delay_s: float = 0.0,
        uuids: Sequence[str] | None = None,
        mig: dict[int, Sequence[tuple[int, int]]] | None = None,
        mig_uuid_lookup: bool = True,
        mig_memory_total: int = 10 * GiB,
    ) -> None:
        del missing_functions  # handled by __new__
        self.uuids = list(uuids) if uuids is not None else [board_uuid(i) for i in range(device_count)]
        self.mig = {int(k): list(v) for k, v in (mig or {}).items()}
        self.mig_uuid_lookup = mig_uuid_lookup
        self.mig_memory_total = mig_memory_total
        self.handle_calls: list[tuple[str, str]] = []
        self.library_missing = library_missing
        self.init_error = init_error
        self.device_count = device_count
        self.name = name
        self.driver_version = driver_version
        self.memory_total = memory_total
        self.series = {
            "gpu_util": _cycle(gpu_util),
            "mem_util": _cycle(mem_util),
            "mem_used": _cycle(mem_used),
            "power_mw": _cycle(power_mw),
            "sm_clock": _cycle(sm_clock),
            "mem_clock": _cycle(mem_clock),
            "temperature": _cycle(temperature),
        }
        self.throttle_window = throttle_window
        self.throttle_mask = throttle_mask
        self.idle_mask = idle_mask
        self.energy_start_mj = energy_start_mj
        self.energy_step_mj = energy_step_mj
        self.unsupported = frozenset(unsupported)
        self.fail_at = {metric: frozenset(calls) for metric, calls in (fail_at or {}).items()}
        self.fail_error = fail_error or (lambda: NVMLError(NVML_ERROR_UNKNOWN))
        self.call_delay_s = call_delay_s
        self.refcount = 0
        self.init_calls = 0
        self.calls: dict[str, int] = {}

    def __getattr__(self, attr: str) -> Any:
        """Constants and error classes come from the module, as on the real pynvml."""
        try:
            return globals()[attr]
        except KeyError:
            raise AttributeError(f"module 'pynvml' has no attribute '{attr}'") from None

    # -- library -------------------------------------------------------------------------------------

    def nvmlInit(self) -> None:
        self.init_calls += 1
        if self.library_missing:
            raise NVMLError(NVML_ERROR_LIBRARY_NOT_FOUND)
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.refcount += 1

    def nvmlShutdown(self) -> None:
        self._require_init()
        self.refcount -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._require_init()
        return self.driver_version

    def nvmlDeviceGetCount(self) -> int:
        self._require_init()
        return self.device_count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        self._require_init()
        if not 0 <= int(index) < self.device_count:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return _Handle(int(index))

    def nvmlDeviceGetName(self, handle) -> str:
        self._check(handle)
        return f"MIG {handle.gi}g slice of {self.name}" if isinstance(handle, _MigHandle) else self.name

    # -- device mapping (UUIDs, MIG) -----------------------------------------------------------------

    def nvmlDeviceGetHandleByUUID(self, uuid) -> _Handle:
        self._require_init()
        uuid = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
        if uuid in self.uuids:
            return _Handle(self.uuids.index(uuid))
        if self.mig_uuid_lookup:
            for board, slices in self.mig.items():
                for slot, (gi, ci) in enumerate(slices):
                    if mig_uuid(board, slot) == uuid:
                        return _MigHandle(board, slot, gi, ci)
        raise NVMLError(NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetUUID(self, handle) -> str:
        self._check(handle)
        if isinstance(handle, _MigHandle):
            return mig_uuid(handle.index, handle.slot)
        return self.uuids[handle.index]

    def nvmlDeviceGetIndex(self, handle) -> int:
        self._check(handle)
        return handle.index

    def nvmlDeviceGetMigMode(self, device) -> list[int]:
        self._check(device)
        if isinstance(device, _MigHandle):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        on = NVML_DEVICE_MIG_ENABLE if device.index in self.mig else NVML_DEVICE_MIG_DISABLE
        return [on, on]

    def nvmlDeviceIsMigDeviceHandle(self, device) -> int:
        self._check(device)
        return int(isinstance(device, _MigHandle))

    def nvmlDeviceGetMaxMigDeviceCount(self, device) -> int:
        self._check(device)
        return MAX_MIG_DEVICES if device.index in self.mig else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device, index) -> _MigHandle:
        self._check(device)
        slices = self.mig.get(device.index)
        if slices is None or isinstance(device, _MigHandle):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        if not 0 <= int(index) < len(slices):
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        gi, ci = slices[int(index)]
        return _MigHandle(device.index, int(index), gi, ci)

    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, migDevice) -> _Handle:  # pynvml's name
        self._check(migDevice)
        if not isinstance(migDevice, _MigHandle):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return _Handle(migDevice.index)

    def nvmlDeviceGetGpuInstanceId(self, device) -> int:
        self._check(device)
        if not isinstance(device, _MigHandle):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return device.gi

    def nvmlDeviceGetComputeInstanceId(self, device) -> int:
        self._check(device)
        if not isinstance(device, _MigHandle):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return device.ci

    # -- readings ------------------------------------------------------------------------------------

    def nvmlDeviceGetUtilizationRates(self, handle) -> c_nvmlUtilization_t:
        n = self._call("utilization", handle)
        return c_nvmlUtilization_t(int(self._at("gpu_util", n)), int(self._at("mem_util", n)))

    def nvmlDeviceGetMemoryInfo(self, handle, version=None) -> c_nvmlMemory_t:
        n = self._call("memory", handle)
        if isinstance(handle, _MigHandle):
            return c_nvmlMemory_t(self.mig_memory_total, int(self._at("mem_used", n)) // 8)
        return c_nvmlMemory_t(self.memory_total, int(self._at("mem_used", n)))

    def nvmlDeviceGetPowerUsage(self, handle) -> int:
        return int(self._at("power_mw", self._call("power", handle)))

    def nvmlDeviceGetClockInfo(self, handle, type) -> int:  # pynvml's signature
        n = self._call("clock", handle, key=f"clock{type}")
        if type in (NVML_CLOCK_SM, NVML_CLOCK_GRAPHICS):
            return int(self._at("sm_clock", n))
        if type == NVML_CLOCK_MEM:
            return int(self._at("mem_clock", n))
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetTemperature(self, handle, sensor) -> int:
        n = self._call("temperature", handle)
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return int(self._at("temperature", n))

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle) -> int:
        return self._clock_event_reasons(handle)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle) -> int:  # deprecated name, kept by pynvml
        return self._clock_event_reasons(handle)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle) -> int:
        return self.energy_start_mj + self._call("energy", handle) * self.energy_step_mj

    # -- machinery -----------------------------------------------------------------------------------

    def _require_init(self) -> None:
        if self.refcount <= 0:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)

    def _check(self, handle) -> None:
        self._require_init()
        if not isinstance(handle, _Handle) or not 0 <= handle.index < self.device_count:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        if isinstance(handle, _MigHandle) and handle.slot >= len(self.mig.get(handle.index, ())):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)

    def _call(self, metric: str, handle, key: str | None = None) -> int:
        """Count the call, apply the delay, raise what the script says; returns the call number."""
        self._check(handle)
        self.handle_calls.append((metric, handle.label))
        if self.call_delay_s:
            time.sleep(self.call_delay_s)
        if isinstance(handle, _MigHandle) and metric != "memory":
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)  # the board's readings, not the slice's
        key = key or metric
        n = self.calls.get(key, 0)
        self.calls[key] = n + 1
        if metric in self.unsupported:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        if n in self.fail_at.get(metric, ()):
            raise self.fail_error()
        return n

    def _clock_event_reasons(self, handle) -> int:
        n = self._call("throttle", handle)
        window = self.throttle_window
        return self.throttle_mask if window and window[0] <= n < window[1] else self.idle_mask

    def _at(self, series: str, n: int):
        values = self.series[series]
        return values[n % len(values)]


class _WithoutFunctions(FakeNvml):
    """An older nvidia-ml-py: the names in `_missing` raise AttributeError like a missing attribute."""

    _missing: frozenset[str] = frozenset()

    def __getattribute__(self, attr: str) -> Any:
        if attr in type(self)._missing:
            raise AttributeError(f"module 'pynvml' has no attribute '{attr}'")
        return super().__getattribute__(attr)


# -- the module as a stand-in for pynvml -------------------------------------------------------------
_default = FakeNvml()


def configure(**script) -> FakeNvml:
    """Replace the driver behind this module's functions; returns it."""
    global _default
    _default = FakeNvml(**script)
    return _default


def __getattr__(attr: str):
    if attr.startswith("nvml") and callable(getattr(FakeNvml, attr, None)):
        return getattr(_default, attr)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
