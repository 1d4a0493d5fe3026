"""`benchmark compare --instructions`: the pure verdict on two sides' counts, and the command end to
end with real venvs (made with --system-site-packages, so they share this interpreter's paddle),
real callgrind workers (one per side, side by side) and a real SQLite history.

A count of `paddle.abs` on 1000x1000 is its kernel's (~646k instructions a call) and repeats to
0.01%. Venv B's .pth hook makes paddle.abs also run `paddle.sign` on a 16x16 tensor per call: one
extra small op, which measured +2.77% instructions (645,826 -> 663,706 per iteration, `benchmark
compare --instructions` on the config below). The end-to-end tests take about a minute each (each
side's worker imports paddle under valgrind); they are skipped where valgrind, its header or a C
compiler is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import compare_venvs
import pytest
from compare_venvs import EXTRA_OP_HOOK, make_venv

from benchmark.analysis.deterministic import compare_counts
from benchmark.datamodel.verdict import Verdict

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------- the verdict


def test_counts_that_repeat_are_same_and_a_two_percent_change_is_slower_or_faster():
    a = [645_825.5, 645_808.7, 645_843.1]
    same = compare_counts(a, [645_830.0, 645_815.2, 645_801.9], min_effect=0.01, noise_floor=0.002)
    assert same.verdict == Verdict.PASS and same.noise == 0.002 and abs(same.ratio - 1) < 1e-4
    slower = compare_counts(a, [663_707.9, 663_705.7, 663_701.7], min_effect=0.01, noise_floor=0.002)
    assert slower.verdict == Verdict.REGRESSION and slower.ratio == pytest.approx(663_705.7 / 645_825.5)
    assert slower.median_a == 645_825.5 and slower.median_b == 663_705.7
    faster = compare_counts([663_705.7], a, min_effect=0.01, noise_floor=0.002)
    assert faster.verdict == Verdict.IMPROVEMENT and faster.ratio == pytest.approx(645_825.5 / 663_705.7)


def test_a_change_below_min_effect_is_same_even_over_a_tiny_noise():
    d = compare_counts([1000.0], [1009.0], min_effect=0.01, noise_floor=0.0001)
    assert d.verdict == Verdict.PASS and d.ratio == pytest.approx(1.009)
    assert (
        compare_counts([1000.0], [1010.0], min_effect=0.01, noise_floor=0.0001).verdict == Verdict.REGRESSION
    )


def test_a_noisy_side_raises_the_noise_so_the_same_change_is_same():
    # B's samples spread by 1% around their median: 2% is not beyond 3 x 1%.
    noisy = compare_counts([1000.0, 1000.0], [1010.0, 1020.0, 1030.0], min_effect=0.01, noise_floor=0.002)
    assert noisy.noise == pytest.approx(10 / 1020) and noisy.verdict == Verdict.PASS
    # The same spread on side A counts as well; with 5% more the change is beyond 3x the noise.
    slower = compare_counts([990.0, 1000.0, 1010.0], [1050.0], min_effect=0.01, noise_floor=0.002)
    assert slower.noise == pytest.approx(0.01) and slower.verdict == Verdict.REGRESSION
    # noise_sigmas sets how far beyond the noise a change must be.
    assert (
        compare_counts([990.0, 1010.0], [1025.0], min_effect=0.01, noise_sigmas=1.0).verdict
        == Verdict.REGRESSION
    )
    assert compare_counts([990.0, 1010.0], [1025.0], min_effect=0.01).verdict == Verdict.PASS


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="at least one count"):
        compare_counts([], [1.0], min_effect=0.01)
    with pytest.raises(ValueError, match="finite and positive"):
        compare_counts([1.0, 0.0], [1.0], min_effect=0.01)
    with pytest.raises(ValueError, match="finite and positive"):
        compare_counts([1.0], [float("nan")], min_effect=0.01)
    with pytest.raises(ValueError, match="min_effect"):
        compare_counts([1.0], [1.0], min_effect=1.5)


def _job_with_counts(tmp_path, counts_by_case):
    """A job of the CONFIG's case with (status, samples) per side as its counts, judged."""
    from benchmark import runners
    from benchmark.compare import instruction_counts as counts
    from benchmark.compare.job import CaseState, Job
    from benchmark.compare.sides import Side
    from benchmark.config import load_paths
    from benchmark.instructions.callgrind import instruction_result_base

    path = tmp_path / "cmpi.yaml"
    path.write_text(CONFIG)
    cases, issues = load_paths([path], checks=runners.config_checks(resolve=False))
    assert not issues
    sides = {label: Side(label, sys.executable, {}) for label in ("A", "B")}
    job = Job(sides=sides, states=[CaseState(case=cases[0], min_effect=0.02)])
    job.instructions = {"measured": True, "valgrind": "valgrind-3.19.0", "elapsed_s": 40.0}
    results = {}
    for label, (status, samples) in counts_by_case.items():
        r = instruction_result_base(cases[0])
        r.status, r.samples = status, samples
        r.message = None if status == "ok" else f"the {label} worker died"
        results[label] = r
    job.states[0].counts = counts.judge_counts(results, 0.01, 0.002)
    return job


def test_a_count_error_on_a_side_is_an_error_row_and_exit_2(tmp_path):
    from benchmark.compare import instruction_counts as counts
    from benchmark.compare.output import job_dict

    job = _job_with_counts(tmp_path, {"A": ("ok", [1000.0]), "B": ("error", [])})
    state = job.states[0]
    assert state.counts.verdict == "error" and job.count_verdicts() == ["error"] and job.exit_code() == 2
    assert counts.count_line(state).startswith("ERROR") and "side B: the B worker died" in counts.count_line(
        state
    )
    assert "| `cmpi_abs-cpu-dynamic` | error: side B: the B worker died |" in counts.markdown(job)
    entry = job_dict(job)["cases"][0]["instructions"]
    assert entry["verdict"] == "error" and entry["ratio"] is None and entry["samples"]["A"] == [1000.0]
    stored = counts.side_count_result(state, "B")
    assert stored.metric == "instructions" and stored.compare["verdict"] == "error"


def test_count_verdicts_set_the_exit_status_with_the_time_verdicts(tmp_path):
    from benchmark.compare import instruction_counts as counts

    slower = _job_with_counts(tmp_path, {"A": ("ok", [999.9, 1000.0, 1000.1]), "B": ("ok", [1030.0])})
    assert slower.count_verdicts() == [Verdict.REGRESSION] and slower.exit_code() == 1
    line = counts.count_line(slower.states[0])
    assert (
        line.startswith("SLOWER") and "instructions B/A 1.0300 (+3.00%), noise 0.20%, min effect 1%" in line
    )
    same = _job_with_counts(tmp_path, {"A": ("ok", [1000.0]), "B": ("ok", [1000.0])})
    assert same.count_verdicts() == [Verdict.PASS] and same.exit_code() == 0
    assert "(+0.00%)" in counts.count_line(same.states[0])
    skipped = _job_with_counts(tmp_path, {"A": ("skipped", []), "B": ("ok", [1000.0])})
    assert skipped.count_verdicts() == ["skipped"] and skipped.exit_code() == 0


# ------------------------------------------------------------------------------------------ end to end

CONFIG = """cases:
  - name: cmpi_abs
    kind: op
    op: paddle.abs
    inputs:
      x: {shape: [1000, 1000]}
    places: [cpu]
    modes: [dynamic]
"""


def compare(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return compare_venvs.compare(*args, cwd=cwd, timeout=600, env=env)  # counting adds the callgrind workers


@pytest.fixture
def config(tmp_path) -> Path:
    path = tmp_path / "cmpi.yaml"
    path.write_text(CONFIG)
    return path


@pytest.mark.slow
def test_identical_environments_count_the_same_and_both_runs_store_their_counts(
    tmp_path, config, callgrind_tooling
):
    from benchmark.store import open_store

    python_a, python_b = make_venv(tmp_path / "a"), make_venv(tmp_path / "b")
    db, out = tmp_path / "h.sqlite", tmp_path / "job.json"
    proc = compare(
        "--a", str(python_a), "--b", str(python_b), str(config), "--quick", "--max-pairs", "3",
        "--instructions", "--db", str(db), "--json", str(out), "--seed", "3",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    counted = doc["cases"][0]["instructions"]
    assert counted["verdict"] == "same", counted
    assert abs(counted["ratio"] - 1) < 0.001 and counted["min_effect"] == 0.01
    assert doc["instructions"]["measured"] is True
    line = next(ln for ln in proc.stdout.splitlines() if "instructions B/A" in ln)
    assert line.startswith("SAME") and "cmpi_abs-cpu-dynamic" in line and "min effect 1%" in line

    store = open_store(f"sqlite:///{db}", create=False, readonly=True)
    for label in ("A", "B"):
        run = store.run(doc["run_ids"][label])
        assert run.status == "complete" and run.expected_results == 2
        results = {r.metric: r for r in store.results(doc["run_ids"][label])}
        assert set(results) == {"time", "instructions"}
        counts = results["instructions"]
        assert counts.status == "ok" and counts.stats.median == pytest.approx(
            counted[f"median_{label.lower()}"]
        )
        assert counts.compare["side"] == label and counts.compare["verdict"] == "same"


@pytest.mark.slow
def test_one_extra_small_op_in_b_is_slower_in_instructions_and_exits_1(tmp_path, config, callgrind_tooling):
    python_a, python_b = make_venv(tmp_path / "a"), make_venv(tmp_path / "b", hook=EXTRA_OP_HOOK)
    out, md = tmp_path / "job.json", tmp_path / "c.md"
    proc = compare(
        "--a", str(python_a), "--b", str(python_b), str(config), "--quick", "--max-pairs", "3",
        "--instructions", "--no-store", "--json", str(out), "--markdown", str(md),
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    case = json.loads(out.read_text())["cases"][0]
    counted = case["instructions"]
    assert counted["verdict"] == "slower" and counted["ratio"] > 1.02, counted
    assert case["verdict"] != "slower" or case["ratio"] > 1  # time: whatever 3 pairs could tell
    line = next(ln for ln in proc.stdout.splitlines() if "instructions B/A" in ln)
    assert line.startswith("SLOWER") and "cmpi_abs-cpu-dynamic" in line
    text = md.read_text()
    assert "### Instruction counts" in text and "**B runs more instructions** in 1 of 1" in text
    headline = text.splitlines()[2]  # the outcome under the title says what set the exit code
    assert "**B runs more instructions** in 1 of 1 counted case(s)" in headline, text
    assert "| `cmpi_abs-cpu-dynamic` | slower |" in text


@pytest.mark.slow
def test_without_valgrind_one_line_names_the_package_and_the_timing_stands(tmp_path, config):
    if shutil.which("valgrind", path=str(Path(sys.executable).parent)):
        pytest.skip("valgrind sits beside the interpreter: cannot hide it by PATH")
    import os

    out = tmp_path / "job.json"
    proc = compare(
        "--a", sys.executable, "--b", sys.executable, str(config), "--quick", "--max-pairs", "3",
        "--instructions", "--no-store", "--json", str(out),
        cwd=tmp_path, env={**os.environ, "PATH": str(Path(sys.executable).parent)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "instruction" in ln.lower()]
    assert len(lines) == 1, lines
    assert "install Debian package 'valgrind'" in lines[0] and "measuring time only" in lines[0]
    doc = json.loads(out.read_text())
    assert doc["instructions"]["measured"] is False and "valgrind" in doc["instructions"]["reason"]
    assert doc["cases"][0]["instructions"] is None and doc["cases"][0]["pairs"] == 3
