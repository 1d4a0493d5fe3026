"""Are the gate's p-values honest? The p-values of unchanged runs, against the uniform.

    python eval/calibration.py HISTORY.sqlite [...] [--plot docs/calibration.png] [--json OUT]

Every complete run of each history after its first is judged as `benchmark gate --run ID` judges
it (`benchmark.gate.judge.evaluate`, against the runs before it, with configs/gates.yaml), and the
p-value of every wall-time decision that has one is kept as the p-value of "slower" (the judge's
is one-sided in the direction of the change it saw: 1 - p for a change in the better direction).
The code
never changed in the histories given, so every such p-value is a draw under the null: they should
be close to uniform on [0, 1], and the share below 0.01 close to 1%. Printed: how many, the share
below 0.01 and 0.05, the Kolmogorov-Smirnov distance to the uniform with its p-value, and the same
per judging rule. `--plot` draws their histogram and a uniform QQ plot. Deterministic metrics
(instructions, cycles) have no p-value and are left out. Give only histories of unchanged code.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark.datamodel.metrics import get_metric  # noqa: E402
from benchmark.gate.judge import evaluate  # noqa: E402
from benchmark.gate.settings import load_gates  # noqa: E402
from benchmark.paths import GATES_PATH  # noqa: E402
from benchmark.store import open_store  # noqa: E402


def pvalues(path: Path, gates) -> list[tuple[float, str, str]]:
    """(p-value, judging rule, case) of every wall-time decision of every run after the first."""
    with sqlite3.connect(path) as c:
        runs = [r[0] for r in c.execute("select id from run where status = 'complete' order by id")]
    out = []
    with open_store(f"sqlite:///{path}", create=False) as store:
        for run in runs[1:]:
            for d in evaluate(store, run, gates):
                if d.series_metric == "time" and np.isfinite(d.p_value) and np.isfinite(d.effect):
                    # the judge's p-value is one-sided in the direction of the change it saw; as the
                    # p-value of "slower" (the test the gate fails on), it is 1 - p for a change
                    # in the better direction, and uniform on [0, 1] under the null
                    worse = d.effect < 0 if get_metric(d.metric).higher_is_better else d.effect > 0
                    p = float(d.p_value) if worse else 1.0 - float(d.p_value)
                    out.append((p, str(d.evidence_kind), f"{d.case_id} [{d.place} {d.mode}]"))
    return out


def summary(ps: np.ndarray) -> dict:
    ks = stats.kstest(ps, "uniform")
    return {
        "n": int(ps.size),
        "below_0.01": float(np.mean(ps < 0.01)) if ps.size else None,
        "below_0.05": float(np.mean(ps < 0.05)) if ps.size else None,
        "ks_distance": float(ks.statistic),
        "ks_p": float(ks.pvalue),
    }


def plot(ps: np.ndarray, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    left.hist(ps, bins=20, range=(0, 1), color="#4c72b0", edgecolor="white")
    left.axhline(ps.size / 20, color="black", lw=1, ls="--", label="uniform")
    left.set_xlabel("p-value of an unchanged run")
    left.set_ylabel("decisions")
    left.legend(frameon=False)
    q = np.sort(ps)
    expected = (np.arange(1, q.size + 1) - 0.5) / q.size
    right.plot(expected, q, ".", ms=3)
    right.plot([0, 1], [0, 1], color="black", lw=1, ls="--")
    right.set_xlabel("uniform quantile")
    right.set_ylabel("observed p-value")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("histories", nargs="+", type=Path, help="SQLite histories of unchanged code")
    p.add_argument("--gates", default=str(GATES_PATH), help="gate settings (configs/gates.yaml)")
    p.add_argument("--plot", type=Path, help="write a histogram and QQ plot here (PNG)")
    p.add_argument("--json", type=Path, help="write the figures here")
    args = p.parse_args(argv)
    gates = load_gates(args.gates)
    rows = [row for h in args.histories for row in pvalues(h, gates)]
    if not rows:
        p.error(
            "no wall-time decision with a p-value in these histories (each needs 2 or more complete runs)"
        )
    ps = np.array([r[0] for r in rows])
    doc = {"all": summary(ps), "by_rule": {}}
    for rule in sorted({r[1] for r in rows}):
        doc["by_rule"][rule] = summary(np.array([r[0] for r in rows if r[1] == rule]))
    for name, s in [("all", doc["all"]), *doc["by_rule"].items()]:
        print(f"{name:<18} n={s['n']:<5} p<0.01: {s['below_0.01']:.1%}  p<0.05: {s['below_0.05']:.1%}  "
              f"KS D={s['ks_distance']:.3f} (p={s['ks_p']:.2g})")  # fmt: skip
    if args.plot:
        plot(
            ps, args.plot, f"{ps.size} wall-time p-values of unchanged runs, {len(args.histories)} histories"
        )
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
