"""The NVML library itself: imported lazily (``pynvml``, or a module injected by tests), initialized
once per process and module (``nvml_status``), its errors as text, and one-line messages said once
per process."""

from __future__ import annotations

import atexit
import contextlib
import importlib
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

UNAVAILABLE_PREFIX = "GPU telemetry unavailable: "

THROTTLE_FNS = ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0

status_lock = threading.Lock()
_status_by_module: weakref.WeakKeyDictionary[Any, tuple[bool, str]] = weakref.WeakKeyDictionary()
_warned_modules: weakref.WeakSet[Any] = weakref.WeakSet()
_import_failure: dict[str, Any] = {}


def _import_pynvml():
    """The real nvidia-ml-py module, imported on first use."""
    return importlib.import_module("pynvml")


def load_nvml(nvml):
    """The NVML module to use: the injected one, else pynvml. Raises ImportError when missing."""
    return nvml if nvml is not None else _import_pynvml()


def error_text(exc: BaseException) -> str:
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
        return False, f"nvmlInit failed: {error_text(exc)}"
    atexit.register(_shutdown_quietly, module)
    try:
        count = int(module.nvmlDeviceGetCount())
    except Exception as exc:
        return False, f"nvmlDeviceGetCount failed: {error_text(exc)}"
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
    with status_lock:
        try:
            module = load_nvml(nvml)
        except ImportError as exc:
            _import_failure.setdefault("reason", f"nvidia-ml-py (pynvml) is not importable: {exc}")
            return False, _import_failure["reason"]
        if module not in _status_by_module:
            _status_by_module[module] = _try_init(module)
        return _status_by_module[module]


def default_emit(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def first_warning(nvml) -> bool:
    """True the first time it is asked about this module (or about pynvml failing to import)."""
    try:
        module = load_nvml(nvml)
    except ImportError:
        first = not _import_failure.get("warned")
        _import_failure["warned"] = True
        return first
    if module in _warned_modules:
        return False
    _warned_modules.add(module)
    return True


_said: set[str] = set()


def say_once(line: str, emit: Callable[[str], None] | None = None) -> None:
    """Emit `line` once per process (the same device note is not repeated for every case)."""
    with status_lock:
        if line in _said:
            return
        _said.add(line)
    (emit or default_emit)(line)


def reset_status() -> None:
    """Forget cached init results and warnings (for tests)."""
    with status_lock:
        _status_by_module.clear()
        _warned_modules.clear()
        _import_failure.clear()
        _said.clear()


def is_nvml_error(module, exc: BaseException, code: int) -> bool:
    base = getattr(module, "NVMLError", None)
    return base is not None and isinstance(exc, base) and getattr(exc, "value", None) == code
