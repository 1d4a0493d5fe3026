"""`benchmark runs|history|export|import|db`, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import textwrap
import time

import pytest

from benchmark import cli
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.store import head_revision, open_store

PASSWORD = "hunter2-secret"


def run_cli(*argv: str) -> int:
    """Run one of this module's commands the way `benchmark` does (parser + func)."""
    args = cli.build_parser().parse_args(list(argv))
    return args.func(args)


@pytest.fixture
def history(db_url, machine, make_result):
    """A history with three runs of two cases; returns (url, run ids)."""
    run_ids = []
    with open_store(db_url) as store:
        for i in range(3):
            run = {"started_at": time.time() - 100 + i, "git_commit": f"{i}" * 40, "git_branch": "develop",
                   "trigger": "nightly", "hostname": "elsewhere", "pid": 1}  # fmt: skip
            run_id = store.begin_run(MachineDescription.of(machine), RunDescription.of(run))
            store.add_result(run_id, make_result("op.matmul[64x64]", samples=[(1 + i / 10) * 1e-3] * 6))
            store.add_result(run_id, make_result("op.matmul[64x64]", place="gpu:0", samples=[2e-5] * 6))
            store.add_result(run_id, make_result("op.conv", samples=[], status="skipped", message="no CUDA"))
            store.finish_run(run_id)
            run_ids.append(run_id)
    return db_url, run_ids


@pytest.mark.parametrize(
    "argv",
    [
        ["runs"],
        ["history"],
        ["export"],
        ["import"],
        ["db"],
        ["db", "upgrade"],
        ["db", "current"],
        ["db", "init"],
    ],
)
def test_every_command_has_help(argv, capsys):
    with pytest.raises(SystemExit) as info:
        run_cli(*argv, "--help")
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "usage: benchmark" in out
    assert len(out.splitlines()) > 3


def test_runs_lists_runs(history, capsys):
    url, run_ids = history
    assert run_cli("runs", "--db", url) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "ID",
        "STARTED",
        "TOOK",
        "COMMIT",
        "BRANCH",
        "MACHINE",
        "PLACES",
        "OK/RAN",
        "SKIPPED",
        "STATUS",
        "TRIGGER",
        "PROBE",
    ]
    assert [int(line.split()[0]) for line in lines[1:]] == run_ids[::-1]
    assert all(line.split()[-1] == "-" for line in lines[1:])  # no probe in these results
    assert "2" * 10 in lines[1] and "complete" in lines[1]
    # the case skipped on a place without a result counts apart, and that place is not listed
    assert lines[1].split()[8:11] == ["cpu,gpu:0", "2/2", "1"]
    assert run_cli("runs", "--db", url, "--last", "1") == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_runs_on_an_empty_history(db_url, capsys):
    open_store(db_url).close()
    assert run_cli("runs", "--db", db_url) == 0
    assert "no runs" in capsys.readouterr().out


def test_history_prints_a_series_over_time(history, capsys):
    url, run_ids = history
    assert run_cli("history", "matmul", "--place", "cpu", "--db", url) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "MEDIAN" in lines[0]
    assert [int(line.split()[0]) for line in lines[1:]] == run_ids
    assert "1.000 ms" in lines[1] and "1.200 ms" in lines[3]
    assert run_cli("history", "op.*", "--last", "1", "--db", url) == 0
    out = capsys.readouterr().out
    assert "20.00 µs" in out and "skipped: no CUDA" in out
    assert len(out.splitlines()) == 1 + 3
    assert run_cli("history", "nothing", "--db", url) == 2  # not found: exit 2, as plot and export
    captured = capsys.readouterr()
    assert captured.out == "" and "no results match 'nothing'" in captured.err


def test_export_csv(history, capsys):
    url, run_ids = history
    assert run_cli("export", "--format", "csv", "--db", url) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["case_id"] for r in rows] == ["op.matmul[64x64]", "op.matmul[64x64]", "op.conv"]
    assert {r["run_id"] for r in rows} == {str(run_ids[-1])}
    assert json.loads(rows[0]["samples"]) == [1.2e-3] * 6
    assert float(rows[0]["median"]) == pytest.approx(1.2e-3)
    assert rows[2]["status"] == "skipped" and rows[2]["median"] == ""


def test_export_json_and_import_round_trip(history, tmp_path, sqlite_url, capsys):
    url, run_ids = history
    out = tmp_path / "run.json"
    assert (
        run_cli("export", "--run", str(run_ids[0]), "--format", "json", "--out", str(out), "--db", url) == 0
    )
    doc = json.loads(out.read_text())
    assert doc["format"] == "benchmark-history/1"
    assert doc["run"]["id"] == run_ids[0]
    assert doc["machine"]["fingerprint"] == "machine-a"
    assert len(doc["results"]) == 3
    # each result is the stored CaseResult's to_dict(), its store ids first and metric after mode
    assert list(doc["results"][0])[:9] == [
        "result_id", "run_id", "case_id", "name", "kind", "place", "mode", "metric", "config",
    ]  # fmt: skip
    assert doc["results"][0]["run_id"] == run_ids[0] and isinstance(doc["results"][0]["result_id"], int)

    pb = tmp_path / "pytest-benchmark.json"
    assert run_cli("export", "--format", "json", "--pytest-benchmark", "--out", str(pb), "--db", url) == 0
    exported = json.loads(pb.read_text())
    assert set(exported) >= {"machine_info", "commit_info", "benchmarks", "datetime", "version"}
    assert exported["commit_info"]["id"] == "2" * 40
    bench = exported["benchmarks"][0]
    assert bench["fullname"] == "op.matmul[64x64]"
    assert bench["stats"]["data"] == [1.2e-3] * 6
    assert set(bench["stats"]) >= {
        "min",
        "max",
        "mean",
        "stddev",
        "rounds",
        "median",
        "iqr",
        "q1",
        "q3",
        "ops",
    }
    assert len(exported["benchmarks"]) == 2  # the skipped case has no numbers to export

    target = f"{sqlite_url[: -len('.sqlite')]}-imported.sqlite"
    capsys.readouterr()
    assert run_cli("import", str(pb), "--db", target) == 0
    assert "2 results" in capsys.readouterr().out
    with open_store(url) as source, open_store(target) as copy:
        original = [r for r in source.results(run_ids[-1]) if r.status == "ok"]
        (run,) = copy.runs()
        imported = copy.results(run.id)
        # An import is kept apart from the live series of the machine it names, and is no baseline.
        assert run.machine == "machine-a+imported"
        assert run.import_source == "pytest-benchmark.json" and len(run.import_sha256) == 64
        assert run.baseline is False
        assert run.git_commit == "2" * 40
        assert run.status == "complete"
    strip = ("result_id", "run_id", "started_at", "finished_at")
    assert [{k: v for k, v in r.to_dict().items() if k not in strip} for r in imported] == [
        {k: v for k, v in r.to_dict().items() if k not in strip} for r in original
    ]
    assert run_cli("import", str(pb), "--db", target) == 0
    assert "already imported" in capsys.readouterr().out
    # With --keep-machine the file's own machine comes back too (still not a baseline).
    kept = f"{sqlite_url[: -len('.sqlite')]}-kept.sqlite"
    assert run_cli("import", str(pb), "--keep-machine", "--db", kept) == 0
    with open_store(kept) as copy:
        (run,) = copy.runs()
        assert run.machine == "machine-a" and run.baseline is False
        assert [{k: v for k, v in r.to_dict().items() if k not in strip} for r in copy.results(run.id)] == [
            {k: v for k, v in r.to_dict().items() if k not in strip} for r in original
        ]


TINY_BENCHMARKS = textwrap.dedent(
    """
    import pytest

    @pytest.mark.parametrize("n", [10, 1000])
    def test_sum(benchmark, n):
        benchmark(sum, range(n))

    def test_sorted(benchmark):
        benchmark.extra_info["note"] = "measured"
        benchmark(sorted, list(range(100, 0, -1)))
    """
)


@pytest.mark.slow
def test_import_a_real_pytest_benchmark_file(db_url, tmp_path, capsys):
    (tmp_path / "test_tiny.py").write_text(TINY_BENCHMARKS)
    out = tmp_path / "out.json"
    command = [
        sys.executable, "-m", "pytest", "test_tiny.py", "-q", "-p", "no:cacheprovider", f"--benchmark-json={out}",
        "--benchmark-min-rounds=5", "--benchmark-max-time=0.02", "--benchmark-warmup=off", "--benchmark-disable-gc",
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    produced = json.loads(out.read_text())

    assert run_cli("import", str(out), "--db", db_url) == 0
    assert "3 results" in capsys.readouterr().out
    with open_store(db_url) as store:
        (run,) = store.runs()
        results = {r.case_id: r for r in store.results(run.id)}
    assert run.trigger == "import" and run.status == "complete"
    for bench in produced["benchmarks"]:
        stored = results[bench["fullname"]]
        assert stored.kind == "imported"
        assert stored.samples == bench["stats"]["data"]
        assert stored.stats.rounds == bench["stats"]["rounds"]
        assert stored.stats.median == pytest.approx(bench["stats"]["median"])
        assert stored.iterations == bench["stats"]["iterations"]
    sorted_case = results[next(b["fullname"] for b in produced["benchmarks"] if b["name"] == "test_sorted")]
    assert sorted_case.pytest_benchmark["extra_info"] == {"note": "measured"}
    assert run_cli("history", "test_sum", "--db", db_url) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 2


def test_db_init_current_upgrade(db_url, capsys):
    url = db_url
    if url.startswith("sqlite"):
        assert run_cli("db", "current", "--db", url) == 2
        assert "no history" in capsys.readouterr().err
    assert run_cli("db", "init", "--db", url) == 0
    assert head_revision() in capsys.readouterr().out
    assert run_cli("db", "current", "--db", url) == 0
    assert f"revision {head_revision()} (current)" in capsys.readouterr().out
    assert run_cli("db", "upgrade", "--db", url) == 0
    assert "already at revision" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["runs", "--db", f"postgresql+psycopg://u:{PASSWORD}@127.0.0.1:1/x"],
        ["history", "x", "--db", f"mysql://u:{PASSWORD}@localhost/x"],
        ["export", "--format", "csv", "--db", f"postgresql://u:{PASSWORD}@127.0.0.1:1/x"],
        ["import", "nothing.json", "--db", f"postgresql://u:{PASSWORD}@127.0.0.1:1/x"],
        ["db", "upgrade", "--db", f"postgresql://u:{PASSWORD}@127.0.0.1:1/x"],
        ["db", "current", "--db", "::not a url::"],
    ],
)
def test_errors_are_one_line_on_stderr_with_exit_2_and_no_password(argv, capsys):
    assert run_cli(*argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1
    assert captured.err.startswith("benchmark ")
    assert PASSWORD not in captured.err


def test_export_and_import_errors(history, tmp_path, capsys):
    url, _ = history
    assert run_cli("export", "--run", "999", "--format", "json", "--db", url) == 2
    assert "no run 999" in capsys.readouterr().err
    assert run_cli("export", "--run", "abc", "--format", "json", "--db", url) == 2
    assert "run id or 'latest'" in capsys.readouterr().err
    assert run_cli("export", "--format", "csv", "--pytest-benchmark", "--db", url) == 2
    assert "needs --format json" in capsys.readouterr().err
    assert run_cli("import", str(tmp_path / "missing.json"), "--db", url) == 2
    assert "missing.json" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text('{"hello": 1}')
    assert run_cli("import", str(tmp_path / "bad.json"), "--db", url) == 2
    assert "not a pytest-benchmark JSON file" in capsys.readouterr().err


def test_export_a_run_group_as_one(db_url, machine, make_result, capsys):
    with open_store(db_url) as store:
        shards = []
        for i, case in enumerate(("op.a", "op.b")):
            run = {"started_at": time.time() - 10 + i, "trigger": "nightly", "run_group": "nightly-1"}
            run_id = store.begin_run(MachineDescription.of(machine), RunDescription.of(run))
            store.add_result(run_id, make_result(case))
            store.finish_run(run_id)
            shards.append(run_id)
        other = store.begin_run(
            MachineDescription.of(machine), RunDescription.of({"started_at": time.time(), "trigger": "local"})
        )
        store.add_result(other, make_result("op.c"))
        store.finish_run(other)
    assert run_cli("export", "--run-group", "nightly-1", "--format", "csv", "--db", db_url) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["run_id"], r["case_id"]) for r in rows] == [(str(shards[0]), "op.a"), (str(shards[1]), "op.b")]
    assert (
        run_cli("export", "--run", str(other), "--run-group", "nightly-1", "--format", "csv", "--db", db_url)
        == 2
    )
    assert "not both" in capsys.readouterr().err
    assert run_cli("export", "--run-group", "nope", "--format", "csv", "--db", db_url) == 2
    assert "no runs of group 'nope'" in capsys.readouterr().err
