"""The NVML sampler thread that runs beside a measured case (see the package's docstring for the
API, the interval and what it costs the measured thread)."""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from benchmark.telemetry.devices import DeviceNotFound, DeviceTarget, as_text, resolve_device, warn_once
from benchmark.telemetry.nvml import (
    NVML_CLOCK_MEM,
    NVML_CLOCK_SM,
    NVML_ERROR_FUNCTION_NOT_FOUND,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_TEMPERATURE_GPU,
    THROTTLE_FNS,
    error_text,
    is_nvml_error,
    load_nvml,
    nvml_status,
    say_once,
)
from benchmark.telemetry.summary import decode_throttle_reasons, summarize_timeline

DEFAULT_INTERVAL_S = 0.1
MIN_INTERVAL_S = 0.01
MAX_ERRORS_LISTED = 10


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
        self._nv: Any = None
        self._handle: Any = None
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
        self._nv = load_nvml(self._nvml_arg)
        try:
            self.target = resolve_device(self.device_index, self._nv)
        except DeviceNotFound as exc:
            self.reason = str(exc)
            say_once(f"GPU telemetry not attributed to the case: {exc}", self._emit)
            return False
        self._handle = self.target.handle if self.target.handle is not None else self.target.board
        if self.target.note:
            say_once(self.target.note, self._emit)
        with contextlib.suppress(Exception):
            self._device_name = as_text(self._nv.nvmlDeviceGetName(self._handle))
        self._throttle_fn_name = self._pick_throttle_fn()
        return True

    def _pick_throttle_fn(self) -> str | None:
        return next((name for name in THROTTLE_FNS if callable(getattr(self._nv, name, None))), None)

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
        if is_nvml_error(self._nv, exc, NVML_ERROR_NOT_SUPPORTED):
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
            legacy = THROTTLE_FNS[-1]
            missing = is_nvml_error(self._nv, exc, NVML_ERROR_FUNCTION_NOT_FOUND)
            if missing and name != legacy and callable(getattr(self._nv, legacy, None)):
                self._throttle_fn_name = legacy
                return self._read_throttle_mask(handle)
            self._read_failed("throttle_reasons", exc)
            return None

    def _record_error(self, where: str, exc: BaseException) -> None:
        self._error_count += 1
        key = f"{where}: {error_text(exc)}"
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
        summary: dict[str, Any] = {
            "available": True,
            "device_index": self.device_index,
            "device_name": self._device_name,
        }
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
