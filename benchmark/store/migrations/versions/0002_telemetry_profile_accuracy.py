"""result.accuracy, and the telemetry and profile tables.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02

Adds only (a nullable column and two tables), so no existing row changes.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("result") as batch:
        batch.add_column(sa.Column("accuracy", JSONType, nullable=True))
    op.create_table(
        "telemetry",
        sa.Column("id", BigId, primary_key=True),
        sa.Column("result_id", BigId, nullable=False),
        sa.Column("summary", JSONType, nullable=False),
        sa.Column("timeline", sa.LargeBinary(), nullable=True),
        sa.Column("timeline_format", sa.String(32), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_telemetry"),
        sa.ForeignKeyConstraint(["result_id"], ["result.id"], name="fk_telemetry_result_id_result"),
        sa.UniqueConstraint("result_id", name="uq_telemetry_result_id"),
    )
    op.create_table(
        "profile",
        sa.Column("id", BigId, primary_key=True),
        sa.Column("result_id", BigId, nullable=False),
        sa.Column("op_table", JSONType, nullable=True),
        sa.Column("copies", JSONType, nullable=True),
        sa.Column("info", JSONType, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_profile"),
        sa.ForeignKeyConstraint(["result_id"], ["result.id"], name="fk_profile_result_id_result"),
        sa.UniqueConstraint("result_id", name="uq_profile_result_id"),
    )


def downgrade() -> None:
    op.drop_table("profile")
    op.drop_table("telemetry")
    with op.batch_alter_table("result") as batch:
        batch.drop_column("accuracy")
