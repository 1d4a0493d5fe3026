"""The window tests of the online gate (:mod:`benchmark.analysis.online`): at each run, every
window of the newest k runs against the baseline of the current level, with the rules that keep a
single run from alerting. The method is described once, in docs/detection.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from benchmark.analysis.robust import (
    Transformed,
    biweight_scale_rows,
    lag1_rows,
    mean_var,
    median_var,
    sliding_rows,
    trimmed_mean_rows,
    trimmed_var,
)


@dataclass(frozen=True)
class Params:
    """Tuning of the online gate; the defaults are the evaluated configuration."""

    alpha: float = 5e-3
    """Two-sided false-alarm budget per run and direction pair, split over the windows."""
    max_k: int = 10
    """Windows of the newest k = 2..max_k runs are tested."""
    long_windows: tuple[int, ...] = (15, 20)
    """Longer windows tested as well (slow ramps)."""
    window: int = 60
    """At most this many runs of the current level form the baseline."""
    trim: float = 0.2
    """The baseline level is the mean of those runs trimmed by this share at each end."""
    scale_window: int = 120
    """Runs whose residuals estimate the noise scale and autocorrelation."""
    scale_stride: int = 4
    """The noise scale and autocorrelation are re-estimated every this many runs."""
    min_history: int = 8
    """No test before this many runs of the series."""
    min_noise_runs: int = 10
    """Residuals of at least this many runs must estimate the noise before a window is tested."""
    min_baseline: int = 3
    """Runs of the current level needed before a window is tested against it."""
    clip: float = 1.25
    """Each run's deviation is clipped (Huber) at ``max(clip * T_k, clip_sigma)`` noise units."""
    clip_sigma: float = 3.5
    """...but never below this many noise units (a normal run is never clipped)."""
    outlier_sigma: float = 3.5
    """A window's most extreme run this many noise units beyond the median of its other runs is a
    lone outlier and counts as a baseline run."""
    suspect_sigma: float = 2.0
    """A window's most extreme run this many noise units beyond the median of its other runs, which
    are not significant one by one, is a suspect: the window fires only if the runs after it fire
    as a window of their own."""
    persist: float = 0.5
    """The newest run must deviate by this share of the threshold, in the same direction."""
    revert_window: int = 5
    """Runs after an alert during which a return to the old level cancels it."""
    drift_anchor: int = 10
    """Runs at the start of a level that anchor the slow-drift test."""
    max_rho: float = 0.85
    """Cap on the estimated lag-1 autocorrelation."""
    rho_prior: float = 0.3
    rho_prior_runs: float = 10.0
    """The autocorrelation estimate is shrunk towards ``rho_prior`` with this weight in runs, so a
    short history is treated as moderately autocorrelated until it shows otherwise."""


@dataclass
class LevelState:
    start: int  # first run of the current level
    excluded: np.ndarray  # runs treated as outliers (reverted transients)
    prior: np.ndarray  # residuals of runs of closed levels (NaN elsewhere)
    anchor: float = math.nan  # drift anchor of the current level


@dataclass(frozen=True)
class Hit:
    t: int
    k: int
    up: bool
    kind: str
    score: float
    z: float
    threshold: float
    p_value: float
    base: float
    margin: float  # half the window's threshold, in transformed units
    scale: float  # noise scale at the hit, in transformed units


def window_lengths(p: Params) -> list[int]:
    return sorted(set(range(2, p.max_k + 1)) | set(p.long_windows))


def tests_at(ser: Transformed, st: LevelState, p: Params, t_lo: int, t_hi: int, min_effect: float, want: str):
    """:func:`_tests_range` over [t_lo, t_hi] in growing chunks of runs, stopping at the first
    hit: memory stays bounded and the work after an alert is proportional to the runs up to the
    next one, not to the rest of the series."""
    if want != "first":
        return _tests_range(ser, st, p, t_lo, t_hi, min_effect, want)
    size = 256
    while t_lo <= t_hi:
        hi = min(t_hi, t_lo + size - 1)
        hit = _tests_range(ser, st, p, t_lo, hi, min_effect, want)
        if hit is not None:
            return hit
        t_lo, size = hi + 1, min(2 * size, 4096)
    return None


def _tests_range(
    ser: Transformed, st: LevelState, p: Params, t_lo: int, t_hi: int, min_effect: float, want: str
):
    """Evaluate every window test for the runs t in [t_lo, t_hi] under the level state ``st``.

    ``want="first"`` returns the first run where a test fires (a Hit, the strongest test at that
    run) or None; ``want="last"`` returns the one-sided p-values (up, down) of the strongest window
    at run t_hi, Bonferroni-combined.
    """
    y = ser.y
    ks = window_lengths(p)
    K = ks[-1]
    t_lo = max(t_lo, p.min_history - 1, 2)
    if t_hi < t_lo:
        return None
    e_lo, e_hi = t_lo - K, t_hi - 2  # ends of the baselines needed
    e_lo = max(e_lo, 0)
    rows = slice(e_lo, e_hi + 1)
    e_idx = np.arange(e_lo, e_hi + 1)

    # Baseline: median of the (at most `window`) runs of the current level ending at e.
    yb = y.copy()
    yb[: st.start] = np.nan
    yb[st.excluded] = np.nan
    m, nb = trimmed_mean_rows(sliding_rows(yb, p.window)[rows], p.trim)
    # Noise scale and autocorrelation: residuals of the last `scale_window` runs from their level.
    prior = st.prior.copy()
    prior[st.start :] = np.nan
    # The scale moves slowly: it is estimated at every `scale_stride`-th run (a multiple of it, so
    # a run's estimate never depends on where a batch of runs starts) and used for the runs up to
    # the next one; each estimate uses only runs before the windows it serves.
    q = max(1, p.scale_stride)
    # (while the history is shorter than the scale window, every run gets its own estimate: a
    # short history needs each residual it has)
    pick = np.where(e_idx < p.scale_window, e_idx, (e_idx // q) * q)
    e_s = np.unique(pick)
    Yw = sliding_rows(yb, p.scale_window)[e_s]
    if e_s[0] < e_lo:
        m0, _ = trimmed_mean_rows(sliding_rows(yb, p.window)[e_s[:1]], p.trim)
        m_s = np.concatenate([m0, m[e_s[1:] - e_lo]])
    else:
        m_s = m[e_s - e_lo]
    R = np.where(np.isnan(Yw), sliding_rows(prior, p.scale_window)[e_s], Yw - m_s[:, None])
    s_s = np.maximum(biweight_scale_rows(R), max(ser.floor, 1e-12))
    rho_s = lag1_rows(R, s_s, p.max_rho, p.rho_prior, p.rho_prior_runs)
    ns_s = np.sum(~np.isnan(R), axis=1)
    pick = np.searchsorted(e_s, pick)
    s, rho, ns = s_s[pick], rho_s[pick], ns_s[pick]
    # Degrees of freedom of the scale: biweight efficiency ~0.85, and an AR(1) series carries
    # (1 - rho^2) / (1 + rho^2) of the information about a variance of an independent one.
    df = np.maximum(2.0, 0.85 * ns * (1 - rho**2) / (1 + rho**2) - 1)
    n_tests = len(ks) + 1  # the windows, plus the drift test
    h = sps.t.isf(p.alpha / (2 * n_tests), df)
    # The drift test applies once the level's anchor runs have left the baseline window.
    anchor_ok = np.isfinite(st.anchor) & (e_idx - p.window + 1 > st.start + p.drift_anchor)
    var_base = trimmed_var(nb, rho, p.trim)
    var_anchor = median_var(np.full(e_idx.size, p.drift_anchor), rho)
    # Runs recognised as transients count as neutral (at the baseline) inside later windows.
    yt = np.where(st.excluded, np.nan, y)
    last_k = np.lib.stride_tricks.sliding_window_view(np.concatenate([np.full(K - 1, np.nan), yt]), K)

    best: Hit | None = None
    p_up: list[float] = []
    p_dn: list[float] = []
    for kind, k in [("step", k) for k in ks] + [("drift", p.max_k)]:
        t = e_idx + k
        valid = (t >= t_lo) & (t <= t_hi)
        valid &= ns >= p.min_noise_runs
        if kind == "step":
            valid &= nb >= p.min_baseline
        else:
            valid &= anchor_ok
        if best is not None:
            valid &= t <= best.t
        if not np.any(valid):
            continue
        ev = np.flatnonzero(valid)
        tv = t[ev]
        base = m[ev] if kind == "step" else np.full(ev.size, st.anchor)
        var_b = var_base[ev] if kind == "step" else var_anchor[ev]
        sd_z = np.sqrt(mean_var(k, rho[ev]) + var_b)
        thr = h[ev] * sd_z  # threshold for the window mean, in noise units
        blocks = last_k[tv, K - k :]
        blocks = np.where(np.isnan(blocks), base[:, None], blocks)
        dev = (blocks - base[:, None]) / s[ev, None]
        cap = np.maximum(p.clip * thr, p.clip_sigma)[:, None]
        mdev = np.mean(np.clip(dev, -cap, cap), axis=1)
        if want == "last":
            z = mdev / sd_z
            p_up.extend(sps.t.sf(z, df[ev]))
            p_dn.extend(sps.t.sf(-z, df[ev]))
            continue
        thr1 = h[ev] * np.sqrt(mean_var(k - 1, rho[ev]) + var_b)
        # Neutralising a lone outlier only lowers a side's mean: windows whose plain clipped mean
        # is below the threshold cannot fire, and only the others are looked at closely.
        up = np.zeros(ev.size, dtype=bool)
        dn = np.zeros(ev.size, dtype=bool)
        for sign, out in ((1.0, up), (-1.0, dn)):
            cand = np.flatnonzero(sign * mdev >= thr)
            if cand.size:
                fire, (md, med) = _side(
                    sign * dev[cand], thr[cand], thr1[cand], h[ev][cand], var_b[cand], rho[ev][cand], p
                )
                fire &= ser.effect_ok(base[cand] + sign * med * s[ev][cand], base[cand], min_effect)
                out[cand] = fire
                mdev[cand[fire]] = sign * md[fire]
        fired = np.flatnonzero(up | dn)
        if fired.size == 0:
            continue
        i = fired[0]
        score = abs(mdev[i]) / thr[i]
        if best is None or tv[i] < best.t or score > best.score:
            z = float(mdev[i] / sd_z[i])
            best = Hit(
                t=int(tv[i]),
                k=k,
                up=bool(up[i]),
                kind=kind,
                score=float(score),
                z=z,
                threshold=float(h[ev][i]),
                p_value=min(1.0, 2 * n_tests * float(sps.t.sf(abs(z), df[ev][i]))),
                base=float(base[i]),
                margin=float(0.5 * thr[i] * s[ev][i]),
                scale=float(s[ev][i]),
            )
    if want == "last":
        if not p_up:
            return None
        return (min(1.0, n_tests * min(p_up)), min(1.0, n_tests * min(p_dn)))
    return best


def _side(
    d: np.ndarray,
    thr: np.ndarray,
    thr1: np.ndarray,
    h: np.ndarray,
    var_b: np.ndarray,
    rho: np.ndarray,
    p: Params,
) -> tuple[np.ndarray, tuple]:
    """Which windows (rows of deviations ``d`` in noise units, oldest first, the direction tested
    positive) fire, with their clipped mean deviation and the median without the most extreme run.
    ``thr`` and ``thr1`` are the k-run and (k-1)-run thresholds, ``h`` the t quantile, ``var_b``
    the baseline's variance and ``rho`` the autocorrelation of each row (for the j-run threshold
    ``h sqrt(v_j + var_b)`` of the runs after a suspect).

    A single run never alerts, whatever its neighbours:

    * a lone outlier -- the most extreme run, more than ``outlier_sigma`` beyond the median of the
      other runs of the window, which is closer to the baseline than to it -- counts as a baseline
      run;
    * each run is clipped (Huber) at ``max(clip * T_k, clip_sigma)``, and the clipped mean must reach
      the threshold ``T_k``;
    * without its most extreme run the other k-1 runs must pass the (k-1)-run test on their own
      (for k = 2: the other run is significant alone), and their median is the window's level for
      the minimum effect;
    * a suspect -- the most extreme run, more than ``suspect_sigma`` beyond the median of the
      others, which is below the one-run threshold -- must be confirmed: the runs after it fire as
      a window of their own (by these rules; fewer than two: the window waits for more runs);
    * the newest run deviates by ``persist * T_k``.
    """
    n, k = d.shape
    rows = np.arange(n)
    j = np.argmax(d, axis=1)
    srt = np.sort(d, axis=1)
    lo, hi = (k - 2) // 2, (k - 1) // 2  # the median of the k-1 lowest runs, from the sorted rows
    others = 0.5 * (srt[:, lo] + srt[:, hi])
    # far beyond the others, which are closer to the baseline than to it (a large step's runs may
    # differ from each other by more than the old level's noise: none of them is a lone outlier)
    lone = (srt[:, -1] - others > p.outlier_sigma) & (others < 0.5 * srt[:, -1])
    if lone.any():
        d = d.copy()
        d[rows[lone], j[lone]] = 0.0
        j = np.argmax(d, axis=1)
        srt = np.sort(d, axis=1)
    cap = np.maximum(p.clip * thr, p.clip_sigma)[:, None]
    mdev = np.mean(np.clip(d, -cap, cap), axis=1)
    cap1 = np.maximum(p.clip * thr1, p.clip_sigma)[:, None]
    alone = np.clip(srt[:, :-1], -cap1, cap1).mean(axis=1) >= thr1
    med = 0.5 * (srt[:, lo] + srt[:, hi])
    gap = srt[:, -1] - med
    # (others each significant on their own -- a large step's runs -- need no confirmation)
    single = h * np.sqrt(1.0 + var_b)
    suspect = (gap > p.suspect_sigma) & (med < single)
    if suspect.any():
        # the runs after a suspect must fire as a window of their own (at least two runs)
        m = k - 1 - j
        confirmed = np.zeros(n, dtype=bool)
        for mm in np.unique(m[suspect & (m >= 2)]):
            r = np.flatnonzero(suspect & (m == mm))
            t_m = h[r] * np.sqrt(mean_var(mm, rho[r]) + var_b[r])
            t_m1 = h[r] * np.sqrt(mean_var(mm - 1, rho[r]) + var_b[r])
            confirmed[r] = _side(d[r, k - mm :], t_m, t_m1, h[r], var_b[r], rho[r], p)[0]
        alone &= ~suspect | confirmed
    fire = (mdev >= thr) & alone & (d[:, -1] >= p.persist * thr) & (med > 0)
    return fire, (mdev, med)
