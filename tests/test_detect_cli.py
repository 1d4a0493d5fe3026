"""`benchmark detect SERIES.csv` as a user runs it: exit codes, JSON shape, readable errors."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmark.cli import main

PROJECT = Path(__file__).resolve().parents[1]


def write_series(path: Path, values, *, labels=True, samples=None) -> Path:
    header = ["run", "value"] if labels else ["value"]
    if samples is not None:
        header.append("samples")
    lines = [",".join(header)]
    for i, v in enumerate(values):
        row = ([f"nightly-{i}"] if labels else []) + [repr(float(v))]
        if samples is not None:
            row.append(" ".join(f"{x:.6g}" for x in samples[i]))
        lines.append(",".join(row))
    path.write_text("\n".join(lines) + "\n")
    return path


def step_series(n=100, at=60, size=0.10, seed=0):
    rng = np.random.default_rng(seed)
    log = rng.normal(0, 0.01, n)
    log[at:] += math.log1p(size)
    return 3.0 * np.exp(log)


def test_json_shape_and_exit_0(tmp_path, capsys):
    csv = write_series(tmp_path / "s.csv", step_series())
    assert main(["detect", str(csv), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"change_points", "alerts"}
    assert doc["change_points"] == [
        {
            "index": 60,
            "direction": "regression",
            "magnitude": pytest.approx(0.1, abs=0.02),
            "event": None,
            "run": "nightly-60",
        }
    ]
    (alert,) = doc["alerts"]
    assert set(alert) == {
        "index",
        "change_index",
        "direction",
        "magnitude",
        "kind",
        "reverted_at",
        "event",
        "run",
        "change_run",
        "reverted_at_run",
    }
    assert alert["change_index"] == 60 and alert["index"] == 61 and alert["direction"] == "regression"
    assert alert["run"] == "nightly-61" and alert["change_run"] == "nightly-60"
    assert alert["reverted_at"] is None and alert["reverted_at_run"] is None and alert["event"] is None
    assert isinstance(alert["magnitude"], float)


def test_every_alert_says_whether_and_where_the_level_came_back(tmp_path, capsys):
    v = step_series(size=0.0, seed=4)
    v[60:63] *= 1.15  # three slow runs, then back
    csv = write_series(tmp_path / "s.csv", v, labels=False)
    assert main(["detect", str(csv), "--format", "json", "--min-effect", "0.05"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (alert,) = doc["alerts"]
    assert alert["change_index"] == 60 and alert["reverted_at"] == 63
    assert "run" not in alert  # no run column, no labels
    assert doc["change_points"] == []  # offline, a 3-run excursion that returns is not a level
    assert main(["detect", str(csv), "--min-effect", "0.05"]) == 0
    assert "reverted: level came back at run 63" in capsys.readouterr().out


def test_a_lone_outlier_raises_nothing(tmp_path, capsys):
    v = step_series(size=0.0, seed=2)
    v[70] *= 1.15
    v[69] *= 1.025  # and the run before it slightly slow
    csv = write_series(tmp_path / "s.csv", v)
    assert main(["detect", str(csv), "--format", "json", "--min-effect", "0.05"]) == 0
    assert json.loads(capsys.readouterr().out) == {"change_points": [], "alerts": []}


def test_json_is_strict_even_when_a_change_has_no_relative_size(tmp_path, capsys):
    """A level of exactly 0 before a change has no relative change: null, never a bare NaN."""
    v = np.r_[np.zeros(40), np.ones(20)] + np.random.default_rng(0).normal(0, 0.01, 60)
    v[:40] -= np.median(v[:40])
    csv = write_series(tmp_path / "s.csv", v)
    assert main(["detect", str(csv), "--format", "json", "--min-effect", "0"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out, parse_constant=lambda x: pytest.fail(f"bare {x} in {out}"))
    assert doc["change_points"][0]["index"] == 40


def test_environment_changes_are_candidate_change_points(tmp_path, capsys):
    v = step_series(size=0.08, at=60, seed=5)
    path = tmp_path / "s.csv"
    rows = ["value,env"] + [
        f"{float(x)!r},{'driver 550' if i < 60 else 'driver 560'}" for i, x in enumerate(v)
    ]
    path.write_text("\n".join(rows) + "\n")
    assert main(["detect", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["change_points"][0]["event"] == "driver 550 -> driver 560"
    (alert,) = doc["alerts"]
    assert alert["change_index"] == 60 and alert["event"] == "driver 550 -> driver 560"
    assert main(["detect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Environment changes" in out and "after driver 550 -> driver 560" in out


def test_higher_is_better_and_min_effect(tmp_path, capsys):
    csv = write_series(tmp_path / "s.csv", step_series(size=0.10), labels=False)
    assert main(["detect", str(csv), "--format", "json", "--higher-is-better"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["direction"] for c in doc["change_points"]] == ["improvement"]
    assert main(["detect", str(csv), "--format", "json", "--min-effect", "0.2"]) == 0
    assert json.loads(capsys.readouterr().out) == {"change_points": [], "alerts": []}


def test_samples_column_is_read(tmp_path, capsys):
    rng = np.random.default_rng(1)
    v = step_series(size=0.02)
    samples = [x * np.exp(rng.normal(0, 0.3, 8)) for x in v]  # very noisy inside each run
    csv = write_series(tmp_path / "s.csv", v, samples=samples)
    assert main(["detect", str(csv), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["alerts"] == []


def test_readable_table(tmp_path, capsys):
    csv = write_series(tmp_path / "s.csv", step_series())
    assert main(["detect", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "100 runs, lower is better" in out
    assert "Change points" in out and "Alerts" in out
    assert "60 (nightly-60)" in out and "regression" in out
    assert re.search(r"\+(9|10|11)\.\d%", out)


def test_quiet_series_says_none(tmp_path, capsys):
    csv = write_series(tmp_path / "s.csv", step_series(size=0.0))
    assert main(["detect", str(csv)]) == 0
    assert capsys.readouterr().out.count("  none") == 2


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read"),
        ("", "empty file"),
        ("run,time\na,1.0\n", "no 'value' column (columns: run, time)"),
        ("value\n", "no runs"),
        ("run,value\na,1.0\nb,fast\n", "s.csv:3: value 'fast' is not a number"),
        ("value\n1.0\nnan\n", "s.csv:3: value 'nan' is not a finite number"),
        ("value\n1.0\n\n2.0\n,\n", "s.csv:5: missing value"),
        ("value,samples\n1.0,1 2 x\n", "s.csv:2: sample 'x' is not a number"),
    ],
)
def test_bad_csv_is_one_line_on_stderr_and_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "s.csv"
    if content is not None:
        path.write_text(content)
    assert main(["detect", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], captured.err


def test_bad_min_effect_is_a_usage_error():
    with pytest.raises(SystemExit) as e:
        main(["detect", "x.csv", "--min-effect", "-1"])
    assert e.value.code == 2


def test_real_command_line(tmp_path):
    csv = write_series(tmp_path / "s.csv", step_series())
    run = [sys.executable, "-m", "benchmark.cli", "detect"]
    ok = subprocess.run(
        [*run, str(csv), "--format=json"], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["change_points"][0]["index"] == 60
    bad = subprocess.run(
        [*run, str(tmp_path / "missing.csv")], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "missing.csv" in bad.stderr and bad.stdout == ""
