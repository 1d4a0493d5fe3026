"""Regression detection over the history of one series: one value per run, oldest first.

Repeats inside one run understate the drift between runs (the machine, the clocks, the allocator
state all change between runs, not between rounds), so the history gate works on the per-run values
and estimates the between-run noise from the history itself. A floor under that noise comes from
each run's own uncertainty: the between-process spread of its value where the run was measured in
several worker processes (``noise``, see :func:`process_noise`), else the standard error of the
median of its raw samples (which understates it: rounds inside one process are not independent).

Values are analysed as logarithms, so a change is relative (``magnitude`` 0.07 = +7%) and a noise
level is a coefficient of variation. Series with zero or negative values are analysed on a linear
scale relative to their median.

Online gate (:func:`check_latest`, :func:`simulate_online`)
-----------------------------------------------------------
At each run ``t``, for every window of the newest ``k`` runs (``k = 2..max_k``, plus the longer
``long_windows`` for slow ramps), the gate asks whether those runs sit above (or below) the
*baseline*:

* **Robust baseline.** The 20%-trimmed mean of the runs of the current level before the window (at
  most ``window`` of them); the current level starts at the last accepted change point. The noise
  scale is Tukey's biweight midvariance (Mosteller & Tukey 1977: as robust as the MAD, about 85%
  efficient) of the residuals of the last ``scale_window`` runs from their own level, so a new level
  borrows the noise estimate of the previous one instead of waiting for runs. No window is tested
  before ``min_noise_runs`` residuals exist.
* **Autocorrelation.** Between-run noise is often AR(1)-like (a machine state that lasts a few
  nights). The lag-1 autocorrelation ``rho`` of the residuals (winsorised, bias-corrected, and shrunk
  towards 0.3 with the weight of 10 runs so that a short history is not taken for white noise)
  inflates the variance of a k-run mean to ``v_k(rho) = (1/k^2) sum_{i,j} rho^|i-j|`` and that of the
  baseline likewise: the usual effective-sample-size correction (e.g. Wilks, *Statistical Methods in
  the Atmospheric Sciences*, sec. 5.2.4; Zhang 2006 for performance data).
* **A threshold per window.** Every window is tested at the same two-sided level, ``alpha`` split
  over the windows and the drift test (Bonferroni), against a Student t with the scale's effective
  degrees of freedom. In noise units the threshold is ``T_k = h * sqrt(v_k + var(baseline))``, so
  one run needs far stronger evidence than several: with the defaults and a long white-noise
  history about 2.8 sigma for a two-run window, 1.4 for ten, 1.05 for twenty. This is Perfherder's
  and Bencher's t-test against the recent history, run over several window lengths at once in the
  spirit of multi-window CUSUM / generalised likelihood-ratio schemes (Lai 1995).
* **Persistence.** A single run never alerts: the shortest window is two runs. Inside a window each
  run's deviation is clipped (Huber) at ``max(clip * T_k, clip_sigma)`` noise units, so one wild run
  carries only its share of the evidence -- a spike and a normal run do not add up to a step -- and
  the newest run must itself deviate by ``persist * T_k`` in the same direction.
* **Minimum effect.** The median of the window must differ from the baseline by ``min_effect``.
* **Transient levels.** If within ``revert_window`` runs after an alert the two newest runs and the
  median of the runs since the alert are back within half the alert's threshold of the old level,
  the alerted runs are treated as outliers (they count as the baseline inside later windows), the
  old baseline stays, and the return raises nothing. The alert keeps ``reverted_at``.
* **Slow drift.** A staircase of sub-threshold steps or a slow ramp drags a moving baseline along.
  The windows of 15 and 20 runs catch most ramps; in addition, once the current level is longer than
  the baseline window, the newest ``max_k`` runs are tested against an *anchor*, the median of the
  level's first ``drift_anchor`` runs.

An alert places the change at the split of the tested stretch where the new side's mean differs
most significantly from the old side's median (least-squares change-point estimation, Hinkley
1970), and the new level becomes the baseline -- as it would once a person accepts or fixes the
change. :func:`simulate_online` replays exactly this, run by run, using only the runs up to each
one; :func:`check_latest` is that replay's verdict on the newest run.

Offline segmentation (:func:`segment`)
--------------------------------------
Binary segmentation that places each split where the E-Divisive energy statistic (Matteson & James
2014, with exponent 1) is largest -- the split Apache Otava/Hunter and MongoDB use -- and keeps it if
the medians of the two sides differ significantly (a z-test whose variance accounts for the noise
scale, the median's efficiency and autocorrelation, Bonferroni-corrected over the candidate splits)
and by at least ``min_effect``. Segments shorter than ``min_size`` runs are not levels, so a one-run
spike is never a change point. As in Otava, a final pass re-tests each change point against its
neighbours and drops the weakest insignificant one until all hold.

Evidence for many series at once
--------------------------------
:func:`latest_pvalue` gives the Bonferroni-combined one-sided p-value of the strongest window at the
newest run, for false-discovery-rate control across a suite (:mod:`benchmark.analysis.fdr`). Each
offline :class:`ChangePoint` carries its p-value too.

Everything here is a pure function of numbers; ``python tools/evaluate_detector.py`` measures
it against the published anchors on synthetic series (see docs/detection.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as sps

REGRESSION = "regression"
IMPROVEMENT = "improvement"


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


# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Series:
    y: np.ndarray  # transformed values
    log: bool  # log scale (else linear, divided by `unit`)
    unit: float
    floor: float  # noise floor from the raw samples, in transformed units

    def level(self, v: float) -> float:
        return float(math.exp(v)) if self.log else float(v * self.unit)

    def rel(self, new: float, old: float) -> float:
        if self.log:
            return float(math.expm1(new - old))
        return float((new - old) / abs(old)) if old != 0 else math.nan

    def effect_ok(self, new: np.ndarray, old: np.ndarray, min_effect: float) -> np.ndarray:
        """|relative change| >= min_effect, symmetric on the log scale."""
        if self.log:
            return np.abs(new - old) >= math.log1p(min_effect)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(new - old) >= min_effect * np.abs(old)


def process_noise(values: Sequence[float] | None) -> float:
    """The relative standard error of a run value (the median of its processes' values) from the
    spread between its processes: sd(log values, ddof=1) * 1.2533 / sqrt(P); NaN for fewer than 2."""
    x = np.asarray(values if values is not None else [], dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    if x.size < 2:
        return math.nan
    return float(np.std(np.log(x), ddof=1) * 1.2533 / math.sqrt(x.size))


def pooled_process_spread(runs: Sequence[Sequence[float] | None]) -> tuple[float, float] | None:
    """(variance, degrees of freedom) of log process values within a run, pooled over the runs of
    a series that have 2 or more process values: sum((P_i - 1) s_i^2) / sum(P_i - 1); None when no
    run has 2. The spread between processes of unchanged code, estimated from the whole history."""
    ss, df = 0.0, 0
    for run in runs:
        x = np.asarray(run if run is not None else [], dtype=float)
        x = x[np.isfinite(x) & (x > 0)]
        if x.size >= 2:
            ss += float(np.var(np.log(x), ddof=1)) * (x.size - 1)
            df += x.size - 1
    return (ss / df, float(df)) if df else None


def between_run_noise(values: Sequence[float]) -> tuple[float, float] | None:
    """(standard deviation, degrees of freedom) of a series' log run values between runs, from its
    successive differences (mean square successive difference / 2, so a level step weighs one
    difference, not half the series); None with fewer than 3 positive values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size < 3:
        return None
    d = np.diff(np.log(v))
    return float(math.sqrt(np.mean(d**2) / 2.0)), float(v.size - 1)


def _prepare(
    values: Sequence[float],
    samples: Sequence[Sequence[float] | None] | None,
    noise: Sequence[float | None] | None = None,
) -> _Series:
    v = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite numbers")
    if v.size and np.all(v > 0):
        y, log, unit = np.log(v), True, 1.0
    else:
        unit = float(np.median(np.abs(v))) if v.size else 1.0
        unit = unit or 1.0
        y, log = v / unit, False
    floor = 0.0
    if noise is not None and len(noise) != v.size:
        raise ValueError("noise must have one entry per value")
    if samples is not None and len(samples) != v.size:
        raise ValueError("samples must have one entry per value")
    if samples is not None or noise is not None:
        ses = []
        for i in range(v.size):
            own = noise[i] if noise is not None else None
            if own is not None and math.isfinite(own) and own >= 0:
                # the run's between-process standard error, relative (= log units)
                ses.append(float(own) if log else float(own) * abs(v[i]) / unit)
                continue
            run = samples[i] if samples is not None else None
            x = np.asarray(run if run is not None else [], dtype=float)
            x = x[np.isfinite(x)]
            if x.size >= 3:
                med = float(np.median(x))
                mad = 1.4826 * float(np.median(np.abs(x - med)))
                se = 1.2533 * mad / math.sqrt(x.size)  # standard error of a median
                scale = abs(med) if log else unit
                if scale > 0 and (not log or med > 0):
                    ses.append(se / scale)
        if ses:
            floor = float(np.median(ses))
    return _Series(y=y, log=log, unit=unit, floor=floor)


def _windows(x: np.ndarray, width: int) -> np.ndarray:
    """Row e holds x[e-width+1 .. e], NaN-padded before the start."""
    pad = np.concatenate([np.full(width - 1, np.nan), x])
    return np.lib.stride_tricks.sliding_window_view(pad, width)


def _nanmedian_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row medians ignoring NaN (fast: one sort), and the row counts."""
    n = np.sum(~np.isnan(a), axis=1)
    s = np.sort(a, axis=1)  # NaN sort last
    lo = np.maximum((n - 1) // 2, 0)
    hi = np.maximum(n // 2, 0)
    rows = np.arange(a.shape[0])
    med = 0.5 * (s[rows, lo] + s[rows, hi])
    med[n == 0] = np.nan
    return med, n


def _trimmed_mean_rows(a: np.ndarray, trim: float) -> tuple[np.ndarray, np.ndarray]:
    """Row means after dropping the ``trim`` share of values at each end, ignoring NaN."""
    n = np.sum(~np.isnan(a), axis=1)
    s = np.sort(a, axis=1)  # NaN sort last
    # ceil: a short baseline (3-4 runs) is already trimmed by one run at each end, so one wild run
    # among the first runs of a new level does not become its level.
    g = np.minimum(np.ceil(trim * n - 1e-9), np.maximum((n - 1) // 2, 0)).astype(int)
    keep = n - 2 * g
    cols = np.arange(a.shape[1])[None, :]
    inside = (cols >= g[:, None]) & (cols < (g + keep)[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(inside, s, 0.0).sum(axis=1) / keep
    mean[n == 0] = np.nan
    return mean, n


def _biweight_scale_rows(r: np.ndarray) -> np.ndarray:
    """Biweight midvariance scale of each row of residuals (centre 0), ignoring NaN."""
    mad, n = _nanmedian_rows(np.abs(r))
    with np.errstate(divide="ignore", invalid="ignore"):
        u = r / (9.0 * mad[:, None])
        ok = ~np.isnan(u) & (np.abs(u) < 1.0)
        u2 = np.where(ok, u * u, 0.0)
        rr = np.where(ok, r, 0.0)
        num = np.sum(rr * rr * (1 - u2) ** 4, axis=1)
        den = np.sum(np.where(ok, (1 - u2) * (1 - 5 * u2), 0.0), axis=1)
        s = np.sqrt(n * num) / np.abs(den)
        sd = np.sqrt(np.nansum(r * r, axis=1) / np.maximum(n, 1))
    bad = ~np.isfinite(s) | (s <= 0)
    s[bad] = sd[bad]  # degenerate MAD (e.g. quantised values): fall back to the RMS
    return s


def _lag1_rows(
    r: np.ndarray, s: np.ndarray, max_rho: float, prior: float = 0.0, prior_n: float = 0.0
) -> np.ndarray:
    """Lag-1 autocorrelation of each row, winsorised at 2.5 sigma, bias-corrected, and shrunk
    towards ``prior`` with the weight of ``prior_n`` pairs."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.clip(r / s[:, None], -2.5, 2.5)
        prod = z[:, 1:] * z[:, :-1]
        npair = np.sum(~np.isnan(prod), axis=1)
        num = np.nansum(prod, axis=1) / np.maximum(npair, 1)
        nz = np.sum(~np.isnan(z), axis=1)
        den = np.nansum(z * z, axis=1) / np.maximum(nz, 1)
        rho = num / den
        rho = rho + (1 + 4 * np.clip(rho, 0, 1)) / np.maximum(npair, 1)  # Kendall's bias correction
    rho[~np.isfinite(rho) | (npair < 4)] = 0.0
    npair = np.where(npair < 4, 0, npair)
    rho = (npair * np.clip(rho, 0.0, max_rho) + prior_n * prior) / np.maximum(npair + prior_n, 1e-9)
    return np.clip(rho, 0.0, max_rho)


def _mean_var(k: int | np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Variance of the mean of k consecutive AR(1) values of unit variance."""
    k = np.asarray(k, dtype=float)
    rho = np.asarray(rho, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (1 + rho) / (1 - rho) - 2 * rho * (1 - rho**k) / (k * (1 - rho) ** 2)
    f = np.where(rho < 1e-9, 1.0, f)
    return f / k


def _median_var(n: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Variance of the median of n AR(1) values of unit variance: pi/(2n+1) (a close fit to the
    exact small-sample values 0.449, 0.287, 0.138 for n = 3, 5, 10) times the mean's inflation."""
    n = np.maximum(np.asarray(n, dtype=float), 1.0)
    return math.pi / (2 * n + 1) * n * _mean_var(n, rho)


def _trimmed_var(n: np.ndarray, rho: np.ndarray, trim: float) -> np.ndarray:
    """Variance of a trimmed mean of n AR(1) values of unit variance: the mean's divided by the
    trimmed mean's efficiency at the normal (measured: 0.95 at 10% trimming, 0.88 at 20%, 0.64 for
    the median)."""
    n = np.maximum(np.asarray(n, dtype=float), 1.0)
    eff = float(np.interp(trim, [0.0, 0.1, 0.2, 0.25, 0.5], [1.0, 0.95, 0.88, 0.84, 0.64]))
    return _mean_var(n, rho) / eff


def _direction(up: bool, higher_is_better: bool) -> str:
    return IMPROVEMENT if up == higher_is_better else REGRESSION


# --------------------------------------------------------------------------------------------
# online gate
# --------------------------------------------------------------------------------------------


@dataclass
class _State:
    start: int  # first run of the current level
    excluded: np.ndarray  # runs treated as outliers (reverted transients)
    prior: np.ndarray  # residuals of runs of closed levels (NaN elsewhere)
    anchor: float = math.nan  # drift anchor of the current level


@dataclass(frozen=True)
class _Hit:
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


def _window_lengths(p: Params) -> list[int]:
    return sorted(set(range(2, p.max_k + 1)) | set(p.long_windows))


def _tests_at(ser: _Series, st: _State, p: Params, t_lo: int, t_hi: int, min_effect: float, want: str):
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


def _tests_range(ser: _Series, st: _State, p: Params, t_lo: int, t_hi: int, min_effect: float, want: str):
    """Evaluate every window test for the runs t in [t_lo, t_hi] under the level state ``st``.

    ``want="first"`` returns the first run where a test fires (a _Hit, the strongest test at that
    run) or None; ``want="last"`` returns the one-sided p-values (up, down) of the strongest window
    at run t_hi, Bonferroni-combined.
    """
    y = ser.y
    ks = _window_lengths(p)
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
    m, nb = _trimmed_mean_rows(_windows(yb, p.window)[rows], p.trim)
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
    Yw = _windows(yb, p.scale_window)[e_s]
    if e_s[0] < e_lo:
        m0, _ = _trimmed_mean_rows(_windows(yb, p.window)[e_s[:1]], p.trim)
        m_s = np.concatenate([m0, m[e_s[1:] - e_lo]])
    else:
        m_s = m[e_s - e_lo]
    R = np.where(np.isnan(Yw), _windows(prior, p.scale_window)[e_s], Yw - m_s[:, None])
    s_s = np.maximum(_biweight_scale_rows(R), max(ser.floor, 1e-12))
    rho_s = _lag1_rows(R, s_s, p.max_rho, p.rho_prior, p.rho_prior_runs)
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
    var_base = _trimmed_var(nb, rho, p.trim)
    var_anchor = _median_var(np.full(e_idx.size, p.drift_anchor), rho)
    # Runs recognised as transients count as neutral (at the baseline) inside later windows.
    yt = np.where(st.excluded, np.nan, y)
    last_k = np.lib.stride_tricks.sliding_window_view(np.concatenate([np.full(K - 1, np.nan), yt]), K)

    best: _Hit | None = None
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
        sd_z = np.sqrt(_mean_var(k, rho[ev]) + var_b)
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
        thr1 = h[ev] * np.sqrt(_mean_var(k - 1, rho[ev]) + var_b)
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
            best = _Hit(
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
            t_m = h[r] * np.sqrt(_mean_var(mm, rho[r]) + var_b[r])
            t_m1 = h[r] * np.sqrt(_mean_var(mm - 1, rho[r]) + var_b[r])
            confirmed[r] = _side(d[r, k - mm :], t_m, t_m1, h[r], var_b[r], rho[r], p)[0]
        alone &= ~suspect | confirmed
    fire = (mdev >= thr) & alone & (d[:, -1] >= p.persist * thr) & (med > 0)
    return fire, (mdev, med)


def _huber(r: np.ndarray, c: float) -> float:
    a = np.abs(r)
    return float(np.where(a <= c, a * a, 2 * c * a - c * c).sum())


def _place_change(y: np.ndarray, st: _State, p: Params, hit: _Hit, events: Sequence[int] = ()) -> int:
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
    K = _window_lengths(p)[-1]
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
        costs[c] = _huber(left - ml, hub) + _huber(right - mr, hub)
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


def _close_level(y: np.ndarray, st: _State, end: int, prior: np.ndarray) -> None:
    """Store in ``prior`` the residuals of the level [st.start, end) that a new level closes."""
    idx = np.arange(st.start, end)
    idx = idx[~st.excluded[idx]]
    if idx.size >= 2:
        prior[idx] = y[idx] - np.median(y[idx])


def _anchor(y: np.ndarray, st: _State, p: Params) -> float:
    """Median of the first ``drift_anchor`` runs of the current level (NaN while too short)."""
    idx = np.arange(st.start, y.size)
    idx = idx[~st.excluded[idx]][: p.drift_anchor]
    return float(np.median(y[idx])) if idx.size == p.drift_anchor else math.nan


def _replay(
    ser: _Series,
    p: Params,
    min_effect: float,
    higher_is_better: bool,
    start: int = 0,
    events: Mapping[int, str] | None = None,
) -> tuple[list[Alert], _State]:
    """Run the online gate over the whole series, one run at a time (vectorised between alerts)."""
    y = ser.y
    T = y.size
    events = dict(events or {})
    st = _State(start=start, excluded=np.zeros(T, dtype=bool), prior=np.full(T, np.nan))
    st.anchor = _anchor(y, st, p)
    alerts: list[Alert] = []
    # Alerts not reverted: (position, the state before them, their baseline, sign, midpoint).
    accepted: list[tuple[int, _State, float, float, float]] = []
    hit = _tests_at(ser, st, p, start, T - 1, min_effect, "first")
    while hit is not None:
        c = _place_change(y, st, p, hit, sorted(events))
        level = float(np.median(y[c : hit.t + 1]))
        # The magnitude is the robust level change: the median of the new level's runs against
        # the baseline. Below the minimum effect (or against the window's direction) nothing is
        # raised at this run.
        if (level > hit.base) != hit.up or not ser.effect_ok(np.array(level), np.array(hit.base), min_effect):
            hit = _tests_at(ser, st, p, hit.t + 1, T - 1, min_effect, "first")
            continue
        alert = Alert(
            index=hit.t,
            change_index=c,
            direction=_direction(hit.up, higher_is_better),
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
        new = _State(start=c, excluded=st.excluded.copy(), prior=st.prior.copy())
        _close_level(y, st, c, new.prior)
        new.anchor = _anchor(y, new, p)
        nxt = _tests_at(ser, new, p, hit.t + 1, T - 1, min_effect, "first")
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
        hit = _tests_at(ser, st, p, recognised + 1, T - 1, min_effect, "first")
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
    ser = _prepare(values, samples, noise)
    return _replay(ser, p, min_effect, higher_is_better, start, _events(events, ser.y.size))[0]


def _events(events: Mapping[int, str] | Sequence[int] | None, n: int) -> dict[int, str]:
    """``{index: label}`` of the environment changes inside the series (a bare index is its label)."""
    if not events:
        return {}
    pairs = events.items() if isinstance(events, Mapping) else ((e, None) for e in events)
    out = {}
    for i, label in pairs:
        i = int(i)
        if 0 < i < n:
            out[i] = str(label) if label else f"environment change at run {i}"
    return out


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
    ser = _prepare(values, samples, noise)
    T = ser.y.size
    if T < 2:
        return 1.0
    before = _Series(y=ser.y[:-1], log=ser.log, unit=ser.unit, floor=ser.floor)
    _, st = _replay(before, p, 0.0, higher_is_better, start)
    st.excluded = np.append(st.excluded, False)
    st.prior = np.append(st.prior, np.nan)
    st.anchor = _anchor(ser.y, st, p)
    res = _tests_at(ser, st, p, T - 1, T - 1, 0.0, "last")
    if res is None:
        return 1.0
    p_up, p_dn = res
    return float(p_dn if higher_is_better else p_up)


# --------------------------------------------------------------------------------------------
# offline segmentation
# --------------------------------------------------------------------------------------------


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
    var = _median_var(left.size, rho) + _median_var(right.size, rho)
    z = (np.median(right) - np.median(left)) / (sigma * math.sqrt(float(var)))
    return min(1.0, max(1, n_cand) * 2 * float(sps.norm.sf(abs(z))))


def _noise(y: np.ndarray, cps: list[int]) -> tuple[float, float]:
    """Noise scale and lag-1 autocorrelation of the residuals from each segment's median."""
    bounds = [0, *cps, y.size]
    r = np.empty_like(y)
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        r[a:b] = y[a:b] - np.median(y[a:b])
    s = float(_biweight_scale_rows(r[None, :])[0])
    rho = float(_lag1_rows(r[None, :], np.array([s]), DEFAULT_PARAMS.max_rho)[0])
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
    """Offline change points of the whole series (see the module docstring), oldest first.

    ``events`` (runs where the environment changed, as for :func:`simulate_online`) are candidate
    change points: one is kept when the split there is significant (Bonferroni over the events
    only), a change point found within two runs of one moves onto it when the data fit it as well,
    and a change point at an event carries its label in ``event``.
    """
    ser = _prepare(values, samples, noise)
    ev = _events(events, ser.y.size)
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
                direction=_direction(after > before, higher_is_better),
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
    return _huber(x - np.median(x), cap) if x.size else 0.0


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
