"""The run-level common shift: how much every series of a run moved together (the machine, not the code).

On a shared machine wall time drifts 5-25% over minutes, in common across cases: a run where every
case is 30% slower is one machine event, not thirty regressions. Within one run, each series' log
deviation from its own typical level is split into the run's common shift (the median deviation of
the *other* series in that run, so a series' own change never hides itself) and the rest. The judge
removes the shift from every run, earlier ones and the judged one alike, before it judges a wall-
time series (docs/gate.md, "The run's common shift"), so the between-run noise it estimates is
what is left once the machine is out of it. Pure: numbers in, numbers out.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)

# A run's shift for a series comes from at least this many other series measured in that run.
MIN_OTHERS = 3
# Above this many series a series' own deviation moves their median by at most one rank of
# hundreds: the plain median over all of them is used (leave-one-out costs a median per series).
LEAVE_ONE_OUT_UP_TO = 64


def run_shifts(series: Mapping[K, Mapping[int, float]]) -> dict[K, dict[int, float]]:
    """Per series (a key), per run (an id): the common log shift of that run for that series.

    `series` maps a key to {run id: positive value} (wall time per iteration, one value per run).
    A series' deviation in a run is its log value minus the median of its log values; the run's
    shift for it is the median deviation of the other series in that run, where at least MIN_OTHERS
    of them have one (runs with fewer are left out: no shift is removed there)."""
    keys = list(series)
    runs = sorted({r for values in series.values() for r in values})
    if len(keys) <= MIN_OTHERS or not runs:
        return {}
    col = {r: j for j, r in enumerate(runs)}
    dev = np.full((len(keys), len(runs)), np.nan)
    for i, k in enumerate(keys):
        values = series[k]
        logs = np.log(np.asarray([v for v in values.values() if v > 0], dtype=float))
        if logs.size == 0:
            continue
        centre = float(np.median(logs))
        for r, v in values.items():
            if v > 0:
                dev[i, col[r]] = np.log(v) - centre
    present = ~np.isnan(dev)
    out: dict[K, dict[int, float]] = {}
    whole = _nanmedian(dev) if len(keys) > LEAVE_ONE_OUT_UP_TO else None
    counts = present.sum(axis=0)
    for i, k in enumerate(keys):
        if whole is not None:
            shift, others = whole, counts - present[i]
        else:
            rest = np.delete(dev, i, axis=0)
            shift, others = _nanmedian(rest), (~np.isnan(rest)).sum(axis=0)
        out[k] = {
            r: float(shift[col[r]])
            for r in series[k]
            if others[col[r]] >= MIN_OTHERS and np.isfinite(shift[col[r]])
        }
    return out


def _nanmedian(matrix: np.ndarray) -> np.ndarray:
    """The median of each column over its non-NaN entries (NaN where it has none), quietly."""
    out = np.full(matrix.shape[1], np.nan)
    for j in range(matrix.shape[1]):
        column = matrix[:, j]
        column = column[~np.isnan(column)]
        if column.size:
            out[j] = float(np.median(column))
    return out


def leave_one_out_median(changes: Sequence[float], index: int) -> float | None:
    """The median of `changes` without the one at `index`; None with fewer than MIN_OTHERS others."""
    others = [c for j, c in enumerate(changes) if j != index]
    return float(np.median(others)) if len(others) >= MIN_OTHERS else None
