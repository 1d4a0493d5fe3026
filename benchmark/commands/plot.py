"""`benchmark plot`: trend plots, the A/B chart of a run and NVML telemetry timelines, with matplotlib."""

from __future__ import annotations

from benchmark.commands._common import (
    add_db,
    add_run,
    open_history,
    positive_int,
    resolve_run,
)
from benchmark.commands._views import (
    add_jobs_option,
    check_baseline,
    guard,
    parse_formats,
    readable,
    say_skipped,
)


def cmd_plot(args) -> int:
    return guard("plot", lambda: _plot(args))


def _plot(args) -> int:
    from benchmark.report.build import plot_history
    from benchmark.report.jobs import files_of

    with open_history(args.db) as history:
        store = readable(history)
        run_id = None if args.run is None else resolve_run(store, args.run)
        check_baseline(store, args.baseline)
        rendered = plot_history(store, args.out, patterns=args.patterns, place=args.place, last=args.last,
                                run_id=run_id, baseline=args.baseline, formats=args.format, workers=args.jobs)  # fmt: skip
    say_skipped("plot", store)
    print(f"{sum(bool(r.files) for r in rendered)} plot(s), {len(files_of(rendered))} file(s) in {args.out}")
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "plot",
        help="trend plots, the A/B chart of a run and NVML telemetry timelines",
        description="Write matplotlib plots: a trend plot per series (median per run with its interval, raw "
        "samples, change points, gate alerts); with --run, also the run's A/B chart against its baseline and "
        "the NVML telemetry timeline of each of its results that has one. Exit 2 on an error.",
    )
    p.add_argument("patterns", nargs="*", metavar="PATTERN",
                   help="case ids to plot: a glob with * or ? (brackets are literal), else a substring; "
                        "default: every series")  # fmt: skip
    add_run(
        p,
        default=None,
        help="a run id or 'latest': only the series of that run, their history up to it, plus "
        "its A/B chart and telemetry",
    )
    p.add_argument("--baseline", type=int, metavar="RUN_ID",
                   help="with --run: compare with this run instead of each series' previous result")  # fmt: skip
    p.add_argument("--place", metavar="P", help="only this place (cpu, gpu:0; 'gpu' matches every GPU)")
    p.add_argument("--last", type=positive_int, metavar="N", help="only the latest N runs of each series")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for the plot files (created)")
    p.add_argument("--format", type=parse_formats, default=("png", "svg"), metavar="LIST",
                   help="comma-separated file formats: png, svg, pdf (default: png,svg)")  # fmt: skip
    add_jobs_option(p)
    add_db(p)
    p.set_defaults(func=cmd_plot)
