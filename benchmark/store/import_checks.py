"""The checks of a pytest-benchmark JSON file before it is imported: one line per problem (where,
what was expected, what was found), so a bad file is refused with all its problems at once."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

from benchmark.datamodel.metrics import METRICS
from benchmark.datamodel.result import bad_timings
from benchmark.store.tables import to_datetime

# How far in the future a file's date may be (clock skew) before it is refused.
FUTURE_LEEWAY = dt.timedelta(minutes=10)
MAX_PROBLEMS_SHOWN = 20
POSITIVE_STATS = ("min", "max", "mean", "median", "q1", "q3")
NON_NEGATIVE_STATS = ("stddev", "iqr", "ld15iqr", "hd15iqr", "ops", "total")
REL_TOLERANCE = 1e-6
# No value of a pytest-benchmark file (ours included) nests deeper than this; deeper is refused.
MAX_DEPTH = 64


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


def finite(value: Any) -> float | None:
    """The value as a finite float, or None when it is not a finite number (bools are not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def shown_value(value: Any) -> str:
    text = (
        repr(value)
        if not isinstance(value, int) or abs(value) < 10**30
        else f"an integer of {len(str(abs(value)))} digits"
    )
    return text if len(text) <= 40 else text[:37] + "..."


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests lists and objects more than `limit` levels deep (walked without
    recursion, so any depth is answered)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _object(mapping: Mapping[str, Any], key: str) -> dict[str, Any]:
    """`mapping[key]` when it is an object (a dict), else an empty one."""
    value = mapping.get(key)
    return value if isinstance(value, dict) else {}


def header_problems(header: Mapping[str, Any], now: dt.datetime) -> list[str]:
    problems = [
        f"{key}: nested more than {MAX_DEPTH} levels deep"
        for key, value in header.items()
        if isinstance(value, (dict, list)) and too_deep(value, MAX_DEPTH - 1)
    ]
    if "benchmarks" not in header:
        problems.append("not a pytest-benchmark JSON file: no 'benchmarks' list")
    for key in ("machine_info", "commit_info", "benchmark"):
        if header.get(key) is not None and not isinstance(header[key], dict):
            problems.append(f"{key}: expected an object, got {kind_of(header[key])}")
    commit = _object(header, "commit_info")
    for key in ("id", "branch"):
        if commit.get(key) is not None and not isinstance(commit[key], str):
            problems.append(f"commit_info.{key}: expected a string, got {kind_of(commit[key])}")
    if commit.get("dirty") is not None and not isinstance(commit["dirty"], bool):
        problems.append(f"commit_info.dirty: expected true or false, got {kind_of(commit['dirty'])}")
    machine = _object(header, "machine_info")
    if machine.get("cpu") is not None and not isinstance(machine["cpu"], dict):
        problems.append(f"machine_info.cpu: expected an object, got {kind_of(machine['cpu'])}")
    if machine.get("node") is not None and not isinstance(machine["node"], str):
        problems.append(f"machine_info.node: expected a string, got {kind_of(machine['node'])}")
    if header.get("version") is not None and not isinstance(header["version"], str):
        problems.append(f"version: expected a string, got {kind_of(header['version'])}")
    ours = _object(header, "benchmark")
    for key in ("run", "machine"):
        if ours.get(key) is not None and not isinstance(ours[key], dict):
            problems.append(f"benchmark.{key}: expected an object, got {kind_of(ours[key])}")
    our_machine = _object(ours, "machine")
    fp = our_machine.get("fingerprint")
    if fp is not None and not (isinstance(fp, str) and 0 < len(fp) <= 64):
        problems.append(
            f"benchmark.machine.fingerprint: expected a string of 1 to 64 characters, got {shown_value(fp)}"
        )
    our_run = _object(ours, "run")
    for key, kind in (("framework", dict), ("env", dict), ("tags", list)):
        if our_run.get(key) is not None and not isinstance(our_run[key], kind):
            problems.append(f"benchmark.run.{key}: expected {kind_of(kind())}, got {kind_of(our_run[key])}")
    when = header.get("datetime")
    if when is None and isinstance(ours.get("run"), dict):
        when = ours["run"].get("started_at")
    if when is not None:
        try:
            started = to_datetime(when)
        except (TypeError, ValueError, OverflowError, OSError):
            problems.append(f"datetime: expected an ISO 8601 date and time, got {shown_value(when)}")
        else:
            if started > now + FUTURE_LEEWAY:
                problems.append(
                    f"datetime: {started.isoformat()} is in the future (now {now.isoformat(timespec='seconds')})"
                )
    return problems


def benchmark_problems(index: int, bench: Any) -> list[str]:
    """Every problem of one entry of `benchmarks`, one line each."""
    if not isinstance(bench, dict):
        return [f"benchmarks[{index}]: expected an object, got {kind_of(bench)}"]
    name = bench.get("fullname")
    where = f"benchmarks[{index}]" + (f" ({name!r})" if isinstance(name, str) else "")
    if too_deep(bench, MAX_DEPTH - 2):
        return [f"{where}: nested more than {MAX_DEPTH} levels deep"]
    problems = []
    if not isinstance(name, str) or not name.strip():
        problems.append(f"{where}: fullname: expected a non-empty string, got {kind_of(name)}")
    for key in ("name", "group"):
        if bench.get(key) is not None and not isinstance(bench[key], str):
            problems.append(f"{where}: {key}: expected a string, got {kind_of(bench[key])}")
    for key in ("params", "extra_info", "options"):
        if bench.get(key) is not None and not isinstance(bench[key], dict):
            problems.append(f"{where}: {key}: expected an object, got {kind_of(bench[key])}")
    stats = bench.get("stats")
    if not isinstance(stats, dict):
        return [*problems, f"{where}: stats: expected an object, got {kind_of(stats)}"]
    problems.extend(f"{where}: {p}" for p in stats_problems(stats))
    extra_info = _object(bench, "extra_info")
    for key in ("place", "mode"):
        if extra_info.get(key) is not None and not (isinstance(extra_info[key], str) and extra_info[key]):
            problems.append(
                f"{where}: extra_info.{key}: expected a non-empty string, got {kind_of(extra_info[key])}"
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
        number = finite(stats[key])
        if number is None:
            problems.append(f"stats.{key}: expected a finite number, got {shown_value(stats[key])}")
        elif number < 0 or (number == 0 and key in POSITIVE_STATS):
            problems.append(
                f"stats.{key}: expected a {'positive' if key in POSITIVE_STATS else 'non-negative'} number, got {shown_value(stats[key])}"
            )
        else:
            values[key] = number
    for key in ("rounds", "iterations"):
        value = stats.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**31
        ):
            problems.append(f"stats.{key}: expected a positive whole number, got {shown_value(value)}")
    data = stats.get("data")
    if data is not None and not isinstance(data, list):
        return [*problems, f"stats.data: expected a list of seconds, got {kind_of(data)}"]
    samples = []
    for position, value in enumerate(data or []):
        number = finite(value)
        if number is None or number <= 0:
            problems.append(
                f"stats.data[{position}]: expected a finite positive number of seconds, got {shown_value(value)}"
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
        return [f": expected an object, got {kind_of(ours)}"]
    problems = []
    for key in ("case_id", "place", "mode"):
        if not isinstance(ours.get(key), str) or not ours[key]:
            problems.append(f".{key}: expected a non-empty string, got {kind_of(ours.get(key))}")
    # the other fields a stored result cannot be without (CaseResult's required ones), in one line
    missing = [k for k in ("name", "kind", "config_hash", "config") if ours.get(k) is None]
    if missing:
        problems.append(
            f": missing {', '.join(missing)} (a result the harness wrote has them: name, kind and "
            "config_hash strings, config an object)"
        )
    for key in ("name", "kind", "config_hash"):
        if ours.get(key) is not None and not isinstance(ours[key], str):
            problems.append(f".{key}: expected a string, got {kind_of(ours[key])}")
    if ours.get("config") is not None and not isinstance(ours["config"], dict):
        problems.append(f".config: expected an object, got {kind_of(ours['config'])}")
    for key in ("status", "message", "unit", "throughput_unit"):
        if ours.get(key) is not None and not isinstance(ours[key], str):
            problems.append(f".{key}: expected a string, got {kind_of(ours[key])}")
    metric = ours.get("metric")
    stored = [name for name, m in METRICS.items() if m.of is None]  # "throughput" is a view of time
    if metric is not None and metric not in stored:
        problems.append(f".metric: expected one of {', '.join(stored)}, got {shown_value(metric)}")
    for key in ("tags", "warnings"):
        value = ours.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            problems.append(f".{key}: expected a list of strings, got {kind_of(value)}")
    for key in ("stats", "extra"):
        if ours.get(key) is not None and not isinstance(ours[key], dict):
            problems.append(f".{key}: expected an object, got {kind_of(ours[key])}")
    for key, value in (ours.get("stats") or {}).items() if isinstance(ours.get("stats"), dict) else ():
        if value is not None and finite(value) is None:
            problems.append(f".stats.{key}: expected a finite number, got {shown_value(value)}")
    for key in ("throughput", "page_faults_per_iter", "peak_memory_bytes", "batch_size"):
        if ours.get(key) is not None and finite(ours[key]) is None:
            problems.append(f".{key}: expected a finite number, got {shown_value(ours[key])}")
    if ours.get("device_samples") is not None:
        if not isinstance(ours["device_samples"], list):
            problems.append(f".device_samples: expected a list, got {kind_of(ours['device_samples'])}")
        elif bad_timings(ours["device_samples"]):
            problems.append(
                f".device_samples: {bad_timings(ours['device_samples'])} are not finite positive seconds"
            )
    for key in ("iterations", "warmup_rounds"):
        value = ours.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31
        ):
            problems.append(f".{key}: expected a whole number, got {shown_value(value)}")
    problems += _processes_problems(ours.get("processes"))
    return problems


def _processes_problems(processes: Any) -> list[str]:
    """Problems of a result's per-process entries (issue 11; absent in older exports)."""
    if processes is None:
        return []
    if not isinstance(processes, list):
        return [f".processes: expected a list, got {kind_of(processes)}"]
    problems = []
    for k, p in enumerate(processes):
        where = f".processes[{k}]"
        if not isinstance(p, dict):
            problems.append(f"{where}: expected an object, got {kind_of(p)}")
            continue
        if p.get("status") not in ("ok", "error"):
            problems.append(f"{where}.status: expected 'ok' or 'error', got {shown_value(p.get('status'))}")
        samples = p.get("samples") or []
        if not isinstance(samples, list):
            problems.append(f"{where}.samples: expected a list, got {kind_of(samples)}")
        elif bad_timings(samples):
            problems.append(f"{where}.samples: {bad_timings(samples)} are not finite positive seconds")
        if p.get("value") is not None and (finite(p["value"]) is None or p["value"] <= 0):
            problems.append(f"{where}.value: expected finite positive seconds, got {shown_value(p['value'])}")
        for key in ("index", "order", "iterations"):
            value = p.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                problems.append(f"{where}.{key}: expected a whole number, got {shown_value(value)}")
    return problems
