"""Fault injection: real `pytest benchmark/` processes hit by faults mid-run; prints one table row each.

    python eval/fault_injection.py [--only sigkill,json,disk_full,pg_stopped]

Scenarios (each on a fresh history, six small `paddle.abs` cases):
- sigkill:    the suite is SIGKILLed after its second stored result.
- json:       the --bench-json folder is replaced by a file while the suite runs (the summary
              cannot be written at the end).
- disk_full:  the SQLite history lives on a small tmpfs that is filled up mid-run (needs root to
              mount; skipped otherwise).
- pg_stopped: the PostgreSQL server (tools/pg_throwaway.sh) is stopped mid-run and started again
              afterwards (skipped without a PostgreSQL server).

For each: results stored before the fault, stored after it (lost = stored before but gone), the
run's status as read afterwards, `benchmark gate --run latest`'s exit (2: refused), the suite's exit,
and whether any output held a Python traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from benchmark.store import StoreError, open_store  # noqa: E402

CASES = """
cases:
  - name: f_abs
    kind: op
    op: paddle.abs
    inputs: {x: {shape: $shape}}
    grid: {shape: [[8, 64], [16, 64], [32, 64], [64, 64], [128, 64], [256, 64]]}
    places: [cpu]
    measure: {warmup_time: 0.05, max_time: 1.0, min_rounds: 5}
"""


def start_suite(tmp: Path, url: str, json_path: Path) -> subprocess.Popen:
    cfg = tmp / "cases.yaml"
    cfg.write_text(CASES)
    cmd = [sys.executable, "-m", "pytest", "benchmark/", "-q", "-p", "no:cacheprovider", "--bench-config",
           str(cfg), "--bench-db", url, "--bench-json", str(json_path)]  # fmt: skip
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.Popen(
        cmd, cwd=PROJECT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def stored_ids(url: str) -> tuple[int | None, set[int]]:
    try:
        with open_store(url, create=False, readonly=True) as store:
            run_id = store.latest_run_id()
            return run_id, {r.result_id for r in store.results(run_id)} if run_id else set()
    except StoreError:
        return None, set()


def wait_for(
    url: str, proc: subprocess.Popen, count: int, timeout: float = 300
) -> tuple[int | None, set[int]]:
    deadline = time.time() + timeout
    run_id, ids = None, set()
    while time.time() < deadline and proc.poll() is None:
        run_id, ids = stored_ids(url)
        if len(ids) >= count:
            break
        time.sleep(0.2)
    return run_id, ids


def gate(url: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "gate", "--db", url, "--run", "latest"],
                          cwd=PROJECT, capture_output=True, text=True, timeout=300)  # fmt: skip
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def finish(name: str, url: str, proc: subprocess.Popen, before: set[int], run_id, extra: str = "") -> dict:
    out, _ = proc.communicate(timeout=600)
    _, after = stored_ids(url)
    with open_store(url, create=False, readonly=True) as store:
        run = store.run(run_id) if run_id else None
    code, text = gate(url)
    return {
        "scenario": name,
        "before": len(before),
        "after": len(after),
        "lost": len(before - after),
        "status": f"{run.status} ({run.note or ''})" if run else "-",
        "gate": code,
        "gate_says": text.splitlines()[-1][:150] if text else "",
        "suite": proc.returncode,
        "traceback": "Traceback" in out or "INTERNALERROR" in out or "Traceback" in text,
        "suite_says": _last_lines(out),
        "extra": extra,
    }


def _last_lines(out: str) -> str:
    keep = [
        ln
        for ln in out.splitlines()
        if re.search(r"history store|--bench-json|Interrupted|passed|failed", ln)
    ]
    return " | ".join(keep[-3:])[:300]


def sigkill(tmp: Path) -> dict:
    url = f"sqlite:///{tmp / 'h.sqlite'}"
    proc = start_suite(tmp, url, tmp / "s.json")
    run_id, before = wait_for(url, proc, 2)
    proc.send_signal(signal.SIGKILL)
    return finish("sigkill", url, proc, before, run_id)


def json_unwritable(tmp: Path) -> dict:
    url = f"sqlite:///{tmp / 'h.sqlite'}"
    folder = tmp / "out"
    proc = start_suite(tmp, url, folder / "s.json")
    run_id, before = wait_for(url, proc, 1)
    shutil.rmtree(folder, ignore_errors=True)
    folder.write_text("a file where the summary's folder was\n")
    return finish("json", url, proc, before, run_id)


def disk_full(tmp: Path) -> dict | None:
    mnt = tmp / "small"
    mnt.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True
    ).returncode:
        return {"scenario": "disk_full", "extra": "skipped: cannot mount a tmpfs (needs root)"}
    try:
        url = f"sqlite:///{mnt / 'h.sqlite'}"
        with open_store(url):
            pass
        proc = start_suite(tmp, url, tmp / "s.json")
        run_id, before = wait_for(url, proc, 2)
        free = shutil.disk_usage(mnt).free
        filler = mnt / "filler"
        with filler.open("wb") as handle:  # leave a few pages: the next result cannot be written
            handle.write(b"\0" * max(free - 8192, 0))
        row = finish("disk_full", url, proc, before, run_id)
        filler.unlink()
        _, after = stored_ids(url)  # read again with space: still nothing lost
        row["after"], row["lost"] = len(after), len(before - after)
        with open_store(url, create=False, readonly=True) as store:
            run = store.run(run_id)
        row["status"] = f"{run.status} ({run.note or ''})" if run else "-"
        row["gate"], text = gate(url)
        row["gate_says"] = text.splitlines()[-1][:150]
        return row
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def pg_stopped(tmp: Path) -> dict:
    started = subprocess.run(
        ["bash", "tools/pg_throwaway.sh", "start"], cwd=PROJECT, capture_output=True, text=True
    )
    env = dict(re.findall(r"export (\w+)=(\S+)", started.stdout))
    if "BENCHMARK_TEST_PG_URL" not in env:
        return {
            "scenario": "pg_stopped",
            "extra": f"skipped: no PostgreSQL server ({started.stderr.strip()[-120:]})",
        }
    base = Path(env["BENCHMARK_TEST_PG_DIR"])
    url = env["BENCHMARK_TEST_PG_URL"]
    port = re.search(r":(\d+)/", url).group(1)
    owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    pg_ctl = [*owner, shutil.which("pg_ctl") or "pg_ctl", "-D", str(base / "data")]
    try:
        proc = start_suite(tmp, url, tmp / "s.json")
        run_id, before = wait_for(url, proc, 2)
        subprocess.run([*pg_ctl, "-m", "immediate", "-w", "stop"], capture_output=True)
        out, _ = proc.communicate(timeout=600)
        subprocess.run([*pg_ctl, "-l", str(base / "server.log"), "-w", "-o",
                        f"-c listen_addresses=127.0.0.1 -p {port} -k {base}", "start"], capture_output=True)  # fmt: skip

        class Done:  # the suite already ended: hand its output to finish()
            returncode = proc.returncode

            @staticmethod
            def communicate(timeout=None):
                return out, None

        return finish("pg_stopped", url, Done, before, run_id)
    finally:
        subprocess.run(["bash", "tools/pg_throwaway.sh", "stop", str(base)], cwd=PROJECT, capture_output=True)


SCENARIOS = {"sigkill": sigkill, "json": json_unwritable, "disk_full": disk_full, "pg_stopped": pg_stopped}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenarios")
    args = parser.parse_args()
    rows = []
    for name in args.only.split(","):
        with tempfile.TemporaryDirectory(prefix=f"fault-{name}-") as tmp:
            rows.append(SCENARIOS[name](Path(tmp)))
            print(rows[-1], file=sys.stderr, flush=True)
    print(
        f"{'scenario':<11} {'stored before':>13} {'after':>6} {'lost':>5} {'gate':>5} {'suite':>6} {'traceback':>9}  status"
    )
    for r in rows:
        if "before" not in r:
            print(f"{r['scenario']:<11} {r['extra']}")
            continue
        print(f"{r['scenario']:<11} {r['before']:>13} {r['after']:>6} {r['lost']:>5} {r['gate']:>5} {r['suite']:>6} "
              f"{'yes' if r['traceback'] else 'no':>9}  {r['status']}")  # fmt: skip
    for r in rows:
        if "before" in r:
            print(f"  {r['scenario']}: gate: {r['gate_says']}")
            print(f"  {r['scenario']}: suite: {r['suite_says']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
