"""Export results to CSV/JSON (optionally pytest-benchmark's `--benchmark-json` schema).

Export formats:
- CSV: one row per result, summary statistics as columns, raw samples as a JSON list.
- JSON: `{"format": "benchmark-history/1", "run": ..., "machine": ..., "results": [CaseResult dicts]}`.
- pytest-benchmark JSON: `machine_info`, `commit_info`, `benchmarks[{name, fullname, stats{..., data}}]`,
  `datetime`, `version`, readable by `pytest-benchmark compare`. Our own run, machine and case
  descriptions ride along (`benchmark` key, `extra_info.benchmark_case`), so exporting and importing
  again restores the same series (`benchmark.store.pytest_import`).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Mapping
from typing import Any

from pytest_benchmark.stats import Stats

from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.run import RunRecord
from benchmark.store.core import Store
from benchmark.store.tables import to_plain

JSON_FORMAT = "benchmark-history/1"
CSV_COLUMNS = (
    "run_id", "result_id", "case_id", "name", "kind", "place", "mode", "config_hash", "status", "message",
    "unit", "rounds", "iterations", "min", "max", "mean", "median", "stddev", "q1", "q3", "iqr", "ci_low",
    "ci_high", "throughput", "throughput_unit", "peak_memory_bytes", "page_faults_per_iter", "warnings",
    "git_commit", "machine", "run_started_at", "samples", "device_samples",
)  # fmt: skip
PYTEST_BENCHMARK_STATS = ("min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1", "q3")


def export_run(store: Store, run_id: int, fmt: str, *, pytest_benchmark: bool = False) -> str:
    """The results of one run as text in `fmt` ("csv" or "json")."""
    run = store.run(run_id)
    if run is None:
        raise ValueError(f"there is no run {run_id} in {store.display_url}")
    results = [stored_dict(r) for r in store.results(run_id)]
    if fmt == "csv":
        if pytest_benchmark:
            raise ValueError("--pytest-benchmark needs --format json")
        return to_csv(run, results)
    if fmt == "json":
        doc = to_pytest_benchmark(run, results) if pytest_benchmark else to_json(run, results)
        return json.dumps(to_plain(doc), indent=2, allow_nan=False, default=str) + "\n"
    raise ValueError(f"unknown export format {fmt!r} (csv or json)")


def export_runs(store: Store, run_ids: list[int], fmt: str, *, pytest_benchmark: bool = False) -> str:
    """Several runs (a run group) as one: CSV rows of all of them; one JSON document whose
    `results` hold every run's (each result names its run_id) and `runs` every run. In
    pytest-benchmark's schema the runs must share one machine."""
    if len(run_ids) == 1:
        return export_run(store, run_ids[0], fmt, pytest_benchmark=pytest_benchmark)
    runs = []
    for run_id in run_ids:
        run = store.run(run_id)
        if run is None:
            raise ValueError(f"there is no run {run_id} in {store.display_url}")
        runs.append((run, [stored_dict(r) for r in store.results(run_id)]))
    if fmt == "csv":
        if pytest_benchmark:
            raise ValueError("--pytest-benchmark needs --format json")
        header, *rest = to_csv(*runs[0]).splitlines(keepends=True)
        return "".join([header, *rest, *(line for r in runs[1:] for line in to_csv(*r).splitlines(True)[1:])])
    if fmt != "json":
        raise ValueError(f"unknown export format {fmt!r} (csv or json)")
    if pytest_benchmark:
        machines = {run.machine for run, _ in runs}
        if len(machines) > 1:
            raise ValueError(
                f"runs {', '.join(map(str, run_ids))} ran on {len(machines)} machines: export them one by one "
                "in pytest-benchmark's schema (--run ID)"
            )
        doc = to_pytest_benchmark(runs[0][0], [r for _, results in runs for r in results])
        doc["benchmark"]["runs"] = [_run_doc(run) for run, _ in runs]
    else:
        doc = {
            "format": JSON_FORMAT,
            "run_group": runs[0][0].run_group,
            "runs": [{**_run_doc(run), "machine_info": dict(run.machine_info)} for run, _ in runs],
            "results": [r for _, results in runs for r in results],
        }
    return json.dumps(to_plain(doc), indent=2, allow_nan=False, default=str) + "\n"


# The keys a stored result's dict starts with, in the order the exports write them; the rest follow
# in `CaseResult.to_dict()`'s order.
_STORED_FIRST = ("result_id", "run_id", "case_id", "name", "kind", "place", "mode", "metric")


def stored_dict(result: CaseResult) -> dict[str, Any]:
    """A result read from the store as the dict the exports write: `to_dict()` with its result_id
    and run_id first and metric after mode."""
    data = result.to_dict()
    first = {key: data.pop(key, None) for key in _STORED_FIRST}
    return {**first, **data}


def to_csv(run: RunRecord, results: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for result in results:
        writer.writerow(_csv_row(run, result))
    return out.getvalue()


def _csv_row(run: RunRecord, result: Mapping[str, Any]) -> dict[str, Any]:
    stats = result["stats"]
    row = {key: result.get(key) for key in CSV_COLUMNS if key in result}
    row.update({key: stats.get(key) for key in ("min", "max", "mean", "median", "stddev", "q1", "q3", "iqr")})
    row.update(
        rounds=stats.get("rounds"),
        ci_low=stats.get("ci_low"),
        ci_high=stats.get("ci_high"),
        warnings="; ".join(result["warnings"]),
        git_commit=run.git_commit,
        machine=run.machine,
        run_started_at=_iso(run.started_at),
        samples=json.dumps(result["samples"]),
        device_samples="" if result["device_samples"] is None else json.dumps(result["device_samples"]),
    )
    return row


def to_json(run: RunRecord, results: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": JSON_FORMAT,
        "run": _run_doc(run),
        "machine": {"fingerprint": run.machine, **run.machine_info},
        "results": results,
    }


def _run_doc(run: RunRecord) -> dict[str, Any]:
    skip = {"machine_info", "machine_id", "recorded_status"}
    return {
        k: (_iso(v) if isinstance(v, dt.datetime) else v) for k, v in run.to_dict().items() if k not in skip
    }


def to_pytest_benchmark(run: RunRecord, results: list[dict[str, Any]]) -> dict[str, Any]:
    """The run in pytest-benchmark's `--benchmark-json` schema (ok results with samples only)."""
    machine = {"fingerprint": run.machine, **run.machine_info}
    return {
        "machine_info": _pytest_machine_info(machine),
        "commit_info": {
            "id": run.git_commit,
            "time": None,
            "author_time": None,
            "dirty": run.git_dirty,
            "project": None,
            "branch": run.git_branch,
        },
        "benchmarks": [_pytest_benchmark_entry(r) for r in results if r["status"] == "ok" and r["samples"]],
        "datetime": _iso(run.started_at),
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
        from importlib.metadata import version  # only for the pytest-benchmark export

        return version("pytest-benchmark")
    except Exception:  # pragma: no cover - pytest-benchmark is a dependency
        return "unknown"


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, dt.datetime) else value
