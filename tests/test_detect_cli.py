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
    assert main(["detect", str(csv), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"change_points", "alerts"}
    assert doc["change_points"] == [
        {"index": 60, "direction": "regression", "magnitude": pytest.approx(0.1, abs=0.02)}
    ]
    (alert,) = doc["alerts"]
    assert set(alert) == {"index", "change_index", "direction", "magnitude"}
    assert alert["change_index"] == 60 and alert["index"] in (60, 61) and alert["direction"] == "regression"
    assert isinstance(alert["magnitude"], float)


def test_higher_is_better_and_min_effect(tmp_path, capsys):
    csv = write_series(tmp_path / "s.csv", step_series(size=0.10), labels=False)
    assert main(["detect", str(csv), "--json", "--higher-is-better"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["direction"] for c in doc["change_points"]] == ["improvement"]
    assert main(["detect", str(csv), "--json", "--min-effect", "0.2"]) == 0
    assert json.loads(capsys.readouterr().out) == {"change_points": [], "alerts": []}


def test_samples_column_is_read(tmp_path, capsys):
    rng = np.random.default_rng(1)
    v = step_series(size=0.02)
    samples = [x * np.exp(rng.normal(0, 0.3, 8)) for x in v]  # very noisy inside each run
    csv = write_series(tmp_path / "s.csv", v, samples=samples)
    assert main(["detect", str(csv), "--json"]) == 0
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
    ok = subprocess.run([*run, str(csv), "--json"], cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["change_points"][0]["index"] == 60
    bad = subprocess.run(
        [*run, str(tmp_path / "missing.csv")], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "missing.csv" in bad.stderr and bad.stdout == ""
