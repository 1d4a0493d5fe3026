"""The Store: writes runs and results as they happen, and answers the questions asked of the history.

Writes: `begin_run` -> `add_result` per finished case (each in its own committed transaction, so a
killed process loses no finished result) -> `finish_run`. Transient "database is locked" / lost
connection errors are retried; on SQLite each write transaction takes the lock at BEGIN (WAL mode, busy
timeout), so concurrent writers queue instead of failing.

Reads (`benchmark.store.reads`, a mixin; the queries in `benchmark.store.queries`, the row mapping
in `benchmark.store.rows`): `runs`, `run`, `results`, `history`, `baselines`, `latest_run_id`,
`group_runs`.

A run's status is the truth, checked where it is read:
- `complete` only when every result the run set out to store (`expected_results`) is there;
  `finish_run(.., "complete")` records `incomplete` instead when some are missing.
- A run recorded as `running` whose process is gone (same host) or whose heartbeat lease expired
  (`heartbeat_at` older than LEASE_FACTOR x `heartbeat_s`; the writer refreshes it from a thread,
  see `start_heartbeat`) reads as `interrupted`, without any later process having to touch it.
- Baselines come only from runs recorded `complete`, unless asked otherwise.

On SQLite the write-ahead log is checkpointed (TRUNCATE) when a run finishes and when a writer
closes, so the main file alone holds every finished run (a copy of it, or an uploaded artifact).
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from benchmark.datamodel.environment import MachineDescription, RunDescription, volatile_environment
from benchmark.datamodel.result import CaseResult
from benchmark.store.engine import StoreError, checkpoint, error_reason, sqlite_damage, writer
from benchmark.store.reads import DEFAULT_STALE_AFTER_S, StoreReads
from benchmark.store.rows import (
    as_dict,
    process_rows,
    profile_row,
    result_row,
    run_row,
    telemetry_row,
    utcnow,
)
from benchmark.store.tables import (
    ACKNOWLEDGEMENT,
    CASE,
    MACHINE,
    PROCESS,
    PROFILE,
    RESULT,
    RUN,
    RUN_STATUSES,
    SERIES,
    TELEMETRY,
    to_datetime,
)

T = TypeVar("T")

FINAL_RUN_STATUSES = tuple(s for s in RUN_STATUSES if s != "running")
WRITE_ATTEMPTS = 8
# add_result refreshes the run's heartbeat at most this often (a write of its own).
HEARTBEAT_INTERVAL_S = 10.0
# The heartbeat thread's period, recorded with the run as its lease (`heartbeat_s`); a run whose
# heartbeat is older than LEASE_FACTOR periods is dead.
HEARTBEAT_PERIOD_S = 30.0

# Statements used once per result are built once (parameters are passed at execution).
INSERT_RESULT = sa.insert(RESULT)
INSERT_RESULTS_RETURNING = sa.insert(RESULT).returning(RESULT.c.id, sort_by_parameter_order=True)
TOUCH_RUN = (
    sa.update(RUN).where(RUN.c.id == sa.bindparam("b_run_id")).values(heartbeat_at=sa.bindparam("b_beat"))
)


def _run_values(machine: MachineDescription, run: RunDescription) -> dict[str, Any]:
    """The run row's values for a new run on `machine`. Drivers, kernel and Python patch version are
    not in the fingerprint: they are recorded with each run."""
    _typed(machine, run)
    values = run_row(run)
    values["extra"] = {**values["extra"], "machine_env": volatile_environment(machine.info)}
    return values


def _typed(machine: Any, run: Any) -> None:
    if not isinstance(machine, MachineDescription):
        raise TypeError(f"a run's machine is a MachineDescription, not {type(machine).__name__}")
    if not isinstance(run, RunDescription):
        raise TypeError(f"a run is described by a RunDescription, not {type(run).__name__}")


class Store(StoreReads):
    """A history database. Create it with `benchmark.store.open_store`, which checks it first."""

    def __init__(
        self,
        engine: Engine,
        url: URL,
        *,
        readonly: bool = False,
        stale_after_s: float = DEFAULT_STALE_AFTER_S,
    ) -> None:
        self.engine = engine
        self.url = url
        self.readonly = readonly
        self.stale_after_s = stale_after_s
        self._writer = writer(engine)
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._machine_ids: dict[str, int] = {}
        self._case_pks: dict[tuple[str, str], int] = {}
        # (case pk, machine id, place, mode, metric) -> series id
        self._series_ids: dict[tuple[int, int, str, str, str], int] = {}
        self._runs: dict[int, tuple[int, float]] = {}  # run id -> (machine id, start in epoch s)
        self._preloaded: set[int] = set()
        self._last_beat: dict[int, float] = {}  # run id -> time.monotonic() of its last heartbeat
        self._beaters: dict[int, tuple[threading.Event, threading.Thread]] = {}

    # ---------------------------------------------------------------------------------------- basics

    def close(self) -> None:
        """Stop the heartbeats, fold a SQLite history's WAL into its main file (a writer only), and
        close every connection."""
        for run_id in list(self._beaters):
            self.stop_heartbeat(run_id)
        if not self.readonly:
            checkpoint(self.engine)
        self.engine.dispose()

    def checkpoint(self) -> tuple[int, int, int] | None:
        """Fold a SQLite history's WAL into the main file now (see `engine.checkpoint`)."""
        return None if self.readonly else checkpoint(self.engine)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.display_url!r})"

    def _forget(self) -> None:
        # After a rollback, ids learnt inside the failed transaction may not exist.
        self._machine_ids.clear()
        self._case_pks.clear()
        self._series_ids.clear()
        self._runs.clear()
        self._preloaded.clear()
        self._last_beat.clear()

    def _transact(self, work: Callable[[Connection], T], *, autocommit: bool = False) -> T:
        """Run `work` in one committed write transaction, retrying transient lock/connection errors.

        `autocommit` is for work that is a single statement (atomic by itself): on a server it saves
        the BEGIN and COMMIT round trips.
        """
        if self.readonly:
            raise StoreError(f"{self.display_url}: the history was opened read-only")
        delay = 0.05
        for attempt in itertools.count(1):
            try:
                with self._autocommit.connect() if autocommit else self._writer.begin() as conn:
                    return work(conn)
            except OperationalError as exc:
                self._forget()
                if attempt >= WRITE_ATTEMPTS or not self._transient(exc):
                    raise StoreError(
                        f"{self.display_url}: write failed: {error_reason(exc, self.url)}"
                    ) from None
                time.sleep(delay * random.uniform(1.0, 2.0))
                delay = min(delay * 2, 2.0)
            except DBAPIError as exc:
                self._forget()
                raise StoreError(f"{self.display_url}: write failed: {error_reason(exc, self.url)}") from None
            except BaseException:
                self._forget()
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _transient(self, exc: OperationalError) -> bool:
        if self.engine.dialect.name == "sqlite":
            text = str(exc.orig).lower()
            return "locked" in text or "busy" in text
        return True  # PostgreSQL: connection lost, serialization failure, deadlock

    # ---------------------------------------------------------------------------------------- writes

    def begin_run(self, machine: MachineDescription, run: RunDescription) -> int:
        """Record the start of a run (status 'running', unless `run` says otherwise) on `machine`;
        returns the run id. Both are the typed descriptions of `benchmark.datamodel.environment`
        (`MachineDescription.of(collect_machine())`, `RunDescription.of(collect_run())`).
        """
        values = _run_values(machine, run)
        self._refuse_damaged()

        def work(conn: Connection) -> int:
            machine_id = self._machine_id(conn, machine)
            run_id = _new_id(conn.execute(sa.insert(RUN).values(machine_id=machine_id, **values)))
            self._runs[run_id] = (machine_id, values["started_at"].timestamp())
            return int(run_id)

        return self._transact(work)

    def _refuse_damaged(self) -> None:
        """No new run goes into a SQLite history that fails `PRAGMA quick_check` (StoreError)."""
        damage = sqlite_damage(self.engine)
        if damage:
            raise StoreError(
                f"{self.display_url} fails SQLite's quick_check ({damage}): no run is written into a damaged "
                "history; restore it from a backup (`benchmark db backup` copies a sound one)"
            )

    def add_result(self, run_id: int, result: CaseResult) -> int:
        """Store one result and commit; returns its row id."""
        data = as_dict(result)
        return self._transact(
            lambda conn: self._insert_results(conn, run_id, [data])[0],
            autocommit=self._single_insert(run_id, data),
        )

    def add_results(self, run_id: int, results: Iterable[CaseResult]) -> list[int]:
        """Store many results in one transaction (bulk insert); returns their row ids in order."""
        batch = [as_dict(r) for r in results]
        if not batch:
            return []
        return self._transact(lambda conn: self._insert_results(conn, run_id, batch))

    def import_run(
        self,
        machine: MachineDescription,
        run: RunDescription,
        results: Callable[[], Iterable[CaseResult]],
        *,
        batch: int = 2000,
    ) -> int:
        """Record a finished run and all its results in one transaction: all of it, or nothing.

        `results` makes a fresh iterable each time it is called (a retried transaction reads them
        again); they are inserted `batch` at a time, and the id caches are dropped after each batch,
        so memory stays bounded however many results there are. Returns the run id.
        """
        values = _run_values(machine, run)
        self._refuse_damaged()
        self._refuse_damaged()

        def work(conn: Connection) -> int:
            machine_id = self._machine_id(conn, machine)
            run_id = _new_id(conn.execute(sa.insert(RUN).values(machine_id=machine_id, **values)))
            pending: list[dict[str, Any]] = []
            for result in results():
                pending.append(as_dict(result))
                if len(pending) >= batch:
                    self._import_batch(conn, run_id, machine_id, values, pending)
            if pending:
                self._import_batch(conn, run_id, machine_id, values, pending)
            conn.execute(sa.update(RUN).where(RUN.c.id == run_id).values(probe_s=_run_probe(conn, run_id)))
            return run_id

        try:
            return self._transact(work)
        finally:
            self._forget()  # ids learnt inside the transaction: dropped, committed or not

    def _import_batch(self, conn, run_id, machine_id, values, pending: list[dict[str, Any]]) -> None:
        self._runs[run_id] = (machine_id, values["started_at"].timestamp())
        self._preloaded.add(machine_id)  # look ids up one by one instead of loading every case
        self._insert_results(conn, run_id, pending)
        pending.clear()
        self._case_pks.clear()
        self._series_ids.clear()

    def start_heartbeat(self, run_id: int, period: float = HEARTBEAT_PERIOD_S) -> None:
        """Refresh the run's heartbeat every `period` seconds from a daemon thread until
        `stop_heartbeat` / `finish_run` / `close`. The run should have been begun with
        `heartbeat_s=period`, its lease: readers take it as dead after LEASE_FACTOR periods of silence
        (a SIGKILLed process stops beating at once). A failed beat is not an error of the run: the
        next one tries again, and a writer that cannot reach the database shows as a stale lease."""
        if run_id in self._beaters:
            return
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(period):
                try:
                    # Not through _transact: its failure handling resets caches the writer is using.
                    with self._writer.begin() as conn:
                        conn.execute(TOUCH_RUN, {"b_run_id": run_id, "b_beat": utcnow()})
                except Exception:  # noqa: BLE001, S110 - see the docstring
                    pass

        thread = threading.Thread(target=beat, name=f"benchmark-heartbeat-{run_id}", daemon=True)
        thread.start()
        self._beaters[run_id] = (stop, thread)

    def stop_heartbeat(self, run_id: int) -> None:
        stop, thread = self._beaters.pop(run_id, (None, None))
        if stop is not None and thread is not None:
            stop.set()
            thread.join(timeout=5.0)  # a beat blocked on a dead server must not hold the session

    def finish_run(
        self, run_id: int, status: str = "complete", *, finished_at: Any = None, note: str | None = None
    ) -> str:
        """Close a run with a final status (complete, incomplete, interrupted or failed) and an
        optional note saying why; returns the status recorded.

        `complete` is checked, not trusted: when the run was begun with `expected_results` and fewer
        results are stored, the run is recorded `incomplete`, its note naming how many are missing.
        """
        if status not in FINAL_RUN_STATUSES:
            raise ValueError(f"run status must be one of {', '.join(FINAL_RUN_STATUSES)}, not {status!r}")
        finished = to_datetime(finished_at) if finished_at is not None else utcnow()
        self.stop_heartbeat(run_id)

        def work(conn: Connection) -> str:
            expected = conn.execute(sa.select(RUN.c.expected_results).where(RUN.c.id == run_id)).first()
            if expected is None:
                raise StoreError(f"{self.display_url}: there is no run {run_id}")
            recorded, why = status, note
            if status == "complete" and expected[0] is not None:
                stored = _count_results(conn, run_id)
                if stored < expected[0]:
                    recorded = "incomplete"
                    why = "; ".join(p for p in (missing_note(expected[0], stored), note) if p)
            stmt = (
                sa.update(RUN)
                .where(RUN.c.id == run_id)
                .values(status=recorded, finished_at=finished, note=why, probe_s=_run_probe(conn, run_id))
            )
            conn.execute(stmt)
            return recorded

        recorded = self._transact(work)
        # The run is over: its rows go into the main file, so a copy of that file alone holds them.
        checkpoint(self.engine)
        return recorded

    def add_note(self, run_id: int, note: str) -> None:
        """Append a line to the run's note (e.g. a side output that could not be written)."""

        def work(conn: Connection) -> None:
            old = conn.execute(sa.select(RUN.c.note).where(RUN.c.id == run_id)).scalar()
            text = "; ".join(p for p in (old, note) if p)
            conn.execute(sa.update(RUN).where(RUN.c.id == run_id).values(note=text))

        self._transact(work)

    def set_run_extra(self, run_id: int, key: str, value: Any) -> None:
        """Set one key of the run's `extra`, keeping the others: what `benchmark night` decided
        after judging the run (its verdicts and bisections), the re-measurements of its regressions
        (`pytest benchmark/ --bench-gate`)."""

        def work(conn: Connection) -> None:
            row = conn.execute(sa.select(RUN.c.extra).where(RUN.c.id == run_id)).first()
            if row is None:
                raise StoreError(f"{self.display_url}: there is no run {run_id}")
            extra = dict(row[0] or {})
            extra[key] = value
            conn.execute(sa.update(RUN).where(RUN.c.id == run_id).values(extra=extra))

        self._transact(work)

    def acknowledge(
        self, run_id: int, case_id: str, place: str, mode: str, metric: str, by: str, why: str
    ) -> int:
        """Record that `by` accepts the level of the series of `case_id` [place mode] `metric` (a
        stored metric: time, instructions, cycles) from run `run_id` on, because `why`; returns the
        series id. The run must hold a result of that series; StoreError names what is missing."""
        by, why = by.strip(), why.strip()
        if not by or not why:
            raise StoreError("an acknowledgement needs who (--by) and why (--why)")

        def work(conn: Connection) -> int:
            found = conn.execute(
                sa.select(SERIES.c.id)
                .select_from(RESULT.join(SERIES, RESULT.c.series_id == SERIES.c.id).join(
                    CASE, SERIES.c.case_pk == CASE.c.id))
                .where(RESULT.c.run_id == run_id, CASE.c.case_id == case_id, SERIES.c.place == place,
                       SERIES.c.mode == mode, SERIES.c.metric == metric)
            ).first()  # fmt: skip
            if found is None:
                raise StoreError(
                    f"run {run_id} has no result of {case_id} [{place} {mode}] {metric} in {self.display_url}"
                )
            conn.execute(
                sa.insert(ACKNOWLEDGEMENT).values(
                    series_id=found[0], run_id=run_id, by=by[:255], why=why, at=to_datetime(time.time())
                )
            )
            return int(found[0])

        return self._transact(work)

    def _insert_results(self, conn: Connection, run_id: int, batch: list[dict[str, Any]]) -> list[int]:
        machine_id, run_time = self._run_key(conn, run_id)
        self._preload(conn, machine_id)
        rows = []
        for data in batch:
            series_id = self._series_id(conn, self._case_pk(conn, data), machine_id, data)
            rows.append({**result_row(data), "run_id": run_id, "series_id": series_id, "run_time": run_time})
        if len(rows) == 1:
            ids = [_new_id(conn.execute(INSERT_RESULT, rows[0]))]
        else:
            ids = [int(i) for i in conn.execute(INSERT_RESULTS_RETURNING, rows).scalars()]
        telemetry = [
            telemetry_row(rid, d["telemetry"])
            for rid, d in zip(ids, batch, strict=True)
            if d.get("telemetry")
        ]
        profiles = [
            profile_row(rid, d["profile"]) for rid, d in zip(ids, batch, strict=True) if d.get("profile")
        ]
        processes = [
            row for rid, d in zip(ids, batch, strict=True) for row in process_rows(rid, d.get("processes"))
        ]
        if telemetry:
            conn.execute(sa.insert(TELEMETRY), telemetry)
        if profiles:
            conn.execute(sa.insert(PROFILE), profiles)
        if processes:
            conn.execute(sa.insert(PROCESS), processes)
        if self._heartbeat_due(run_id):
            self._touch(conn, run_id)
        return ids

    def _single_insert(self, run_id: int, data: dict[str, Any]) -> bool:
        """Whether storing `data` is one INSERT: a server database, its run, case and series ids
        already known, no telemetry, profile or process rows, no heartbeat due (see `_insert_results`)."""
        if (
            self.engine.dialect.name == "sqlite"
            or data.get("telemetry")
            or data.get("profile")
            or data.get("processes")
        ):
            return False
        if run_id not in self._runs or self._heartbeat_due(run_id):
            return False
        machine_id = self._runs[run_id][0]
        case_pk = self._case_pks.get((data["case_id"], data["config_hash"]))
        series = (case_pk, machine_id, data["place"], data["mode"], data.get("metric") or "time")
        return machine_id in self._preloaded and case_pk is not None and series in self._series_ids

    def _heartbeat_due(self, run_id: int) -> bool:
        return time.monotonic() - self._last_beat.get(run_id, -math.inf) >= HEARTBEAT_INTERVAL_S

    def _touch(self, conn: Connection, run_id: int) -> None:
        conn.execute(TOUCH_RUN, {"b_run_id": run_id, "b_beat": utcnow()})
        self._last_beat[run_id] = time.monotonic()

    def _run_key(self, conn: Connection, run_id: int) -> tuple[int, float]:
        if run_id not in self._runs:
            row = conn.execute(
                sa.select(RUN.c.machine_id, RUN.c.started_at).where(RUN.c.id == run_id)
            ).first()
            if row is None:
                raise StoreError(f"{self.display_url}: there is no run {run_id}")
            self._runs[run_id] = (row.machine_id, row.started_at.timestamp())
        return self._runs[run_id]

    def _preload(self, conn: Connection, machine_id: int) -> None:
        """Learn the ids of all cases and of this machine's series in two queries, once per machine,
        so a new session's first run does not look each one up."""
        if machine_id in self._preloaded:
            return
        for pk, case_id, config_hash in conn.execute(
            sa.select(CASE.c.id, CASE.c.case_id, CASE.c.config_hash)
        ):
            self._case_pks[(case_id, config_hash)] = pk
        query = sa.select(
            SERIES.c.id, SERIES.c.case_pk, SERIES.c.place, SERIES.c.mode, SERIES.c.metric
        ).where(SERIES.c.machine_id == machine_id)
        for sid, case_pk, place, mode, metric in conn.execute(query):
            self._series_ids[(case_pk, machine_id, place, mode, metric)] = sid
        self._preloaded.add(machine_id)

    def _machine_id(self, conn: Connection, machine: MachineDescription) -> int:
        fp = machine.fingerprint
        if fp not in self._machine_ids:
            values = {
                "fingerprint": fp,
                "hostname": machine.hostname,
                "info": dict(machine.info),
                "created_at": utcnow(),
            }
            self._machine_ids[fp] = _get_or_create(conn, MACHINE, values, ("fingerprint",))
        return self._machine_ids[fp]

    def _case_pk(self, conn: Connection, data: dict[str, Any]) -> int:
        key = (data["case_id"], data["config_hash"])
        if key not in self._case_pks:
            values = {
                "case_id": key[0],
                "config_hash": key[1],
                "name": data.get("name") or key[0],
                "kind": data.get("kind") or "unknown",
                "config": dict(data.get("config") or {}),
            }
            self._case_pks[key] = _get_or_create(conn, CASE, values, ("case_id", "config_hash"))
        return self._case_pks[key]

    def _series_id(self, conn: Connection, case_pk: int, machine_id: int, data: dict[str, Any]) -> int:
        key = (case_pk, machine_id, data["place"], data["mode"], data.get("metric") or "time")
        if key not in self._series_ids:
            values = dict(zip(("case_pk", "machine_id", "place", "mode", "metric"), key, strict=True))
            self._series_ids[key] = _get_or_create(conn, SERIES, values, tuple(values))
        return self._series_ids[key]


def _new_id(result: sa.CursorResult) -> int:
    """The primary key of the row a single INSERT made."""
    key = result.inserted_primary_key
    if key is None:  # pragma: no cover - every insert here makes exactly one row
        raise StoreError("the database returned no id for a new row")
    return int(key[0])


def missing_note(expected: int, stored: int) -> str:
    return f"{expected - stored} of {expected} results missing"


def _run_probe(conn: Connection, run_id: int) -> float | None:
    """The median reference-probe figure over a run's trials (seconds), None where none has one."""
    query = (
        sa.select(PROCESS.c.probe_s)
        .join(RESULT, RESULT.c.id == PROCESS.c.result_id)
        .where(RESULT.c.run_id == run_id, PROCESS.c.probe_s.is_not(None))
    )
    probes = [float(p) for p in conn.execute(query).scalars()]
    return statistics.median(probes) if probes else None


def _count_results(conn: Connection, run_id: int) -> int:
    query = sa.select(sa.func.count()).select_from(RESULT).where(RESULT.c.run_id == run_id)
    return int(conn.execute(query).scalar_one())


def _get_or_create(conn: Connection, table: sa.Table, values: dict[str, Any], unique: tuple[str, ...]) -> int:
    """The id of the row with these unique values, inserting it if absent. A concurrent writer may
    insert it first: then the insert does nothing and the row is read back."""
    dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    stmt = dialect_insert(table).on_conflict_do_nothing().returning(table.c.id)
    new_id = conn.execute(stmt, values).scalar()
    if new_id is not None:
        return int(new_id)
    query = sa.select(table.c.id).where(*(table.c[k] == values[k] for k in unique))
    return int(conn.execute(query).scalar_one())
