"""The first history schema: machine, run, case, series, result.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Types are spelled out here (not imported from models) so this revision never changes.
JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "machine",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("hostname", sa.String(255), nullable=True),
        sa.Column("info", JSONType, nullable=False),
        sa.Column("created_at", _ts(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_machine"),
        sa.UniqueConstraint("fingerprint", name="uq_machine_fingerprint"),
    )
    op.create_table(
        "run",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("machine_id", sa.Integer(), nullable=False),
        sa.Column("started_at", _ts(), nullable=False),
        sa.Column("finished_at", _ts(), nullable=True),
        sa.Column("heartbeat_at", _ts(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("git_commit", sa.String(64), nullable=True),
        sa.Column("git_branch", sa.String(255), nullable=True),
        sa.Column("git_dirty", sa.Boolean(), nullable=True),
        sa.Column("paddle_version", sa.String(64), nullable=True),
        sa.Column("paddle_commit", sa.String(64), nullable=True),
        sa.Column("cuda_version", sa.String(32), nullable=True),
        sa.Column("cudnn_version", sa.String(32), nullable=True),
        sa.Column("framework", JSONType, nullable=False),
        sa.Column("env", JSONType, nullable=False),
        sa.Column("trigger", sa.String(32), nullable=False),
        sa.Column("tags", JSONType, nullable=False),
        sa.Column("hostname", sa.String(255), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("extra", JSONType, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_run"),
        sa.ForeignKeyConstraint(["machine_id"], ["machine.id"], name="fk_run_machine_id_machine"),
    )
    op.create_index("ix_run_machine_id_started_at", "run", ["machine_id", "started_at"])
    op.create_index("ix_run_started_at", "run", ["started_at"])
    op.create_table(
        "case",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("case_id", sa.String(512), nullable=False),
        sa.Column("name", sa.String(512), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("config", JSONType, nullable=False),
        sa.Column("config_hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_case"),
        sa.UniqueConstraint("case_id", "config_hash", name="uq_case_case_id_config_hash"),
    )
    op.create_table(
        "series",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("case_pk", sa.Integer(), nullable=False),
        sa.Column("machine_id", sa.Integer(), nullable=False),
        sa.Column("place", sa.String(64), nullable=False),
        sa.Column("mode", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_series"),
        sa.ForeignKeyConstraint(["case_pk"], ["case.id"], name="fk_series_case_pk_case"),
        sa.ForeignKeyConstraint(["machine_id"], ["machine.id"], name="fk_series_machine_id_machine"),
        sa.UniqueConstraint(
            "case_pk", "machine_id", "place", "mode", name="uq_series_case_pk_machine_id_place_mode"
        ),
    )
    op.create_index("ix_series_machine_id", "series", ["machine_id"])
    op.create_table(
        "result",
        sa.Column("id", BigId, primary_key=True),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("series_id", sa.Integer(), nullable=False),
        sa.Column("run_time", sa.Double(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("iterations", sa.Integer(), nullable=False),
        sa.Column("warmup_rounds", sa.Integer(), nullable=False),
        *[
            sa.Column(name, sa.Double(), nullable=True)
            for name in ("min", "max", "median", "mean", "stddev", "q1", "q3", "iqr", "ci_low", "ci_high")
        ],
        sa.Column("stats_extra", JSONType, nullable=False),
        sa.Column("throughput", sa.Double(), nullable=True),
        sa.Column("throughput_unit", sa.String(32), nullable=True),
        sa.Column("batch_size", sa.Integer(), nullable=True),
        sa.Column("peak_memory_bytes", sa.BigInteger(), nullable=True),
        sa.Column("page_faults_per_iter", sa.Double(), nullable=True),
        sa.Column("warnings", JSONType, nullable=False),
        sa.Column("tags", JSONType, nullable=False),
        sa.Column("extra", JSONType, nullable=False),
        sa.Column("samples", sa.LargeBinary(), nullable=True),
        sa.Column("device_samples", sa.LargeBinary(), nullable=True),
        sa.Column("started_at", _ts(), nullable=True),
        sa.Column("finished_at", _ts(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_result"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], name="fk_result_run_id_run"),
        sa.ForeignKeyConstraint(["series_id"], ["series.id"], name="fk_result_series_id_series"),
    )
    op.create_index("ix_result_run_id", "result", ["run_id"])
    op.create_index(
        "ix_result_series_id_status_run_time_id", "result", ["series_id", "status", "run_time", "id"]
    )


def downgrade() -> None:
    for table in ("result", "series", "case", "run", "machine"):
        op.drop_table(table)
