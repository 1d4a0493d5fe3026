"""One case's result (`CaseResult`), its summary statistics (`Stats`), its worker-process trials (`ProcessValue`), the one rule of an ok process value and of the probe median, and the checks of its timings."""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmark.datamodel.case import Case
from benchmark.datamodel.metrics import CONFIDENCE


@dataclass(frozen=True)
class Stats:
    """Summary statistics of a result's samples (`benchmark.analysis.summary.summarize`, and
    `benchmark.analysis.processes.summarize_processes` for worker processes). Values are in the result's unit
    (seconds or instructions per iteration) unless noted; None where not computed or not finite."""

    rounds: int = 0  # timed rounds, all processes together
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    median: float | None = None  # the run value: the median of the per-process values, if any
    stddev: float | None = None  # sample standard deviation (ddof=1)
    q1: float | None = None
    q3: float | None = None
    iqr: float | None = None
    ci_low: float | None = None  # confidence interval of the median (or of the process level)
    ci_high: float | None = None
    confidence: float | None = None  # level of that interval (0.95), a fraction
    cv: float | None = None  # stddev / mean, a fraction
    mad: float | None = None  # median absolute deviation
    processes: int | None = None  # ok worker processes (None: measured in one process)
    between_cv: float | None = None  # spread of the process values (stddev of their logs)
    # Keys of the dict it was read from that have no field here.
    extra: Mapping[str, Any] = field(default_factory=dict)
    # The keys of that dict in its order, so `to_dict` gives the same dict back (None: not made
    # from a dict; `to_dict` then writes rounds and every field that is set).
    keys: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None = None) -> Stats:
        """The stats of a stored or measured stats dict (keys it lacks stay None; {} gives no
        stats, which `to_dict` writes as {})."""
        data = dict(data or {})
        names = {f.name for f in dataclasses.fields(cls)} - {"extra", "keys"}
        known = {k: v for k, v in data.items() if k in names}
        if known.get("rounds") is None:
            known["rounds"] = 0
        extra = {k: v for k, v in data.items() if k not in names}
        return cls(**known, extra=extra, keys=tuple(data))

    def to_dict(self) -> dict[str, Any]:
        """The stats as the plain dict they were made from (the stored JSON's `stats`)."""
        if self.keys is None:
            names = [f.name for f in dataclasses.fields(self) if f.name not in ("rounds", "extra", "keys")]
            keys = ("rounds", *(n for n in names if getattr(self, n) is not None), *self.extra)
        else:
            keys = self.keys
        return {k: self.extra[k] if k in self.extra else getattr(self, k) for k in keys}


@dataclass(frozen=True)
class ProcessValue:
    """One worker-process trial of a result (a `result_process` row; `benchmark.datamodel.result.process_entry`)."""

    index: int  # which of the case's processes, 0..P-1
    pid: int | None
    order: int  # position of the trial in the run's randomized trial sequence
    status: str  # "ok" or "error"
    value: float | None  # the median of `samples` (None for a trial that did not measure)
    samples: tuple[float, ...] = ()  # seconds (or instructions) per iteration, one per round
    iterations: int = 1  # iterations per round
    message: str | None = None
    # The reference probe's figure around the trial, seconds (benchmark/execution/probe.py); None
    # where it was not timed (older results, `probe` off, a trial that failed).
    probe_s: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProcessValue:
        return cls(
            index=int(data["index"]),
            pid=data.get("pid"),
            order=int(data["order"]),
            status=str(data["status"]),
            value=data.get("value"),
            samples=tuple(float(x) for x in data.get("samples") or ()),
            iterations=int(data.get("iterations") or 1),
            message=data.get("message"),
            probe_s=_positive(data.get("probe_s")),
        )

    def to_dict(self) -> dict[str, Any]:
        """The entry as `process_entry` writes it (the stored JSON's `processes` items)."""
        return {
            "index": self.index,
            "pid": self.pid,
            "order": self.order,
            "status": self.status,
            "value": self.value,
            "samples": list(self.samples),
            "iterations": self.iterations,
            "message": self.message,
            "probe_s": self.probe_s,
        }


def ok_process_values(processes: Iterable[ProcessValue] | None) -> list[float]:
    """The values (per-process medians) of the ok trials, in trial order: the one rule of what a
    process value is (status ok, a finite positive number), for the writer, the store and the judge."""
    return [
        float(p.value)
        for p in processes or ()
        if p.status == "ok" and p.value is not None and math.isfinite(p.value) and p.value > 0
    ]


def process_probe(processes: Iterable[ProcessValue] | None) -> float | None:
    """The median reference-probe figure (seconds) of the ok trials that have one; None if none has:
    the one probe median, for the store's series and the judge's new result alike."""
    probes = [
        p.probe_s for p in processes or () if p.status == "ok" and p.probe_s is not None and p.probe_s > 0
    ]
    return float(np.median(probes)) if probes else None


def _positive(x: Any) -> float | None:
    """A positive finite number as a float, anything else None (a probe figure read from a file)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) and x > 0 else None


STORE_IDS = ("result_id", "run_id")  # the fields of a CaseResult only a stored result sets
# The fields of a CaseResult that are stored inside its `extra` (in this order after the other keys,
# unless the result was read with another order), so the stored and exported JSON keeps its shape.
EXTRA_FIELDS = ("torch", "traceback", "compare", "pytest_benchmark")
# The fields whose keys are stored flat in `extra`, before its other keys (unless the result was read
# with another order): `prepare_s`, the timing plan of a time result (`timing`) and the record of an
# instruction count (`callgrind`, a result whose `extra["tool"]` is "callgrind"). The keys of each:
TIMING_KEYS = ("warmup_iterations", "estimate_s", "round_time", "warmup_s", "timed_s", "processes")
CALLGRIND_KEYS = (
    "tool",
    "event",
    "valgrind",
    "address_randomization",
    "empty_chunk",
    "probe",
    "other_threads_instructions",
    "chunks",
    "warmup_iterations",
    "heap_layout",
    "instrumented_s",
    "case_s",
    "case_cpu_s",
    "worker_pid",
    # estimated cycles (callgrind's cache simulation): on the count, its chunks; on the cycles
    # result, its weights, cache geometry and the count's instructions per iteration
    "cycle_chunks",
    "cycle_empty_chunk",
    "cycle_weights",
    "cache",
    "instructions_per_iteration",
)


@dataclass
class CaseResult:
    """What one case measured in one run: the record measurement fills, the JSON summary and the
    history store hold and the reports read. Plain data (`to_dict` is JSON-able but for NaN);
    samples are seconds (or instructions) per iteration."""

    case_id: str
    name: str
    kind: str
    place: str
    mode: str
    config: dict[str, Any]
    config_hash: str
    tags: list[str] = field(default_factory=list)
    status: str = "ok"
    message: str | None = None
    # What the samples measure, a metric of benchmark/datamodel/metrics.py: "time" (seconds per iteration) or
    # "instructions" (instructions per iteration, from callgrind; benchmark/instructions/callgrind.py). Part
    # of the series key; `unit` is that metric's unit.
    metric: str = "time"
    unit: str = "s"
    # Host wall-clock seconds per iteration, one value per timed round (the raw samples).
    samples: list[float] = field(default_factory=list)
    iterations: int = 1
    warmup_rounds: int = 0
    # Summary of `samples` (see benchmark.analysis.summary.summarize); `Stats()` with nothing set
    # for a result without samples.
    stats: Stats = field(default_factory=Stats.from_dict)
    # Device seconds per iteration per round (CUDA events), where a device timed it.
    device_samples: list[float] | None = None
    throughput: float | None = None
    throughput_unit: str | None = None
    batch_size: int | None = None
    peak_memory_bytes: int | None = None
    page_faults_per_iter: float | None = None
    warnings: list[str] = field(default_factory=list)
    telemetry: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None
    accuracy: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    started_at: float | None = None
    finished_at: float | None = None
    # One entry per worker-process trial of the case in this run, in the order the trials ran
    # (`process_entry`); empty for in-process measurement and results recorded before issue 11.
    processes: list[ProcessValue] = field(default_factory=list)
    # The store's ids of a result read back from it (`Store.results`); None on a result measured now.
    result_id: int | None = None
    run_id: int | None = None
    # Written into `extra` by `to_dict` (EXTRA_FIELDS); a result made with them in `extra` (a stored
    # one, `from_dict`) has them here instead. The torch timing of the same case (the `torch` check:
    # status, median, paddle_over_torch, ...); the traceback of an error; for a result of
    # `benchmark compare`, its side and verdict (side, verdict, ratio_b_over_a, ...); and for a result
    # imported from pytest-benchmark JSON, what that JSON had besides the stats (extra_info, ops).
    torch: dict[str, Any] | None = None
    traceback: str | None = None
    compare: dict[str, Any] | None = None
    pytest_benchmark: dict[str, Any] | None = None
    # Written into `extra` as flat keys by `to_dict`, before its other keys; a result made with them
    # in `extra` has them here instead. Wall seconds the runner took to prepare the case; the timing
    # plan of a time result (TIMING_KEYS: warmup_iterations, estimate_s, round_time, warmup_s,
    # timed_s, processes, those set); the record of an instruction count (CALLGRIND_KEYS: tool,
    # event, valgrind, ..., worker_pid).
    prepare_s: float | None = None
    timing: dict[str, Any] | None = None
    callgrind: dict[str, Any] | None = None
    # The order of the keys of the `extra` dict the result was made from, or of its first keys (None:
    # not made from one; `to_dict` then writes prepare_s, timing, callgrind, the other keys and
    # EXTRA_FIELDS, in this order).
    extra_keys: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        extra = self.extra
        group = CALLGRIND_KEYS if extra.get("tool") == "callgrind" else TIMING_KEYS
        if any(k in extra for k in (*EXTRA_FIELDS, "prepare_s", *group)):
            extra = dict(extra)
            self.extra_keys = tuple(extra)
            for key in (*EXTRA_FIELDS, "prepare_s"):
                value = extra.pop(key, None)
                if getattr(self, key) is None:
                    setattr(self, key, value)
            values = {k: extra.pop(k) for k in group if k in extra}
            name = "callgrind" if group is CALLGRIND_KEYS else "timing"
            if values and getattr(self, name) is None:
                setattr(self, name, values)
            self.extra = extra

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain dict (its stats and process entries as dicts too); result_id and
        run_id only where the store set them."""
        data = dataclasses.asdict(self)
        data["stats"] = self.stats.to_dict()
        data["processes"] = [p.to_dict() for p in self.processes]
        typed = {k: v for k in EXTRA_FIELDS if (v := data.pop(k)) is not None}
        prepare_s = data.pop("prepare_s")
        flat = {
            **({} if prepare_s is None else {"prepare_s": prepare_s}),
            **(data.pop("timing") or {}),
            **(data.pop("callgrind") or {}),
        }
        extra = {**flat, **data["extra"], **typed}
        order = data.pop("extra_keys")
        if order:
            extra = {k: extra[k] for k in (*(k for k in order if k in extra), *extra) if k in extra}
        data["extra"] = extra
        for key in STORE_IDS:
            if data[key] is None:
                del data[key]
        return data

    @classmethod
    def for_case(cls, case: Case, **fields: Any) -> CaseResult:
        """A result of `case` started now; `fields` set the rest
        (e.g. metric and unit)."""
        return cls(
            case_id=case.case_id,
            name=case.name,
            kind=case.kind,
            place=case.place,
            mode=case.mode,
            config=case.config,
            config_hash=case.config_hash,
            tags=list(case.tags),
            started_at=time.time(),
            **fields,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseResult:
        """The result `to_dict` gave (stats and process entries as dicts or as `Stats` and
        `ProcessValue`s); unknown keys are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in data.items() if k in names}
        stats = data.get("stats")
        fields["stats"] = stats if isinstance(stats, Stats) else Stats.from_dict(stats)
        fields["processes"] = [
            p if isinstance(p, ProcessValue) else ProcessValue.from_dict(p)
            for p in data.get("processes") or []
        ]
        return cls(**fields)


def process_entry(
    index: int,
    pid: int | None,
    order: int,
    status: str,
    samples: list[float] | None = None,
    iterations: int = 1,
    message: str | None = None,
    probe_s: float | None = None,
) -> ProcessValue:
    """One worker-process trial of a case: its raw samples (seconds per iteration, one per round)
    and its value, the median of those samples (None for a trial that did not measure)."""
    values = tuple(float(x) for x in samples or [])
    ok = status == "ok" and bool(values)
    return ProcessValue(
        index=int(index),
        pid=int(pid) if pid is not None else None,
        order=int(order),
        status="ok" if ok else "error",
        value=float(statistics.median(values)) if ok else None,
        samples=values,
        iterations=int(iterations),
        message=message,
        probe_s=probe_s if ok else None,
    )


# The suite warns that a result is imprecise when the interval its table shows reaches further than
# this from the median, on its wider side (an interval about 5% wide).
IMPRECISE_HALF = 0.025


def interval_half(stats: Stats) -> float | None:
    """The interval of a result's level (at `CONFIDENCE`) as its wider side relative to the median:
    what the suite's CI column shows, and what its "imprecise" warning is about. None without one."""
    med, low, high = stats.median, stats.ci_low, stats.ci_high
    if not med or low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return None
    return max(med - low, high - med) / med


def imprecision(stats: Stats) -> str | None:
    """The warning that the shown interval is too wide to trust the value (`IMPRECISE_HALF`), or None."""
    half = interval_half(stats)
    if half is None or half <= IMPRECISE_HALF:
        return None
    shown = f"±{half:.1%} of it" if half < 1 else "wider than the median itself"  # as the CI column
    return f"imprecise: the {CONFIDENCE:.0%} interval of the median is {shown} (> ±{IMPRECISE_HALF:.1%})"


def bad_timings(values: Any) -> int:
    """How many of `values` are not timings: not a number, NaN, infinite, zero or negative."""
    if values is None:
        return 0
    bad = 0
    for v in values:
        try:
            x = float(v)
        except (TypeError, ValueError, OverflowError):
            bad += 1
            continue
        if not (math.isfinite(x) and x > 0):
            bad += 1
    return bad


def timing_problem(result: Mapping[str, Any] | CaseResult) -> str | None:
    """Why a result's raw samples cannot be stored (NaN, inf, zero or negative seconds), or None.

    No such value ever reaches the history: the store refuses it, and the suite records the case as
    an error with this reason instead.
    """
    data = result.to_dict() if isinstance(result, CaseResult) else result
    problems = []
    for key in ("samples", "device_samples"):
        values = data.get(key) or []
        bad = bad_timings(values)
        if bad:
            problems.append(f"{bad} of {len(values)} {key.replace('_', ' ')} are not finite positive numbers")
    return "; ".join(problems) or None


def json_safe(value: Any) -> Any:
    """`value` with every NaN or infinite float replaced by None, so that it serialises as strict
    JSON (a bare `NaN` is not JSON; e.g. `between_cv` of a one-process result is NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
