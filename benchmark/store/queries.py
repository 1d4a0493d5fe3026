"""The queries behind the store's reads: series keys, a case-id pattern, a series' history, and
the baselines of a run's series (SQLite: a correlated index lookup per series; PostgreSQL: one
LATERAL scan aggregated server-side)."""

from __future__ import annotations

import collections
import operator
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.engine import Connection

from benchmark.datamodel.result import ProcessValue
from benchmark.datamodel.run import SIDE_JOBS, SUITE
from benchmark.datamodel.series import Series
from benchmark.store.rows import STAT_COLUMNS, process_value
from benchmark.store.series import per_run_processes
from benchmark.store.tables import (
    CASE,
    MACHINE,
    PROCESS,
    RESULT,
    RUN,
    SERIES,
    decode_samples,
)

# Statuses of the runs baselines are taken from, unless a caller asks for others.
BASELINE_RUN_STATUSES = ("complete",)
WILDCARDS = frozenset("*?")


def baseline_from_rows(rows: list[tuple]) -> Series:
    """The baseline of one series (`Series` without its key) from (series_id, result_id, run_id,
    run_time, unit, median, samples) rows, in any order."""
    rows = sorted(rows, key=operator.itemgetter(3, 1))
    return Series(
        run_ids=[r[2] for r in rows],
        result_ids=[r[1] for r in rows],
        times=[r[3] for r in rows],
        values=_medians(r[5] for r in rows),
        samples=[_samples(r[6]) for r in rows],
        unit=(rows[-1][4] if rows else None) or "s",
    )


def _samples(blob: bytes | None) -> np.ndarray:
    decoded = decode_samples(blob)
    return np.empty(0) if decoded is None else decoded


def _medians(values: Iterable[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def processes_by_result(conn: Connection, result_ids: list[int]) -> dict[int, list[ProcessValue]]:
    """The process entries of each result, in trial order (results without any are absent)."""
    out: dict[int, list[ProcessValue]] = {}
    for start in range(0, len(result_ids), 10_000):
        chunk = result_ids[start : start + 10_000]
        query = (
            sa.select(PROCESS)
            .where(PROCESS.c.result_id.in_(chunk))
            .order_by(PROCESS.c.result_id, PROCESS.c.trial_order, PROCESS.c.id)
        )
        for row in conn.execute(query).mappings():
            out.setdefault(row["result_id"], []).append(process_value(row))
    return out


def by_result(conn: Connection, table: sa.Table, result_ids: list[int]) -> dict[int, Mapping[Any, Any]]:
    out: dict[int, Mapping[Any, Any]] = {}
    for start in range(0, len(result_ids), 10_000):
        chunk = result_ids[start : start + 10_000]
        for row in conn.execute(sa.select(table).where(table.c.result_id.in_(chunk))).mappings():
            out[row["result_id"]] = row
    return out


def matching_cases(conn: Connection, pattern: str) -> list[int]:
    """Primary keys of the cases whose case id matches `pattern`: a glob if it has * or ? (brackets
    are literal, since case ids carry them), else a substring."""
    rows = conn.execute(sa.select(CASE.c.id, CASE.c.case_id)).all()
    if WILDCARDS & set(pattern):
        regex = re.compile("".join({"*": ".*", "?": "."}.get(ch, re.escape(ch)) for ch in pattern), re.DOTALL)
        return [pk for pk, case_id in rows if regex.fullmatch(case_id)]
    return [pk for pk, case_id in rows if pattern in case_id]


def history_query(cases: list[int], place: str | None, last: int | None, with_samples: bool, job: str | None):
    """The results of these cases' series (at `place`), of the runs of `job` (None: every job)."""
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
        RUN.c.trigger,
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
    if job == SUITE:
        query = query.where(RUN.c.trigger.is_(None) | RUN.c.trigger.notin_(SIDE_JOBS))
    elif job is not None:
        query = query.where(RUN.c.trigger == job)
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


def targets_query(run_id: int):
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
    from runs recorded with one of `statuses` (None: any) that may be a baseline (`run.baseline`:
    not an import, unless imported --as-baseline)."""
    targets = sa.select(RESULT.c.series_id).where(RESULT.c.run_id == run_id).distinct().subquery("t")
    prior = RESULT.alias("prior")
    conditions = [
        prior.c.series_id == targets.c.series_id,
        prior.c.status == "ok",
        prior.c.run_time < run_time,  # excludes the run itself; no column outside the index
    ]
    # Only runs that may be a baseline: measured ones, and imports the user imported --as-baseline.
    eligible = [RUN.c.baseline.is_(True)]
    if statuses is not None:
        eligible.append(RUN.c.status.in_(list(statuses)))
    # Uncorrelated: evaluated once, then a lookup per index entry.
    conditions.append(prior.c.run_id.in_(sa.select(RUN.c.id).where(*eligible)))
    latest = (
        sa.select(prior.c.id, prior.c.run_id, prior.c.run_time, prior.c.unit, prior.c.median, prior.c.samples)
        .where(*conditions)
        .order_by(prior.c.run_time.desc(), prior.c.id.desc())
        .limit(last)
    )
    return targets, latest


def generic_baselines(
    conn: Connection, run_id: int, run_time: float, last: int, statuses: Iterable[str] | None
) -> dict[int, Series]:
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
    return {sid: baseline_from_rows(points) for sid, points in rows.items()}


def postgresql_baselines(
    conn: Connection, run_id: int, run_time: float, last: int, statuses: Iterable[str] | None
) -> dict[int, Series]:
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
        flat = _samples(bytes(blob or b""))
        ends = np.cumsum(np.asarray(lengths, dtype=np.int64) // 8)
        out[series_id] = Series(
            run_ids=list(run_ids),
            result_ids=list(ids),
            times=list(times),
            values=_medians(medians),
            samples=np.split(flat, ends[:-1]),
            unit=unit or "s",
        )
    return out


def fill_commits(conn: Connection, baselines: Iterable[Series]) -> None:
    baselines = list(baselines)
    run_ids = {r for b in baselines for r in b.run_ids}
    if not run_ids:
        return
    commits = dict(conn.execute(sa.select(RUN.c.id, RUN.c.git_commit).where(RUN.c.id.in_(run_ids))).all())
    for baseline in baselines:
        baseline.commits = [commits.get(r) for r in baseline.run_ids]


def fill_process_values(conn: Connection, baselines: Iterable[Series]) -> None:
    """Each series' `process_values` and `probes`, by the rule every reader uses
    (`benchmark.store.series.per_run_processes`); only the columns that rule reads are fetched."""
    baselines = list(baselines)
    result_ids = [r for b in baselines for r in b.result_ids]
    processes: dict[int, list[ProcessValue]] = {}
    for start in range(0, len(result_ids), 10_000):
        chunk = result_ids[start : start + 10_000]
        query = (
            sa.select(PROCESS.c.result_id, PROCESS.c.status, PROCESS.c.value, PROCESS.c.probe_s)
            .where(PROCESS.c.result_id.in_(chunk))
            .order_by(PROCESS.c.result_id, PROCESS.c.trial_order, PROCESS.c.id)
        )
        for rid, status, value, probe in conn.execute(query).all():
            entry = ProcessValue(index=0, pid=None, order=0, status=status, value=value, probe_s=probe)
            processes.setdefault(rid, []).append(entry)
    for baseline in baselines:
        baseline.process_values, baseline.probes = per_run_processes(baseline.result_ids, processes)
