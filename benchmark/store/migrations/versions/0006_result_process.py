"""Per-process trials of a result: the result_process table (issue 11).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03

A case is measured in several worker processes; each process's trial (its raw samples, its value
= the median of those samples, its pid, its position in the run's randomized trial order, its
status) is a row here. Adds a table only, so no existing row changes; results recorded before it
have no rows (they read with `processes == []`).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "result_process",
        sa.Column("id", BigId, primary_key=True),
        sa.Column("result_id", BigId, nullable=False),
        sa.Column("process_index", sa.Integer(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("trial_order", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("value", sa.Double(), nullable=True),
        sa.Column("iterations", sa.Integer(), nullable=False),
        sa.Column("samples", sa.LargeBinary(), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_result_process"),
        sa.ForeignKeyConstraint(["result_id"], ["result.id"], name="fk_result_process_result_id_result"),
    )
    op.create_index("ix_result_process_result_id", "result_process", ["result_id"])


def downgrade() -> None:
    op.drop_index("ix_result_process_result_id", table_name="result_process")
    op.drop_table("result_process")
