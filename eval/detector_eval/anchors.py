"""The detectors compared: ours (:func:`benchmark.analysis.online.simulate_online`) and the
published anchors (paddle, pytest-benchmark, asv, Bencher, Conbench, Otava) re-implemented. Online:
an alert at index t uses values[:t+1] only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from scipy import special

from benchmark.analysis.online import DEFAULT_PARAMS, simulate_online

from .scenarios import WARMUP, Alerts


def det_ours(v: np.ndarray, thr: float | None = None) -> Alerts:
    """Ours at its defaults; ``thr`` overrides ``alpha`` (for the matched false-alarm comparison)."""
    params = DEFAULT_PARAMS if thr is None else replace(DEFAULT_PARAMS, alpha=thr)
    return [(a.index, a.change_index, a.magnitude > 0) for a in simulate_online(v, params=params)]


def _stateless(score: np.ndarray, signed: np.ndarray, thr: float) -> Alerts:
    idx = np.flatnonzero(np.nan_to_num(score, nan=-np.inf) > thr)
    idx = idx[idx >= WARMUP]
    return [(int(t), int(t), bool(signed[t] > 0)) for t in idx]


def _rolling_mean_sd(v: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, sd (ddof=1) and count of v[max(0,t-n):t] for every t (the runs before t)."""
    c1 = np.concatenate([[0.0], np.cumsum(v)])
    c2 = np.concatenate([[0.0], np.cumsum(v * v)])
    t = np.arange(v.size)
    lo = np.maximum(0, t - n)
    cnt = (t - lo).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = (c1[t] - c1[lo]) / cnt
        var = (c2[t] - c2[lo] - cnt * mean * mean) / (cnt - 1)
    return mean, np.sqrt(np.maximum(var, 0.0)), cnt


def score_paddle(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, _, cnt = _rolling_mean_sd(v, 5)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = v / mean - 1
    rel[cnt < 5] = np.nan
    return np.abs(rel), rel


def score_pytest(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rel = np.full(v.size, np.nan)
    rel[1:] = v[1:] / v[:-1] - 1
    return np.abs(rel), rel


def score_bencher(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The t-distribution quantile of |x - mean| / sd (compare with 0.99)."""
    mean, sd, cnt = _rolling_mean_sd(v, 64)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (v - mean) / sd
        q = special.stdtr(np.maximum(cnt - 1, 1), np.abs(z))
    q[(cnt < 2) | ~np.isfinite(z)] = np.nan
    # return 1 - q on a log scale so that quantiles near 1 stay resolvable
    return -np.log10(np.maximum(1 - q, 1e-300)), z


def score_conbench(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, sd, cnt = _rolling_mean_sd(v, 100)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (v - mean) / sd
    z[(cnt < 2) | ~np.isfinite(z)] = np.nan
    return np.abs(z), z


def det_paddle(v, thr=None):
    s, d = score_paddle(v)
    return _stateless(s, d, 0.05 if thr is None else thr)


def det_pytest(v, thr=None):
    s, d = score_pytest(v)
    return _stateless(s, d, 0.05 if thr is None else thr)


def det_bencher(v, thr=None):
    s, d = score_bencher(v)
    return _stateless(s, d, 2.0 if thr is None else thr)  # -log10(1 - 0.99) = 2


def det_conbench(v, thr=None):
    s, d = score_conbench(v)
    return _stateless(s, d, 5.0 if thr is None else thr)


def _asv_fits(v: np.ndarray, window: int = 50):
    """For every run t, the L1 Potts fit over v[t-window+1 .. t] (asv's step model).

    Returns, per t: start of the last segment, its level and mean absolute deviation, and the same
    for the previous segment (NaN when the fit has a single segment). The dynamic programme runs
    for all t at once.
    """
    T = v.size
    W = min(window, T)
    # cost[l, L] and med[l, L]: L1 cost and median of v[l:l+L]
    cost = np.full((T + 1, W + 1), np.inf)
    med = np.full((T + 1, W + 1), np.nan)
    for L in range(1, W + 1):
        if L > T:
            break
        win = np.lib.stride_tricks.sliding_window_view(v, L)
        mm = np.median(win, axis=1)
        med[: T - L + 1, L] = mm
        cost[: T - L + 1, L] = np.abs(win - mm[:, None]).sum(axis=1)
    t = np.arange(T)
    a = np.maximum(0, t - W + 1)
    n = t - a + 1
    total = cost[a, n]
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = 3 * total * np.log(np.maximum(n, 2)) / n
    gamma = np.where(total > 0, gamma, 1e-12)
    B = np.full((T, W + 1), np.inf)
    B[:, 0] = -gamma
    back = np.zeros((T, W + 1), dtype=int)
    for r in range(1, W + 1):
        ls = np.arange(r)
        cand = B[:, :r] + gamma[:, None] + cost[a[:, None] + ls[None, :], r - ls[None, :]]
        j = np.argmin(cand, axis=1)
        B[:, r] = cand[t, j]
        back[:, r] = j
    l1 = back[t, n]
    l0 = back[t, l1]
    last_start = a + l1
    last_len = n - l1
    last_v = med[last_start, last_len]
    last_err = cost[last_start, last_len] / last_len
    has_prev = l1 > 0
    prev_start = a + l0
    prev_len = np.maximum(l1 - l0, 1)
    prev_v = np.where(has_prev, med[prev_start, prev_len], np.nan)
    prev_err = np.where(has_prev, cost[prev_start, prev_len] / prev_len, np.nan)
    return last_start, last_v, last_err, prev_v, prev_err


def score_asv(v: np.ndarray):
    start, lv, le, pv, pe = _asv_fits(v)
    jump = lv - pv
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(jump) > np.maximum(le, pe), np.abs(jump) / np.abs(pv), 0.0)
    rel = np.nan_to_num(rel, nan=0.0)
    return rel, jump, start


def det_asv(v, thr=None):
    thr = 0.05 if thr is None else thr
    rel, jump, start = score_asv(v)
    out: Alerts = []
    reported: list[int] = []
    for t in range(WARMUP, v.size):
        if rel[t] > thr and start[t] > 0 and all(abs(start[t] - r) > 2 for r in reported):
            reported.append(int(start[t]))
            out.append((t, int(start[t]), bool(jump[t] > 0)))
    return out


def _otava_pass(v: np.ndarray, P: np.ndarray, c1: np.ndarray, c2: np.ndarray, since: int, t_from: int):
    """Best energy split and its t-test p-value for every t >= t_from, windows starting at `since`."""
    T = v.size
    t = np.arange(t_from, T)
    if t.size == 0:
        return t, np.array([]), np.array([]), np.array([])
    a = np.maximum(since, t - 49)
    b = t + 1
    off = np.arange(2, 49)  # split offsets from a (sizes >= 2 on both sides)
    tau = a[:, None] + off[None, :]
    ok = tau <= b[:, None] - 2
    tau = np.where(ok, tau, a[:, None] + 2)
    A = a[:, None]
    Bb = b[:, None]

    def S(i0, i1, j0, j1):
        return P[i1, j1] - P[i0, j1] - P[i1, j0] + P[i0, j0]

    m1 = (tau - A).astype(float)
    m2 = (Bb - tau).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = S(A, tau, tau, Bb)
        wl = S(A, tau, A, tau) / 2
        wr = S(tau, Bb, tau, Bb) / 2
        e = 2 * cross / (m1 * m2) - wl / (m1 * (m1 - 1) / 2) - wr / (m2 * (m2 - 1) / 2)
        q = np.where(ok, m1 * m2 / (m1 + m2) * e, -np.inf)
    j = np.argmax(q, axis=1)
    rows = np.arange(t.size)
    best = tau[rows, j]
    valid = ok[rows, j]
    # Student's t-test (pooled, np.std with ddof=0 as Otava's ComparativeStats) between the sides
    n1 = (best - a).astype(float)
    n2 = (b - best).astype(float)
    s1, s2 = c1[best] - c1[a], c1[b] - c1[best]
    q1, q2 = c2[best] - c2[a], c2[b] - c2[best]
    with np.errstate(divide="ignore", invalid="ignore"):
        mu1, mu2 = s1 / n1, s2 / n2
        v1 = np.maximum(q1 / n1 - mu1 * mu1, 0.0)  # population variances (np.std default)
        v2 = np.maximum(q2 / n2 - mu2 * mu2, 0.0)
        # scipy's ttest_ind_from_stats(equal_var=True) with those stds
        sp2 = ((n1 - 1) * v1 + (n2 - 1) * v2) / (n1 + n2 - 2)
        tt = (mu2 - mu1) / np.sqrt(sp2 * (1 / n1 + 1 / n2))
        p = 2 * special.stdtr(n1 + n2 - 2, -np.abs(tt))
    p = np.where(valid & np.isfinite(p), p, 1.0)
    return t, best, p, mu2 - mu1


def det_otava(v, thr=None):
    alpha = 0.001 if thr is None else thr
    T = v.size
    D = np.abs(v[:, None] - v[None, :])
    P = np.zeros((T + 1, T + 1))
    P[1:, 1:] = D.cumsum(0).cumsum(1)
    c1 = np.concatenate([[0.0], np.cumsum(v)])
    c2 = np.concatenate([[0.0], np.cumsum(v * v)])
    out: Alerts = []
    since, t_from = 0, WARMUP
    while t_from < T:
        t, best, p, diff = _otava_pass(v, P, c1, c2, since, t_from)
        hit = np.flatnonzero(p <= alpha)
        if hit.size == 0:
            break
        i = hit[0]
        out.append((int(t[i]), int(best[i]), bool(diff[i] > 0)))
        since, t_from = int(best[i]), int(t[i]) + 1
    return out


DETECTORS: dict[str, Callable[..., Alerts]] = {
    "ours": det_ours,
    "paddle-5%": det_paddle,
    "pytest-5%": det_pytest,
    "asv-step": det_asv,
    "bencher-t": det_bencher,
    "conbench-z5": det_conbench,
    "otava-ed": det_otava,
}
