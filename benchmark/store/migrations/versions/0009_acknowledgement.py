"""Acknowledged regressions: a user accepts a series' level from one run on.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07

Adds the `acknowledgement` table: the series, the run from which its level is accepted, who
acknowledged it, why and when (`benchmark ack`). A regression stands (fails every later run that
keeps it) until it is reverted or acknowledged; the judge reads an acknowledged series' history
from the acknowledged run on. Nothing stored before is changed.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "acknowledgement",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("series_id", sa.Integer(), sa.ForeignKey("series.id"), nullable=False),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("run.id"), nullable=False),
        sa.Column("by", sa.String(255), nullable=False),
        sa.Column("why", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_acknowledgement_series_id", "acknowledgement", ["series_id"])


def downgrade() -> None:
    op.drop_index("ix_acknowledgement_series_id", table_name="acknowledgement")
    op.drop_table("acknowledgement")
