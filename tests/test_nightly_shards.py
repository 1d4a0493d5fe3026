"""The nightly's shards-then-gate flow, end to end on SQLite (issue 26, part 2): two real shard
processes of one run group, each in its own directory as its own job, each followed by
`benchmark db backup` whose single file is what the next step restores (as the workflow passes the
history between jobs as an artifact); then `benchmark gate --run-group G` judges every case of both
shards as one run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from suite_process import run_suite

from benchmark.store import open_store

PROJECT = Path(__file__).resolve().parents[1]
GROUP = "nightly-test-group"


def shard(job: Path, index: int, history: Path) -> dict:
    # as the workflow runs it: every installed plugin loaded
    run_suite("--bench-tags", "smoke", "--bench-quick", "--bench-shard", f"{index}/2", "--bench-run-group", GROUP,
              "--bench-trigger", "nightly", "--bench-db", f"sqlite:///{history}",
              "--bench-json", str(job / "summary.json"), user_env=True)  # fmt: skip
    return json.loads((job / "summary.json").read_text())


def benchmark(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmark.cli", *argv],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_two_shards_passed_on_as_backups_are_gated_as_one_run(tmp_path):
    artifact = tmp_path / "artifact" / "history.sqlite"  # what one job uploads and the next restores
    cases = []
    for index in (1, 2):
        job = tmp_path / f"shard-{index}"
        job.mkdir()
        history = job / "history.sqlite"
        if artifact.exists():
            history.write_bytes(artifact.read_bytes())  # the restored artifact: the one file only
        summary = shard(job, index, history)
        cases += [(r["case_id"], r["place"], r["mode"], r["status"]) for r in summary["results"]]
        backup = benchmark("db", "backup", str(artifact), "--force", "--db", f"sqlite:///{history}")
        assert backup.returncode == 0, backup.stderr

    gate_job = tmp_path / "gate"
    gate_job.mkdir()
    restored = gate_job / "history.sqlite"
    restored.write_bytes(artifact.read_bytes())
    statuses = [c[3] for c in cases]
    assert len(set(cases)) == len(cases) and "ok" in statuses  # the shards split the cases

    with open_store(f"sqlite:///{restored}", create=False, readonly=True) as store:
        run_ids = store.group_runs(GROUP)
        assert len(run_ids) == 2
        assert all(store.run(r).status == "complete" for r in run_ids)
        stored = sorted((r.case_id, r.place, r.mode, r.status) for i in run_ids for r in store.results(i))
    assert stored == sorted(cases)

    gate = benchmark("gate", "--run-group", GROUP, "--format=json", "--all", "--db", f"sqlite:///{restored}")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    judged = json.loads(gate.stdout)
    assert judged["run"] == run_ids and judged["passed"] is True
    decided = sorted((d["case_id"], d["place"], d["mode"]) for d in judged["decisions"])
    assert decided == sorted((c[0], c[1], c[2]) for c in cases)
