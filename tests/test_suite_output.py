"""What the suite prints: a table that fits 120 columns with its columns named, warnings that earn
their line, and the diagnostics counted once at the end."""

from __future__ import annotations

import numpy as np
import pytest
from suite_process import run_suite

from benchmark.analysis.summary import diagnostic_kind, stability_warnings
from benchmark.model import CaseResult
from benchmark.plugin.terminal import TIME_COLUMNS, _ci, diagnostics_lines
from benchmark.records import Stats


@pytest.mark.slow
def test_a_suite_run_prints_no_line_over_120_columns_and_names_its_columns(tmp_path):
    db = f"sqlite:///{tmp_path / 'h.sqlite'}"
    proc = run_suite("--bench-tags", "smoke", "--bench-quick", "--bench-db", db,
                     "--bench-json", str(tmp_path / "summary.json"), env_extra={"COLUMNS": "120"})  # fmt: skip
    lines = proc.stdout.splitlines()
    # (lines that name the test's own temporary paths are as long as those paths)
    assert [line for line in lines if len(line) > 120 and str(tmp_path) not in line] == []
    header = next(line for line in lines if line.startswith("case "))
    footer = "\n".join(TIME_COLUMNS)
    for column in header.split()[1:]:
        if column not in ("place", "mode"):
            assert f"{column}: " in footer, column
    assert all(line in lines for line in TIME_COLUMNS)
    # diagnostics never get a warning line of their own
    warnings = [
        line.strip().removeprefix("warning: ") for line in lines if line.strip().startswith("warning: ")
    ]
    assert [w for w in warnings if diagnostic_kind(w) is not None] == []


def _result(case_id: str, samples: np.ndarray) -> CaseResult:
    r = CaseResult(case_id=case_id, name=case_id, kind="op", place="cpu", mode="dynamic", config={},
                   config_hash="0", samples=list(samples))  # fmt: skip
    r.warnings = stability_warnings(samples, min_rounds=10)
    return r


def test_diagnostics_are_counted_in_one_line_and_warnings_that_matter_are_not():
    rng = np.random.default_rng(7)
    two_populations = np.concatenate([rng.normal(1.0, 0.01, 60), rng.normal(1.3, 0.01, 60)])
    steady = rng.normal(1.0, 0.002, 120)
    too_few = rng.normal(1.0, 0.002, 5)
    results = [_result("a", two_populations), _result("b", two_populations), _result("c", steady),
               _result("d", too_few)]  # fmt: skip
    assert any(w.startswith("bimodal") for w in results[0].warnings)
    assert any(w.startswith("only 5 rounds") for w in results[3].warnings)
    lines = diagnostics_lines(results)
    assert len(lines) == 1 and len(lines[0]) <= 120
    assert lines[0].startswith("notes: 2 case(s) look bimodal")
    assert "rounds" not in lines[0].split("look bimodal", 1)[0]  # "only 5 rounds" keeps its own warning line
    assert diagnostics_lines([results[2]]) == []


def test_the_ci_column_is_bounded_where_the_interval_is_wider_than_the_median():
    """A few --bench-quick rounds with one outlier: the column says '>±100%', never '>±999%'."""
    assert _ci(Stats(median=1e-3, ci_low=0.9e-3, ci_high=1.2e-3)) == "±20.0%"
    assert _ci(Stats(median=1e-3, ci_low=0.5e-3, ci_high=3e-3)) == ">±100%"
    assert _ci(Stats(median=1e-3, ci_low=0.5e-3, ci_high=50e-3)) == ">±100%"
    assert _ci(Stats(median=1e-3)) == "-"
