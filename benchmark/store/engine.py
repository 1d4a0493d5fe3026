"""Database URLs and engines: parsing, password-safe messages, SQLite pre-flight checks, pragmas.

Everything that can go wrong when opening a history (invalid URL, missing driver, unreachable server,
read-only or corrupt SQLite file) surfaces here as one `StoreError` whose message never contains the
URL's password. SQLite files are inspected read-only before they are opened for writing, so a file that
is refused is left byte-for-byte untouched.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from benchmark.store.tables import json_serializer

SUPPORTED_BACKENDS = ("sqlite", "postgresql")
SQLITE_MAGIC = b"SQLite format 3\x00"
SQLITE_BUSY_TIMEOUT_S = 60.0
PG_CONNECT_TIMEOUT_S = 10
# How long a WAL checkpoint at the end of a run waits for other connections (see `checkpoint`).
CHECKPOINT_BUSY_MS = 2000
# Execution option that makes a SQLite transaction take the write lock at BEGIN (see `make_engine`).
IMMEDIATE = "benchmark_sqlite_immediate"


class StoreError(Exception):
    """The history cannot be opened or written; the message is for the user and holds no password."""


class SchemaOutdated(StoreError):
    """The history was written by an older version of the harness and needs `benchmark db upgrade`."""


# ------------------------------------------------------------------------------------------------ URLs


def parse_url(url: str | URL) -> URL:
    """Parse and normalise a database URL, or raise StoreError (password hidden)."""
    if isinstance(url, URL):
        parsed = url
    else:
        try:
            parsed = sa.make_url(str(url).strip())
        except ArgumentError:
            raise StoreError(f"invalid database URL {redact(str(url))!r}") from None
    backend = parsed.get_backend_name()
    if backend == "postgres" or parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in SUPPORTED_BACKENDS:
        raise StoreError(
            f"unsupported database {parsed.get_backend_name()!r} in {shown(parsed)}: "
            "use sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST/DB"
        )
    return parsed


def shown(url: URL) -> str:
    """The URL as it may be printed: password replaced by ***."""
    return url.render_as_string(hide_password=True)


def redact(text: str) -> str:
    """Hide anything that looks like a password in a URL-ish string that could not be parsed."""
    return re.sub(r"(://[^:/@\s]*:)[^@\s]*@", r"\1***@", text)


def scrub(text: str, url: URL | None) -> str:
    """Remove the URL's password from an error text, and squash it onto one line."""
    text = " ".join(str(text).split())
    if url is not None and url.password:
        text = text.replace(str(url.password), "***")
    return redact(text)


def error_reason(exc: BaseException, url: URL | None) -> str:
    """The driver's own message of a database error, without SQLAlchemy's boilerplate or a password."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).split("(Background on this error")[0]
    return scrub(text, url)


# ------------------------------------------------------------------------------------------------ SQLite


def sqlite_path(url: URL) -> Path | None:
    """The file of a SQLite URL, or None for an in-memory database."""
    database = url.database or ""
    if database in ("", ":memory:") or url.query.get("mode") == "memory":
        return None
    if database.startswith("file:"):
        database = database[len("file:") :].split("?", 1)[0]
    return Path(database).expanduser().absolute()


def preflight_sqlite(path: Path, *, create: bool, readonly: bool, where: str) -> bool:
    """Check a SQLite file without modifying it. Returns whether it already holds a database."""
    if path.exists():
        if not path.is_file():
            raise StoreError(f"{where}: {path} is not a file")
        if path.stat().st_size == 0:
            _check_writable(path, readonly, where)
            return False
        _check_magic(path, where)
        _check_writable(path, readonly, where)
        return True
    if not create:
        raise StoreError(f"{where}: there is no history at {path} (create one with `benchmark db init`)")
    parent = _existing_ancestor(path.parent)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StoreError(f"{where}: cannot create {path}: directory {parent} is not writable")
    return False


def _check_magic(path: Path, where: str) -> None:
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(f"{where}: cannot read {path}: {exc.strerror}") from None
    if head != SQLITE_MAGIC:
        raise StoreError(f"{where}: {path} is not a SQLite database (corrupt, or another kind of file)")


def _check_writable(path: Path, readonly: bool, where: str) -> None:
    if readonly:
        return
    mode = path.stat().st_mode
    # Root may write anything; a file without any write bit was still made read-only on purpose.
    if not os.access(path, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise StoreError(f"{where}: {path} is read-only (mode {stat.filemode(mode)}); nothing was written")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise StoreError(f"{where}: directory {path.parent} is not writable (SQLite needs its WAL files)")


def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def readonly_sqlite_engine(path: Path) -> Engine:
    """An engine that can only read the file (used to inspect it before opening it for writing)."""
    return sa.create_engine("sqlite://", creator=lambda: connect_readonly(path), poolclass=sa.pool.NullPool)


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection that needs no write access at all. A WAL-mode history normally needs
    to write its -shm file even to read; where the directory (or file system) is not writable, no
    process can be writing the file either, so it is opened as immutable."""
    uri = f"file:{quote(str(path))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT_S, check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
        if os.access(path.parent, os.W_OK) and os.access(path, os.W_OK):
            raise
    conn = sqlite3.connect(f"{uri}&immutable=1", uri=True, check_same_thread=False)
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return conn


def _sqlite_on_connect(readonly: bool):
    def on_connect(dbapi_connection, _record) -> None:
        # Let SQLAlchemy's "begin" event (below) emit BEGIN itself, so writes can BEGIN IMMEDIATE.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        if not readonly:
            cursor.execute("PRAGMA journal_mode = WAL")
            # In WAL mode NORMAL loses nothing on a process crash (SIGKILL), only on power loss.
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    return on_connect


def _sqlite_on_begin(conn) -> None:
    # A write transaction takes the lock up front: a deferred one that reads first would fail with
    # "database is locked" without waiting when another process commits in between.
    immediate = conn.get_execution_options().get(IMMEDIATE, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


# ------------------------------------------------------------------------------------------------ engines


def make_engine(url: URL, *, readonly: bool = False) -> Engine:
    """An engine for the URL with the store's settings (WAL and busy timeout on SQLite)."""
    where = shown(url)
    try:
        if url.get_backend_name() == "sqlite":
            path = sqlite_path(url)
            extra = {}
            if readonly and path is not None:  # readers need no write access (see connect_readonly)
                extra = {"creator": lambda: connect_readonly(path)}
            engine = sa.create_engine(
                url,
                json_serializer=json_serializer,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S},
                **extra,
            )
            event.listen(engine, "connect", _sqlite_on_connect(readonly))
            event.listen(engine, "begin", _sqlite_on_begin)
            return engine
        return sa.create_engine(
            url,
            json_serializer=json_serializer,
            connect_args={"connect_timeout": PG_CONNECT_TIMEOUT_S, "application_name": "benchmark"},
        )
    except (NoSuchModuleError, ImportError) as exc:
        raise StoreError(f"{where}: the database driver is not available ({scrub(str(exc), url)})") from None
    except ArgumentError as exc:
        raise StoreError(f"invalid database URL {where}: {scrub(str(exc), url)}") from None


def checkpoint(engine: Engine) -> tuple[int, int, int] | None:
    """Fold a SQLite history's write-ahead log into the main file and truncate the log
    (`PRAGMA wal_checkpoint(TRUNCATE)`), so that the file alone holds every committed row; None on
    other databases. Best effort: it waits at most CHECKPOINT_BUSY_MS for other connections, and
    where one is still reading or writing, SQLite copies what it can (busy = 1) and a later
    checkpoint finishes. Returns SQLite's (busy, log frames, frames checkpointed)."""
    if engine.dialect.name != "sqlite" or sqlite_path(engine.url) is None:
        return None
    try:
        raw = engine.raw_connection()
    except sa.exc.DBAPIError:
        return None
    try:
        cursor = raw.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {CHECKPOINT_BUSY_MS}")
        busy, log, done = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        cursor.close()
        return int(busy), int(log), int(done)
    except sqlite3.Error:
        return None
    finally:
        raw.close()


def sqlite_damage(engine: Engine) -> str | None:
    """None when the engine is not a SQLite file or its file passes `PRAGMA quick_check`; else what
    the check found, in one line (issue 44: a page-corrupted history must get no new run)."""
    if engine.dialect.name != "sqlite" or sqlite_path(engine.url) is None:
        return None
    try:
        with engine.connect() as conn:
            rows = [str(r[0]) for r in conn.exec_driver_sql("PRAGMA quick_check").fetchall()]
    except sa.exc.DBAPIError as exc:
        return " ".join(str(exc.orig or exc).split())[:300]
    return None if rows == ["ok"] else " ".join("; ".join(rows[:3]).split())[:300]


def writer(engine: Engine) -> Engine:
    """The same engine, with write transactions that lock at BEGIN on SQLite (ignored elsewhere)."""
    return engine.execution_options(**{IMMEDIATE: True})
