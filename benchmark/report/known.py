"""A view of the history without the results no report can show: one row must never break a report.

A history can hold a result whose metric this checkout does not define (an imported file, a
metric registered by a plugin that is not installed now). The judge refuses such a run (the gate
exits 2, naming the case); the reports and plots skip those results instead, and say so with one
line per series (:meth:`KnownMetrics.lines`), so that every other row is still rendered.
"""

from __future__ import annotations

from typing import Any

from benchmark.datamodel.metrics import METRICS, TIME


class KnownMetrics:
    """`store` read through: `results`, `history`, `series` and `baselines` leave out the results whose
    metric is not in :data:`benchmark.datamodel.metrics.METRICS`; everything else is the store's own."""

    def __init__(self, store: Any):
        self._store = store
        self._skipped: dict[tuple[str, str, str, str], int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _known(self, item: Any) -> bool:
        metric = getattr(item, "metric", None) or TIME
        if metric in METRICS:
            return True
        key = (item.case_id, item.place, item.mode, metric)
        self._skipped[key] = self._skipped.get(key, 0) + 1
        return False

    def results(self, *args: Any, **kwargs: Any) -> list:
        return [r for r in self._store.results(*args, **kwargs) if self._known(r)]

    def history(self, *args: Any, **kwargs: Any) -> list:
        return [p for p in self._store.history(*args, **kwargs) if self._known(p)]

    def series(self, *args: Any, **kwargs: Any) -> list:
        return [s for s in self._store.series(*args, **kwargs) if self._known(s)]

    def baselines(self, *args: Any, **kwargs: Any) -> dict:
        return {k: s for k, s in self._store.baselines(*args, **kwargs).items() if self._known(k)}

    def lines(self) -> list[str]:
        """One line per series that was left out (the metric as stored; print it escaped)."""
        known = ", ".join(METRICS)
        return [
            f"skipped {case_id} [{place} {mode}]: unknown metric {metric!r} (known: {known})"
            for case_id, place, mode, metric in self._skipped
        ]
