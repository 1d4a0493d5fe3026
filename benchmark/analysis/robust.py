"""The shared pieces of the history detectors (:mod:`benchmark.analysis.online`,
:mod:`benchmark.analysis.segmentation`): the series on the log scale with its noise floor, the
per-run noise from worker processes, and the robust estimators (trimmed means, biweight scale,
lag-1 autocorrelation, the variance of means and medians of AR(1) runs), vectorised over rows.
The method is described once, in docs/detection.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

REGRESSION = "regression"
IMPROVEMENT = "improvement"


@dataclass(frozen=True)
class Transformed:
    """A series ready for the detectors: log values (or values over their median when some are <= 0)
    and the noise floor from the runs' own uncertainty."""

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
    difference, not half the series); None with fewer than 3 positive values. The degrees of
    freedom are those of a chi-square with the estimate's mean and variance (Satterthwaite):
    2(n-1)²/(3n-4) for n values, since successive differences share their values (2.9 for 5
    values, not 4; 6.2 for 10)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size < 3:
        return None
    d = np.diff(np.log(v))
    n = v.size
    return float(math.sqrt(np.mean(d**2) / 2.0)), 2.0 * (n - 1) ** 2 / (3 * n - 4)


def prepare(
    values: Sequence[float],
    samples: Sequence[Sequence[float] | None] | None,
    noise: Sequence[float | None] | None = None,
) -> Transformed:
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
    return Transformed(y=y, log=log, unit=unit, floor=floor)


def event_labels(events: Mapping[int, str] | Sequence[int] | None, n: int) -> dict[int, str]:
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


def sliding_rows(x: np.ndarray, width: int) -> np.ndarray:
    """Row e holds x[e-width+1 .. e], NaN-padded before the start."""
    pad = np.concatenate([np.full(width - 1, np.nan), x])
    return np.lib.stride_tricks.sliding_window_view(pad, width)


def nanmedian_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row medians ignoring NaN (fast: one sort), and the row counts."""
    n = np.sum(~np.isnan(a), axis=1)
    s = np.sort(a, axis=1)  # NaN sort last
    lo = np.maximum((n - 1) // 2, 0)
    hi = np.maximum(n // 2, 0)
    rows = np.arange(a.shape[0])
    med = 0.5 * (s[rows, lo] + s[rows, hi])
    med[n == 0] = np.nan
    return med, n


def trimmed_mean_rows(a: np.ndarray, trim: float) -> tuple[np.ndarray, np.ndarray]:
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


def biweight_scale_rows(r: np.ndarray) -> np.ndarray:
    """Biweight midvariance scale of each row of residuals (centre 0), ignoring NaN."""
    mad, n = nanmedian_rows(np.abs(r))
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


def lag1_rows(
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


def mean_var(k: int | np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Variance of the mean of k consecutive AR(1) values of unit variance."""
    k = np.asarray(k, dtype=float)
    rho = np.asarray(rho, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (1 + rho) / (1 - rho) - 2 * rho * (1 - rho**k) / (k * (1 - rho) ** 2)
    f = np.where(rho < 1e-9, 1.0, f)
    return f / k


def median_var(n: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Variance of the median of n AR(1) values of unit variance: pi/(2n+1) (a close fit to the
    exact small-sample values 0.449, 0.287, 0.138 for n = 3, 5, 10) times the mean's inflation."""
    n = np.maximum(np.asarray(n, dtype=float), 1.0)
    return math.pi / (2 * n + 1) * n * mean_var(n, rho)


def trimmed_var(n: np.ndarray, rho: np.ndarray, trim: float) -> np.ndarray:
    """Variance of a trimmed mean of n AR(1) values of unit variance: the mean's divided by the
    trimmed mean's efficiency at the normal (measured: 0.95 at 10% trimming, 0.88 at 20%, 0.64 for
    the median)."""
    n = np.maximum(np.asarray(n, dtype=float), 1.0)
    eff = float(np.interp(trim, [0.0, 0.1, 0.2, 0.25, 0.5], [1.0, 0.95, 0.88, 0.84, 0.64]))
    return mean_var(n, rho) / eff


def huber(r: np.ndarray, c: float) -> float:
    a = np.abs(r)
    return float(np.where(a <= c, a * a, 2 * c * a - c * c).sum())


def direction(up: bool, higher_is_better: bool) -> str:
    return IMPROVEMENT if up == higher_is_better else REGRESSION
