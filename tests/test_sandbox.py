"""The sandbox around configs and cases (issue 26, "a sandbox around every case" and "caps before
expansion"): caps refuse a file before it is read, parsed or expanded; `measure` overrides have
ceilings; a worker runs under a memory limit the config cannot raise, and a case that hits it is
an error naming the limit while the suite goes on. Real paddle on CPU, real worker processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmark import limits
from benchmark.config import load_file

PROJECT = Path(__file__).resolve().parents[1]


def validate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`benchmark validate ARGS` as a user runs it, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "benchmark.cli", "validate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _entries(n: int, points: int) -> str:
    """A config of `n` op entries, each with a grid of `points` values."""
    grid = ", ".join(str(i) for i in range(1, points + 1))
    entry = (
        "  - name: c{i}\n    kind: op\n    op: paddle.abs\n    places: [cpu]\n"
        "    inputs: {{x: {{shape: [$n]}}}}\n    grid: {{n: [{grid}]}}\n"
    )
    return "cases:\n" + "".join(entry.format(i=i, grid=grid) for i in range(n))


# --- caps before expansion -------------------------------------------------------------------


def test_million_case_file_is_refused_by_its_size_before_it_is_read(tmp_path):
    """1,000 entries x 1,000 grid points (about 4.9 MB): one line naming the file and the cap, exit
    2, and the refusal comes before the file is parsed (docs/sandbox.md has the time and memory)."""
    path = tmp_path / "million.yaml"
    path.write_text(_entries(1000, 1000))
    assert path.stat().st_size > 4_500_000
    proc = validate(path.name, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    assert lines[0].startswith("million.yaml: the file is ")
    assert f"more than the {limits.MAX_FILE_BYTES} a config file may hold" in lines[0]


def test_two_million_item_list_is_refused_cheaply(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text(
        "cases:\n  - {name: a, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [4]}},\n"
        "     grid: {n: [" + ",".join(["1"] * 2_000_000) + "]}}\n"
    )
    loaded = load_file(path)
    assert [i.message for i in loaded.issues] == [
        f"the file is {path.stat().st_size} bytes, more than the {limits.MAX_FILE_BYTES} a config "
        "file may hold (refused before reading it; split it into several files)"
    ]
    assert loaded.cases == []


def test_a_list_over_the_cap_is_refused_while_parsing(tmp_path):
    """Under the size cap, a list longer than MAX_LIST_ITEMS stops the parser at that item."""
    path = tmp_path / "list.yaml"
    n = limits.MAX_LIST_ITEMS + 1
    path.write_text(
        "cases:\n  - {name: a, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [4]}},\n"
        "     grid: {n: [" + ",".join(["1"] * n) + "]}}\n"
    )
    assert path.stat().st_size <= limits.MAX_FILE_BYTES
    loaded = load_file(path)
    assert len(loaded.issues) == 1, loaded.issues
    assert f"a list of more than {limits.MAX_LIST_ITEMS} items" in str(loaded.issues[0])


def test_file_case_count_is_refused_before_any_entry_is_expanded(tmp_path):
    """Entries each under their own cap whose sum is over the file's: refused from the grid's
    lengths; a sentinel entry that would fail on expansion is never reached."""
    n = limits.MAX_FILE_CASES // 1000 + 1
    text = _entries(n, 1000)
    # An entry whose expansion would report an undefined grid variable: not reported, never expanded.
    text += "  - {name: late, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [$undefined]}}}\n"
    path = tmp_path / "many.yaml"
    path.write_text(text)
    loaded = load_file(path, display="many.yaml")
    assert loaded.cases == []
    assert [str(i) for i in loaded.issues] == [
        f"many.yaml:1: field 'cases': the file's entries expand to {n * 1000 + 1} cases or more, more than "
        f"the {limits.MAX_FILE_CASES} one config file may hold (refused before expanding; split it into "
        "several files)"
    ]


def test_a_file_at_the_case_cap_still_validates(tmp_path):
    path = tmp_path / "ten.yaml"
    path.write_text(_entries(limits.MAX_FILE_CASES // 1000, 1000))
    loaded = load_file(path)
    assert loaded.issues == []
    assert len(loaded.cases) == limits.MAX_FILE_CASES


# --- measure ceilings ------------------------------------------------------------------------


def test_time_bomb_measure_is_refused_naming_field_value_and_ceiling(tmp_path):
    (tmp_path / "bomb.yaml").write_text(
        "cases:\n"
        "  - name: bomb\n"
        "    kind: op\n"
        "    op: paddle.abs\n"
        "    places: [cpu]\n"
        "    inputs: {x: {shape: [16]}}\n"
        "    measure: {warmup_time: 1.0e9, processes: 64}\n"
    )
    proc = validate("--no-resolve", "bomb.yaml", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "bomb.yaml:7: case 'bomb': field 'measure.warmup_time': 1e+09 is above the ceiling of 30 s a "
        "config may ask for (the sandbox limit on a case's budget, see docs/sandbox.md)",
        "bomb.yaml:7: case 'bomb': field 'measure.processes': 64 is above the ceiling of 16 processes a "
        "config may ask for (the sandbox limit on a case's budget, see docs/sandbox.md)",
    ]


@pytest.mark.parametrize("field", sorted(limits.MEASURE_CEILINGS))
def test_every_measure_field_has_a_ceiling_and_the_ceiling_itself_passes(tmp_path, field):
    ceiling, _ = limits.MEASURE_CEILINGS[field]
    value = int(ceiling) if float(ceiling).is_integer() else ceiling
    for v, ok in ((value, True), (value * 2, False)):
        path = tmp_path / "m.yaml"
        path.write_text(
            "cases:\n  - {name: m, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [4]}}, "
            f"measure: {{{field}: {v}}}}}\n"
        )
        loaded = load_file(path)
        if ok:
            assert loaded.issues == [], loaded.issues
        else:
            assert len(loaded.issues) == 1, loaded.issues
            assert loaded.issues[0].field == f"measure.{field}"
            assert f"above the ceiling of {ceiling:g}" in loaded.issues[0].message


def test_trial_timeout_follows_the_case_budget():
    """The per-trial wall limit grows with what the settings allow, not a fixed 900 s."""
    quick = limits.trial_timeout_s(
        {"warmup_time": 0.02, "max_time": 0.05, "min_rounds": 5, "round_time": 0.002}
    )
    default = limits.trial_timeout_s(
        {"warmup_time": 0.3, "max_time": 1.0, "min_rounds": 20, "round_time": 0.01}
    )
    worst = limits.trial_timeout_s({f: c for f, (c, _) in limits.MEASURE_CEILINGS.items()})
    assert quick < default < worst
    assert default == pytest.approx(limits.TRIAL_BASE_S + limits.TRIAL_BUDGET_FACTOR * 1.3)
    # min_rounds x round_time counts when it exceeds max_time
    assert limits.trial_budget_s({"max_time": 1.0, "min_rounds": 1000, "round_time": 1.0}) == 1000.0
