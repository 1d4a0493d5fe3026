"""`benchmark pr-scope` and `benchmark pr-configs` on a real temporary git repository: what counts as
case data (no symlink, no gates.yaml, no allowlist), and the configs taken from git blobs only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
    "GIT_CONFIG_NOSYSTEM": "1",
}
CASE = "cases:\n  - op: paddle.tanh\n    inputs: {x: {shape: [4], dtype: float32}}\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True, env={**os.environ, **GIT_ENV}
    ).stdout


def bench(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmark.cli", *args], cwd=repo, capture_output=True, text=True
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a base commit (main) and a branch `pr` checked out on top of it."""
    repo = tmp_path / "repo"
    (repo / "configs" / "ops").mkdir(parents=True)
    (repo / "configs" / "gates.yaml").write_text("defaults: {}\n")
    (repo / "configs" / "allowlist.yaml").write_text("ops: []\n")
    (repo / "configs" / "ops" / "tanh.yaml").write_text(CASE)
    (repo / "benchmark").mkdir()
    (repo / "benchmark" / "x.py").write_text("x = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


def commit(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")


def scope_of(repo: Path) -> tuple[str, str]:
    proc = bench(repo, "pr-scope", "--base", "main", "--head", "pr")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip(), proc.stderr


def configs_of(repo: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return bench(repo, "pr-configs", "--base", "main", "--head", "pr", "--out", str(out), *extra)


def test_a_data_only_change_is_taken_from_blobs_with_odd_names(repo, tmp_path):
    # a space is fine; a newline or another control character makes the change code (issue 44,
    # tests/test_canonical_paths.py)
    odd = ["configs/ops/with space.yaml", "configs/ops/späce é.yml"]
    (repo / "configs" / "ops" / "tanh.yaml").write_text(CASE.replace("[4]", "[8]"))
    for name in odd:
        (repo / name).write_text(CASE)
    commit(repo)
    # the working tree is back on the base: the configs come from git objects, not from files
    git(repo, "checkout", "-q", "main")
    assert scope_of(repo)[0] == "data"
    out = tmp_path / "out"
    proc = configs_of(repo, out)
    assert proc.returncode == 0, proc.stderr
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == sorted(["configs/ops/tanh.yaml", *odd])
    assert (out / "configs/ops/tanh.yaml").read_text() == CASE.replace("[4]", "[8]")
    assert (out / odd[0]).read_text() == CASE and (out / odd[1]).read_text() == CASE
    assert (repo / "configs/ops/tanh.yaml").read_text() == CASE  # the checkout is untouched


def test_a_deleted_case_is_data_and_writes_nothing(repo, tmp_path):
    (repo / "configs" / "ops" / "tanh.yaml").unlink()
    commit(repo)
    assert scope_of(repo)[0] == "data"
    proc = configs_of(repo, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert not list((tmp_path / "out").rglob("*"))


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda r: (r / "configs/ops/passwd.yaml").symlink_to("/etc/passwd"), "a symlink"),
        (lambda r: (r / "configs/gates.yaml").write_text("defaults: {threshold: 9}\n"), "gate thresholds"),
        (lambda r: (r / "configs/allowlist.yaml").write_text("ops: [os.system]\n"), "allowlist"),
        (lambda r: (r / "configs/ops/conftest.py").write_text("import os\n"), "not a case YAML"),
        (lambda r: (r / "benchmark/x.py").write_text("x = 2\n"), "not a case YAML"),
        (lambda r: (r / "configs/ops/tanh.yaml").chmod(0o755), "an executable file"),
    ],
    ids=["symlink", "gates", "allowlist", "conftest", "code", "executable"],
)
def test_what_is_not_data(repo, tmp_path, change, reason):
    change(repo)
    commit(repo)
    scope, stderr = scope_of(repo)
    assert scope == "code"
    assert stderr.startswith("not case data: ") and reason in stderr
    proc = configs_of(repo, tmp_path / "out")
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("benchmark pr-configs: error: not a data-only change: ") and reason in line
    assert not (tmp_path / "out").exists()


def test_a_symlink_among_data_makes_the_whole_change_code(repo, tmp_path):
    (repo / "configs/ops/ok.yaml").write_text(CASE)
    (repo / "configs/ops/link.yaml").symlink_to("ok.yaml")
    commit(repo)
    scope, stderr = scope_of(repo)
    assert scope == "code" and "'configs/ops/link.yaml': a symlink" in stderr and "ok.yaml'" not in stderr


def test_an_oversized_case_file_is_refused(repo, tmp_path):
    (repo / "configs/ops/big.yaml").write_text(CASE + "#" * 5000 + "\n")
    commit(repo)
    assert scope_of(repo)[0] == "data"
    proc = configs_of(repo, tmp_path / "out", "--max-file-bytes", "4096")
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("a case file may have at most 4096")
    assert not (tmp_path / "out").exists()
    assert configs_of(repo, tmp_path / "out2").returncode == 0  # under the default cap


def test_too_many_files_and_a_used_out_dir_are_refused(repo, tmp_path):
    for i in range(3):
        (repo / f"configs/ops/c{i}.yaml").write_text(CASE)
    commit(repo)
    proc = configs_of(repo, tmp_path / "out", "--max-files", "2")
    assert proc.returncode == 2 and "at most 2 are taken" in proc.stderr
    used = tmp_path / "used"
    used.mkdir()
    (used / "x").write_text("")
    proc = configs_of(repo, used)
    assert proc.returncode == 2 and "is not an empty directory" in proc.stderr


def test_pr_configs_says_when_git_fails(repo, tmp_path):
    proc = bench(repo, "pr-configs", "--base", "main", "--head", "nope", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("benchmark pr-configs: error: git diff main...nope failed")


def test_named_paths_are_checked_in_the_working_tree(repo):
    (repo / "configs/ops/link.yaml").symlink_to("tanh.yaml")
    proc = bench(repo, "pr-scope", "configs/ops/tanh.yaml")
    assert proc.returncode == 0 and proc.stdout.strip() == "data"
    for path, reason in [
        ("configs/ops/link.yaml", "a symlink"),
        ("configs/gates.yaml", "gate thresholds"),
        ("   ", None),
    ]:
        proc = bench(repo, "pr-scope", "configs/ops/tanh.yaml", path)
        if reason is None:
            assert proc.stdout.strip() == "data"  # a blank argument names nothing
        else:
            assert proc.stdout.strip() == "code" and reason in proc.stderr


def test_a_revision_with_a_newline_still_gives_one_line(repo, tmp_path):
    proc = bench(repo, "pr-configs", "--base", "main", "--head", "no\npe", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
