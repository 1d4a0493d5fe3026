"""`benchmark bisect --metric time` end to end: real venvs (sharing this interpreter's paddle), in
which a .pth hook makes every paddle.abs call 4 times as long as itself from build k on; each
build visited is timed against the first with the paired sequential test of `benchmark compare`.

The slowdown is far beyond the minimum effect so that the test checks the flow (the builds
timed, the step named, the output), not the test's power, which a machine shared with other tests
cannot give; the power at a 10% slowdown is measured by eval/bisect_time.py (docs/bisect.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from compare_venvs import BISECT_CONFIG, bisect, builds, slowdown_hook, wait_for

pytestmark = pytest.mark.slow


def test_metric_time_names_the_build_that_made_a_case_slower(tmp_path):
    config = tmp_path / "bis.yaml"
    config.write_text(BISECT_CONFIG)
    k, n = 1, 3
    pythons = builds(tmp_path, [i >= k for i in range(n)], hook=slowdown_hook(3.0))
    out = tmp_path / "b.json"
    # the sequential test stops as soon as the 4x step is clear: a budget of 10 minutes costs nothing
    # on a quiet machine, and leaves room for enough pairs beside a busy neighbour (2 did not)
    proc = bisect(str(config), "--metric", "time", "--quick", "--budget-min", "10", "--json", str(out),
                  "--no-store", *(a for p in pythons for a in ("--python", p)), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    (case,) = doc["cases"].values()
    assert doc["metric"] == "time" and case["status"] == "step", proc.stderr[-3000:]
    assert (case["last_good"], case["first_bad"]) == (k - 1, k)
    assert doc["measured_order"] == [0, 2, 1]
    assert case["values"]["0"] == 1.0 and case["values"][str(k)] > 1.5
    assert "timing 1 case(s) on build" in proc.stderr and "x1.000" in proc.stdout


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_mid_search_keeps_what_was_timed_and_says_the_interval_left(tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while the first midpoint
    is being timed: exit 130, the end measured stays in the result, and the output names the
    interval still to search. The signal is sent when bisect says it starts timing that build,
    which then takes several worker processes a side, so it cannot land after the search.

    The child gets SIGINT's default action whatever this process inherited: a shell ignores SIGINT
    in the commands it starts in the background (`.ci/run ... &`), the child inherits that, and
    then Ctrl-C does nothing to it, as it should for a background job; so the test, not bisect,
    restores it."""
    config = tmp_path / "bis.yaml"
    config.write_text(BISECT_CONFIG)
    k, n = 3, 5
    pythons = builds(tmp_path, [i >= k for i in range(n)], hook=slowdown_hook(3.0))
    out = tmp_path / "b.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmark.cli", "bisect", str(config), "--metric", "time", "--quick",
         "--budget-min", "5", "--json", str(out), "--no-store", *(a for p in pythons for a in ("--python", p))],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_default_sigint,
    )  # fmt: skip
    try:
        seen = wait_for(proc, "bisect: timing ", times=2, timeout_s=300)  # the last build, then the midpoint
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stdout + seen + stderr
    assert "Traceback" not in seen + stderr, seen + stderr
    assert "interrupted: the step is between build 0 and build 4 (3 build(s) left)" in stdout, stdout
    doc = json.loads(out.read_text())
    (case,) = doc["cases"].values()
    assert case["status"] == "interrupted" and sorted(case["values"]) == ["0", "4"]
