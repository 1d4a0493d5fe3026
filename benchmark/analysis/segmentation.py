"""Offline change points of a whole series (:func:`segment`): binary segmentation on the
E-Divisive split, medians tested against the noise scale, environment changes as candidate
splits. Pure functions of numbers; the method is described once, in docs/detection.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from benchmark.analysis.online import DEFAULT_PARAMS
from benchmark.analysis.robust import (
    biweight_scale_rows,
    direction,
    event_labels,
    huber,
    lag1_rows,
    median_var,
    prepare,
)


@dataclass(frozen=True)
class ChangePoint:
    """A change of level found offline: ``index`` is the first run of the new level."""

    index: int
    direction: str
    magnitude: float
    p_value: float = math.nan
    before: float = math.nan
    after: float = math.nan
    event: str | None = None
    """The environment change at ``index`` the change is attributed to, or None."""

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "direction": self.direction,
            "magnitude": self.magnitude,
            "event": self.event,
        }


def _energy_split(x: np.ndarray, min_size: int) -> int | None:
    """Split maximising the E-Divisive statistic (Matteson & James 2014, alpha = 1)."""
    n = x.size
    if n < 2 * min_size:
        return None
    if n > 2000:  # O(n^2) memory: fall back to the rank CUSUM (Pettitt 1979) on long segments
        r = sps.rankdata(x)
        tau = np.arange(1, n)
        u = np.abs(2 * np.cumsum(r)[:-1] - tau * (n + 1))
        u[: min_size - 1] = -1
        u[n - min_size :] = -1
        return int(np.argmax(u) + 1)
    D = np.abs(x[:, None] - x[None, :])
    P = D.cumsum(0).cumsum(1)  # P[a-1, b-1] = sum of D[:a, :b]
    tau = np.arange(min_size, n - min_size + 1)
    full = P[-1, -1]
    within_l = P[tau - 1, tau - 1] / 2.0
    cross = P[tau - 1, -1] - P[tau - 1, tau - 1]
    within_r = (full - 2 * P[tau - 1, -1] + P[tau - 1, tau - 1]) / 2.0
    m1, m2 = tau.astype(float), (n - tau).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = 2 * cross / (m1 * m2)
        e -= np.where(m1 > 1, within_l / (m1 * (m1 - 1) / 2), 0.0)
        e -= np.where(m2 > 1, within_r / (m2 * (m2 - 1) / 2), 0.0)
    q = m1 * m2 / n * e
    return int(tau[np.nanargmax(q)])


def _split_test(left: np.ndarray, right: np.ndarray, sigma: float, rho: float, n_cand: int) -> float:
    """Bonferroni-adjusted two-sided p-value of a difference of medians."""
    var = median_var(left.size, rho) + median_var(right.size, rho)
    z = (np.median(right) - np.median(left)) / (sigma * math.sqrt(float(var)))
    return min(1.0, max(1, n_cand) * 2 * float(sps.norm.sf(abs(z))))


def _noise(y: np.ndarray, cps: list[int]) -> tuple[float, float]:
    """Noise scale and lag-1 autocorrelation of the residuals from each segment's median."""
    bounds = [0, *cps, y.size]
    r = np.empty_like(y)
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        r[a:b] = y[a:b] - np.median(y[a:b])
    s = float(biweight_scale_rows(r[None, :])[0])
    rho = float(lag1_rows(r[None, :], np.array([s]), DEFAULT_PARAMS.max_rho)[0])
    return s, rho


def segment(
    values: Sequence[float],
    *,
    min_effect: float = 0.01,
    higher_is_better: bool = False,
    alpha: float = 0.001,
    min_size: int = 2,
    samples: Sequence[Sequence[float] | None] | None = None,
    noise: Sequence[float | None] | None = None,
    events: Mapping[int, str] | Sequence[int] | None = None,
) -> list[ChangePoint]:
    """Offline change points of the whole series, oldest first (the method: docs/detection.md,
    "Offline segmentation").

    ``events`` (runs where the environment changed, as for :func:`simulate_online`) are candidate
    change points: one is kept when the split there is significant (Bonferroni over the events
    only), a change point found within two runs of one moves onto it when the data fit it as well,
    and a change point at an event carries its label in ``event``.
    """
    ser = prepare(values, samples, noise)
    ev = event_labels(events, ser.y.size)
    y = ser.y
    n = y.size
    if n < 2 * min_size:
        return []
    # First pass: noise from first differences (insensitive to level shifts), no autocorrelation.
    d = np.diff(y)
    sigma = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2) if d.size else 0.0
    rho = 0.0
    cps: list[int] = []
    for _ in range(2):
        sigma = max(sigma, ser.floor, 1e-12)
        cps = _binseg(y, sigma, rho, alpha, min_size, min_effect, ser)
        cps = _prune(y, cps, sigma, rho, alpha, min_size, min_effect, ser)
        sigma, rho = _noise(y, cps)
    sigma = max(sigma, ser.floor, 1e-12)
    if ev:
        cps = _with_events(y, cps, sorted(ev), sigma, rho, alpha, min_size, min_effect, ser)
    out = []
    bounds = [0, *cps, n]
    for i, c in enumerate(cps):
        left, right = y[bounds[i] : c], y[c : bounds[i + 2]]
        before, after = float(np.median(left)), float(np.median(right))
        pv = _split_test(left, right, sigma, rho, bounds[i + 2] - bounds[i] - 2 * min_size + 1)
        out.append(
            ChangePoint(
                index=int(c),
                direction=direction(after > before, higher_is_better),
                magnitude=ser.rel(after, before),
                p_value=pv,
                before=ser.level(before),
                after=ser.level(after),
                event=ev.get(int(c)),
            )
        )
    return out


def _fit_cost(x: np.ndarray, cap: float) -> float:
    """Huber loss of a segment around its median (see :func:`_place_change`)."""
    return huber(x - np.median(x), cap) if x.size else 0.0


def _with_events(y, cps, events, sigma, rho, alpha, min_size, min_effect, ser) -> list[int]:
    """Change points with the environment changes as candidates (see :func:`segment`)."""
    cps = list(cps)
    cap = DEFAULT_PARAMS.clip_sigma * sigma
    # A change point near an event moves onto it when the two-level fit is as good there.
    for i, c in enumerate(cps):
        lo = cps[i - 1] if i else 0
        hi = cps[i + 1] if i + 1 < len(cps) else y.size
        near = [e for e in events if abs(e - c) <= 2 and lo + min_size <= e <= hi - min_size]
        if not near or c in events:
            continue
        cost = {x: _fit_cost(y[lo:x], cap) + _fit_cost(y[x:hi], cap) for x in [c, *near]}
        best = min(near, key=lambda e: (cost[e], abs(e - c)))
        if cost[best] <= cost[c] + (3 * sigma) ** 2:
            cps[i] = best
    cps = sorted(set(cps))
    # An event no change point is near is tested on its own: one pre-specified split per event.
    for e in events:
        if any(abs(e - c) <= 2 for c in cps):
            continue
        bounds = [0, *cps, y.size]
        j = int(np.searchsorted(bounds, e, side="right"))
        lo, hi = bounds[j - 1], bounds[j]
        if e - lo < min_size or hi - e < min_size:
            continue
        left, right = y[lo:e], y[e:hi]
        pv = min(1.0, _split_test(left, right, sigma, rho, 1) * len(events))
        if pv <= alpha and ser.effect_ok(np.median(right), np.median(left), min_effect):
            cps = sorted([*cps, e])
    return _prune(y, cps, sigma, rho, alpha, min_size, min_effect, ser)


def _binseg(y, sigma, rho, alpha, min_size, min_effect, ser) -> list[int]:
    cps: list[int] = []
    stack = [(0, y.size)]
    while stack:
        a, b = stack.pop()
        tau = _energy_split(y[a:b], min_size)
        if tau is None:
            continue
        c = a + tau
        left, right = y[a:c], y[c:b]
        n_cand = (b - a) - 2 * min_size + 1
        pv = _split_test(left, right, sigma, rho, n_cand)
        big = bool(ser.effect_ok(np.median(right), np.median(left), min_effect))
        if pv <= alpha and big:
            cps.append(c)
            stack.append((a, c))
            stack.append((c, b))
    return sorted(cps)


def _prune(y, cps, sigma, rho, alpha, min_size, min_effect, ser) -> list[int]:
    cps = list(cps)
    while cps:
        bounds = [0, *cps, y.size]
        worst, worst_p = None, -1.0
        for i, c in enumerate(cps):
            left, right = y[bounds[i] : c], y[c : bounds[i + 2]]
            pv = _split_test(left, right, sigma, rho, bounds[i + 2] - bounds[i] - 2 * min_size + 1)
            if not ser.effect_ok(np.median(right), np.median(left), min_effect):
                pv = 2.0
            if pv > alpha and pv > worst_p:
                worst, worst_p = i, pv
        if worst is None:
            break
        del cps[worst]
    return cps
