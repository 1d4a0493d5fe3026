"""`benchmark history`: one or more series over time, oldest first."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from benchmark.commands._common import (
    CommandError,
    add_db,
    command,
    format_commit,
    format_timestamp,
    open_history,
    positive_int,
    print_table,
)
from benchmark.units import format_value

if TYPE_CHECKING:
    from benchmark.datamodel.series import HistoryPoint


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "history",
        help="show one or more series over time",
        description="Print the results of every series whose case id matches PATTERN (a glob with * "
        "and ?, or else a substring), oldest first: median, IQR, rounds, commit and status.",
    )
    parser.add_argument("pattern", metavar="PATTERN", help="case id glob (op.matmul*) or substring")
    parser.add_argument(
        "--place", metavar="P", help="only cases on this place (cpu, gpu:0; 'gpu' matches every GPU)"
    )
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
