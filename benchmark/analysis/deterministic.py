"""Gating a nearly deterministic metric (instruction counts): one value per run, oldest first.

Instruction counts of a case repeat exactly between passes for most cases, and within 0.005% for
all of them while nothing on the worker's sys.path changes (a directory listing shifted the static
100x100 programs by up to 0.25%: README). That is far below the between-run noise of wall time
that the time detector has to estimate (:mod:`benchmark.analysis.online`), so the rule is an
effect-size rule on a noise floor (configs/gates.yaml: 0.2%), and it decides on the first run
after a change:

* **Level.** The runs since the last accepted change form the current level; its reference value is
  the median of the level's first ``anchor_runs`` runs, so a slow drift accumulates against a fixed
  anchor instead of dragging a moving baseline along.
* **Noise.** The relative spread of the level (largest deviation of its runs from the reference),
  never below ``noise_floor`` (the metric's known floor: 0.1% by default).
* **Change.** The newest run differs from the reference by at least ``min_effect`` and by more than
  ``noise_sigmas`` times the noise: a regression (or improvement) on this very run.
* **A regression stands.** A regression does not become the baseline: every later run that keeps
  it is compared with the level before it and fails again, until a run is back within the level
  (reverted) or a user acknowledges the new level (`benchmark ack`: the series' history then
  starts at the acknowledged run, so the rule never sees the runs before it). A regression that
  failed once and then became the baseline would be one that a nightly forgets overnight.
* **Improvements are accepted.** An improvement starts a new level at once. A run within
  ``revert_window`` runs of it that is back at the previous level (within half the minimum effect)
  cancels it: the improved runs are treated as outliers.

There is no p-value: the decision is not a test against estimated noise, so these decisions stay out
of the false-discovery-rate adjustment of the time metric.

`compare_counts` applies the same effect-size rule to two environments' counts of one case
(`benchmark compare --instructions`): B's median against A's, over the larger spread of either.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmark.datamodel.verdict import Verdict

DEFAULT_NOISE_FLOOR = 0.001
ANCHOR_RUNS = 5
NOISE_SIGMAS = 3.0
REVERT_WINDOW = 5


@dataclass(frozen=True)
class LevelCheck:
    """The verdict on the newest value of a series."""

    verdict: Verdict  # regression, improvement, pass
    effect: float  # newest / reference - 1
    reference: float  # the level's reference value (what the newest run is compared with)
    noise: float  # relative noise of the level used for the decision
    level_runs: int  # runs of the level the newest run was compared with
    level_start: int  # index of the first run of that level
    reverted: bool = False  # the newest run is back at the level of a recent change
    # the index of the run where the regression the newest run still keeps was raised (None: no
    # standing regression, or the newest run raised it)
    standing_since: int | None = None


def _reference(values: np.ndarray, members: list[int], anchor_runs: int) -> float:
    return float(np.median(values[members[:anchor_runs]]))


def _noise(values: np.ndarray, members: list[int], reference: float, floor: float) -> float:
    if reference == 0:
        return math.inf
    spread = float(np.max(np.abs(values[members] / reference - 1.0))) if members else 0.0
    return max(floor, spread)


def check_deterministic(
    values: Sequence[float],
    *,
    min_effect: float,
    noise_floor: float = DEFAULT_NOISE_FLOOR,
    higher_is_better: bool = False,
    anchor_runs: int = ANCHOR_RUNS,
    noise_sigmas: float = NOISE_SIGMAS,
    revert_window: int = REVERT_WINDOW,
) -> LevelCheck:
    """Replay the level rule over `values` (at least two, all finite and positive) and judge the
    newest value. Only the runs up to each one are used at each step, so the verdict on a run does
    not change when later runs arrive."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        raise ValueError("the level rule needs an earlier value and the newest one")
    current: list[int] = [0]
    previous: list[int] | None = None  # the level before an accepted improvement (revert window)
    standing: int | None = None  # where the regression still held at the last run was raised
    check = None
    for i in range(1, x.size):
        ref = _reference(x, current, anchor_runs)
        noise = _noise(x, current, ref, noise_floor)
        effect = float(x[i] / ref - 1.0) if ref else math.inf
        changed = abs(effect) >= min_effect and abs(effect) > noise_sigmas * noise
        worse = effect < 0 if higher_is_better else effect > 0
        if changed and worse and previous is not None and i - current[0] <= revert_window:
            old = _reference(x, previous, anchor_runs)
            if old and abs(x[i] / old - 1.0) < min_effect / 2:  # an improvement that came back
                current, previous = [*previous, i], None
                check = LevelCheck(Verdict.PASS, effect, ref, noise, len(current) - 1, current[0], True)
                continue
        if changed and worse:
            since = standing if standing is not None else None
            check = LevelCheck(
                Verdict.REGRESSION, effect, ref, noise, len(current), current[0], standing_since=since
            )
            standing = i if standing is None else standing
        elif changed:
            check = LevelCheck(Verdict.IMPROVEMENT, effect, ref, noise, len(current), current[0])
            previous, current, standing = current, [i], None
        else:
            check = LevelCheck(
                Verdict.PASS, effect, ref, noise, len(current), current[0], standing is not None
            )
            current.append(i)
            standing = None
    assert check is not None
    return check


@dataclass(frozen=True)
class CountComparison:
    """The verdict on two environments' counts of one case (`benchmark compare --instructions`)."""

    verdict: Verdict  # regression (B's counts higher), improvement, pass
    ratio: float  # median of B / median of A
    noise: float  # relative noise used for the decision (never below the floor)
    min_effect: float
    median_a: float
    median_b: float


def _relative_spread(x: np.ndarray) -> float:
    """Largest deviation of the samples from their median, relative to it."""
    med = float(np.median(x))
    return float(np.max(np.abs(x / med - 1.0)))


def compare_counts(
    a: Sequence[float],
    b: Sequence[float],
    *,
    min_effect: float,
    noise_floor: float = DEFAULT_NOISE_FLOOR,
    noise_sigmas: float = NOISE_SIGMAS,
) -> CountComparison:
    """Judge B's counts of a case against A's (each: samples of one process, finite and positive).
    The ratio is B's median over A's; the noise is the larger relative spread of either side's
    samples (largest deviation from its median), never below `noise_floor`. A regression (slower) when
    the ratio is at least 1 + min_effect and beyond 1 + noise_sigmas * noise; an improvement
    symmetrically (ratio - 1 at most -min_effect and below -noise_sigmas * noise); else pass."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0 or y.size == 0:
        raise ValueError("each side needs at least one count")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and np.all(x > 0) and np.all(y > 0)):
        raise ValueError("counts must be finite and positive")
    if not (0 <= min_effect < 1) or not (0 <= noise_floor < 1) or noise_sigmas < 0:
        raise ValueError("min_effect and noise_floor must be fractions in [0, 1), noise_sigmas >= 0")
    median_a, median_b = float(np.median(x)), float(np.median(y))
    ratio = median_b / median_a
    noise = max(noise_floor, _relative_spread(x), _relative_spread(y))
    effect = ratio - 1.0
    verdict = Verdict.PASS
    if abs(effect) >= min_effect and abs(effect) > noise_sigmas * noise:
        verdict = Verdict.REGRESSION if effect > 0 else Verdict.IMPROVEMENT
    return CountComparison(verdict, ratio, noise, min_effect, median_a, median_b)
