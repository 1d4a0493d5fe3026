"""The table, Markdown, JSON and exit status of a bisection (benchmark.bisect.output)."""

from __future__ import annotations

from benchmark.bisect import output
from benchmark.bisect.search import search


def test_table_marks_the_step_and_the_skipped_build():
    values = [100.0, None, 100.0, 103.0, 103.0]
    r = search(5, lambda i: values[i], 0.01)
    builds = [f"v{i}" for i in range(5)]
    lines = output.table("c1", r, builds)
    assert lines[0].startswith("STEP") and "c1" in lines[0]
    assert any("v2" in ln and "last good" in ln for ln in lines)
    assert any("v3" in ln and "first bad" in ln and "+3.00%" in ln for ln in lines)
    assert output.exit_code({"c1": r}) == 1
    md = output.markdown({"c1": r}, builds, "instructions")
    assert "| `c1` | step | v2 | v3 | +3.00% |" in md
    doc = output.to_dict({"c1": r}, builds, "instructions", r.order)
    assert doc["exit_status"] == 1 and doc["cases"]["c1"]["first_bad"] == 3


def test_no_step_exits_0_and_says_so():
    r = search(3, lambda i: 100.0, 0.01)
    assert output.exit_code({"c": r}) == 0
    assert "No step in 1 case(s)" in output.markdown({"c": r}, ["a", "b", "c"], "instructions")
