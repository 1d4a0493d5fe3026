"""Adjusting a series' run values by a concurrent covariate: the reference probe, a fixed workload
that calls no framework code and is timed in the same worker processes as the case
(benchmark/execution/probe.py). The idea is CUPED's (Deng et al., WSDM 2013): what a value shares
with a covariate that the change under test cannot move is noise, and can be taken out.

A series' adjusted value is `log value - beta * log(probe / reference)`: `reference` is the median
probe of the series' history, so an adjusted value stays in the metric's unit and near the raw one.
`beta` is estimated from the series' own history, robustly: the Theil-Sen slope of the run-to-run
differences of log value against those of log probe. Differences, so that a level change of the
series (a regression, an upgrade) weighs one difference instead of splitting the runs into two
clouds; Theil-Sen, so that a few odd runs do not set it.

The adjustment is used only where held-out differences show that it lowers the series' noise:
each difference's residual is computed with the beta fitted without it (leave one out), and the
robust scale of those residuals must be below `MIN_GAIN` times that of the raw differences. Else
beta is 0 and the values are judged as measured. Whatever the probe's own noise adds, the detector
sees it: it estimates its noise from the adjusted values themselves.

A slowdown of the framework does not move the probe, so it stays in the adjusted values whole.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Runs with a probe a series needs before an adjustment is considered (7 differences).
MIN_RUNS = 8
# The held-out noise of the adjusted values must be at most this fraction of the raw one's.
MIN_GAIN = 0.95
# |beta| beyond this is not a machine's speed showing in a case; it is clipped.
MAX_BETA = 2.0


@dataclass(frozen=True)
class Adjustment:
    """What the probe does to one series: `beta` (0 where not `used`), the `reference` probe figure
    values are adjusted to, the held-out noise (robust sd of run-to-run log differences, per run)
    raw and adjusted, the runs it was estimated from, and in words why it is or is not used."""

    beta: float = 0.0
    reference: float = math.nan
    raw_noise: float | None = None
    adjusted_noise: float | None = None
    runs: int = 0
    used: bool = False
    why: str = "no probe"

    def factor(self, probe: float | None) -> float:
        """The factor a value measured beside `probe` is divided by: (probe / reference) ** beta;
        1 where the adjustment is not used or the probe is missing."""
        if not self.used or probe is None or not math.isfinite(probe) or probe <= 0:
            return 1.0
        return float((probe / self.reference) ** self.beta)

    def describe(self) -> str:
        if not self.used:
            return f"probe adjustment not used: {self.why}"
        return (
            f"adjusted by the machine probe (beta {self.beta:.2f} from {self.runs} runs; held-out noise "
            f"{self.raw_noise:.2%} raw, {self.adjusted_noise:.2%} adjusted)"
        )


def _scale(x: np.ndarray) -> float:
    """Robust sd of one run's log value from successive differences: 1.4826 * median |d| / sqrt(2)."""
    return float(1.4826 * np.median(np.abs(x)) / math.sqrt(2.0))


def _theil_sen(dp: np.ndarray, dv: np.ndarray, keep: np.ndarray) -> float:
    """The median of the pairwise slopes among the points `keep` selects (pairs with equal dp
    skipped); 0 where there is none."""
    p, v = dp[keep], dv[keep]
    i, j = np.triu_indices(p.size, 1)
    run = p[j] - p[i]
    ok = np.abs(run) > 0
    if not ok.any():
        return 0.0
    return float(np.median((v[j] - v[i])[ok] / run[ok]))


def estimate(values: Sequence[float] | np.ndarray, probes: Sequence[float | None] | np.ndarray) -> Adjustment:
    """The adjustment of a series from its history: run values (the metric's, positive) and the
    probe figure beside each (None or NaN where the run has none), oldest first."""
    v = np.asarray(values, dtype=float)
    p = np.asarray([np.nan if x is None else x for x in probes], dtype=float)
    if v.size != p.size:
        raise ValueError(f"{v.size} values but {p.size} probes")
    ok = np.isfinite(v) & (v > 0) & np.isfinite(p) & (p > 0)
    n = int(ok.sum())
    reference = float(np.median(p[ok])) if n else math.nan
    if n < MIN_RUNS:
        return Adjustment(reference=reference, runs=n, why=f"{n} run(s) with a probe, it needs {MIN_RUNS}")
    lv, lp = np.log(v[ok]), np.log(p[ok])
    dv, dp = np.diff(lv), np.diff(lp)
    if not np.any(np.abs(dp) > 0):
        return Adjustment(reference=reference, runs=n, why="the probe did not move")
    everyone = np.ones(dv.size, dtype=bool)
    beta = float(np.clip(_theil_sen(dp, dv, everyone), -MAX_BETA, MAX_BETA))
    held_out = np.empty(dv.size)
    for k in range(dv.size):
        others = everyone.copy()
        others[k] = False
        b = float(np.clip(_theil_sen(dp, dv, others), -MAX_BETA, MAX_BETA))
        held_out[k] = dv[k] - b * dp[k]
    raw, adjusted = _scale(dv), _scale(held_out)
    base = {"reference": reference, "raw_noise": raw, "adjusted_noise": adjusted, "runs": n}
    if not adjusted < MIN_GAIN * raw:
        why = f"held-out noise {adjusted:.2%} adjusted against {raw:.2%} raw"
        return Adjustment(beta=0.0, why=why, **base)
    return Adjustment(beta=beta, used=True, why="", **base)


# A run's probe this far from its machine's usual figure (either way) says the machine itself ran
# at another speed: beside two busy loops on a 2-core VM it read 1.5-1.9x, quiet runs within 3%.
MACHINE_DRIFT = 0.10
# Earlier runs with a probe on the same machine needed to say what is usual for it.
MIN_EARLIER_RUNS = 3


@dataclass(frozen=True)
class MachineSpeed:
    """A run's probe beside its machine's usual one: the median probe of its earlier runs."""

    probe_s: float
    usual_s: float
    runs: int  # earlier runs the usual figure is the median of

    @property
    def ratio(self) -> float:
        return self.probe_s / self.usual_s

    @property
    def unusual(self) -> bool:
        return abs(math.log(self.ratio)) > math.log1p(MACHINE_DRIFT)


def machine_speed(probe_s: float | None, earlier: Sequence[float | None]) -> MachineSpeed | None:
    """The run's probe against the median of `earlier` probes (the same machine's earlier runs);
    None without a probe or with fewer than `MIN_EARLIER_RUNS` earlier ones."""
    usable = [p for p in earlier if p is not None and p > 0 and math.isfinite(p)]
    if probe_s is None or not probe_s > 0 or len(usable) < MIN_EARLIER_RUNS:
        return None
    return MachineSpeed(probe_s=float(probe_s), usual_s=float(np.median(usable)), runs=len(usable))
