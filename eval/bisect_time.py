"""Does `benchmark bisect --metric time` name the build that made a case 10% slower?

    python eval/bisect_time.py --runs 10 --builds 5 --step 3 --slowdown 0.10 --budget-min 3 --json out.json

A range of --builds environments that share this interpreter's paddle; from build --step on, a .pth
hook makes every `paddle.abs` call --slowdown slower than itself (it spins for that fraction of the
call's own duration after it returns), work that no config shows. The case is abs on a float32
tensor (--shape, 100x100 by default, as in the bisect tests), forward, dynamic mode, on CPU. Each
run is one `benchmark bisect --metric time` over the range, from scratch; the script reports, per
run, the build named, the builds timed, the inconclusive comparisons and the wall time.

Question (issue 28): with a 10% slowdown, does `--metric time` name the right build in at least 9
of 10 runs, each within 15 minutes? Answer (this machine, the figures): docs/bisect.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from compare_venvs import make_venv, slowdown_hook  # noqa: E402

CONFIG = """cases:
  - name: bisect_time_abs
    kind: op
    op: paddle.abs
    inputs:
      x: {shape: [SHAPE]}
    places: [cpu]
    modes: [dynamic]
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--builds", type=int, default=5)
    p.add_argument("--step", type=int, default=3, help="the first slow build (0-based)")
    p.add_argument("--slowdown", type=float, default=0.10)
    p.add_argument("--budget-min", default="3", help="benchmark bisect --budget-min: per build timed")
    p.add_argument("--shape", default="100,100", help="the input's shape, comma-separated")
    p.add_argument("--json", required=True)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bisect-time-"))
    config = work / "case.yaml"
    config.write_text(CONFIG.replace("SHAPE", ", ".join(args.shape.split(","))))
    hook = slowdown_hook(args.slowdown)
    pythons = [
        str(make_venv(work / f"b{i}", hook=hook if i >= args.step else None)) for i in range(args.builds)
    ]
    runs = []
    for r in range(args.runs):
        out = work / f"run{r}.json"
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "benchmark.cli", "bisect", str(config), "--metric", "time",
             "--budget-min", args.budget_min, "--json", str(out), "--no-store",
             *(a for py in pythons for a in ("--python", py))],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        seconds = time.monotonic() - started
        doc = json.loads(out.read_text()) if out.exists() else {}
        (case,) = doc.get("cases", {"": {}}).values()
        row = {
            "run": r,
            "exit": proc.returncode,
            "status": case.get("status"),
            "first_bad": case.get("first_bad"),
            "right": case.get("status") == "step"
            and case.get("first_bad") == args.step
            and case.get("last_good") == args.step - 1,
            "timed": doc.get("measured_order"),
            "effect": case.get("effect"),
            "seconds": round(seconds, 1),
        }
        row["inconclusive"] = [line for line in proc.stderr.splitlines() if "inconclusive" in line]
        if proc.returncode not in (0, 1):
            row["stderr"] = proc.stderr[-2000:]
        runs.append(row)
        print(json.dumps(row), flush=True)
        Path(args.json).write_text(json.dumps({"args": vars(args), "runs": runs}, indent=1))
    right = sum(r["right"] for r in runs)
    print(f"right build named in {right} of {len(runs)} runs; wall time per run "
          f"{min(r['seconds'] for r in runs):.0f}-{max(r['seconds'] for r in runs):.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
