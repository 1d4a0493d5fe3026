"""How often `benchmark compare` gives each verdict: N jobs of two environments that are identical
(--slowdown 0) or where one operator of side B is slower by a known fraction, injected in a way its
config does not show.

Both environments are venvs that see this interpreter's packages, paddle included (made by the
compare tests' helper, tests/compare_venvs.py); venv B gets a .pth hook that wraps `paddle.<op>`
once paddle is imported, so that each call
busy-waits for `slowdown` times the call's own duration after it. Each job is a real `benchmark
compare` subprocess (`--json`); the script prints, per case, how many jobs called it slower,
faster, same or inconclusive, and the wall time of the jobs.

    python eval/compare_verdicts.py --jobs 5 --slowdown 0    -k 'abs-1000x1000-fwd or matmul-fwd' --place cpu
    python eval/compare_verdicts.py --jobs 5 --slowdown 0.05 -k 'abs-1000x1000-fwd or matmul-fwd' --place cpu

Targets (issue 11): identical environments, at most 1 slower/faster verdict in all of 50 jobs;
a 5% slowdown of one operator named (and only it) in >= 90% of 20 jobs of <= 10 minutes each.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the compare tests' venv and .pth-hook helpers

from compare_venvs import make_venv, pth_hook  # noqa: E402

# paddle.{op} takes (1 + {fraction}) times as long: each call busy-waits after itself.
SLOWDOWN = """
def _patch(paddle):
    original = paddle.{op}

    def {op}(*args, **kwargs):
        t0 = time.perf_counter()
        out = original(*args, **kwargs)
        until = t0 + (time.perf_counter() - t0) * (1.0 + {fraction})
        while time.perf_counter() < until:
            pass
        return out

    paddle.{op} = {op}
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=5, help="number of compare jobs (default 5)")
    p.add_argument(
        "--slowdown", type=float, default=0.0, help="fraction by which B's op is slower (0: identical)"
    )
    p.add_argument("--op", default="abs", help="the paddle function slowed down in B (default abs)")
    p.add_argument(
        "-k", dest="keyword", default="abs-1000x1000-fwd", help="case selection, as for compare -k"
    )
    p.add_argument("--place", default="cpu", help="places, as for compare --place (default cpu)")
    p.add_argument(
        "--budget-min", type=float, default=10.0, help="budget of each job in minutes (default 10)"
    )
    p.add_argument("--quick", action="store_true", help="pass --quick to compare (short measure settings)")
    p.add_argument("--extra", default="", help="further compare arguments, one string (e.g. '--alpha 0.02')")
    p.add_argument("--workdir", default=None, help="where the venvs and job outputs go (default: a temp dir)")
    args = p.parse_args(argv)

    work = Path(args.workdir or tempfile.mkdtemp(prefix="compare-verdicts-"))
    work.mkdir(parents=True, exist_ok=True)
    python_a = make_venv(work / "venv-a")
    hook = pth_hook(SLOWDOWN.format(op=args.op, fraction=args.slowdown)) if args.slowdown else None
    python_b = make_venv(work / "venv-b", hook=hook)
    print(
        f"venvs in {work}; B: paddle.{args.op} slower by {args.slowdown:.1%}"
        if args.slowdown
        else f"venvs in {work}; identical environments"
    )
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    walls, exits, named_only = [], collections.Counter(), 0
    for j in range(args.jobs):
        out = work / f"job{j}.json"
        cmd = [
            sys.executable, "-m", "benchmark.cli", "compare", "--a", str(python_a), "--b", str(python_b),
            "-k", args.keyword, "--place", args.place, "--budget-min", str(args.budget_min),
            "--no-store", "--quiet", "--json", str(out), *(["--quick"] if args.quick else []), *args.extra.split(),
        ]  # fmt: skip
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        walls.append(time.monotonic() - t0)
        exits[proc.returncode] += 1
        if not out.exists():
            print(f"job {j}: exit {proc.returncode}, no JSON: {proc.stderr.strip()[-300:]}")
            continue
        doc = json.loads(out.read_text())
        slower = []
        for c in doc["cases"]:
            counts[c["case"]][c["verdict"]] += 1
            if c["verdict"] == "slower":
                slower.append(c["case_id"])
        if slower and all(s.startswith(f"{args.op}-") for s in slower):
            named_only += 1
        line = ", ".join(
            f"{c['case']}: {c['verdict']} {((c['ratio'] or float('nan')) - 1):+.1%} ({c['pairs']} pairs)"
            for c in doc["cases"]
        )
        print(
            f"job {j}: exit {proc.returncode} in {walls[-1]:.0f} s, {doc['steps']} steps; {line}", flush=True
        )
    print()
    print(
        f"{args.jobs} jobs, slowdown {args.slowdown:.1%} of paddle.{args.op}, budget {args.budget_min:g} min"
    )
    for case, c in sorted(counts.items()):
        print(f"  {case:<50} " + ", ".join(f"{v} {n}" for v, n in sorted(c.items())))
    false = sum(
        n for case, c in counts.items() for v, n in c.items()
        if v in ("slower", "faster") and not (args.slowdown and v == "slower" and case.startswith(f"{args.op}-"))
    )  # fmt: skip
    print(f"  false slower/faster verdicts: {false}")
    if args.slowdown:
        print(f"  jobs naming only {args.op} cases slower: {named_only} of {args.jobs}")
    print(
        f"  exit codes: {dict(exits)}; job wall time: median {sorted(walls)[len(walls) // 2]:.0f} s, max {max(walls):.0f} s"
    )
    print(textwrap.dedent(f"  outputs in {work}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
