"""The gate: pass or fail a run, with a reason per case. Reads the store, decides with the analysis.

Two baselines:

* ``history`` (default, the nightly gate): each series' per-run medians on the same machine with
  the same config hash, the new run last, go through the online detector
  (:func:`benchmark.analysis.history.check_latest`): a robust baseline, windows of the newest runs,
  persistence, minimum effect. A series with fewer runs than the detector needs falls back to an
  A/B of the raw samples against its previous run.
* a run id (pull requests: base vs head): an A/B of each case's raw samples against the same
  series in that run (:func:`benchmark.analysis.compare.compare`).

Across the run, the p-values of all tested cases go through Benjamini-Hochberg: a regression whose
q-value exceeds ``alpha`` is reported as ``inconclusive`` (a 500-case nightly tested at 1% would
otherwise fail on chance alone). A case that errored or failed its accuracy check fails the gate
too; a skipped case does not.

The metric and its direction come from configs/gates.yaml: ``time`` (seconds per iteration, lower
is better) or ``throughput`` (items per second, higher is better; derived from the same samples
and the batch size). ``memory`` has no repeated samples; it is reported, not gated yet.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from benchmark.analysis.compare import compare
from benchmark.analysis.deterministic import check_deterministic
from benchmark.analysis.fdr import adjust_pvalues
from benchmark.analysis.history import DEFAULT_PARAMS, latest_pvalue, simulate_online
from benchmark.gates import Gates, GateSettings
from benchmark.results import bad_timings

# Baselines come from complete runs only, unless the caller asks for others (None: any run).
BASELINE_RUN_STATUSES = ("complete",)

FAILING = ("regression", "failed", "error")
# The detector tests nothing before its noise estimate has `min_noise_runs` residuals and a window
# of two runs: a shorter history falls back to an A/B against the previous run.
MIN_RUNS = max(DEFAULT_PARAMS.min_history, DEFAULT_PARAMS.min_noise_runs + 2)


class GateInputError(Exception):
    """The gate cannot decide (no such run, no baseline at all): exit status 2."""


@dataclass
class Decision:
    case_id: str
    name: str
    place: str
    mode: str
    metric: str
    verdict: str  # regression, improvement, pass, inconclusive, new, failed, error, skipped
    effect: float = math.nan  # relative change of the metric, new/baseline - 1
    ci_low: float = math.nan  # interval of the effect
    ci_high: float = math.nan
    p_value: float = math.nan
    q_value: float = math.nan
    evidence: str = ""
    baseline: str = ""
    reason: str = ""
    change_run_id: int | None = None
    config_hash: str = ""
    value: float | None = None  # the new run's median, in the metric's unit
    baseline_value: float | None = None  # the baseline's median (the level before the change)
    baseline_run_id: int | None = None  # the run compared with (the latest run of the baseline)
    unit: str = "s"

    @property
    def failing(self) -> bool:
        return self.verdict in FAILING

    @property
    def series_metric(self) -> str:
        """What the judged series measures: "time" (gated as time or throughput) or "instructions"."""
        return "instructions" if self.metric == "instructions" else "time"

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.case_id, self.place, self.mode, self.series_metric)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "failing": self.failing}


# ---------------------------------------------------------------------------------------- metrics


def metric_samples(samples: Sequence[float] | np.ndarray, metric: str, batch: int | None) -> np.ndarray:
    """Raw samples in the metric's units: seconds per iteration, or items per second."""
    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    return (batch or 1) / x if metric == "throughput" else x


def _effect_interval(c) -> tuple[float, float, float]:
    return c.ratio - 1.0, c.ci_low - 1.0, c.ci_high - 1.0


def _ab(decision: Decision, base: np.ndarray, new: np.ndarray, s: GateSettings, label: str) -> Decision:
    c = compare(base, new, min_effect=s.min_effect, higher_is_better=s.higher_is_better, alpha=s.alpha)
    decision.effect, decision.ci_low, decision.ci_high = _effect_interval(c)
    decision.p_value = c.p_value
    decision.verdict = {"slower": "regression", "faster": "improvement", "same": "pass"}.get(
        c.verdict, "inconclusive"
    )
    decision.evidence = f"A/B on raw samples ({c.n_baseline} vs {c.n_candidate}): p={c.p_value:.2g}"
    decision.baseline = label
    decision.baseline_value = float(np.median(base)) if base.size else None
    decision.reason = c.reason
    return decision


def _history(decision: Decision, base, new: np.ndarray, result: Mapping, s: GateSettings) -> Decision:
    batch = result.get("batch_size")
    earlier = []  # (run id, raw samples in the metric's unit) of each earlier run, oldest first
    for run, raw in zip(base.run_ids, base.samples, strict=True) if base is not None else ():
        if bad_timings(raw):  # NaN/inf/non-positive samples (older histories): left out, and said
            continue
        x = metric_samples(raw, s.metric, batch)
        if x.size:
            earlier.append((run, x))
    runs = [run for run, _ in earlier]
    samples = [*(x for _, x in earlier), new]
    values = [float(np.median(x)) for x in samples]
    if len(values) < MIN_RUNS:
        if not runs:
            decision.verdict, decision.reason = "new", "no earlier ok result of this series on this machine"
            return decision
        label = f"run {runs[-1]} (A/B: only {len(values) - 1} earlier run(s), the history gate needs {MIN_RUNS - 1})"
        decision.baseline_run_id = runs[-1]
        return _ab(decision, samples[-2], new, s, label)
    values = values[-(s.history_runs + 1) :]
    samples = samples[-(s.history_runs + 1) :]
    runs = runs[-s.history_runs :]
    kw = {"higher_is_better": s.higher_is_better, "samples": samples}
    alerts = simulate_online(values, min_effect=s.min_effect, **kw)
    newest = len(values) - 1
    alert = alerts[-1] if alerts and alerts[-1].index == newest else None
    decision.p_value = latest_pvalue(values, **kw)
    decision.baseline = f"history: {len(values) - 1} runs ({runs[0]}..{runs[-1]})"
    # The effect and its interval: the new run against the level in force before it (the runs
    # since the last accepted change, at most 10 of them), from the raw samples.
    accepted = [a.change_index for a in alerts if a.index < newest and a.reverted_at is None]
    level_start = accepted[-1] if accepted else 0
    end = alert.change_index if alert is not None else newest
    level = (
        np.concatenate(samples[max(level_start, end - 10) : end])
        if end > level_start
        else samples[max(end - 1, 0)]
    )
    c = compare(level, new, min_effect=s.min_effect, higher_is_better=s.higher_is_better, alpha=s.alpha)
    decision.effect, decision.ci_low, decision.ci_high = _effect_interval(c)
    decision.baseline_value = alert.baseline if alert is not None else float(np.median(level))
    decision.baseline_run_id = runs[-1]
    if alert is None:
        decision.verdict = "pass"
        decision.evidence = f"online detector: no alert (p={decision.p_value:.2g})"
        ids = [*runs, result.get("run_id")]
        back = [a for a in alerts if a.reverted_at is not None and a.index >= newest - 10]
        if back:  # a recent excursion that came back: said, so nobody chases it
            a = back[-1]
            decision.evidence += (
                f"; the {a.direction} raised at run {ids[a.index]} ({a.magnitude:+.1%} from run "
                f"{ids[a.change_index]}) reverted at run {ids[a.reverted_at]}"
            )
        return decision
    decision.verdict = "regression" if alert.direction == "regression" else "improvement"
    decision.effect = alert.magnitude
    decision.change_run_id = ([*runs, result.get("run_id")])[alert.change_index]
    decision.evidence = (
        f"online detector: {alert.runs} run(s) at {alert.magnitude:+.1%}, |z|={abs(alert.z):.1f} > "
        f"{alert.threshold:.1f} ({alert.kind})"
    )
    decision.reason = f"level changed at run {decision.change_run_id}"
    if alert.event:
        decision.reason += f" (after {alert.event})"
    return decision


def _instructions_history(
    decision: Decision, base, new: np.ndarray, result: Mapping, s: GateSettings
) -> Decision:
    """Instruction counts: the level rule on per-run values (benchmark/analysis/deterministic.py)
    decides on the first run after a change, whatever the length of the history."""
    runs, values = [], []
    for run, raw in zip(base.run_ids, base.samples, strict=True) if base is not None else ():
        x = metric_samples(raw, s.metric, None) if raw is not None else np.empty(0)
        if x.size:
            runs.append(run)
            values.append(float(np.median(x)))
    if not runs:
        decision.verdict, decision.reason = "new", "no earlier ok result of this series on this machine"
        return decision
    decision.baseline_run_id = runs[-1]
    return _level(decision, runs[-s.history_runs :], values[-s.history_runs :], new, s, result)


def _level(
    decision: Decision, runs: list, values: list[float], new: np.ndarray, s: GateSettings, result
) -> Decision:
    c = check_deterministic(
        [*values, float(np.median(new))], min_effect=s.min_effect, noise_floor=s.noise_floor
    )
    decision.effect = c.effect
    decision.ci_low, decision.ci_high = c.effect - c.noise, c.effect + c.noise
    decision.baseline_value = c.reference
    first = runs[c.level_start] if c.level_start < len(runs) else result.get("run_id")
    decision.baseline = f"instruction-count level: {c.level_runs} run(s) from run {first}"
    decision.evidence = (
        f"instructions per iteration {c.effect:+.2%} against the level (minimum effect {s.min_effect:.1%}, "
        f"noise {c.noise:.2%}, floor {s.noise_floor:.2%})"
    )
    decision.verdict = c.verdict
    if c.verdict in ("regression", "improvement"):
        decision.change_run_id = result.get("run_id")
        decision.reason = "instructions per iteration changed at this run"
    elif c.reverted:
        decision.reason = "back at the level before a recent change (that change is treated as an outlier)"
    return decision


# ---------------------------------------------------------------------------------------- the run


def _decision(result: Mapping[str, Any], gates: Gates) -> tuple[Decision, GateSettings]:
    series_metric = result.get("metric") or "time"
    s = gates.for_case(result["case_id"], result.get("name"), result["place"], series_metric)
    metric = "time" if s.metric == "memory" else s.metric
    s = GateSettings(metric, s.min_effect, s.alpha, s.history_runs, s.noise_floor)
    d = Decision(
        case_id=result["case_id"],
        name=result.get("name") or result["case_id"],
        place=result["place"],
        mode=result["mode"],
        metric=metric,
        verdict=result["status"],
        config_hash=result.get("config_hash") or "",
    )
    d.unit = "items/s" if metric == "throughput" else (result.get("unit") or "s")
    if result["status"] != "ok":
        d.reason = result.get("message") or f"the case {result['status']}"
    return d, s


def evaluate(
    store,
    run_id: int | Sequence[int],
    gates: Gates,
    baseline: int | None = None,
    *,
    baseline_statuses: Sequence[str] | None = BASELINE_RUN_STATUSES,
) -> list[Decision]:
    """One Decision per result of `run_id` (or of several runs judged as one, e.g. the shards of a
    run group) against the history (baseline None) or a run. History baselines come from runs
    recorded with one of `baseline_statuses` (default: complete runs; None: any)."""
    run_ids = [run_id] if isinstance(run_id, int) else list(run_id)
    decisions = []
    for one in run_ids:
        decisions.extend(_evaluate_run(store, one, gates, baseline, baseline_statuses))
    _control_fdr(decisions, gates.spec.defaults.alpha)
    return decisions


def _evaluate_run(store, run_id: int, gates: Gates, baseline, baseline_statuses) -> list[Decision]:
    if store.run(run_id) is None:
        raise GateInputError(f"there is no run {run_id} in {store.display_url}")
    results = store.results(run_id)
    if baseline is not None:
        if store.run(baseline) is None:
            raise GateInputError(f"there is no baseline run {baseline} in {store.display_url}")
        base_results = {_key(r): r for r in store.results(baseline) if r["status"] == "ok"}
    else:
        bases = store.baselines(run_id, last=gates.spec.defaults.history_runs + 1, statuses=baseline_statuses)
    decisions = []
    for result in results:
        d, s = _decision(result, gates)
        if result["status"] == "ok":
            raw = result.get("samples") or []
            new = metric_samples(raw, s.metric, result.get("batch_size"))
            d.value = float(np.median(new)) if new.size else None
            if bad_timings(raw):  # only older histories hold such results: never dropped silently
                d.verdict = "error"
                d.reason = f"{bad_timings(raw)} of {len(raw)} raw samples are NaN, infinite or not positive"
            elif not new.size:
                d.verdict, d.reason = "new", "the result has no raw samples to judge"
            elif baseline is not None:
                b = base_results.get(_key(result))
                if b is None:
                    d.verdict, d.reason = "new", f"run {baseline} has no ok result of this series"
                elif s.metric == "instructions":
                    d.baseline_run_id = baseline
                    base_value = float(np.median(metric_samples(b["samples"], s.metric, None)))
                    _level(d, [baseline], [base_value], new, s, result)
                else:
                    d.baseline_run_id = baseline
                    _ab(
                        d,
                        metric_samples(b["samples"], s.metric, b.get("batch_size")),
                        new,
                        s,
                        f"run {baseline}",
                    )
            else:
                base = bases.get(_key(result))
                if s.metric == "instructions":
                    _instructions_history(d, base, new, result, s)
                else:
                    _history(d, base, new, result, s)
                corrupt = (
                    [r for r, x in zip(base.run_ids, base.samples, strict=True) if bad_timings(x)]
                    if base
                    else []
                )
                if corrupt:
                    left_out = f"earlier run(s) {', '.join(map(str, corrupt))} left out: invalid samples"
                    d.reason = "; ".join(p for p in (d.reason, left_out) if p)
        decisions.append(d)
    return decisions


def _key(r: Mapping[str, Any]) -> tuple:
    return (r["case_id"], r["config_hash"], r["place"], r["mode"], r.get("metric") or "time")


def _control_fdr(decisions: list[Decision], alpha: float) -> None:
    """Benjamini-Hochberg over every tested case: regressions and improvements must survive it."""
    tested = [d for d in decisions if math.isfinite(d.p_value)]
    if not tested:
        return
    q = adjust_pvalues([min(max(d.p_value, 0.0), 1.0) for d in tested], "bh")
    for d, qv in zip(tested, q, strict=True):
        d.q_value = float(qv)
        if d.verdict in ("regression", "improvement") and qv > alpha:
            d.reason = (
                f"{d.reason}; not significant across {len(tested)} cases (BH q={qv:.2g} > {alpha:g})".lstrip(
                    "; "
                )
            )
            d.verdict = "inconclusive"


def incomplete_runs(store, run_ids: Iterable[int]) -> list[str]:
    """One line per run that is not complete (still running, interrupted, incomplete, failed),
    naming the cases it set out to measure and has no result of; [] when every run is complete."""
    lines = []
    for run_id in run_ids:
        run = store.run(run_id)
        if run is None:
            raise GateInputError(f"there is no run {run_id} in {store.display_url}")
        if run["status"] == "complete" and not run.get("missing"):
            continue
        line = f"run {run_id} is {run['status']}"
        if run.get("note"):
            line += f" ({run['note']})"
        missing = store.missing_cases(run)
        if missing:
            names = ", ".join(f"{c} [{p} {m}]" for c, p, m in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            line += f": {len(missing)} case(s) without a result: {names}{more}"
        elif run.get("missing"):
            line += f": {run['missing']} of {run['expected_results']} results missing"
        lines.append(line)
    return lines


def passed(decisions: Iterable[Decision]) -> bool:
    return not any(d.failing for d in decisions)


def check_has_baseline(decisions: Sequence[Decision], run_id: int | str) -> None:
    measured = [d for d in decisions if d.verdict not in ("skipped", "failed", "error")]
    what = f"run {run_id}" if isinstance(run_id, int) else run_id
    if measured and all(d.verdict == "new" for d in measured):
        raise GateInputError(
            f"no baseline for any case of {what}: no earlier complete run of these series on this machine "
            "(run the suite again, or pass --baseline RUN_ID)"
        )
