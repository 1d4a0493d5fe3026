"""Gate settings: `configs/gates.yaml` -> the thresholds that apply to each case.

    defaults:               # the time series of every case
      metric: time          # time (lower is better) or throughput (higher is better)
      min_effect: 0.05      # smallest relative change that fails a run
      alpha: 0.01           # significance of A/B tests; false discovery rate across a run
      history_runs: 100     # runs of a series the history gate looks at
      probe_adjust: true    # judge time series on values adjusted by the reference probe, where
                            # their history shows it lowers their noise (benchmark/analysis/adjust.py)
    instructions:           # a section per other stored metric (benchmark/datamodel/metrics.py), optional
      min_effect: 0.01      # 1%: the counts repeat to ~0.01% between runs
      noise_floor: 0.001    # the noise assumed at least, relative (deterministic metrics only)
    overrides:              # first match wins, on top of the defaults
      - match: "lstm-*"     # glob on the case id (or its name)
        place: "gpu*"       # optional glob on the place
        metric: throughput  # the override applies to the series this metric judges
        min_effect: 0.08

The metric names, their directions and their default minimum effects and noise floors come from
the registry (:mod:`benchmark.datamodel.metrics`). Loaded with the same care as the benchmark configs: safe
YAML, unknown fields rejected, one clear line per problem naming the file and the field.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from benchmark.analysis.pooled_noise import NoisePrior
from benchmark.datamodel.metrics import METRICS, TIME, Metric, MetricError, get_metric
from benchmark.paths import GATES_PATH


class GateError(Exception):
    """gates.yaml cannot be used; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _known(name: str, series: str | None = None) -> str:
    """`name` if it is a registered metric (judging `series`, when given), else a clear error."""
    try:
        metric = get_metric(name)
    except MetricError as e:
        raise ValueError(str(e)) from None
    if series is not None and metric.series != series:
        known = ", ".join(m for m, d in METRICS.items() if d.series == series)
        raise ValueError(f"metric {name!r} does not judge the {series} series; here: {known}")
    return name


class GateDefaults(_Strict):
    metric: str = TIME  # a metric of the time series (time, throughput)
    min_effect: float = Field(default=METRICS[TIME].min_effect, ge=0, lt=10)
    alpha: float = Field(default=0.01, gt=0, lt=0.5)
    history_runs: int = Field(default=100, ge=8)
    probe_adjust: bool = True
    # judge a run's time series with the run's common shift removed (benchmark.gate.judge)
    common_shift: bool = True

    @field_validator("metric")
    @classmethod
    def _metric(cls, name: str) -> str:
        return _known(name, TIME)


class GateOverride(_Strict):
    match: str
    place: str | None = None
    # The series the override applies to is the one its metric judges: none or time or throughput
    # set the case's time series; "instructions" the case's instruction-count series
    # (pytest --bench-instructions) and leaves its time series alone.
    metric: str | None = None
    min_effect: float | None = Field(None, ge=0, lt=10)

    @field_validator("metric")
    @classmethod
    def _metric(cls, name: str | None) -> str | None:
        return None if name is None else _known(name)

    @property
    def series(self) -> str:
        return get_metric(self.metric).series if self.metric else TIME


class MetricGate(_Strict):
    """The section of a stored metric other than time (`instructions:`): its minimum effect and,
    for a deterministic metric, its noise floor; what it leaves out comes from the registry."""

    min_effect: float | None = Field(default=None, ge=0, lt=10)
    noise_floor: float | None = Field(default=None, ge=0, lt=1)


def _sections() -> set[str]:
    """The stored metrics that may have a section of their own (all but time: `defaults`)."""
    return {m.name for m in METRICS.values() if m.of is None and m.name != TIME}


_SECTIONS = "metric_sections"


def _default_blocking() -> dict[str, list[str]]:
    return {"cpu": ["instructions", "cycles"], "gpu*": ["time", "throughput"]}


class Confirm(_Strict):
    """A regression of these metrics is measured again at once, in fresh worker processes, before
    it fails (`pytest benchmark/ --bench-gate`): it fails only if it reproduces every time."""

    metrics: list[str] = Field(default_factory=lambda: ["time", "throughput"])
    rounds: int = Field(default=2, ge=0, le=5)

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, names: list[str]) -> list[str]:
        return [_known(n) for n in names]


class GatesFile(_Strict):
    defaults: GateDefaults = Field(default_factory=GateDefaults)
    overrides: list[GateOverride] = Field(default_factory=list)
    # Per place (a glob; the first that matches), the metrics whose regression fails the gate as
    # judged. A metric named in the table but not for a place is judged and shown there, and fails
    # only when a re-measurement reproduced it (`confirm`); a metric the table never names
    # (memory, loss, ...) and a place no glob matches: every regression blocks.
    blocking: dict[str, list[str]] = Field(default_factory=_default_blocking)
    confirm: Confirm = Field(default_factory=Confirm)

    @field_validator("blocking")
    @classmethod
    def _blocking(cls, places: dict[str, list[str]]) -> dict[str, list[str]]:
        return {place: [_known(n) for n in names] for place, names in places.items()}

    # The sections of the stored metrics other than time, by metric name: top-level keys in YAML
    # (`instructions:`), gathered here when the file is read.
    metric_sections: dict[str, MetricGate] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _gather_sections(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if _SECTIONS in data:  # the name of the gathered sections, not a key of the file
            raise ValueError(f"{_SECTIONS}: unknown field")
        sections = _sections()
        data = dict(data)
        data[_SECTIONS] = {k: data.pop(k) for k in list(data) if k in sections}
        return data

    @model_validator(mode="after")
    def _noise_floors(self) -> GatesFile:
        for name, section in self.metric_sections.items():
            if section.noise_floor is not None and get_metric(name).noise != "deterministic":
                raise ValueError(f"{name}.noise_floor: {name} is not a deterministic metric")
        return self


@dataclass(frozen=True)
class GateSettings:
    """What applies to one series: the metric it is judged as, its direction and the minimum effect."""

    metric: str
    min_effect: float
    alpha: float
    history_runs: int
    noise_floor: float = 0.0  # relative; the floor under a deterministic metric's noise
    # Whether a series measured in time may be judged on values adjusted by the reference probe.
    probe_adjust: bool = True
    # The between-run noise of the run's series on this machine, which a young series' own spread
    # is pooled with (benchmark.analysis.pooled_noise); set by the judge per run, None: not pooled.
    noise_prior: NoisePrior | None = None

    @property
    def definition(self) -> Metric:
        return get_metric(self.metric)

    @property
    def higher_is_better(self) -> bool:
        return self.definition.higher_is_better


@dataclass(frozen=True)
class Gates:
    spec: GatesFile
    source: str

    def blocking(self, place: str) -> list[str] | None:
        """The metrics of the `blocking` table whose regression at `place` fails as judged (None:
        no pattern matches the place, and every metric blocks there)."""
        for pattern, metrics in self.spec.blocking.items():
            if fnmatch.fnmatchcase(place, pattern):
                return metrics
        return None

    def blocks(self, place: str, metric: str) -> bool:
        """Whether a regression of `metric` at `place` fails as judged: a metric the `blocking`
        table names somewhere blocks at the places that list it; any other metric (memory, loss,
        ...) blocks everywhere."""
        named = {m for metrics in self.spec.blocking.values() for m in metrics}
        metrics = self.blocking(place)
        return metric not in named or metrics is None or metric in metrics

    def confirms(self, metric: str) -> bool:
        """A regression of `metric` is measured again before it fails (`confirm`)."""
        return self.spec.confirm.rounds > 0 and metric in self.spec.confirm.metrics

    def for_case(
        self, case_id: str, name: str | None = None, place: str | None = None, series_metric: str = TIME
    ) -> GateSettings:
        """The settings of a case's series of `series_metric`: its time series (the metric is time
        or throughput, per the defaults and overrides) or the series of another stored metric (its
        section, then the overrides whose metric judges that series, over the registry's defaults)."""
        d = self.spec.defaults
        if series_metric == TIME:
            metric, min_effect, noise_floor = d.metric, d.min_effect, 0.0
        else:
            m = get_metric(series_metric)
            section = self.spec.metric_sections.get(m.name) or MetricGate()
            metric = m.name
            min_effect = m.min_effect if section.min_effect is None else section.min_effect
            noise_floor = m.noise_floor if section.noise_floor is None else section.noise_floor
        for o in self.spec.overrides:
            if o.series != series_metric:
                continue
            hit = fnmatch.fnmatchcase(case_id, o.match) or (
                name is not None and fnmatch.fnmatchcase(name, o.match)
            )
            if hit and (o.place is None or (place is not None and fnmatch.fnmatchcase(place, o.place))):
                metric = o.metric or metric
                min_effect = o.min_effect if o.min_effect is not None else min_effect
                break
        return GateSettings(
            metric=metric,
            min_effect=min_effect,
            alpha=d.alpha,
            history_runs=d.history_runs,
            noise_floor=noise_floor,
            probe_adjust=d.probe_adjust and get_metric(metric).series == TIME,
        )


def with_probe_adjust(gates: Gates, on: bool | None) -> Gates:
    """The same gates with the reference probe's adjustment on or off (None: unchanged)."""
    if on is None:
        return gates
    defaults = gates.spec.defaults.model_copy(update={"probe_adjust": bool(on)})
    return Gates(gates.spec.model_copy(update={"defaults": defaults}), gates.source)


def with_min_effect(gates: Gates, min_effect: float | None) -> Gates:
    """The same gates with another default minimum effect (None: unchanged)."""
    if min_effect is None:
        return gates
    defaults = gates.spec.defaults.model_copy(update={"min_effect": float(min_effect)})
    return Gates(gates.spec.model_copy(update={"defaults": defaults}), gates.source)


DEFAULT_GATES_PATH = GATES_PATH


def _problem(err: Any) -> str:
    """One validation error as ``field 'a.b': message`` (a metric's section named as in the file)."""
    loc = [str(p) for p in err["loc"]]
    loc = loc[1:] if loc[:1] == [_SECTIONS] else loc
    msg = (
        "unknown field" if err["type"] == "extra_forbidden" else str(err["msg"]).removeprefix("Value error, ")
    )
    return f"field {'.'.join(loc)!r}: {msg}" if loc else msg


def load_gates(path: str | Path | None) -> Gates:
    """Read gates.yaml; a missing file means the defaults. Raises GateError with a clear line."""
    if path is None or not Path(path).exists():
        return Gates(GatesFile(), "(defaults)")
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise GateError(f"{where}: YAML error: {getattr(e, 'problem', None) or e}") from None
    try:
        return Gates(GatesFile.model_validate(data), str(path))
    except ValidationError as e:
        problems = "; ".join(_problem(err) for err in e.errors())
        raise GateError(f"{path}: {problems}") from None
