"""A series measures one metric: series.metric ("time" or "instructions").

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02

Instruction counts (`pytest benchmark/ --bench-instructions`) are a series of their own beside the
timing series of the same case, place and mode. Every existing series measured time, so the new
column is filled with 'time'; the unique key gains the metric.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

OLD_UNIQUE = "uq_series_case_pk_machine_id_place_mode"
NEW_UNIQUE = "uq_series_case_pk_machine_id_place_mode_metric"
KEY = ["case_pk", "machine_id", "place", "mode"]


def _rebuild_sqlite_series(with_metric: bool) -> None:
    """SQLite cannot change a table's unique key in place, and `result` references `series`: the
    usual copy-drop-rename would trip the foreign key check, which cannot be switched off inside the
    upgrade's one transaction. So: rename the old table (SQLite rewrites `result`'s reference to the
    new name), create the new `series` and copy its rows (ids kept), point `result`'s reference back
    at `series` by editing its schema text (the documented procedure for changing a FOREIGN KEY
    clause: no stored row or index changes), then drop the old table, which nothing references."""
    op.drop_index("ix_series_machine_id", table_name="series")
    op.execute("ALTER TABLE series RENAME TO _series_old")
    columns = [
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("case_pk", sa.Integer(), nullable=False),
        sa.Column("machine_id", sa.Integer(), nullable=False),
        sa.Column("place", sa.String(64), nullable=False),
        sa.Column("mode", sa.String(64), nullable=False),
    ]
    if with_metric:
        columns.append(sa.Column("metric", sa.String(32), nullable=False, server_default="time"))
    op.create_table(
        "series",
        *columns,
        sa.PrimaryKeyConstraint("id", name="pk_series"),
        sa.ForeignKeyConstraint(["case_pk"], ["case.id"], name="fk_series_case_pk_case"),
        sa.ForeignKeyConstraint(["machine_id"], ["machine.id"], name="fk_series_machine_id_machine"),
        sa.UniqueConstraint(*KEY, "metric", name=NEW_UNIQUE)
        if with_metric
        else sa.UniqueConstraint(*KEY, name=OLD_UNIQUE),
    )
    names = "id, case_pk, machine_id, place, mode"
    op.execute(f"INSERT INTO series ({names}) SELECT {names} FROM _series_old")
    bind = op.get_bind()
    version = bind.exec_driver_sql("PRAGMA schema_version").scalar()
    op.execute("PRAGMA writable_schema = ON")
    op.execute(
        "UPDATE sqlite_master SET sql = replace(sql, 'REFERENCES \"_series_old\"', 'REFERENCES series') "
        "WHERE type = 'table' AND name = 'result'"
    )
    op.execute(f"PRAGMA schema_version = {int(version) + 1}")
    op.execute("PRAGMA writable_schema = OFF")
    op.execute("DROP TABLE _series_old")
    op.create_index("ix_series_machine_id", "series", ["machine_id"])


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite_series(with_metric=True)
        return
    op.add_column("series", sa.Column("metric", sa.String(32), nullable=False, server_default="time"))
    op.drop_constraint(OLD_UNIQUE, "series", type_="unique")
    op.create_unique_constraint(NEW_UNIQUE, "series", [*KEY, "metric"])


def downgrade() -> None:
    # Instruction-count series have no place in the older schema: they go, with their results.
    op.execute("DELETE FROM result WHERE series_id IN (SELECT id FROM series WHERE metric <> 'time')")
    op.execute("DELETE FROM series WHERE metric <> 'time'")
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite_series(with_metric=False)
        return
    op.drop_constraint(NEW_UNIQUE, "series", type_="unique")
    op.create_unique_constraint(OLD_UNIQUE, "series", KEY)
    op.drop_column("series", "metric")
