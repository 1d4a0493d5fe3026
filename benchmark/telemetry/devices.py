"""Which NVML device a CUDA device is (CUDA_VISIBLE_DEVICES by index, ``GPU-<uuid>`` or a unique
prefix, ``MIG-<uuid>``, ``MIG-GPU-<uuid>/<gi>/<ci>``), what of it can be attributed to a case (on a MIG
slice, not the board's utilization, power and energy), and the session's one line when telemetry is
unavailable or not attributable (``warn_once``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from benchmark.telemetry.nvml import (
    UNAVAILABLE_PREFIX,
    default_emit,
    error_text,
    first_warning,
    load_nvml,
    nvml_status,
    say_once,
    status_lock,
)


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


def as_text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _uuid(nv, handle) -> str | None:
    try:
        return as_text(nv.nvmlDeviceGetUUID(handle))
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
    nv = load_nvml(nvml)
    if isinstance(device, int) or (isinstance(device, str) and device.isdigit()):
        index = int(device)
        try:
            board = nv.nvmlDeviceGetHandleByIndex(index)
        except Exception as exc:
            raise DeviceNotFound(f"GPU {index} not available to NVML ({error_text(exc)})") from None
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
            lookup_error, handle = error_text(exc), None
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
            raise DeviceNotFound(f"{wanted}: MIG device without a parent GPU ({error_text(exc)})") from None
        return _mig_target(nv, handle, board, _board_index(nv, board), _uuid(nv, handle) or wanted)
    index = _board_index(nv, handle)
    slices = _mig_devices(nv, handle)
    if len(slices) == 1:
        return _mig_target(nv, slices[0], handle, index, _uuid(nv, slices[0]))
    if slices or _mig_on(nv, handle):
        return _unattributable_mig_board(nv, handle, index if index is not None else -1, len(slices))
    return _whole_gpu(nv, handle, index, _uuid(nv, handle) or wanted)


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
    with status_lock:
        first = first_warning(nvml)
    if first:
        (emit or default_emit)(UNAVAILABLE_PREFIX + reason)
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
    line: str | None
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
            line = f"GPU telemetry not attributed to the case: {error_text(exc)}"
    if line:
        say_once(line, emit)
    return line
