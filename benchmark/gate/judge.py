"""The judge: the one decision function behind `benchmark gate`, the `--bench-gate` pytest items,
the Markdown report and the HTML dashboard (:func:`judge` / :func:`evaluate`), with the per-case
settings of configs/gates.yaml. Reads the store; each series is decided in
:mod:`benchmark.gate.series`, then Benjamini-Hochberg across the run. What it decides and how is
in docs/detection.md ("The judge").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmark.analysis.common_shift import leave_one_out_median, run_shifts
from benchmark.analysis.fdr import adjust_pvalues
from benchmark.analysis.pooled_noise import NoisePrior, noise_prior
from benchmark.datamodel.metrics import TIME, MetricError, get_metric
from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.series import Acknowledgement, Series, SeriesKey
from benchmark.datamodel.verdict import Decision, Evidence, Verdict
from benchmark.gate import numerics
from benchmark.gate.series import YOUNG_LEVEL_RUNS, earlier_runs, judge_result, series_noise
from benchmark.gate.settings import Gates, GateSettings

# Baselines come from complete runs only, unless the caller asks for others (None: any run).
BASELINE_RUN_STATUSES = ("complete",)


class GateInputError(Exception):
    """The gate cannot decide (no such run, an incomplete run): exit status 2."""


@dataclass
class Judgement:
    """The judge's answer for a run: every decision, whether it passes, and a notice when there was
    nothing to compare yet."""

    decisions: list[Decision]
    notice: str | None = None

    @property
    def passed(self) -> bool:
        return passed(self.decisions)


def _decision(result: CaseResult, gates: Gates) -> tuple[Decision, GateSettings]:
    try:
        s = gates.for_case(result.case_id, result.name, result.place, result.metric or TIME)
    except MetricError as e:  # a stored metric this checkout does not define (benchmark/datamodel/metrics.py)
        raise GateInputError(f"{result.case_id} [{result.place} {result.mode}]: {e}") from None
    m = s.definition
    d = Decision(
        case_id=result.case_id,
        name=result.name or result.case_id,
        place=result.place,
        mode=result.mode,
        metric=m.name,
        verdict=Verdict(result.status) if result.status != "ok" else Verdict.PASS,
        config_hash=result.config_hash or "",
        min_effect=s.min_effect,
    )
    # a view of another metric's results (throughput) is in its own unit, the others in the result's
    d.unit = m.unit if m.of is not None else (result.unit or m.unit)
    if result.status != "ok":
        d.reason = result.message or f"the case {result.status}"
    return d, s


def judge(
    store,
    run_id: int | Sequence[int],
    gates: Gates,
    baseline: int | None = None,
    *,
    baseline_statuses: Sequence[str] | None = BASELINE_RUN_STATUSES,
) -> Judgement:
    """The one decision function: every result of `run_id` (or of several runs judged as one, e.g.
    the shards of a run group) judged against its history (`baseline` None) or another run, with
    the notice to show when there was nothing to compare yet. `benchmark gate`, the --bench-gate
    items, the Markdown report and the HTML dashboard all call this."""
    decisions = evaluate(store, run_id, gates, baseline, baseline_statuses=baseline_statuses)
    return Judgement(decisions, nothing_to_compare((d.verdict for d in decisions), baseline))


def evaluate(
    store,
    run_id: int | Sequence[int],
    gates: Gates,
    baseline: int | None = None,
    *,
    baseline_statuses: Sequence[str] | None = BASELINE_RUN_STATUSES,
) -> list[Decision]:
    """One Decision per result of `run_id` (or of several runs judged as one) against the history
    (baseline None) or a run. History baselines come from runs recorded with one of
    `baseline_statuses` (default: complete runs; None: any). See :func:`judge`."""
    run_ids = [run_id] if isinstance(run_id, int) else list(run_id)
    decisions = []
    confirmations: dict[str, Any] = {}
    later: list = []  # (decisions, results, previous results) of each run, for numerics.apply
    for one in run_ids:
        decisions.extend(_evaluate_run(store, one, gates, baseline, baseline_statuses, later))
        run = store.run(one)
        confirmations.update(((run.extra or {}).get(CONFIRMATION_KEY) or {}) if run is not None else {})
    control_fdr(decisions, gates.spec.defaults.alpha)
    apply_blocking(decisions, gates, confirmations if baseline is None else {})
    # after FDR, which must not turn a model's wrong loss or grown memory into inconclusive, and
    # after the blocking rule for wall time, which is not about loss or memory (both block)
    for args in later:
        numerics.apply(*args)
    return decisions


# Where a run keeps the re-measurements of its regressions (run.extra), by `confirmation_key`.
CONFIRMATION_KEY = "confirmation"


def confirmation_key(d: Decision) -> str:
    return f"{d.case_id}|{d.place}|{d.mode}|{d.metric}"


def needs_confirmation(d: Decision, gates: Gates) -> bool:
    """A regression of a metric that `confirm` re-measures, not yet re-measured."""
    return d.verdict == Verdict.REGRESSION and gates.confirms(d.metric) and not d.confirmation


def apply_blocking(decisions: list[Decision], gates: Gates, confirmations: Mapping[str, Any]) -> None:
    """Which regressions fail: one re-measured (`confirmations`, by `confirmation_key`) fails when
    every attempt reproduced it and is `not reproduced` otherwise; one not re-measured fails when
    its metric blocks at its place (configs/gates.yaml `blocking`), and says why when it does not."""
    for d in decisions:
        if d.verdict != Verdict.REGRESSION:
            continue
        c = confirmations.get(confirmation_key(d))
        if isinstance(c, Mapping) and c.get("attempts"):
            d.confirmation = list(c["attempts"])
            figures = ", ".join(
                f"{a.get('effect', math.nan):+.1%} ({a.get('verdict')})" for a in d.confirmation
            )
            if c.get("reproduced"):
                d.blocking = True
                d.reason = f"{d.reason}; reproduced in {len(d.confirmation)} re-measurement(s): {figures}"
            else:
                d.verdict = Verdict.NOT_REPRODUCED
                d.reason = f"{d.reason}; not reproduced when measured again: {figures}"
            continue
        d.blocking = gates.blocks(d.place, d.metric)
        if not d.blocking:
            blocking = gates.blocking(d.place) or []
            d.reason = (
                f"{d.reason}; does not block on {d.place}, where {', '.join(blocking) or 'no metric'} "
                f"block(s): {d.metric} fails only when a re-measurement reproduces it (pytest --bench-gate)"
            )


def _evaluate_run(
    store, run_id: int, gates: Gates, baseline, baseline_statuses, later=None
) -> list[Decision]:
    if store.run(run_id) is None:
        raise GateInputError(f"there is no run {run_id} in {store.display_url}")
    results = store.results(run_id)
    base_results = {}
    if baseline is not None:
        if store.run(baseline) is None:
            raise GateInputError(f"there is no baseline run {baseline} in {store.display_url}")
        base_results = {SeriesKey.of(r): r for r in store.results(baseline) if r.status == "ok"}
    # The series' history: the baseline of the history gate, and its between-run noise for an A/B.
    bases = store.baselines(run_id, last=gates.spec.defaults.history_runs + 1, statuses=baseline_statuses)
    if baseline is None:  # an acknowledged level is where the series' history starts
        bases = acknowledged(bases, store.acknowledgements(b.series_id for b in bases.values()), run_id)
    envs = (
        store.run_environments({run_id} | {r for b in bases.values() for r in b.run_ids})
        if baseline is None
        else {}
    )
    decisions = decide_results(results, bases, gates, baseline, base_results, envs)
    if later is not None:
        # a model's loss at step K and its peak memory, against the series' previous result
        previous = base_results if baseline is not None else numerics.previous_results(store, results, bases)
        later.append((decisions, results, previous))
    return decisions


def judge_attempts(store, run_id: int, results: Sequence[CaseResult], gates: Gates) -> list[Decision]:
    """Results measured again for run `run_id` (regressed cases and control cases beside them),
    judged against the history that run was judged against (the complete runs before it,
    acknowledgements applied), the attempt's common shift estimated from its own results, without
    the false-discovery adjustment across cases: one decision per result, as `confirmation_key`
    names the run's own."""
    bases = store.baselines(run_id, last=gates.spec.defaults.history_runs + 1, statuses=BASELINE_RUN_STATUSES)
    bases = acknowledged(bases, store.acknowledgements(b.series_id for b in bases.values()), run_id)
    again = [dataclasses.replace(r, run_id=run_id) for r in results]
    envs = store.run_environments({run_id} | {r for b in bases.values() for r in b.run_ids})
    return decide_results(again, bases, gates, None, None, envs)


def acknowledged(
    bases: Mapping[SeriesKey, Series], acks: Mapping[int, Sequence[Acknowledgement]], run_id: int
) -> dict[SeriesKey, Series]:
    """Each series' history from its latest acknowledgement made at or before run `run_id` on
    (`benchmark ack`: the level a user accepted); the others unchanged."""
    out = dict(bases)
    for key, base in bases.items():
        given = [a for a in acks.get(base.series_id, ()) if a.run_id <= run_id]
        if given:
            a = given[-1]
            out[key] = dataclasses.replace(base.since_run(a.run_id), acknowledgement=a)
    return out


def decide_results(
    results: Iterable[CaseResult],
    bases: Mapping[SeriesKey, Series],
    gates: Gates,
    baseline: int | None = None,
    base_results: Mapping[SeriesKey, CaseResult] | None = None,
    envs: Mapping[int, Mapping[str, Any]] | None = None,
) -> list[Decision]:
    """One Decision per result, without the store: each ok result judged against its series'
    history in `bases` (`baseline` None) or against `base_results` (the results of run
    `baseline`), `envs` holding each run's environment. Before Benjamini-Hochberg across cases
    (`control_fdr`), which :func:`evaluate` applies over everything it judged; a replay of
    recorded runs (eval/history_gate_replay.py) calls both.

    Judged against the history (`baseline` None, `common_shift` on in configs/gates.yaml), a wall-
    time series is judged on its values divided by the run's common shift: the median change of
    the run's other time series (at least `common_shift.MIN_OTHERS` of them), so that a run where every case
    moved together (the machine, not the code) is not a regression of each; a change of one case
    stands out against the others. The decision says what was removed."""
    results = list(results)
    shifting = baseline is None and gates.spec.defaults.common_shift
    if shifting:  # every earlier run without its common shift, so the noise is what is left
        bases = without_run_shifts(bases)
    decisions = _decide_results(results, bases, gates, baseline, base_results, envs)
    if not shifting:
        return decisions
    shifts = common_shifts(decisions)
    if not shifts:
        return decisions
    again = [_scaled(results[i], math.exp(-shift)) for i, (shift, _) in shifts.items()]
    redone = _decide_results(again, bases, gates, baseline, base_results, envs)
    for (i, (shift, n)), d in zip(shifts.items(), redone, strict=True):
        d.value = decisions[i].value  # the run's value as measured; the effect is judged without the shift
        d.evidence = f"{d.evidence}; the run's common shift ({math.expm1(shift):+.1%}, median of {n} other series) removed"
        decisions[i] = d
    return decisions


def without_run_shifts(bases: Mapping[SeriesKey, Series]) -> dict[SeriesKey, Series]:
    """The time series of `bases` with each earlier run's common shift removed (every value of a
    run divided by it: `benchmark.analysis.common_shift.run_shifts`); the others unchanged."""
    timed = {k: b for k, b in bases.items() if k.metric == TIME and len(b.run_ids) == len(b.values)}
    shifts = run_shifts(
        {k: dict(zip(b.run_ids, map(float, b.values), strict=True)) for k, b in timed.items()}
    )
    out = dict(bases)
    for key, shift in shifts.items():
        if not shift:
            continue
        b = timed[key]
        k = np.exp(np.asarray([shift.get(r, 0.0) for r in b.run_ids]))
        out[key] = dataclasses.replace(
            b,
            values=np.asarray(b.values, dtype=float) / k,
            samples=[np.asarray(x, dtype=float) / f for x, f in zip(b.samples, k, strict=False)],
            process_values=[
                np.asarray(x, dtype=float) / f for x, f in zip(b.process_values, k, strict=False)
            ],
        )
    return out


def _time_log_change(d: Decision) -> float | None:
    """A time-series decision's log change in time (a throughput effect turned around), or None."""
    if (
        d.series_metric != TIME
        or d.evidence_kind == Evidence.NONE
        or not math.isfinite(d.effect)
        or d.effect <= -1
    ):
        return None
    if d.verdict not in (Verdict.PASS, Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.INCONCLUSIVE):
        return None
    change = math.log1p(d.effect)
    return -change if get_metric(d.metric).higher_is_better else change


def common_shifts(decisions: Sequence[Decision]) -> dict[int, tuple[float, int]]:
    """For each time-series decision (by index) with at least `common_shift.MIN_OTHERS` other
    judged time series: (the median log change in time of the others, how many), the run's common
    shift (`common_shift.leave_one_out_median`)."""
    judged = [(i, c) for i, d in enumerate(decisions) if (c := _time_log_change(d)) is not None]
    changes = [c for _, c in judged]
    out = {}
    for k, (i, _) in enumerate(judged):
        shift = leave_one_out_median(changes, k)
        if shift is not None:
            out[i] = (shift, len(changes) - 1)
    return out


def _scaled(result: CaseResult, k: float) -> CaseResult:
    """A time result with every time (raw samples, process values and their samples) times `k`."""
    return dataclasses.replace(
        result,
        samples=[x * k for x in result.samples or []],
        processes=[
            dataclasses.replace(
                p, value=None if p.value is None else p.value * k, samples=tuple(x * k for x in p.samples)
            )
            for p in result.processes
        ],
    )


def _decide_results(
    results: list[CaseResult],
    bases: Mapping[SeriesKey, Series],
    gates: Gates,
    baseline: int | None,
    base_results: Mapping[SeriesKey, CaseResult] | None,
    envs: Mapping[int, Mapping[str, Any]] | None,
) -> list[Decision]:
    judged = [(result, *_decision(result, gates)) for result in results]
    # each history-judged series' earlier runs, extracted once: for its judge and, judged against
    # the history, for the prior of the young series' noise
    earlier = {
        id(result): earlier_runs(bases.get(SeriesKey.of(result)), s, result.batch_size)
        for result, _, s in judged
        if result.status == "ok" and s.definition.judge == "history"
    }
    history = (
        [(s.metric, earlier[id(r)]) for r, _, s in judged if id(r) in earlier] if baseline is None else []
    )
    priors = noise_priors(history, shifts_removed=baseline is None and gates.spec.defaults.common_shift)
    for result, d, s in judged:
        if priors.get(s.metric) is not None:
            s = dataclasses.replace(s, noise_prior=priors[s.metric])
        if result.status == "ok":
            key = SeriesKey.of(result)
            b = (base_results or {}).get(key)
            judge_result(d, s, result, bases.get(key), baseline, b, envs, earlier.get(id(result)))
    return [d for _, d, _ in judged]


def noise_priors(
    series: Iterable[tuple[str, tuple[list, list, list, list]]], shifts_removed: bool = False
) -> dict[str, NoisePrior | None]:
    """Per metric, the prior a young series' between-run noise is pooled with, from (metric,
    `earlier_runs`) of every history-judged series of the run: fitted to their between-run noise
    (their earlier runs, not the judged one)."""
    by_metric: dict[str, list] = {}
    runs: dict[str, set] = {}
    for metric, earlier in series:
        by_metric.setdefault(metric, []).append(series_noise(earlier))
        runs.setdefault(metric, set()).update(earlier[0][-YOUNG_LEVEL_RUNS:])
    return {
        metric: noise_prior(noises, runs=independent_changes(len(noises), len(runs[metric]), shifts_removed))
        for metric, noises in by_metric.items()
    }


def independent_changes(series: int, runs: int, shifts_removed: bool) -> int:
    """How many independent run-to-run changes `series` series over `runs` runs hold, plus one (the
    `runs` argument of `noise_prior`, which caps its degrees of freedom at that minus one). The
    series of one machine move between the same runs, together: with each run's common shift left
    in, k runs give k - 1 changes however many series share them; with it removed (one parameter
    a run), what is left of S series is about independent: (S - 1)(k - 1) changes."""
    if not shifts_removed:
        return runs
    return max(series - 1, 1) * max(runs - 1, 1) + 1


def control_fdr(decisions: list[Decision], alpha: float) -> None:
    """Benjamini-Hochberg over every tested case: regressions and improvements must survive it."""
    tested = [d for d in decisions if math.isfinite(d.p_value)]
    if not tested:
        return
    q = adjust_pvalues([min(max(d.p_value, 0.0), 1.0) for d in tested], "bh")
    for d, qv in zip(tested, q, strict=True):
        d.q_value = float(qv)
        if d.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT) and qv > alpha:
            d.reason = (
                f"{d.reason}; not significant across {len(tested)} cases (BH q={qv:.2g} > {alpha:g})".lstrip(
                    "; "
                )
            )
            d.verdict = Verdict.INCONCLUSIVE


def incomplete_runs(store, run_ids: Iterable[int]) -> list[str]:
    """One line per run that is not complete (still running, interrupted, incomplete, failed),
    naming the cases it set out to measure and has no result of; [] when every run is complete."""
    lines = []
    for run_id in run_ids:
        run = store.run(run_id)
        if run is None:
            raise GateInputError(f"there is no run {run_id} in {store.display_url}")
        if run.status == "complete" and not run.missing:
            continue
        line = f"run {run_id} is {run.status}"
        if run.note:
            line += f" ({run.note})"
        missing = store.missing_cases(run)
        if missing:
            names = ", ".join(f"{c} [{p} {m}]" for c, p, m in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            line += f": {len(missing)} case(s) without a result: {names}{more}"
        elif run.missing:
            line += f": {run.missing} of {run.expected_results} results missing"
        lines.append(line)
    return lines


def passed(decisions: Iterable[Decision]) -> bool:
    return not any(d.failing for d in decisions)


def nothing_to_compare(verdicts: Iterable[str], baseline: int | None = None) -> str | None:
    """The notice of a run with no baseline at all (every measured case is new: the first run of
    these series on this machine, or `baseline`, a run id, has none of them), or None. Such a run
    passes: it is recorded, nothing more."""
    verdicts = list(verdicts)
    measured = [v for v in verdicts if v not in (Verdict.SKIPPED, Verdict.FAILED, Verdict.ERROR)]
    if not measured or any(v != Verdict.NEW for v in measured):
        return None
    why = (
        f"run {baseline} has no ok result of these series"
        if baseline is not None
        else "no earlier complete run of these series on this machine"
    )
    return f"recorded {len(measured)} series; nothing to compare yet ({why})"
