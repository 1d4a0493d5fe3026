"""Where a run came from: an imported run names its file and digest, and is no baseline by default.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05

Adds to `run`: `import_source` (the file an imported run was read from; NULL for a run measured by
the harness), `import_sha256` (that file's digest) and `baseline` (whether the run's results may be
the baseline of later runs; true for measured runs). Runs imported before this revision (trigger
`import`, with the file's digest in `extra`) get their file and digest copied into the new columns
and `baseline` false: an import is judged against, never judged by, unless the user imports it
with `--as-baseline`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTER TABLE ADD COLUMN (SQLite has it for these): a batch copy of `run` would trip the
    # foreign keys of the results that point at it.
    op.add_column("run", sa.Column("import_source", sa.String(255), nullable=True))
    op.add_column("run", sa.Column("import_sha256", sa.String(64), nullable=True))
    op.add_column("run", sa.Column("baseline", sa.Boolean(), nullable=False, server_default=sa.true()))
    run = sa.table(
        "run",
        sa.column("id", sa.Integer()),
        sa.column("trigger", sa.String()),
        sa.column("extra", sa.JSON()),
        sa.column("import_source", sa.String()),
        sa.column("import_sha256", sa.String()),
        sa.column("baseline", sa.Boolean()),
    )
    conn = op.get_bind()
    imported = conn.execute(sa.select(run.c.id, run.c.extra).where(run.c.trigger == "import")).all()
    for run_id, extra in imported:
        extra = extra or {}
        conn.execute(
            sa.update(run)
            .where(run.c.id == run_id)
            .values(
                import_source=str(extra.get("import_file") or "unknown")[:255],
                import_sha256=extra.get("import_sha256"),
                baseline=False,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("run") as batch:
        batch.drop_column("baseline")
        batch.drop_column("import_sha256")
        batch.drop_column("import_source")
