"""Workers pinned to one core against workers placed by the system, on real runs (issue 29: the
noise inside the worker): run-to-run spread, levels, the gate and wall time.

    python eval/pin_runs.py --out DIR [--pairs 6] [--hog-pairs 1] [--hogs 2] [-- PYTEST_ARGS...]

Runs of the default CPU suite (`pytest benchmark/ --bench-place cpu`), each in a fresh process,
alternated: pinned (`--bench-pin auto`) into DIR/pinned.sqlite, then unpinned (`--bench-pin off`)
into DIR/unpinned.sqlite, `--pairs` times; then `--hog-pairs` more pairs with `--hogs` busy Python
loops at normal priority beside the run (started before it, killed after it). After each run,
`benchmark gate --run latest` judges it against its own history, which starts empty.

Every run's figures are appended to DIR/runs.jsonl as it ends; `--summary-only` prints the
summary of what DIR holds: per time series, the run values' CV across the quiet runs and their
median, pinned and unpinned; the gate's failures; the wall times. A benchmark of the machine it
runs on, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_runs import HOG, _cv, _gate, _series, _suite  # noqa: E402

from benchmark.store import open_store  # noqa: E402

VARIANTS = {"pinned": "auto", "unpinned": "off"}


def _one_run(variant: str, db: str, env: dict[str, str], extra: list[str], hogs: int) -> dict:
    neighbours = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(hogs)]
    try:
        t0 = time.perf_counter()
        cmd = _suite(db, [*extra, "--bench-pin", VARIANTS[variant]])
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    finally:
        for n in neighbours:
            n.kill()
            n.wait()
    row = {"variant": variant, "hogs": hogs, "wall_s": wall, "suite_exit": proc.returncode}
    with open_store(db) as store:
        row["run"] = store.latest_run_id()
    row["gate"], row["fail"] = _gate(db, env)
    return row


def summary(out: Path) -> None:
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
    series = {}
    for variant in VARIANTS:
        quiet = [r["run"] for r in rows if r["variant"] == variant and not r["hogs"]]
        series[variant] = _series(f"sqlite:///{out / f'{variant}.sqlite'}", quiet)
    values_p, _, kinds = series["pinned"]
    values_u, _, _ = series["unpinned"]
    print("\n== quiet runs: run-to-run CV of run values, and their median ==")
    print(
        f"{'series':<52} {'kind':<8} {'CV pin':>7} {'CV off':>7} {'med pin':>10} {'med off':>10} {'pin/off':>7}"
    )
    by_kind: dict[str, list[tuple[float, float]]] = {}
    for key in sorted(set(values_p) & set(values_u)):
        p, u = np.asarray(values_p[key]), np.asarray(values_u[key])
        if len(p) < 3 or len(u) < 3:
            continue
        cp, cu = _cv(p), _cv(u)
        mp, mu = float(np.median(p)), float(np.median(u))
        by_kind.setdefault(kinds[key], []).append((cp, cu))
        print(
            f"{key[:52]:<52} {kinds[key]:<8} {cp:7.2%} {cu:7.2%} {mp * 1e6:8.1f}us {mu * 1e6:8.1f}us {mp / mu:7.3f}"
        )
    for kind, pairs in sorted(by_kind.items()):
        cp = [a for a, _ in pairs]
        cu = [b for _, b in pairs]
        print(
            f"{kind}: {len(pairs)} series; median CV pinned {statistics.median(cp):.2%}, unpinned "
            f"{statistics.median(cu):.2%}; <= 3%: pinned {sum(c <= 0.03 for c in cp)}, unpinned "
            f"{sum(c <= 0.03 for c in cu)}; lower pinned in {sum(a < b for a, b in pairs)}"
        )
    print("\n== each run: wall time and the gate (history from empty) ==")
    for r in rows:
        tag = f" +{r['hogs']} busy loop(s)" if r["hogs"] else ""
        print(f"{r['variant']:<8} run {r['run']:>3}{tag}: suite exit {r['suite_exit']}, {r['wall_s']:.1f} s; "
              f"gate exit {r['gate']} {r['fail'][:4]}")  # fmt: skip
    for variant in VARIANTS:
        quiet = [r for r in rows if r["variant"] == variant and not r["hogs"]]
        loud = [r for r in rows if r["variant"] == variant and r["hogs"]]
        walls = [r["wall_s"] for r in quiet]
        if walls:
            print(f"{variant}: gate failing in {sum(r['gate'] != 0 for r in quiet)} of {len(quiet)} quiet runs, "
                  f"{sum(r['gate'] != 0 for r in loud)} of {len(loud)} with neighbours; median wall "
                  f"{statistics.median(walls):.1f} s")  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--out", required=True, help="directory for pinned.sqlite, unpinned.sqlite and runs.jsonl"
    )
    ap.add_argument("--pairs", type=int, default=6, help="alternated quiet pairs of runs (default 6)")
    ap.add_argument(
        "--hog-pairs", type=int, default=1, help="pairs with busy neighbours at the end (default 1)"
    )
    ap.add_argument("--hogs", type=int, default=2, help="busy Python loops beside those runs (default 2)")
    ap.add_argument("--summary-only", action="store_true", help="print the summary of what --out holds")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments after --")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if not args.summary_only:
        out.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": str(ROOT)}
        plan = [(v, 0) for _ in range(args.pairs) for v in VARIANTS]
        plan += [(v, args.hogs) for _ in range(args.hog_pairs) for v in VARIANTS]
        with (out / "runs.jsonl").open("a", encoding="utf-8") as log:
            for k, (variant, hogs) in enumerate(plan, start=1):
                row = _one_run(variant, f"sqlite:///{out / f'{variant}.sqlite'}", env, args.pytest_args, hogs)
                log.write(json.dumps(row) + "\n")
                log.flush()
                tag = f" +{hogs} busy loop(s)" if hogs else ""
                print(f"[{k}/{len(plan)}] {variant}{tag} run {row['run']}: {row['wall_s']:.1f} s; "
                      f"gate {row['gate']} {row['fail'][:3]}", flush=True)  # fmt: skip
    summary(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
