"""A run's record tells the truth: expected results, run group, heartbeat lease, a note.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02

Adds only nullable columns and an index, so no existing row changes. Runs recorded before this
revision have no expected count, group or lease: they read as their recorded status (a `running`
run still turns `interrupted` when its process is gone or its heartbeat is an hour old). The new run
status `incomplete` needs no schema change (the status column is free text).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("run") as batch:
        batch.add_column(sa.Column("expected_results", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("run_group", sa.String(128), nullable=True))
        batch.add_column(sa.Column("heartbeat_s", sa.Double(), nullable=True))
        batch.add_column(sa.Column("note", sa.Text(), nullable=True))
        batch.create_index("ix_run_run_group", ["run_group"])


def downgrade() -> None:
    with op.batch_alter_table("run") as batch:
        batch.drop_index("ix_run_run_group")
        batch.drop_column("note")
        batch.drop_column("heartbeat_s")
        batch.drop_column("run_group")
        batch.drop_column("expected_results")
