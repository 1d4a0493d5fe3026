"""Schema migrations: the models match the migrations, and an old history upgrades without losing rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.store import (
    SchemaOutdated,
    StoreError,
    head_revision,
    open_store,
    schema_status,
    upgrade_store,
)
from benchmark.store.engine import make_engine, parse_url, shown
from benchmark.store.migrate import known_revisions, upgrade
from benchmark.store.tables import Base, encode_samples

FIRST = "0001"
TABLES_0001 = ("machine", "run", "case", "series", "result")


def engine_for(url: str) -> sa.Engine:
    return make_engine(parse_url(url))


def test_revisions_form_one_line_from_the_first_schema():
    assert known_revisions()[0] == FIRST
    assert known_revisions()[-1] == head_revision()
    assert len(known_revisions()) >= 2


def test_the_migrations_build_exactly_the_models(db_url):
    with open_store(db_url) as store, store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
    assert diff == []


def insert(conn, table, **values) -> int:
    return conn.execute(table.insert().values(**values)).inserted_primary_key[0]


def fill_first_schema(url: str) -> tuple[dict[str, int], list[int]]:
    """A history at revision 0001 with rows in every table; returns the row counts and the run ids."""
    engine = engine_for(url)
    upgrade(engine, FIRST)
    meta = sa.MetaData()
    meta.reflect(engine)
    t = meta.tables
    start = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
    run_ids = []
    with engine.begin() as conn:
        machine_id = insert(
            conn, t["machine"], fingerprint="old-machine", hostname="h", info={"cpu": "x"}, created_at=start
        )
        case_pk = insert(
            conn, t["case"], case_id="op.add", name="add", kind="op", config={"a": 1}, config_hash="h1"
        )
        series_id = insert(
            conn, t["series"], case_pk=case_pk, machine_id=machine_id, place="cpu", mode="dynamic"
        )
        for i in (1, 2):
            started = start + dt.timedelta(days=i)
            run_id = insert(
                conn, t["run"], machine_id=machine_id, started_at=started, status="complete", git_commit=f"{i:040d}",
                framework={}, env={"OMP_NUM_THREADS": "1"}, trigger="nightly", tags=[], extra={},
            )  # fmt: skip
            insert(
                conn, t["result"], run_id=run_id, series_id=series_id, run_time=started.timestamp(), status="ok",
                unit="s", rounds=3, iterations=1, warmup_rounds=0, median=i * 1e-3, stats_extra={}, warnings=[],
                tags=[], extra={}, samples=encode_samples([i * 1e-3] * 3),
            )  # fmt: skip
            run_ids.append(run_id)
    engine.dispose()
    return {"machine": 1, "run": 2, "case": 1, "series": 1, "result": 2}, run_ids


def row_counts(url: str) -> dict[str, int]:
    engine = engine_for(url)
    with engine.connect() as conn:
        meta = sa.MetaData()
        meta.reflect(conn, only=TABLES_0001)
        counts = {
            name: conn.execute(sa.select(sa.func.count()).select_from(meta.tables[name])).scalar_one()
            for name in TABLES_0001
        }
    engine.dispose()
    return counts


def file_bytes(url: str) -> bytes | None:
    parsed = parse_url(url)
    return Path(parsed.database).read_bytes() if parsed.get_backend_name() == "sqlite" else None


def test_an_old_history_is_refused_with_the_command_to_run_then_upgrades_keeping_every_row(
    db_url, make_result
):
    counts, run_ids = fill_first_schema(db_url)
    before = file_bytes(db_url)

    with pytest.raises(SchemaOutdated) as info:
        open_store(db_url)
    message = str(info.value)
    assert f"benchmark db upgrade --db {shown(parse_url(db_url))}" in message
    password = parse_url(db_url).password
    assert not password or password not in message
    assert file_bytes(db_url) == before  # untouched
    assert schema_status(db_url)[1].kind == "outdated"

    where, old, new = upgrade_store(db_url)
    assert (old, new) == (FIRST, head_revision())
    assert row_counts(db_url) == counts

    with open_store(db_url) as store:
        history = store.history("op.add")
        assert [r.median for r in history] == [1e-3, 2e-3]
        (old_result,) = store.results(run_ids[0])
        assert old_result.samples == [1e-3] * 3
        assert old_result.accuracy is None and old_result.telemetry is None
        assert old_result.processes == []  # measured before worker processes (revision 0006)
        assert store.history("op.add", with_samples=True)[0].processes == ()
        run_id = store.begin_run(
            MachineDescription.of({"fingerprint": "old-machine"}),
            RunDescription.of({"started_at": "2024-05-10T00:00:00+00:00"}),
        )
        store.add_result(
            run_id, make_result("op.add", config_hash="h1", telemetry={"x": 1}, accuracy={"ok": True})
        )
        (base,) = store.baselines(run_id).values()
        assert base.run_ids == run_ids
        assert [list(v) for v in base.process_values] == [[], []]
    assert upgrade_store(db_url)[1:] == (head_revision(), head_revision())


def test_a_history_from_a_newer_harness_is_refused(db_url):
    with open_store(db_url) as store, store.engine.begin() as conn:
        version = sa.Table("alembic_version", sa.MetaData(), autoload_with=conn)
        conn.execute(version.update().values(version_num="9999_future"))
    with pytest.raises(StoreError, match="newer than this version"):
        open_store(db_url)
    with pytest.raises(StoreError, match="newer than this version"):
        upgrade_store(db_url)


def test_a_database_with_our_tables_but_no_version_is_not_touched(db_url):
    engine = engine_for(db_url)
    with engine.begin() as conn:
        sa.Table("run", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True)).create(conn)
    engine.dispose()
    with pytest.raises(StoreError, match="no schema version"):
        open_store(db_url)
