"""Schema revisions: where a history stands, and upgrading it (alembic, configured in code).

The migration scripts ship inside the package (`benchmark/store/migrations/`), so no alembic.ini is
needed. `schema_state` classifies a database; `upgrade` applies the missing revisions in one
transaction (PostgreSQL and SQLite both have transactional DDL), so a failed upgrade changes nothing.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

# alembic reports each step at INFO; with a root logger at INFO (paddle sets one up on import) that
# would print migration chatter into every benchmark run. `benchmark db` commands print their own.
logging.getLogger("alembic").setLevel(logging.WARNING)

from alembic import command  # noqa: E402
from alembic.config import Config  # noqa: E402
from alembic.runtime.migration import MigrationContext  # noqa: E402
from alembic.script import ScriptDirectory  # noqa: E402
from sqlalchemy.engine import Connection, Engine  # noqa: E402

from benchmark.store.engine import writer  # noqa: E402
from benchmark.store.tables import Base  # noqa: E402

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "alembic_version"


@dataclass(frozen=True)
class SchemaState:
    """Where a database stands: `kind` is empty | current | outdated | newer | foreign."""

    kind: str
    revision: str | None
    head: str


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@functools.lru_cache(maxsize=1)
def script_directory() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    """The newest schema revision this version of the harness ships."""
    head = script_directory().get_current_head()
    if head is None:  # pragma: no cover - the migrations are part of the package
        raise RuntimeError("the store's migrations have no head revision")
    return head


def known_revisions() -> list[str]:
    """All revisions, oldest first."""
    return [rev.revision for rev in reversed(list(script_directory().walk_revisions()))]


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def schema_state(connection: Connection) -> SchemaState:
    """Classify the database behind `connection` (reads only)."""
    head = head_revision()
    tables = set(sa.inspect(connection).get_table_names())
    if VERSION_TABLE not in tables:
        ours = tables & set(Base.metadata.tables)
        return SchemaState("foreign" if ours else "empty", None, head)
    revision = current_revision(connection)
    if revision is None:
        return SchemaState("foreign" if tables & set(Base.metadata.tables) else "empty", None, head)
    if revision == head:
        return SchemaState("current", revision, head)
    if revision in known_revisions():
        return SchemaState("outdated", revision, head)
    return SchemaState("newer", revision, head)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply the missing revisions up to `revision` in one transaction (write-locked on SQLite)."""
    with writer(engine).connect() as connection, connection.begin():
        command.upgrade(alembic_config(connection), revision)
