"""Smoke test of the detector evaluation (eval/evaluate_detector.py, outside the package): one series
per scenario in a real subprocess; the report has every section, every detector's column and one
row per scenario. The figures of so small a run mean nothing and are not checked."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "eval" / "evaluate_detector.py"
DETECTORS = ["ours", "paddle-5%", "pytest-5%", "asv-step", "bencher-t", "conbench-z5", "otava-ed"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TOOL), *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def _sections(text: str) -> dict[str, list[list[str]]]:
    """Markdown tables by the '## ' heading above them: rows of cells, header first."""
    out: dict[str, list[list[str]]] = {}
    title = None
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:]
            out[title] = []
        elif title and line.startswith("|") and not line.startswith("|---"):
            out[title].append([c.strip() for c in line.strip("|").split("|")])
    return out


def test_evaluate_detector_smoke():
    proc = _run("--series", "1", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# Detection evaluation (seed 3, 1 null / 1 other series per scenario)")
    sections = _sections(proc.stdout)
    null = sections["Null series (365 runs): false alarms per run, %"]
    assert null[0] == ["scenario", *DETECTORS]
    assert len(null) == 1 + 14  # 4 noise levels x 3 autocorrelations, and 2 with outliers
    for row in null[1:]:
        assert len(row) == 1 + len(DETECTORS)
        assert all(re.fullmatch(r"\d+\.\d{3}", c) for c in row[1:]), row
    matched = next(v for k, v in sections.items() if k.startswith("At a matched false-alarm rate"))
    assert matched[0] == ["scenario (metric)", *DETECTORS]
    targets = sections["Targets for ours (autocorrelation <= 0.3)"]
    assert targets[0] == ["target", "measured", "met"]
    assert {r[2] for r in targets[1:]} <= {"yes", "NO"}
    assert any(k.startswith("Real histories") for k in sections)
    assert "Every metric" not in sections  # only with --full-table
    assert re.search(r"^\(finished in \d+ s\)$", proc.stdout, re.M)


def test_evaluate_detector_rejects_zero_series():
    proc = _run("--series", "0")
    assert proc.returncode == 2
    assert "--series must be at least 1" in proc.stderr
