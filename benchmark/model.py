"""The typed records the stages exchange: a benchmark `Case` and the `Spec` of its fully expanded
config (`Tensor` inputs, `ProgramStep`s, measurement overrides), the `CaseResult` of a case in a run, the
`SeriesKey` of a result and the `Series` of per-run values it belongs to, and the judge's `Verdict`
on a result (with its `Evidence`).

A case's shape goes from YAML to the stored result through typed fields only:
`configs/*.yaml` -> `benchmark.config` (schema, grid expansion) -> `Case.spec.inputs["x"].shape`
-> runners and reference checks. The config as a plain dict (`Case.config`) exists only where it
is serialized: its hash (`Case.config_hash`), the stored result and the worker protocol
(`Case.to_json` / `Case.from_json`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from benchmark.metrics import get_metric
from benchmark.records import ProcessValue, SeriesKey, Stats

# The verdict vocabulary lives in benchmark.verdict (imported by the pure statistics too); the
# records here carry it, and their users import it from here as well.
from benchmark.verdict import FAILING as FAILING
from benchmark.verdict import VERDICT_WORDS as VERDICT_WORDS
from benchmark.verdict import Evidence as Evidence
from benchmark.verdict import Verdict as Verdict
from benchmark.verdict import verdict_words as verdict_words

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
    # The job its runs come from (`benchmark.records.job_of`): "suite", or a side job ("compare",
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


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tensor(_Frozen):
    """One generated input: `shape` and `dtype`, values drawn uniformly in [low, high)."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    low: float = -1.0
    high: float = 1.0
    # Whether it gets a gradient in a backward case (None: every floating input does).
    requires_grad: bool | None = None
    # Values beyond a uniform draw (resolved at expansion, `benchmark.config.expand`): "sorted",
    # "positive_definite", {"boxes_in": [height, width]} or {"sum_to": total}.
    values: str | dict[str, Any] | None = None

    def wants_grad(self) -> bool:
        """True when a backward case differentiates with respect to this input."""
        if self.requires_grad is None:
            return self.dtype.startswith(("float", "bfloat"))
        return self.requires_grad


class ProgramStep(_Frozen):
    """One op of a program case: `out = op(*inputs, **attrs)` (inputs by name, or keyword -> name)."""

    op: str
    inputs: list[str] | dict[str, str]
    attrs: dict[str, Any] = Field(default_factory=dict)
    out: str
    # Control flow (cond, case, switch_case): each branch a list of steps whose last output is the
    # branch's result; `default` where the op has one.
    branches: list[list[ProgramStep]] | None = None
    default: list[ProgramStep] | None = None

    def steps(self) -> list[ProgramStep]:
        """This step and, for control flow, every step of its branches (depth first)."""
        inner = [*(self.branches or []), *([self.default] if self.default else [])]
        return [self, *(s for branch in inner for step in branch for s in step.steps())]


class MeasureOverrides(_Frozen):
    """A case's own measurement settings (None: the run's setting)."""

    warmup_time: float | None = None
    min_rounds: int | None = None
    max_time: float | None = None
    round_time: float | None = None
    max_rounds: int | None = None
    processes: int | None = None


class Spec(_Frozen):
    """The fully expanded config of one case (no `$grid` reference left), as validated by
    `benchmark.config`. Fields of the other kinds are None."""

    name: str
    kind: str  # a registered kind (benchmark.kinds), checked by the config schema
    seed: int = 0
    measure: MeasureOverrides = Field(default_factory=MeasureOverrides)
    profile: bool = False
    backward: bool = False
    step: Literal["train", "infer"] | None = None
    # "torch" for the torch twin of an op case (a series of its own); absent for paddle.
    framework: Literal["torch"] | None = None
    # op kind
    op: str | None = None
    inputs: dict[str, Tensor] | None = None
    # Tensor-list inputs: the op's argument -> the inputs (in `inputs`, in order) passed to it as
    # one list, e.g. {"x": ["x__0", "x__1"]} for `paddle.concat(x=[x__0, x__1])`.
    lists: dict[str, list[str]] | None = None
    attrs: dict[str, Any] = Field(default_factory=dict)
    reference: str | None = None
    torch_op: str | None = None
    tolerance: dict[str, float] | None = None
    # layer kind (its inputs, lists and attrs as an op's; `args` builds it)
    layer: str | None = None
    # program kind
    feed: dict[str, Tensor] | None = None
    ops: list[ProgramStep] | None = None
    fetch: list[str] | None = None
    # model kind
    model: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    batch_size: int | None = None
    # data parallel ranks of a model case (paddle.distributed.launch); None: one process
    devices: int | None = None

    @property
    def tensors(self) -> dict[str, Tensor]:
        """The generated inputs: `inputs` of an op case, `feed` of a program case, else none."""
        return dict(self.inputs or self.feed or {})

    def grouped(self, values: dict[str, Any]) -> dict[str, Any]:
        """`values` by input name, with the parts of each tensor-list input gathered into one list
        under the list's name, at the place of its first part (the op's arguments, in order)."""
        part_of = {part: name for name, parts in (self.lists or {}).items() for part in parts}
        out: dict[str, Any] = {}
        for name, value in values.items():
            if name in part_of:
                out.setdefault(part_of[name], []).append(value)
            else:
                out[name] = value
        return out


@dataclass(frozen=True)
class Case:
    """One fully specified benchmark: config + one grid point + place + mode."""

    case_id: str  # stable and readable, without place and mode (a series is case_id+place+mode)
    place: str
    mode: str
    spec: Spec  # fully expanded; identical for every place/mode
    config_hash: str
    tags: tuple[str, ...] = ()
    source: str = ""
    line: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def config(self) -> dict[str, Any]:
        """The expanded config as plain JSON data, exactly the fields the YAML set: what is hashed
        (`config_hash`) and stored with each result."""
        return self.spec.model_dump(mode="json", exclude_unset=True)

    @property
    def id(self) -> str:
        """The pytest item id: case id + place + mode."""
        return f"{self.case_id}-{self.place.replace(':', '')}-{self.mode}"

    @property
    def measure(self) -> dict[str, Any]:
        """The measurement settings this case overrides (those not None)."""
        return self.spec.measure.model_dump(exclude_none=True)

    @property
    def device(self) -> str:
        return "gpu" if self.place.startswith("gpu") else "cpu"

    def to_json(self) -> dict[str, Any]:
        """The case as JSON data (the worker protocol); `from_json` gives it back."""
        return {
            "case_id": self.case_id,
            "place": self.place,
            "mode": self.mode,
            "config": self.config,
            "config_hash": self.config_hash,
            "tags": list(self.tags),
            "source": self.source,
            "line": self.line,
            "params": dict(self.params),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Case:
        """The case `to_json` gave."""
        return cls(
            case_id=data["case_id"],
            place=data["place"],
            mode=data["mode"],
            spec=Spec.model_validate(data["config"]),
            config_hash=data["config_hash"],
            tags=tuple(data.get("tags") or ()),
            source=data.get("source") or "",
            line=data.get("line"),
            params=dict(data.get("params") or {}),
        )


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
    # What the samples measure, a metric of benchmark/metrics.py: "time" (seconds per iteration) or
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


@dataclass
class Decision:
    case_id: str
    name: str
    place: str
    mode: str
    metric: str
    verdict: Verdict
    effect: float = math.nan  # relative change of the metric, new/baseline - 1
    ci_low: float = math.nan  # interval of the effect
    ci_high: float = math.nan
    p_value: float = math.nan
    q_value: float = math.nan
    evidence: str = ""  # what the evidence says, in words
    evidence_kind: Evidence = Evidence.NONE  # where it came from
    baseline: str = ""
    reason: str = ""
    change_run_id: int | None = None
    config_hash: str = ""
    value: float | None = None  # the new run's value (median of its processes), in the metric's unit
    baseline_value: float | None = None  # the baseline's value (the level before the change)
    baseline_run_id: int | None = None  # the run compared with (the latest run of the baseline)
    unit: str = "s"
    processes: int = 0  # ok worker processes of the new run's result (0: measured in one process)
    min_effect: float = math.nan  # the case's minimum effect (configs/gates.yaml)
    confidence: float = math.nan  # of the effect's interval
    events: list[tuple[int | None, str]] = field(default_factory=list)
    """Environment changes in the judged history, oldest first: (the first run under the new
    environment, what changed: ``"driver 550.54 -> 560.28"``); candidate change points of the
    detector, and an alert placed at one is attributed to it (``reason``: "after ...")."""
    reverted_at_run: int | None = None
    """A recent alert of this series whose level came back (the run that came back), when the
    new run raised none; ``revert`` says which."""
    revert: str = ""
    # The new run's value adjusted by the reference probe, in the metric's unit, where the judge
    # used the adjustment (None: judged on the raw `value`); `probe` says what the probe did.
    adjusted_value: float | None = None
    probe: str = ""
    # Whether a regression of this metric at this place fails the gate (configs/gates.yaml
    # `blocking`, or a re-measurement that reproduced it: `confirmation`); a regression that does
    # not block is judged, shown and plotted, and says why it did not fail.
    blocking: bool = True
    # The re-measurements of a regression (`confirm`): per attempt, its value, effect and verdict.
    confirmation: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failing(self) -> bool:
        if self.verdict == Verdict.REGRESSION and not self.blocking:
            return False
        return self.verdict in FAILING

    @property
    def series_metric(self) -> str:
        """The stored metric of the judged series: "time" (gated as time or throughput),
        "instructions", ... (`benchmark.metrics.Metric.series`)."""
        return get_metric(self.metric).series

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.case_id, self.place, self.mode, self.series_metric)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "failing": self.failing}
