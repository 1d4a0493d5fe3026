"""The verdict on a drifting machine: unchanged histories, an injected slowdown, and the judge's
figures on both (issue "A verdict the machine cannot fake").

    python eval/verdict_histories.py install-hook                 # once, into this interpreter's venv
    python eval/verdict_histories.py record --out DIR --histories 4 --runs 10 --neighbour-in 4
    python eval/verdict_histories.py inject --out DIR --trials 10 --runs 2 --loops 500 --neighbour
    python eval/verdict_histories.py judge --out DIR               # with this checkout's judge

`record` builds each history from an empty SQLite file (DIR/h1.sqlite, ...), one suite run after
another (`pytest benchmark/ -k SELECTION --bench-place cpu --bench-instructions`, in a fresh
process), each followed by `benchmark gate --run latest --format json`; `--neighbour-in K` runs
eval/neighbour.py (both cores busy 10 s of every 30 s) beside every run of history K.

`inject` copies a recorded history (DIR/hT.sqlite, T cycling over the histories) to DIR/iN.sqlite
for trial N and appends `--runs` runs with extra work in every `paddle.abs` call: a pure-Python
loop of `--loops` iterations, from a `sitecustomize`-style hook installed in the interpreter's
site-packages (`install-hook`: a module and its .pth file, present in every run so that the
site-packages listing is the same with and without the injection; the loop runs only where the
environment sets FLAGS_bench_inject_abs_loops, a variable the counting worker keeps). Each
injected run is gated as above.

`judge` re-judges every run of every history in DIR with this checkout (`benchmark gate --run ID
--json`), so histories recorded once can be judged by a later judge, and prints, per history: runs
gated, blocking failures (by case and metric), and the regressions that did not block. It writes
DIR/judged.json. A benchmark, not a test: its figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the .pth hook helper the compare and bisect tests use

from compare_venvs import pth_hook  # noqa: E402

SELECTION = "abs-1000x1000 or softmax-16x1000-fwd or reduce_sum_all-fwd or feed_abs_fetch-1000 or matmul-fwd"
INJECT_VAR = "FLAGS_bench_inject_abs_loops"
HOOK_NAME = "bench_inject_abs"
HOOK = pth_hook(
    f"""import os

LOOPS = int(os.environ.get("{INJECT_VAR}") or 0)  # absent or 0: paddle is left alone


def _patch(paddle):
    if LOOPS <= 0:
        return
    original = paddle.abs

    def abs(*args, **kwargs):
        s = 0
        for i in range(LOOPS):
            s += i * i
        return original(*args, **kwargs)

    paddle.abs = abs
"""
)


def install_hook() -> Path:
    site = Path(sysconfig.get_path("purelib"))
    (site / f"{HOOK_NAME}.py").write_text(HOOK)
    (site / f"{HOOK_NAME}.pth").write_text(f"import {HOOK_NAME}\n")
    return site


def hook_installed() -> bool:
    return (Path(sysconfig.get_path("purelib")) / f"{HOOK_NAME}.pth").exists()


def gate(db: Path, run: str = "latest") -> tuple[int, dict]:
    judge = [sys.executable, "-m", "benchmark.cli", "gate", "--format=json"]
    cmd = [*judge, "--run", run, "--db", f"sqlite:///{db}"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        data = {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}
    return proc.returncode, data


def _row(d: dict) -> str:
    return f"{d['case_id']} [{d['place']} {d['mode']}] {d['metric']} {d['verdict']} {d.get('effect', 0):+.1%}"


def failing(data: dict) -> list[str]:
    return [_row(d) for d in data.get("decisions", []) if d.get("failing")]


def regressions_not_blocking(data: dict) -> list[str]:
    return [
        _row(d)
        for d in data.get("decisions", [])
        if not d.get("failing") and d.get("verdict") in ("regression", "not reproduced")
    ]


def suite_run(db: Path, selection: str, inject_loops: int, log) -> float:
    env = {k: v for k, v in os.environ.items() if k != INJECT_VAR}
    if inject_loops:
        env[INJECT_VAR] = str(inject_loops)
    cmd = [sys.executable, "-m", "pytest", "benchmark/", "-q", "-p", "no:cacheprovider", "-k", selection,
           "--bench-place", "cpu", "--bench-instructions", "--bench-db", f"sqlite:///{db}",
           "--bench-json", str(db.with_suffix(".summary.json"))]  # fmt: skip
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    log.write(proc.stdout[-3000:] + proc.stderr[-2000:] + "\n")
    return time.time() - t0


def start_neighbour() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "eval" / "neighbour.py"), "--duration", "36000"])


def stop(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def record_runs(db: Path, runs: int, selection: str, inject_loops: int, neighbour: bool, rows: list, tag: str,
                out: Path) -> None:  # fmt: skip
    near = start_neighbour() if neighbour else None  # one neighbour for the whole history, in its own phase
    try:
        _record(db, runs, selection, inject_loops, neighbour, rows, tag, out)
    finally:
        stop(near)


def _record(db: Path, runs: int, selection: str, inject_loops: int, neighbour: bool, rows: list, tag: str,
            out: Path) -> None:  # fmt: skip
    with open(out / "runs.log", "a") as log:
        for i in range(runs):
            took = suite_run(db, selection, inject_loops, log)
            code, data = gate(db)
            row = {"history": tag, "run": i + 1, "db": db.name, "took_s": round(took, 1), "gate_exit": code,
                   "failing": failing(data), "neighbour": neighbour, "inject_loops": inject_loops,
                   "at": time.strftime("%H:%M:%S")}  # fmt: skip
            rows.append(row)
            print(json.dumps(row), flush=True)
            with open(out / "recorded.jsonl", "a") as f:
                f.write(json.dumps(row) + "\n")


def run_ids(db: Path) -> list[int]:
    with sqlite3.connect(db) as c:
        return [r[0] for r in c.execute("select id from run where status = 'complete' order by id")]


def snapshot(db: Path, into: Path) -> Path:
    """A consistent copy of `db` (SQLite's backup, so a history still being written is copied whole
    as of now), upgraded to this checkout's schema; the recorded file is left as it is."""
    into.mkdir(exist_ok=True)
    copy = into / db.name
    copy.unlink(missing_ok=True)
    with sqlite3.connect(db) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    subprocess.run([sys.executable, "-m", "benchmark.cli", "db", "upgrade", "--db", f"sqlite:///{copy}"],
                   cwd=ROOT, capture_output=True, check=True)  # fmt: skip
    return copy


def judge_all(out: Path) -> dict:
    summary: dict = {}
    copied = json.loads((out / "trials.json").read_text()) if (out / "trials.json").exists() else {}
    for recorded in sorted(out.glob("*.sqlite")):
        db = snapshot(recorded, out / "judged")
        rows = []
        # a trial's copied runs were judged in their own history: only its injected runs here
        after = copied.get(db.stem, 1)
        for run in run_ids(db)[after:]:  # the first run of a history has nothing to compare with
            code, data = gate(db, str(run))
            rows.append({"run": run, "exit": code, "failing": failing(data),
                         "not_blocking": regressions_not_blocking(data)})  # fmt: skip
        summary[db.stem] = rows
        fails = sum(1 for r in rows if r["exit"] != 0)
        print(f"{db.stem}: {len(rows)} runs gated, {fails} failed")
        for r in rows:
            for line in r["failing"]:
                print(f"  run {r['run']} FAILS  {line}")
            for line in r["not_blocking"]:
                print(f"  run {r['run']} flagged {line}")
    (out / "judged.json").write_text(json.dumps(summary, indent=1))
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("install-hook", help="install the injection hook into this interpreter's site-packages")
    rec = sub.add_parser("record", help="unchanged histories from empty databases")
    rec.add_argument("--out", type=Path, required=True)
    rec.add_argument("--histories", type=int, default=4)
    rec.add_argument("--runs", type=int, default=10)
    rec.add_argument("--neighbour-in", type=int, default=0, help="the history (1-based) with the neighbour")
    rec.add_argument("-k", dest="selection", default=SELECTION)
    inj = sub.add_parser("inject", help="injected runs appended to copies of the recorded histories")
    inj.add_argument("--out", type=Path, required=True)
    inj.add_argument("--trials", type=int, default=10)
    inj.add_argument("--runs", type=int, default=2)
    inj.add_argument("--loops", type=int, default=500)
    inj.add_argument("--neighbour", action="store_true")
    inj.add_argument("-k", dest="selection", default=SELECTION)
    jud = sub.add_parser("judge", help="re-judge every recorded run with this checkout")
    jud.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)

    if args.command == "install-hook":
        print(f"installed {HOOK_NAME} into {install_hook()}")
        return 0
    if args.command == "judge":
        judge_all(args.out)
        return 0
    if not hook_installed():
        p.error("run `install-hook` first: the hook's files must be there in every run, injected or not")
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list = []
    if args.command == "record":
        for h in range(1, args.histories + 1):
            db = args.out / f"h{h}.sqlite"
            if db.exists():
                p.error(f"{db} exists: record into an empty directory")
            record_runs(db, args.runs, args.selection, 0, h == args.neighbour_in, rows, f"h{h}", args.out)
    else:
        sources = sorted(args.out.glob("h*.sqlite"))
        if not sources:
            p.error(f"no recorded history (h*.sqlite) in {args.out}: run `record` first")
        for t in range(1, args.trials + 1):
            db = args.out / f"i{t}.sqlite"
            source = sources[(t - 1) % len(sources)]
            shutil.copy(source, db)
            trials = (
                json.loads((args.out / "trials.json").read_text())
                if (args.out / "trials.json").exists()
                else {}
            )
            trials[db.stem] = len(run_ids(source))
            (args.out / "trials.json").write_text(json.dumps(trials))
            record_runs(db, args.runs, args.selection, args.loops, args.neighbour, rows, f"i{t}", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
