"""`benchmark report --format md` and `judged_rows` on a real SQLite history built through the store API.

The history: 6 cases x 12 runs on one machine, 15 raw samples per result with 1% noise; in the last
run one case is really 20% slower, one errors, one is skipped and one is new; a fifth case stepped up
20% over the last two runs (the A/B against the previous run sees nothing, the online history
detector does).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from synthetic import result_from_samples

from benchmark.cli import main
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.verdict import Verdict
from benchmark.report import markdown
from benchmark.report.run_rows import gate_passed, judged_rows, tally
from benchmark.store import open_store

DAY = 86400.0
MACHINE = {"hostname": "md-host", "cpu_model": "test", "fingerprint": "mdmachine000001"}
RUNS, ROUNDS = 12, 15
LEVELS = {
    "ops.matmul[m=512]": 800e-6,
    "ops.add[n=1024]": 20e-6,
    "ops.relu[n=64]": 5e-6,
    "ops.step[n=8]": 40e-6,
    "ops.crash[n=1]": 1e-3,
    "ops.cuda_only[n=1]": 2e-3,
}
SLOW, STEP, CRASH, SKIP, NEW = (
    "ops.matmul[m=512]",
    "ops.step[n=8]",
    "ops.crash[n=1]",
    "ops.cuda_only[n=1]",
    "ops.new[n=1]",
)
WEIRD = "ops.pipe|and`tick`<b>bold</b>"


def _result(case_id: str, level: float, rng, status: str = "ok", message: str | None = None) -> CaseResult:
    samples = level * np.exp(rng.normal(0, 0.01, ROUNDS)) if status == "ok" else []
    return result_from_samples(case_id, samples, status=status, message=message)


def _run_results(r: int, rng) -> list[CaseResult]:
    last = r == RUNS - 1
    out = []
    for case_id, level in LEVELS.items():
        if case_id == SLOW and last:
            level *= 1.20
        if case_id == STEP and r >= RUNS - 2:
            level *= 1.20
        if case_id == CRASH and last:
            out.append(_result(case_id, level, rng, "error", "RuntimeError: illegal memory access | <oops>"))
            continue
        if case_id == SKIP and last:
            out.append(_result(case_id, level, rng, "skipped", "needs a CUDA place"))
            continue
        out.append(_result(case_id, level * float(np.exp(rng.normal(0, 0.002))), rng))
    out.append(_result(WEIRD, 1e-4, rng))
    if last:
        out.append(_result(NEW, 1e-4, rng))
    return out


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    path = tmp_path_factory.mktemp("md") / "history.sqlite"
    url = f"sqlite:///{path}"
    rng = np.random.default_rng(11)
    with open_store(url) as st:
        for r in range(RUNS):
            run_id = st.begin_run(MachineDescription.of(MACHINE), RunDescription.of({"started_at": 1.70e9 + r * DAY, "git_commit": f"{r:02d}" + "ab" * 19,
                                            "git_branch": "develop"}))  # fmt: skip
            st.add_results(run_id, _run_results(r, rng))
            st.finish_run(run_id)
    store = open_store(url, create=False, readonly=True)
    yield url, store
    store.close()


def _rows(store, baseline=None):
    return {r.case_id: r for r in judged_rows(store, store.latest_run_id(), baseline, min_effect=0.05)}


def test_ab_against_the_previous_run_finds_the_injected_slowdown_and_nothing_else(history):
    _, store = history
    rows = _rows(store, baseline=store.latest_run_id() - 1)
    assert rows[SLOW].verdict == Verdict.REGRESSION
    assert rows[SLOW].ratio == pytest.approx(1.20, abs=0.03)
    assert rows[SLOW].ci_low > 1.05 and rows[SLOW].ci_high < 1.35
    assert rows[SLOW].baseline_run_id == RUNS - 1 and rows[SLOW].baseline_commit.startswith(f"{RUNS - 2:02d}")
    assert rows[SLOW].p_value < 0.01 and rows[SLOW].q_value < 0.01
    assert rows[CRASH].verdict == "error" and "illegal memory access" in rows[CRASH].message
    assert rows[SKIP].verdict == "skipped"
    assert rows[NEW].verdict == "new"
    for case_id in ("ops.add[n=1024]", "ops.relu[n=64]", STEP, WEIRD):
        assert rows[case_id].verdict in (Verdict.PASS, Verdict.INCONCLUSIVE), (case_id, rows[case_id].reason)
    assert not gate_passed(rows.values())


def test_history_gate_flags_the_two_run_step_and_not_the_one_run_spike(history):
    _, store = history
    rows = _rows(store)
    assert rows[STEP].verdict == Verdict.REGRESSION
    assert rows[SLOW].verdict in (Verdict.PASS, Verdict.INCONCLUSIVE), (
        "one run is not yet a regression (persistence)"
    )
    assert rows[SLOW].history is None
    assert rows[STEP].history == "regression"
    assert rows[STEP].history_magnitude == pytest.approx(0.20, abs=0.04)
    assert rows[STEP].history_change_run_id == RUNS - 1  # the new level starts at run 11 (ids are 1-based)
    assert rows["ops.add[n=1024]"].history is None


def test_counts(history):
    _, store = history
    c = tally(_rows(store).values())
    assert c["cases"] == len(LEVELS) + 2
    assert (c["regressions"], c["improvements"], c["errors"], c["skipped"], c["new"]) == (1, 0, 1, 1, 1)
    assert c["inconclusive"] + c["pass"] == 4  # add, relu, the one-run spike, the weird one
    assert c["history_alerts"] == 1


def _md_table(text: str, heading: str) -> list[list[str]]:
    """The body rows of the first table after `heading`, split into cells (escaped pipes kept)."""
    block = text.split(heading, 1)[1].split("\n### ", 1)[0]
    lines = [ln for ln in block.splitlines() if ln.startswith("|")][2:]
    return [[c.strip() for c in ln.replace("\\|", "\0").strip("|").split("|")] for ln in lines]


def test_markdown_report_counts_table_and_gate(history):
    _, store = history
    run_id = store.latest_run_id()
    rows = judged_rows(store, run_id, min_effect=0.05)
    text = markdown.render(store.run(run_id), rows, plots="`results/report/`", db=store.display_url)
    assert f"## Benchmark report: run {run_id}" in text
    assert "**Gate: FAIL** (1 regression(s), 1 error(s)" in text
    (counts_row,) = _md_table(text, "**Gate:")
    assert counts_row == [str(len(LEVELS) + 2), "1", "0", counts_row[3], counts_row[4], "1", "1", "1"]
    (reg,) = _md_table(text, "### Regressions (1)")
    assert reg[0] == f"`{STEP}`" and reg[1:3] == ["cpu", "dynamic"]
    assert reg[3].endswith(" µs") and reg[4].endswith(" µs")  # baseline / new median, as everywhere
    assert float(reg[4].split()[0]) / float(reg[3].split()[0]) == pytest.approx(1.2, abs=0.03)
    assert reg[5].startswith("+") and "(" in reg[5] and ".." in reg[5]  # effect with its interval
    assert reg[6].startswith("p=") and "q=" in reg[6]
    assert reg[7].startswith(f"run {run_id - 1} `{RUNS - 2:02d}")
    assert "### Improvements (0)\n\n_None._" in text
    (hist,) = _md_table(text, "### History")
    assert hist[0] == f"`{STEP}`" and hist[3] == "regression"
    (problem,) = _md_table(text, "### Errors (1)")
    assert problem[3] == "error"
    assert "### Plots\n\n`results/report/`" in text
    # the skipped case: a short section of its own, the last one (never the first screen)
    not_run = text.split("### Plots", 1)[1].split("### Not run on this machine: 1 case\n\n", 1)[1]
    assert not_run.startswith("- 1 CPU case: needs a CUDA place\n\n<details><summary>The cases (1)</summary>")
    assert f"`{SKIP}` (cpu, dynamic)" in not_run and "###" not in not_run


def test_markdown_escapes_user_text(history):
    _, store = history
    run_id = store.latest_run_id()
    rows = judged_rows(store, run_id)
    for row in rows:  # put the oddly named case in a table
        if row.case_id == WEIRD:
            row.verdict = Verdict.REGRESSION
    text = markdown.render(store.run(run_id), rows)
    outside_code = re.sub(r"(`+).*?\1|</?(details|summary)>", "", text)  # our own collapsible blocks aside
    assert "<" not in outside_code  # HTML only inside code spans, where Markdown shows it as text
    assert "&lt;oops&gt;" in text and "illegal memory access \\| " in text
    (weird,) = [cells for cells in _md_table(text, "### Regressions") if "pipe" in cells[0]]
    assert weird[0] == "``ops.pipe\0and`tick`<b>bold</b>``"  # one code span, its pipe escaped
    assert weird[1:3] == ["cpu", "dynamic"]
    assert markdown.code("a`b") == "``a`b``"
    assert markdown.text("*x* _y_ [z](u) #1") == "\\*x\\* \\_y\\_ \\[z\\](u) \\#1"


def test_cli_report_md(history, capsys, tmp_path):
    url, store = history
    rc = main(["report", "--format", "md", "--db", url, "--out", str(tmp_path / "md"), "--jobs", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "**Gate: FAIL**" in out and f"`{STEP}`" in out
    assert (tmp_path / "md" / "report.md").read_text() == out
    ab = tmp_path / "md" / f"ab-run{store.latest_run_id()}.png"
    assert ab.stat().st_size > 0
    assert list((tmp_path / "md").glob("*.trend.png"))  # the changed series' trend plots
    assert "ab-run" in out.split("### Plots", 1)[1]


def test_cli_report_md_against_an_explicit_baseline(history, capsys):
    url, store = history
    latest = store.latest_run_id()
    rc = main(["report", "--db", url, "--run", str(latest), "--baseline", str(latest - 3)])
    out = capsys.readouterr().out
    assert rc == 0
    assert f"Baseline: run **{latest - 3}**" in out
    assert "### History" not in out  # the history view belongs to the comparison with the history
    (reg, *rest) = _md_table(out, "### Regressions")
    assert {reg[0], *(r[0] for r in rest)} >= {f"`{SLOW}`"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--run", "999"], "there is no run 999"),
        (["--baseline", "999"], "there is no baseline run 999"),
    ],
)
def test_cli_report_errors_are_one_line_exit_2(history, capsys, argv, message):
    url, _ = history
    rc = main(["report", "--format", "md", "--db", url, *argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and message in err and err.startswith("benchmark report: ")


def test_cli_report_on_an_empty_history(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    open_store(url).close()
    rc = main(["report", "--db", url])
    err = capsys.readouterr().err
    assert rc == 2 and "has no runs yet" in err and err.count("\n") == 1
    rc = main(["report", "--db", f"sqlite:///{tmp_path / 'missing.sqlite'}"])
    assert rc == 2 and capsys.readouterr().err.count("\n") == 1


def test_cli_plot_a_run(history, capsys, tmp_path):
    url, store = history
    rc = main(
        [
            "plot",
            STEP,
            "--run",
            "latest",
            "--out",
            str(tmp_path / "p"),
            "--plot-format",
            "png",
            "--db",
            url,
            "--jobs",
            "1",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    names = sorted(p.name for p in (tmp_path / "p").iterdir())
    assert f"ab-run{store.latest_run_id()}.png" in names
    assert sum(n.endswith(".trend.png") for n in names) == 1
    rc = main(["plot", "nothing-matches", "--out", str(tmp_path / "q"), "--db", url])
    assert rc == 2 and "no series" in capsys.readouterr().err


def test_cli_help_describes_every_option(capsys):
    for command in ("plot", "report"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        help_text = capsys.readouterr().out
        for option in ("--run", "--out", "--db", "--jobs"):
            assert option in help_text
    import argparse

    import benchmark.commands.plot as plot_cmd
    import benchmark.commands.report as report_cmd

    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    report_cmd.register(subparsers)
    plot_cmd.register(subparsers)
    for sub in parser._subparsers._group_actions[0].choices.values():
        for action in sub._actions:
            assert action.help, (sub.prog, action.dest)


def test_a_case_is_selected_by_glob_or_substring_and_by_place():
    from benchmark.report.build import matches

    assert matches("ops.add[n=8]", "gpu:1", ["*add*"], "gpu") and matches(
        "ops.add[n=8]", "cpu", ["add"], None
    )
    assert not matches("ops.add[n=8]", "cpu", ["add*"], None)  # a glob matches the whole id
    assert not matches("ops.add[n=8]", "gpu:10", [], "gpu:1") and matches("ops.add[n=8]", "cpu", [], None)
