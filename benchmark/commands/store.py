"""History commands: `benchmark runs`, `history`, `export`, `import` and `db upgrade|current|init`.

Every command takes `--db URL` (default: $BENCHMARK_DB_URL, else results/history.sqlite of the
project). Errors are one line on stderr and exit status 2; a URL's password is never printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmark.commands import positive_int
from benchmark.store import (
    DB_URL_ENV,
    StoreError,
    head_revision,
    open_store,
    schema_status,
    upgrade_store,
)

DB_HELP = f"history database URL (default: ${DB_URL_ENV}, else sqlite:///<project>/results/history.sqlite)"


def register(subparsers) -> None:
    _register_runs(subparsers)
    _register_history(subparsers)
    _register_export(subparsers)
    _register_import(subparsers)
    _register_db(subparsers)


# ------------------------------------------------------------------------------------------- plumbing


def _add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="URL", help=DB_HELP)


def _command(name: str) -> Callable:
    """Wrap a command so that expected failures print one line on stderr and exit with 2."""

    def wrap(fn: Callable[[argparse.Namespace], int | None]) -> Callable[[argparse.Namespace], int]:
        @functools.wraps(fn)
        def run(args: argparse.Namespace) -> int:
            try:
                return int(fn(args) or 0)
            except (StoreError, ValueError, OSError) as exc:
                print(f"benchmark {name}: error: {_one_line(exc)}", file=sys.stderr)
                return 2

        return run

    return wrap


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return " ".join(str(exc).split())


# ------------------------------------------------------------------------------------------- formatting


def format_seconds(value: float | None) -> str:
    """1.23 ms, 456 ns, 2.50 s: three significant digits and the unit that fits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f} s"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if magnitude >= scale or unit == "ns":
            return f"{value / scale:#.3g}".rstrip(".") + f" {unit}" if magnitude else "0 s"
    return f"{value} s"  # pragma: no cover


def format_value(value: float | None, unit: str | None) -> str:
    if value is None:
        return "-"
    if unit in (None, "s"):
        return format_seconds(value)
    return f"{value:.4g} {unit}"


def format_time(value: dt.datetime | None) -> str:
    """A timestamp in local time, to the second."""
    return "-" if value is None else value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def format_duration(start: dt.datetime | None, end: dt.datetime | None) -> str:
    if start is None or end is None:
        return "-"
    seconds = (end - start).total_seconds()
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def format_commit(commit: str | None, dirty: bool | None = None) -> str:
    if not commit:
        return "-"
    return commit[:10] + ("+" if dirty else "")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, right: Sequence[int] = ()) -> None:
    """A table on stdout: rich on a terminal, plain aligned text otherwise (pipes, files, tests)."""
    cells = [[("-" if c is None else str(c)) for c in row] for row in rows]
    if sys.stdout.isatty():
        from rich import box
        from rich.console import Console
        from rich.table import Table

        table = Table(box=box.SIMPLE_HEAD)
        for index, header in enumerate(headers):
            table.add_column(header, justify="right" if index in right else "left", overflow="fold")
        for row in cells:
            table.add_row(*row)
        Console().print(table)
        return
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if i in right else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    print(line(headers))
    for row in cells:
        print(line(row))


# ------------------------------------------------------------------------------------------- runs


def _register_runs(subparsers) -> None:
    parser = subparsers.add_parser(
        "runs",
        help="list the latest runs in the history",
        description="List runs, newest first: id, start time, duration, commit, branch, machine "
        "fingerprint, places, results (ok/total) and status. A run whose process died shows as "
        "'interrupted'.",
    )
    _add_db(parser)
    parser.add_argument(
        "--last", type=positive_int, default=20, metavar="N", help="how many runs (default 20)"
    )
    parser.set_defaults(func=cmd_runs)


@_command("runs")
def cmd_runs(args: argparse.Namespace) -> int:
    with open_store(args.db, create=False, readonly=True) as store:
        runs = store.runs(limit=args.last)
    if not runs:
        print(f"no runs in {store.display_url}")
        return 0
    rows = [
        (
            r["id"],
            format_time(r["started_at"]),
            format_duration(r["started_at"], r["finished_at"]),
            format_commit(r["git_commit"], r["git_dirty"]),
            r["git_branch"],
            r["machine"][:12],
            ",".join(r["places"]) or "-",
            f"{r['results_by_status'].get('ok', 0)}/{r['results']}",
            r["status"],
            r["trigger"],
        )
        for r in runs
    ]
    headers = (
        "ID",
        "STARTED",
        "TOOK",
        "COMMIT",
        "BRANCH",
        "MACHINE",
        "PLACES",
        "OK/ALL",
        "STATUS",
        "TRIGGER",
    )
    print_table(headers, rows, right=(0, 2, 7))
    return 0


# ------------------------------------------------------------------------------------------- history


def _register_history(subparsers) -> None:
    parser = subparsers.add_parser(
        "history",
        help="show one or more series over time",
        description="Print the results of every series whose case id matches PATTERN (a glob with * "
        "and ?, or else a substring), oldest first: median, IQR, rounds, commit and status.",
    )
    parser.add_argument("pattern", metavar="PATTERN", help="case id glob (op.matmul*) or substring")
    parser.add_argument("--place", metavar="P", help="only this place (cpu, gpu:0; 'gpu' matches every GPU)")
    parser.add_argument("--last", type=positive_int, metavar="N", help="only the latest N results per series")
    _add_db(parser)
    parser.set_defaults(func=cmd_history)


@_command("history")
def cmd_history(args: argparse.Namespace) -> int:
    with open_store(args.db, create=False, readonly=True) as store:
        rows = store.history(args.pattern, place=args.place, last=args.last)
    if not rows:
        print(f"no results match {args.pattern!r}" + (f" on {args.place}" if args.place else ""))
        return 0
    table = [_history_row(r) for r in rows]
    headers = ("RUN", "STARTED", "COMMIT", "CASE", "PLACE", "MODE", "MEDIAN", "IQR", "ROUNDS", "STATUS")
    print_table(headers, table, right=(0, 6, 7, 8))
    return 0


def _history_row(row: dict[str, Any]) -> tuple:
    median, iqr = row["median"], row["iqr"]
    spread = "-"
    if median and iqr is not None:
        spread = f"{format_value(iqr, row['unit'])} ({iqr / median:.1%})"
    status = row["status"] if row["status"] == "ok" else f"{row['status']}: {(row['message'] or '')[:60]}"
    return (
        row["run_id"],
        format_time(row["started_at"]),
        format_commit(row["git_commit"]),
        row["case_id"],
        row["place"],
        row["mode"],
        format_value(median, row["unit"]),
        spread,
        row["rounds"],
        status,
    )


# ------------------------------------------------------------------------------------------- export


def _register_export(subparsers) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write the results of a run as CSV or JSON",
        description="Write the results of one run (default: the latest) as CSV or JSON. With "
        "--pytest-benchmark the JSON follows pytest-benchmark's --benchmark-json schema.",
    )
    parser.add_argument("--run", default="latest", metavar="ID", help="run id, or 'latest' (default)")
    parser.add_argument(
        "--run-group",
        metavar="NAME",
        help="export every run of this group (the shards of one nightly) as one: CSV rows of all "
        "of them, or one JSON document",
    )
    parser.add_argument("--format", required=True, choices=("csv", "json"), help="output format")
    parser.add_argument(
        "--pytest-benchmark", action="store_true", help="JSON in pytest-benchmark's --benchmark-json schema"
    )
    parser.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    _add_db(parser)
    parser.set_defaults(func=cmd_export)


@_command("export")
def cmd_export(args: argparse.Namespace) -> int:
    from benchmark.store.io import export_runs

    if args.pytest_benchmark and args.format != "json":
        raise ValueError("--pytest-benchmark needs --format json")
    with open_store(args.db, create=False, readonly=True) as store:
        if args.run_group:
            if args.run != "latest":
                raise ValueError("give --run ID or --run-group NAME, not both")
            run_ids = store.group_runs(args.run_group)
            if not run_ids:
                raise ValueError(f"there are no runs of group {args.run_group!r} in {store.display_url}")
        else:
            run_ids = [_run_id(store, args.run)]
        text = export_runs(store, run_ids, args.format, pytest_benchmark=args.pytest_benchmark)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote run {', '.join(map(str, run_ids))} to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _run_id(store, text: str) -> int:
    if text == "latest":
        run_id = store.latest_run_id()
        if run_id is None:
            raise ValueError(f"there are no runs in {store.display_url}")
        return run_id
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--run takes a run id or 'latest', not {text!r}") from None


# ------------------------------------------------------------------------------------------- import


def _register_import(subparsers) -> None:
    parser = subparsers.add_parser(
        "import",
        help="read pytest-benchmark JSON files into the history",
        description="Import files written by pytest-benchmark's --benchmark-json (or `benchmark "
        "export --pytest-benchmark`), one complete run per file, each file all or nothing. Every value "
        "is checked first (finite positive timings, stats consistent with the raw samples, a date not "
        "in the future): a bad file is reported with one line per problem and nothing of it is "
        "written (exit 2). A file imported before is skipped.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE.json", help="pytest-benchmark JSON files")
    _add_db(parser)
    parser.set_defaults(func=cmd_import)


@_command("import")
def cmd_import(args: argparse.Namespace) -> int:
    from benchmark.store.io import ImportProblems, import_pytest_benchmark

    status = 0
    with open_store(args.db) as store:
        for path in args.files:
            try:
                outcome = import_pytest_benchmark(store, path)
            except ImportProblems as exc:
                for line in exc.lines():  # nothing of the file was written
                    print(f"benchmark import: error: {line}", file=sys.stderr)
                status = 2
                continue
            if outcome.duplicate:
                print(f"{path}: already imported as run {outcome.run_id}")
            else:
                print(f"{path}: run {outcome.run_id}, {outcome.results} results")
    return status


# ------------------------------------------------------------------------------------------- db


def _register_db(subparsers) -> None:
    parser = subparsers.add_parser(
        "db",
        help="create, inspect or upgrade the history database",
        description="Manage the history database's schema (alembic migrations shipped with the harness).",
    )
    actions = parser.add_subparsers(dest="db_action", metavar="ACTION", required=True)
    for name, help_text, func in (
        ("init", "create an empty history at the newest schema", cmd_db_init),
        ("current", "show the schema revision of the history and whether it is current", cmd_db_current),
        ("upgrade", "migrate the history to the newest schema, keeping every row", cmd_db_upgrade),
    ):
        action = actions.add_parser(
            name, help=help_text, description=help_text[0].upper() + help_text[1:] + "."
        )
        _add_db(action)
        action.set_defaults(func=func)


@_command("db init")
def cmd_db_init(args: argparse.Namespace) -> int:
    with open_store(args.db) as store:
        print(f"{store.display_url}: history at schema revision {head_revision()}")
    return 0


@_command("db current")
def cmd_db_current(args: argparse.Namespace) -> int:
    where, state = schema_status(args.db)
    if state.kind == "current":
        print(f"{where}: revision {state.revision} (current)")
        return 0
    if state.kind == "outdated":
        print(f"{where}: revision {state.revision}, the newest is {state.head}: run `benchmark db upgrade`")
        return 1
    if state.kind == "empty":
        print(f"{where}: no history yet (create one with `benchmark db init`)")
        return 1
    raise StoreError(
        f"{where}: revision {state.revision or 'none'} is not one this version knows ({state.head})"
    )


@_command("db upgrade")
def cmd_db_upgrade(args: argparse.Namespace) -> int:
    where, before, after = upgrade_store(args.db)
    if before == after:
        print(f"{where}: already at revision {after}")
    else:
        print(f"{where}: upgraded from revision {before or 'none (new history)'} to {after}")
    return 0
