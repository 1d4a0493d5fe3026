"""`benchmark runs`: the latest runs of the history, newest first."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from benchmark.commands._common import (
    add_db,
    command,
    format_commit,
    format_duration,
    format_timestamp,
    open_history,
    positive_int,
    print_table,
)
from benchmark.units import format_value

if TYPE_CHECKING:
    pass


def register(subparsers) -> None:
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
