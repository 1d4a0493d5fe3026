"""How the judge (:mod:`benchmark.gate.judge`) decides one series: its run values through the online
history detector, or an A/B of worker-process values against the previous run or another run, or
the level rule for a deterministic metric (instruction counts); which one is the metric's
(`benchmark.datamodel.metrics.Metric.judge`). The method is in docs/detection.md ("The judge").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from benchmark.analysis.ab_test import compare_processes
from benchmark.analysis.adjust import Adjustment, estimate
from benchmark.analysis.deterministic import check_deterministic
from benchmark.analysis.events import environment_events
from benchmark.analysis.online import DEFAULT_PARAMS, Alert, latest_pvalue, simulate_online
from benchmark.analysis.robust import between_run_noise, pooled_process_spread, process_noise
from benchmark.analysis.standing import level_start, level_test, standing_change
from benchmark.datamodel.metrics import get_metric
from benchmark.datamodel.result import CaseResult, bad_timings, ok_process_values, process_probe
from benchmark.datamodel.series import Series
from benchmark.datamodel.verdict import Decision, Evidence, Verdict
from benchmark.gate.settings import GateSettings

# The detector tests nothing before its noise estimate has `min_noise_runs` residuals and a window
# of two runs: a shorter history falls back to an A/B against the previous run.
MIN_RUNS = max(DEFAULT_PARAMS.min_history, DEFAULT_PARAMS.min_noise_runs + 2)


_AB_EVIDENCE = {"processes": Evidence.AB_PROCESSES, "history_noise": Evidence.AB_HISTORY_NOISE}


def metric_samples(samples: Sequence[float] | np.ndarray, metric: str, batch: int | None) -> np.ndarray:
    """Raw samples (or per-process values) of a result in the units of `metric`: as stored (seconds
    or instructions per iteration), or, for a rate (throughput), items per second."""
    x = np.asarray(samples if samples is not None else [], dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    return (batch or 1) / x if get_metric(metric).rate else x


def run_value(process_values: np.ndarray, samples: np.ndarray) -> float | None:
    """A run's value for a case: the median of its process values, else of its raw samples."""
    if process_values.size:
        return float(np.median(process_values))
    return float(np.median(samples)) if samples.size else None


def ab_side(process_values: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """The values one side of an A/B contributes: its processes', or its one run value."""
    if process_values.size:
        return process_values
    v = run_value(process_values, samples)
    return np.asarray([] if v is None else [v], dtype=float)


def judge_ab(
    decision: Decision,
    base: np.ndarray,
    new: np.ndarray,
    s: GateSettings,
    label: str,
    noise: tuple[float, float] | None,
    spread: tuple[float, float] | None = None,
) -> Decision:
    sigma, df = noise if noise is not None else (None, None)
    c = compare_processes(
        base, new, min_effect=s.min_effect, higher_is_better=s.higher_is_better, alpha=s.alpha,
        noise=sigma, noise_df=df, spread=spread,
    )  # fmt: skip
    decision.effect = c.ratio - 1.0
    decision.ci_low, decision.ci_high = c.ci_low - 1.0, c.ci_high - 1.0
    decision.confidence = c.confidence
    decision.p_value = c.p_value
    decision.verdict = c.verdict
    decision.evidence_kind = _AB_EVIDENCE.get(c.method, Evidence.NONE)
    if c.method == "processes":
        decision.evidence = (
            f"A/B, processes as the unit ({c.n_baseline} vs {c.n_candidate}): p={c.p_value:.2g}"
        )
    elif c.method == "history_noise":
        decision.evidence = f"A/B of run values against the history's between-run noise: p={c.p_value:.2g}"
    else:
        decision.evidence = "A/B: no honest variance estimate"
    decision.baseline = label
    decision.baseline_value = float(np.median(base)) if base.size else None
    decision.reason = c.reason
    return decision


def earlier_runs(base: Series | None, s: GateSettings, batch) -> tuple[list, list, list, list]:
    """(run ids, run values, raw samples, process values) of a series' earlier ok runs, oldest
    first, in the metric's units; runs with invalid samples are left out (the caller says so)."""
    if base is None:
        return [], [], [], []
    feed = detector_feed(base, s.metric, batch)
    return feed.run_ids, feed.values, feed.samples, feed.procs


@dataclass
class Feed:
    """What the online history detector is fed for one series, one entry per run, oldest first: the
    run ids (a CSV's row indices), the run values, raw samples and process values in the metric's
    units. `benchmark gate`, the trend plots and `benchmark detect` all feed it through
    `detector_feed` and `online_alerts`, so a plot's alerts come from the gate's inputs."""

    run_ids: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    samples: list[np.ndarray] = field(default_factory=list)
    procs: list[np.ndarray] = field(default_factory=list)


def detector_feed(
    series: Series, metric: str = "time", batch: int | None = None, *, every_run: bool = False
) -> Feed:
    """The detector's inputs of a series. A run's value is the median of its process values, else of
    its raw samples (`run_value`); a series not read from the store (a CSV of `benchmark detect`)
    has its values as given. A run with invalid samples (NaN, infinite, not positive: older
    histories) is left out, or with `every_run` (a plot, one point per run) fed its stored value."""
    n = len(series)
    if not series.result_ids:  # not from the store: the values as given, samples where the CSV has them
        return Feed(list(range(n)), series.values.tolist(), list(series.samples), [np.empty(0)] * n)
    feed = Feed()
    raws = series.samples if len(series.samples) == n else [np.empty(0)] * n
    pvs = series.process_values if len(series.process_values) == n else [np.empty(0)] * n
    for i, (run, raw, pv) in enumerate(zip(series.run_ids, raws, pvs, strict=True)):
        bad = bad_timings(raw)
        x = metric_samples(raw, metric, batch)
        p = metric_samples(pv, metric, batch)
        v = None if bad else run_value(p, x)
        if v is None and every_run:
            x, p = np.empty(0), np.empty(0)
            v = (
                float(metric_samples([series.values[i]], metric, batch)[0])
                if series.values[i] > 0
                else math.nan
            )
        if v is not None:
            feed.run_ids.append(run)
            feed.values.append(v)
            feed.samples.append(x)
            feed.procs.append(p)
    return feed


def online_alerts(values: Sequence[float], samples, procs, *, min_effect: float, higher_is_better: bool,
                  events: Mapping[int, str] | None) -> list[Alert]:  # fmt: skip
    """The online detector over run values as the gate runs it: raw samples and each run's process
    noise set the floor under its between-run noise; `events` are the runs after environment changes."""
    noise = [process_noise(p) for p in procs]
    return simulate_online(values, min_effect=min_effect, higher_is_better=higher_is_better, samples=samples,
                           noise=noise, events=events)  # fmt: skip


# A young series' level: at most this many of its earlier runs (as the history detector's level).
YOUNG_LEVEL_RUNS = 10


def series_noise(earlier: tuple[list, list, list, list]) -> tuple[float, float] | None:
    """(spread, degrees of freedom) between the latest YOUNG_LEVEL_RUNS of a series' `earlier_runs`,
    what the judge fits the prior of a young series' noise to (`benchmark.analysis.pooled_noise`)."""
    return between_run_noise(earlier[1][-YOUNG_LEVEL_RUNS:])


def _pooled(noise: tuple[float, float] | None, s: GateSettings) -> tuple[float, float] | None:
    """A young series' own between-run noise pooled with the prior of the run's series, if any."""
    if noise is None or s.noise_prior is None:
        return noise
    return s.noise_prior.moderate(noise)


def _noise_words(own: tuple[float, float], s: GateSettings) -> str:
    """How a young series' noise was estimated, for its evidence."""
    if s.noise_prior is None:
        return f"its between-run noise ({own[0]:.1%}, {own[1]:.1f} df)"
    sigma, df = s.noise_prior.moderate(own)
    return (
        f"its between-run noise ({own[0]:.1%}, {own[1]:.1f} df) pooled with that of "
        f"{s.noise_prior.series} series on this machine ({s.noise_prior.sigma:.1%}, "
        f"{s.noise_prior.df:.1f} df): {sigma:.1%}, {df:.1f} df"
        + (
            f" (at most the {s.noise_prior.max_df:.0f} independent run-to-run changes behind it)"
            if s.noise_prior.max_df is not None
            else ""
        )
    )


# From this many runs in its level a young series is judged on run values against their
# between-run spread (the machine's drift between runs shows there); below it on process values.
YOUNG_RUN_VALUES = 3


def _young_ab(decision: Decision, level: list[int], values, samples, procs, new_runs: list[tuple], s: GateSettings,
              label: str, upto: int | None = None) -> Decision:  # fmt: skip
    """A young series' new run(s) (`new_runs`: (raw samples, process values) each) against its
    level. With YOUNG_RUN_VALUES level runs or more: run values against the level's run values and
    their between-run noise (one new run is one value: the drift between runs is its noise, not
    the spread inside it); with fewer, the processes of the level's runs against the new ones.
    `upto`: the number of earlier runs, where a new run is judged; its noise is then the larger of
    the level's and that of the last YOUNG_LEVEL_RUNS earlier runs, so that a run left out of the
    level as a regression that came back still counts in how far the series moves."""
    level_values = [values[i] for i in level]
    noise = between_run_noise(level_values)
    if upto is not None and noise is not None:
        every = between_run_noise(values[max(0, upto - YOUNG_LEVEL_RUNS) : upto])
        noise = every if every is not None and every[0] > noise[0] else noise
    if len(level) >= YOUNG_RUN_VALUES and noise is not None:
        new_values = [run_value(p, x) for x, p in new_runs]
        base, new = np.asarray(level_values), np.asarray([v for v in new_values if v is not None])
        decision = judge_ab(decision, base, new, s, label, _pooled(noise, s), None)
        decision.evidence += f"; {_noise_words(noise, s)}"
        return decision
    base = np.concatenate([ab_side(procs[i], samples[i]) for i in level])
    new = np.concatenate([ab_side(p, x) for x, p in new_runs])
    if len(level) == 1:  # one run: as against the previous run, with the noise of every run before
        earlier = level[0] + 1
        noise = between_run_noise(values[:earlier])
        return judge_ab(decision, base, new, s, label, noise, pooled_process_spread(procs[: earlier - 1]))
    return judge_ab(
        decision, base, new, s, label, noise, pooled_process_spread([procs[i] for i in level[:-1]])
    )


def young_replay(values, samples, procs, s: GateSettings) -> tuple[list[int], int | None]:
    """(the level the next run is judged against, the run where a regression still standing was
    raised) of a young series, replayed run by run as the gate judged each: a run joins the level
    unless it was a regression, or it continues one (still at least the minimum effect worse than
    the level before it); an improvement starts a new level. So a regression raised on a young
    series stays against the level before it, run after run, until it comes back or the series
    is old enough for the history detector."""
    level: list[int] = [0] if values else []
    standing: int | None = None
    for t in range(1, len(values)):
        blank = Decision(
            case_id="", name="", place="", mode="", metric=s.metric, verdict=Verdict.INCONCLUSIVE
        )
        d = _young_ab(
            blank, level[-YOUNG_LEVEL_RUNS:], values, samples, procs, [(samples[t], procs[t])], s, "", upto=t
        )
        worse = d.verdict == Verdict.REGRESSION or (
            standing is not None and math.isfinite(d.effect) and _worse_by(d.effect, s) >= s.min_effect
        )
        if worse:
            standing = t if standing is None else standing
            continue
        standing = None
        level = [t] if d.verdict == Verdict.IMPROVEMENT else [*level, t]
    return level[-YOUNG_LEVEL_RUNS:], standing


def _worse_by(effect: float, s: GateSettings) -> float:
    """How much worse a relative change is (negative: better), for a metric where lower or higher
    is better."""
    return -effect if s.higher_is_better else effect


def judge_young(decision: Decision, runs, values, samples, procs, new, new_procs, s: GateSettings,
                run_id: int | None = None) -> Decision:  # fmt: skip
    """A series with fewer runs than the history detector needs: the new run against the series'
    level (its earlier runs since the last change, `young_replay`). A regression raised on an
    earlier run keeps failing while the new run stays at least the minimum effect worse than the
    level before it, tested with every run since it was raised (as the history detector's standing
    changes are)."""
    level, standing = young_replay(values, samples, procs, s)
    decision.baseline_run_id = runs[level[-1]]
    if len(values) == 1:
        label = f"run {runs[-1]} (A/B: only 1 earlier run(s), the history gate needs {MIN_RUNS - 1})"
    else:
        span = f"run {runs[level[0]]}" if len(level) == 1 else f"runs {runs[level[0]]}..{runs[level[-1]]}"
        label = (
            f"{span}, the level of a young series ({len(values)} earlier runs; "
            f"the history gate needs {MIN_RUNS - 1})"
        )
    decision = _young_ab(
        decision, level, values, samples, procs, [(new, new_procs)], s, label, upto=len(values)
    )
    if standing is None:
        return decision
    raised = runs[standing]
    if not (math.isfinite(decision.effect) and _worse_by(decision.effect, s) >= s.min_effect):
        decision.reverted_at_run = run_id
        decision.revert = f"the regression raised at run {raised} came back"
        decision.evidence += f"; {decision.revert}"
        return decision
    since = [(samples[i], procs[i]) for i in range(standing, len(values))]
    noise = between_run_noise([values[i] for i in level])
    if len(level) >= YOUNG_RUN_VALUES and noise is not None:
        # the runs since the regression against the level before it, under the level's between-run
        # noise (as the history detector's standing changes are tested: benchmark.analysis.standing)
        later = np.log([v for v in (run_value(p, x) for x, p in [*since, (new, new_procs)]) if v is not None])
        before = np.log([values[i] for i in level])
        sigma, df = _pooled(noise, s)
        est = float(np.mean(later) - np.mean(before))
        se = sigma * math.sqrt(1.0 / later.size + 1.0 / before.size)
        sign = -1.0 if s.higher_is_better else 1.0
        decision.p_value = float(sps.t.sf(sign * est / se, df)) if se > 0 else 0.0
        half = float(sps.t.isf(s.alpha, df)) * se
        decision.effect = math.expm1(est)
        decision.ci_low, decision.ci_high = math.expm1(est - half), math.expm1(est + half)
        decision.evidence_kind = Evidence.AB_HISTORY_NOISE
        decision.evidence = (
            f"{later.size} run(s) since against {before.size} of the level, {_noise_words(noise, s)}: "
            f"p={decision.p_value:.2g}"
        )
        decision.reason = (
            f"worse: {decision.effect:+.1%} since run {raised}, p={decision.p_value:.2g} one-sided"
        )
    else:
        decision = _young_ab(decision, level, values, samples, procs, [*since, (new, new_procs)], s, label)
    decision.verdict = Verdict.REGRESSION
    decision.change_run_id = raised
    decision.evidence = (
        f"young series: the regression raised at run {raised} still holds ({len(since) + 1} run(s) at "
        f"{decision.effect:+.1%} against the level before it); {decision.evidence}"
    )
    return decision


def adjusted(adj: Adjustment, probes, values, samples, procs, new, new_procs, result: CaseResult):
    """(values, samples, process values) of the earlier runs and (samples, process values) of the
    new run, each divided by its run's factor of `adj` (unchanged where it is not used)."""
    if not adj.used:
        return values, samples, procs, new, new_procs
    factors = [adj.factor(p) for p in probes]
    f = adj.factor(process_probe(result.processes))
    return (
        [v / k for v, k in zip(values, factors, strict=True)],
        [x / k for x, k in zip(samples, factors, strict=True)],
        [p / k for p, k in zip(procs, factors, strict=True)],
        new / f,
        new_procs / f,
    )


def judge_history(
    decision: Decision,
    base: Series | None,
    new: np.ndarray,
    new_procs: np.ndarray,
    result: CaseResult,
    s: GateSettings,
    envs: Mapping[int, Mapping[str, Any]] | None,
    earlier: tuple[list, list, list, list],
) -> Decision:
    """Judge a result against its series' history `base`, whose `earlier_runs` are `earlier`."""
    runs, values, samples, procs = earlier
    if not runs:
        decision.verdict, decision.reason = Verdict.NEW, "no earlier ok result of this series on this machine"
        return _acknowledged(decision, base)
    if s.probe_adjust and base is not None:
        by_run = dict(zip(base.run_ids, base.probes, strict=False))
        probes = [by_run.get(r) for r in runs]
        # estimated from the earlier runs the gate looks at, never from the judged one
        adj = estimate(values[-s.history_runs :], probes[-s.history_runs :])
        values, samples, procs, new, new_procs = adjusted(
            adj, probes, values, samples, procs, new, new_procs, result
        )
        if adj.used:
            decision.adjusted_value = run_value(new_procs, new)
        decision.probe = adj.describe() if adj.runs else ""
    value = run_value(new_procs, new)
    if len(values) + 1 < MIN_RUNS:
        return judge_young(decision, runs, values, samples, procs, new, new_procs, s, result.run_id)
    values = [*values, value][-(s.history_runs + 1) :]
    samples = [*samples, new][-(s.history_runs + 1) :]
    noise = [process_noise(p) for p in [*procs, new_procs]][-(s.history_runs + 1) :]
    runs = runs[-s.history_runs :]
    ids = [*runs, result.run_id]
    events = environment_events([(envs or {}).get(r) for r in ids])
    decision.events = [(ids[i], label) for i, label in sorted(events.items())]
    kw = {"higher_is_better": s.higher_is_better, "samples": samples, "noise": noise}
    alerts = online_alerts(values, samples, [*procs, new_procs][-(s.history_runs + 1) :], min_effect=s.min_effect,
                           higher_is_better=s.higher_is_better, events=events)  # fmt: skip
    newest = len(values) - 1
    alert = alerts[-1] if alerts and alerts[-1].index == newest else None
    # one-sided, in the direction of the alert (worse when there is none)
    better = alert is not None and alert.direction != "regression"
    decision.p_value = latest_pvalue(values, **{**kw, "higher_is_better": s.higher_is_better != better})
    decision.evidence_kind = Evidence.HISTORY
    decision.baseline = f"history: {len(values) - 1} runs ({runs[0]}..{runs[-1]})"
    # The effect and its interval: the new run against the level in force before it (the runs
    # since the last accepted change, at most 10 of them), with the history's between-run noise.
    end = alert.change_index if alert is not None else newest
    start = level_start(alerts, end, before=newest)
    level = values[start:end] if start < end else values[max(end - 1, 0) : end]
    level = level or values[:1]
    ref = float(np.median(level))
    est = math.log(values[-1] / ref)
    noise_est = between_run_noise(values[:newest])
    decision.effect = math.expm1(est)
    decision.confidence = 1.0 - 2.0 * s.alpha
    if noise_est is not None:
        sigma, df = noise_est
        half = float(sps.t.isf(s.alpha, df)) * sigma * math.sqrt(1.0 + 1.0 / len(level))
        decision.ci_low, decision.ci_high = math.expm1(est - half), math.expm1(est + half)
    decision.baseline_value = alert.baseline if alert is not None else ref
    decision.baseline_run_id = runs[-1]
    standing = (
        None
        if alert is not None
        else standing_change(values, alerts, min_effect=s.min_effect, higher_is_better=s.higher_is_better)
    )
    if standing is not None:  # raised on an earlier run and still there: tested again, with all its runs
        a = standing.alert
        decision.verdict = Verdict.REGRESSION
        decision.p_value = standing.p_value
        decision.effect = standing.effect
        decision.ci_low, decision.ci_high = standing.interval(s.alpha)
        decision.baseline_value = a.baseline
        return _level_changed(
            decision,
            ids[a.change_index],
            a.event,
            f"online detector: level changed at run {ids[a.change_index]} and still holds: "
            f"{standing.runs} run(s) at {standing.effect:+.1%}, t={standing.t:.1f} (standing)",
        )
    if alert is None:
        decision.verdict = Verdict.PASS
        decision.evidence = f"online detector: no alert (p={decision.p_value:.2g})"
        back = [a for a in alerts if a.reverted_at is not None and a.index >= newest - 10]
        if back:  # a recent excursion that came back: said, so nobody chases it
            a = back[-1]
            decision.reverted_at_run = ids[a.reverted_at]
            decision.revert = (
                f"the {a.direction} raised at run {ids[a.index]} ({a.magnitude:+.1%} from run "
                f"{ids[a.change_index]}) came back at run {ids[a.reverted_at]}"
            )
            decision.evidence += f"; {decision.revert}"
        return decision
    decision.verdict = Verdict.REGRESSION if alert.direction == "regression" else Verdict.IMPROVEMENT
    decision.effect = alert.magnitude
    if alert.direction == "regression":
        # The p-value Benjamini-Hochberg sees across cases: the runs since the change against the
        # level before it. The detector's window statistic clips each run's deviation, which caps
        # its p-value above what a lone regression in a suite of 30+ cases must reach.
        tested = level_test(
            values, alert, alerts, min_effect=s.min_effect, higher_is_better=s.higher_is_better
        )
        if tested is not None:
            decision.p_value = tested.p_value
    return _level_changed(
        decision,
        ids[alert.change_index],
        alert.event,
        f"online detector: {alert.runs} run(s) at {alert.magnitude:+.1%}, |z|={abs(alert.z):.1f} > "
        f"{alert.threshold:.1f} ({alert.kind})",
    )


def _level_changed(decision: Decision, change_run_id: int, event: str | None, evidence: str) -> Decision:
    """A decision that the series' level changed at run `change_run_id` (after environment change
    `event`, when one is placed there), with the detector's `evidence` in words."""
    decision.change_run_id = change_run_id
    decision.evidence = evidence
    decision.reason = f"level changed at run {change_run_id}" + (f" (after {event})" if event else "")
    return decision


def judge_deterministic(
    decision: Decision, base: Series | None, new: np.ndarray, result: CaseResult, s: GateSettings
) -> Decision:
    """A deterministic metric (instruction counts): the level rule on per-run values
    (benchmark/analysis/deterministic.py) decides on the first run after a change, whatever the
    length of the history."""
    runs, values = [], []
    for run, raw in zip(base.run_ids, base.samples, strict=True) if base is not None else ():
        x = metric_samples(raw, s.metric, None) if raw is not None else np.empty(0)
        if x.size:
            runs.append(run)
            values.append(float(np.median(x)))
    if not runs:
        decision.verdict, decision.reason = Verdict.NEW, "no earlier ok result of this series on this machine"
        return _acknowledged(decision, base)
    decision.baseline_run_id = runs[-1]
    judge_level(decision, runs[-s.history_runs :], values[-s.history_runs :], new, s, result)
    return _acknowledged(decision, base)


def _acknowledged(decision: Decision, base: Series | None) -> Decision:
    """Say where an acknowledged series' history starts (`benchmark ack`)."""
    a = base.acknowledgement if base is not None else None
    if a is not None:
        said = f"level acknowledged at run {a.run_id} by {a.by}: {a.why}"
        decision.baseline = f"{decision.baseline}; {said}" if decision.baseline else said
    return decision


def judge_level(
    decision: Decision, runs: list, values: list[float], new: np.ndarray, s: GateSettings, result
) -> Decision:
    c = check_deterministic(
        [*values, float(np.median(new))], min_effect=s.min_effect, noise_floor=s.noise_floor
    )
    decision.effect = c.effect
    decision.ci_low, decision.ci_high = c.effect - c.noise, c.effect + c.noise
    decision.baseline_value = c.reference
    first = runs[c.level_start] if c.level_start < len(runs) else result.run_id
    m = s.definition
    decision.baseline = f"{m.words} level: {c.level_runs} run(s) from run {first}"
    decision.evidence = (
        f"{m.label} {c.effect:+.2%} against the level (minimum effect {s.min_effect:.1%}, "
        f"noise {c.noise:.2%}, floor {s.noise_floor:.2%})"
    )
    decision.verdict = c.verdict
    decision.evidence_kind = Evidence.DETERMINISTIC
    if c.verdict == Verdict.REGRESSION and c.standing_since is not None:
        since = runs[c.standing_since] if c.standing_since < len(runs) else result.run_id
        decision.change_run_id = since
        decision.reason = (
            f"{m.label} regressed at run {since} and still does: it stands until reverted or "
            f"acknowledged (benchmark ack)"
        )
    elif c.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT):
        decision.change_run_id = result.run_id
        decision.reason = f"{m.label} changed at this run"
    elif c.reverted:
        decision.reason = "back at the level before a recent change (that change is treated as an outlier)"
    return decision


def judge_result(
    d: Decision,
    s: GateSettings,
    result: CaseResult,
    base: Series | None,
    baseline: int | None,
    b: CaseResult | None,
    envs: Mapping[int, Mapping[str, Any]] | None,
    earlier: tuple[list, list, list, list] | None,
) -> None:
    """Decide one ok result into ``d``: against ``baseline`` (a run id; ``b`` is that run's result
    of the series, or None) or, when it is None, against the series' history ``base`` (a
    :class:`~benchmark.datamodel.series.Series`), ``envs`` holding each run's environment and ``earlier``
    the series' `earlier_runs` (None for a metric judged by level)."""
    raw = result.samples or []
    batch = result.batch_size
    new = metric_samples(raw, s.metric, batch)
    procs = metric_samples(ok_process_values(result.processes), s.metric, batch)
    d.processes = int(procs.size)
    d.value = run_value(procs, new)
    if bad_timings(raw):  # only older histories hold such results: never dropped silently
        d.verdict = Verdict.ERROR
        d.reason = f"{bad_timings(raw)} of {len(raw)} raw samples are NaN, infinite or not positive"
    elif d.value is None:
        d.verdict, d.reason = Verdict.NEW, "the result has no raw samples to judge"
    elif baseline is not None:
        if b is None:
            d.verdict, d.reason = Verdict.NEW, f"run {baseline} has no ok result of this series"
            return
        d.baseline_run_id = baseline
        b_raw = metric_samples(b.samples or [], s.metric, b.batch_size)
        b_procs = metric_samples(ok_process_values(b.processes), s.metric, b.batch_size)
        if s.definition.judge == "level":
            judge_level(d, [baseline], [run_value(b_procs, b_raw)], new, s, result)
            return
        # the history's between-run noise and between-process spread, from the runs before the
        # judged one (not the judged one; the baseline run's own spread counts once, as its side)
        assert earlier is not None  # a history-judged metric: the caller extracted its earlier runs
        runs, values, _, run_procs = earlier
        spread = pooled_process_spread([p for r, p in zip(runs, run_procs, strict=True) if r != baseline])
        judge_ab(
            d,
            ab_side(b_procs, b_raw),
            ab_side(procs, new),
            s,
            f"run {baseline}",
            between_run_noise(values),
            spread,
        )
    else:
        if s.definition.judge == "level":
            judge_deterministic(d, base, new, result, s)
        else:
            assert earlier is not None  # as above
            judge_history(d, base, new, procs, result, s, envs, earlier)
            if earlier[0]:  # (a new series said so already)
                _acknowledged(d, base)
        corrupt = (
            [r for r, x in zip(base.run_ids, base.samples, strict=True) if bad_timings(x)] if base else []
        )
        if corrupt:
            left_out = f"earlier run(s) {', '.join(map(str, corrupt))} left out: invalid samples"
            d.reason = "; ".join(p for p in (d.reason, left_out) if p)
