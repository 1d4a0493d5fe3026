"""Opening the history on SQLite and PostgreSQL (URL precedence, clear errors that never show a
password, read-only and corrupt files left untouched) and real processes writing it (a SIGKILL mid
suite, two writers at once)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.paths import DB_URL_ENV, configured_db, default_db_url
from benchmark.store import StoreError, open_store

REPO = Path(__file__).resolve().parent.parent
PASSWORD = "s3cret-Pa55"


# ------------------------------------------------------------------------------------------- URLs and errors


def test_url_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv(DB_URL_ENV, raising=False)
    assert default_db_url(tmp_path) == f"sqlite:///{tmp_path.resolve()}/results/history.sqlite"
    assert configured_db(root=tmp_path) == default_db_url(tmp_path)
    monkeypatch.setenv(DB_URL_ENV, "sqlite:////env.sqlite")
    assert configured_db(root=tmp_path) == "sqlite:////env.sqlite"
    assert configured_db("sqlite:////explicit.sqlite", root=tmp_path) == "sqlite:////explicit.sqlite"


def test_the_default_history_is_created_under_results(monkeypatch, tmp_path):
    monkeypatch.delenv(DB_URL_ENV, raising=False)
    (tmp_path / "pyproject.toml").write_text("")
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    with open_store() as store:
        assert store.latest_run_id() is None
    assert (tmp_path / "results" / "history.sqlite").is_file()


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("not a url", "invalid database URL"),
        (f"mysql://root:{PASSWORD}@localhost/db", "unsupported database 'mysql'"),
        (f"postgresql+nosuchdriver://u:{PASSWORD}@localhost/db", "driver is not available"),
        (f"postgresql+psycopg://bench:{PASSWORD}@127.0.0.1:1/history", "cannot connect to"),
    ],
)
def test_bad_urls_give_one_clear_error_without_the_password(url, needle):
    with pytest.raises(StoreError) as info:
        open_store(url)
    message = str(info.value)
    assert needle in message
    assert PASSWORD not in message
    assert "\n" not in message


def test_a_wrong_password_is_reported_without_it(pg_url):
    import sqlalchemy as sa

    url = sa.make_url(pg_url).set(password=PASSWORD).render_as_string(hide_password=False)
    with pytest.raises(StoreError) as info:
        open_store(url)
    assert "cannot connect" in str(info.value)
    assert PASSWORD not in str(info.value)
    assert "***" in str(info.value)


def test_a_read_only_file_is_refused_and_left_untouched(sqlite_url, machine, make_result, tmp_path):
    with open_store(sqlite_url) as store:
        run_id = store.begin_run(
            MachineDescription.of(machine),
            RunDescription.of({"hostname": socket.gethostname(), "pid": os.getpid(), "trigger": "test"}),
        )
        store.add_result(run_id, make_result())
    path = tmp_path / "history.sqlite"
    before = path.read_bytes()
    path.chmod(0o444)
    try:
        with pytest.raises(StoreError, match="read-only"):
            open_store(sqlite_url)
        with open_store(sqlite_url, readonly=True) as store:  # reading it is fine
            assert len(store.runs()) == 1
    finally:
        path.chmod(0o644)
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "content",
    [b"this is not a database at all\n" * 100, b"SQLite format 3\x00" + b"\xff" * 4000],
    ids=["text", "bad-pages"],
)
def test_a_corrupt_file_is_refused_and_left_untouched(tmp_path, content):
    path = tmp_path / "history.sqlite"
    path.write_bytes(content)
    with pytest.raises(StoreError) as info:
        open_store(f"sqlite:///{path}")
    assert str(path) in str(info.value)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.sqlite"]


def test_a_missing_history_is_not_created_unless_asked(tmp_path):
    path = tmp_path / "none" / "history.sqlite"
    with pytest.raises(StoreError, match="no history"):
        open_store(f"sqlite:///{path}", create=False)
    assert not path.parent.exists()


def test_an_empty_server_database_is_not_created_unless_asked(pg_url):
    with pytest.raises(StoreError, match="db init"):
        open_store(pg_url, create=False)
    with open_store(pg_url) as store:
        assert store.runs() == []


def test_store_repr_and_messages_hide_the_password(pg_url):
    with open_store(pg_url) as store:
        assert "***" in repr(store)
        import sqlalchemy as sa

        assert sa.make_url(pg_url).password not in repr(store) + store.display_url


# ------------------------------------------------------------------------------------------- processes

WORKER = textwrap.dedent(
    """
    import os, socket, sys, time
    from benchmark.datamodel.environment import MachineDescription, RunDescription
    from benchmark.datamodel.result import CaseResult
    from benchmark.store import open_store

    url, prefix, count, delay, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    store = open_store(url)
    run_id = store.begin_run(
        MachineDescription.of({"fingerprint": "worker-machine", "hostname": socket.gethostname()}),
        RunDescription(hostname=socket.gethostname(), pid=os.getpid(), trigger="test"),
    )
    print("run", run_id, flush=True)
    while go != "-" and not os.path.exists(go):
        time.sleep(0.005)
    for i in range(count):
        samples = [1e-3 + i * 1e-6] * 5
        store.add_result(run_id, CaseResult.from_dict({
            "case_id": f"{prefix}.case{i}", "name": "case", "kind": "op", "place": "cpu",
            "mode": "dynamic", "config": {"i": i}, "config_hash": "h", "samples": samples,
            "stats": {"rounds": 5, "median": samples[0]},
        }))
        print("stored", i + 1, flush=True)
        time.sleep(delay)
    store.finish_run(run_id)
    print("done", flush=True)
    """
)


def start_worker(tmp_path, url, prefix, count, delay=0.0, go="-"):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, str(script), url, prefix, str(count), str(delay), str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.slow
def test_sigkill_mid_suite_keeps_every_committed_result_and_shows_interrupted(db_url, tmp_path):
    with open_store(db_url):
        pass
    proc = start_worker(tmp_path, db_url, "crash", count=10_000, delay=0.01)
    run_id = int(proc.stdout.readline().split()[1])
    stored = 0
    while stored < 8:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        stored = int(line.split()[1])
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()

    with open_store(db_url) as store:
        results = store.results(run_id)
        (run,) = [r for r in store.runs() if r.id == run_id]
    assert len(results) >= stored  # every result it reported as stored (and maybe one more)
    assert [r.case_id for r in results[:stored]] == [f"crash.case{i}" for i in range(stored)]
    assert run.status == "interrupted"
    assert run.recorded_status == "running"


@pytest.mark.slow
def test_two_processes_writing_at_once_both_store_everything(db_url, tmp_path):
    go = tmp_path / "go"
    count = 150
    # Both open the history at the same time: on SQLite the file does not exist yet.
    workers = [start_worker(tmp_path, db_url, "same", count, go=go) for _ in range(2)]
    run_ids = [int(w.stdout.readline().split()[1]) for w in workers]
    go.touch()
    for worker in workers:
        out, err = worker.communicate(timeout=180)
        assert worker.returncode == 0, err
        assert out.strip().endswith("done")
    with open_store(db_url) as store:
        for run_id in run_ids:
            results = store.results(run_id)
            assert len(results) == count
            assert {r.case_id for r in results} == {f"same.case{i}" for i in range(count)}
        assert all(r.status == "complete" for r in store.runs())
        # Both processes wrote the same cases: each case is one series with two results, not two series.
        rows = store.history("*.case1")
        assert len(rows) == 2
        assert len({r.series_id for r in rows}) == 1
