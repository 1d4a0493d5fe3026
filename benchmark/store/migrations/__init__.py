"""Alembic migrations of the history store (revisions in versions/, applied by benchmark.store.migrate)."""
