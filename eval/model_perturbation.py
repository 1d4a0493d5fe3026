"""Does a numerical perturbation of one activation make the gate say `wrong` for the models that use
it, and for no other? (issue 48)

Runs the small model set (`--bench-tags model_ci`, CPU, quick settings) `--runs` times unchanged
into a fresh history, then once more with relu's output multiplied by 1 + 1e-3 in every process
(eval/perturb/sitecustomize.py on PYTHONPATH, BENCHMARK_PERTURB=relu), and judges the last
unchanged run and the perturbed run with `benchmark gate --format json`. A model "uses relu" where its
registry entry says so (`ModelEntry.uses`, benchmark/runners/models/). Prints one row per case and
exits 0 when the perturbed run is `wrong` exactly for the relu models and the unchanged run has no
`wrong` at all.

    python eval/model_perturbation.py --out results/perturbation [--runs 2] [--modes dynamic]
    python eval/model_perturbation.py --out results/slow-conv --perturb conv2d_slow --runs 1 --processes 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmark.runners.models.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[1]


def _suite(url: str, modes: str, perturb: str | None, log: Path, processes: int | None) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("BENCHMARK_PERTURB",)}
    if perturb:
        env["BENCHMARK_PERTURB"] = perturb
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT / "eval" / "perturb"), env.get("PYTHONPATH")])
        )
    cmd = [sys.executable, "-m", "pytest", "benchmark/", "--bench-tags", "model_ci", "--bench-place", "cpu"]
    cmd += ["--bench-modes", modes, "--bench-quick", "--bench-db", url, "-q"]
    if processes:
        cmd += ["--bench-processes", str(processes)]
    t0 = time.monotonic()
    with log.open("w") as out:
        subprocess.run(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, check=True)
    return time.monotonic() - t0


def _gate(url: str, baseline: int | None = None) -> dict[str, dict]:
    versus = ["--baseline", str(baseline)] if baseline else []
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmark.cli",
            "gate",
            "--db",
            url,
            "--run",
            "latest",
            "--format=json",
            *versus,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return {f"{d['case_id']} [{d['mode']}]": d for d in json.loads(proc.stdout)["decisions"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="a new directory for the history and the logs")
    p.add_argument("--runs", type=int, default=2, help="unchanged runs before the perturbed one (default 2)")
    p.add_argument("--modes", default="dynamic", help="modes to run, comma-separated (default dynamic)")
    p.add_argument(
        "--perturb",
        choices=("relu", "conv2d_slow"),
        default="relu",
        help="relu: its output times 1 + 1e-3, expected `wrong` for the relu models; conv2d_slow: 1 ms "
        "more per Conv2D forward, judged as an A/B against the last unchanged run, expected "
        "`regression` for the convolution models (default relu)",
    )
    p.add_argument("--processes", type=int, help="worker processes per case (--bench-processes)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=False)
    url = f"sqlite:///{(args.out / 'history.sqlite').resolve()}"
    for i in range(args.runs):
        took = _suite(url, args.modes, None, args.out / f"unchanged{i + 1}.log", args.processes)
        print(f"unchanged run {i + 1}: {took:.0f} s")
    unchanged = _gate(url)
    took = _suite(url, args.modes, args.perturb, args.out / "perturbed.log", args.processes)
    print(f"perturbed run ({args.perturb}): {took:.0f} s")
    slow = args.perturb == "conv2d_slow"
    perturbed = _gate(url, baseline=args.runs if slow else None)
    expected, uses = ("regression", "conv2d") if slow else ("wrong", "relu")
    ok = True
    print(f"{'case':40s} {uses:7s} {'unchanged':12s} {'perturbed':12s} effect")
    for key, d in sorted(perturbed.items()):
        entry = REGISTRY.get(d["name"])
        hit = entry is not None and uses in entry.uses
        before = unchanged.get(key, {}).get("verdict", "-")
        good = (d["verdict"] == expected) == hit and before not in ("wrong", "regression")
        ok &= good
        effect = f"{d['effect']:+.0%}" if d.get("effect") is not None and d["effect"] == d["effect"] else ""
        flag = "" if good else "UNEXPECTED"
        print(f"{key:40s} {'yes' if hit else 'no':7s} {before:12s} {d['verdict']:12s} {effect:7s} {flag}")
    print("as expected" if ok else "NOT as expected")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
