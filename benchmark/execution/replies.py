"""The worker's replies, typed: each JSON reply of `benchmark.runners.worker` is parsed here, once,
into a frozen record, and nothing else reads a reply by key.

* :class:`TrialRecord`: the reply to a `time` request (one timing trial of one case in one worker
  process), or a failure the parent made up for it (the worker died, timed out, answered nonsense).
* :class:`ChecksRecord`: the reply to a `checks` request (the checks after timing), or the same
  fields from the in-process checks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from benchmark.datamodel.result import ProcessValue, bad_timings, process_entry

OK, ERROR, SKIPPED = "ok", "error", "skipped"


def _float(x: Any) -> float | None:
    try:
        value = float(x)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _floats(x: Any) -> tuple[float, ...] | None:
    """A list of numbers as a tuple, kept as sent (bad timings are judged where they are used)."""
    if not isinstance(x, list | tuple):
        return None
    return tuple(float(v) if isinstance(v, int | float) else math.nan for v in x)


def _mapping(x: Any) -> dict[str, Any] | None:
    return dict(x) if isinstance(x, Mapping) else None


def _probe_seconds(x: Any) -> float | None:
    """The probe figure of a reply's `probe` ({"seconds": ...}): a positive number, else None."""
    value = _float(x.get("seconds")) if isinstance(x, Mapping) else None
    return value if value is not None and value > 0 else None


@dataclasses.dataclass(frozen=True)
class TrialRecord:
    """One timing trial as the worker reported it (see `benchmark.runners.worker._time`)."""

    status: str  # ok, error or skipped
    message: str | None = None
    pid: int | None = None
    samples: tuple[float, ...] = ()  # host seconds per iteration, one per timed round
    device_samples: tuple[float, ...] | None = None  # device seconds per iteration (device places)
    iterations: int = 1  # iterations per round
    warmup_iterations: int | None = None
    estimate_s: float | None = None
    items_per_step: int | None = None  # samples per step, for throughput (models)
    peak_memory_bytes: int | None = None
    page_faults_per_iter: float = 0.0
    prepare_s: float | None = None
    warmup_s: float = 0.0
    timed_s: float = 0.0
    info: dict[str, Any] = dataclasses.field(default_factory=dict)  # what the runner says about the case
    traceback: str | None = None
    probe_s: float | None = None  # the reference probe's figure around the trial (seconds)
    # When the timed rounds ran: (start, end), epoch seconds of the worker's clock.
    timed_window: tuple[float, ...] | None = None

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> TrialRecord:
        """The record of a reply; anything malformed reads as missing, never as a number."""
        status = str(reply.get("status") or ERROR)
        peak, items = reply.get("peak_memory_bytes"), reply.get("items_per_step")
        number = (int, float)
        return cls(
            status=status if status in (OK, ERROR, SKIPPED) else ERROR,
            message=None if reply.get("message") is None else str(reply.get("message")),
            pid=reply.get("pid") if isinstance(reply.get("pid"), int) else None,
            samples=_floats(reply.get("samples")) or (),
            device_samples=_floats(reply.get("device_samples")) or None,
            iterations=int(reply.get("iterations") or 1),
            warmup_iterations=reply.get("warmup_iterations"),
            estimate_s=_float(reply.get("estimate_s")),
            items_per_step=int(items) if isinstance(items, number) and not isinstance(items, bool) else None,
            peak_memory_bytes=int(peak) if isinstance(peak, number) and not isinstance(peak, bool) else None,
            page_faults_per_iter=_float(reply.get("page_faults_per_iter")) or 0.0,
            prepare_s=_float(reply.get("prepare_s")),
            warmup_s=_float(reply.get("warmup_s")) or 0.0,
            timed_s=_float(reply.get("timed_s")) or 0.0,
            info=_mapping(reply.get("info")) or {},
            traceback=None if reply.get("traceback") is None else str(reply.get("traceback")),
            probe_s=_probe_seconds(reply.get("probe")),
            timed_window=_floats(reply.get("timed_window")),
        )

    @classmethod
    def failed(cls, message: str, pid: int | None = None) -> TrialRecord:
        return cls(status=ERROR, message=message, pid=pid)

    @property
    def skipped(self) -> bool:
        return self.status == SKIPPED

    def entry(self, index: int, order: int) -> tuple[ProcessValue, str | None]:
        """This trial as the result's process entry `index` (trial `order` of the run), and why it
        did not measure (None when it did): no samples, or samples that are not timings."""
        ok = self.status == OK and bool(self.samples)
        message = None if ok else (self.message or f"trial status {self.status!r} without samples")
        bad = bad_timings(self.samples) if ok else 0
        if bad:  # NaN, inf or non-positive timings are an error of the trial, never numbers
            ok, message = False, f"invalid timing samples: {bad} of {len(self.samples)} in trial {index + 1}"
        entry = process_entry(index, self.pid, order, OK if ok else ERROR, list(self.samples) if ok else None,
                              self.iterations, message, self.probe_s)  # fmt: skip
        return entry, message


@dataclasses.dataclass(frozen=True)
class ChecksRecord:
    """The checks after timing as the worker reported them (see `benchmark.runners.worker._checks`):
    the reference check, the torch timing and the profile pass, those that were asked for."""

    status: str
    message: str | None = None
    traceback: str | None = None
    accuracy: dict[str, Any] | None = None
    torch: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> ChecksRecord:
        status = str(reply.get("status") or ERROR)
        return cls(
            status=status if status in (OK, ERROR, SKIPPED) else ERROR,
            message=None if reply.get("message") is None else str(reply.get("message")),
            traceback=None if reply.get("traceback") is None else str(reply.get("traceback")),
            accuracy=_mapping(reply.get("accuracy")),
            torch=_mapping(reply.get("torch")),
            profile=_mapping(reply.get("profile")),
        )


@dataclasses.dataclass(frozen=True)
class CountRecord:
    """An instruction count as the worker reported it (`benchmark.runners.instructions_worker`):
    the integer totals of the instrumented chunks and of an empty chunk, and how the count was made;
    or, replayed from a stored result, its per-iteration `samples`."""

    status: str
    message: str | None = None
    traceback: str | None = None
    chunks: list[int] | None = None  # instructions of each timed chunk of `iterations` iterations
    empty: int | None = None  # instructions of an empty chunk (the loop's own cost)
    # estimated cycles (callgrind's cache simulation) of the same chunks and empty chunk, or None
    cycle_chunks: list[int] | None = None
    cycle_empty: int | None = None
    iterations: int | None = None
    samples: list[float] | None = None  # a replay: instructions per iteration, as stored
    probe: Any = None
    other_threads: Any = None
    warmup: Any = None
    heap_layout: Any = None
    instrumented_ns: int | None = None
    case_ns: int | None = None
    case_cpu_ns: int | None = None
    pid: int | None = None

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> CountRecord:
        status = str(reply.get("status") or ERROR)
        chunks, samples = reply.get("chunks"), reply.get("samples")

        def integer(key: str) -> int | None:
            value = reply.get(key)
            return None if value is None else int(value)

        return cls(
            status=status if status in (OK, ERROR, SKIPPED) else ERROR,
            message=None if reply.get("message") is None else str(reply.get("message")),
            traceback=None if reply.get("traceback") is None else str(reply.get("traceback")),
            chunks=[int(c) for c in chunks] if isinstance(chunks, list) else None,
            empty=integer("empty"),
            cycle_chunks=[int(c) for c in cycles]
            if isinstance(cycles := reply.get("cycle_chunks"), list)
            else None,
            cycle_empty=integer("cycle_empty"),
            iterations=integer("iterations"),
            samples=[float(x) for x in samples] if isinstance(samples, list) else None,
            probe=reply.get("probe"),
            other_threads=reply.get("other_threads"),
            warmup=reply.get("warmup"),
            heap_layout=reply.get("heap_layout"),
            instrumented_ns=integer("instrumented_ns"),
            case_ns=integer("case_ns"),
            case_cpu_ns=integer("case_cpu_ns"),
            pid=reply.get("pid") if isinstance(reply.get("pid"), int) else None,
        )
