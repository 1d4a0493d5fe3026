"""The judge: the one decision function behind `benchmark gate`, the `--bench-gate` pytest items,
the Markdown report and the HTML dashboard (:func:`judge` / :func:`evaluate`), with the per-case
settings of configs/gates.yaml. Reads the store, decides with the analysis.

Every decision has a :class:`~benchmark.verdict.Verdict` and says where its evidence came from
(:class:`~benchmark.verdict.Evidence`). A worker process is the unit of measurement: a run's value
for a case is the median of its processes' values (the median of the raw samples for a run measured
in one process), and two runs are compared by their per-process values, never by raw rounds as if
they were independent (:func:`benchmark.analysis.compare.compare_processes`).

Two baselines:

* ``history`` (default, the nightly gate): each series' run values on the same machine with the
  same config hash, the new run last, go through the online detector
  (:func:`benchmark.analysis.history.simulate_online`; evidence ``history``), with each run's
  between-process standard error as the floor under its noise. A series with fewer runs than the
  detector needs falls back to an A/B against its previous run: Welch on the log values of the two
  runs' processes (``ab_processes``), their spread pooled with the between-process spread of the
  series' earlier runs; when a side has fewer than 2 process values, the two run
  values against the between-run noise of the series' history (``ab_history_noise``), or
  ``inconclusive`` (not failing) when there is no such history.
* a run id (pull requests: base vs head): the same A/B against the same series in that run.

Across the run, the p-values of all tested cases go through Benjamini-Hochberg: a regression whose
q-value exceeds ``alpha`` is reported as ``inconclusive`` (a 500-case nightly tested at 1% would
otherwise fail on chance alone). A regression needs that significance and an effect beyond the
case's ``min_effect``. A case that errored or failed its accuracy check fails the gate too; a
skipped case does not. A run with nothing to compare yet (every measured case is ``new``) passes
with a notice (:func:`nothing_to_compare`).

The metric and its direction come from configs/gates.yaml: ``time`` (seconds per iteration, lower
is better) or ``throughput`` (items per second, higher is better; derived from the same samples
and the batch size). ``memory`` has no repeated samples; it is reported, not gated yet.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from benchmark.analysis.compare import compare_processes
from benchmark.analysis.deterministic import check_deterministic
from benchmark.analysis.events import environment_events, run_environment
from benchmark.analysis.fdr import adjust_pvalues
from benchmark.analysis.history import DEFAULT_PARAMS, latest_pvalue, simulate_online
from benchmark.analysis.robust import between_run_noise, pooled_process_spread, process_noise
from benchmark.gates import Gates, GateSettings
from benchmark.results import bad_timings
from benchmark.store import series_key
from benchmark.verdict import FAILING, Evidence, Verdict

# Baselines come from complete runs only, unless the caller asks for others (None: any run).
BASELINE_RUN_STATUSES = ("complete",)

# The detector tests nothing before its noise estimate has `min_noise_runs` residuals and a window
# of two runs: a shorter history falls back to an A/B against the previous run.
MIN_RUNS = max(DEFAULT_PARAMS.min_history, DEFAULT_PARAMS.min_noise_runs + 2)
_AB_EVIDENCE = {"processes": Evidence.AB_PROCESSES, "history_noise": Evidence.AB_HISTORY_NOISE}


class GateInputError(Exception):
    """The gate cannot decide (no such run, an incomplete run): exit status 2."""


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


@dataclass
class Judgement:
    """The judge's answer for a run: every decision, whether it passes, and a notice when there was
    nothing to compare yet."""

    decisions: list[Decision]
    notice: str | None = None

    @property
    def passed(self) -> bool:
        return passed(self.decisions)


# ---------------------------------------------------------------------------------------- metrics


def metric_samples(samples: Sequence[float] | np.ndarray, metric: str, batch: int | None) -> np.ndarray:
    """Raw samples (or per-process values, seconds per iteration) in the metric's units: seconds per
    iteration, or items per second."""
    x = np.asarray(samples if samples is not None else [], dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    return (batch or 1) / x if metric == "throughput" else x


def ok_process_values(processes: Iterable[Mapping[str, Any]] | None) -> list[float]:
    """The values (seconds per iteration) of a result's ok worker-process trials, in trial order."""
    out = []
    for p in processes or []:
        v = p.get("value")
        if p.get("status", "ok") == "ok" and v is not None and math.isfinite(v) and v > 0:
            out.append(float(v))
    return out


def run_value(process_values: np.ndarray, samples: np.ndarray) -> float | None:
    """A run's value for a case: the median of its process values, else of its raw samples."""
    if process_values.size:
        return float(np.median(process_values))
    return float(np.median(samples)) if samples.size else None


def _side(process_values: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """The values one side of an A/B contributes: its processes', or its one run value."""
    if process_values.size:
        return process_values
    v = run_value(process_values, samples)
    return np.asarray([] if v is None else [v], dtype=float)


def _ab(
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
    decision.verdict = {
        "slower": Verdict.REGRESSION,
        "faster": Verdict.IMPROVEMENT,
        "same": Verdict.PASS,
    }.get(c.verdict, Verdict.INCONCLUSIVE)
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


def _earlier_runs(base, s: GateSettings, batch) -> tuple[list, list, list, list]:
    """(run ids, run values, raw samples, process values) of a series' earlier ok runs, oldest
    first, in the metric's units; runs with invalid samples are left out (the caller says so)."""
    runs, values, samples, procs = [], [], [], []
    if base is None:
        return runs, values, samples, procs
    pvs = base.process_values if len(base.process_values) == len(base.run_ids) else [None] * len(base.run_ids)
    for run, raw, pv in zip(base.run_ids, base.samples, pvs, strict=True):
        if bad_timings(raw):  # NaN/inf/non-positive samples (older histories): left out, and said
            continue
        x = metric_samples(raw, s.metric, batch)
        p = metric_samples(pv if pv is not None else [], s.metric, batch)
        v = run_value(p, x)
        if v is not None:
            runs.append(run)
            values.append(v)
            samples.append(x)
            procs.append(p)
    return runs, values, samples, procs


def _history(
    decision: Decision,
    base,
    new: np.ndarray,
    new_procs: np.ndarray,
    result: Mapping,
    s: GateSettings,
    envs: Mapping[int, Mapping[str, Any]] | None = None,
) -> Decision:
    runs, values, samples, procs = _earlier_runs(base, s, result.get("batch_size"))
    if not runs:
        decision.verdict, decision.reason = Verdict.NEW, "no earlier ok result of this series on this machine"
        return decision
    if len(values) + 1 < MIN_RUNS:
        label = (
            f"run {runs[-1]} (A/B: only {len(values)} earlier run(s), the history gate needs {MIN_RUNS - 1})"
        )
        decision.baseline_run_id = runs[-1]
        return _ab(
            decision,
            _side(procs[-1], samples[-1]),
            _side(new_procs, new),
            s,
            label,
            between_run_noise(values),
            pooled_process_spread(procs[:-1]),
        )
    values = [*values, decision.value][-(s.history_runs + 1) :]
    samples = [*samples, new][-(s.history_runs + 1) :]
    noise = [process_noise(p) for p in [*procs, new_procs]][-(s.history_runs + 1) :]
    runs = runs[-s.history_runs :]
    ids = [*runs, result.get("run_id")]
    events = environment_events([(envs or {}).get(r) for r in ids])
    decision.events = [(ids[i], label) for i, label in sorted(events.items())]
    kw = {"higher_is_better": s.higher_is_better, "samples": samples, "noise": noise}
    alerts = simulate_online(values, min_effect=s.min_effect, events=events, **kw)
    newest = len(values) - 1
    alert = alerts[-1] if alerts and alerts[-1].index == newest else None
    # one-sided, in the direction of the alert (worse when there is none)
    better = alert is not None and alert.direction != "regression"
    decision.p_value = latest_pvalue(values, **{**kw, "higher_is_better": s.higher_is_better != better})
    decision.evidence_kind = Evidence.HISTORY
    decision.baseline = f"history: {len(values) - 1} runs ({runs[0]}..{runs[-1]})"
    # The effect and its interval: the new run against the level in force before it (the runs
    # since the last accepted change, at most 10 of them), with the history's between-run noise.
    accepted = [a.change_index for a in alerts if a.index < newest and a.reverted_at is None]
    level_start = accepted[-1] if accepted else 0
    end = alert.change_index if alert is not None else newest
    level = values[max(level_start, end - 10) : end] if end > level_start else values[max(end - 1, 0) : end]
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
    decision.change_run_id = ids[alert.change_index]
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
        decision.verdict, decision.reason = Verdict.NEW, "no earlier ok result of this series on this machine"
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
    decision.verdict = Verdict(c.verdict)
    decision.evidence_kind = Evidence.DETERMINISTIC
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
        verdict=Verdict(result["status"]) if result["status"] != "ok" else Verdict.PASS,
        config_hash=result.get("config_hash") or "",
        min_effect=s.min_effect,
    )
    d.unit = "items/s" if metric == "throughput" else (result.get("unit") or "s")
    if result["status"] != "ok":
        d.reason = result.get("message") or f"the case {result['status']}"
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
    for one in run_ids:
        decisions.extend(_evaluate_run(store, one, gates, baseline, baseline_statuses))
    _control_fdr(decisions, gates.spec.defaults.alpha)
    return decisions


def _evaluate_run(store, run_id: int, gates: Gates, baseline, baseline_statuses) -> list[Decision]:
    if store.run(run_id) is None:
        raise GateInputError(f"there is no run {run_id} in {store.display_url}")
    results = store.results(run_id)
    base_results = {}
    if baseline is not None:
        if store.run(baseline) is None:
            raise GateInputError(f"there is no baseline run {baseline} in {store.display_url}")
        base_results = {series_key(r): r for r in store.results(baseline) if r["status"] == "ok"}
    # The series' history: the baseline of the history gate, and its between-run noise for an A/B.
    bases = store.baselines(run_id, last=gates.spec.defaults.history_runs + 1, statuses=baseline_statuses)
    envs = (
        _environments(store, {run_id} | {r for b in bases.values() for r in b.run_ids})
        if baseline is None
        else {}
    )
    decisions = []
    for result in results:
        d, s = _decision(result, gates)
        if result["status"] == "ok":
            _judge_result(d, s, result, bases.get(series_key(result)), baseline, base_results, envs)
        decisions.append(d)
    return decisions


def _environments(store, run_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """The recorded volatile environment (drivers, kernel, Python) of each run."""
    return {r: run_environment(store.run(r) or {}) for r in run_ids}


def _judge_result(d: Decision, s: GateSettings, result, base, baseline, base_results, envs=None) -> None:
    raw = result.get("samples") or []
    batch = result.get("batch_size")
    new = metric_samples(raw, s.metric, batch)
    procs = metric_samples(ok_process_values(result.get("processes")), s.metric, batch)
    d.processes = int(procs.size)
    d.value = run_value(procs, new)
    if bad_timings(raw):  # only older histories hold such results: never dropped silently
        d.verdict = Verdict.ERROR
        d.reason = f"{bad_timings(raw)} of {len(raw)} raw samples are NaN, infinite or not positive"
    elif d.value is None:
        d.verdict, d.reason = Verdict.NEW, "the result has no raw samples to judge"
    elif baseline is not None:
        b = base_results.get(series_key(result))
        if b is None:
            d.verdict, d.reason = Verdict.NEW, f"run {baseline} has no ok result of this series"
            return
        d.baseline_run_id = baseline
        b_raw = metric_samples(b.get("samples") or [], s.metric, b.get("batch_size"))
        b_procs = metric_samples(ok_process_values(b.get("processes")), s.metric, b.get("batch_size"))
        if s.metric == "instructions":
            _level(d, [baseline], [run_value(b_procs, b_raw)], new, s, result)
            return
        # the history's between-run noise and between-process spread, from the runs before the
        # judged one (not the judged one; the baseline run's own spread counts once, as its side)
        runs, values, _, earlier = _earlier_runs(base, s, batch)
        spread = pooled_process_spread([p for r, p in zip(runs, earlier, strict=True) if r != baseline])
        _ab(
            d,
            _side(b_procs, b_raw),
            _side(procs, new),
            s,
            f"run {baseline}",
            between_run_noise(values),
            spread,
        )
    else:
        if s.metric == "instructions":
            _instructions_history(d, base, new, result, s)
        else:
            _history(d, base, new, procs, result, s, envs)
        corrupt = (
            [r for r, x in zip(base.run_ids, base.samples, strict=True) if bad_timings(x)] if base else []
        )
        if corrupt:
            left_out = f"earlier run(s) {', '.join(map(str, corrupt))} left out: invalid samples"
            d.reason = "; ".join(p for p in (d.reason, left_out) if p)


def _control_fdr(decisions: list[Decision], alpha: float) -> None:
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
