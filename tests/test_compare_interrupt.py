"""An interrupted `benchmark compare` (Ctrl-C, or SIGTERM from a CI timeout) keeps what it measured:
it prints and stores the pairs of the steps it finished, marks both runs interrupted (never a
baseline) and exits 2 when nothing was found slower. Real worker processes, real SQLite."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from compare_venvs import wait_for

CONFIG = """cases:
  - name: int_abs
    kind: op
    op: paddle.abs
    inputs:
      x: {shape: [64, 64]}
    places: [cpu]
    modes: [dynamic]
"""


@pytest.mark.slow
def test_sigterm_stores_and_prints_the_finished_steps(tmp_path):
    from benchmark.store import open_store

    config = tmp_path / "int.yaml"
    config.write_text(CONFIG)
    db, out = tmp_path / "h.sqlite", tmp_path / "job.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmark.cli", "compare", "--a", sys.executable, "--b", sys.executable,
         str(config), "--quick", "--budget-min", "30", "--min-effect", "0.5", "--db", str(db),
         "--json", str(out)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(proc, "step 2 done", timeout_s=240)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2, stdout + stderr
    assert "interrupted after" in stderr and "Traceback" not in stderr
    assert "int_abs-cpu-dynamic" in stdout and "stored as interrupted runs" in stdout

    doc = json.loads(out.read_text())
    assert doc["stopped"].startswith("interrupted after") and doc["steps"] >= 2
    (case,) = doc["cases"]
    assert case["pairs"] == doc["steps"]  # a step cut short adds nothing to either side
    with open_store(f"sqlite:///{db}", create=False, readonly=True) as store:
        for side in ("A", "B"):
            run = store.run(doc["run_ids"][side])
            assert run.status == "interrupted" and "interrupted after" in run.note
            (result,) = store.results(doc["run_ids"][side])
            assert result.status == "ok" and len(result.processes) == doc["steps"]
