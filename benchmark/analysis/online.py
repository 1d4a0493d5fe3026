"""The online history gate: one value per run, oldest first; at each run, the alert it would
raise (:func:`simulate_online`, :func:`check_latest`) and the evidence of the newest run
(:func:`latest_pvalue`). Pure functions of numbers; the method, its parameters and its evaluation
(``python eval/evaluate_detector.py``) are in docs/detection.md. The window tests are in
:mod:`benchmark.analysis.windows`, the estimators in :mod:`benchmark.analysis.robust`, the offline
change points in :mod:`benchmark.analysis.segmentation`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from benchmark.analysis.robust import Transformed, direction, event_labels, huber, prepare
from benchmark.analysis.windows import Hit, LevelState, Params, tests_at, window_lengths

DEFAULT_PARAMS = Params()


@dataclass(frozen=True)
class Alert:
    """What the online gate raises at run ``index`` (0-based, oldest first)."""

    index: int
    change_index: int
    direction: str
    magnitude: float
    kind: str = "step"
    """``step`` (window against the moving baseline) or ``drift`` (against the level's anchor)."""
    runs: int = 0
    """Length of the window that fired."""
    z: float = math.nan
    """The window's statistic: its clipped mean deviation over that mean's standard error."""
    threshold: float = math.nan
    """The value ``|z|`` had to reach (a Student t quantile)."""
    p_value: float = math.nan
    """Two-sided p-value of ``z``, Bonferroni-corrected over the windows."""
    baseline: float = math.nan
    """Level before the change, in the series' units."""
    level: float = math.nan
    """Level after the change (median of the runs since ``change_index``)."""
    reverted_at: int | None = None
    """The first run back at the old level, when the level came back within ``revert_window``
    runs of the alert (set by :func:`simulate_online` once the return is seen); else None."""
    event: str | None = None
    """The environment change at ``change_index`` the change is attributed to (its label, e.g.
    ``"gpu_driver 550.54 -> 560.28"``), or None."""

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "change_index": self.change_index,
            "direction": self.direction,
            "magnitude": self.magnitude,
            "reverted_at": self.reverted_at,
            "event": self.event,
        }


def _place_change(y: np.ndarray, st: LevelState, p: Params, hit: Hit, events: Sequence[int] = ()) -> int:
    """First run of the new level: the split of the stretch before the alert that fits two levels
    best: Hinkley's least squares made robust -- each side's level is its median, and the loss is
    Huber's (squared up to ``clip_sigma`` noise units, linear beyond), so a wild run weighs in
    linearly, not squared, while runs near the levels place the split as least squares would.

    The new side has at least two runs (a single run is never a level). A run at the split that
    fits neither level (``outlier_sigma`` noise units from both medians) is a lone outlier, not the
    first run of the new level: the split moves past it. An environment change (``events``) inside
    the stretch whose loss is within that of one run three noise units off is taken as the split.
    """
    t = hit.t
    K = window_lengths(p)[-1]
    lo_c = st.start + p.drift_anchor if hit.kind == "drift" else t - K + 1
    lo_c = max(lo_c, st.start + 1)
    hi_c = max(lo_c, t - 1)
    a = max(st.start, lo_c - p.window)
    idx = np.arange(a, t + 1)
    idx = idx[~st.excluded[idx]]
    x = y[idx]
    hub = p.clip_sigma * hit.scale
    costs: dict[int, float] = {}
    meds: dict[int, tuple[float, float]] = {}
    for c in range(lo_c, hi_c + 1):
        left, right = x[idx < c], x[idx >= c]
        if left.size == 0 or right.size < 2:
            continue
        ml, mr = float(np.median(left)), float(np.median(right))
        costs[c] = huber(left - ml, hub) + huber(right - mr, hub)
        meds[c] = (ml, mr)
    if not costs:
        return hi_c
    best = min(costs.values())
    best_c = min(c for c, v in costs.items() if v <= best)
    near = [e for e in events if e in costs and costs[e] <= best + (3 * hit.scale) ** 2]
    if near:
        return min(near, key=lambda e: (costs[e], -e))
    far = p.outlier_sigma * hit.scale
    while best_c + 1 in costs:
        ml, mr = meds[best_c]
        if min(abs(y[best_c] - ml), abs(y[best_c] - mr)) <= far:
            break
        best_c += 1
    return best_c


def _close_level(y: np.ndarray, st: LevelState, end: int, prior: np.ndarray) -> None:
    """Store in ``prior`` the residuals of the level [st.start, end) that a new level closes."""
    idx = np.arange(st.start, end)
    idx = idx[~st.excluded[idx]]
    if idx.size >= 2:
        prior[idx] = y[idx] - np.median(y[idx])


def _anchor(y: np.ndarray, st: LevelState, p: Params) -> float:
    """Median of the first ``drift_anchor`` runs of the current level (NaN while too short)."""
    idx = np.arange(st.start, y.size)
    idx = idx[~st.excluded[idx]][: p.drift_anchor]
    return float(np.median(y[idx])) if idx.size == p.drift_anchor else math.nan


def _replay(
    ser: Transformed,
    p: Params,
    min_effect: float,
    higher_is_better: bool,
    start: int = 0,
    events: Mapping[int, str] | None = None,
) -> tuple[list[Alert], LevelState]:
    """Run the online gate over the whole series, one run at a time (vectorised between alerts)."""
    y = ser.y
    T = y.size
    events = dict(events or {})
    st = LevelState(start=start, excluded=np.zeros(T, dtype=bool), prior=np.full(T, np.nan))
    st.anchor = _anchor(y, st, p)
    alerts: list[Alert] = []
    # Alerts not reverted: (position, the state before them, their baseline, sign, midpoint).
    accepted: list[tuple[int, LevelState, float, float, float]] = []
    hit = tests_at(ser, st, p, start, T - 1, min_effect, "first")
    while hit is not None:
        c = _place_change(y, st, p, hit, sorted(events))
        level = float(np.median(y[c : hit.t + 1]))
        # The magnitude is the robust level change: the median of the new level's runs against
        # the baseline. Below the minimum effect (or against the window's direction) nothing is
        # raised at this run.
        if (level > hit.base) != hit.up or not ser.effect_ok(np.array(level), np.array(hit.base), min_effect):
            hit = tests_at(ser, st, p, hit.t + 1, T - 1, min_effect, "first")
            continue
        alert = Alert(
            index=hit.t,
            change_index=c,
            direction=direction(hit.up, higher_is_better),
            magnitude=ser.rel(level, hit.base),
            kind=hit.kind,
            runs=hit.t - c + 1,
            z=hit.z,
            threshold=hit.threshold,
            p_value=hit.p_value,
            baseline=ser.level(hit.base),
            level=ser.level(level),
            event=events.get(c),
        )
        # Accept the new level, then see whether the series returns to the old one before the
        # new level raises anything.
        new = LevelState(start=c, excluded=st.excluded.copy(), prior=st.prior.copy())
        _close_level(y, st, c, new.prior)
        new.anchor = _anchor(y, new, p)
        nxt = tests_at(ser, new, p, hit.t + 1, T - 1, min_effect, "first")
        horizon = min(T - 1, hit.t + p.revert_window, nxt.t if nxt is not None else T)
        # Back at the old level: the last two runs, and the median of all runs since the alert,
        # are closer to the old level than to the new one.
        sign = 1.0 if hit.up else -1.0
        mid = 0.5 * sign * (level - hit.base)
        reverted = None
        for t2 in range(hit.t + 2, horizon + 1):
            after = sign * (y[hit.t + 1 : t2 + 1] - hit.base)
            if after[-1] < mid and after[-2] < mid and np.median(after) < mid:
                back = after < mid
                j = after.size - 2
                while j > 0 and back[j - 1]:
                    j -= 1
                reverted = hit.t + 1 + j  # the first run of the return
                recognised = t2
                break
        if reverted is None:
            alerts.append(alert)
            accepted.append((len(alerts) - 1, st, hit.base, sign, mid))
            st, hit = new, nxt
            continue
        # A transient: its runs become outliers of the old level, which stays the baseline.
        span = np.arange(c, reverted)
        st.excluded[span[sign * (y[span] - hit.base) >= mid]] = True
        alerts.append(replace(alert, reverted_at=reverted))
        # An excursion that escalated (a second alert in the same direction within the revert
        # window of the first) and came back all the way: the first alert is reverted too, and
        # the level before it is the baseline again.
        while accepted:
            pos, before, base0, sign0, mid0 = accepted[-1]
            first = alerts[pos]
            back = sign0 * (y[reverted : recognised + 1] - base0) < mid0
            if sign0 != sign or hit.t - first.index > p.revert_window or not back.all():
                break
            accepted.pop()
            span = np.arange(first.change_index, reverted)
            before.excluded |= st.excluded
            before.excluded[span[sign0 * (y[span] - base0) >= mid0]] = True
            alerts[pos] = replace(first, reverted_at=reverted)
            st = before
        st.anchor = _anchor(y, st, p)
        hit = tests_at(ser, st, p, recognised + 1, T - 1, min_effect, "first")
    return alerts, st


def simulate_online(
    values: Sequence[float],
    *,
    min_effect: float = 0.01,
    higher_is_better: bool = False,
    samples: Sequence[Sequence[float] | None] | None = None,
    noise: Sequence[float | None] | None = None,
    params: Params | None = None,
    start: int = 0,
    events: Mapping[int, str] | Sequence[int] | None = None,
) -> list[Alert]:
    """The alerts the online gate would have raised had the series arrived one run at a time.

    Each alert uses only the runs up to its ``index``; after it, the new level (from
    ``change_index``) becomes the baseline. ``start`` ignores the runs before it (e.g. before a
    known, accepted change). ``samples`` (one sequence of raw samples per run, or None) and ``noise``
    (per run, the relative standard error of its value from the spread between its worker
    processes, :func:`process_noise`; None or NaN where unknown) only set a floor under the
    between-run noise: the median of the runs' own standard errors, ``noise`` where a run has it. ``events`` are the runs where the environment changed (the
    first run under the new one), as indices or ``{index: label}``: candidate change points; an
    alert whose change is placed at one carries its label in ``event``.
    """
    p = params or DEFAULT_PARAMS
    ser = prepare(values, samples, noise)
    return _replay(ser, p, min_effect, higher_is_better, start, event_labels(events, ser.y.size))[0]


def check_latest(
    values: Sequence[float],
    *,
    min_effect: float = 0.01,
    higher_is_better: bool = False,
    samples: Sequence[Sequence[float] | None] | None = None,
    noise: Sequence[float | None] | None = None,
    params: Params | None = None,
    start: int = 0,
    events: Mapping[int, str] | Sequence[int] | None = None,
) -> Alert | None:
    """Whether the newest run raises an alert: the online replay's verdict on the last run.

    Earlier alerts of the replay count as accepted (their levels are the baselines that follow),
    so a regression that was already raised on an earlier run does not fire again.
    """
    alerts = simulate_online(
        values,
        min_effect=min_effect,
        higher_is_better=higher_is_better,
        samples=samples,
        noise=noise,
        params=params,
        start=start,
        events=events,
    )
    n = len(values)
    for a in reversed(alerts):
        if a.index == n - 1:
            return a
    return None


def latest_pvalue(
    values: Sequence[float],
    *,
    higher_is_better: bool = False,
    samples: Sequence[Sequence[float] | None] | None = None,
    noise: Sequence[float | None] | None = None,
    params: Params | None = None,
    start: int = 0,
) -> float:
    """One-sided p-value that the newest run regressed, for false-discovery-rate control.

    The evidence of the strongest window ending at the newest run (k = 2..max_k and the longer
    windows, plus the drift test; Bonferroni-combined), against the baseline in force before that
    run -- the one :func:`check_latest` tests it against. Feed many cases' values to
    :func:`benchmark.analysis.fdr.benjamini_hochberg`. Returns 1.0 when nothing can be tested yet.
    """
    p = params or DEFAULT_PARAMS
    ser = prepare(values, samples, noise)
    T = ser.y.size
    if T < 2:
        return 1.0
    before = Transformed(y=ser.y[:-1], log=ser.log, unit=ser.unit, floor=ser.floor)
    _, st = _replay(before, p, 0.0, higher_is_better, start)
    st.excluded = np.append(st.excluded, False)
    st.prior = np.append(st.prior, np.nan)
    st.anchor = _anchor(ser.y, st, p)
    res = tests_at(ser, st, p, T - 1, T - 1, 0.0, "last")
    if res is None:
        return 1.0
    p_up, p_dn = res
    return float(p_dn if higher_is_better else p_up)
