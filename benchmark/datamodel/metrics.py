"""The metrics: what a series measures, said once per metric.

A :class:`Metric` names its unit (values are formatted through :mod:`benchmark.units` by that
unit), its label in plots and reports, its direction, its default minimum effect, its noise model
and so the judge that decides it. Everything else (configs/gates.yaml's schema, the judge's
dispatch, the reports, the plots, the pytest summary) reads the registry :data:`METRICS`; adding a
metric is one :func:`register` call (here, for the project's own metrics). Only the standard
library and :mod:`benchmark.units` are imported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from benchmark.units import SECONDS, format_value

NoiseModel = Literal["wall_clock", "deterministic"]
JudgeName = Literal["history", "level"]

TIME = "time"  # the metric of a result that names none: SeriesKey's and the store's default

# The level of every interval a user compares: the judged change in `benchmark gate`, its JSON, the
# Markdown report, the dashboard, the A/B chart, a run's interval of its median in the suite's table
# and on the series pages. 98% is the two-sided interval of the judge's one-sided tests at
# configs/gates.yaml's default alpha (0.01): a significant change's interval excludes no change, and
# "same" means the whole interval lies within the minimum effect.
CONFIDENCE = 0.98


def intervals_line(level: float = CONFIDENCE) -> str:
    """The line a page or an output states its intervals' level in, once: ``intervals: 98% confidence``."""
    return f"intervals: {level:.0%} confidence"


class MetricError(ValueError):
    """An unknown metric name, or a metric that cannot be registered; the message says which."""


@dataclass(frozen=True)
class Metric:
    """One metric. Values are per iteration of a case, in `unit`."""

    name: str
    unit: str  # of the values: "s", "items/s", "instructions"; formatted by benchmark.units
    label: str  # what the values are, for axes and headings: "time per iteration"
    higher_is_better: bool = False
    min_effect: float = 0.05  # the default smallest relative change that fails a run
    # How the values vary between runs of unchanged code: "wall_clock" (noisy: the history
    # detector, or an A/B of worker processes, estimates the noise) or "deterministic" (they repeat
    # to a small relative `noise_floor`: the level rule of benchmark/analysis/deterministic.py).
    noise: NoiseModel = "wall_clock"
    noise_floor: float = 0.0  # relative; the noise assumed at least by the level rule
    # The stored metric whose results this one is computed from (None: its own results). A metric
    # of another's results is a view of that series: "throughput" of the "time" series.
    of: str | None = None
    # Values are items per second: the result's batch size over the `of` series' seconds per
    # iteration ("throughput").
    rate: bool = False
    source: str = ""  # what measures it, said in the pytest summary's heading: "callgrind"
    noun: str = ""  # the metric in the judge's sentences ("instruction-count level"); default: name
    whole: bool = False  # counts: the pytest summary writes them whole with thousands separators

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").isalnum():
            raise MetricError(f"metric name {self.name!r}: letters, digits and _ only")
        if not (0 <= self.min_effect < 10) or not (0 <= self.noise_floor < 1):
            raise MetricError(f"metric {self.name!r}: min_effect must be in [0, 10), noise_floor in [0, 1)")
        if self.rate and self.of is None:
            raise MetricError(
                f"metric {self.name!r}: a rate is computed from another metric's results (of=...)"
            )

    @property
    def series(self) -> str:
        """The metric of the stored results this one judges: `of`, or its own name."""
        return self.of or self.name

    @property
    def judge(self) -> JudgeName:
        """Which judge decides it: "history" (the online detector, or an A/B while the history is
        short) for wall-clock noise, "level" (the deterministic level rule) otherwise."""
        return "level" if self.noise == "deterministic" else "history"

    @property
    def seconds(self) -> bool:
        """Its values are durations (shown in ns, µs, ms or s)."""
        return self.unit in SECONDS

    @property
    def words(self) -> str:
        return self.noun or self.name

    def format(self, value: float | None, unit: str | None = None) -> str:
        """A value with its unit, as everywhere (``125.1 µs``, ``812.5 items/s``); ``-`` when missing.
        `unit` overrides the metric's (a stored result names its own)."""
        return format_value(value, unit or self.unit)

    def cell(self, value: float | None) -> str:
        """A value for a table column headed by the unit: whole with separators for counts."""
        if self.whole and value is not None and value == value:
            return f"{value:,.0f}"
        return self.format(value)


METRICS: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    """Add `metric` to the registry (a metric with the same name must be the same definition)."""
    known = METRICS.get(metric.name)
    if known is not None and known != metric:
        raise MetricError(f"metric {metric.name!r} is already registered with another definition")
    if metric.of is not None:
        base = get_metric(metric.of)
        if base.of is not None:
            raise MetricError(f"metric {metric.name!r}: {metric.of!r} is itself computed from {base.of!r}")
    METRICS[metric.name] = metric
    return metric


def unregister(name: str) -> None:
    """Remove a metric (tests that register one clean up with this); the project's own stay."""
    if name in BUILTIN:
        raise MetricError(f"metric {name!r} is one of the project's own and cannot be removed")
    METRICS.pop(name, None)


def get_metric(name: str | None) -> Metric:
    """The metric called `name` (None: time); a clear error listing the known ones otherwise."""
    metric = METRICS.get(name or TIME)
    if metric is None:
        raise MetricError(f"unknown metric {name!r}; known: {', '.join(METRICS)}")
    return metric


def views_of(series: str) -> list[Metric]:
    """The metrics that judge the stored results of `series`: itself first, then those computed
    from it (time: time, throughput)."""
    return [m for m in METRICS.values() if m.series == series]


register(Metric(TIME, "s", "time per iteration"))  # min_effect: the class default
register(Metric("throughput", "items/s", "throughput", higher_is_better=True, of=TIME, rate=True))
register(
    Metric(
        "instructions",
        "instructions",
        "instructions per iteration",
        min_effect=0.01,
        noise="deterministic",
        noise_floor=0.001,
        source="callgrind",
        noun="instruction-count",
        whole=True,
    )
)
register(
    Metric(
        "cycles",
        "cycles",
        "estimated cycles per iteration",
        min_effect=0.01,
        noise="deterministic",
        noise_floor=0.001,
        source="callgrind cache simulation",
        noun="estimated-cycles",
        whole=True,
    )
)
BUILTIN = frozenset(METRICS)
