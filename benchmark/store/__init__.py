"""The history store: every run, result, raw sample and environment, in SQLite or PostgreSQL.

    store = open_store(url)                      # checks everything before a case is measured
    run_id = store.begin_run(MachineDescription.of(collect_machine()),
                             RunDescription.of(collect_run(framework_info)))
    store.add_result(run_id, case_result)        # committed at once
    store.finish_run(run_id, "complete")

URL precedence (`benchmark.paths.configured_db`): the explicit argument, then the environment
variable BENCHMARK_DB_URL, then `sqlite:///<project root>/results/history.sqlite`. `open_store` raises
`StoreError` (never showing a password) for an invalid URL, a missing driver, an unreachable server,
or a read-only or corrupt SQLite file, leaving the file untouched; and `SchemaOutdated` for a history
that needs `benchmark db upgrade`. A new, empty database is created at the newest schema revision.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import DBAPIError

from benchmark.paths import configured_db
from benchmark.store.core import Store
from benchmark.store.engine import (
    SchemaOutdated,
    StoreError,
    error_reason,
    make_engine,
    parse_url,
    preflight_sqlite,
    readonly_sqlite_engine,
    shown,
    sqlite_path,
)
from benchmark.store.migrate import SchemaState, head_revision, schema_state, upgrade

__all__ = [
    "SchemaOutdated",
    "SchemaState",
    "Store",
    "StoreError",
    "head_revision",
    "open_store",
    "schema_status",
    "upgrade_store",
]


def open_store(
    url: str | URL | None = None,
    *,
    create: bool = True,
    readonly: bool = False,
    project_root: str | os.PathLike[str] | None = None,
) -> Store:
    """Open (and with `create`, make) the history at `url`, checking it before returning.

    `readonly` skips the writability checks and never changes the database (for reports).
    """
    parsed, engine, state = _probe(url, create=create, readonly=readonly, project_root=project_root)
    where = shown(parsed)
    try:
        if state.kind == "empty":
            if not create or readonly:
                raise StoreError(
                    f"{where}: there is no benchmark history here (create one with `benchmark db init`)"
                )
            _create(engine, parsed)
        else:
            _require_current(state, where)
        return Store(engine, parsed, readonly=readonly)
    except BaseException:
        engine.dispose()
        raise


def schema_status(url: str | URL | None = None, *, project_root=None) -> tuple[str, SchemaState]:
    """(password-free URL, schema state) of an existing history; nothing is created or changed."""
    parsed, engine, state = _probe(url, create=False, readonly=True, project_root=project_root)
    engine.dispose()
    return shown(parsed), state


def upgrade_store(url: str | URL | None = None, *, project_root=None) -> tuple[str, str | None, str]:
    """Bring a history to the newest schema (creating an empty one); (URL shown, from, to revision)."""
    parsed, engine, state = _probe(url, create=True, readonly=False, project_root=project_root)
    where = shown(parsed)
    try:
        if state.kind in ("newer", "foreign"):
            _require_current(state, where)
        if state.kind == "empty":
            _create(engine, parsed)
        elif state.kind == "outdated":
            try:
                upgrade(engine)
            except DBAPIError as exc:
                raise StoreError(
                    f"{where}: upgrade failed, nothing was changed: {error_reason(exc, parsed)}"
                ) from None
        return where, state.revision, head_revision()
    finally:
        engine.dispose()


# ---------------------------------------------------------------------------------------------- helpers


def _probe(url, *, create: bool, readonly: bool, project_root) -> tuple[URL, Engine, SchemaState]:
    """Parse the URL, check the file or server, and read the schema state without writing anything."""
    parsed = parse_url(url if isinstance(url, URL) else configured_db(url, project_root))
    where = shown(parsed)
    state = None
    path = sqlite_path(parsed) if parsed.get_backend_name() == "sqlite" else None
    if path is not None:
        if preflight_sqlite(path, create=create, readonly=readonly, where=where):
            state = _sqlite_file_state(path, where)
        else:
            state = SchemaState("empty", None, head_revision())
            if create and not readonly:
                path.parent.mkdir(parents=True, exist_ok=True)
    engine = make_engine(parsed, readonly=readonly)
    if state is None:
        try:
            state = _server_state(engine, parsed)
        except BaseException:
            engine.dispose()
            raise
    return parsed, engine, state


def _sqlite_file_state(path: Path, where: str) -> SchemaState:
    engine = readonly_sqlite_engine(path)
    try:
        with engine.connect() as conn:
            return schema_state(conn)
    except DBAPIError as exc:
        raise StoreError(
            f"{where}: {path} is not a readable SQLite database ({error_reason(exc, None)})"
        ) from None
    finally:
        engine.dispose()


def _server_state(engine: Engine, url: URL) -> SchemaState:
    try:
        with engine.connect() as conn:
            return schema_state(conn)
    except DBAPIError as exc:
        raise StoreError(f"cannot connect to {shown(url)}: {error_reason(exc, url)}") from None


def _require_current(state: SchemaState, where: str) -> None:
    if state.kind == "current":
        return
    if state.kind == "outdated":
        raise SchemaOutdated(
            f"{where}: the history is at schema revision {state.revision}, this version needs "
            f"{state.head}; run `benchmark db upgrade --db {where}` (nothing was changed)"
        )
    if state.kind == "newer":
        raise StoreError(
            f"{where}: the history is at schema revision {state.revision}, newer than this version of "
            f"the harness knows ({state.head}); upgrade the harness"
        )
    raise StoreError(
        f"{where}: the database has tables named like a benchmark history's but no schema version"
    )


def _create(engine: Engine, url: URL) -> None:
    """Create the schema at the head revision; tolerate a concurrent process doing the same."""
    try:
        upgrade(engine)
    except DBAPIError as exc:
        state = _server_state(engine, url)
        if state.kind != "current":
            raise StoreError(f"{shown(url)}: cannot create the history: {error_reason(exc, url)}") from None
