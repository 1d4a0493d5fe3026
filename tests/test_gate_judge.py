"""One judge (issue 11, part 4): `benchmark gate`, the Markdown report and the HTML dashboard say the
same about the same run, on a real SQLite history, with real report rendering: on the first run
(nothing to compare: a pass with a notice, exit 0) and on a run where a model case (gated on
throughput, its own minimum effect in configs/gates.yaml) regressed.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from synthetic import result_from_processes

from benchmark.cli import main
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.verdict import Evidence, verdict_words
from benchmark.gate.judge import nothing_to_compare
from benchmark.gate.series import MIN_RUNS
from benchmark.report import html as dashboard
from benchmark.report.run_rows import gate_passed, judged_rows, run_notice
from benchmark.store import open_store

MACHINE = {"hostname": "judge-host", "cpu_model": "test", "fingerprint": "judgemachine001"}
OPS = {"ops.add[n=64]": 20e-6, "ops.mul[n=64]": 30e-6}
MODEL, MODEL_STEP = "lstm-train", 8e-3  # seconds per step of 16 samples
DAY = 86400.0


def _result(case_id: str, level: float, rng, *, processes: int = 5, kind: str = "op") -> CaseResult:
    levels = level * np.exp(rng.normal(0.0, 0.02, processes))
    model = kind == "model"
    return result_from_processes(
        case_id,
        [lv * np.exp(rng.normal(0.0, 0.005, 20)) for lv in levels],
        name=case_id.split("[")[0].split("-")[0],
        kind=kind,
        mode="train" if model else "dynamic",
        batch_size=16 if model else None,
        # a GPU place: its time blocks as judged (on CPU wall time fails only when re-measured)
        place="gpu",
    )


def _record(url: str, r: int, rng, model_factor: float = 1.0) -> int:
    with open_store(url) as st:
        run_id = st.begin_run(
            MachineDescription.of(MACHINE),
            RunDescription.of({"started_at": 1.7e9 + r * DAY, "git_commit": f"{r:02d}" + "ef" * 19}),
        )
        results = [_result(c, level, rng) for c, level in OPS.items()]
        results.append(_result(MODEL, MODEL_STEP * model_factor, rng, kind="model"))
        st.add_results(run_id, results)
        st.finish_run(run_id)
    return run_id


def _gate(url: str, run_id: int, capsys) -> tuple[int, dict]:
    code = main(["gate", "--db", url, "--run", str(run_id), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _md(url: str, run_id: int, capsys) -> str:
    assert main(["report", "--format", "md", "--db", url, "--run", str(run_id)]) == 0
    return capsys.readouterr().out


def _html(url: str, run_id: int, out) -> tuple[str, dict[str, str]]:
    with open_store(url, create=False, readonly=True) as store:
        dash = dashboard.build_dashboard(
            store, out, run_id=run_id, workers=1, progress=False, plots_enabled=False
        )
    badges = {en.series.case_id: en.analysis.status for en in dash.entries}
    return dash.index.read_text(encoding="utf-8"), badges


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


def test_first_run_passes_with_a_notice_in_the_gate_and_both_reports(url, tmp_path, capsys):
    run_id = _record(url, 0, np.random.default_rng(1))
    code, doc = _gate(url, run_id, capsys)
    assert code == 0 and doc["passed"]
    assert doc["notice"].startswith("recorded 3 series; nothing to compare yet")
    assert {d["verdict"] for d in doc["decisions"]} == {"new"}
    assert {d["evidence_kind"] for d in doc["decisions"]} == {"none"}
    assert main(["gate", "--db", url, "--run", str(run_id)]) == 0
    text = capsys.readouterr().out
    assert "notice: recorded 3 series; nothing to compare yet" in text and "gate: PASS" in text

    md = _md(url, run_id, capsys)
    assert "**Gate: PASS** (recorded 3 series; nothing to compare yet" in md
    index, badges = _html(url, run_id, tmp_path / "site1")
    assert re.search(
        r'gate <span class="pass">PASS</span> <small>\(recorded 3 series; nothing to compare yet', index
    )
    assert set(badges.values()) == {"new"}


def test_gate_reports_and_badges_agree_on_a_model_regression(url, tmp_path, capsys):
    rng = np.random.default_rng(2)
    _record(url, 0, rng)
    run_id = _record(url, 1, rng, model_factor=1.30)  # the model's step takes 30% longer
    code, doc = _gate(url, run_id, capsys)
    verdicts = {d["case_id"]: d for d in doc["decisions"]}
    assert code == 1 and not doc["passed"] and doc["notice"] is None
    model = verdicts[MODEL]
    assert model["verdict"] == "regression" and model["metric"] == "throughput" and model["failing"]
    assert model["evidence_kind"] == "ab_processes" and model["min_effect"] == 0.08
    assert model["effect"] == pytest.approx(1 / 1.3 - 1, abs=0.03)  # items per second fell
    for case in OPS:
        assert verdicts[case]["verdict"] in ("pass", "inconclusive"), verdicts[case]

    with open_store(url, create=False, readonly=True) as store:
        rows = {r.case_id: r for r in judged_rows(store, run_id)}
    assert {c: r.verdict for c, r in rows.items()} == {c: d["verdict"] for c, d in verdicts.items()}
    assert not gate_passed(rows.values()) and run_notice(rows.values()) is None
    md = _md(url, run_id, capsys)
    assert "**Gate: FAIL** (1 regression(s)" in md
    assert "### Regressions (1)" in md and f"`{MODEL}`" in md.split("### Regressions (1)")[1].split("###")[0]
    index, badges = _html(url, run_id, tmp_path / "site2")
    assert 'gate <span class="fail">FAIL</span>' in index
    assert badges == {c: verdict_words(d["verdict"]).status for c, d in verdicts.items()}
    assert badges[MODEL] == "regression"


def test_history_gate_takes_over_from_the_ab_once_the_series_is_long_enough(url, capsys):
    rng = np.random.default_rng(3)
    for r in range(MIN_RUNS):
        run_id = _record(url, r, rng)
    code, doc = _gate(url, run_id, capsys)
    assert code == 0 and {d["evidence_kind"] for d in doc["decisions"]} == {Evidence.HISTORY}
    with open_store(url, create=False, readonly=True) as store:
        assert {r.evidence_kind for r in judged_rows(store, run_id)} == {Evidence.HISTORY}


def test_nothing_to_compare_only_when_every_measured_case_is_new():
    assert nothing_to_compare(["new", "new", "skipped"]).startswith("recorded 2 series")
    assert nothing_to_compare(["new", "pass"]) is None
    assert nothing_to_compare(["skipped", "error"]) is None
    assert nothing_to_compare([]) is None


def test_an_excursion_that_came_back_is_said_by_the_gate_and_the_markdown_report(url, make_result, capsys):
    """Two runs 20% slower, then two back at the old level: the gate on the last run passes and says
    which alert came back at which run (text, JSON), as the Markdown report does."""
    rng = np.random.default_rng(4)
    levels = np.exp(rng.normal(0, 0.01, 30)) * 1e-3
    levels[26:28] *= 1.2
    run_ids = []
    with open_store(url) as store:
        for i, v in enumerate(levels):
            run_id = store.begin_run(
                MachineDescription.of(MACHINE), RunDescription.of({"started_at": 1.7e9 + i * DAY})
            )
            # a GPU place: its time blocks as judged (on CPU wall time fails only when re-measured)
            samples = v * np.exp(rng.normal(0, 0.002, 7))
            store.add_result(run_id, make_result("op.add", samples=samples, place="gpu"))
            store.finish_run(run_id)
            run_ids.append(run_id)
    assert main(["gate", "--db", url, "--run", str(run_ids[27])]) == 1  # raised on its second run
    capsys.readouterr()

    said = f"the regression raised at run {run_ids[27]} (+"
    back = f"from run {run_ids[26]}) came back at run {run_ids[28]}"
    assert main(["gate", "--db", url, "--run", str(run_ids[-1])]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("came back: ")]
    assert line.startswith(f"came back: op.add [gpu dynamic]: {said}") and line.endswith(back)
    code, doc = _gate(url, run_ids[-1], capsys)
    (d,) = doc["decisions"]
    assert code == 0 and d["verdict"] == "pass" and d["reverted_at_run"] == run_ids[28]
    assert d["revert"].startswith(said) and d["revert"].endswith(back)
    md = _md(url, run_ids[-1], capsys)
    section = md.split("### Environment changes and levels that came back")[1].split("###")[0]
    assert f"- `op.add` (gpu, dynamic): {said}" in section and back in section
