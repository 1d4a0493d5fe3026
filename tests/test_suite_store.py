"""The suite and the history together, with real `pytest benchmark/` processes: every finished case is
in the history at once (a SIGKILL mid-suite loses none of them), two suites can write one SQLite file
at the same time, and a bad history stops the suite before anything is measured."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.store import StoreError, open_store

PROJECT = Path(__file__).resolve().parents[1]
CASES = """
cases:
  - name: s_abs
    kind: op
    op: paddle.abs
    inputs: {x: {shape: $shape}}
    grid: {shape: [[8, 64], [16, 64], [32, 64], [64, 64], [128, 64], [256, 64]]}
    places: [cpu]
    measure: {warmup_time: 0.05, max_time: $t, min_rounds: 5}
"""


def start_suite(tmp: Path, url: str, max_time: float, tag: str = "a") -> subprocess.Popen:
    cfg = tmp / f"cases-{tag}.yaml"
    cfg.write_text(CASES.replace("$t", str(max_time)))
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "benchmark/",
        "-q",
        "-p",
        "no:cacheprovider",
        "--bench-config",
        str(cfg),
        "--bench-db",
        url,
        "--bench-json",
        str(tmp / f"summary-{tag}.json"),
        "--bench-processes",
        "1",  # one worker process per case: each case is stored as soon as it is measured
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.Popen(
        cmd, cwd=PROJECT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@pytest.mark.slow
def test_sigkill_mid_suite_keeps_every_finished_case(tmp_path):
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    proc = start_suite(tmp_path, url, max_time=1.0)
    deadline = time.time() + 240
    stored = []
    while time.time() < deadline and len(stored) < 2 and proc.poll() is None:
        time.sleep(0.2)
        if (tmp_path / "history.sqlite").exists():
            try:
                with open_store(url, readonly=True) as store:
                    run_id = store.latest_run_id()
                    stored = store.results(run_id) if run_id else []
            except StoreError:  # the suite is still creating the schema
                continue
    assert len(stored) >= 2, "the suite stored its first results while running"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    with open_store(url, readonly=True) as store:
        results = store.results(run_id)
        (run,) = [r for r in store.runs() if r.id == run_id]
    assert len(results) >= len(stored) and len(results) < 6
    assert all(r.status == "ok" and len(r.samples) >= 5 for r in results)
    assert run.status == "interrupted"


@pytest.mark.slow
def test_two_suites_write_one_sqlite_file_at_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    procs = [start_suite(tmp_path, url, max_time=0.05, tag=t) for t in ("a", "b")]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out[-3000:]
    with open_store(url, readonly=True) as store:
        runs = store.runs()
        assert len(runs) == 2 and all(r.status == "complete" for r in runs)
        for r in runs:
            assert len(store.results(r.id)) == 6


@pytest.mark.parametrize("kind", ["corrupt", "readonly", "unreachable", "invalid"])
@pytest.mark.slow
def test_a_bad_history_stops_the_suite_before_any_case(tmp_path, kind):
    db = tmp_path / "history.sqlite"
    if kind == "corrupt":
        db.write_bytes(b"this is not a database" * 100)
        url = f"sqlite:///{db}"
    elif kind == "readonly":
        with open_store(f"sqlite:///{db}"):
            pass
        db.chmod(0o444)
        url = f"sqlite:///{db}"
    elif kind == "unreachable":
        url = "postgresql+psycopg://bench:s3cret-pw@127.0.0.1:9/history"
    else:
        url = "notadb://what"
    before = db.read_bytes() if db.exists() else None
    proc = start_suite(tmp_path, url, max_time=0.05)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode not in (0, 1), out[-2000:]
    assert "history store:" in out and "Traceback" not in out
    assert "s3cret-pw" not in out
    assert not (tmp_path / "summary-a.json").exists(), "nothing was measured"
    if before is not None:
        assert db.read_bytes() == before, "the file is untouched"


def test_an_unwritable_json_path_is_one_line_before_anything_is_measured(tmp_path, machine, make_result):
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    with open_store(url) as store:  # a history of one run, seeded through the store
        run_id = store.begin_run(
            MachineDescription.of(machine),
            RunDescription.of({"started_at": time.time(), "hostname": "h", "pid": 1}),
        )
        store.add_results(run_id, [make_result(f"s_abs[{n}]") for n in range(6)])
        store.finish_run(run_id)
    blocker = tmp_path / "summary-a.json"  # start_suite writes its summary under this name...
    blocker.mkdir()
    (blocker / "x").write_text("")  # ...which is a non-empty folder: os.replace cannot land there
    proc = start_suite(tmp_path, url, max_time=0.05)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 4, out[-2000:]
    assert "--bench-json" in out and "Traceback" not in out
    with open_store(url, readonly=True) as store:
        (run,) = store.runs()
    assert run.status == "complete" and run.results == 6, "the history is intact"
