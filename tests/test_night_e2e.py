"""`benchmark night` end to end under callgrind: a directory of wheels plays the nights. Each wheel is
a build of "paddlepaddle" whose environment sees this interpreter's paddle (a .pth adds its site
directories); from build 1.2 on, the wheel also carries the .pth hook of the bisect tests that adds
one small op to every paddle.abs call. The nights: 1.0 (backfilled), then 1.3 with 1.1 and 1.2 on
the index (fails, bisected to 1.1 -> 1.2), then 1.4 (the regression already bisected: not again),
then 1.4 again (the same build)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from compare_venvs import BISECT_CONFIG, EXTRA_OP_HOOK

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("callgrind_tooling")]


def paddle_build(folder: Path, version: str, *, hooked: bool = False, hook: str | None = None) -> Path:
    """A wheel of "paddlepaddle" `version` whose environment imports this interpreter's paddle;
    `hooked`: with the extra op of EXTRA_OP_HOOK (or `hook`: that module instead)."""
    dirs = [d for d in site.getsitepackages() if Path(d).is_dir()]
    files = {"_night_share.pth": "".join(f"import site; site.addsitedir({d!r})\n" for d in dirs)}
    hook = hook or (EXTRA_OP_HOOK if hooked else None)
    if hook:
        files["paddle_patch_hook.py"] = hook
        files["paddle_patch_hook.pth"] = "import paddle_patch_hook\n"
    name, tag = f"paddlepaddle-{version}", "py3-none-any"
    info = f"{name}.dist-info"
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: paddlepaddle\nVersion: {version}\n"
    files[f"{info}/WHEEL"] = f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n"
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    wheel = folder / f"{name}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def test_nights_backfill_fail_bisect_standing_and_the_same_build(tmp_path):
    idx, db = tmp_path / "idx", f"sqlite:///{tmp_path / 'h.sqlite'}"
    idx.mkdir()
    config = tmp_path / "bis.yaml"
    config.write_text(BISECT_CONFIG)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def night(*args: str, name: str) -> tuple[subprocess.CompletedProcess, dict]:
        out = tmp_path / f"{name}.json"
        proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "night", "--index-url", str(idx), str(config),
                               "--db", db, "--json", str(out), "--markdown", str(tmp_path / f"{name}.md"), *args],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=1200, check=False)  # fmt: skip
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr[-3000:]
        records = json.loads(out.read_text())
        return proc, records[-1] if records else {}

    paddle_build(idx, "1.0", hooked=False)
    proc, first = night("--backfill", "1", name="n1")
    assert proc.returncode == 0 and first["backfill"] and first["verdicts"] == {"bis_abs-cpu-dynamic": "new"}
    assert (
        first["build"]["version"] == "1.0"
        and first["build"]["commit"]
        and first["build"]["installed_version"]
    )
    # a backfill run again resumes: the build already played is skipped, nothing is counted
    proc, _ = night("--backfill", "1", name="n1b")
    assert "1.0 already played, skipped" in proc.stderr and "counting" not in proc.stderr

    paddle_build(idx, "1.1", hooked=False)
    for v in ("1.2", "1.3"):
        paddle_build(idx, v, hooked=True)
    proc, failed = night(name="n2")
    assert proc.returncode == 1, proc.stdout
    assert failed["build"]["version"] == "1.3" and failed["verdicts"]["bis_abs-cpu-dynamic"] == "regression"
    (b,) = failed["bisections"]
    assert b["status"] == "step" and (b["last_good"], b["first_bad"]) == ("1.1", "1.2")
    assert b["effect"] > 0.01 and b["good_commit"] == b["bad_commit"] == first["build"]["commit"]
    assert sorted(b["builds_counted"]) == ["1.1", "1.2"]  # the two nights' own values are not counted again
    print(f"bisection: {b['message']}, {b['seconds']} s; the night {failed['measure_s']} s")
    md = (tmp_path / "n2.md").read_text()
    assert "Culprit ranges (1 failing case(s))" in md and "| 1.1 -> 1.2 |" in md

    # the report and the dashboard of the failing night show the culprit range
    report = subprocess.run([sys.executable, "-m", "benchmark.cli", "report", "--format", "md", "--run",
                             str(failed["run_id"]), "--db", db], capture_output=True, text=True, cwd=tmp_path,
                            env=env, check=False)  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "### Night" in report.stdout and "1.1 -> 1.2" in report.stdout
    assert report.stdout.index("### Night") < report.stdout.index("### Regressions")
    # a night is a side job: no view judges it by default, so the dashboard is asked for it by id
    html = subprocess.run([sys.executable, "-m", "benchmark.cli", "report", "--format", "html", "--run",
                           str(failed["run_id"]), "--out", str(tmp_path / "dash"), "--db", db],
                          capture_output=True, text=True, cwd=tmp_path, env=env, check=False)  # fmt: skip
    assert html.returncode == 0, html.stderr
    assert "Culprit ranges (1 failing case(s))" in (tmp_path / "dash" / "index.html").read_text()

    # the next night keeps the regression: not bisected again (only tonight's build is counted)
    paddle_build(idx, "1.4", hooked=True)
    proc, later = night(name="n3")
    assert proc.stderr.count("counting") == 1
    for x in later.get("bisections", []):
        assert x["status"] == "standing" and (x["last_good"], x["first_bad"]) == ("1.1", "1.2")
        assert x["bisected_in"] == failed["run_id"]

    # the same build again: recorded as such, not bisected
    proc, again = night(name="n4")
    assert again["same_build_as"] == later["run_id"]
    assert all(x["status"] == "same-build" for x in again.get("bisections", []))
