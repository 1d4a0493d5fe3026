"""Rows of the history's tables from the harness's records (`environment.RunDescription`,
`CaseResult.to_dict()`, process entries, telemetry, profiles), checked on the way in, and the
stored rows back as those records."""

from __future__ import annotations

import datetime as dt
import json
import time
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

from benchmark.datamodel.case import config_hash
from benchmark.datamodel.environment import RunDescription
from benchmark.datamodel.result import CaseResult, ProcessValue, bad_timings, timing_problem
from benchmark.store.tables import (
    RESULT_STATUSES,
    RUN_STATUSES,
    decode_samples,
    encode_samples,
    json_serializer,
    to_datetime,
)

STAT_COLUMNS = ("min", "max", "median", "mean", "stddev", "q1", "q3", "iqr", "ci_low", "ci_high")
TIMELINE_FORMAT = "json+zlib"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def as_dict(result: CaseResult) -> dict[str, Any]:
    """A `CaseResult` as a dict with case_id, place, mode and a config hash (computed from the
    config when empty)."""
    if not isinstance(result, CaseResult):
        raise TypeError(f"the store takes a CaseResult, not {type(result).__name__}")
    data = result.to_dict()
    for key in ("case_id", "place", "mode"):
        if not data.get(key):
            raise ValueError(f"a result needs {key!r}; got keys {sorted(data)}")
    if not data.get("config_hash"):
        data["config_hash"] = config_hash(data.get("config") or {})
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


def run_row(run: RunDescription) -> dict[str, Any]:
    """Columns of the run table from a run's description; its `extra` goes to the `extra` column."""
    framework = dict(run.framework or {})
    status = run.status or "running"
    if status not in RUN_STATUSES:
        raise ValueError(f"run status must be one of {', '.join(RUN_STATUSES)}, not {status!r}")
    return {
        "started_at": to_datetime(run.started_at or time.time()),
        "finished_at": _ts(run.finished_at),
        "heartbeat_at": utcnow(),
        "status": status,
        "git_commit": run.git_commit,
        "git_branch": run.git_branch,
        "git_dirty": run.git_dirty,
        "paddle_version": _text(framework, "paddle_version", "version"),
        "paddle_commit": _text(framework, "paddle_commit", "commit"),
        "cuda_version": _text(framework, "cuda_version", "cuda"),
        "cudnn_version": _text(framework, "cudnn_version", "cudnn"),
        "framework": framework,
        "env": dict(run.env or {}),
        "trigger": run.trigger or "local",
        "tags": list(run.tags or []),
        "hostname": run.hostname,
        "pid": _int(run.pid),
        "extra": dict(run.extra),
        "expected_results": _int(run.expected_results),
        "run_group": run.run_group or None,
        "heartbeat_s": _float(run.heartbeat_s),
        "note": run.note,
        "import_source": run.import_source,
        "import_sha256": run.import_sha256,
        "baseline": bool(run.baseline),
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
    """Rows of result_process from a result's `processes` entries (see `benchmark.datamodel.result.process_entry`)."""
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
                "probe_s": _float(p.get("probe_s")),
            }
        )
    return rows


def process_value(row: Mapping[Any, Any]) -> ProcessValue:
    """A stored process row as the `ProcessValue` of the `processes` entry it was made from."""
    samples = decode_samples(row["samples"])
    return ProcessValue(
        index=row["process_index"],
        pid=row["pid"],
        order=row["trial_order"],
        status=row["status"],
        value=row["value"],
        samples=() if samples is None else tuple(samples.tolist()),
        iterations=row["iterations"],
        message=row["message"],
        probe_s=row.get("probe_s"),
    )


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
