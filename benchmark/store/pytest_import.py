"""Import pytest-benchmark JSON files into the history.

Each benchmark of a foreign file maps to a case of kind "imported" (case id = its fullname, config =
group/params/options), keeps its raw `stats.data` when present, and its machine_info/commit_info
become a machine and a run; files we exported carry our own descriptions, which are restored. Every
value is checked first (`benchmark.store.import_checks`). A file already imported (same sha256) is
skipped.

An import cannot impersonate a measurement (issue 26): its run names the file and its sha256
(`run.import_source`, `run.import_sha256`, trigger `import`, tag `imported`); it is never the
baseline of a later run (`run.baseline` false) unless imported with `as_baseline`; and its machine
fingerprint gets IMPORTED_SUFFIX, so its results form series of their own beside the live ones of
the machine the file names, unless imported with `keep_machine` (or `as_baseline`, which needs the
live series).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from benchmark.analysis.summary import median_ci
from benchmark.datamodel.case import config_hash
from benchmark.datamodel.environment import MachineDescription, RunDescription, fingerprint
from benchmark.datamodel.result import CaseResult
from benchmark.store.core import Store
from benchmark.store.export import PYTEST_BENCHMARK_STATS
from benchmark.store.import_checks import (
    MAX_DEPTH,
    MAX_PROBLEMS_SHOWN,
    benchmark_problems,
    header_problems,
    kind_of,
)
from benchmark.store.tables import RUN

IMPORT_TRIGGER = "import"
# Appended to an imported run's machine fingerprint (the column holds 64 characters).
IMPORTED_SUFFIX = "+imported"
FINGERPRINT_CHARS = 64


@dataclass(frozen=True)
class ImportOutcome:
    path: str
    run_id: int
    results: int
    duplicate: bool = False


# A single benchmark entry (or any top-level value but `benchmarks`) larger than this is refused.
MAX_VALUE_CHARS = 64 << 20
READ_CHARS = 1 << 20
IMPORT_BATCH = 2000


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
    store: Store,
    path: str | os.PathLike[str],
    *,
    now: dt.datetime | None = None,
    as_baseline: bool = False,
    keep_machine: bool = False,
) -> ImportOutcome:
    """Read one pytest-benchmark JSON file into the history as one complete run, atomically.

    The file is read twice as a stream (memory stays bounded whatever the number of benchmarks):
    first every value is checked (types, finite positive numbers, stats consistent with the raw
    samples, a date not in the future) and every problem collected, so a bad file raises
    `ImportProblems` with all of them and nothing is written; then the run and all its results are
    written in one transaction, so a failure leaves nothing behind and importing again imports.

    The run is marked imported (file name and digest) and is no baseline of later runs unless
    `as_baseline`; its machine is kept apart (fingerprint + IMPORTED_SUFFIX) unless `keep_machine`
    or `as_baseline` (a baseline must be in the live series of the machine it names).
    """
    path = Path(path)
    now = now or dt.datetime.now(dt.timezone.utc)
    digest = _sha256(path)
    header, count = _check_file(path, now)
    previous = _imported_run(store, digest)
    if previous is not None:
        return ImportOutcome(str(path), previous, 0, duplicate=True)
    machine = machine_from_pytest(header)
    if not (keep_machine or as_baseline):
        machine["fingerprint"] = kept_apart(machine["fingerprint"])
    run = run_from_pytest(header, digest, path.name)
    run.update(status="complete", finished_at=run["started_at"], expected_results=count, baseline=as_baseline)

    def results():
        for _, bench in _benchmarks(path):
            yield CaseResult.from_dict(result_from_benchmark(bench))

    run_id = store.import_run(
        MachineDescription.of(machine), RunDescription.of(run), results, batch=IMPORT_BATCH
    )
    return ImportOutcome(str(path), run_id, count)


def kept_apart(fp: str) -> str:
    """The fingerprint an imported machine is stored under: `fp` + IMPORTED_SUFFIX (once)."""
    if fp.endswith(IMPORTED_SUFFIX):
        return fp
    return fp[: FINGERPRINT_CHARS - len(IMPORTED_SUFFIX)] + IMPORTED_SUFFIX


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
            skipped = _WHITESPACE.match(self.buf, self.pos)  # always matches (possibly nothing)
            self.pos = skipped.end() if skipped else self.pos
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
            except RecursionError:  # Python's JSON reader gives up on deep nesting: say so, no traceback
                raise _SyntaxProblem(
                    f"a value nested too deep (more than {MAX_DEPTH} levels are refused) near character "
                    f"{self.base + self.pos}"
                ) from None
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
                            raise _SyntaxProblem(f"benchmarks: expected a list, got {kind_of(value)}")
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
    query = (
        sa.select(RUN.c.id)
        .where(RUN.c.import_sha256 == digest, RUN.c.status == "complete")
        .order_by(RUN.c.id)
        .limit(1)
    )
    with store._read() as conn:
        return conn.execute(query).scalar()


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
        "import_source": filename[:255],
        "import_sha256": digest,
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
        "config_hash": config_hash(config),
        "status": "ok",
        "unit": "s",
        "samples": samples,
        "iterations": int(stats_in.get("iterations") or 1),
        "stats": stats,
        "extra": {"pytest_benchmark": {"extra_info": extra_info, "ops": stats_in.get("ops")}},
    }
