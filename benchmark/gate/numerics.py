"""What the judge holds a model case to besides its time: its loss at step K and its peak memory.

A model case records (benchmark/runners/models/running.py) the loss after K training steps from
its seed on its fixed synthetic batch (`result.extra["loss"]`) and the worker's peak memory
(`result.peak_memory_bytes`: peak RSS on CPU, the allocator's peak on a GPU). Both are compared
with the series' previous ok result (the latest run of its history, or the A/B baseline run):

- the loss, like an accuracy check: |new - old| <= atol + rtol * |old|, with the case's
  `tolerance` (`rtol`, `atol`) or `LOSS_TOLERANCE` of its place. Beyond it the verdict is
  `wrong`, whatever the speed: a framework change that alters the numerics fails as surely as one
  that slows the model down. On CPU the loss repeats bit for bit between runs, so the default
  tolerance is one float32 ulp (1.2e-7 relative); a GPU's reductions are not deterministic, hence its looser one.
- the peak memory: growing past both limits of its place (`MEMORY_LIMITS`: 10% and 16 MiB on a
  GPU, 25% and 128 MiB for a CPU worker's RSS) is a `regression`, with the growth in the reason.

The checks and `apply` are pure (results in, verdicts and reasons out); `previous_results` reads
the store, once per baseline run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.series import SeriesKey
from benchmark.datamodel.verdict import Decision, Verdict

LOSS_TOLERANCE = {"cpu": {"rtol": 1.2e-7, "atol": 0.0}, "gpu": {"rtol": 1e-3, "atol": 1e-5}}
# (relative growth, bytes) a peak must grow by to regress: on a GPU the allocator's peak is exact; on
# CPU the worker's peak RSS moved by up to +18% and 93 MiB between unchanged runs of the small models
# (eval/model_perturbation.py), so a CPU case needs more
MEMORY_LIMITS = {"cpu": (0.25, 128 * 1024**2), "gpu": (0.10, 16 * 1024**2)}
# verdicts a numerics finding does not replace: the case did not run as measured
_KEEP = (Verdict.ERROR, Verdict.FAILED, Verdict.SKIPPED)


def loss_of(result: CaseResult) -> dict[str, Any] | None:
    loss = (result.extra or {}).get("loss")
    if isinstance(loss, Mapping) and isinstance(loss.get("value"), (int, float)):
        return dict(loss)
    return None


def tolerance(result: CaseResult) -> tuple[float, float]:
    """(rtol, atol) of `result`'s loss: its config's `tolerance`, else its place's default."""
    default = LOSS_TOLERANCE["cpu" if result.place == "cpu" else "gpu"]
    given = (result.config or {}).get("tolerance") or {}
    return float(given.get("rtol", default["rtol"])), float(given.get("atol", default["atol"]))


def check_loss(result: CaseResult, previous: CaseResult) -> str | None:
    """Why `result`'s loss is wrong against `previous`'s, or None (within tolerance, or nothing to
    compare: no loss, a different step count)."""
    new, old = loss_of(result), loss_of(previous)
    if new is None or old is None or new.get("step") != old.get("step"):
        return None
    rtol, atol = tolerance(result)
    a, b = float(new["value"]), float(old["value"])
    if math.isfinite(a) and math.isfinite(b) and abs(a - b) <= atol + rtol * abs(b):
        return None
    rel = abs(a - b) / abs(b) if b else math.inf
    return (
        f"loss at step {new.get('step')} is {a:.9g}, {old['value']:.9g} in run {previous.run_id} "
        f"(relative change {rel:.2e}, beyond rtol {rtol:g} + atol {atol:g}): the numerics changed"
    )


def check_memory(result: CaseResult, previous: CaseResult) -> str | None:
    """Why `result`'s peak memory is a regression against `previous`'s, or None."""
    new, old = result.peak_memory_bytes, previous.peak_memory_bytes
    if not new or not old:
        return None
    effect, least = MEMORY_LIMITS["cpu" if result.place == "cpu" else "gpu"]
    if new > old * (1 + effect) and new - old >= least:
        return (
            f"peak memory {new / 1024**2:.0f} MiB, {old / 1024**2:.0f} MiB in run {previous.run_id} "
            f"(+{new / old - 1:.0%}, more than {effect:.0%} and {least // 1024**2} MiB)"
        )
    return None


def apply(
    decisions: list[Decision], results: Iterable[CaseResult], previous: Mapping[SeriesKey, CaseResult]
) -> None:
    """Turn each decision whose result's loss left its tolerance into `wrong`, and each whose peak
    memory grew past the limit into a `regression` (unless already wrong), reasons first."""
    for d, r in zip(decisions, results, strict=True):
        before = previous.get(SeriesKey.of(r))
        if before is None or r.status != "ok" or d.verdict in _KEEP:
            continue
        wrong, memory = check_loss(r, before), check_memory(r, before)
        if wrong:
            d.verdict = Verdict.WRONG
            d.reason = "; ".join(x for x in (wrong, memory, d.reason) if x)
        elif memory:
            d.verdict = Verdict.REGRESSION
            d.blocking = True  # memory blocks everywhere (configs/gates.yaml names only cost metrics)
            d.reason = "; ".join(x for x in (memory, d.reason) if x)


def previous_results(
    store, results: list[CaseResult], bases: Mapping[SeriesKey, Any]
) -> dict[SeriesKey, CaseResult]:
    """Each model result's previous ok result of its series: the result of the latest run in its
    history `bases` (SeriesKey -> Series, as the judge reads it). One store read per run."""
    wanted: dict[int, list[SeriesKey]] = {}
    for r in results:
        if loss_of(r) is None:
            continue
        key = SeriesKey.of(r)
        series = bases.get(key)
        if series is not None and series.run_ids:
            wanted.setdefault(series.run_ids[-1], []).append(key)
    out: dict[SeriesKey, CaseResult] = {}
    for run_id, keys in wanted.items():
        by_key = {SeriesKey.of(r): r for r in store.results(run_id) if r.status == "ok"}
        out.update({k: by_key[k] for k in keys if k in by_key})
    return out
