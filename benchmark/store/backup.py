"""`benchmark db backup OUT`: a consistent copy of a SQLite history in one file.

SQLite's online backup API copies the committed state of the history as one reader sees it, so a
backup taken while another process is writing (even with a write transaction open) holds every
committed row and nothing half-written. The copy is written next to OUT under a temporary name,
switched out of WAL mode (journal_mode DELETE: no -wal or -shm file belongs to it), checked
(`PRAGMA quick_check`), and only then renamed to OUT, so OUT is either the old file or a complete
new one. A PostgreSQL history is backed up with the server's own tools (pg_dump).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL

from benchmark.store.engine import (
    StoreError,
    connect_readonly,
    parse_url,
    preflight_sqlite,
    shown,
    sqlite_path,
)

# Files SQLite keeps beside a database; a stale one beside OUT could be read back into the new copy.
SIDE_FILES = ("-wal", "-shm", "-journal")


@dataclass(frozen=True)
class BackupOutcome:
    source: str  # the history's URL, password-free
    out: Path
    size: int  # bytes of the copy
    runs: int
    results: int


def backup_sqlite(url: str | URL, out: str | os.PathLike[str], *, force: bool = False) -> BackupOutcome:
    """Copy the SQLite history at `url` to the single file `out`; StoreError (one line) when the
    history is not a SQLite file, `out` exists and `force` is not given, or the copy fails."""
    parsed = parse_url(url)
    where = shown(parsed)
    if parsed.get_backend_name() != "sqlite":
        raise StoreError(
            f"{where}: `benchmark db backup` copies a SQLite history; back up a PostgreSQL history with "
            "pg_dump (e.g. `pg_dump --format=custom --file=history.dump DBNAME`)"
        )
    source = sqlite_path(parsed)
    if source is None:
        raise StoreError(f"{where}: an in-memory database has nothing to back up")
    if not preflight_sqlite(source, create=False, readonly=True, where=where):
        raise StoreError(f"{where}: {source} is empty: there is no history to back up")
    target = Path(out).expanduser().absolute()
    if target.exists() and target.resolve() == source.resolve():
        raise StoreError(f"{target}: is the history itself; give another file")
    if target.is_dir():
        raise StoreError(f"{target}: is a directory; give the name of the backup file")
    if target.exists() and not force:
        raise StoreError(f"{target}: exists; nothing was written (use --force to replace it)")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise StoreError(f"{target}: cannot write there ({exc.strerror or exc})") from None
    os.close(fd)
    tmp = Path(tmp_name)
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o666 & ~umask)  # as an ordinary new file (mkstemp makes it private)
    try:
        runs, results = _copy(source, tmp, where)
        if force:
            for suffix in SIDE_FILES:
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{target}{suffix}").unlink()
        os.replace(tmp, target)
    except OSError as exc:
        raise StoreError(f"{target}: cannot write there ({exc.strerror or exc})") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return BackupOutcome(where, target, target.stat().st_size, runs, results)


def _copy(source: Path, tmp: Path, where: str) -> tuple[int, int]:
    """Back up `source` into the (empty) file `tmp` in one step; (runs, results) in the copy."""
    try:
        src = connect_readonly(source)
    except sqlite3.Error as exc:
        raise StoreError(f"{where}: cannot read {source} ({' '.join(str(exc).split())})") from None
    try:
        dst = sqlite3.connect(tmp)
        try:
            src.backup(dst)  # all pages in one step: one consistent snapshot of the source
            dst.execute("PRAGMA journal_mode = DELETE")  # the copy is one file
            check = dst.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise StoreError(
                    f"{where}: the copy failed its integrity check ({check}); nothing was written"
                )
            return _count(dst, "run"), _count(dst, "result")
        finally:
            dst.close()
    except sqlite3.Error as exc:
        raise StoreError(
            f"{where}: backup failed ({' '.join(str(exc).split())}); nothing was written"
        ) from None
    finally:
        src.close()


def _count(conn: sqlite3.Connection, table: str) -> int:
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # noqa: S608 - fixed names
    except sqlite3.OperationalError:  # not a benchmark history (or an empty one): a copy all the same
        return 0
