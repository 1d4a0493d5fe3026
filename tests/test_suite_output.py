"""What the suite prints: a table that fits 120 columns with its columns named, warnings that earn
their line, the diagnostics counted once at the end, and a busy machine named once."""

from __future__ import annotations

import numpy as np
import pytest
from suite_process import run_suite

from benchmark.analysis.summary import diagnostic_kind, stability_warnings
from benchmark.datamodel.metrics import CONFIDENCE
from benchmark.datamodel.result import CaseResult, Stats
from benchmark.plugin.terminal import (
    TIME_COLUMNS,
    _ci,
    busy_lines,
    busy_machine,
    case_warnings,
    diagnostics_lines,
    noisy_cases,
)


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


def _timed(case_id: str, median: float, half: float, warnings: list[str] | None = None) -> CaseResult:
    r = CaseResult(case_id=case_id, name=case_id, kind="op", place="cpu", mode="dynamic", config={},
                   config_hash="0", samples=[median])  # fmt: skip
    r.stats = Stats(median=median, ci_low=median * (1 - half), ci_high=median * (1 + half), rounds=20)
    r.warnings = list(warnings or [])
    return r


def test_the_imprecise_warning_follows_the_interval_the_table_shows():
    wide, narrow = _timed("wide", 1.0, 0.591), _timed("narrow", 1.0, 0.01)
    assert _ci(wide.stats) == "±59.1%" and _ci(narrow.stats) == "±1.0%"
    assert [w for w in case_warnings(wide) if w.startswith("imprecise")] == [
        f"imprecise: the {CONFIDENCE:.0%} interval of the median is ±59.1% of it (> ±2.5%)"
    ]
    assert case_warnings(narrow) == []
    # two processes of --bench-quick: an interval of trillions of percent is said in words, as the column does
    (huge,) = [w for w in case_warnings(_timed("huge", 1.0, 3e11)) if w.startswith("imprecise")]
    assert (
        huge
        == f"imprecise: the {CONFIDENCE:.0%} interval of the median is wider than the median itself (> ±2.5%)"
    )


def test_a_busy_machine_gets_one_warning_and_a_quiet_one_a_line_per_case():
    loaded = [
        _timed(f"case{i}", 1.0, 0.3, ["unstable: IQR is 50.0% of the median (> 10%)"]) for i in range(37)
    ]
    assert len(noisy_cases(loaded)) == 37 and busy_machine(37, 37)
    lines = busy_lines(37, 37, "machine host1 was busy (load average 3.1 on 2 CPUs)")
    assert len(lines) == 1 and len(lines[0]) <= 120
    assert lines[0].count("host1") == 1 and "37 of 37 cases unreliable" in lines[0]
    # two imprecise cases among many steady ones are the cases', not the machine's
    quiet = [_timed("a", 1.0, 0.2), _timed("b", 1.0, 0.2)] + [_timed(f"s{i}", 1.0, 0.01) for i in range(10)]
    assert len(noisy_cases(quiet)) == 2 and not busy_machine(2, 12)
