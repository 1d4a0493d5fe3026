"""Scoring alerts against the true changes (false alarms, recall, delay, location, F1) and the
thresholds that give every detector one false-alarm rate."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .anchors import det_asv, det_otava, det_ours, score_bencher, score_conbench, score_paddle, score_pytest
from .scenarios import WARMUP, Alerts, Scenario, Truth, draw

# --------------------------------------------------------------------------------------------
# scoring
# --------------------------------------------------------------------------------------------


@dataclass
class Tally:
    runs: int = 0
    series: int = 0
    series_fa: int = 0
    false_alarms: int = 0
    changes: int = 0
    steps_detected: int = 0
    delays: list = field(default_factory=list)  # per true change: delay or None
    exact: int = 0
    within1: int = 0
    tp5: int = 0
    alerts: int = 0

    def add(self, alerts: Alerts, truth: list[Truth], n_runs: int) -> None:
        self.runs += n_runs - WARMUP
        self.series += 1
        self.alerts += len(alerts)
        used: set[int] = set()
        for tr in truth:
            self.changes += 1
            horizon = 45 if tr.kind == "ramp" else 10
            last = min(tr.index + horizon, tr.until - 1)
            match = None
            for j, (t, _c, up) in enumerate(alerts):
                if j in used or up != tr.up:
                    continue
                if tr.index <= t <= last:
                    match = j
                    break
            if match is None:
                self.delays.append(None)
                continue
            used.add(match)
            t, c, _ = alerts[match]
            self.delays.append(t - tr.index)
            if tr.kind == "step":
                self.steps_detected += 1
                self.exact += c == tr.index
                self.within1 += abs(c - tr.index) <= 1
            if abs(c - tr.index) <= 5:
                self.tp5 += 1
        # While a ramp goes on, further alerts in its direction report real, further changes.
        for tr in truth:
            if tr.kind == "ramp":
                used |= {
                    j for j, (t, _, up) in enumerate(alerts) if up == tr.up and tr.index <= t <= tr.end + 10
                }
        fa = len(alerts) - len(used)
        self.false_alarms += fa
        self.series_fa += fa > 0

    def recall(self, d: int) -> float:
        if not self.changes:
            return math.nan
        return sum(1 for x in self.delays if x is not None and x <= d) / self.changes

    def metrics(self) -> dict[str, float]:
        det = [x for x in self.delays if x is not None]
        fp = self.alerts - self.tp5
        fn = self.changes - self.tp5
        return {
            "fa_run": self.false_alarms / self.runs if self.runs else math.nan,
            "series_fa": self.series_fa / self.series if self.series else math.nan,
            "r1": self.recall(1),
            "r5": self.recall(5),
            "r10": self.recall(10),
            "r25": self.recall(25),
            "delay": float(np.median(det)) if det else math.nan,
            "exact": self.exact / self.steps_detected if self.steps_detected else math.nan,
            "within1": self.within1 / self.steps_detected if self.steps_detected else math.nan,
            "f1": 2 * self.tp5 / (2 * self.tp5 + fp + fn) if self.changes else math.nan,
        }


def evaluate(
    scns: list[Scenario],
    dets: dict[str, Callable[..., Alerts]],
    n_null: int,
    n_change: int,
    seed: int,
    thr=None,
) -> dict[tuple[str, str], dict[str, float]]:
    results = {}
    for scn in scns:
        data = draw(scn, n_null if scn.series == "null" else n_change, seed)
        for name, det in dets.items():
            tally = Tally()
            for v, truth in data:
                tally.add(det(v, None if thr is None else thr.get(name)), truth, v.size)
            results[(scn.name, name)] = tally.metrics()
    return results


# --------------------------------------------------------------------------------------------
# matched false-alarm rate
# --------------------------------------------------------------------------------------------

SCORES = {
    "paddle-5%": lambda v: score_paddle(v)[0],
    "pytest-5%": lambda v: score_pytest(v)[0],
    "bencher-t": lambda v: score_bencher(v)[0],
    "conbench-z5": lambda v: score_conbench(v)[0],
}


def _fa_rate(det: Callable[..., Alerts], data: list[np.ndarray], thr: float) -> float:
    alerts = sum(len(det(v, thr)) for v in data)
    return alerts / sum(v.size - WARMUP for v in data)


def _bisect(det: Callable[..., Alerts], data: list[np.ndarray], rate: float, lo: float, hi: float, up: bool):
    """The threshold (searched on a log10 scale in [lo, hi]) at which `det` raises at most `rate`
    false alarms per null run; ``up`` says whether the rate grows with the threshold."""
    for _ in range(10):
        mid = (lo + hi) / 2
        too_many = _fa_rate(det, data, 10**mid) > rate
        if too_many == up:
            hi = mid
        else:
            lo = mid
    return 10 ** (lo if up else hi)


def tune_thresholds(null_data: list[np.ndarray], rate: float) -> dict[str, float]:
    """Per detector, the threshold at which it raises `rate` false alarms per null run.

    The scores of paddle, pytest, bencher and conbench are stateless, so their threshold is a
    quantile of the null scores. asv, otava and ours keep state (the changes already reported), so
    theirs is found by bisection on the false-alarm rate itself.
    """
    thr = {
        "ours": _bisect(det_ours, null_data, rate, -6.0, -1.0, up=True),
        "asv-step": _bisect(det_asv, null_data, rate, -4.0, 0.0, up=False),
        "otava-ed": _bisect(det_otava, null_data, rate, -12.0, -1.0, up=True),
    }
    for name, fn in SCORES.items():
        s = np.concatenate([fn(v)[WARMUP:] for v in null_data])
        s = np.nan_to_num(s, nan=-np.inf)
        thr[name] = max(float(np.quantile(s, 1 - rate)), 0.0)
    return thr


def pct(x: float, digits: int = 0) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{digits}f}"


def num(x: float) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:g}"
