"""Export results to CSV/JSON (optionally pytest-benchmark's `--benchmark-json` schema), and import
pytest-benchmark JSON files into the history.

Export formats:
- CSV: one row per result, summary statistics as columns, raw samples as a JSON list.
- JSON: `{"format": "benchmark-history/1", "run": ..., "machine": ..., "results": [CaseResult dicts]}`.
- pytest-benchmark JSON: `machine_info`, `commit_info`, `benchmarks[{name, fullname, stats{..., data}}]`,
  `datetime`, `version`, readable by `pytest-benchmark compare`. Our own run, machine and case
  descriptions ride along (`benchmark` key, `extra_info.benchmark_case`), so exporting and importing
  again restores the same series.

Import of a foreign pytest-benchmark file maps each benchmark to a case of kind "imported" (case id =
its fullname, config = group/params/options), keeps its raw `stats.data` when present, and turns its
machine_info/commit_info into a machine and a run. A file already imported (same sha256) is skipped.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from benchmark.analysis.summary import median_ci
from benchmark.environment import fingerprint
from benchmark.store.core import RUN, Store
from benchmark.store.models import json_serializer, to_plain

JSON_FORMAT = "benchmark-history/1"
IMPORT_TRIGGER = "import"
CSV_COLUMNS = (
    "run_id", "result_id", "case_id", "name", "kind", "place", "mode", "config_hash", "status", "message",
    "unit", "rounds", "iterations", "min", "max", "mean", "median", "stddev", "q1", "q3", "iqr", "ci_low",
    "ci_high", "throughput", "throughput_unit", "peak_memory_bytes", "page_faults_per_iter", "warnings",
    "git_commit", "machine", "run_started_at", "samples", "device_samples",
)  # fmt: skip
PYTEST_BENCHMARK_STATS = ("min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1", "q3")


class ImportFormatError(ValueError):
    """A file is not a pytest-benchmark JSON file."""


@dataclass(frozen=True)
class ImportOutcome:
    path: str
    run_id: int
    results: int
    duplicate: bool = False


# ------------------------------------------------------------------------------------------------ export


def export_run(store: Store, run_id: int, fmt: str, *, pytest_benchmark: bool = False) -> str:
    """The results of one run as text in `fmt` ("csv" or "json")."""
    run = store.run(run_id)
    if run is None:
        raise ValueError(f"there is no run {run_id} in {store.display_url}")
    results = store.results(run_id)
    if fmt == "csv":
        if pytest_benchmark:
            raise ValueError("--pytest-benchmark needs --format json")
        return to_csv(run, results)
    if fmt == "json":
        doc = to_pytest_benchmark(run, results) if pytest_benchmark else to_json(run, results)
        return json.dumps(to_plain(doc), indent=2, allow_nan=False, default=str) + "\n"
    raise ValueError(f"unknown export format {fmt!r} (csv or json)")


def to_csv(run: Mapping[str, Any], results: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for result in results:
        writer.writerow(_csv_row(run, result))
    return out.getvalue()


def _csv_row(run: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    stats = result["stats"]
    row = {key: result.get(key) for key in CSV_COLUMNS if key in result}
    row.update({key: stats.get(key) for key in ("min", "max", "mean", "median", "stddev", "q1", "q3", "iqr")})
    row.update(
        rounds=stats.get("rounds"),
        ci_low=stats.get("ci_low"),
        ci_high=stats.get("ci_high"),
        warnings="; ".join(result["warnings"]),
        git_commit=run.get("git_commit"),
        machine=run.get("machine"),
        run_started_at=_iso(run.get("started_at")),
        samples=json.dumps(result["samples"]),
        device_samples="" if result["device_samples"] is None else json.dumps(result["device_samples"]),
    )
    return row


def to_json(run: Mapping[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": JSON_FORMAT,
        "run": _run_doc(run),
        "machine": {"fingerprint": run["machine"], **(run.get("machine_info") or {})},
        "results": results,
    }


def _run_doc(run: Mapping[str, Any]) -> dict[str, Any]:
    skip = {"machine_info", "machine_id", "recorded_status"}
    return {k: (_iso(v) if isinstance(v, dt.datetime) else v) for k, v in run.items() if k not in skip}


def to_pytest_benchmark(run: Mapping[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """The run in pytest-benchmark's `--benchmark-json` schema (ok results with samples only)."""
    machine = {"fingerprint": run["machine"], **(run.get("machine_info") or {})}
    return {
        "machine_info": _pytest_machine_info(machine),
        "commit_info": {
            "id": run.get("git_commit"),
            "time": None,
            "author_time": None,
            "dirty": run.get("git_dirty"),
            "project": None,
            "branch": run.get("git_branch"),
        },
        "benchmarks": [_pytest_benchmark_entry(r) for r in results if r["status"] == "ok" and r["samples"]],
        "datetime": _iso(run.get("started_at")),
        "version": _pytest_benchmark_version(),
        "benchmark": {"run": _run_doc(run), "machine": machine},
    }


def _pytest_machine_info(machine: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "node": machine.get("hostname"),
        "processor": machine.get("arch"),
        "machine": machine.get("arch"),
        "python_implementation": machine.get("python_implementation"),
        "python_version": machine.get("python_version"),
        "release": machine.get("kernel"),
        "system": machine.get("os"),
        "cpu": {"brand_raw": machine.get("cpu_model"), "count": machine.get("cpu_count_logical")},
    }


def _pytest_benchmark_entry(result: Mapping[str, Any]) -> dict[str, Any]:
    from pytest_benchmark.stats import Stats

    stats = Stats()
    for value in result["samples"]:
        stats.update(value)
    # Everything but the samples (already in stats.data), so that importing restores the result.
    case = {k: v for k, v in result.items() if k not in ("result_id", "run_id", "samples")}
    return {
        "group": result["kind"],
        "name": result["case_id"],
        "fullname": result["case_id"],
        "params": result["config"].get("params"),
        "param": None,
        "extra_info": {"place": result["place"], "mode": result["mode"], "benchmark_case": case},
        "options": {"warmup": result["warmup_rounds"] > 0, "timer": "perf_counter", "disable_gc": False},
        "stats": {**stats.as_dict(), "data": list(result["samples"]), "iterations": result["iterations"]},
    }


def _pytest_benchmark_version() -> str:
    try:
        from importlib.metadata import version

        return version("pytest-benchmark")
    except Exception:  # pragma: no cover - pytest-benchmark is a dependency
        return "unknown"


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, dt.datetime) else value


# ------------------------------------------------------------------------------------------------ import


def import_pytest_benchmark(store: Store, path: str | os.PathLike[str]) -> ImportOutcome:
    """Read one pytest-benchmark JSON file into the history as a complete run."""
    raw = Path(path).read_bytes()
    doc = _load(raw, path)
    digest = hashlib.sha256(raw).hexdigest()
    previous = _imported_run(store, digest)
    if previous is not None:
        return ImportOutcome(str(path), previous, 0, duplicate=True)
    machine = machine_from_pytest(doc)
    run = run_from_pytest(doc, digest, Path(path).name)
    results = [result_from_benchmark(b) for b in doc["benchmarks"]]
    run_id = store.begin_run(machine, run)
    try:
        store.add_results(run_id, results)
    except BaseException:
        store.finish_run(run_id, "failed")
        raise
    store.finish_run(run_id, "complete", finished_at=run["started_at"])
    return ImportOutcome(str(path), run_id, len(results))


def _load(raw: bytes, path) -> dict[str, Any]:
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFormatError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ImportFormatError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' list)")
    for index, bench in enumerate(doc["benchmarks"]):
        if not isinstance(bench, dict) or not isinstance(bench.get("stats"), dict) or "fullname" not in bench:
            raise ImportFormatError(f"{path}: benchmark #{index} has no 'fullname' or no 'stats'")
    return doc


def _imported_run(store: Store, digest: str) -> int | None:
    query = sa.select(RUN.c.id, RUN.c.extra).where(RUN.c.trigger == IMPORT_TRIGGER)
    with store.engine.connect() as conn:
        for run_id, extra in conn.execute(query):
            if (extra or {}).get("import_sha256") == digest:
                return run_id
    return None


def machine_from_pytest(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Our machine description: exact when the file came from `benchmark export`, else mapped."""
    ours = (doc.get("benchmark") or {}).get("machine")
    if ours and ours.get("fingerprint"):
        return dict(ours)
    info = doc.get("machine_info") or {}
    cpu = info.get("cpu") or {}
    machine = {
        "hostname": info.get("node"),
        "cpu_model": cpu.get("brand_raw") or cpu.get("brand") or info.get("processor"),
        "cpu_count_logical": cpu.get("count"),
        "os": info.get("system"),
        "kernel": info.get("release"),
        "arch": info.get("machine"),
        "python_implementation": info.get("python_implementation"),
        "python_version": info.get("python_version"),
        "source": "pytest-benchmark",
        "pytest_benchmark_machine_info": info,
    }
    machine["fingerprint"] = fingerprint(machine)
    return machine


def run_from_pytest(doc: Mapping[str, Any], digest: str, filename: str) -> dict[str, Any]:
    ours = dict((doc.get("benchmark") or {}).get("run") or {})
    commit = doc.get("commit_info") or {}
    started = doc.get("datetime") or ours.get("started_at") or dt.datetime.now(dt.timezone.utc).isoformat()
    extra = {
        "import_sha256": digest,
        "import_file": filename,
        "pytest_benchmark_version": doc.get("version"),
        "original_run": ours or None,
    }
    return {
        "started_at": started,
        "git_commit": commit.get("id"),
        "git_branch": commit.get("branch"),
        "git_dirty": commit.get("dirty"),
        "framework": ours.get("framework") or {},
        "env": ours.get("env") or {},
        "trigger": IMPORT_TRIGGER,
        "tags": sorted({*(ours.get("tags") or []), "imported"}),
        "hostname": (doc.get("machine_info") or {}).get("node"),
        "pid": None,
        **extra,
    }


def result_from_benchmark(bench: Mapping[str, Any]) -> dict[str, Any]:
    """A CaseResult dict from one pytest-benchmark entry."""
    extra_info = dict(bench.get("extra_info") or {})
    ours = extra_info.pop("benchmark_case", None)
    stats_in = bench["stats"]
    samples = [float(x) for x in stats_in.get("data") or []]
    if ours:
        return {**ours, "status": "ok", "samples": samples}
    config = {k: bench.get(k) for k in ("group", "params", "param", "options")}
    stats = {k: stats_in[k] for k in PYTEST_BENCHMARK_STATS if stats_in.get(k) is not None}
    if samples:
        stats["ci_low"], stats["ci_high"] = median_ci(samples)
    return {
        "case_id": bench["fullname"],
        "name": bench.get("name") or bench["fullname"],
        "kind": "imported",
        "place": extra_info.get("place") or "cpu",
        "mode": extra_info.get("mode") or "pytest-benchmark",
        "config": config,
        "config_hash": hashlib.sha256(json_serializer(config).encode()).hexdigest()[:16],
        "status": "ok",
        "unit": "s",
        "samples": samples,
        "iterations": int(stats_in.get("iterations") or 1),
        "stats": stats,
        "extra": {"pytest_benchmark": {"extra_info": extra_info, "ops": stats_in.get("ops")}},
    }
