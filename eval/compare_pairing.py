"""Simultaneous pairs against back-to-back pairs for `benchmark compare` (issue 29, part 2), in one
sitting: the same cases, the two pairings alternated job by job.

    python eval/compare_pairing.py --rounds 3 --budget-min 3 -k 'abs-1000x1000-fwd or ...' [--slowdown 0.03]

Each round runs two real `benchmark compare` jobs (`--json`) per pairing, in a random order: identical
environments (A/A) and environments where B's `paddle.<op>` is slower by `--slowdown` (the .pth
hook of eval/compare_verdicts.py; `--kinds A/A` runs only the first), each with `--pairing back-to-back` and with `--pairing
simultaneous` (or the modes named by `--pairings`, which also has back-to-back-pinned: both
sides' workers on one claimed core, `--pin auto`). The venvs see this interpreter's packages (tests/compare_venvs.py).

It prints, per pairing: per case, the spread of the pairs' log ratios log(B/A) over all A/A jobs
(their standard deviation; the noise a pair carries), the A/A jobs' slower/faster verdicts (each
one false), how many slowdown jobs named the slowed op's cases alone as slower, and the jobs' wall
time. Every job's figures are appended to WORKDIR/jobs.jsonl as it ends, with its budget, the
harness commit and when it ended, so one WORKDIR can gather the jobs of several sittings
(`--summary-only` prints them all). With `--probe` the jobs time the reference probe around every
trial (`compare --probe`), and the summary says how the A/A pairs' log ratios follow their probes'
log ratio, and what adjusting each pair by it does to their spread. A benchmark on the machine it
runs on, not a test.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scipy.stats import theilslopes

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the compare tests' venv and .pth-hook helpers
sys.path.insert(0, str(ROOT / "eval"))

from compare_venvs import make_venv, pth_hook  # noqa: E402
from compare_verdicts import SLOWDOWN  # noqa: E402

# What each mode passes to `benchmark compare`: back-to-back pairs unpinned (the default, --pin off),
# back-to-back pairs on one claimed core (--pin auto), simultaneous pairs.
MODES = {
    "back-to-back": ["--pairing", "back-to-back", "--pin", "off"],
    "back-to-back-pinned": ["--pairing", "back-to-back", "--pin", "auto"],
    "simultaneous": ["--pairing", "simultaneous"],
}
PAIRINGS = ("back-to-back", "simultaneous")  # the default modes
KINDS = ("A/A", "slowdown")  # identical environments; B's op slowed by --slowdown


def _job(python_a: Path, python_b: Path, pairing: str, args, out: Path) -> dict:
    cmd = [
        sys.executable, "-m", "benchmark.cli", "compare", "--a", str(python_a), "--b", str(python_b),
        "-k", args.keyword, "--place", "cpu", "--budget-min", str(args.budget_min), *MODES[pairing],
        "--no-store", "--quiet", "--json", str(out), *(["--probe"] if args.probe else []),
    ]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if not out.exists():
        return {"exit": proc.returncode, "wall_s": wall, "error": proc.stderr.strip()[-300:]}
    doc = json.loads(out.read_text())
    cases = {}
    for c in doc["cases"]:
        a, b = c["values"]["A"], c["values"]["B"]
        logs = [math.log(y / x) for x, y in zip(a, b, strict=False) if x and y]
        cases[c["case"]] = {"verdict": c["verdict"], "ratio": c["ratio"], "pairs": c["pairs"], "logs": logs}
        if args.probe:  # each pair's log ratio beside its probes' log ratio, where all four were timed
            pa, pb = c["probes"]["A"], c["probes"]["B"]
            both = [(math.log(y / x), math.log(q / p)) for x, y, p, q in zip(a, b, pa, pb, strict=False)
                    if x and y and p and q]  # fmt: skip
            cases[c["case"]]["probe_pairs"] = both
    return {"exit": proc.returncode, "wall_s": wall, "steps": doc["steps"], "cases": cases}


def summary(rows: list[dict], op: str) -> None:
    modes = [m for m in MODES if any(r["pairing"] == m for r in rows)]
    for pairing in modes:
        aa = [r for r in rows if r["pairing"] == pairing and r["kind"] == "A/A" and "cases" in r]
        slow = [r for r in rows if r["pairing"] == pairing and r["kind"] == "slowdown" and "cases" in r]
        print(f"\n== {pairing}: {len(aa)} A/A jobs, {len(slow)} slowdown jobs ==")
        logs: dict[str, list[float]] = collections.defaultdict(list)
        false = 0
        for r in aa:
            for case, c in r["cases"].items():
                logs[case] += c["logs"]
                false += c["verdict"] in ("slower", "faster")
        for case in sorted(logs):
            x = logs[case]
            sd = statistics.stdev(x) if len(x) > 1 else float("nan")
            print(f"  {case:<50} A/A pairs {len(x):4d}, log-ratio sd {sd:.2%}")
        named = sum(
            1
            for r in slow
            if (s := {k for k, c in r["cases"].items() if c["verdict"] == "slower"})
            and all(k.startswith(f"{op}-") for k in s)
            and not any(c["verdict"] == "faster" for c in r["cases"].values())
        )
        walls = [r["wall_s"] for r in aa + slow]
        print(f"  A/A slower/faster verdicts: {false} in {len(aa)} jobs")
        if slow:
            print(f"  slowdown named alone: {named} of {len(slow)} jobs")
        if walls:
            print(f"  job wall time: median {statistics.median(walls):.0f} s, max {max(walls):.0f} s")
    probe_summary(rows, modes)
    spreads = {}
    for pairing in modes:
        logs = collections.defaultdict(list)
        for r in rows:
            if r["pairing"] == pairing and r["kind"] == "A/A" and "cases" in r:
                for case, c in r["cases"].items():
                    logs[case] += c["logs"]
        spreads[pairing] = {k: statistics.stdev(v) for k, v in logs.items() if len(v) > 1}
    for first, second in [(a, b) for i, a in enumerate(modes) for b in modes[i + 1 :]]:
        common = sorted(set(spreads[first]) & set(spreads[second]))
        if not common:
            continue
        print(f"\n== {second} / {first} log-ratio spread, per case ==")
        for case in common:
            print(f"  {case:<50} {spreads[second][case] / spreads[first][case]:.2f}")
        halved = sum(spreads[second][c] <= 0.5 * spreads[first][c] for c in common)
        doubled = sum(spreads[first][c] <= 0.5 * spreads[second][c] for c in common)
        print(f"  {second} at most half: {halved} of {len(common)} cases; {first} at most half: {doubled}")


def _slope(pairs: list[tuple[float, float]]) -> float:
    """The least-squares slope of a pair's log ratio on its probes' log ratio (0 without spread)."""
    ps = [p for _, p in pairs]
    mp, md = statistics.fmean(ps), statistics.fmean(d for d, _ in pairs)
    sxx = sum((p - mp) ** 2 for p in ps)
    return sum((p - mp) * (d - md) for d, p in pairs) / sxx if sxx > 0 else 0.0


def probe_summary(rows: list[dict], modes: list[str]) -> None:
    """Per pairing and case, over the A/A jobs run with --probe: how a pair's log ratio follows its
    probes' log ratio (correlation, slope), and the pairs' spread raw and adjusted, d - slope * p,
    with the least-squares slope fitted on the other jobs' pairs (so no job adjusts itself); and
    the bulk adjusted by the robust (Theil-Sen) slope of all the pairs."""
    for pairing in modes:
        jobs = [r for r in rows if r["pairing"] == pairing and r["kind"] == "A/A" and "cases" in r]
        by_case: dict[str, list[list[tuple[float, float]]]] = collections.defaultdict(list)
        for r in jobs:
            for case, c in r["cases"].items():
                if c.get("probe_pairs"):
                    by_case[case].append(c["probe_pairs"])
        if not by_case:
            continue
        print(f"\n== {pairing}: A/A pairs against their probes (jobs run with --probe) ==")
        for case in sorted(by_case):
            per_job = by_case[case]
            pooled = [x for j in per_job for x in j]
            if len(per_job) < 2 or len(pooled) < 3:
                continue
            d, p = [x for x, _ in pooled], [y for _, y in pooled]
            r = statistics.correlation(d, p) if statistics.stdev(p) > 0 else float("nan")
            held = [
                x - _slope([q for k, other in enumerate(per_job) if k != i for q in other]) * y
                for i, j in enumerate(per_job)
                for x, y in j
            ]
            robust = float(theilslopes(d, p).slope)  # a slope the outlying pairs do not set
            print(
                f"  {case:<50} {len(pooled):4d} pairs in {len(per_job)} jobs: r {r:+.2f}, slope "
                f"{_slope(pooled):+.2f}; sd raw {statistics.stdev(d):.2%}, adjusted (held out) "
                f"{statistics.stdev(held):.2%}; bulk (1.4826 MAD) raw {_mad(d):.2%}, adjusted {_mad(held):.2%}; "
                f"Theil-Sen slope {robust:+.2f}, bulk adjusted by it {_mad([x - robust * y for x, y in pooled]):.2%}; "
                f"the probes' log ratios: bulk {_mad(p):.2%}"
            )


def _mad(x: list[float]) -> float:
    m = statistics.median(x)
    return 1.4826 * statistics.median(abs(v - m) for v in x)


def _choose(p: argparse.ArgumentParser, flag: str, value: str, allowed) -> list[str]:
    """The comma-separated names of `value`, each one of `allowed`, or `flag`'s usage error."""
    chosen = [x.strip() for x in value.split(",") if x.strip()]
    if not chosen or set(chosen) - set(allowed):
        p.error(f"{flag} {value!r}: expected some of {', '.join(allowed)}")
    return chosen


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--rounds", type=int, default=3, help="rounds of one job of each kind per pairing (default 3)"
    )
    p.add_argument("--slowdown", type=float, default=0.03, help="how much slower B's op is (default 0.03)")
    p.add_argument("--op", default="abs", help="the paddle function slowed in B (default abs)")
    p.add_argument("-k", dest="keyword", required=True, help="case selection, as for compare -k")
    p.add_argument("--budget-min", type=float, default=3.0, help="budget of each job, minutes (default 3)")
    p.add_argument(
        "--pairings",
        default=",".join(PAIRINGS),
        help=f"comma-separated modes to run, of {', '.join(MODES)} (default {','.join(PAIRINGS)})",
    )
    p.add_argument(
        "--kinds",
        default="A/A,slowdown",
        help="which jobs each round runs per pairing: A/A, slowdown or both (default A/A,slowdown)",
    )
    p.add_argument(
        "--probe",
        action="store_true",
        help="run the jobs with compare --probe and report how the pairs follow their probes",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the job order")
    p.add_argument("--workdir", default=None, help="venvs, job outputs and jobs.jsonl (default: a temp dir)")
    p.add_argument("--summary-only", action="store_true", help="print the summary of WORKDIR/jobs.jsonl")
    args = p.parse_args(argv)
    pairings = _choose(p, "--pairings", args.pairings, MODES)
    kinds = _choose(p, "--kinds", args.kinds, KINDS)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="compare-pairing-"))
    work.mkdir(parents=True, exist_ok=True)
    log = work / "jobs.jsonl"
    if not args.summary_only:
        python_a = make_venv(work / "venv-a")
        python_b = make_venv(
            work / "venv-b", hook=pth_hook(SLOWDOWN.format(op=args.op, fraction=args.slowdown))
        )
        rng = random.Random(args.seed)
        # a WORKDIR may gather the jobs of several sittings: each row says when, with which harness
        # commit and budget it ran, and job files are numbered on
        n = len(log.read_text().splitlines()) if log.exists() else 0
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()
        for r in range(args.rounds):
            plan = [(kind, pairing) for kind in kinds for pairing in pairings]
            rng.shuffle(plan)
            for kind, pairing in plan:
                n += 1
                b = python_a if kind == "A/A" else python_b
                row = _job(python_a, b, pairing, args, work / f"job{n}.json")
                row.update(round=r, kind=kind, pairing=pairing, budget_min=args.budget_min, commit=commit, probe=args.probe,
                           ended=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))  # fmt: skip
                with log.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
                verdicts = ", ".join(f"{k}: {c['verdict']}" for k, c in (row.get("cases") or {}).items())
                print(f"job {n} ({kind}, {pairing}): exit {row['exit']} in {row['wall_s']:.0f} s; {verdicts}",
                      flush=True)  # fmt: skip
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    summary(rows, args.op)
    print(f"\noutputs in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
