"""False discovery rate control across the many cases of one run.

A 500-case nightly tested case by case at 1% flags five cases every night by chance. The
Benjamini-Hochberg step-up procedure (Benjamini & Hochberg 1995) instead bounds the expected share
of false discoveries among the flagged cases by ``q`` for independent or positively dependent
p-values (PRDS, Benjamini & Yekutieli 2001), which timing results of one machine usually are. The
Benjamini-Yekutieli variant divides ``q`` by ``sum(1/i)`` and holds under any dependence, at a cost
in power.

Missing p-values (NaN, e.g. a case without a baseline) are never rejected and do not count in ``m``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _as_array(p_values: Sequence[float]) -> np.ndarray:
    p = np.asarray(p_values, dtype=float).ravel()
    ok = ~np.isnan(p)
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    return p


def adjust_pvalues(p_values: Sequence[float], method: str = "bh") -> np.ndarray:
    """Adjusted p-values (q-values): case ``i`` is a discovery at level q iff ``adjusted[i] <= q``.

    ``method`` is ``"bh"`` (Benjamini-Hochberg) or ``"by"`` (Benjamini-Yekutieli).
    """
    if method not in ("bh", "by"):
        raise ValueError("method must be 'bh' or 'by'")
    p = _as_array(p_values)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    ranks = np.arange(1, m + 1)
    factor = float(np.sum(1.0 / ranks)) if method == "by" else 1.0
    scaled = p[order] * m * factor / ranks
    # step-up: the adjusted value of rank i is the minimum over ranks >= i
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    out[order] = np.minimum(adjusted, 1.0)
    return out


def benjamini_hochberg(p_values: Sequence[float], q: float = 0.05) -> np.ndarray:
    """Boolean mask of the discoveries at false discovery rate ``q``."""
    if not 0 < q < 1:
        raise ValueError("q must be in (0, 1)")
    adj = adjust_pvalues(p_values, "bh")
    return np.nan_to_num(adj, nan=2.0) <= q


def benjamini_yekutieli(p_values: Sequence[float], q: float = 0.05) -> np.ndarray:
    """Like :func:`benjamini_hochberg`, valid under arbitrary dependence."""
    if not 0 < q < 1:
        raise ValueError("q must be in (0, 1)")
    adj = adjust_pvalues(p_values, "by")
    return np.nan_to_num(adj, nan=2.0) <= q
