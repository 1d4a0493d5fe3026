"""The store's reads: runs (with the truth about their status), results, a series' history and
baselines. A mixin of `Store`, which supplies the engine."""

from __future__ import annotations

import dataclasses
import datetime as dt
import socket
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psutil
import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import DBAPIError

from benchmark.analysis.events import run_environment
from benchmark.datamodel.result import CaseResult, ProcessValue, Stats
from benchmark.datamodel.run import SIDE_JOBS, SUITE, RunRecord, job_of
from benchmark.datamodel.series import Acknowledgement, HistoryPoint, Series, SeriesKey
from benchmark.store.engine import StoreError, error_reason, shown
from benchmark.store.queries import (
    BASELINE_RUN_STATUSES,
    by_result,
    fill_commits,
    fill_process_values,
    generic_baselines,
    history_query,
    matching_cases,
    postgresql_baselines,
    processes_by_result,
    targets_query,
)
from benchmark.store.rows import STAT_COLUMNS, case_result_dict, utcnow
from benchmark.store.series import series_from_points, upto
from benchmark.store.tables import (
    ACKNOWLEDGEMENT,
    CASE,
    MACHINE,
    PROFILE,
    RESULT,
    RUN,
    SERIES,
    TELEMETRY,
    decode_samples,
)

# The run row's columns a `RunRecord` takes as they are.
RUN_FIELDS = (
    "id", "machine_id", "started_at", "finished_at", "heartbeat_at", "git_commit", "git_branch",
    "git_dirty", "paddle_version", "paddle_commit", "cuda_version", "cudnn_version", "trigger",
    "hostname", "pid", "expected_results", "run_group", "heartbeat_s", "note", "machine",
    "import_source", "import_sha256", "baseline", "probe_s",
)  # fmt: skip
# The columns of `history_query` a `HistoryPoint` takes as they are.
HISTORY_FIELDS = (
    "result_id", "run_id", "started_at", "case_id", "name", "config_hash", "place", "mode", "metric",
    "series_id", "machine", "git_commit", "git_branch", "machine_env", "status", "message", "unit",
    "iterations", "throughput", "throughput_unit", "peak_memory_bytes",
)  # fmt: skip
# A `running` run without a lease of its own (recorded before revision 0003) is stale after this.
DEFAULT_STALE_AFTER_S = 3600.0
# A run whose heartbeat is older than LEASE_FACTOR periods (its `heartbeat_s`) is dead.
LEASE_FACTOR = 4.0


# Runs that are not runs of the suite: those of the side jobs (`benchmark compare`, `bisect`, `night`)
# and imported files. "latest" never means one of them (address them by --run ID or --run-group).
NOT_SUITE_TRIGGERS = (*SIDE_JOBS, "import")


class StoreReads:
    """The read methods of `Store`."""

    engine: Engine
    url: URL
    stale_after_s: float

    @property
    def display_url(self) -> str:
        """The URL, password hidden."""
        return shown(self.url)

    @contextmanager
    def _read(self):
        try:
            with self.engine.connect() as conn:
                yield conn
        except DBAPIError as exc:
            raise StoreError(f"{self.display_url}: read failed: {error_reason(exc, self.url)}") from None

    def latest_run_id(self, run_group: str | None = None, *, suite: bool = False) -> int | None:
        """The most recently started run (of `run_group`, if given), or None. With `suite`, the
        latest run of the suite itself: not a `benchmark compare` or `bisect` side, not an import."""
        query = sa.select(RUN.c.id).order_by(RUN.c.started_at.desc(), RUN.c.id.desc()).limit(1)
        if run_group is not None:
            query = query.where(RUN.c.run_group == run_group)
        if suite:
            query = query.where(RUN.c.trigger.is_(None) | RUN.c.trigger.notin_(NOT_SUITE_TRIGGERS))
        with self._read() as conn:
            return conn.execute(query).scalar()

    def group_runs(self, run_group: str) -> list[int]:
        """The ids of the runs of one group (e.g. the shards of one nightly), oldest first."""
        query = sa.select(RUN.c.id).where(RUN.c.run_group == run_group).order_by(RUN.c.started_at, RUN.c.id)
        with self._read() as conn:
            return list(conn.execute(query).scalars())

    def run(self, run_id: int) -> RunRecord | None:
        """Everything recorded about one run, with its machine's description (`machine_info`)."""
        found = self._run_records(RUN.c.id == run_id, None)
        return found[0] if found else None

    def runs(self, limit: int | None = 20, *, jobs: Sequence[str] | None = None) -> list[RunRecord]:
        """The latest runs, newest first, each as `run` gives it; with `jobs`, only the runs of those
        side jobs ("compare", "bisect", "night": `benchmark.datamodel.run.SIDE_JOBS`)."""
        return self._run_records(None if jobs is None else RUN.c.trigger.in_(list(jobs)), limit)

    def _run_records(self, where: Any, limit: int | None) -> list[RunRecord]:
        query = (
            sa.select(RUN, MACHINE.c.fingerprint.label("machine"), MACHINE.c.info.label("machine_info"))
            .join(MACHINE, MACHINE.c.id == RUN.c.machine_id)
            .order_by(RUN.c.started_at.desc(), RUN.c.id.desc())
            .limit(limit)
        )
        if where is not None:
            query = query.where(where)
        with self._read() as conn:
            rows = conn.execute(query).mappings().all()
            counts = self._result_counts(conn, [r["id"] for r in rows])
        now = utcnow()
        return [self._record(row, *counts.get(row["id"], (set(), {})), now) for row in rows]

    def run_environments(self, run_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """The recorded volatile environment (``extra["machine_env"]``: drivers, kernel, OS release,
        Python) of each of `run_ids` that exists, in one query per 10,000 runs; {} for a run
        recorded without one."""
        ids = sorted(set(run_ids))
        out: dict[int, dict[str, Any]] = {}
        with self._read() as conn:
            for start in range(0, len(ids), 10_000):
                query = sa.select(RUN.c.id, RUN.c.extra).where(RUN.c.id.in_(ids[start : start + 10_000]))
                for run_id, extra in conn.execute(query).all():
                    out[run_id] = run_environment(extra)
        return out

    def _record(self, row: Mapping[str, Any], places: set, by_status: dict, now: dt.datetime) -> RunRecord:
        """The run of a run row (with machine and machine_info): its places, result counts,
        `missing` (expected but not stored, None when not known) and effective status, the
        recorded one kept as `recorded_status`."""
        results = sum(by_status.values())
        expected = row["expected_results"]
        missing = None if expected is None else max(expected - results, 0)
        return RunRecord(
            **{name: row[name] for name in RUN_FIELDS},
            status=self._effective_status(row, missing, now),
            tags=tuple(row["tags"] or ()),
            framework=row["framework"] or {},
            env=row["env"] or {},
            extra=row["extra"] or {},
            machine_info=row["machine_info"] or {},
            places=tuple(sorted(places)),
            results=results,
            results_by_status=by_status,
            missing=missing,
            recorded_status=row["status"],
        )

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
            if status != "skipped":  # a place is the run's where it has a result (not a GPU case skipped)
                places.add(place)
            by_status[status] = by_status.get(status, 0) + n
        return out

    def _effective_status(self, run: Mapping[str, Any], missing: int | None, now: dt.datetime) -> str:
        status = run["status"]
        if status == "complete" and missing:
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

    def missing_cases(self, run: RunRecord) -> list[tuple[str, str, str]]:
        """(case id, place, mode) of the cases `run` set out to store and did not."""
        expected = run.extra.get("expected_cases") or []
        query = (
            sa.select(CASE.c.case_id, SERIES.c.place, SERIES.c.mode)
            .join(SERIES, SERIES.c.case_pk == CASE.c.id)
            .join(RESULT, RESULT.c.series_id == SERIES.c.id)
            .where(RESULT.c.run_id == run.id)
        )
        with self._read() as conn:
            stored = {tuple(r) for r in conn.execute(query)}
        return [tuple(key) for key in expected if tuple(key) not in stored]

    def results(self, run_id: int) -> list[CaseResult]:
        """The results of one run, in the order they were stored, with their result_id and run_id."""
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
            telemetry = by_result(conn, TELEMETRY, ids)
            profiles = by_result(conn, PROFILE, ids)
            processes = processes_by_result(conn, ids)
        out = []
        for row in rows:
            result = case_result_dict(row, telemetry.get(row["id"]), profiles.get(row["id"]))
            result["processes"] = processes.get(row["id"], [])
            out.append(CaseResult.from_dict(result))
        return out

    def history(
        self,
        pattern: str,
        place: str | None = None,
        last: int | None = None,
        *,
        with_samples: bool = False,
        job: str | None = SUITE,
    ) -> list[HistoryPoint]:
        """Results of every series whose case id matches `pattern`, oldest first per series.

        `pattern` is a glob (if it has * or ?; brackets are literal) or else a substring of the case
        id. `place` matches a place exactly, or every device of a kind ("gpu" matches "gpu:0"). `last`
        keeps the latest N results per series. Each point carries its run's time, commit and machine
        fingerprint and its summary statistics; raw samples (float64 arrays) and the per-process
        entries (`processes`) only `with_samples`. `job` keeps the runs of one job: the suite's
        (default), "compare", "bisect" or "night" (`benchmark.datamodel.run.JOBS`); None: every run.
        """
        with self._read() as conn:
            cases = matching_cases(conn, pattern)
            if not cases:
                return []
            query = history_query(cases, place, last, with_samples, job)
            rows = conn.execute(query).mappings().all()
            processes = processes_by_result(conn, [r["result_id"] for r in rows]) if with_samples else {}
        return [
            _history_point(row, processes.get(row["result_id"], []) if with_samples else None) for row in rows
        ]

    def series(
        self,
        patterns: Sequence[str] = ("*",),
        place: str | None = None,
        *,
        last: int | None = None,
        with_samples: bool = True,
        job: str | None = SUITE,
        run_id: int | None = None,
    ) -> list[Series]:
        """The complete series of every case id matching one of `patterns` (as `history`): per run
        its value, raw samples and process values and probe figure (`with_samples`), commit, time,
        environment events, and the results without a number (`others`); each series once, by its
        `report_key`. `job` as in `history` (default: the suite's runs only). With `run_id`, only
        the series with a result in that run, each cut after it.
        """
        seen: dict[tuple, Series] = {}
        for pattern in patterns or ("*",):
            for s in series_from_points(
                self.history(pattern, place, last, with_samples=with_samples, job=job)
            ):
                seen.setdefault(s.report_key, s)
        if run_id is None:
            return list(seen.values())
        return [cut for s in seen.values() if (cut := upto(s, run_id)) is not None]

    def acknowledgements(self, series_ids: Iterable[int]) -> dict[int, list[Acknowledgement]]:
        """The acknowledgements of these series (`benchmark ack`), oldest first, by series id."""
        ids = sorted(set(series_ids))
        out: dict[int, list[Acknowledgement]] = {}
        if not ids:
            return out
        with self._read() as conn:
            if "acknowledgement" not in sa.inspect(conn).get_table_names():
                return out  # a history not yet upgraded to revision 0009 has none
            rows = conn.execute(
                sa.select(ACKNOWLEDGEMENT)
                .where(ACKNOWLEDGEMENT.c.series_id.in_(ids))
                .order_by(ACKNOWLEDGEMENT.c.id)
            ).all()
        for r in rows:
            out.setdefault(r.series_id, []).append(Acknowledgement(r.series_id, r.run_id, r.by, r.why, r.at))
        return out

    def baselines(
        self, run_id: int, last: int = 100, *, statuses: Iterable[str] | None = BASELINE_RUN_STATUSES
    ) -> dict[SeriesKey, Series]:
        """For every series in run `run_id`: its previous `last` ok results, oldest first.

        Only results of the same case id, config hash, place and mode on the same machine fingerprint,
        from runs that started before this one and are recorded with one of `statuses` (default:
        complete runs only; None: any run), and that may be a baseline: a run imported from a file
        is not, unless it was imported with --as-baseline. Keys are `SeriesKey.of(result)`; each `Series` carries its
        key and series id, and a series without history maps to an empty one. Four queries in all
        (the run's series, their baselines, the commits of those runs, the process values of those
        results), whatever the number of series.
        """
        with self._read() as conn:
            targets = conn.execute(targets_query(run_id)).all()
            if not targets:
                return {}
            fetch = postgresql_baselines if conn.dialect.name == "postgresql" else generic_baselines
            found = fetch(conn, run_id, targets[0].run_time, last, statuses)
            fill_commits(conn, found.values())
            fill_process_values(conn, found.values())
        out = {}
        for t in targets:
            key = SeriesKey(t.case_id, t.config_hash, t.place, t.mode, t.metric)
            out[key] = dataclasses.replace(found.get(t.series_id, Series()), key=key, series_id=t.series_id)
        return out


def _samples(blob: bytes | None) -> np.ndarray:
    decoded = decode_samples(blob)
    return np.empty(0) if decoded is None else decoded


def _history_point(row: Mapping[str, Any], processes: list[ProcessValue] | None) -> HistoryPoint:
    stats = Stats(rounds=row["rounds"], **{name: row[name] for name in STAT_COLUMNS})
    return HistoryPoint(
        **{name: row[name] for name in HISTORY_FIELDS},
        stats=stats,
        samples=None if processes is None else _samples(row["samples"]),
        processes=None if processes is None else tuple(processes),
        job=job_of(row["trigger"]),
    )


def _pid_alive(pid: int, started_at: dt.datetime | None) -> bool:
    """Whether the process that started the run still exists (and is not a newer process, same pid)."""

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return not (started_at is not None and proc.create_time() > started_at.timestamp() + 1.0)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True
