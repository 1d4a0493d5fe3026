"""The Store: writes runs and results as they happen, and answers the questions asked of the history.

Writes: `begin_run` -> `add_result` per finished case (each in its own committed transaction, so a
killed process loses no finished result) -> `finish_run`. Transient "database is locked" / lost
connection errors are retried; on SQLite each write transaction takes the lock at BEGIN (WAL mode, busy
timeout), so concurrent writers queue instead of failing.

Reads: `runs`, `run`, `results`, `history`, `baselines`, `latest_run_id`, `group_runs`.

A run's status is the truth, checked where it is read:
- `complete` only when every result the run set out to store (`expected_results`) is there;
  `finish_run(.., "complete")` records `incomplete` instead when some are missing.
- A run recorded as `running` whose process is gone (same host) or whose heartbeat lease expired
  (`heartbeat_at` older than LEASE_FACTOR x `heartbeat_s`; the writer refreshes it from a thread,
  see `start_heartbeat`) reads as `interrupted`, without any later process having to touch it.
- Baselines come only from runs recorded `complete`, unless asked otherwise.
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import itertools
import json
import math
import operator
import random
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from benchmark.environment import fingerprint, volatile_environment
from benchmark.results import bad_timings, timing_problem
from benchmark.store.engine import StoreError, error_reason, shown, writer
from benchmark.store.models import (
    RESULT_STATUSES,
    RUN_STATUSES,
    Case,
    Machine,
    Profile,
    Result,
    ResultProcess,
    Run,
    Series,
    Telemetry,
    decode_samples,
    encode_samples,
    json_serializer,
    to_datetime,
)

T = TypeVar("T")

MACHINE, RUN, CASE, SERIES, RESULT = (m.__table__ for m in (Machine, Run, Case, Series, Result))
TELEMETRY, PROFILE = Telemetry.__table__, Profile.__table__
PROCESS = ResultProcess.__table__

STAT_COLUMNS = ("min", "max", "median", "mean", "stddev", "q1", "q3", "iqr", "ci_low", "ci_high")
FINAL_RUN_STATUSES = tuple(s for s in RUN_STATUSES if s != "running")
WRITE_ATTEMPTS = 8
# A `running` run without a lease of its own (recorded before revision 0003) is stale after this.
DEFAULT_STALE_AFTER_S = 3600.0
# add_result refreshes the run's heartbeat at most this often (a write of its own).
HEARTBEAT_INTERVAL_S = 10.0
# The heartbeat thread's period, recorded with the run as its lease (`heartbeat_s`); a run whose
# heartbeat is older than LEASE_FACTOR periods is dead.
HEARTBEAT_PERIOD_S = 30.0
LEASE_FACTOR = 4.0
# Statuses of the runs baselines are taken from, unless a caller asks for others.
BASELINE_RUN_STATUSES = ("complete",)
TIMELINE_FORMAT = "json+zlib"
WILDCARDS = frozenset("*?")

# Statements used once per result are built once (parameters are passed at execution).
INSERT_RESULT = sa.insert(RESULT)
INSERT_RESULTS_RETURNING = sa.insert(RESULT).returning(RESULT.c.id, sort_by_parameter_order=True)
TOUCH_RUN = (
    sa.update(RUN).where(RUN.c.id == sa.bindparam("b_run_id")).values(heartbeat_at=sa.bindparam("b_beat"))
)

SeriesKey = tuple[str, str, str, str, str]  # (case_id, config_hash, place, mode, metric)


def series_key(result: Mapping[str, Any]) -> SeriesKey:
    """The key `Store.baselines` uses for a result dict: (case_id, config_hash, place, mode, metric)."""
    return (
        result["case_id"],
        result["config_hash"],
        result["place"],
        result["mode"],
        result.get("metric") or "time",
    )


def _run_values(
    machine: Mapping[str, Any], run: Mapping[str, Any]
) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """(machine, its fingerprint, the run row's values) for a new run on `machine`. Drivers, kernel
    and Python patch version are not in the fingerprint: they are recorded with each run."""
    machine = dict(machine)
    fp = machine.get("fingerprint") or fingerprint(machine)
    values = run_row(run)
    values["extra"] = {**values["extra"], "machine_env": volatile_environment(machine)}
    return machine, fp, values


@dataclass
class Baseline:
    """The previous ok results of one series, oldest first, as parallel sequences."""

    run_ids: list[int] = field(default_factory=list)
    result_ids: list[int] = field(default_factory=list)
    # Start of each run, epoch seconds.
    run_times: list[float] = field(default_factory=list)
    git_commits: list[str | None] = field(default_factory=list)
    # Median of each result (one per run), and its raw samples.
    medians: np.ndarray = field(default_factory=lambda: np.empty(0))
    samples: list[np.ndarray] = field(default_factory=list)
    unit: str | None = None
    # Per result, the values (per-process medians) of its ok worker-process trials, in trial order;
    # an empty array for results measured in one process (before issue 11, or --bench-processes 0).
    process_values: list[np.ndarray] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.run_ids)

    def pooled(self) -> np.ndarray:
        """All raw samples of the baseline in one array."""
        return np.concatenate(self.samples) if self.samples else np.empty(0)

    @classmethod
    def from_rows(cls, rows: list[tuple]) -> Baseline:
        """From (series_id, result_id, run_id, run_time, unit, median, samples) rows, in any order."""
        rows = sorted(rows, key=operator.itemgetter(3, 1))
        return cls(
            run_ids=[r[2] for r in rows],
            result_ids=[r[1] for r in rows],
            run_times=[r[3] for r in rows],
            medians=_medians(r[5] for r in rows),
            samples=[decode_samples(r[6]) for r in rows],
            unit=rows[-1][4] if rows else None,
        )


def _medians(values: Iterable[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class Store:
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
        self._series_ids: dict[tuple[int, int, str, str], int] = {}
        self._runs: dict[int, tuple[int, float]] = {}  # run id -> (machine id, start in epoch s)
        self._preloaded: set[int] = set()
        self._last_beat: dict[int, float] = {}  # run id -> time.monotonic() of its last heartbeat
        self._beaters: dict[int, tuple[threading.Event, threading.Thread]] = {}

    # ---------------------------------------------------------------------------------------- basics

    @property
    def display_url(self) -> str:
        """The URL, password hidden."""
        return shown(self.url)

    def close(self) -> None:
        for run_id in list(self._beaters):
            self.stop_heartbeat(run_id)
        self.engine.dispose()

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

    @contextmanager
    def _read(self):
        try:
            with self.engine.connect() as conn:
                yield conn
        except DBAPIError as exc:
            raise StoreError(f"{self.display_url}: read failed: {error_reason(exc, self.url)}") from None

    # ---------------------------------------------------------------------------------------- writes

    def begin_run(self, machine: Mapping[str, Any], run: Mapping[str, Any]) -> int:
        """Record the start of a run (status 'running') on `machine`; returns the run id.

        `machine` is `environment.collect_machine()` (its fingerprint is computed if absent); `run` is
        `environment.collect_run()`. A run may also carry `status` and `finished_at` (imports do).
        """
        machine, fp, values = _run_values(machine, run)

        def work(conn: Connection) -> int:
            machine_id = self._machine_id(conn, fp, machine)
            run_id = conn.execute(
                sa.insert(RUN).values(machine_id=machine_id, **values)
            ).inserted_primary_key[0]
            self._runs[run_id] = (machine_id, values["started_at"].timestamp())
            return int(run_id)

        return self._transact(work)

    def add_result(self, run_id: int, result: Mapping[str, Any] | Any) -> int:
        """Store one result (a `CaseResult` or its `to_dict()`) and commit; returns its row id."""
        data = _as_dict(result)
        return self._transact(
            lambda conn: self._insert_results(conn, run_id, [data])[0],
            autocommit=self._single_insert(run_id, data),
        )

    def add_results(self, run_id: int, results: Iterable[Mapping[str, Any] | Any]) -> list[int]:
        """Store many results in one transaction (bulk insert); returns their row ids in order."""
        batch = [_as_dict(r) for r in results]
        if not batch:
            return []
        return self._transact(lambda conn: self._insert_results(conn, run_id, batch))

    def import_run(
        self,
        machine: Mapping[str, Any],
        run: Mapping[str, Any],
        results: Callable[[], Iterable[Mapping[str, Any]]],
        *,
        batch: int = 2000,
    ) -> int:
        """Record a finished run and all its results in one transaction: all of it, or nothing.

        `results` makes a fresh iterable each time it is called (a retried transaction reads them
        again); they are inserted `batch` at a time, and the id caches are dropped after each batch,
        so memory stays bounded however many results there are. Returns the run id.
        """
        machine, fp, values = _run_values(machine, run)

        def work(conn: Connection) -> int:
            machine_id = self._machine_id(conn, fp, machine)
            run_id = int(
                conn.execute(sa.insert(RUN).values(machine_id=machine_id, **values)).inserted_primary_key[0]
            )
            pending: list[dict[str, Any]] = []
            for result in results():
                pending.append(_as_dict(result))
                if len(pending) >= batch:
                    self._import_batch(conn, run_id, machine_id, values, pending)
            if pending:
                self._import_batch(conn, run_id, machine_id, values, pending)
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

    def heartbeat(self, run_id: int) -> None:
        """Mark the run as alive (add_result does this too)."""
        self._transact(lambda conn: self._touch(conn, run_id))

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
                        conn.execute(TOUCH_RUN, {"b_run_id": run_id, "b_beat": _now()})
                except Exception:  # noqa: BLE001, S110 - see the docstring
                    pass

        thread = threading.Thread(target=beat, name=f"benchmark-heartbeat-{run_id}", daemon=True)
        thread.start()
        self._beaters[run_id] = (stop, thread)

    def stop_heartbeat(self, run_id: int) -> None:
        stop, thread = self._beaters.pop(run_id, (None, None))
        if stop is not None:
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
        finished = to_datetime(finished_at) if finished_at is not None else _now()
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
                .values(status=recorded, finished_at=finished, note=why)
            )
            conn.execute(stmt)
            return recorded

        return self._transact(work)

    def add_note(self, run_id: int, note: str) -> None:
        """Append a line to the run's note (e.g. a side output that could not be written)."""

        def work(conn: Connection) -> None:
            old = conn.execute(sa.select(RUN.c.note).where(RUN.c.id == run_id)).scalar()
            text = "; ".join(p for p in (old, note) if p)
            conn.execute(sa.update(RUN).where(RUN.c.id == run_id).values(note=text))

        self._transact(work)

    def _insert_results(self, conn: Connection, run_id: int, batch: list[dict[str, Any]]) -> list[int]:
        machine_id, run_time = self._run_key(conn, run_id)
        self._preload(conn, machine_id)
        rows = []
        for data in batch:
            series_id = self._series_id(conn, self._case_pk(conn, data), machine_id, data)
            rows.append({**result_row(data), "run_id": run_id, "series_id": series_id, "run_time": run_time})
        if len(rows) == 1:
            ids = [int(conn.execute(INSERT_RESULT, rows[0]).inserted_primary_key[0])]
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
        conn.execute(TOUCH_RUN, {"b_run_id": run_id, "b_beat": _now()})
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

    def _machine_id(self, conn: Connection, fp: str, info: dict[str, Any]) -> int:
        if fp not in self._machine_ids:
            values = {"fingerprint": fp, "hostname": info.get("hostname"), "info": info, "created_at": _now()}
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

    # ---------------------------------------------------------------------------------------- reads

    def latest_run_id(self, run_group: str | None = None) -> int | None:
        """The most recently started run (of `run_group`, if given), or None."""
        query = sa.select(RUN.c.id).order_by(RUN.c.started_at.desc(), RUN.c.id.desc()).limit(1)
        if run_group is not None:
            query = query.where(RUN.c.run_group == run_group)
        with self._read() as conn:
            return conn.execute(query).scalar()

    def group_runs(self, run_group: str) -> list[int]:
        """The ids of the runs of one group (e.g. the shards of one nightly), oldest first."""
        query = sa.select(RUN.c.id).where(RUN.c.run_group == run_group).order_by(RUN.c.started_at, RUN.c.id)
        with self._read() as conn:
            return list(conn.execute(query).scalars())

    def run(self, run_id: int) -> dict[str, Any] | None:
        """Everything recorded about one run, with its machine's description under `machine_info`."""
        query = (
            sa.select(RUN, MACHINE.c.fingerprint.label("machine"), MACHINE.c.info.label("machine_info"))
            .join(MACHINE, MACHINE.c.id == RUN.c.machine_id)
            .where(RUN.c.id == run_id)
        )
        with self._read() as conn:
            row = conn.execute(query).mappings().first()
            if row is None:
                return None
            counts = self._result_counts(conn, [run_id])
        out = dict(row)
        self._add_truth(out, *counts.get(run_id, (set(), {})), _now())
        return out

    def runs(self, limit: int | None = 20) -> list[dict[str, Any]]:
        """The latest runs, newest first: id, times, commit, machine, places, result counts, status."""
        query = (
            sa.select(
                RUN.c.id,
                RUN.c.started_at,
                RUN.c.finished_at,
                RUN.c.heartbeat_at,
                RUN.c.status,
                RUN.c.git_commit,
                RUN.c.git_branch,
                RUN.c.git_dirty,
                RUN.c.paddle_version,
                RUN.c.trigger,
                RUN.c.tags,
                RUN.c.hostname,
                RUN.c.pid,
                RUN.c.expected_results,
                RUN.c.run_group,
                RUN.c.heartbeat_s,
                RUN.c.note,
                MACHINE.c.fingerprint.label("machine"),
            )
            .join(MACHINE, MACHINE.c.id == RUN.c.machine_id)
            .order_by(RUN.c.started_at.desc(), RUN.c.id.desc())
            .limit(limit)
        )
        with self._read() as conn:
            rows = [dict(r) for r in conn.execute(query).mappings()]
            counts = self._result_counts(conn, [r["id"] for r in rows])
        now = _now()
        for row in rows:
            self._add_truth(row, *counts.get(row["id"], (set(), {})), now)
        return rows

    def _add_truth(self, row: dict[str, Any], places: set, by_status: dict, now: dt.datetime) -> None:
        """Places, result counts, `missing` (expected but not stored, None when not known) and the
        effective status, the recorded one kept as `recorded_status`."""
        row["places"] = sorted(places)
        row["results"] = sum(by_status.values())
        row["results_by_status"] = by_status
        expected = row.get("expected_results")
        row["missing"] = None if expected is None else max(expected - row["results"], 0)
        row["recorded_status"] = row["status"]
        row["status"] = self._effective_status(row, now)

    def _result_counts(self, conn: Connection, run_ids: list[int]) -> dict[int, tuple[set, dict]]:
        if not run_ids:
            return {}
        query = (
            sa.select(RESULT.c.run_id, SERIES.c.place, RESULT.c.status, sa.func.count().label("n"))
            .join(SERIES, SERIES.c.id == RESULT.c.series_id)
            .where(RESULT.c.run_id.in_(run_ids))
            .group_by(RESULT.c.run_id, SERIES.c.place, RESULT.c.status)
        )
        out: dict[int, tuple[set, dict]] = {}
        for run_id, place, status, n in conn.execute(query):
            places, by_status = out.setdefault(run_id, (set(), {}))
            places.add(place)
            by_status[status] = by_status.get(status, 0) + n
        return out

    def _effective_status(self, run: Mapping[str, Any], now: dt.datetime) -> str:
        status = run["status"]
        if status == "complete" and run.get("missing"):
            return "incomplete"  # recorded by an older harness that did not check
        if status != "running":
            return status
        if run.get("hostname") == socket.gethostname() and run.get("pid"):
            return "running" if _pid_alive(run["pid"], run["started_at"]) else "interrupted"
        beat = run.get("heartbeat_at")
        period = run.get("heartbeat_s")
        lease = period * LEASE_FACTOR if period else self.stale_after_s
        if beat is None or (now - beat).total_seconds() > lease:
            return "interrupted"
        return "running"

    def missing_cases(self, run: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """(case id, place, mode) of the cases `run` (a `run()` dict) set out to store and did not."""
        expected = (run.get("extra") or {}).get("expected_cases") or []
        query = (
            sa.select(CASE.c.case_id, SERIES.c.place, SERIES.c.mode)
            .join(SERIES, SERIES.c.case_pk == CASE.c.id)
            .join(RESULT, RESULT.c.series_id == SERIES.c.id)
            .where(RESULT.c.run_id == run["id"])
        )
        with self._read() as conn:
            stored = {tuple(r) for r in conn.execute(query)}
        return [tuple(key) for key in expected if tuple(key) not in stored]

    def results(self, run_id: int) -> list[dict[str, Any]]:
        """The results of one run as `CaseResult.to_dict()`-shaped dicts (+ result_id, run_id)."""
        query = (
            sa.select(
                RESULT,
                CASE.c.case_id,
                CASE.c.name,
                CASE.c.kind,
                CASE.c.config,
                CASE.c.config_hash,
                SERIES.c.place,
                SERIES.c.mode,
                SERIES.c.metric,
            )
            .join(SERIES, SERIES.c.id == RESULT.c.series_id)
            .join(CASE, CASE.c.id == SERIES.c.case_pk)
            .where(RESULT.c.run_id == run_id)
            .order_by(RESULT.c.id)
        )
        with self._read() as conn:
            rows = conn.execute(query).mappings().all()
            ids = [r["id"] for r in rows]
            telemetry = _by_result(conn, TELEMETRY, ids)
            profiles = _by_result(conn, PROFILE, ids)
            processes = _processes_by_result(conn, ids)
        out = []
        for row in rows:
            result = case_result_dict(row, telemetry.get(row["id"]), profiles.get(row["id"]))
            result["processes"] = processes.get(row["id"], [])
            out.append(result)
        return out

    def history(
        self,
        pattern: str,
        place: str | None = None,
        last: int | None = None,
        *,
        with_samples: bool = False,
    ) -> list[dict[str, Any]]:
        """Results of every series whose case id matches `pattern`, oldest first per series.

        `pattern` is a glob (if it has * or ?; brackets are literal) or else a substring of the case id. `place` matches a
        place exactly, or every device of a kind ("gpu" matches "gpu:0"). `last` keeps the latest N
        results per series. Rows carry run time, commit, machine fingerprint and summary statistics;
        raw samples (float64 arrays) and the per-process entries (`processes`) only `with_samples`.
        """
        with self._read() as conn:
            cases = _matching_cases(conn, pattern)
            if not cases:
                return []
            query = _history_query(cases, place, last, with_samples)
            rows = [dict(r) for r in conn.execute(query).mappings()]
            processes = _processes_by_result(conn, [r["result_id"] for r in rows]) if with_samples else {}
        for row in rows:
            row.pop("rn", None)
            if with_samples:
                row["samples"] = decode_samples(row["samples"])
                row["processes"] = processes.get(row["result_id"], [])
        return rows

    def baselines(
        self, run_id: int, last: int = 100, *, statuses: Iterable[str] | None = BASELINE_RUN_STATUSES
    ) -> dict[SeriesKey, Baseline]:
        """For every series in run `run_id`: its previous `last` ok results, oldest first.

        Only results of the same case id, config hash, place and mode on the same machine fingerprint,
        from runs that started before this one and are recorded with one of `statuses` (default:
        complete runs only; None: any run). Keys are `series_key(result)`; a series without
        history maps to an empty Baseline. Three queries in all (the run's series, their baselines,
        the commits of those runs), whatever the number of series.
        """
        with self._read() as conn:
            targets = conn.execute(_targets_query(run_id)).all()
            if not targets:
                return {}
            fetch = _postgresql_baselines if conn.dialect.name == "postgresql" else _generic_baselines
            found = fetch(conn, run_id, targets[0].run_time, last, statuses)
            _fill_commits(conn, found.values())
            _fill_process_values(conn, found.values())
        return {
            (t.case_id, t.config_hash, t.place, t.mode, t.metric): found.get(t.series_id, Baseline())
            for t in targets
        }


# ------------------------------------------------------------------------------------------ row mapping


def _as_dict(result: Any) -> dict[str, Any]:
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    for key in ("case_id", "place", "mode"):
        if not data.get(key):
            raise ValueError(f"a result needs {key!r}; got keys {sorted(data)}")
    if not data.get("config_hash"):
        blob = json_serializer(data.get("config") or {})
        data["config_hash"] = hashlib.sha256(blob.encode()).hexdigest()[:16]
    return data


def _float(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _ts(value: Any) -> dt.datetime | None:
    return None if value is None else to_datetime(value)


def _epoch(value: dt.datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def run_row(run: Mapping[str, Any]) -> dict[str, Any]:
    """Columns of the run table from an `environment.collect_run()` dict; unknown keys go to `extra`."""
    framework = dict(run.get("framework") or {})
    known = {
        "started_at", "finished_at", "status", "git_commit", "git_branch", "git_dirty",
        "framework", "env", "trigger", "tags", "hostname", "pid", "expected_results", "run_group",
        "heartbeat_s", "note",
    }  # fmt: skip
    status = run.get("status") or "running"
    if status not in RUN_STATUSES:
        raise ValueError(f"run status must be one of {', '.join(RUN_STATUSES)}, not {status!r}")
    return {
        "started_at": to_datetime(run.get("started_at") or time.time()),
        "finished_at": _ts(run.get("finished_at")),
        "heartbeat_at": _now(),
        "status": status,
        "git_commit": run.get("git_commit"),
        "git_branch": run.get("git_branch"),
        "git_dirty": run.get("git_dirty"),
        "paddle_version": _text(framework, "paddle_version", "version"),
        "paddle_commit": _text(framework, "paddle_commit", "commit"),
        "cuda_version": _text(framework, "cuda_version", "cuda"),
        "cudnn_version": _text(framework, "cudnn_version", "cudnn"),
        "framework": framework,
        "env": dict(run.get("env") or {}),
        "trigger": run.get("trigger") or "local",
        "tags": list(run.get("tags") or []),
        "hostname": run.get("hostname"),
        "pid": _int(run.get("pid")),
        "extra": {k: v for k, v in run.items() if k not in known},
        "expected_results": _int(run.get("expected_results")),
        "run_group": run.get("run_group") or None,
        "heartbeat_s": _float(run.get("heartbeat_s")),
        "note": run.get("note"),
    }


def _text(mapping: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        if mapping.get(key) is not None:
            return str(mapping[key])
    return None


def result_row(data: Mapping[str, Any]) -> dict[str, Any]:
    """Columns of the result table from a `CaseResult.to_dict()` (without run/series ids)."""
    status = data.get("status") or "ok"
    if status not in RESULT_STATUSES:
        raise ValueError(f"result status must be one of {', '.join(RESULT_STATUSES)}, not {status!r}")
    problem = timing_problem(data)
    if problem:
        raise ValueError(f"result {data.get('case_id')!r}: {problem}")
    stats = dict(data.get("stats") or {})
    samples = list(data.get("samples") or [])
    row: dict[str, Any] = {name: _float(stats.pop(name, None)) for name in STAT_COLUMNS}
    rounds = stats.pop("rounds", None)
    row.update(
        status=status,
        message=data.get("message"),
        unit=data.get("unit") or "s",
        rounds=int(rounds) if rounds is not None else len(samples),
        iterations=int(data.get("iterations") or 1),
        warmup_rounds=int(data.get("warmup_rounds") or 0),
        stats_extra=stats,
        throughput=_float(data.get("throughput")),
        throughput_unit=data.get("throughput_unit"),
        batch_size=_int(data.get("batch_size")),
        peak_memory_bytes=_int(data.get("peak_memory_bytes")),
        page_faults_per_iter=_float(data.get("page_faults_per_iter")),
        warnings=list(data.get("warnings") or []),
        tags=list(data.get("tags") or []),
        extra=dict(data.get("extra") or {}),
        samples=encode_samples(samples),
        device_samples=encode_samples(data.get("device_samples")),
        started_at=_ts(data.get("started_at")),
        finished_at=_ts(data.get("finished_at")),
        accuracy=data.get("accuracy"),
    )
    return row


def process_rows(result_id: int, processes: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Rows of result_process from a result's `processes` entries (see `benchmark.results.process_entry`)."""
    rows = []
    for k, p in enumerate(processes or []):
        status = p.get("status") or "ok"
        if status not in ("ok", "error"):
            raise ValueError(f"a process entry's status must be ok or error, not {status!r}")
        samples = list(p.get("samples") or [])
        bad = bad_timings(samples)
        if bad:
            raise ValueError(
                f"process {p.get('index', k)}: {bad} of {len(samples)} samples are not finite positive numbers"
            )
        rows.append(
            {
                "result_id": result_id,
                "process_index": int(p.get("index", k)),
                "pid": _int(p.get("pid")),
                "trial_order": int(p.get("order", k)),
                "status": status,
                "value": _float(p.get("value")),
                "iterations": int(p.get("iterations") or 1),
                "samples": encode_samples(samples),
                "message": p.get("message"),
            }
        )
    return rows


def process_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    """A stored process row as the `processes` entry it was made from."""
    samples = decode_samples(row["samples"])
    return {
        "index": row["process_index"],
        "pid": row["pid"],
        "order": row["trial_order"],
        "status": row["status"],
        "value": row["value"],
        "samples": [] if samples is None else samples.tolist(),
        "iterations": row["iterations"],
        "message": row["message"],
    }


def _processes_by_result(conn: Connection, result_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """The process entries of each result, in trial order (results without any are absent)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for start in range(0, len(result_ids), 10_000):
        chunk = result_ids[start : start + 10_000]
        query = (
            sa.select(PROCESS)
            .where(PROCESS.c.result_id.in_(chunk))
            .order_by(PROCESS.c.result_id, PROCESS.c.trial_order, PROCESS.c.id)
        )
        for row in conn.execute(query).mappings():
            out.setdefault(row["result_id"], []).append(process_dict(row))
    return out


def telemetry_row(result_id: int, telemetry: Mapping[str, Any]) -> dict[str, Any]:
    """Telemetry of a result: everything but the timeline as JSON, the timeline zlib-compressed."""
    summary = {k: v for k, v in telemetry.items() if k != "timeline"}
    timeline = telemetry.get("timeline")
    blob = None if timeline is None else zlib.compress(json_serializer(timeline).encode(), 6)
    return {
        "result_id": result_id,
        "summary": summary,
        "timeline": blob,
        "timeline_format": None if blob is None else TIMELINE_FORMAT,
    }


def profile_row(result_id: int, profile: Mapping[str, Any]) -> dict[str, Any]:
    info = {k: v for k, v in profile.items() if k not in ("op_table", "copies")}
    return {
        "result_id": result_id,
        "op_table": profile.get("op_table"),
        "copies": profile.get("copies"),
        "info": info,
    }


def _telemetry_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(row["summary"] or {})
    if row["timeline"] is not None:
        out["timeline"] = json.loads(zlib.decompress(row["timeline"]))
    return out


def _profile_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(row["info"] or {})
    for key in ("op_table", "copies"):
        if row[key] is not None:
            out[key] = row[key]
    return out


def case_result_dict(
    row: Mapping[str, Any], telemetry: Mapping[str, Any] | None, profile: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A stored result as a `CaseResult.to_dict()`-shaped dict, plus result_id and run_id."""
    stats = {name: row[name] for name in STAT_COLUMNS if row[name] is not None}
    stats["rounds"] = row["rounds"]
    stats.update(row["stats_extra"] or {})
    samples = decode_samples(row["samples"])
    device = decode_samples(row["device_samples"])
    return {
        "result_id": row["id"],
        "run_id": row["run_id"],
        "case_id": row["case_id"],
        "name": row["name"],
        "kind": row["kind"],
        "place": row["place"],
        "mode": row["mode"],
        "metric": row["metric"],
        "config": row["config"],
        "config_hash": row["config_hash"],
        "tags": row["tags"] or [],
        "status": row["status"],
        "message": row["message"],
        "unit": row["unit"],
        "samples": [] if samples is None else samples.tolist(),
        "iterations": row["iterations"],
        "warmup_rounds": row["warmup_rounds"],
        "stats": stats,
        "device_samples": None if device is None else device.tolist(),
        "throughput": row["throughput"],
        "throughput_unit": row["throughput_unit"],
        "batch_size": row["batch_size"],
        "peak_memory_bytes": row["peak_memory_bytes"],
        "page_faults_per_iter": row["page_faults_per_iter"],
        "warnings": row["warnings"] or [],
        "telemetry": None if telemetry is None else _telemetry_dict(telemetry),
        "profile": None if profile is None else _profile_dict(profile),
        "accuracy": row["accuracy"],
        "extra": row["extra"] or {},
        "started_at": _epoch(row["started_at"]),
        "finished_at": _epoch(row["finished_at"]),
    }


# ------------------------------------------------------------------------------------------ queries


def missing_note(expected: int, stored: int) -> str:
    return f"{expected - stored} of {expected} results missing"


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


def _by_result(conn: Connection, table: sa.Table, result_ids: list[int]) -> dict[int, Mapping[str, Any]]:
    out: dict[int, Mapping[str, Any]] = {}
    for start in range(0, len(result_ids), 10_000):
        chunk = result_ids[start : start + 10_000]
        for row in conn.execute(sa.select(table).where(table.c.result_id.in_(chunk))).mappings():
            out[row["result_id"]] = row
    return out


def _matching_cases(conn: Connection, pattern: str) -> list[int]:
    """Primary keys of the cases whose case id matches `pattern`: a glob if it has * or ? (brackets
    are literal, since case ids carry them), else a substring."""
    rows = conn.execute(sa.select(CASE.c.id, CASE.c.case_id)).all()
    if WILDCARDS & set(pattern):
        regex = re.compile("".join({"*": ".*", "?": "."}.get(ch, re.escape(ch)) for ch in pattern), re.DOTALL)
        return [pk for pk, case_id in rows if regex.fullmatch(case_id)]
    return [pk for pk, case_id in rows if pattern in case_id]


def _history_query(cases: list[int], place: str | None, last: int | None, with_samples: bool):
    columns = [
        RESULT.c.id.label("result_id"),
        RESULT.c.run_id,
        RUN.c.started_at,
        CASE.c.case_id,
        CASE.c.name,
        CASE.c.config_hash,
        SERIES.c.place,
        SERIES.c.mode,
        SERIES.c.metric,
        SERIES.c.id.label("series_id"),
        MACHINE.c.fingerprint.label("machine"),
        RUN.c.git_commit,
        RUN.c.git_branch,
        RUN.c.extra["machine_env"].label("machine_env"),  # drivers, kernel, Python of the run
        RESULT.c.status,
        RESULT.c.message,
        RESULT.c.unit,
        RESULT.c.rounds,
        RESULT.c.iterations,
        *(RESULT.c[name] for name in STAT_COLUMNS),
        RESULT.c.throughput,
        RESULT.c.throughput_unit,
        RESULT.c.peak_memory_bytes,
    ]
    if with_samples:
        columns.append(RESULT.c.samples)
    if last:
        order = (RESULT.c.run_time.desc(), RESULT.c.id.desc())
        columns.append(sa.func.row_number().over(partition_by=SERIES.c.id, order_by=order).label("rn"))
    query = (
        sa.select(*columns)
        .join(SERIES, SERIES.c.id == RESULT.c.series_id)
        .join(CASE, CASE.c.id == SERIES.c.case_pk)
        .join(MACHINE, MACHINE.c.id == SERIES.c.machine_id)
        .join(RUN, RUN.c.id == RESULT.c.run_id)
        .where(SERIES.c.case_pk.in_(cases))
    )
    if place:
        query = query.where(
            sa.or_(SERIES.c.place == place, SERIES.c.place.startswith(f"{place}:", autoescape=True))
        )
    if last:
        sub = query.subquery()
        query = sa.select(sub).where(sub.c.rn <= last)
        return query.order_by(
            sub.c.case_id,
            sub.c.place,
            sub.c.mode,
            sub.c.metric,
            sub.c.machine,
            sub.c.started_at,
            sub.c.result_id,
        )
    return query.order_by(
        CASE.c.case_id,
        SERIES.c.place,
        SERIES.c.mode,
        SERIES.c.metric,
        MACHINE.c.fingerprint,
        RESULT.c.run_time,
        RESULT.c.id,
    )


def _targets_query(run_id: int):
    """The series of one run, with their keys and the run's start time."""
    return (
        sa.select(
            RESULT.c.series_id,
            RESULT.c.run_time,
            CASE.c.case_id,
            CASE.c.config_hash,
            SERIES.c.place,
            SERIES.c.mode,
            SERIES.c.metric,
        )
        .distinct()
        .join(SERIES, SERIES.c.id == RESULT.c.series_id)
        .join(CASE, CASE.c.id == SERIES.c.case_pk)
        .where(RESULT.c.run_id == run_id)
    )


def _prior_results(run_id: int, run_time: float, last: int, statuses: Iterable[str] | None):
    """(series of the run, their latest `last` ok results before `run_time` as a correlated select),
    from runs recorded with one of `statuses` (None: any)."""
    targets = sa.select(RESULT.c.series_id).where(RESULT.c.run_id == run_id).distinct().subquery("t")
    prior = RESULT.alias("prior")
    conditions = [
        prior.c.series_id == targets.c.series_id,
        prior.c.status == "ok",
        prior.c.run_time < run_time,  # excludes the run itself; no column outside the index
    ]
    if statuses is not None:
        # Uncorrelated: evaluated once, then a lookup per index entry.
        conditions.append(prior.c.run_id.in_(sa.select(RUN.c.id).where(RUN.c.status.in_(list(statuses)))))
    latest = (
        sa.select(prior.c.id, prior.c.run_id, prior.c.run_time, prior.c.unit, prior.c.median, prior.c.samples)
        .where(*conditions)
        .order_by(prior.c.run_time.desc(), prior.c.id.desc())
        .limit(last)
    )
    return targets, latest


def _generic_baselines(
    conn: Connection, run_id: int, run_time: float, last: int, statuses: Iterable[str] | None
) -> dict[int, Baseline]:
    """SQLite has no LATERAL: a correlated `id IN (SELECT ... LIMIT n)` per series of the run, which
    reads only the (series_id, status, run_time, id) index, then the rows themselves."""
    targets, latest = _prior_results(run_id, run_time, last, statuses)
    ids = latest.with_only_columns(latest.selected_columns.id).correlate(targets)
    columns = (
        RESULT.c.id,
        RESULT.c.run_id,
        RESULT.c.run_time,
        RESULT.c.unit,
        RESULT.c.median,
        RESULT.c.samples,
    )
    query = sa.select(targets.c.series_id, *columns).select_from(targets).join(RESULT, RESULT.c.id.in_(ids))
    rows: dict[int, list[tuple]] = collections.defaultdict(list)
    for row in conn.execute(query).all():
        rows[row[0]].append(row)
    return {sid: Baseline.from_rows(points) for sid, points in rows.items()}


def _postgresql_baselines(
    conn: Connection, run_id: int, run_time: float, last: int, statuses: Iterable[str] | None
) -> dict[int, Baseline]:
    """PostgreSQL: a LATERAL index scan per series, aggregated server-side into one row per series
    (arrays, and the raw samples concatenated), which is far less to transfer and parse."""
    targets, latest = _prior_results(run_id, run_time, last, statuses)
    b = latest.lateral("b")
    order = (b.c.run_time, b.c.id)

    def agg(column):
        return sa.func.array_agg(aggregate_order_by(column, *order))

    query = (
        sa.select(
            targets.c.series_id,
            agg(b.c.id),
            agg(b.c.run_id),
            agg(b.c.run_time),
            agg(b.c.median),
            agg(sa.func.length(b.c.samples)),
            sa.func.string_agg(b.c.samples, aggregate_order_by(sa.literal(b"", sa.LargeBinary()), *order)),
            sa.func.max(b.c.unit),
        )
        .select_from(targets)
        .join(b, sa.true())
        .group_by(targets.c.series_id)
    )
    out = {}
    for series_id, ids, run_ids, times, medians, lengths, blob, unit in conn.execute(query):
        flat = decode_samples(bytes(blob or b""))
        ends = np.cumsum(np.asarray(lengths, dtype=np.int64) // 8)
        out[series_id] = Baseline(
            run_ids=list(run_ids),
            result_ids=list(ids),
            run_times=list(times),
            medians=_medians(medians),
            samples=np.split(flat, ends[:-1]),
            unit=unit,
        )
    return out


def _fill_commits(conn: Connection, baselines: Iterable[Baseline]) -> None:
    baselines = list(baselines)
    run_ids = {r for b in baselines for r in b.run_ids}
    if not run_ids:
        return
    commits = dict(conn.execute(sa.select(RUN.c.id, RUN.c.git_commit).where(RUN.c.id.in_(run_ids))).all())
    for baseline in baselines:
        baseline.git_commits = [commits.get(r) for r in baseline.run_ids]


def _fill_process_values(conn: Connection, baselines: Iterable[Baseline]) -> None:
    baselines = list(baselines)
    result_ids = [r for b in baselines for r in b.result_ids]
    values: dict[int, list[float]] = {}
    for start in range(0, len(result_ids), 10_000):
        chunk = result_ids[start : start + 10_000]
        query = (
            sa.select(PROCESS.c.result_id, PROCESS.c.value)
            .where(PROCESS.c.result_id.in_(chunk), PROCESS.c.status == "ok")
            .order_by(PROCESS.c.result_id, PROCESS.c.trial_order, PROCESS.c.id)
        )
        for rid, value in conn.execute(query).all():
            if value is not None:
                values.setdefault(rid, []).append(value)
    for baseline in baselines:
        baseline.process_values = [np.asarray(values.get(r, []), dtype=float) for r in baseline.result_ids]


def _pid_alive(pid: int, started_at: dt.datetime | None) -> bool:
    """Whether the process that started the run still exists (and is not a newer process, same pid)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency
        import os

        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return not (started_at is not None and proc.create_time() > started_at.timestamp() + 1.0)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True
