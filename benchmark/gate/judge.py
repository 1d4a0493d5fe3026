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

from benchmark.analysis.fdr import adjust_pvalues
from benchmark.analysis.pooled_noise import NoisePrior, noise_prior
from benchmark.gate import numerics
from benchmark.gate.series import earlier_runs, judge_result, series_noise
from benchmark.gate.settings import Gates, GateSettings
from benchmark.metrics import TIME, MetricError
from benchmark.model import CaseResult, Decision, Series, SeriesKey, Verdict

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
    except MetricError as e:  # a stored metric this checkout does not define (benchmark/metrics.py)
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
    later: list = []  # (decisions, results, previous results) of each run, for numerics.apply
    for one in run_ids:
        decisions.extend(_evaluate_run(store, one, gates, baseline, baseline_statuses, later))
    control_fdr(decisions, gates.spec.defaults.alpha)
    # after FDR, which must not turn a model's wrong loss or grown memory into inconclusive
    for args in later:
        numerics.apply(*args)
    return decisions


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
    recorded runs (eval/history_gate_replay.py) calls both."""
    results = list(results)
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
    priors = noise_priors(history)
    for result, d, s in judged:
        if priors.get(s.metric) is not None:
            s = dataclasses.replace(s, noise_prior=priors[s.metric])
        if result.status == "ok":
            key = SeriesKey.of(result)
            b = (base_results or {}).get(key)
            judge_result(d, s, result, bases.get(key), baseline, b, envs, earlier.get(id(result)))
    return [d for _, d, _ in judged]


def noise_priors(series: Iterable[tuple[str, tuple[list, list, list, list]]]) -> dict[str, NoisePrior | None]:
    """Per metric, the prior a young series' between-run noise is pooled with, from (metric,
    `earlier_runs`) of every history-judged series of the run: fitted to their between-run noise
    (their earlier runs, not the judged one)."""
    by_metric: dict[str, list] = {}
    for metric, earlier in series:
        by_metric.setdefault(metric, []).append(series_noise(earlier))
    return {metric: noise_prior(noises) for metric, noises in by_metric.items()}


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
