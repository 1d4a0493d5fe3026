"""Data parallel training of a registered model on 2 CPU ranks through `paddle.distributed.launch`
(issue 48): each rank reports, the efficiency is computed against one rank, and an interrupted job
leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmark.runners.models import data_parallel as dp

PROJECT = Path(__file__).resolve().parents[1]


def _job(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            found.append(cmd)
    return found


@pytest.mark.slow
def test_two_cpu_ranks_train_and_report(tmp_path):
    one = dp.run("lstm_lm", {}, 1, tmp_path / "one", steps=3, warmup=1)
    two = dp.run("lstm_lm", {}, 2, tmp_path / "two", steps=3, warmup=1)
    assert [r["world"] for r in two] == [2, 2] and sorted(r["rank"] for r in two) == [0, 1]
    assert two[0]["loss"] != two[1]["loss"]  # each rank trains on its own batch
    summary = dp.summarize(two, one)
    assert summary["ranks"] == 2 and len(summary["per_rank"]) == 2 and summary["efficiency"] > 0
    assert summary["total"] == pytest.approx(sum(40 / r["step_s"] for r in two))  # 4 x 10 tokens a step


@pytest.mark.slow
def test_an_interrupted_job_leaves_no_process_behind(tmp_path):
    out = tmp_path / "job"
    code = (
        "import sys; from pathlib import Path; from benchmark.runners.models import data_parallel as dp; "
        "dp.run('lstm_lm', {}, 2, Path(sys.argv[1]), steps=10**6)"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(out)], cwd=PROJECT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_job(str(out))) < 4:  # this child, the launcher, 2 ranks
        time.sleep(0.5)
    assert len(_job(str(out))) >= 4, _job(str(out))
    child.send_signal(signal.SIGTERM)
    child.wait(timeout=60)
    time.sleep(1)
    assert _job(str(out)) == []
    assert not list(out.glob("rank*.json"))  # interrupted before any rank finished
