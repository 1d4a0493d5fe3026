"""Spread and cost of instruction counts (issue 12): repeated instruction passes over CPU cases.

    python eval/instructions_spread.py [--runs 10] [--jobs 2] [--cases SUBSTR ...] [--out FILE]

Each run is one instruction pass as `pytest benchmark/ --bench-instructions` makes it: `--workers`
fresh worker processes under callgrind, each case counted in a child forked from one of them,
models first (default: the default suite's CPU cases: configs/, not tagged slow). Per case it reports the instructions per
iteration of every run and their spread, (max - min) / median, against the targets (at most 0.1%
for op and program cases, 0.5% for model cases), the largest spread per kind, and the cost: the
worker's startup (paddle import under valgrind) and each case's wall and CPU seconds, per run and
in total. `--jobs` runs passes side by side (counts do not depend on it; wall times do, and on a
shared machine they are inflated anyway: CPU seconds are the better guide).

The JSON written to `--out` (default: the system temp dir) holds every count; it is what
eval/instructions_sensitivity.py replays as a history.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark.config import load_paths  # noqa: E402
from benchmark.execution import measure  # noqa: E402
from benchmark.instructions import callgrind as instructions  # noqa: E402
from benchmark.instructions import counting_pass as instruction_pass  # noqa: E402

TARGETS = {"op": 0.001, "program": 0.001, "model": 0.005}


def default_cases(paths: list[str], wanted: list[str] | None):
    cases, issues = load_paths(paths)
    if issues:
        raise SystemExit("\n".join(str(i) for i in issues))
    cases = [c for c in cases if instructions.eligible(c) and "slow" not in c.tags]
    if wanted:
        cases = [c for c in cases if any(w in c.id for w in wanted)]
    return cases


def one_pass(
    tooling, cases, index: int, timeout_s: float, workers: int, keep_dumps: str | None = None
) -> dict:
    """One instruction pass as the suite makes it: `workers` callgrind workers, each case in a child
    forked from one of them (`InstructionPass.start`)."""
    keep = os.path.join(keep_dumps, f"run{index}") if keep_dumps else None
    counter = instruction_pass.InstructionPass(tooling, timeout_s=timeout_s, keep_dumps=keep, jobs=workers)
    t0 = time.perf_counter()
    out = {"run": index, "cases": {}, "workers": workers}
    try:
        futures = counter.start(cases)
        by_future = {f: c for c in cases for cid, f in futures.items() if cid == c.id}
        for future in as_completed(by_future):
            r = future.result()
            case = by_future[future]
            counted = r.callgrind or {}  # the count's record (worker time, heap layout, ...)
            out["cases"][case.id] = {
                "kind": case.kind,
                "status": r.status,
                "message": r.message,
                "count": r.stats.median if r.status == "ok" else None,
                "samples": r.samples,
                "iterations": r.iterations,
                "case_s": counted.get("case_s"),
                "case_cpu_s": counted.get("case_cpu_s"),
                "instrumented_s": counted.get("instrumented_s"),
                "warmup_iterations": counted.get("warmup_iterations"),
                "heap_layout": counted.get("heap_layout"),
                "done_s": time.perf_counter() - t0,
            }
            # every figure on the progress line, so an interrupted run still has them
            print(
                f"run {index}: {case.id}: {r.status} {out['cases'][case.id]['count']} "
                f"({counted.get('case_s') or 0:.1f} s, {counted.get('case_cpu_s') or 0:.1f} s CPU, "
                f"samples {r.samples}; {time.perf_counter() - t0:.0f} s into the pass)",
                file=sys.stderr,
                flush=True,
            )
        out["startup_cpu_s"] = [
            (slot.worker.ready or {}).get("cpu_s") for slot in counter._slots if slot.worker is not None
        ]
    finally:
        counter.close()
    out["wall_s"] = time.perf_counter() - t0
    return out


def summarize(cases, runs: list[dict]) -> dict:
    per_case = {}
    for case in cases:
        counts = [r["cases"][case.id]["count"] for r in runs if r["cases"].get(case.id, {}).get("count")]
        wall = [r["cases"][case.id]["case_s"] for r in runs if r["cases"].get(case.id, {}).get("case_s")]
        cpu = [
            r["cases"][case.id]["case_cpu_s"] for r in runs if r["cases"].get(case.id, {}).get("case_cpu_s")
        ]
        errors = [
            r["cases"][case.id]["message"] for r in runs if r["cases"].get(case.id, {}).get("status") != "ok"
        ]
        per_case[case.id] = {
            "kind": case.kind,
            "runs": len(counts),
            "counts": counts,
            "median": statistics.median(counts) if counts else None,
            "spread": instructions.spread(counts) if len(counts) >= 2 else None,
            "target": TARGETS[case.kind],
            "wall_s": statistics.median(wall) if wall else None,
            "cpu_s": statistics.median(cpu) if cpu else None,
            "errors": errors,
        }
    largest = {}
    for kind in TARGETS:
        rows = [
            (v["spread"], k) for k, v in per_case.items() if v["kind"] == kind and v["spread"] is not None
        ]
        if rows:
            s, k = max(rows)
            largest[kind] = {"case": k, "spread": s, "target": TARGETS[kind], "met": s <= TARGETS[kind]}
    startup = [sum(x or 0 for x in r.get("startup_cpu_s") or []) for r in runs]
    return {
        "cases": per_case,
        "largest_spread_per_kind": largest,
        "pass_wall_s": [r["wall_s"] for r in runs],
        "startup_cpu_s": startup,
        "pass_cpu_s": [
            sum(x or 0 for x in r.get("startup_cpu_s") or [])
            + sum(c["case_cpu_s"] or 0 for c in r["cases"].values())
            for r in runs
        ],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=10, help="instruction passes (default 10)")
    p.add_argument("--jobs", type=int, default=1, help="passes run side by side (default 1)")
    p.add_argument(
        "--workers",
        type=int,
        default=instruction_pass.default_jobs(),
        help=f"callgrind workers counting at once within a pass, as --bench-instruction-jobs "
        f"(default {instruction_pass.default_jobs()})",
    )
    p.add_argument("--config", action="append", default=None, help="config paths (default configs/)")
    p.add_argument("--cases", nargs="*", default=None, help="only cases whose id contains one of these")
    p.add_argument("--kinds", default="op,program,model", help="case kinds to run (default op,program,model)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds a worker may take for one case")
    p.add_argument(
        "--out",
        default=os.path.join(tempfile.gettempdir(), "instructions_spread.json"),
        help="JSON file every count is written to (default: instructions_spread.json in the temp dir)",
    )
    p.add_argument(
        "--keep-dumps",
        default=None,
        help="keep callgrind's dump files under DIR/runN/ (one per chunk and thread) to compare runs "
        "function by function with callgrind_annotate (the longer request shifts the worker's heap: small "
        "cases then count a little differently from runs without it)",
    )
    args = p.parse_args(argv)
    measure.pin_threads(1)
    measure.control_allocator(True)
    cases = default_cases(args.config or [str(ROOT / "configs")], args.cases)
    cases = [c for c in cases if c.kind in args.kinds.split(",")]
    tooling = instructions.find_tooling()
    print(
        f"{len(cases)} CPU case(s), {args.runs} run(s), {args.jobs} at a time, {args.workers} worker(s) a run",
        file=sys.stderr,
    )
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        runs = list(
            pool.map(
                lambda i: one_pass(tooling, cases, i, args.timeout, args.workers, args.keep_dumps),
                range(args.runs),
            )
        )
    report = summarize(cases, runs)
    report.update(
        runs=runs,
        total_wall_s=time.perf_counter() - t0,
        jobs=args.jobs,
        valgrind=tooling.version,
        case_order=[c.id for c in cases],
    )
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(
        f"{'case':<62} {'kind':<8} {'n':>3} {'instructions/iter':>18} {'spread':>9} {'wall s':>7} {'cpu s':>6}"
    )
    for cid, v in report["cases"].items():
        sp = f"{v['spread']:.4%}" if v["spread"] is not None else "-"
        med = f"{v['median']:,.0f}" if v["median"] else "ERROR"
        print(
            f"{cid:<62} {v['kind']:<8} {v['runs']:>3} {med:>18} {sp:>9} "
            f"{v['wall_s'] or 0:>7.1f} {v['cpu_s'] or 0:>6.1f}"
        )
    for kind, v in report["largest_spread_per_kind"].items():
        verdict = "meets" if v["met"] else "MISSES"
        print(f"largest spread, {kind}: {v['spread']:.4%} ({v['case']}), target {v['target']:.1%}: {verdict}")
    walls = report["pass_wall_s"]
    print(
        f"one pass over {len(cases)} cases: wall {statistics.median(walls):.0f} s (median of {len(walls)}; "
        f"{args.jobs} pass(es) side by side, {args.workers} worker(s) each, on a shared machine), CPU "
        f"{statistics.median(report['pass_cpu_s']):.0f} s (worker startups "
        f"{statistics.median(report['startup_cpu_s'] or [0]):.0f} s of it)"
    )
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
