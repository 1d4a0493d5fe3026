"""One canonical path (issue 44): `pr-scope`, `pr-configs` and `validate` see the same path. A path
with a `.`, `..` or empty component, a backslash or a control character is code, never data (the
data check compared `configs/./allowlist.yaml` raw while the extraction normalised it and wrote the
allowlist); and a file name is printed escaped, so a name holding a newline and `::error` cannot
start a line a CI log obeys."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.pullrequest.changes import (
    ABSENT,
    REGULAR,
    Change,
    ChangeError,
    canonical_reason,
    extract,
    why_not_data,
)

ODD = [
    "configs/./allowlist.yaml",
    "configs/ops/../allowlist.yaml",
    "configs//ops/a.yaml",
    "configs/ops/a.yaml/",
    "/configs/ops/a.yaml",
    "configs\\ops\\a.yaml",
    "configs/ops/a\n::error title=x::y.yaml",
    "configs/ops/a\x1b[2J.yaml",
    "configs/ops/a\u202e.yaml",
]


def _change(path: str) -> Change:
    return Change(ABSENT, REGULAR, "0" * 40, "1" * 40, "A", path)


@pytest.mark.parametrize("path", ODD)
def test_a_path_that_is_not_canonical_is_code(path):
    assert canonical_reason(path) is not None
    reason = why_not_data(_change(path))
    assert reason is not None and reason.endswith("not case data"), reason


def test_a_canonical_case_file_is_still_data():
    assert canonical_reason("configs/ops/abs.yaml") is None
    assert why_not_data(_change("configs/ops/abs.yaml")) is None


def test_the_extraction_refuses_what_the_check_refuses(tmp_path):
    with pytest.raises(ChangeError, match=r"not a data-only change: 'configs/\./allowlist\.yaml'"):
        extract([_change("configs/./allowlist.yaml")], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmark.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_pr_scope_prints_an_odd_name_escaped(tmp_path):
    proc = run("pr-scope", "configs/ops/a\n::error title=pwned::x.yaml", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "code\n"
    (line,) = proc.stderr.splitlines()
    assert line.startswith("not case data: 'configs/ops/a\\n::error title=pwned::x.yaml': ")


def test_validate_prints_a_file_name_escaped(tmp_path):
    name = "a\n::error title=pwned::x.yaml"
    (tmp_path / name).write_text(
        "cases:\n  - {name: a, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [2]}}, bogus: 1}\n"
    )
    proc = run("validate", "--no-resolve", ".", cwd=tmp_path)
    assert proc.returncode == 2
    (line,) = proc.stdout.splitlines()
    assert line == "a\\n::error title=pwned::x.yaml:2: case 'a': field 'bogus': unknown field"
    assert not any(out.lstrip().startswith("::") for out in (proc.stdout + proc.stderr).splitlines())


def test_the_suite_prints_a_file_name_escaped(tmp_path):
    name = "a\n::error title=pwned::x.yaml"
    (tmp_path / name).write_text(
        "cases:\n  - {name: a, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [2]}}, bogus: 1}\n"
    )
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmark/", "-q", "-p", "no:cacheprovider", "--bench-config", str(tmp_path)],
        cwd=root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert f"{tmp_path}/a\\n::error title=pwned::x.yaml:2: case 'a': field 'bogus': unknown field" in output
    assert not any(line.lstrip().startswith("::") for line in output.splitlines())
