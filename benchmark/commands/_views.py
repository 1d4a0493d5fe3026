"""What `benchmark plot` and `benchmark report` share: file formats, the readable history, the baseline check, the error guard and --jobs."""

from __future__ import annotations

import argparse
import sys

from benchmark.commands._common import (
    CommandError,
    command,
    fail,
    one_line,
    positive_int,
)
from benchmark.text import safe_line

FORMATS = ("png", "svg", "pdf")


def parse_formats(value: str) -> tuple[str, ...]:
    wanted = tuple(f.strip().lower() for f in value.split(",") if f.strip())
    bad = [f for f in wanted if f not in FORMATS]
    if bad or not wanted:
        raise argparse.ArgumentTypeError(
            f"formats are a comma-separated list of {', '.join(FORMATS)}; got {value!r}"
        )
    return wanted


def check_baseline(store, baseline: int | None) -> None:
    if baseline is not None and store.run(baseline) is None:
        raise CommandError(f"there is no baseline run {baseline} in {store.display_url}")


def readable(store):
    """The history as the reports read it: without the results of a metric this checkout does not
    define (:class:`benchmark.report.known.KnownMetrics`), so that one such row breaks nothing."""
    from benchmark.report.known import KnownMetrics

    return KnownMetrics(store)


def say_skipped(name: str, view) -> None:
    """One line on stderr per series a report left out."""
    for line in view.lines():
        print(safe_line(f"benchmark {name}: {line}"), file=sys.stderr)


def guard(name: str, work) -> int:
    """_common's error guard, and the report modules' LookupError (no such run) as a user error too."""
    try:
        return command(name)(lambda _args: work())(argparse.Namespace())
    except LookupError as exc:
        return fail(name, one_line(exc))


def add_jobs_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help="worker processes for analysis and plots (default: the number of CPUs; 1 renders serially)",
    )
