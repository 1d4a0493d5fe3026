"""benchmark.report.words: the one place the judge's decisions become words, read by `benchmark gate`,
the pytest gate items and the Markdown report."""

from __future__ import annotations

import math

from benchmark.datamodel.verdict import Evidence, Verdict
from benchmark.gate.judge import Decision
from benchmark.report import markdown
from benchmark.report import words as text
from benchmark.report.run_rows import Row
from benchmark.units import format_percent


def _decision(**kw) -> Decision:
    base = dict(case_id="ops.add[n=8]", name="ops.add", place="cpu", mode="dynamic", metric="time")
    return Decision(**{**base, "verdict": Verdict.REGRESSION, **kw})


def test_a_decision_is_one_line_with_its_effect_interval_evidence_baseline_and_reason():
    d = _decision(effect=0.2013, ci_low=0.18, ci_high=0.2231, evidence="online detector: step",
                  evidence_kind=Evidence.HISTORY, baseline="runs 1-11", reason="after driver 550 -> 560")  # fmt: skip
    line = text.format_decision(d)
    assert line.startswith("REGRESSION   ops.add[n=8] [cpu dynamic] time  effect +20.1% (+18.0% .. +22.3%)")
    assert line.endswith("online detector: step  baseline: runs 1-11  after driver 550 -> 560")


def test_empty_parts_are_left_out():
    line = text.format_decision(_decision(verdict=Verdict.NEW))
    assert line == "NEW          ops.add[n=8] [cpu dynamic] time"
    assert text.format_decision(_decision(effect=0.03)).endswith("time  effect +3.0%")  # no interval


def test_the_markdown_report_writes_the_effect_as_the_gate_does():
    row = Row(case_id="a", name="a", place="cpu", mode="dynamic", config_hash="h", verdict=Verdict.REGRESSION,
              ratio=1.2013, ci_low=1.18, ci_high=1.2231)  # fmt: skip
    assert markdown.effect(row) == text.effect(0.2013, 0.18, 0.2231) == "+20.1% (+18.0% .. +22.3%)"
    assert markdown.pct(math.nan) == format_percent(None) == "-"


def test_environment_changes_are_grouped_oldest_first_with_five_series_named():
    ds = [_decision(case_id=f"c{i}", events=[(12, "driver 550 -> 560")]) for i in range(7)]
    ds.append(_decision(case_id="old", events=[(3, "Python 3.11.4 -> 3.11.7")], revert="came back at run 9"))
    lines = text.event_lines(ds)
    assert lines[0] == "run 3: after Python 3.11.4 -> 3.11.7 (1 series: old [cpu dynamic])"
    assert lines[1].startswith("run 12: after driver 550 -> 560 (7 series: c0 [cpu dynamic], ")
    assert lines[1].endswith("c4 [cpu dynamic] and 2 more)")
    assert text.revert_lines(ds) == ["old [cpu dynamic]: came back at run 9"]


def test_the_words_load_nothing_heavy():
    """`benchmark gate --help` imports this module: it must not pull numpy, scipy or the store."""
    import subprocess
    import sys

    code = "import sys, benchmark.report.words; print(sorted({'numpy', 'scipy', 'sqlalchemy', 'matplotlib'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_interval_past_ten_times_the_value_is_said_as_such():
    """Two processes a side at 98% give bounds of millions of percent: every view shows '>+999%'."""
    from benchmark.report.words import effect

    assert effect(0.1, -0.05, 0.3) == "+10.0% (-5.0% .. +30.0%)"
    assert effect(3.776, -0.981, 1209.421) == "+377.6% (-98.1% .. >+999%)"
