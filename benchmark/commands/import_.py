"""`benchmark import`: pytest-benchmark JSON files into the history (the module's name ends in _ because `import` is a keyword)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from benchmark.commands._common import (
    add_db,
    command,
    open_writable,
)
from benchmark.text import safe_line

if TYPE_CHECKING:
    pass


def register(subparsers) -> None:
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
