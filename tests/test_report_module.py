"""A new report is one module: `benchmark report --format NAME` runs `report(store, run_id, *,
baseline)` of benchmark/report/NAME.py or of a module NAME on the path, on a real SQLite history."""

from __future__ import annotations

import textwrap

import pytest

from benchmark.cli import main
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.result import CaseResult
from benchmark.store import open_store

MACHINE = {"hostname": "report-host", "cpu_model": "test", "fingerprint": "reportmachine001"}

MODULE = textwrap.dedent(
    '''
    """A report of its own: one line per result of the run."""


    def report(store, run_id, *, baseline=None):
        lines = [f"run {run_id} (baseline {baseline}):"]
        for r in store.results(run_id):
            lines.append(f"{r.case_id} {r.status} {sorted(r.samples)[len(r.samples) // 2]:.3g}")
        return "\\n".join(lines) + "\\n"
    '''
)


@pytest.fixture
def url(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    with open_store(url) as st:
        run_id = st.begin_run(MachineDescription.of(MACHINE), RunDescription.of({"started_at": 1.7e9}))
        results = [
            CaseResult(case_id=c, name=c, kind="op", place="cpu", mode="dynamic", config={"case": c},
                       config_hash=f"cfg-{c}", status="ok", samples=[v, v * 1.01, v * 0.99])
            for c, v in (("op_a", 2e-5), ("op_b", 3e-5))
        ]  # fmt: skip
        st.add_results(run_id, results)
        st.finish_run(run_id)
    return url


def test_a_report_module_on_the_path_is_a_format(url, tmp_path, monkeypatch, capsys):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "one_line_report.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    out = tmp_path / "out"
    assert main(["report", "--format", "one_line_report", "--db", url, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines() == ["run 1 (baseline None):", "op_a ok 2e-05", "op_b ok 3e-05"]
    assert (out / "report.txt").read_text() == text


def test_a_format_that_is_no_report_is_one_line_and_exit_2(url, capsys):
    assert main(["report", "--format", "no_such_report_xyz", "--db", url]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "benchmark/report/no_such_report_xyz.py" in err[0]
    assert main(["report", "--format", "plots", "--db", url]) == 2  # a module, but not a report
    assert "has no report(store, run_id, *, baseline) function" in capsys.readouterr().err
    assert main(["report", "--format", "../etc", "--db", url]) == 2
    assert "expected md, html or a report module's name" in capsys.readouterr().err
