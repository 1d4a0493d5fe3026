"""The reference probe: its figure per worker-process trial and per run.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05

Adds `result_process.probe_s` (the reference probe's figure around the trial, seconds;
benchmark/execution/probe.py) and `run.probe_s` (the median over the run's trials, set when the run
is finished or imported). Both are NULL for what was stored before: no probe was timed then.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("result_process", sa.Column("probe_s", sa.Double(), nullable=True))
    op.add_column("run", sa.Column("probe_s", sa.Double(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("run") as batch:
        batch.drop_column("probe_s")
    with op.batch_alter_table("result_process") as batch:
        batch.drop_column("probe_s")
