"""The decisions behind the reports, read from the history store.

* :func:`judged_rows`: the one judge's decisions on a run (:func:`benchmark.gate.judge`) as report
  rows, so the reports, the dashboard badges and `benchmark gate` never disagree.
* :func:`analyse`: a series' change points (`Store.series` reads it), the alerts the online detector
  would have raised, fed as the gate feeds it, and its status. The method: docs/detection.md.

Everything returned is plain, picklable data, so plots can be rendered in worker processes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.analysis.online import Alert
from benchmark.analysis.segmentation import ChangePoint, segment
from benchmark.datamodel.metrics import CONFIDENCE, TIME
from benchmark.datamodel.run import RunRecord
from benchmark.datamodel.series import Series
from benchmark.datamodel.verdict import FAILING, Evidence, Verdict, verdict_words
from benchmark.gate.judge import Decision, GateInputError, evaluate, nothing_to_compare
from benchmark.gate.series import detector_feed, online_alerts
from benchmark.gate.settings import (
    DEFAULT_GATES_PATH,
    GateDefaults,
    GateError,
    Gates,
    load_gates,
    with_min_effect,
)
from benchmark.report import words

# The gate's built-in defaults (benchmark/gate/settings.py); configs/gates.yaml's are read when it exists.
DEFAULT_MIN_EFFECT = GateDefaults().min_effect
DEFAULT_ALPHA = GateDefaults().alpha
RECENT_RUNS = 7  # an alert this many runs old or newer sets a series' status
MIN_RUNS_TO_TEST = 8  # the online gate's `min_history`
FLOOR_RUNS = 30  # runs whose raw samples set the noise floor of the history analysis

ERROR_STATUSES = (Verdict.FAILED, Verdict.ERROR, Verdict.WRONG)
STATUS_ORDER = (
    "wrong",
    "regression",
    "error",
    "improvement",
    "inconclusive",
    "skipped",
    "new",
    "pass",
    "ok",
    "not in run",
)


# --------------------------------------------------------------------------------------------- settings


def default_min_effect(project_root: str | Path | None = None) -> float:
    """`defaults.min_effect` of configs/gates.yaml when it is readable, else the built-in default."""
    path = Path(project_root) / "configs" / "gates.yaml" if project_root else DEFAULT_GATES_PATH
    try:
        return load_gates(path).spec.defaults.min_effect
    except GateError:  # unreadable or invalid: the gate command reports it, the report falls back
        return DEFAULT_MIN_EFFECT


# ------------------------------------------------------------------------------------------ A/B of a run


@dataclass
class Row:
    """One result of a run and what it is compared with."""

    case_id: str
    name: str
    place: str
    mode: str
    config_hash: str
    verdict: Verdict
    """The judge's verdict (benchmark.gate.judge): what the gate, the badge and the reports say (the
    A/B chart words it slower, faster, same: `benchmark.datamodel.verdict.VERDICT_WORDS`)."""
    unit: str = "s"
    new_median: float | None = None
    # The new run's value adjusted by the reference probe where the judge used it; then the
    # baseline median and the ratio are adjusted values too (None: all raw).
    adjusted_median: float | None = None
    baseline_median: float | None = None
    baseline_run_id: int | None = None
    baseline_commit: str | None = None
    ratio: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    p_value: float = math.nan
    q_value: float = math.nan
    confidence: float = CONFIDENCE
    min_effect: float = DEFAULT_MIN_EFFECT
    reason: str = ""
    message: str | None = None
    history: str | None = None
    """The online detector's verdict on the newest run (regression/improvement), if it fired."""
    history_magnitude: float = math.nan
    history_change_run_id: int | None = None
    metric: str = TIME
    """The stored metric of the row's series: time (gated as time or throughput), instructions
    (--bench-instructions), ... (benchmark/datamodel/metrics.py)."""
    evidence_kind: Evidence = Evidence.NONE
    """Where the judge's evidence came from."""
    processes: int = 0
    """Worker processes of the new result (0: measured in one process)."""
    events: list[tuple[int | None, str]] = field(default_factory=list)
    """Environment changes in the judged history: (first run under the new one, what changed)."""
    revert: str = ""
    """A recent alert of the series whose level came back (the judge's words), or ""."""

    @property
    def regressed(self) -> bool:
        return self.verdict == Verdict.REGRESSION

    @property
    def improved(self) -> bool:
        return self.verdict == Verdict.IMPROVEMENT

    @property
    def label(self) -> str:
        metric = "" if self.metric == TIME else f", {self.metric}"
        return f"{self.case_id} [{self.place}, {self.mode}{metric}]"


BASELINE_TEXT = (
    "the history of each series on the same machine (same case, config, place, mode): the online detector "
    "over its run values, or an A/B against its previous run (worker processes as the unit) while it has "
    "fewer than 12 runs; FDR-controlled across the run"
)


def _row(d: Decision, commits: Mapping[int, str | None]) -> Row:
    """A report row from the gate's decision for one result (the report shows what the gate decided)."""
    alerted = d.evidence_kind == Evidence.HISTORY and d.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT)
    return Row(
        case_id=d.case_id,
        name=d.name,
        place=d.place,
        mode=d.mode,
        config_hash=d.config_hash,
        verdict=d.verdict,
        unit=d.unit,
        new_median=d.value,
        adjusted_median=d.adjusted_value,
        baseline_median=d.baseline_value,
        baseline_run_id=d.baseline_run_id,
        baseline_commit=commits.get(d.baseline_run_id) if d.baseline_run_id is not None else None,
        ratio=1.0 + d.effect,
        ci_low=1.0 + d.ci_low,
        ci_high=1.0 + d.ci_high,
        p_value=d.p_value,
        q_value=d.q_value,
        reason="; ".join(
            x
            for x in (
                d.evidence,
                d.baseline and f"baseline: {d.baseline}",
                d.reason,
                d.probe if d.adjusted_value is not None else "",
            )
            if x
        ),  # fmt: skip
        message=d.reason if d.verdict in (*ERROR_STATUSES, Verdict.SKIPPED) else None,
        history=d.verdict if alerted else None,
        history_magnitude=d.effect if alerted else math.nan,
        history_change_run_id=d.change_run_id if alerted else None,
        metric=d.series_metric,
        evidence_kind=d.evidence_kind,
        processes=d.processes,
        events=list(d.events),
        revert=d.revert,
        min_effect=d.min_effect if math.isfinite(d.min_effect) else DEFAULT_MIN_EFFECT,
        confidence=d.confidence if math.isfinite(d.confidence) else CONFIDENCE,
    )


def judged_rows(
    store,
    run_id: int,
    baseline: int | None = None,
    *,
    min_effect: float | None = None,
    gates: Gates | None = None,
) -> list[Row]:
    """What the gate decided for every result of `run_id`, as report rows, in the run's order.

    `baseline` is a run id (an A/B between two runs) or None: each series' history (see
    :mod:`benchmark.gate.judge`). The thresholds are configs/gates.yaml's; `min_effect` replaces its
    default. Raises LookupError when the run or the baseline run does not exist.
    """
    gates = with_min_effect(gates or load_gates(DEFAULT_GATES_PATH), min_effect)
    try:
        decisions = evaluate(store, run_id, gates, baseline)
    except GateInputError as e:
        raise LookupError(str(e)) from None
    commits: dict[int, str | None] = {}
    for d in decisions:
        rid = d.baseline_run_id
        if rid is not None and rid not in commits:
            commits[rid] = run.git_commit if (run := store.run(rid)) else None
    return [_row(d, commits) for d in decisions]


def tally(rows: Iterable[Row]) -> dict[str, int]:
    """cases, regressions, improvements, inconclusive, pass, new, errors, skipped."""
    rows = list(rows)
    by = {v: sum(r.verdict == v for r in rows) for v in Verdict}
    return {
        "cases": len(rows),
        "regressions": by[Verdict.REGRESSION],
        "improvements": by[Verdict.IMPROVEMENT],
        "inconclusive": by[Verdict.INCONCLUSIVE],
        "pass": by[Verdict.PASS],
        "new": by[Verdict.NEW],
        "errors": sum(by[v] for v in ERROR_STATUSES),
        "skipped": by[Verdict.SKIPPED],
        "history_alerts": sum(r.history == Verdict.REGRESSION for r in rows),
    }


def gate_passed(rows: Iterable[Row]) -> bool:
    """The gate, as the judge decided it: no case regressed, errored or failed its checks."""
    return not any(r.verdict in FAILING for r in rows)


def run_notice(rows: Iterable[Row], baseline: int | None = None) -> str | None:
    """The judge's notice for a run with nothing to compare yet (see benchmark.gate.judge), or None."""
    return nothing_to_compare((r.verdict for r in rows), baseline)


NOT_IN_RUN = "not in run"


@dataclass(frozen=True)
class Judged:
    """What the judge said about one series in the judged run, in the words every view shows."""

    status: str
    """The dashboard's status word for the verdict (`benchmark.datamodel.verdict.VERDICT_WORDS`)."""
    effect: str = ""
    """The effect with its interval, as `benchmark gate` prints it (``+4.8% (+2.1% .. +7.6%)``);
    "" where the verdict has no number (new, skipped, error)."""
    reason: str = ""
    """Why, in the judge's words (evidence, baseline, reason)."""


def judged_by_series(rows: Iterable[Row], machine: str) -> dict[tuple, Judged]:
    """The judge's decision on each series, by series key (as `Series.report_key`, on `machine`, the
    judged run's): what a badge, a dashboard row and a trend plot of that series say about the run."""
    out = {}
    for r in rows:
        key = (r.case_id, r.config_hash, r.place, r.mode, machine)
        effect = (
            words.effect(r.ratio - 1.0, r.ci_low - 1.0, r.ci_high - 1.0) if math.isfinite(r.ratio) else ""
        )
        if effect and r.adjusted_median is not None:  # as `benchmark gate` marks it
            effect = f"probe-adjusted {effect}"
        judged = Judged(verdict_words(r.verdict).status, effect, r.reason or (r.message or ""))
        out[key if r.metric == TIME else (*key, r.metric)] = judged
    return out


def judged_run_id(store) -> int | None:
    """The run a view judges by default: the latest run of the suite, or, in a history with none (all
    imported), the latest run."""
    latest = store.latest_run_id(suite=True)
    return latest if latest is not None else store.latest_run_id()


SIDE_JOB_TRIGGERS = ("compare", "bisect", "import")  # runs that are not the suite's own
RUNS_LOOKED_AT = 100  # the latest runs the dashboard looks through for its latest complete run


def ran(run: RunRecord) -> int:
    """The results of a run that ran (its stored results but the skipped ones)."""
    return run.results - run.results_by_status.get("skipped", 0)


def latest_complete(runs: Sequence[RunRecord]) -> tuple[RunRecord | None, list[RunRecord]]:
    """Of `runs` (newest first, as `Store.runs` gives them): the latest complete run of the suite, and
    the suite's partial runs after it, newest first.

    A run is complete when it finished `complete` and measured the whole selection: it was not
    narrowed by -k or -m (its `selection`), or it ran at least as many results as the complete run
    before it (the first run of a history counts as complete). Runs of `benchmark compare`, `bisect`
    and imports are not the suite's.
    """
    suite = [r for r in runs if r.trigger not in SIDE_JOB_TRIGGERS]
    found: RunRecord | None = None
    for run in reversed(suite):
        narrowed = bool(run.extra.get("selection"))
        if run.status == "complete" and (not narrowed or found is None or ran(run) >= ran(found)):
            found = run
    if found is None:
        return None, []
    return found, [r for r in suite[: suite.index(found)]]


def series_min_effect(gates: Gates, series: Series) -> float:
    """The minimum effect configs/gates.yaml sets for a series (as the judge applies it)."""
    return gates.for_case(series.case_id, series.name, series.place, series.metric).min_effect


# --------------------------------------------------------------------------------------- series history


@dataclass
class SeriesAnalysis:
    """Change points and online alerts of a series, and the status they add up to."""

    change_points: list[ChangePoint]
    alerts: list[Alert]
    status: str
    alert: Alert | None = None
    """The alert that set the status (recent, not reverted)."""
    judged: Judged | None = None
    """The judge's decision on the series in the judged run (then `status` is its word), or None."""

    def with_judged(self, judged: Judged | None) -> SeriesAnalysis:
        """This analysis with the judge's decision on the judged run as its status (a series without a
        result in that run: "not in run")."""
        return dataclasses.replace(self, status=judged.status if judged else NOT_IN_RUN, judged=judged)


def analyse(
    series: Series, *, min_effect: float = DEFAULT_MIN_EFFECT, recent: int = RECENT_RUNS
) -> SeriesAnalysis:
    """Offline change points, online alerts and the status of one series: the detector fed as the
    gate feeds it (`benchmark.gate.series.detector_feed`, one value per run)."""
    values = series.values
    n = values.size
    feed = detector_feed(series, series.metric, every_run=True)
    usable = n >= 4 and bool(np.all(np.isfinite(feed.values)))
    samples = _floor_samples(feed.samples)
    events = series.events or None
    kw: dict[str, Any] = {"min_effect": min_effect, "higher_is_better": False, "events": events}
    cps = segment(feed.values, samples=samples, **kw) if usable else []
    alerts = online_alerts(feed.values, samples, feed.procs, **kw) if usable else []
    status, alert = _status(series, alerts, recent)
    return SeriesAnalysis(change_points=cps, alerts=alerts, status=status, alert=alert)


def _floor_samples(samples: list[np.ndarray], last: int = FLOOR_RUNS) -> list | None:
    """Raw samples of the last `last` runs only (None for the others; None without samples).

    The analysis uses raw samples only for a floor under the between-run noise: the median of the
    per-run standard errors. The latest runs estimate it as well as all of them, at a quarter of
    the cost on a 365-run history.
    """
    n = len(samples)
    if not any(x.size for x in samples):
        return None
    keep = min(n, last)
    return [None] * (n - keep) + list(samples[n - keep :])


def _status(series: Series, alerts: list[Alert], recent: int) -> tuple[str, Alert | None]:
    latest = series.latest_status
    if latest in ERROR_STATUSES:
        return "error", None
    if latest == "skipped":
        return "skipped", None
    n = len(series)
    live = [a for a in alerts if a.reverted_at is None and a.index >= n - recent]
    if live:
        return live[-1].direction, live[-1]
    if n < MIN_RUNS_TO_TEST:
        return "new", None
    return "ok", None


def analyse_one(args: tuple[Series, float]) -> SeriesAnalysis:
    """`analyse` for a process pool (one picklable argument)."""
    series, min_effect = args
    return analyse(series, min_effect=min_effect)
