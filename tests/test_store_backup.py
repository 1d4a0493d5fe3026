"""A SQLite history is one file when it matters (issue 26, part 2): the write-ahead log is folded
into the main file when a run ends and when a writer closes, and `benchmark db backup OUT` writes a
consistent single-file copy, even while another process holds a write transaction open."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from suite_process import run_suite

from benchmark import cli
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.store import StoreError, open_store
from benchmark.store.backup import backup_sqlite


def result_keys(store, run_id):
    return sorted((r.case_id, r.place, r.mode, r.status, r.stats.median) for r in store.results(run_id))


def counts(path: Path) -> tuple[int, int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return (
            conn.execute("SELECT count(*) FROM run").fetchone()[0],
            conn.execute("SELECT count(*) FROM result").fetchone()[0],
        )
    finally:
        conn.close()


@pytest.mark.slow
def test_a_copy_of_the_main_file_alone_holds_every_result_of_a_suite_run(tmp_path):
    """A real suite run (smoke subset, --bench-quick); then only history.sqlite is copied (no -wal,
    no -shm) to a new directory, and that copy holds the complete run and every result of it."""
    db = tmp_path / "run" / "history.sqlite"
    summary = tmp_path / "run" / "summary.json"
    # As a user runs it, every installed plugin loaded: with some of them left out (this test
    # session's $PYTEST_ADDOPTS), the interpreter happened to close the connection at exit and hid
    # the WAL left behind.
    run_suite("--bench-tags", "smoke", "--bench-quick", "--bench-db", f"sqlite:///{db}",
              "--bench-json", str(summary), user_env=True)  # fmt: skip
    wal = Path(f"{db}-wal")
    print(f"main file {db.stat().st_size} bytes, -wal {wal.stat().st_size if wal.exists() else 0} bytes")
    expected = json.loads(summary.read_text())["results"]
    assert expected

    copy = tmp_path / "elsewhere" / "history.sqlite"
    copy.parent.mkdir()
    shutil.copyfile(db, copy)  # the main file only, as an artifact upload or a `cp` takes it
    assert not Path(f"{copy}-wal").exists()
    with open_store(f"sqlite:///{copy}", create=False, readonly=True) as store:
        (run,) = store.runs()
        assert run.status == "complete" and run.missing == 0
        stored = result_keys(store, run.id)
    assert stored == sorted(
        (r["case_id"], r["place"], r["mode"], r["status"], r["stats"].get("median")) for r in expected
    )


def test_finish_run_folds_the_wal_into_the_main_file_while_the_writer_stays_open(
    sqlite_url, tmp_path, machine, make_result
):
    path = Path(sqlite_url.removeprefix("sqlite:///"))
    store = open_store(sqlite_url)
    try:
        run_id = store.begin_run(
            MachineDescription.of(machine), RunDescription.of({"started_at": time.time()})
        )
        for i in range(50):
            store.add_result(run_id, make_result(f"op.case{i}", samples=[1e-3 * (1 + i / 100)] * 20))
        assert Path(f"{path}-wal").stat().st_size > 0  # the rows are in the log so far
        store.finish_run(run_id, "complete")
        assert Path(f"{path}-wal").stat().st_size == 0
        copy = tmp_path / "copy.sqlite"
        shutil.copyfile(path, copy)
        assert counts(copy) == (1, 50)
        # Writes after the end of a run (a note) are folded in when the writer closes.
        store.add_note(run_id, "a note written after the run ended")
    finally:
        store.close()
    shutil.copyfile(path, copy)
    with open_store(f"sqlite:///{copy}", create=False, readonly=True) as reader:
        assert reader.run(run_id).note == "a note written after the run ended"


def test_backup_is_one_consistent_file_while_another_process_holds_a_write_transaction(
    sqlite_url, tmp_path, machine, make_result
):
    path = Path(sqlite_url.removeprefix("sqlite:///"))
    with open_store(sqlite_url) as store:
        run_id = store.begin_run(
            MachineDescription.of(machine), RunDescription.of({"started_at": time.time()})
        )
        store.add_results(run_id, [make_result(f"op.c{i}", samples=[2e-3] * 10) for i in range(5)])
        store.finish_run(run_id, "complete")
    # Another process opens a write transaction, writes a run and a result into it, and waits.
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sqlite3, sys
            conn = sqlite3.connect({str(path)!r}, isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO run (machine_id, started_at, status, framework, env, trigger, tags, extra) "
                         "SELECT machine_id, started_at, 'running', '{{}}', '{{}}', 'local', '[]', '{{}}' FROM run")
            conn.execute("DELETE FROM result_process")
            conn.execute("UPDATE result SET median = -1")
            print("holding", flush=True)
            sys.stdin.readline()
            conn.execute("COMMIT")
            print("committed", flush=True)
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "holding"
        out = tmp_path / "backups" / "history-backup.sqlite"
        assert cli.main(["db", "backup", str(out), "--db", sqlite_url]) == 0
        # The copy is the committed state: the open transaction's run and its changes are not in it.
        assert counts(out) == (1, 5)
        conn = sqlite3.connect(out)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert conn.execute("SELECT count(*) FROM result WHERE median < 0").fetchone()[0] == 0
        finally:
            conn.close()
        assert sorted(p.name for p in out.parent.iterdir()) == [out.name]  # one file, no -wal, no temp
        with open_store(f"sqlite:///{out}", create=False, readonly=True) as copy:
            assert copy.run(run_id).status == "complete" and len(copy.results(run_id)) == 5
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "committed"
        holder.wait(timeout=60)
    # Once committed, a new backup (--force) holds the second run.
    assert cli.main(["db", "backup", str(out), "--force", "--db", sqlite_url]) == 0
    assert counts(out) == (2, 5)


def test_backup_refuses_to_overwrite_without_force_and_names_the_file(sqlite_url, tmp_path, machine, capsys):
    with open_store(sqlite_url) as store:
        store.finish_run(
            store.begin_run(MachineDescription.of(machine), RunDescription.of({"started_at": time.time()})),
            "complete",
        )
    out = tmp_path / "existing.sqlite"
    out.write_bytes(b"keep me")
    assert cli.main(["db", "backup", str(out), "--db", sqlite_url]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(out) in err and "--force" in err
    assert out.read_bytes() == b"keep me"
    # --force replaces it, and a stale -wal beside OUT (from another database) is not read back in.
    Path(f"{out}-wal").write_bytes(b"\0" * 4096)
    assert cli.main(["db", "backup", str(out), "--db", sqlite_url, "--force"]) == 0
    assert not Path(f"{out}-wal").exists()
    assert counts(out) == (1, 0)


def test_backup_of_the_history_onto_itself_or_a_directory_is_refused(sqlite_url, tmp_path, machine, capsys):
    with open_store(sqlite_url):
        pass
    path = sqlite_url.removeprefix("sqlite:///")
    assert cli.main(["db", "backup", path, "--force", "--db", sqlite_url]) == 2
    assert "is the history itself" in capsys.readouterr().err
    assert cli.main(["db", "backup", str(tmp_path), "--db", sqlite_url]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_backup_of_a_server_history_says_to_use_pg_dump_without_the_password(tmp_path, capsys):
    out = tmp_path / "b.sqlite"
    url = "postgresql://bench:s3cret-pw@db.example/history"
    assert cli.main(["db", "backup", str(out), "--db", url]) == 2
    err = capsys.readouterr().err
    assert "pg_dump" in err and "s3cret-pw" not in err and err.count("\n") == 1
    assert not out.exists()


def test_backup_of_a_missing_history_creates_nothing(tmp_path):
    with pytest.raises(StoreError, match="no history"):
        backup_sqlite(f"sqlite:///{tmp_path / 'none.sqlite'}", tmp_path / "out.sqlite")
    assert sorted(tmp_path.iterdir()) == []


def test_backup_help_names_the_command_and_its_options(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["db", "backup", "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "usage: benchmark db backup" in text and "OUT" in text and "--force" in text and "pg_dump" in text
