"""The history schema (SQLAlchemy 2.0 declarative models: one `...Row` class per table, named apart
from the records the rest of the harness exchanges, such as `benchmark.datamodel.series.Series`; the code reads
and writes through the tables, `RUN`, `RESULT`, ...).

    machine 1──* run 1──* result *──1 series *──1 case
                 machine 1──* series               result 1──0..1 telemetry, profile
                                                   result 1──* result_process

- machine: one row per fingerprint (what makes timings comparable); `info` is the full description.
- run: one invocation of the suite: times, status, code (git), framework build, speed environment.
- case: a case id with one fully expanded config; a changed config (new `config_hash`) is a new row,
  hence a new series.
- series: one case at one place and mode, one metric (time or instructions), on one machine
  fingerprint: the unit of comparison.
- result: one case measured in one run. Summary statistics are columns; raw samples are float64
  little-endian bytes (`encode_samples`). `run_time` copies the run's start (epoch seconds) so that
  "the last N results of a series before time T" is one index range scan.
- telemetry / profile: a result's NVML timeline and its profiler op table.
- result_process: one row per worker-process trial of a result (issue 11), with its raw samples.

The classes carry a `Row` suffix (`MachineRow`, `RunRow`, `CaseRow`, `SeriesRow`, `ResultRow`,
`TelemetryRow`, `ProfileRow`, `ResultProcessRow`) so they are never mistaken for the typed records of
`benchmark.model` (`Case`, `Series`, `CaseResult`) that the store's reads return.

Migrations live in `migrations/`; every schema change here needs a new revision there.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

# running: the process is (or was last seen) measuring; complete: every selected case's result is
# stored; incomplete: the process ended but results are missing (a write failed, the session stopped
# early); interrupted: the process died (or, read from a 'running' row, stopped heartbeating);
# failed: the process ended in an error of its own (and imports of older versions that failed).
RUN_STATUSES = ("running", "complete", "incomplete", "interrupted", "failed")
RESULT_STATUSES = ("ok", "failed", "skipped", "error")

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# JSON documents: JSONB on PostgreSQL, JSON text elsewhere.
JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
# Row ids of the big tables: 64-bit on servers; SQLite's INTEGER PRIMARY KEY is already 64-bit.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


class UTCDateTime(TypeDecorator):
    """A timestamp stored in UTC and always returned timezone-aware (SQLite keeps naive text)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        value = to_datetime(value)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.timezone.utc)
        return value.astimezone(dt.timezone.utc)


def to_datetime(value: Any) -> dt.datetime:
    """Epoch seconds, ISO text or a datetime -> an aware UTC datetime (naive input is taken as UTC)."""
    if isinstance(value, dt.datetime):
        result = value
    elif isinstance(value, (int, float)):
        result = dt.datetime.fromtimestamp(float(value), tz=dt.timezone.utc)
    elif isinstance(value, str):
        result = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    else:
        raise TypeError(f"not a timestamp: {value!r}")
    if result.tzinfo is None:
        return result.replace(tzinfo=dt.timezone.utc)
    return result.astimezone(dt.timezone.utc)


def encode_samples(samples: Sequence[float] | None) -> bytes | None:
    """Raw samples -> float64 little-endian bytes (None stays None)."""
    if samples is None:
        return None
    return np.asarray(samples, dtype="<f8").tobytes()


def decode_samples(blob: bytes | None) -> np.ndarray | None:
    """Inverse of encode_samples: a float64 array (None stays None)."""
    if blob is None:
        return None
    return np.frombuffer(blob, dtype="<f8")


def to_plain(value: Any) -> Any:
    """JSON-ready copy: numpy values become Python ones, NaN/inf become None, tuples/sets lists."""
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.generic):
        return to_plain(value.item())
    if isinstance(value, np.ndarray):
        return to_plain(value.tolist())
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_plain(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return value


def json_serializer(value: Any) -> str:
    """Strict JSON for the JSON columns (PostgreSQL rejects NaN): see `to_plain`."""
    return json.dumps(to_plain(value), allow_nan=False, separators=(",", ":"), default=str)


class Base(DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


class MachineRow(Base):
    __tablename__ = "machine"

    id: Mapped[int] = mapped_column(primary_key=True)
    fingerprint: Mapped[str] = mapped_column(sa.String(64), unique=True)
    hostname: Mapped[str | None] = mapped_column(sa.String(255))
    info: Mapped[dict] = mapped_column(JSONType)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class RunRow(Base):
    __tablename__ = "run"
    __table_args__ = (
        sa.Index(None, "machine_id", "started_at"),
        sa.Index(None, "started_at"),
        sa.Index(None, "run_group"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    machine_id: Mapped[int] = mapped_column(sa.ForeignKey("machine.id"))
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    status: Mapped[str] = mapped_column(sa.String(16))
    git_commit: Mapped[str | None] = mapped_column(sa.String(64))
    git_branch: Mapped[str | None] = mapped_column(sa.String(255))
    git_dirty: Mapped[bool | None] = mapped_column(sa.Boolean())
    paddle_version: Mapped[str | None] = mapped_column(sa.String(64))
    paddle_commit: Mapped[str | None] = mapped_column(sa.String(64))
    cuda_version: Mapped[str | None] = mapped_column(sa.String(32))
    cudnn_version: Mapped[str | None] = mapped_column(sa.String(32))
    framework: Mapped[dict] = mapped_column(JSONType)
    env: Mapped[dict] = mapped_column(JSONType)
    trigger: Mapped[str] = mapped_column(sa.String(32))
    tags: Mapped[list] = mapped_column(JSONType)
    hostname: Mapped[str | None] = mapped_column(sa.String(255))
    pid: Mapped[int | None] = mapped_column(sa.Integer())
    extra: Mapped[dict] = mapped_column(JSONType)
    # Added in revision 0003. How many results the run set out to store (None: not known, as in
    # runs recorded before 0003), so `complete` can be checked against what is there.
    expected_results: Mapped[int | None] = mapped_column(sa.Integer())
    # The runs of one job (e.g. the shards of one nightly) share a group and are judged as one.
    run_group: Mapped[str | None] = mapped_column(sa.String(128))
    # The writer refreshes heartbeat_at every `heartbeat_s` seconds: a lease, so a reader can tell
    # a dead run from a live one without the writer's help.
    heartbeat_s: Mapped[float | None] = mapped_column(sa.Double())
    # Why the run ended the way it did (e.g. "3 of 8 results not stored: disk full").
    note: Mapped[str | None] = mapped_column(sa.Text())
    # Added in revision 0007. The file an imported run was read from and its sha256 (None: measured
    # by the harness), and whether its results may be the baseline of later runs (an import is not,
    # unless imported with --as-baseline).
    import_source: Mapped[str | None] = mapped_column(sa.String(255))
    import_sha256: Mapped[str | None] = mapped_column(sa.String(64))
    baseline: Mapped[bool] = mapped_column(sa.Boolean(), server_default=sa.true())
    # Added in revision 0008. The reference probe's median figure over the run's trials, seconds
    # (the machine's speed during the run; None: no probe was timed).
    probe_s: Mapped[float | None] = mapped_column(sa.Double())


class CaseRow(Base):
    __tablename__ = "case"
    __table_args__ = (sa.UniqueConstraint("case_id", "config_hash"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    case_id: Mapped[str] = mapped_column(sa.String(512))
    name: Mapped[str] = mapped_column(sa.String(512))
    kind: Mapped[str] = mapped_column(sa.String(64))
    config: Mapped[dict] = mapped_column(JSONType)
    config_hash: Mapped[str] = mapped_column(sa.String(64))


class SeriesRow(Base):
    __tablename__ = "series"
    __table_args__ = (sa.UniqueConstraint("case_pk", "machine_id", "place", "mode", "metric"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    case_pk: Mapped[int] = mapped_column(sa.ForeignKey("case.id"))
    machine_id: Mapped[int] = mapped_column(sa.ForeignKey("machine.id"), index=True)
    place: Mapped[str] = mapped_column(sa.String(64))
    mode: Mapped[str] = mapped_column(sa.String(64))
    # What the series' samples measure (revision 0004): "time" (seconds per iteration) or
    # "instructions" (callgrind instruction counts per iteration).
    metric: Mapped[str] = mapped_column(sa.String(32), server_default="time")


class ResultRow(Base):
    __tablename__ = "result"
    # "The latest N ok results of a series before T", in index order (id breaks ties).
    __table_args__ = (sa.Index(None, "series_id", "status", "run_time", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_id: Mapped[int] = mapped_column(sa.ForeignKey("run.id"), index=True)
    series_id: Mapped[int] = mapped_column(sa.ForeignKey("series.id"))
    # The run's start in epoch seconds (a copy of run.started_at: the sort key of a series).
    run_time: Mapped[float] = mapped_column(sa.Double())
    status: Mapped[str] = mapped_column(sa.String(16))
    message: Mapped[str | None] = mapped_column(sa.Text())
    unit: Mapped[str] = mapped_column(sa.String(32))
    rounds: Mapped[int] = mapped_column(sa.Integer())
    iterations: Mapped[int] = mapped_column(sa.Integer())
    warmup_rounds: Mapped[int] = mapped_column(sa.Integer())
    min: Mapped[float | None] = mapped_column(sa.Double())
    max: Mapped[float | None] = mapped_column(sa.Double())
    median: Mapped[float | None] = mapped_column(sa.Double())
    mean: Mapped[float | None] = mapped_column(sa.Double())
    stddev: Mapped[float | None] = mapped_column(sa.Double())
    q1: Mapped[float | None] = mapped_column(sa.Double())
    q3: Mapped[float | None] = mapped_column(sa.Double())
    iqr: Mapped[float | None] = mapped_column(sa.Double())
    ci_low: Mapped[float | None] = mapped_column(sa.Double())
    ci_high: Mapped[float | None] = mapped_column(sa.Double())
    # Summary statistics without a column of their own (cv, mad, confidence, ...).
    stats_extra: Mapped[dict] = mapped_column(JSONType)
    throughput: Mapped[float | None] = mapped_column(sa.Double())
    throughput_unit: Mapped[str | None] = mapped_column(sa.String(32))
    batch_size: Mapped[int | None] = mapped_column(sa.Integer())
    peak_memory_bytes: Mapped[int | None] = mapped_column(sa.BigInteger())
    page_faults_per_iter: Mapped[float | None] = mapped_column(sa.Double())
    warnings: Mapped[list] = mapped_column(JSONType)
    tags: Mapped[list] = mapped_column(JSONType)
    extra: Mapped[dict] = mapped_column(JSONType)
    samples: Mapped[bytes | None] = mapped_column(sa.LargeBinary())
    device_samples: Mapped[bytes | None] = mapped_column(sa.LargeBinary())
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # Added in revision 0002: reference-check outcome (max abs/rel error, passed, ...).
    accuracy: Mapped[dict | None] = mapped_column(JSONType)


class TelemetryRow(Base):
    """NVML telemetry of one result (revision 0002): summary numbers and a compact timeline."""

    __tablename__ = "telemetry"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    result_id: Mapped[int] = mapped_column(BigId, sa.ForeignKey("result.id"), unique=True)
    summary: Mapped[dict] = mapped_column(JSONType)
    # zlib-compressed JSON of the timeline (see `timeline_format`), or None.
    timeline: Mapped[bytes | None] = mapped_column(sa.LargeBinary())
    timeline_format: Mapped[str | None] = mapped_column(sa.String(32))


class ProfileRow(Base):
    """Profiler pass of one result (revision 0002): op table, host/device copy counts, the rest."""

    __tablename__ = "profile"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    result_id: Mapped[int] = mapped_column(BigId, sa.ForeignKey("result.id"), unique=True)
    op_table: Mapped[list | dict | None] = mapped_column(JSONType)
    copies: Mapped[dict | None] = mapped_column(JSONType)
    info: Mapped[dict] = mapped_column(JSONType)


class ResultProcessRow(Base):
    """One worker-process trial of a result (revision 0006): its raw samples (float64 bytes, as
    `result.samples`) and value (their median), its pid and place in the run's trial order."""

    __tablename__ = "result_process"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    result_id: Mapped[int] = mapped_column(BigId, sa.ForeignKey("result.id"), index=True)
    # 0..P-1: which of the case's P processes.
    process_index: Mapped[int] = mapped_column(sa.Integer())
    pid: Mapped[int | None] = mapped_column(sa.Integer())
    # Position of the trial in the run's randomized trial sequence.
    trial_order: Mapped[int] = mapped_column(sa.Integer())
    status: Mapped[str] = mapped_column(sa.String(16))
    value: Mapped[float | None] = mapped_column(sa.Double())
    iterations: Mapped[int] = mapped_column(sa.Integer())
    samples: Mapped[bytes | None] = mapped_column(sa.LargeBinary())
    message: Mapped[str | None] = mapped_column(sa.Text())
    # Added in revision 0008: the reference probe's figure around the trial, seconds.
    probe_s: Mapped[float | None] = mapped_column(sa.Double())


class AcknowledgementRow(Base):
    """A user accepted a series' level from one run on (revision 0009): a regression of that series
    stops failing, and the judge reads the series' history from `run_id` on. Who, why and when."""

    __tablename__ = "acknowledgement"

    id: Mapped[int] = mapped_column(primary_key=True)
    series_id: Mapped[int] = mapped_column(sa.ForeignKey("series.id"), index=True)
    run_id: Mapped[int] = mapped_column(sa.ForeignKey("run.id"))
    by: Mapped[str] = mapped_column(sa.String(255))
    why: Mapped[str] = mapped_column(sa.Text())
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


# The tables as SQLAlchemy Core handles (the store's queries are Core statements).
def _table(model: type[Base]) -> sa.Table:
    return cast(sa.Table, model.__table__)


MACHINE, RUN, CASE, SERIES, RESULT = (_table(m) for m in (MachineRow, RunRow, CaseRow, SeriesRow, ResultRow))
TELEMETRY, PROFILE, PROCESS = _table(TelemetryRow), _table(ProfileRow), _table(ResultProcessRow)
ACKNOWLEDGEMENT = _table(AcknowledgementRow)
