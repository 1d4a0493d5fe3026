"""`benchmark bisect --python` end to end, counting instructions: real venvs (sharing this
interpreter's paddle), a .pth hook that adds one small op to every paddle.abs call from build k
on, counted under callgrind. The --repo builds are in test_bisect_repo.py, the time metric in
test_bisect_time.py."""

from __future__ import annotations

import json
import math

import pytest
from compare_venvs import BISECT_CONFIG, bisect, builds

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("callgrind_tooling")]


def test_bisect_names_the_build_that_added_work_with_log2_builds_measured(tmp_path):
    config = tmp_path / "bis.yaml"
    config.write_text(BISECT_CONFIG)
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
    config.write_text(BISECT_CONFIG)
    pythons = builds(tmp_path, [False, False, False])
    out = tmp_path / "b.json"
    proc = bisect(str(config), "--pythons", *pythons, "--json", str(out), "--no-store", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    (case,) = doc["cases"].values()
    assert case["status"] == "no-step" and doc["measured_order"] == [0, 2]
    assert abs(case["values"]["2"] / case["values"]["0"] - 1) < 0.01
