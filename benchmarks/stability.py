"""Run-to-run stability of the suite vs plain pytest-benchmark defaults, and per-iteration overhead.

    python benchmarks/stability.py [--runs 5]

Each repetition runs, back to back in fresh processes: (a) `pytest benchmark/` on `abs` 1000x1000
forward and the `elementwise_mul` [50,128,1000] x [1,128,1000] forward case, (b) the same two ops
through plain pytest-benchmark defaults (`benchmark(fn, *args)`, no thread or allocator control).
It prints the coefficient of variation of each case's median across repetitions, and the
per-iteration time of a no-op callable through both measurement paths. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SELECT = "abs-1000x1000-fwd-cpu-dynamic or elementwise_mul-x_50x128x1000-y_1x128x1000-fwd-cpu-dynamic"

PLAIN = textwrap.dedent(
    """
    import numpy as np
    import paddle

    rng = np.random.default_rng(2024)
    X = paddle.to_tensor(rng.uniform(-1, 1, (1000, 1000)).astype("float32"))
    A = paddle.to_tensor(rng.uniform(-1, 1, (50, 128, 1000)).astype("float32"))
    B = paddle.to_tensor(rng.uniform(-1, 1, (1, 128, 1000)).astype("float32"))

    def test_abs(benchmark):
        benchmark(paddle.abs, X)

    def test_mul(benchmark):
        benchmark(paddle.multiply, A, B)
    """
)

NOOP = textwrap.dedent(
    """
    from benchmark.execution import measure
    from benchmark.runners.base import Prepared

    def noop():
        return None

    def test_plain_noop(benchmark):
        benchmark(noop)

    def test_harness_noop(benchmark):
        measure.measure(benchmark, Prepared(step=noop), "cpu", measure.MeasureSettings())
    """
)


def pytest_json(args: list[str], out: Path, cwd: Path, env: dict[str, str]) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return json.loads(out.read_text())


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    (tmp / "test_plain.py").write_text(PLAIN)
    (tmp / "test_noop.py").write_text(NOOP)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    clean_env = {k: v for k, v in env.items() if not k.startswith(("MALLOC_", "OMP_", "MKL_"))}
    ours: dict[str, list[float]] = {}
    ours_q1: dict[str, list[float]] = {}
    ours_min: dict[str, list[float]] = {}
    plain: dict[str, list[float]] = {}
    for i in range(args.runs):
        doc = pytest_json(
            ["benchmark/", "-k", SELECT, "--bench-no-store", "--bench-json", str(tmp / "ours.json")],
            tmp / "ours.json",
            ROOT,
            env,
        )
        for r in doc["results"]:
            ours.setdefault(r["case_id"], []).append(r["stats"]["median"])
            ours_q1.setdefault(r["case_id"], []).append(r["stats"]["q1"])
            ours_min.setdefault(r["case_id"], []).append(r["stats"]["min"])
        doc = pytest_json(
            [str(tmp / "test_plain.py"), "--benchmark-json", str(tmp / "plain.json")],
            tmp / "plain.json",
            tmp,
            clean_env,
        )
        for b in doc["benchmarks"]:
            plain.setdefault(b["name"], []).append(b["stats"]["median"])
        print(f"repetition {i + 1}/{args.runs} done", file=sys.stderr)
    print(f"run-to-run CV of the median over {args.runs} fresh runs")
    print(f"{'case':<56} {'harness':>10} {'plain pytest-benchmark':>24}")
    for (case, values), (_, pvalues) in zip(sorted(ours.items()), sorted(plain.items()), strict=True):
        med = statistics.median(values) * 1e6
        pmed = statistics.median(pvalues) * 1e6
        print(f"{case:<56} {cv(values):>9.2%} {cv(pvalues):>12.2%}   (medians {med:.1f} us vs {pmed:.1f} us)")
        print(
            f"{'   same runs, CV of the first quartile / of the minimum':<56} {cv(ours_q1[case]):>9.2%} "
            f"{cv(ours_min[case]):>12.2%}"
        )
    doc = pytest_json(
        [str(tmp / "test_noop.py"), "--benchmark-json", str(tmp / "noop.json")], tmp / "noop.json", ROOT, env
    )
    for b in doc["benchmarks"]:
        print(
            f"no-op per iteration, {b['name']:<18}: {b['stats']['median'] * 1e9:.1f} ns "
            f"(rounds {b['stats']['rounds']}, iterations {b['stats']['iterations']})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
