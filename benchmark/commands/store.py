"""History commands: `benchmark runs`, `history`, `export`, `import` and `db upgrade|current|init|backup`.

Every command takes `--db URL|PATH` (default: $BENCHMARK_DB_URL, else results/history.sqlite of the
project). Errors are one line on stderr and exit status 2; a URL's password is never printed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from benchmark.commands._common import (
    CommandError,
    add_db,
    add_run,
    add_run_group,
    command,
    format_commit,
    format_duration,
    format_timestamp,
    open_history,
    open_writable,
    positive_int,
    print_table,
    resolve_runs,
)
from benchmark.text import safe_line
from benchmark.units import format_value

if TYPE_CHECKING:
    from benchmark.records import HistoryPoint


def register(subparsers) -> None:
    _register_runs(subparsers)
    _register_history(subparsers)
    _register_export(subparsers)
    _register_import(subparsers)
    _register_db(subparsers)


# ------------------------------------------------------------------------------------------- runs


def _register_runs(subparsers) -> None:
    parser = subparsers.add_parser(
        "runs",
        help="list the latest runs in the history",
        description="List runs, newest first: id, start time, duration, commit, branch, machine "
        "fingerprint, places, results (ok/total), status, and PROBE: the machine's speed during the "
        "run, the median time of the reference probe (a fixed numpy workload timed in the worker "
        "processes beside every trial; lower is faster, comparable between runs of one machine "
        "only; '-' where none was timed). A run whose process died shows as 'interrupted'.",
    )
    add_db(parser)
    parser.add_argument(
        "--last", type=positive_int, default=20, metavar="N", help="how many runs (default 20)"
    )
    parser.set_defaults(func=cmd_runs)


@command("runs")
def cmd_runs(args: argparse.Namespace) -> int:
    with open_history(args.db) as store:
        runs = store.runs(limit=args.last)
    if not runs:
        print(f"no runs in {store.display_url}")
        return 0
    rows = [
        (
            r.id,
            format_timestamp(r.started_at),
            format_duration(r.started_at, r.finished_at),
            format_commit(r.git_commit, r.git_dirty),
            r.git_branch,
            _short_machine(r.machine),
            ",".join(r.places) or "-",
            f"{r.results_by_status.get('ok', 0)}/{r.results}",
            r.status,
            r.trigger,
            format_value(r.probe_s, "s") if r.probe_s else "-",
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
        "PROBE",
    )
    print_table(headers, rows, right=(0, 2, 7, 10))
    return 0


def _short_machine(fingerprint: str) -> str:
    """The first 12 characters of a fingerprint, and the mark it carries if any: an imported machine
    (``+imported``) or the side of a `benchmark compare` or `bisect` (``/compare-A``, ...)."""
    from benchmark.store.pytest_import import IMPORTED_SUFFIX

    if fingerprint.endswith(IMPORTED_SUFFIX):
        return fingerprint[: -len(IMPORTED_SUFFIX)][:12] + IMPORTED_SUFFIX
    base, slash, side = fingerprint.partition("/")
    return base[:12] + slash + side


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
    parser.add_argument(
        "--job",
        choices=("suite", "compare", "bisect", "night", "all"),
        default="suite",
        help="the runs of one job: the suite's (default), or those of `benchmark compare`, `bisect` or "
        "`night`, whose runs are series of their own; all: every run",
    )
    add_db(parser)
    parser.set_defaults(func=cmd_history)


@command("history")
def cmd_history(args: argparse.Namespace) -> int:
    with open_history(args.db) as store:
        job = None if args.job == "all" else args.job
        rows = store.history(args.pattern, place=args.place, last=args.last, job=job)
    if not rows:
        raise CommandError(f"no results match {args.pattern!r}" + (f" on {args.place}" if args.place else ""))
    table = [_history_row(r) for r in rows]
    headers = ("RUN", "STARTED", "COMMIT", "CASE", "PLACE", "MODE", "MEDIAN", "IQR", "ROUNDS", "STATUS")
    print_table(headers, table, right=(0, 6, 7, 8))
    return 0


def _history_row(point: HistoryPoint) -> tuple:
    median, iqr = point.median, point.stats.iqr
    spread = "-"
    if median and iqr is not None:
        spread = f"{format_value(iqr, point.unit)} ({iqr / median:.1%})"
    status = point.status if point.status == "ok" else f"{point.status}: {(point.message or '')[:60]}"
    return (
        point.run_id,
        format_timestamp(point.started_at),
        format_commit(point.git_commit),
        point.case_id,
        point.place,
        point.mode,
        format_value(median, point.unit),
        spread,
        point.rounds,
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
    add_run(parser)
    add_run_group(
        parser,
        help="export every run of this group (the shards of one nightly) as one: CSV rows of all "
        "of them, or one JSON document",
    )
    parser.add_argument("--format", required=True, choices=("csv", "json"), help="output format")
    parser.add_argument(
        "--pytest-benchmark", action="store_true", help="JSON in pytest-benchmark's --benchmark-json schema"
    )
    parser.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    add_db(parser)
    parser.set_defaults(func=cmd_export)


@command("export")
def cmd_export(args: argparse.Namespace) -> int:
    from benchmark.store.export import export_runs

    if args.pytest_benchmark and args.format != "json":
        raise CommandError("--pytest-benchmark needs --format json")
    with open_history(args.db) as store:
        run_ids = resolve_runs(store, args.run, args.run_group)
        text = export_runs(store, run_ids, args.format, pytest_benchmark=args.pytest_benchmark)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote run {', '.join(map(str, run_ids))} to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


# ------------------------------------------------------------------------------------------- import


def _register_import(subparsers) -> None:
    parser = subparsers.add_parser(
        "import",
        help="read pytest-benchmark JSON files into the history",
        description="Import files written by pytest-benchmark's --benchmark-json (or `benchmark "
        "export --pytest-benchmark`), one complete run per file, each file all or nothing. Every value "
        "is checked first (finite positive timings, stats consistent with the raw samples, a date not "
        "in the future): a bad file is reported with one line per problem and nothing of it is "
        "written (exit 2). A file imported before is skipped. An imported run is marked with its file "
        "name and sha256 and is never the baseline of a later run unless --as-baseline; its machine "
        "fingerprint gets '+imported', so its results stay apart from the live series of the machine "
        "it names, unless --keep-machine.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE.json", help="pytest-benchmark JSON files")
    parser.add_argument(
        "--as-baseline",
        action="store_true",
        help="let the imported runs be baselines of later runs on the machine they name (implies "
        "--keep-machine); only for files you trust",
    )
    parser.add_argument(
        "--keep-machine",
        action="store_true",
        help="store the runs under the machine fingerprint the file names (their results join that "
        "machine's series in history and reports, still never a baseline without --as-baseline)",
    )
    add_db(parser)
    parser.set_defaults(func=cmd_import)


@command("import")
def cmd_import(args: argparse.Namespace) -> int:
    from benchmark.store.pytest_import import ImportProblems, import_pytest_benchmark

    status = 0
    with open_writable(args.db) as store:
        for path in args.files:
            try:
                outcome = import_pytest_benchmark(
                    store, path, as_baseline=args.as_baseline, keep_machine=args.keep_machine
                )
            except ImportProblems as exc:
                for line in exc.lines():  # nothing of the file was written
                    print(safe_line(f"benchmark import: error: {line}"), file=sys.stderr)
                status = 2
                continue
            if outcome.duplicate:
                print(f"{path}: already imported as run {outcome.run_id}")
            else:
                role = (
                    "a baseline of later runs"
                    if args.as_baseline
                    else "not a baseline (--as-baseline to make it one)"
                )
                print(f"{path}: run {outcome.run_id}, {outcome.results} results, imported: {role}")
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
        add_db(action)
        action.set_defaults(func=func)
    backup = actions.add_parser(
        "backup",
        help="copy a SQLite history into one consistent file",
        description="Copy the SQLite history into the single file OUT with SQLite's online backup: "
        "a consistent snapshot of every committed run, safe while another process is writing, "
        "with no -wal or -shm file beside it (upload or attach OUT itself). OUT is written under a "
        "temporary name and renamed when complete. For a PostgreSQL history use pg_dump.",
    )
    backup.add_argument("out", metavar="OUT", help="the backup file to write (e.g. history-backup.sqlite)")
    backup.add_argument("--force", action="store_true", help="replace OUT if it exists")
    add_db(backup)
    backup.set_defaults(func=cmd_db_backup)


@command("db init")
def cmd_db_init(args: argparse.Namespace) -> int:
    with open_writable(args.db) as store:
        from benchmark.store import head_revision

        print(f"{store.display_url}: history at schema revision {head_revision()}")
    return 0


@command("db backup")
def cmd_db_backup(args: argparse.Namespace) -> int:
    from benchmark.paths import db_url
    from benchmark.store.backup import backup_sqlite

    done = backup_sqlite(db_url(args.db), args.out, force=args.force)
    print(f"{done.source}: {done.runs} runs, {done.results} results copied to {done.out} ({done.size} bytes)")
    return 0


@command("db current")
def cmd_db_current(args: argparse.Namespace) -> int:
    from benchmark.paths import db_url
    from benchmark.store import schema_status

    where, state = schema_status(db_url(args.db))
    if state.kind == "current":
        print(f"{where}: revision {state.revision} (current)")
        return 0
    if state.kind == "outdated":
        print(f"{where}: revision {state.revision}, the newest is {state.head}: run `benchmark db upgrade`")
        return 1
    if state.kind == "empty":
        print(f"{where}: no history yet (create one with `benchmark db init`)")
        return 1
    raise CommandError(
        f"{where}: revision {state.revision or 'none'} is not one this version knows ({state.head})"
    )


@command("db upgrade")
def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from benchmark.paths import db_url
    from benchmark.store import upgrade_store

    where, before, after = upgrade_store(db_url(args.db))
    if before == after:
        print(f"{where}: already at revision {after}")
    else:
        print(f"{where}: upgraded from revision {before or 'none (new history)'} to {after}")
    return 0
