"""The store's records (`benchmark.store`): a stored run (`RunRecord`), one point of a series'
history (`HistoryPoint`), one worker process of a result (`ProcessValue`) and a result's summary
statistics (`Stats`). Frozen; `to_dict` gives the plain dicts the exports write."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np


def config_hash(config: Mapping[str, Any]) -> str:
    """A case config's hash (`SeriesKey.config_hash`): its JSON with sorted keys, sha256, 16 hex
    digits. The one serialisation of every hash the store holds: a changed config starts a new series."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class SeriesKey(NamedTuple):
    """What makes results one series on one machine: case id, config hash, place, mode and metric
    (a stored metric of benchmark/metrics.py: "time", "instructions"). A tuple: it compares, hashes
    and unpacks as one."""

    case_id: str
    config_hash: str
    place: str
    mode: str
    metric: str = "time"

    @classmethod
    def of(cls, result: Any) -> SeriesKey:
        """The key of a `benchmark.model.CaseResult` (or of its `to_dict()`); metric "time" where it
        names none."""
        if not isinstance(result, Mapping):
            return cls(result.case_id, result.config_hash, result.place, result.mode, result.metric or "time")
        return cls(
            result["case_id"],
            result["config_hash"],
            result["place"],
            result["mode"],
            result.get("metric") or "time",
        )


@dataclass(frozen=True)
class Stats:
    """Summary statistics of a result's samples (`benchmark.analysis.summary.summarize`, and
    `benchmark.results.summarize_processes` for worker processes). Values are in the result's unit
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
    """One worker-process trial of a result (a `result_process` row; `benchmark.results.process_entry`)."""

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


# The jobs a run can come from, by its trigger: the suite's own runs (local, ci, nightly, imports ...)
# and the side jobs, whose runs live in series of their own (machine fingerprint suffixed
# /compare-A, /compare-B, /bisect, /night) and in views of their own.
SUITE = "suite"
SIDE_JOBS = ("compare", "bisect", "night")
JOBS = (SUITE, *SIDE_JOBS)


def job_of(trigger: str | None) -> str:
    """The job of a run with this trigger: "compare", "bisect", "night" or "suite"."""
    return trigger if trigger in SIDE_JOBS else SUITE


def _positive(x: Any) -> float | None:
    """A positive finite number as a float, anything else None (a probe figure read from a file)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) and x > 0 else None


@dataclass(frozen=True)
class RunRecord:
    """One stored run (`Store.run`, `Store.runs`): the run row, its machine, and what the store
    found of its results. Times are aware UTC datetimes."""

    id: int
    machine_id: int
    started_at: dt.datetime
    finished_at: dt.datetime | None
    heartbeat_at: dt.datetime | None  # the writer's last sign of life
    # The effective status: "complete" with results missing reads "incomplete", and a "running"
    # run whose process died (or lease expired) reads "interrupted"; `recorded_status` is the row's.
    status: str
    git_commit: str | None
    git_branch: str | None
    git_dirty: bool | None
    paddle_version: str | None
    paddle_commit: str | None
    cuda_version: str | None
    cudnn_version: str | None
    framework: Mapping[str, Any]  # the framework build's description
    env: Mapping[str, Any]  # speed-relevant environment variables
    trigger: str  # local, ci, nightly, compare, ...
    tags: tuple[str, ...]
    hostname: str | None
    pid: int | None  # of the process that ran it
    extra: Mapping[str, Any]  # the rest of the run's description (settings, expected_cases, machine_env)
    expected_results: int | None  # results it set out to store (None: not known)
    run_group: str | None
    heartbeat_s: float | None  # heartbeat period, seconds
    note: str | None  # why it ended the way it did
    machine: str  # the machine fingerprint
    machine_info: Mapping[str, Any]  # the machine's full description
    places: tuple[str, ...]  # places of its stored results but the skipped ones, sorted
    results: int  # stored results
    results_by_status: Mapping[str, int]  # stored results per status
    missing: int | None  # expected but not stored (None: not known)
    recorded_status: str  # the status in the run row
    # Where the run came from: the file it was imported from and its sha256 (None: measured by the
    # harness), and whether it may be the baseline of later runs (an import only with --as-baseline).
    import_source: str | None = None
    import_sha256: str | None = None
    baseline: bool = True
    # The reference probe's median figure over the run's trials, seconds (None: none was timed).
    probe_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The run as a plain dict in field order (the exports' `run`)."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name in ("framework", "env", "extra", "machine_info", "results_by_status"):
            data[name] = dict(data[name])
        data["tags"], data["places"] = list(self.tags), list(self.places)
        return data


@dataclass(frozen=True)
class HistoryPoint:
    """One result of one series in `Store.history`: its run, its series key, its status and its
    summary statistics; raw samples and process entries only where asked for."""

    result_id: int
    run_id: int
    started_at: dt.datetime  # the run's start (aware UTC)
    case_id: str
    name: str  # the case's config name
    config_hash: str
    place: str
    mode: str
    metric: str  # "time" or "instructions"
    series_id: int
    machine: str  # the machine fingerprint
    git_commit: str | None
    git_branch: str | None
    machine_env: Mapping[str, Any] | None  # drivers, kernel, Python of the run (None: not recorded)
    status: str  # ok, failed, skipped, error
    message: str | None
    unit: str  # of the stats and samples: "s" or "instructions"
    iterations: int  # per round
    stats: Stats  # rounds and the stored summary columns (min .. ci_high)
    throughput: float | None  # in `throughput_unit`
    throughput_unit: str | None
    peak_memory_bytes: int | None
    # Raw samples (float64, empty where none are stored); None unless asked for.
    samples: np.ndarray | None = None
    processes: tuple[ProcessValue, ...] | None = None  # in trial order; None unless asked for
    job: str = SUITE  # the job of its run (`job_of` its trigger)

    @property
    def key(self) -> SeriesKey:
        return SeriesKey(self.case_id, self.config_hash, self.place, self.mode, self.metric)

    @property
    def median(self) -> float | None:
        """The run value (seconds or instructions per iteration), None for a result without one."""
        return self.stats.median

    @property
    def rounds(self) -> int:
        return self.stats.rounds
