"""`benchmark export`: the results of a run as CSV or JSON."""

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
    open_history,
    resolve_runs,
)

if TYPE_CHECKING:
    pass


def register(subparsers) -> None:
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
