"""Side jobs stay out of the suite's views (issue 45): the runs of `benchmark compare`, `bisect` and
`night` are series of their own (a suffixed machine fingerprint); `Store.series`, `Store.history`,
`benchmark history` and the dashboard's series table show the suite's runs only, and the
dashboard lists the side jobs' runs in a "Jobs" section of their own."""

from __future__ import annotations

import time

from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.run import job_of
from benchmark.report.html import build_dashboard
from benchmark.store import open_store
from tests.test_store_cli import run_cli


def _history(url, machine, make_result) -> dict[str, int]:
    """Two suite runs, a compare run (side A), a bisect run and a night of the same case; their run ids."""
    ids = {}
    with open_store(url) as store:
        for i, (name, trigger, suffix) in enumerate(
            [("suite1", "local", ""), ("suite2", "nightly", ""), ("compare", "compare", "/compare-A"),
             ("bisect", "bisect", "/bisect"), ("night", "night", "/night")]
        ):  # fmt: skip
            m = {**machine, "fingerprint": machine["fingerprint"] + suffix}
            run = {"started_at": time.time() - 100 + i, "trigger": trigger}
            run_id = store.begin_run(MachineDescription.of(m), RunDescription.of(run))
            store.add_result(run_id, make_result("op.abs[64]", samples=[(1 + i / 10) * 1e-3] * 6))
            store.finish_run(run_id)
            ids[name] = run_id
    return ids


def test_the_reader_returns_the_suite_series_unless_asked_for_a_job(sqlite_url, machine, make_result):
    ids = _history(sqlite_url, machine, make_result)
    with open_store(sqlite_url, create=False, readonly=True) as store:
        (suite,) = store.series(["abs"])
        assert suite.run_ids == [ids["suite1"], ids["suite2"]] and suite.job == "suite"
        (compare,) = store.series(["abs"], job="compare")
        assert compare.run_ids == [ids["compare"]] and compare.machine.endswith("/compare-A")
        assert compare.job == "compare"
        assert {p.job for p in store.history("abs", job=None)} == {"suite", "compare", "bisect", "night"}
        assert store.latest_run_id(suite=True) == ids["suite2"]  # what a view judges by default
        assert [r.id for r in store.runs(None, jobs=["compare", "bisect"])] == [ids["bisect"], ids["compare"]]
    assert [job_of(t) for t in ("local", "ci", "import", None, "compare", "night")] == [
        "suite", "suite", "suite", "suite", "compare", "night",
    ]  # fmt: skip


def test_benchmark_history_leaves_side_jobs_out_unless_asked(sqlite_url, machine, make_result, capsys):
    ids = _history(sqlite_url, machine, make_result)
    assert run_cli("history", "abs", "--db", sqlite_url) == 0
    shown = [int(line.split()[0]) for line in capsys.readouterr().out.splitlines()[1:]]
    assert shown == [ids["suite1"], ids["suite2"]]
    assert run_cli("history", "abs", "--job", "compare", "--db", sqlite_url) == 0
    shown = [int(line.split()[0]) for line in capsys.readouterr().out.splitlines()[1:]]
    assert shown == [ids["compare"]]
    assert run_cli("history", "abs", "--job", "all", "--db", sqlite_url) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 5


def test_the_dashboard_lists_side_jobs_apart_from_the_suite_table(sqlite_url, machine, make_result, tmp_path):
    ids = _history(sqlite_url, machine, make_result)
    with open_store(sqlite_url, create=False, readonly=True) as store:
        board = build_dashboard(store, tmp_path / "dash", plots_enabled=False, workers=1, progress=False)
    assert [en.series.machine for en in board.entries] == [machine["fingerprint"]]
    html = (tmp_path / "dash" / "index.html").read_text(encoding="utf-8")
    table, _, jobs = html.partition('<section id="jobs">')
    assert "compare-A" not in table and "/bisect" not in table and "/night" not in table
    assert "<h3>compare</h3>" in jobs and "<h3>bisect</h3>" in jobs and "<h3>night</h3>" in jobs
    assert f"<td>{ids['compare']}</td>" in jobs and "compare-A" in jobs


def test_the_dashboard_of_a_side_job_run_shows_that_jobs_series(sqlite_url, machine, make_result, tmp_path):
    """`benchmark report --format html --run ID` of a night opens on the night, with the nights' series."""
    ids = _history(sqlite_url, machine, make_result)
    with open_store(sqlite_url, create=False, readonly=True) as store:
        board = build_dashboard(
            store, tmp_path / "dash", run_id=ids["night"], plots_enabled=False, workers=1, progress=False
        )
    assert board.run_id == ids["night"]
    assert [en.series.machine for en in board.entries] == [machine["fingerprint"] + "/night"]
