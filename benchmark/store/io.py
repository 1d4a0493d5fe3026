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
import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from benchmark.analysis.summary import median_ci
from benchmark.environment import fingerprint
from benchmark.results import bad_timings
from benchmark.store.core import Store
from benchmark.store.models import RUN, json_serializer, to_datetime, to_plain

JSON_FORMAT = "benchmark-history/1"
IMPORT_TRIGGER = "import"
CSV_COLUMNS = (
    "run_id", "result_id", "case_id", "name", "kind", "place", "mode", "config_hash", "status", "message",
    "unit", "rounds", "iterations", "min", "max", "mean", "median", "stddev", "q1", "q3", "iqr", "ci_low",
    "ci_high", "throughput", "throughput_unit", "peak_memory_bytes", "page_faults_per_iter", "warnings",
    "git_commit", "machine", "run_started_at", "samples", "device_samples",
)  # fmt: skip
PYTEST_BENCHMARK_STATS = ("min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1", "q3")


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
        runs.append((run, store.results(run_id)))
    if fmt == "csv":
        if pytest_benchmark:
            raise ValueError("--pytest-benchmark needs --format json")
        header, *rest = to_csv(*runs[0]).splitlines(keepends=True)
        return "".join([header, *rest, *(line for r in runs[1:] for line in to_csv(*r).splitlines(True)[1:])])
    if fmt != "json":
        raise ValueError(f"unknown export format {fmt!r} (csv or json)")
    if pytest_benchmark:
        machines = {run["machine"] for run, _ in runs}
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
            "run_group": runs[0][0].get("run_group"),
            "runs": [{**_run_doc(run), "machine_info": run.get("machine_info")} for run, _ in runs],
            "results": [r for _, results in runs for r in results],
        }
    return json.dumps(to_plain(doc), indent=2, allow_nan=False, default=str) + "\n"


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

# How far in the future a file's date may be (clock skew) before it is refused.
FUTURE_LEEWAY = dt.timedelta(minutes=10)
# A single benchmark entry (or any top-level value but `benchmarks`) larger than this is refused.
MAX_VALUE_CHARS = 64 << 20
READ_CHARS = 1 << 20
IMPORT_BATCH = 2000
MAX_PROBLEMS_SHOWN = 20
POSITIVE_STATS = ("min", "max", "mean", "median", "q1", "q3")
NON_NEGATIVE_STATS = ("stddev", "iqr", "ld15iqr", "hd15iqr", "ops", "total")
REL_TOLERANCE = 1e-6


class ImportProblems(ValueError):
    """A file cannot be imported: `problems` holds one line per problem (file, where, what)."""

    def __init__(self, path: str | os.PathLike[str], problems: list[str]):
        self.path = str(path)
        self.problems = problems
        super().__init__(problems[0] if problems else f"{path}: cannot be imported")

    def lines(self, limit: int = MAX_PROBLEMS_SHOWN) -> list[str]:
        shown = self.problems[:limit]
        if len(self.problems) > limit:
            shown.append(f"{self.path}: ... and {len(self.problems) - limit} more problem(s)")
        return shown


def import_pytest_benchmark(
    store: Store, path: str | os.PathLike[str], *, now: dt.datetime | None = None
) -> ImportOutcome:
    """Read one pytest-benchmark JSON file into the history as one complete run, atomically.

    The file is read twice as a stream (memory stays bounded whatever the number of benchmarks):
    first every value is checked (types, finite positive numbers, stats consistent with the raw
    samples, a date not in the future) and every problem collected, so a bad file raises
    `ImportProblems` with all of them and nothing is written; then the run and all its results are
    written in one transaction, so a failure leaves nothing behind and importing again imports.
    """
    path = Path(path)
    now = now or dt.datetime.now(dt.timezone.utc)
    digest = _sha256(path)
    header, count = _check_file(path, now)
    previous = _imported_run(store, digest)
    if previous is not None:
        return ImportOutcome(str(path), previous, 0, duplicate=True)
    machine = machine_from_pytest(header)
    run = run_from_pytest(header, digest, path.name)
    run.update(status="complete", finished_at=run["started_at"], expected_results=count)

    def results():
        for _, bench in _benchmarks(path):
            yield result_from_benchmark(bench)

    run_id = store.import_run(machine, run, results, batch=IMPORT_BATCH)
    return ImportOutcome(str(path), run_id, count)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise ImportProblems(path, [f"{path}: cannot read: {exc.strerror or exc}"]) from None
    return digest.hexdigest()


def _check_file(path: Path, now: dt.datetime) -> tuple[dict[str, Any], int]:
    """Stream the file once: (everything but the benchmarks, how many benchmarks), or
    ImportProblems with one line per problem."""
    problems: list[str] = []
    header: dict[str, Any] = {}
    count = 0
    try:
        for index, item in _benchmarks(path, header):
            count += 1
            problems.extend(f"{path}: {p}" for p in benchmark_problems(index, item))
    except _SyntaxProblem as exc:
        raise ImportProblems(path, [*problems, f"{path}: not valid JSON: {exc}"]) from None
    problems.extend(f"{path}: {p}" for p in header_problems(header, now))
    if problems:
        raise ImportProblems(path, problems)
    return header, count


# -- checks ---------------------------------------------------------------------------------------


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _finite(value: Any) -> float | None:
    """The value as a finite float, or None when it is not a finite number (bools are not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _shown(value: Any) -> str:
    text = (
        repr(value)
        if not isinstance(value, int) or abs(value) < 10**30
        else f"an integer of {len(str(abs(value)))} digits"
    )
    return text if len(text) <= 40 else text[:37] + "..."


def header_problems(header: Mapping[str, Any], now: dt.datetime) -> list[str]:
    problems = []
    if "benchmarks" not in header:
        problems.append("not a pytest-benchmark JSON file: no 'benchmarks' list")
    for key in ("machine_info", "commit_info", "benchmark"):
        if header.get(key) is not None and not isinstance(header[key], dict):
            problems.append(f"{key}: expected an object, got {_kind(header[key])}")
    commit = header.get("commit_info") if isinstance(header.get("commit_info"), dict) else {}
    for key in ("id", "branch"):
        if commit.get(key) is not None and not isinstance(commit[key], str):
            problems.append(f"commit_info.{key}: expected a string, got {_kind(commit[key])}")
    if commit.get("dirty") is not None and not isinstance(commit["dirty"], bool):
        problems.append(f"commit_info.dirty: expected true or false, got {_kind(commit['dirty'])}")
    machine = header.get("machine_info") if isinstance(header.get("machine_info"), dict) else {}
    if machine.get("cpu") is not None and not isinstance(machine["cpu"], dict):
        problems.append(f"machine_info.cpu: expected an object, got {_kind(machine['cpu'])}")
    if machine.get("node") is not None and not isinstance(machine["node"], str):
        problems.append(f"machine_info.node: expected a string, got {_kind(machine['node'])}")
    if header.get("version") is not None and not isinstance(header["version"], str):
        problems.append(f"version: expected a string, got {_kind(header['version'])}")
    ours = header.get("benchmark") if isinstance(header.get("benchmark"), dict) else {}
    for key in ("run", "machine"):
        if ours.get(key) is not None and not isinstance(ours[key], dict):
            problems.append(f"benchmark.{key}: expected an object, got {_kind(ours[key])}")
    our_machine = ours.get("machine") if isinstance(ours.get("machine"), dict) else {}
    fp = our_machine.get("fingerprint")
    if fp is not None and not (isinstance(fp, str) and 0 < len(fp) <= 64):
        problems.append(
            f"benchmark.machine.fingerprint: expected a string of 1 to 64 characters, got {_shown(fp)}"
        )
    our_run = ours.get("run") if isinstance(ours.get("run"), dict) else {}
    for key, kind in (("framework", dict), ("env", dict), ("tags", list)):
        if our_run.get(key) is not None and not isinstance(our_run[key], kind):
            problems.append(f"benchmark.run.{key}: expected {_kind(kind())}, got {_kind(our_run[key])}")
    when = header.get("datetime")
    if when is None and isinstance(ours.get("run"), dict):
        when = ours["run"].get("started_at")
    if when is not None:
        try:
            started = to_datetime(when)
        except (TypeError, ValueError, OverflowError, OSError):
            problems.append(f"datetime: expected an ISO 8601 date and time, got {_shown(when)}")
        else:
            if started > now + FUTURE_LEEWAY:
                problems.append(
                    f"datetime: {started.isoformat()} is in the future (now {now.isoformat(timespec='seconds')})"
                )
    return problems


def benchmark_problems(index: int, bench: Any) -> list[str]:
    """Every problem of one entry of `benchmarks`, one line each."""
    if not isinstance(bench, dict):
        return [f"benchmarks[{index}]: expected an object, got {_kind(bench)}"]
    name = bench.get("fullname")
    where = f"benchmarks[{index}]" + (f" ({name!r})" if isinstance(name, str) else "")
    problems = []
    if not isinstance(name, str) or not name.strip():
        problems.append(f"{where}: fullname: expected a non-empty string, got {_kind(name)}")
    for key in ("name", "group"):
        if bench.get(key) is not None and not isinstance(bench[key], str):
            problems.append(f"{where}: {key}: expected a string, got {_kind(bench[key])}")
    for key in ("params", "extra_info", "options"):
        if bench.get(key) is not None and not isinstance(bench[key], dict):
            problems.append(f"{where}: {key}: expected an object, got {_kind(bench[key])}")
    stats = bench.get("stats")
    if not isinstance(stats, dict):
        return [*problems, f"{where}: stats: expected an object, got {_kind(stats)}"]
    problems.extend(f"{where}: {p}" for p in stats_problems(stats))
    extra_info = bench.get("extra_info") if isinstance(bench.get("extra_info"), dict) else {}
    for key in ("place", "mode"):
        if extra_info.get(key) is not None and not (isinstance(extra_info[key], str) and extra_info[key]):
            problems.append(
                f"{where}: extra_info.{key}: expected a non-empty string, got {_kind(extra_info[key])}"
            )
    ours = extra_info.get("benchmark_case")
    if ours is not None:
        problems.extend(f"{where}: extra_info.benchmark_case{p}" for p in _our_case_problems(ours))
    return problems


def stats_problems(stats: Mapping[str, Any]) -> list[str]:
    """Numbers finite and positive, and consistent with the raw samples (`data`) when given."""
    problems = []
    values: dict[str, float] = {}
    for key in (*POSITIVE_STATS, *NON_NEGATIVE_STATS):
        if stats.get(key) is None:
            continue
        number = _finite(stats[key])
        if number is None:
            problems.append(f"stats.{key}: expected a finite number, got {_shown(stats[key])}")
        elif number < 0 or (number == 0 and key in POSITIVE_STATS):
            problems.append(
                f"stats.{key}: expected a {'positive' if key in POSITIVE_STATS else 'non-negative'} number, got {_shown(stats[key])}"
            )
        else:
            values[key] = number
    for key in ("rounds", "iterations"):
        value = stats.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**31
        ):
            problems.append(f"stats.{key}: expected a positive whole number, got {_shown(value)}")
    data = stats.get("data")
    if data is not None and not isinstance(data, list):
        return [*problems, f"stats.data: expected a list of seconds, got {_kind(data)}"]
    samples = []
    for position, value in enumerate(data or []):
        number = _finite(value)
        if number is None or number <= 0:
            problems.append(
                f"stats.data[{position}]: expected a finite positive number of seconds, got {_shown(value)}"
            )
            if len(problems) > MAX_PROBLEMS_SHOWN:
                return problems
        else:
            samples.append(number)
    if problems:
        return problems
    if samples:
        rounds = stats.get("rounds")
        if rounds is not None and rounds != len(samples):
            problems.append(f"stats.rounds: {rounds}, but stats.data holds {len(samples)} samples")
        ordered = sorted(samples)
        mid = len(ordered) // 2
        median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
        actual = {
            "min": ordered[0],
            "max": ordered[-1],
            "median": median,
            "mean": math.fsum(ordered) / len(ordered),
        }
        for key, expected in actual.items():
            if key in values and not math.isclose(values[key], expected, rel_tol=REL_TOLERANCE):
                problems.append(
                    f"stats.{key}: {values[key]!r}, but the samples in stats.data give {expected!r}"
                )
    elif {"min", "max"} <= set(values):
        for key in ("median", "mean"):
            if key in values and not values["min"] <= values[key] <= values["max"]:
                problems.append(
                    f"stats.{key}: {values[key]!r} is outside [min, max] = [{values['min']!r}, {values['max']!r}]"
                )
    return problems


def _our_case_problems(ours: Any) -> list[str]:
    if not isinstance(ours, dict):
        return [f": expected an object, got {_kind(ours)}"]
    problems = []
    for key in ("case_id", "place", "mode"):
        if not isinstance(ours.get(key), str) or not ours[key]:
            problems.append(f".{key}: expected a non-empty string, got {_kind(ours.get(key))}")
    for key in ("config", "stats", "extra"):
        if ours.get(key) is not None and not isinstance(ours[key], dict):
            problems.append(f".{key}: expected an object, got {_kind(ours[key])}")
    for key, value in (ours.get("stats") or {}).items() if isinstance(ours.get("stats"), dict) else ():
        if value is not None and _finite(value) is None:
            problems.append(f".stats.{key}: expected a finite number, got {_shown(value)}")
    for key in ("throughput", "page_faults_per_iter", "peak_memory_bytes", "batch_size"):
        if ours.get(key) is not None and _finite(ours[key]) is None:
            problems.append(f".{key}: expected a finite number, got {_shown(ours[key])}")
    if ours.get("device_samples") is not None:
        if not isinstance(ours["device_samples"], list):
            problems.append(f".device_samples: expected a list, got {_kind(ours['device_samples'])}")
        elif bad_timings(ours["device_samples"]):
            problems.append(
                f".device_samples: {bad_timings(ours['device_samples'])} are not finite positive seconds"
            )
    for key in ("iterations", "warmup_rounds"):
        value = ours.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31
        ):
            problems.append(f".{key}: expected a whole number, got {_shown(value)}")
    problems += _processes_problems(ours.get("processes"))
    return problems


def _processes_problems(processes: Any) -> list[str]:
    """Problems of a result's per-process entries (issue 11; absent in older exports)."""
    if processes is None:
        return []
    if not isinstance(processes, list):
        return [f".processes: expected a list, got {_kind(processes)}"]
    problems = []
    for k, p in enumerate(processes):
        where = f".processes[{k}]"
        if not isinstance(p, dict):
            problems.append(f"{where}: expected an object, got {_kind(p)}")
            continue
        if p.get("status") not in ("ok", "error"):
            problems.append(f"{where}.status: expected 'ok' or 'error', got {_shown(p.get('status'))}")
        samples = p.get("samples") or []
        if not isinstance(samples, list):
            problems.append(f"{where}.samples: expected a list, got {_kind(samples)}")
        elif bad_timings(samples):
            problems.append(f"{where}.samples: {bad_timings(samples)} are not finite positive seconds")
        if p.get("value") is not None and (_finite(p["value"]) is None or p["value"] <= 0):
            problems.append(f"{where}.value: expected finite positive seconds, got {_shown(p['value'])}")
        for key in ("index", "order", "iterations"):
            value = p.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                problems.append(f"{where}.{key}: expected a whole number, got {_shown(value)}")
    return problems


# -- streaming ------------------------------------------------------------------------------------


class _SyntaxProblem(Exception):
    pass


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class _JsonStream:
    """Reads one JSON value at a time from a text file, holding only the value being read."""

    def __init__(self, handle) -> None:
        self.handle = handle
        self.buf = ""
        self.pos = 0
        self.base = 0  # characters dropped from the front of `buf`
        self.eof = False

    def _fill(self) -> bool:
        if self.eof:
            return False
        data = self.handle.read(READ_CHARS)
        if not data:
            self.eof = True
            return False
        self.base += self.pos
        self.buf = self.buf[self.pos :] + data
        self.pos = 0
        return True

    def peek(self) -> str:
        while True:
            self.pos = _WHITESPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self._fill():
                return self.buf[self.pos : self.pos + 1]

    def expect(self, chars: str, what: str) -> str:
        char = self.peek()
        if not char or char not in chars:
            raise _SyntaxProblem(
                f"expected {what} at character {self.base + self.pos}, found {char!r}"
                if char
                else f"the file ends where {what} was expected"
            )
        self.pos += 1
        return char

    def _reason(self, exc: ValueError) -> str:
        if isinstance(exc, json.JSONDecodeError):
            return f"{exc.msg} at character {self.base + exc.pos}"
        if "digits" in str(exc):
            return f"an integer of more than {sys.get_int_max_str_digits()} digits near character {self.base + self.pos}"
        return " ".join(str(exc).split())

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except ValueError as exc:  # JSONDecodeError, or an integer beyond Python's digit limit
                if len(self.buf) - self.pos > MAX_VALUE_CHARS:
                    raise _SyntaxProblem(
                        f"a value larger than {MAX_VALUE_CHARS >> 20} MB, or {exc}"
                    ) from None
                if not self._fill():
                    raise _SyntaxProblem(self._reason(exc)) from None
                continue
            if end == len(self.buf) and self._fill():
                continue  # a number may go on in the next block
            self.pos = end
            return value


def _benchmarks(path: Path, header: dict[str, Any] | None = None):
    """Yield (index, entry) of the file's `benchmarks` one at a time; every other top-level value
    goes into `header` (with `benchmarks` itself as a marker). Raises _SyntaxProblem."""
    header = {} if header is None else header
    try:
        with path.open(encoding="utf-8") as handle:
            stream = _JsonStream(handle)
            stream.expect("{", "a JSON object")
            if stream.peek() == "}":
                stream.pos += 1
            else:
                while True:
                    key = stream.value()
                    if not isinstance(key, str):
                        raise _SyntaxProblem("object keys must be strings")
                    stream.expect(":", "':'")
                    if key == "benchmarks" and stream.peek() == "[":
                        header["benchmarks"] = True
                        stream.pos += 1
                        index = 0
                        if stream.peek() == "]":
                            stream.pos += 1
                        else:
                            while True:
                                yield index, stream.value()
                                index += 1
                                if stream.expect(",]", "',' or ']' in benchmarks") == "]":
                                    break
                    else:
                        value = stream.value()
                        if key == "benchmarks":
                            raise _SyntaxProblem(f"benchmarks: expected a list, got {_kind(value)}")
                        header[key] = value
                    if stream.expect(",}", "',' or '}'") == "}":
                        break
            if stream.peek():
                raise _SyntaxProblem(f"extra data after the JSON object at character {stream.pos}")
    except UnicodeDecodeError as exc:
        raise _SyntaxProblem(f"not UTF-8 text ({exc.reason} at byte {exc.start} of a block)") from None
    except OSError as exc:
        raise _SyntaxProblem(f"cannot read: {exc.strerror or exc}") from None


def _imported_run(store: Store, digest: str) -> int | None:
    """The complete run an identical file was imported as (a failed import of an older harness
    left an empty run behind: that is no reason to skip the file)."""
    query = sa.select(RUN.c.id, RUN.c.extra).where(
        RUN.c.trigger == IMPORT_TRIGGER, RUN.c.status == "complete"
    )
    with store._read() as conn:
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
