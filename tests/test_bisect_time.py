"""`benchmark bisect --metric time` end to end: real venvs (sharing this interpreter's paddle), in
which a .pth hook makes every paddle.abs call 4 times as long as itself from build k on; each
build visited is timed against the first with the paired sequential test of `benchmark compare`.

The slowdown is far beyond the minimum effect so that the test checks the flow (the builds
timed, the step named, the output), not the test's power, which a machine shared with other tests
cannot give; the power at a 10% slowdown is measured by eval/bisect_time.py (docs/bisect.md)."""

from __future__ import annotations

import json

import pytest
from compare_venvs import BISECT_CONFIG, bisect, builds, slowdown_hook

pytestmark = pytest.mark.slow


def test_metric_time_names_the_build_that_made_a_case_slower(tmp_path):
    config = tmp_path / "bis.yaml"
    config.write_text(BISECT_CONFIG)
    k, n = 1, 3
    pythons = builds(tmp_path, [i >= k for i in range(n)], hook=slowdown_hook(3.0))
    out = tmp_path / "b.json"
    proc = bisect(str(config), "--metric", "time", "--quick", "--budget-min", "2", "--json", str(out),
                  "--no-store", *(a for p in pythons for a in ("--python", p)), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    (case,) = doc["cases"].values()
    assert doc["metric"] == "time" and case["status"] == "step", proc.stderr[-3000:]
    assert (case["last_good"], case["first_bad"]) == (k - 1, k)
    assert doc["measured_order"] == [0, 2, 1]
    assert case["values"]["0"] == 1.0 and case["values"][str(k)] > 1.5
    assert "timing 1 case(s) on build" in proc.stderr and "x1.000" in proc.stdout
