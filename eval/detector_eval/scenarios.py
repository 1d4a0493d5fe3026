"""Synthetic series for the detector evaluation: scenarios (null, steps, spikes, ramps) drawn as
``level * exp(AR(1) noise)`` from a fixed seed."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

WARMUP = 7  # first index at which any detector may alert (8 runs of history)

Alerts = list[tuple[int, int, bool]]  # (index, change_index, up)


# --------------------------------------------------------------------------------------------
# scenarios
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Truth:
    index: int  # first run of the new level (ramp: first run of the ramp)
    up: bool
    kind: str = "step"  # "step" or "ramp"
    until: int = 10**9  # the next change (alerts after it are not matched to this one)
    end: int = -1  # ramp: last run of the ramp


@dataclass(frozen=True)
class Scenario:
    name: str
    group: str
    noise: float
    rho: float
    n_runs: int
    make: Callable[[np.random.Generator], tuple[np.ndarray, list[Truth]]]
    series: str = "change"  # "null" or "change": how many series to draw


def ar1(n: int, sigma: float, rho: float, rng: np.random.Generator) -> np.ndarray:
    e = rng.normal(0.0, sigma * math.sqrt(1 - rho * rho), n)
    x = np.empty(n)
    x[0] = rng.normal(0.0, sigma)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + e[i]
    return x


def _null(n: int):
    def make(rng):
        return np.zeros(n), []

    return make


def _outliers(base: Callable, sigma: float, share: float = 0.02):
    """2% of runs get a heavy-tailed (Student t, 2 d.o.f.) kick of 5 sigma scale, mostly slower."""

    def make(rng):
        level, truth = base(rng)
        n = level.size
        hit = rng.random(n) < share
        sign = np.where(rng.random(n) < 0.8, 1.0, -1.0)
        kick = sign * np.abs(rng.standard_t(2, n)) * 5 * sigma
        return level + np.where(hit, kick, 0.0), truth

    return make


def _step(n: int, at: int, size: float):
    def make(rng):
        up = bool(rng.random() < 0.5)
        level = np.zeros(n)
        level[at:] = math.log1p(size) if up else -math.log1p(size)
        return level, [Truth(at, up)]

    return make


def _two_steps(n: int, at: int, size: float):
    def make(rng):
        gap = int(rng.integers(5, 11))
        ups = rng.random(2) < 0.5
        level = np.zeros(n)
        c1, c2 = at, at + gap
        level[c1:] += math.log1p(size) * (1 if ups[0] else -1)
        level[c2:] += math.log1p(size) * (1 if ups[1] else -1)
        return level, [Truth(c1, bool(ups[0]), until=c2), Truth(c2, bool(ups[1]))]

    return make


def _spikes(n: int, length: int, sigma: float):
    """Three transient spikes of `length` runs, 5-10 sigma, mostly slower, that revert."""

    def make(rng):
        level = np.zeros(n)
        for start in (60, 110, 160):
            mag = rng.uniform(5, 10) * sigma * (1 if rng.random() < 0.8 else -1)
            level[start : start + length] += mag
        return level, []

    return make


def _ramp(n: int, at: int, total: float, runs: int):
    def make(rng):
        level = np.zeros(n)
        level[at : at + runs] = np.linspace(0, math.log1p(total), runs + 1)[1:]
        level[at + runs :] = math.log1p(total)
        return level, [Truth(at, True, kind="ramp", end=at + runs - 1)]

    return make


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for noise in (0.005, 0.01, 0.03, 0.05):
        for rho in (0.0, 0.3, 0.6):
            out.append(
                Scenario(f"null noise={noise:.1%} rho={rho}", "null", noise, rho, 365, _null(365), "null")
            )
    for rho in (0.0, 0.3):
        out.append(
            Scenario(
                f"null+2% outliers noise=1% rho={rho}",
                "outliers",
                0.01,
                rho,
                365,
                _outliers(_null(365), 0.01),
                "null",
            )
        )
    out.append(
        Scenario(
            "step 5sigma+2% outliers noise=1% rho=0",
            "outliers",
            0.01,
            0.0,
            90,
            _outliers(_step(90, 60, 0.05), 0.01),
        )
    )
    for noise in (0.005, 0.01, 0.03, 0.05):
        for size in (0.02, 0.05, 0.10, 0.20):
            out.append(
                Scenario(
                    f"step +-{size:.0%} noise={noise:.1%} rho=0", "step", noise, 0.0, 90, _step(90, 60, size)
                )
            )
    for rho in (0.3, 0.6):
        for size in (0.02, 0.05, 0.10, 0.20):
            out.append(
                Scenario(
                    f"step +-{size:.0%} noise=1.0% rho={rho}", "step", 0.01, rho, 90, _step(90, 60, size)
                )
            )
    for mult in (3, 5):
        for rho in (0.0, 0.3, 0.6):
            out.append(
                Scenario(
                    f"step +-{mult}sigma noise=1% rho={rho}",
                    "sigma-step",
                    0.01,
                    rho,
                    90,
                    _step(90, 60, 0.01 * mult),
                )
            )
    for rho in (0.0, 0.3):
        out.append(
            Scenario(
                f"two steps +-5sigma 5-10 apart rho={rho}",
                "two-steps",
                0.01,
                rho,
                100,
                _two_steps(100, 60, 0.05),
            )
        )
    for length in (1, 2, 3):
        out.append(
            Scenario(
                f"spikes of {length} run(s) 5-10sigma rho=0.3",
                "spikes",
                0.01,
                0.3,
                200,
                _spikes(200, length, 0.01),
            )
        )
    for noise in (0.01, 0.03):
        for rho in (0.0, 0.3):
            out.append(
                Scenario(
                    f"ramp +10% over 20 runs noise={noise:.0%} rho={rho}",
                    "ramp",
                    noise,
                    rho,
                    120,
                    _ramp(120, 60, 0.10, 20),
                )
            )
    return out


def draw(scn: Scenario, n_series: int, seed: int) -> list[tuple[np.ndarray, list[Truth]]]:
    """The scenario's series; the stream depends only on the seed and the scenario's name."""
    rng = np.random.default_rng([seed, zlib.crc32(scn.name.encode())])
    out = []
    for _ in range(n_series):
        level, truth = scn.make(rng)
        noise = ar1(scn.n_runs, scn.noise, scn.rho, rng)
        out.append((np.exp(level + noise), truth))
    return out


# --------------------------------------------------------------------------------------------
# detectors (online: an alert at index t uses values[:t+1] only)
# --------------------------------------------------------------------------------------------
