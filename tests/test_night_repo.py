"""`benchmark night --repo --build` end to end under callgrind: a step between two builds of the
index is narrowed over the commits between their paddle commits, each built by the user's command
(as `benchmark bisect --repo`). The index's builds are those of test_night_e2e.py, with a hook
that also sets paddle.version.commit to the commit the build stands for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from compare_venvs import BISECT_CONFIG, EXTRA_OP_HOOK, pth_hook
from test_night_e2e import paddle_build

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("callgrind_tooling")]


# The build command of the --repo night: a wheel whose .pth imports the commit's hook.py (empty, or
# the extra op from the slow commit on).
BUILD_WHEEL = """import base64, hashlib, os, pathlib, zipfile
files = {
    "paddle_patch_hook.py": pathlib.Path("hook.py").read_text(),
    "paddle_patch_hook.pth": "import paddle_patch_hook\\n",
    "paddle_patch_hook-1.0.dist-info/METADATA": "Metadata-Version: 2.1\\nName: paddle-patch-hook\\nVersion: 1.0\\n",
    "paddle_patch_hook-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = "".join(
    f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},{len(text.encode())}\\n"
    for name, text in files.items()
) + "paddle_patch_hook-1.0.dist-info/RECORD,,\\n"
out = pathlib.Path(os.environ["OUT"]) / "paddle_patch_hook-1.0-py3-none-any.whl"
with zipfile.ZipFile(out, "w") as z:
    for name, text in {**files, "paddle_patch_hook-1.0.dist-info/RECORD": record}.items():
        z.writestr(name, text)
"""


def commit_hook(commit: str, slow: bool) -> str:
    """The hook of an index build made from `commit`: paddle.version.commit says so; `slow` adds
    the extra op of EXTRA_OP_HOOK."""
    stamp = f"paddle.version.commit = {commit!r}\n"
    if not slow:
        return pth_hook(f"def _patch(paddle):\n    {stamp}")
    return EXTRA_OP_HOOK.replace("def _patch(paddle):\n", f"def _patch(paddle):\n    {stamp}", 1)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_a_step_between_two_builds_is_narrowed_over_the_commits_between_their_paddle_commits(tmp_path):
    """Builds 1.0 (commit 0) and 1.1 (commit 3) on the index, the extra op from commit 2 on: the
    night of 1.1 fails, its bisection over the builds names 1.0 -> 1.1 with commits 0 and 3, and
    --repo/--build narrow it to commits 1 -> 2."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "build_wheel.py").write_text(BUILD_WHEEL)
    commits = []
    for i in range(4):
        (repo / "hook.py").write_text(EXTRA_OP_HOOK if i >= 2 else "")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {i}")
        commits.append(_git(repo, "rev-parse", "HEAD"))
    idx, db = tmp_path / "idx", f"sqlite:///{tmp_path / 'h.sqlite'}"
    idx.mkdir()
    config = tmp_path / "bis.yaml"
    config.write_text(BISECT_CONFIG)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    paddle_build(idx, "1.0", hook=commit_hook(commits[0], slow=False))

    def night(*args: str) -> tuple[subprocess.CompletedProcess, dict]:
        out = tmp_path / "n.json"
        proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "night", "--index-url", str(idx), str(config),
                               "--db", db, "--json", str(out), *args],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=1200, check=False)  # fmt: skip
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr[-3000:]
        return proc, json.loads(out.read_text())[-1]

    _, first = night()
    assert first["build"]["commit"] == commits[0]
    paddle_build(idx, "1.1", hook=commit_hook(commits[3], slow=True))
    proc, failed = night(
        "--repo", str(repo), "--build", f"{sys.executable} build_wheel.py", "--base-python", sys.executable
    )
    assert proc.returncode == 1, proc.stdout
    (b,) = failed["bisections"]
    assert (b["last_good"], b["first_bad"]) == ("1.0", "1.1") and (b["good_commit"], b["bad_commit"]) == (
        commits[0],
        commits[3],
    )
    c = b["commits"]
    assert c["status"] == "step" and (c["last_good"], c["first_bad"]) == (commits[1], commits[2]), c
    assert c["compare"] == f"https://github.com/PaddlePaddle/Paddle/compare/{commits[1]}...{commits[2]}"
    assert f"commits: {commits[1][:10]} -> {commits[2][:10]}" in proc.stdout
