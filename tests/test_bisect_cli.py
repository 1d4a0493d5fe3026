"""`benchmark bisect --pythons` end to end: real venvs (sharing this interpreter's paddle), a .pth
hook that adds one small op to every paddle.abs call from build k on, counted under callgrind."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from compare_venvs import EXTRA_OP_HOOK, make_venv

CONFIG = """cases:
  - name: bis_abs
    kind: op
    op: paddle.abs
    inputs:
      x: {shape: [100, 100]}
    places: [cpu]
    modes: [dynamic]
"""


@pytest.fixture(autouse=True)
def tooling():
    from benchmark.instructions import callgrind as instructions

    try:
        return instructions.find_tooling()
    except instructions.InstructionsUnavailable as e:
        pytest.skip(str(e))


def bisect(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmark.cli", "bisect", *args],
        cwd=cwd, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip


def builds(tmp_path: Path, hooked: list[bool]) -> list[str]:
    return [
        str(make_venv(tmp_path / f"b{i}", hook=EXTRA_OP_HOOK if h else None)) for i, h in enumerate(hooked)
    ]


def test_bisect_names_the_build_that_added_work_with_log2_builds_measured(tmp_path):
    config = tmp_path / "bis.yaml"
    config.write_text(CONFIG)
    k, n = 4, 6
    pythons = builds(tmp_path, [i >= k for i in range(n)])
    # build 2, the first midpoint, cannot be used: its interpreter does not exist (one line, skipped)
    pythons[2] = str(tmp_path / "missing" / "bin" / "python")
    out, md, plot, db = tmp_path / "b.json", tmp_path / "b.md", tmp_path / "b.png", tmp_path / "h.sqlite"
    each = [arg for p in pythons for arg in ("--python", p)]
    proc = bisect(*each, str(config), "--json", str(out), "--markdown", str(md), "--plot", str(plot),
                  "--db", f"sqlite:///{db}", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    (case,) = doc["cases"].values()
    assert case["status"] == "step"
    assert (case["last_good"], case["first_bad"]) == (k - 1, k)
    assert case["effect"] > 0.01
    assert len(doc["measured_order"]) <= math.ceil(math.log2(n)) + 3
    assert len(set(doc["measured_order"])) == len(doc["measured_order"])
    print(f"builds measured: {doc['measured_order']}, effect {case['effect']:+.4%}")
    assert "first bad" in proc.stdout and "bis_abs-cpu-dynamic" in proc.stdout
    assert "| `bis_abs-cpu-dynamic` | step |" in md.read_text()
    assert case["skipped"] == [2] and "skipping build" in proc.stderr and "no such interpreter" in proc.stderr
    # the step holds when its two builds are counted again
    assert doc["confirmed"] == {"bis_abs-cpu-dynamic": True} and "confirmed by measuring both" in proc.stdout
    assert plot.stat().st_size > 1000
    # every count is stored as a run of one bisect group, in series of its own, never the suite's latest
    from benchmark.store import open_store

    store = open_store(f"sqlite:///{db}", create=False, readonly=True)
    try:
        runs = [store.run(i) for i in store.group_runs(doc["run_group"])]
        assert doc["run_group"].startswith("bisect-")
        assert len(runs) == len(doc["measured_order"]) - 1 + 2  # not the skipped build; the step's two again
        assert all(r.machine.endswith("/bisect") and r.trigger == "bisect" for r in runs)
        assert store.latest_run_id(suite=True) is None
    finally:
        store.close()


def test_a_range_with_no_step_exits_0_after_its_two_ends(tmp_path):
    config = tmp_path / "bis.yaml"
    config.write_text(CONFIG)
    pythons = builds(tmp_path, [False, False, False])
    out = tmp_path / "b.json"
    proc = bisect(str(config), "--pythons", *pythons, "--json", str(out), "--no-store", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    (case,) = doc["cases"].values()
    assert case["status"] == "no-step" and doc["measured_order"] == [0, 2]
    assert abs(case["values"]["2"] / case["values"]["0"] - 1) < 0.01


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
    packages (--base); the commit that brings the hook is named, a commit that fails to build is
    skipped with one line."""
    config = tmp_path / "bis.yaml"
    config.write_text(CONFIG)
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "build_wheel.py").write_text(BUILD_WHEEL)
    k, n = 4, 6
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

    def run() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "benchmark.cli", "bisect", str(config), "--repo", str(repo),
             "--good", commits[0], "--bad", commits[-1], "--build", f"{sys.executable} build_wheel.py",
             "--base", sys.executable, "--json", str(out), "--no-store"],
            cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env, check=False,
        )  # fmt: skip

    proc = run()
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    (case,) = doc["cases"].values()
    assert case["status"] == "step" and (case["last_good"], case["first_bad"]) == (k - 1, k)
    assert doc["builds"] == [c[:12] for c in commits]
    assert len(doc["measured_order"]) <= math.ceil(math.log2(n)) + 3
    builds = proc.stderr.count("bisect: building ")
    assert builds == len(doc["measured_order"]), proc.stderr  # each commit tried built once
    if 1 in doc["measured_order"]:
        assert case["skipped"] == [1] and "the build command failed with exit 1" in proc.stderr


def test_metric_time_names_the_build_that_made_a_case_slower(tmp_path):
    """--metric time: each build visited is timed against the first with the paired sequential test;
    the hook's extra op makes paddle.abs on 100x100 far slower than the minimum effect."""
    config = tmp_path / "bis.yaml"
    config.write_text(CONFIG)
    k, n = 2, 4
    pythons = builds(tmp_path, [i >= k for i in range(n)])
    out = tmp_path / "b.json"
    proc = bisect(str(config), "--metric", "time", "--quick", "--budget-min", "2", "--json", str(out),
                  "--no-store", *(a for p in pythons for a in ("--python", p)), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    (case,) = doc["cases"].values()
    assert doc["metric"] == "time" and case["status"] == "step"
    assert (case["last_good"], case["first_bad"]) == (k - 1, k)
    assert case["values"]["0"] == 1.0 and case["values"][str(k)] > 1.05
    assert "timing 1 case(s) on build" in proc.stderr and "x1.000" in proc.stdout
