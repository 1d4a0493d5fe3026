"""A series: the key of its results (`SeriesKey`), one stored point (`HistoryPoint`) and the per-run values every reader, the judge and the detector read (`Series`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from benchmark.datamodel.result import ProcessValue, Stats
from benchmark.datamodel.run import SUITE


class SeriesKey(NamedTuple):
    """What makes results one series on one machine: case id, config hash, place, mode and metric
    (a stored metric of benchmark/datamodel/metrics.py: "time", "instructions"). A tuple: it compares, hashes
    and unpacks as one."""

    case_id: str
    config_hash: str
    place: str
    mode: str
    metric: str = "time"

    @classmethod
    def of(cls, result: Any) -> SeriesKey:
        """The key of a `benchmark.datamodel.result.CaseResult` (or of its `to_dict()`); metric "time" where it
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


NO_KEY = SeriesKey("", "", "", "")  # the key of a series not read from the store (a CSV's)


def _no_values() -> np.ndarray:
    return np.empty(0)


@dataclass(frozen=True)
class Acknowledgement:
    """A user accepted the level of a series from run `run_id` on (`benchmark ack`): the judge reads
    the series' history from that run on, so a regression it kept stops failing."""

    series_id: int
    run_id: int
    by: str
    why: str
    at: Any = None  # when (a timezone-aware datetime from the store)


@dataclass
class Series:
    """One series' ok results, oldest first: the store's baseline of a run's series (the judge), a
    series' history (the reports) or a CSV of per-run values (`benchmark detect`).

    Every per-run field holds one entry per ok run in the same order, or is empty where the
    reader does not fill it (`values` is always filled; `len(series)` is its length).
    """

    key: SeriesKey = NO_KEY
    # Fingerprint of the machine the runs were measured on ("" where not known); reports key
    # series by `report_key`, which adds it.
    machine: str = ""
    name: str = ""  # the case's config name (reports; configs/gates.yaml may match on it)
    series_id: int = 0  # the store's primary key of the series (0: not from the store)
    unit: str = "s"  # unit of `values`, `samples` and the CIs: "s" or "instructions"
    # Per run: the median of its raw samples (seconds or instructions per iteration).
    values: np.ndarray = field(default_factory=_no_values)
    run_ids: list[int] = field(default_factory=list)  # the store's run ids
    result_ids: list[int] = field(default_factory=list)  # the store's result ids
    times: list[float] = field(default_factory=list)  # run start, epoch seconds
    commits: list[str | None] = field(default_factory=list)  # the run's git commit, if recorded
    labels: list[str] = field(default_factory=list)  # a CSV's `run` column (benchmark detect)
    # The run's raw samples (seconds or instructions per iteration, one per timed round; an empty
    # array where the run has none).
    samples: list[np.ndarray] = field(default_factory=list)
    # The values (per-process medians) of the run's ok worker-process trials, in trial order; an
    # empty array for a result measured in one process.
    process_values: list[np.ndarray] = field(default_factory=list)
    # The median reference-probe figure (seconds) of the run's trials of this case: how fast the
    # machine was while they ran (NaN where none was timed; benchmark/execution/probe.py).
    probes: np.ndarray = field(default_factory=_no_values)
    # The run's 95% confidence interval of its median, in `unit` (NaN where not stored).
    ci_low: np.ndarray = field(default_factory=_no_values)
    ci_high: np.ndarray = field(default_factory=_no_values)
    rounds: list[int] = field(default_factory=list)  # timed rounds of the run
    # The run's throughput in `throughput_unit` (NaN where it has none).
    throughput: np.ndarray = field(default_factory=_no_values)
    throughput_unit: str | None = None
    # Environment changes (driver, kernel, Python): index of the first run under the new
    # environment -> what changed.
    events: dict[int, str] = field(default_factory=dict)
    # The series' results without a number, oldest first: dicts of run_id, time (epoch seconds),
    # commit, status, message.
    others: list[dict[str, Any]] = field(default_factory=list)
    # The acknowledgement the series starts from (the judge's baselines: `Series.since_run`), if any.
    acknowledgement: Acknowledgement | None = None
    # The job its runs come from (`benchmark.datamodel.run.job_of`): "suite", or a side job ("compare",
    # "bisect", "night"), whose runs are series of their own (a suffixed machine fingerprint).
    job: str = "suite"

    @property
    def case_id(self) -> str:
        return self.key.case_id

    @property
    def config_hash(self) -> str:
        return self.key.config_hash

    @property
    def place(self) -> str:
        return self.key.place

    @property
    def mode(self) -> str:
        return self.key.mode

    @property
    def metric(self) -> str:
        return self.key.metric

    @property
    def report_key(self) -> tuple[str, ...]:
        """(case id, config hash, place, mode, machine), plus the metric where it is not "time":
        what the reports key a series by (its file names derive from it)."""
        key = (*self.key[:4], self.machine)
        return key if self.metric == "time" else (*key, self.metric)

    def __len__(self) -> int:
        return len(self.values)

    def pooled(self) -> np.ndarray:
        """All raw samples of the series in one array."""
        return np.concatenate(self.samples) if self.samples else np.empty(0)

    def head(self, end: int) -> Series:
        """The series cut after its first `end` runs (events after them dropped; `others` kept)."""
        cut = dataclasses.replace(self, events={i: what for i, what in self.events.items() if i < end})
        for f in _PER_RUN:
            setattr(cut, f, getattr(self, f)[:end])
        return cut

    def since_run(self, run_id: int) -> Series:
        """The series from its first run whose id is at least `run_id` on (the level a user
        acknowledged there: `benchmark ack`); empty when every run is older."""
        start = next((i for i, r in enumerate(self.run_ids) if r >= run_id), len(self.run_ids))
        if start == 0:
            return self
        cut = dataclasses.replace(
            self, events={i - start: what for i, what in self.events.items() if i >= start}
        )
        for f in _PER_RUN:
            setattr(cut, f, getattr(self, f)[start:])
        return cut

    @property
    def latest_status(self) -> str:
        """Status of the newest result of the series, ok or not ("none" when it has none)."""
        last_ok = self.times[-1] if self.times else -float("inf")
        late = [o for o in self.others if o["time"] > last_ok]
        return str(late[-1]["status"]) if late else ("ok" if self.times else "none")


_PER_RUN = (
    "values",
    "run_ids",
    "result_ids",
    "times",
    "commits",
    "labels",
    "samples",
    "process_values",
    "probes",
    "ci_low",
    "ci_high",
    "rounds",
    "throughput",
)
