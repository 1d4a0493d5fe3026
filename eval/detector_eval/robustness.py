"""Robustness of the online gate: lone spikes and excursions that come back (synthetic), and every
alert on the real histories under tests/data/histories, judged."""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmark.analysis.online import simulate_online

from .scenarios import ar1
from .scoring import pct

# --------------------------------------------------------------------------------------------
# robustness: lone outliers and excursions that come back
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpikeCase:
    """One run far out (``size``: relative, or ``None`` for 5-20 sigma), in a null series; with
    ``neighbour`` "before"/"after"/"both", the run(s) next to it are slightly high (+2-3 sigma,
    the spike's direction)."""

    name: str
    rho: float
    min_effect: float
    size: float | None
    neighbour: str = "none"
    noise: float = 0.01
    n_runs: int = 120


def spike_cases() -> list[SpikeCase]:
    out = []
    for nb in ("none", "before", "after", "both"):
        out.append(SpikeCase(f"+15% spike, next: {nb}, min_effect 5%, rho 0", 0.0, 0.05, 0.15, nb))
    for rho in (0.0, 0.3):
        for nb in ("none", "before", "after", "both"):
            out.append(
                SpikeCase(f"5-20sigma spike, next: {nb}, min_effect 1%, rho {rho}", rho, 0.01, None, nb)
            )
    return out


def draw_spike(case: SpikeCase, rng: np.random.Generator) -> tuple[np.ndarray, int, np.ndarray]:
    """The series, the spike's index, and the same series without the spike (its run as drawn)."""
    y = ar1(case.n_runs, case.noise, case.rho, rng)
    at = int(rng.integers(30, case.n_runs - 10))
    up = bool(rng.random() < 0.8)
    sign = 1.0 if up else -1.0
    size = math.log1p(case.size) if case.size is not None else rng.uniform(5, 20) * case.noise
    # the spike and its neighbours are set relative to the level, not added to the noise
    noise_at = float(y[at])
    y[at] = sign * size
    if case.neighbour in ("before", "both"):
        y[at - 1] = sign * rng.uniform(2, 3) * case.noise
    if case.neighbour in ("after", "both"):
        y[at + 1] = sign * rng.uniform(2, 3) * case.noise
    without = y.copy()
    without[at] = noise_at
    return np.exp(y), at, np.exp(without)


def spike_alert_share(case: SpikeCase, n_series: int, seed: int) -> tuple[int, int]:
    """Series where an alert's window holds the spike (raised within 10 runs of it, placing the
    change at or before it), and of those, the series where the spike caused it: the same series
    without the spike raises no such alert."""

    def near(v, at):
        alerts = simulate_online(v, min_effect=case.min_effect)
        return any(at <= a.index <= at + 10 and a.change_index <= at + 1 for a in alerts)

    rng = np.random.default_rng([seed, zlib.crc32(case.name.encode())])
    hit = caused = 0
    for _ in range(n_series):
        v, at, without = draw_spike(case, rng)
        if near(v, at):
            hit += 1
            caused += not near(without, at)
    return hit, caused


@dataclass(frozen=True)
class ExcursionCase:
    name: str
    length: int
    rho: float
    noise: float = 0.01
    n_runs: int = 120


def excursion_cases() -> list[ExcursionCase]:
    return [
        ExcursionCase(f"{length}-run excursion 5-10sigma, rho {rho}", length, rho)
        for length in (2, 3)
        for rho in (0.0, 0.3)
    ]


def excursion_reverted(case: ExcursionCase, n_series: int, seed: int) -> tuple[float, int, int]:
    """Of the excursions that raised an alert, the share marked reverted (and the counts)."""
    rng = np.random.default_rng([seed, zlib.crc32(case.name.encode())])
    alerted = reverted = 0
    for _ in range(n_series):
        y = ar1(case.n_runs, case.noise, case.rho, rng)
        at = 60
        sign = 1.0 if rng.random() < 0.8 else -1.0
        y[at : at + case.length] += sign * rng.uniform(5, 10) * case.noise
        alerts = [
            a
            for a in simulate_online(np.exp(y))
            if at <= a.index <= at + case.length + 5 and a.change_index <= at + case.length - 1
        ]
        if alerts:
            alerted += 1
            reverted += alerts[0].reverted_at is not None
    return (reverted / alerted if alerted else math.nan), reverted, alerted


def robustness(n_spike: int, n_exc: int, seed: int) -> tuple[list[list[str]], list[tuple[str, str, bool]]]:
    rows, tgt = [], []
    worst = 0.0
    for case in spike_cases():
        hit, caused = spike_alert_share(case, n_spike, seed)
        worst = max(worst, caused / n_spike)
        rows.append(
            [
                case.name,
                f"{hit} / {n_spike} hold the spike, {caused} caused by it",
                f"{100 * hit / n_spike:.2f} / {100 * caused / n_spike:.2f}",
            ]
        )
    tgt.append(
        (
            "one-run spikes (also next to +2-3sigma runs): series where the spike causes an alert <= 0.1%",
            f"worst {100 * worst:.2f}%",
            worst <= 0.001,
        )
    )
    worst_r = 1.0
    for case in excursion_cases():
        share, r, a = excursion_reverted(case, n_exc, seed)
        worst_r = min(worst_r, share if a else 1.0)
        rows.append([case.name, f"{r} / {a} alerted marked reverted", pct(share, 1)])
    tgt.append(
        (
            "2-3-run excursions that come back: marked reverted >= 99%",
            f"worst {100 * worst_r:.1f}%",
            worst_r >= 0.99,
        )
    )
    return rows, tgt


# --------------------------------------------------------------------------------------------
# real histories
# --------------------------------------------------------------------------------------------

HISTORIES = Path(__file__).resolve().parents[2] / "tests" / "data" / "histories"
REAL_MIN_EFFECT = 0.05


@dataclass(frozen=True)
class RealHistory:
    file: str
    higher_is_better: bool
    what: str


REAL = [
    RealHistory("local_abs_smoke_cpu.csv", False, "abs_smoke on this machine's CPU, s/iter (recorded here)"),
    RealHistory(
        "local_abs_smoke_cpu_static.csv", False, "abs_smoke, static mode, this machine's CPU, s/iter"
    ),
    RealHistory("rust_bench_fib_20.csv", False, "github-action-benchmark CI: Rust bench_fib_20, ns/iter"),
    RealHistory("go_benchmark_fib20.csv", False, "github-action-benchmark CI: Go BenchmarkFib20, ns/op"),
    RealHistory("cpp_benchmark_fib_20.csv", False, "github-action-benchmark CI: C++ fib_20, ns/iter"),
    RealHistory(
        "pytest_benchmark_fib_20.csv", True, "github-action-benchmark CI: pytest test_fib_20, iter/s"
    ),
    RealHistory("benchmarkjs_fib_20.csv", True, "github-action-benchmark CI: Benchmark.js fib(20), ops/s"),
]


def read_history(path: Path) -> tuple[list[str], np.ndarray]:
    """Labels and values of a ``run,value`` CSV."""
    import csv

    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [r.get("run") or str(i) for i, r in enumerate(rows)], np.array([float(r["value"]) for r in rows])


def judge_alert(y: np.ndarray, a, cps) -> tuple[str, bool, int]:
    """How an alert on a real history stands: (verdict, right, runs of the new level beyond the
    midpoint between the levels up to the alert).

    * ``step``: the offline segmentation of the whole series has a change point in the same
      direction within 5 runs of the alert's change (the F1 margin): right;
    * ``step (held N runs)``: not reverted, and the median of the (up to 10) runs after the alert
      is still beyond the midpoint: right (the offline segmentation can miss a late change);
    * ``excursion, reverted``: the level came back, marked reverted, with at least two runs beyond
      the midpoint (a real transient, not a lone outlier): right;
    * ``lone outlier``: at most one run of the new level beyond the midpoint: wrong;
    * ``unconfirmed``: none of these: wrong (a false alarm, as far as the whole series tells).
    """
    up = a.level > a.baseline
    mid = 0.5 * (math.log(a.level) + math.log(a.baseline))
    seg = np.log(y[a.change_index : a.index + 1])
    beyond = int(np.sum(seg > mid) if up else np.sum(seg < mid))
    if beyond <= 1:
        return "lone outlier", False, beyond
    if any(abs(c.index - a.change_index) <= 5 and (c.after > c.before) == up for c in cps):
        return "step", True, beyond
    later = np.log(y[a.index + 1 : a.index + 11])
    if a.reverted_at is None and later.size >= 5 and (np.median(later) > mid) == up:
        return f"step (held {later.size} runs)", True, beyond
    if a.reverted_at is not None:
        return "excursion, reverted", True, beyond
    return "unconfirmed", False, beyond


def real_histories(
    min_effect: float = REAL_MIN_EFFECT,
) -> tuple[list[list[str]], list[tuple[str, str, bool]], int, int]:
    """Every alert of the online gate on the real histories under tests/data/histories, judged."""
    from benchmark.analysis.segmentation import segment

    rows: list[list[str]] = []
    small = lone = wrong = total = 0
    for h in REAL:
        path = HISTORIES / h.file
        if not path.exists():
            rows.append([h.file, "-", "-", "-", "-", "-", "missing"])
            continue
        labels, y = read_history(path)
        kw = {"min_effect": min_effect, "higher_is_better": h.higher_is_better}
        alerts = simulate_online(y, **kw)
        cps = segment(y, **kw)
        if not alerts:
            rows.append([f"{h.file} ({y.size} runs)", "none", "-", "-", "-", "-", "-"])
        for a in alerts:
            verdict, right, beyond = judge_alert(y, a, cps)
            total += 1
            small += abs(a.magnitude) < min_effect
            lone += verdict == "lone outlier"
            wrong += not right
            rows.append(
                [
                    f"{h.file} ({y.size} runs)",
                    f"{a.index} ({labels[a.index]})",
                    f"{a.change_index}",
                    f"{a.direction} {a.magnitude:+.1%}",
                    "-" if a.reverted_at is None else str(a.reverted_at),
                    f"{beyond} of {a.index - a.change_index + 1}",
                    f"{verdict}: {'right' if right else 'WRONG'}",
                ]
            )
    tgt = [
        (
            f"real histories ({total} alerts): every alert >= min_effect {min_effect:.0%}",
            f"{small} below",
            small == 0,
        ),
        ("real histories: no alert blames a lone outlier", f"{lone} blame one", lone == 0),
    ]
    return rows, tgt, wrong, total


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
