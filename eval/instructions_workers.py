"""Does a case's instruction count depend on the worker that counted it? (issue 12, a diagnostic)

    python eval/instructions_workers.py --workers 8 [--jobs 2] [--case feed_abs_fetch-100x100-cpu-static ...]

Starts `--workers` fresh callgrind workers (as `pytest --bench-instructions` does, `--jobs` at a
time), counts each `--case` once in every one of them, and prints per worker its counts and a
fingerprint of its Python heap (`sys._debugmallocstats()`: blocks in use per size class) taken at
four points of its startup: Python started, numpy imported, paddle imported, just before it forks
the children that count. Workers with equal fingerprints should count alike; a case whose counts
group by the last fingerprints depends on the worker's startup, not on the case.

Found with it (static 100x100 programs, whose counts took one of two values per worker): the
fingerprints were equal after numpy's import and differed after paddle's, by a few small blocks.
One cause that gives this pattern: the import system keeps a listing of every directory on the
worker's sys.path, so a file added to one (its working directory, a PYTHONPATH entry) shifts the
heap (README, "Instruction counts"). Run as a worker (`--as-worker DIR ...`) it is the worker
entry point that writes those fingerprints to DIR; as the suite's workers, it then imports the
harness as installed where it is (PYTHONSAFEPATH=1 keeps its own directory off sys.path).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The parent may run from a checkout; a worker imports the harness as installed (a checkout on its
# sys.path would be listed, and shift its heap), and the checkout only where none is installed.
if sys.argv[1:2] != ["--as-worker"] or importlib.util.find_spec("benchmark") is None:
    sys.path.insert(0, str(ROOT))

STAGES = ("python", "numpy", "paddle", "fork")


def _fingerprint(out_dir: str, stage: str) -> None:
    """sys._debugmallocstats() (it writes to fd 2) of this process into OUT_DIR/PID.STAGE."""
    path = os.path.join(out_dir, f"{os.getpid()}.{stage}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    saved = os.dup(2)
    try:
        os.dup2(fd, 2)
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def as_worker(out_dir: str) -> int:
    _fingerprint(out_dir, "python")
    import numpy  # noqa: F401

    _fingerprint(out_dir, "numpy")
    from benchmark.runners import paddle_common, worker

    paddle_common.paddle()
    _fingerprint(out_dir, "paddle")

    serve_forked = worker.serve_forked

    def fingerprinted(*args, **kwargs):
        _fingerprint(out_dir, "fork")
        return serve_forked(*args, **kwargs)

    worker.serve_forked = fingerprinted
    return worker.main()


def heap_digest(path: Path) -> str:
    """The blocks-in-use table of a sys._debugmallocstats() dump, as a short digest."""
    rows = [line for line in path.read_text().splitlines() if line[:6].strip().isdigit()]
    return hashlib.sha1("\n".join(rows).encode()).hexdigest()[:8]


def one_worker(tooling, cases, index: int, out_dir: str) -> dict:
    from benchmark.instructions import counting_pass as instruction_pass

    counter = instruction_pass.InstructionPass(tooling, entry=(__file__, "--as-worker", out_dir))
    try:
        counts = {}
        for case in cases:
            r = counter.measure(case)
            counts[case.id] = r.stats.median if r.status == "ok" else f"{r.status}: {r.message}"
        pid = (counter.worker.ready or {}).get("pid") if counter.worker else None
    finally:
        counter.close()
    digests = {}
    for stage in STAGES:
        path = Path(out_dir) / f"{pid}.{stage}"
        digests[stage] = heap_digest(path) if path.exists() else "-"
    return {"worker": index, "pid": pid, "counts": counts, "heap": digests}


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--as-worker":
        out_dir = sys.argv[2]
        del sys.argv[1:3]
        return as_worker(out_dir)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=6, help="fresh workers to start (default 6)")
    p.add_argument("--jobs", type=int, default=2, help="workers running at once (default 2)")
    p.add_argument(
        "--case",
        action="append",
        help="case id to count in every worker (repeatable; default the two static 100x100 programs)",
    )
    p.add_argument("--config", default=str(ROOT / "configs"), help="config path (default configs/)")
    args = p.parse_args()

    from benchmark.config import load_paths
    from benchmark.instructions import callgrind as instructions

    wanted = args.case or ["feed_abs_fetch-100x100-cpu-static", "feed_fetch_empty-100x100-cpu-static"]
    cases, issues = load_paths([args.config])
    if issues:
        raise SystemExit("\n".join(str(i) for i in issues))
    cases = [c for c in cases if c.id in wanted]
    missing = sorted(set(wanted) - {c.id for c in cases})
    if missing:
        raise SystemExit(f"no such case in {args.config}: {', '.join(missing)}")
    try:
        tooling = instructions.find_tooling()
    except instructions.InstructionsUnavailable as e:
        raise SystemExit(str(e)) from None
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-heap-") as out_dir,
        ThreadPoolExecutor(max(1, args.jobs)) as pool,
    ):
        futures = [pool.submit(one_worker, tooling, cases, i, out_dir) for i in range(args.workers)]
        for future in futures:
            row = future.result()
            rows.append(row)
            counts = "  ".join(
                f"{v:,.2f}" if isinstance(v, float) else str(v) for v in row["counts"].values()
            )
            heap = " ".join(f"{s}={row['heap'][s]}" for s in STAGES)
            print(f"worker {row['worker']} (pid {row['pid']}): {counts}   heap {heap}", flush=True)
    print()
    for case in cases:
        values = [r["counts"][case.id] for r in rows if isinstance(r["counts"][case.id], float)]
        if len(values) >= 2:
            spread = instructions.spread(values)
            print(
                f"{case.id}: {len(set(values))} distinct count(s) in {len(values)} workers, spread {spread:.4%}"
            )
    groups: dict[str, set] = {}
    for r in rows:
        groups.setdefault(r["heap"]["fork"], set()).add(tuple(r["counts"].values()))
    consistent = all(len(v) == 1 for v in groups.values())
    print(
        f"{len(groups)} heap fingerprint(s) at fork; "
        + (
            "workers with the same fingerprint counted the same"
            if consistent
            else "some workers with equal fingerprints counted differently"
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
