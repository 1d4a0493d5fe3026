"""Alembic environment of the history store.

Configured programmatically by `benchmark.store.migrate` (no alembic.ini): the caller passes an open
SQLAlchemy connection in `config.attributes["connection"]`, or a URL as `sqlalchemy.url`.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from benchmark.store.tables import Base

config = context.config
target_metadata = Base.metadata


def _configure(**kwargs) -> None:
    context.configure(
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
        # SQLite runs DDL in transactions too (the store's engine emits BEGIN itself).
        transactional_ddl=True,
        **kwargs,
    )


def run_migrations_offline() -> None:
    _configure(url=config.get_main_option("sqlalchemy.url"), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def _run_with(connection) -> None:
    _configure(connection=connection)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run_with(connection)
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url"), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run_with(connection)
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
