"""Data parallel training of a registered model on 2 CPU ranks through `paddle.distributed.launch`
(issue 48): a model case's `devices: N`, each rank reports, the efficiency is computed against one
rank, and an interrupted job, or one whose parent is killed, leaves no process behind."""

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


def _cases(tmp_path, body: str):
    from benchmark.config import load_file
    from benchmark.runners import config_checks

    path = tmp_path / "dp.yaml"
    path.write_text(f"cases:\n  - {body}\n")
    return load_file(path, checks=config_checks(resolve=False))


def test_devices_is_a_model_training_field_and_counts_against_max_bytes(tmp_path):
    ok = _cases(tmp_path, "{name: m, kind: model, model: lstm_lm, devices: 2, step: train, places: [cpu]}")
    assert not ok.issues and ok.cases[0].spec.devices == 2
    plain = _cases(tmp_path, "{name: m, kind: model, model: lstm_lm, step: train, places: [cpu]}")
    assert "devices" not in plain.cases[0].config  # unset, the config (and its hash) as before
    for body, expected in (
        ("{name: m, kind: model, model: lstm_lm, devices: 2, places: [cpu]}", "train step only"),
        ("{name: m, kind: op, op: paddle.abs, inputs: {x: {shape: [4]}}, devices: 2}", "devices"),
        ("{name: m, kind: model, model: lstm_lm, devices: 0, step: train}", "devices"),
    ):
        issues = _cases(tmp_path, body).issues
        assert issues and expected in str(issues[0]), (body, issues)
    big = "{name: m, kind: model, model: resnet50, args: {batch_size: 32, image_size: 224, width: 64}, step: train"
    assert not _cases(tmp_path, big + "}").issues  # about 3 GiB: fits 8 GiB
    assert "more than the 8.0 GiB" in str(_cases(tmp_path, big + ", devices: 4}").issues[0])  # 4 replicas


@pytest.mark.slow
def test_a_devices_case_is_one_timing_trial_of_the_job(tmp_path):
    from benchmark.execution.measure import MeasureSettings

    (case,) = _cases(
        tmp_path, "{name: m, kind: model, model: lstm_lm, devices: 2, step: train, places: [cpu]}"
    ).cases
    record = dp.trial(case, MeasureSettings.quick())
    assert record["status"] == "ok" and len(record["samples"]) == 5 and all(x > 0 for x in record["samples"])
    info = record["info"]
    assert record["items_per_step"] == 2 * 40 and info["items_unit"] == "tokens" and info["devices"] == 2
    assert len(info["per_rank_items_s"]) == 2 and info["efficiency"] == pytest.approx(
        info["total_items_s"] / (2 * info["single_rank_items_s"])
    )


@pytest.mark.slow
def test_the_ranks_end_when_the_process_that_started_them_is_killed(tmp_path):
    out = tmp_path / "job"
    code = (
        "import sys; from pathlib import Path; from benchmark.runners.models import data_parallel as dp; "
        "dp.run('lstm_lm', {}, 2, Path(sys.argv[1]), steps=10**6)"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(out)], cwd=PROJECT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_job(str(out))) < 4:
        time.sleep(0.5)
    assert len(_job(str(out))) >= 4
    child.kill()  # SIGKILL: no handler runs; the launcher's parent-death signal stops the job
    child.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _job(str(out)):
        time.sleep(0.5)
    assert _job(str(out)) == []
