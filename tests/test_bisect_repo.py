"""`benchmark bisect --repo` end to end: the commits of a real git repository, each built once by
the user's command into a wheel that brings (from commit k on) the .pth hook of test_bisect_cli.py,
installed over this interpreter's packages and counted under callgrind."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from compare_venvs import BISECT_CONFIG, EXTRA_OP_HOOK, bisect

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("callgrind_tooling")]


# A build command of the --repo test: it writes a wheel whose .pth imports the hook module the
# commit holds (empty, or EXTRA_OP_HOOK from the slow commit on); a commit with a file `broken`
# fails to build.
BUILD_WHEEL = """import base64, hashlib, os, pathlib, sys, zipfile
if pathlib.Path("broken").exists():
    sys.exit("this commit does not build")
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
print("built", os.environ["COMMIT"])
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_bisect_builds_the_commits_of_a_repository_with_the_users_command(tmp_path):
    """--repo: each commit built once by the command into a wheel, installed over this interpreter's
    packages (--base); the commit that brings the hook is named; commit 1, the first midpoint
    after the two ends, fails to build and is skipped with one line."""
    config = tmp_path / "bis.yaml"
    config.write_text(BISECT_CONFIG)
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "build_wheel.py").write_text(BUILD_WHEEL)
    k, n = 3, 4
    commits = []
    for i in range(n):
        (repo / "hook.py").write_text(EXTRA_OP_HOOK if i >= k else "")
        broken = repo / "broken"
        if i == 1:
            broken.write_text("")
        elif broken.exists():
            broken.unlink()
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {i}")
        commits.append(_git(repo, "rev-parse", "HEAD"))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = tmp_path / "b.json"

    proc = bisect(str(config), "--repo", str(repo), "--good", commits[0], "--bad", commits[-1],
                  "--build", f"{sys.executable} build_wheel.py", "--base-python", sys.executable,
                  "--json", str(out), "--no-store", cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    (case,) = doc["cases"].values()
    assert case["status"] == "step" and (case["last_good"], case["first_bad"]) == (k - 1, k)
    assert doc["builds"] == [c[:12] for c in commits]
    assert len(doc["measured_order"]) <= math.ceil(math.log2(n)) + 3
    builds = proc.stderr.count("bisect: building ")
    assert builds == len(doc["measured_order"]), proc.stderr  # each commit tried built once
    assert doc["measured_order"][:3] == [0, n - 1, 1]
    assert case["skipped"] == [1] and "the build command failed with exit 1" in proc.stderr
