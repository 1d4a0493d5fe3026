"""`benchmark plot` and `benchmark report`: plots, Markdown and the HTML dashboard from the history.

    benchmark plot [PATTERN...] [--run ID|latest] [--place P] --out DIR [--format png,svg] [--jobs N]
    benchmark report --format md   [--run ID|latest] [--baseline RUN_ID] [--out DIR] [--db URL]
    benchmark report --format html [--run ID|latest] [--baseline RUN_ID] [--out DIR] [--all-plots]

Errors (no such run, an empty history, nothing matching, an unreadable database) are one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchmark import paths
from benchmark.commands._common import (
    CommandError,
    add_db,
    add_run,
    command,
    fail,
    one_line,
    open_history,
    positive_int,
    resolve_run,
)
from benchmark.text import safe_line, safe_lines

FORMATS = ("png", "svg", "pdf")


# ----------------------------------------------------------------------------------------------- helpers


def _formats(value: str) -> tuple[str, ...]:
    wanted = tuple(f.strip().lower() for f in value.split(",") if f.strip())
    bad = [f for f in wanted if f not in FORMATS]
    if bad or not wanted:
        raise argparse.ArgumentTypeError(
            f"formats are a comma-separated list of {', '.join(FORMATS)}; got {value!r}"
        )
    return wanted


def _check_baseline(store, baseline: int | None) -> None:
    if baseline is not None and store.run(baseline) is None:
        raise CommandError(f"there is no baseline run {baseline} in {store.display_url}")


def _readable(store):
    """The history as the reports read it: without the results of a metric this checkout does not
    define (:class:`benchmark.report.known.KnownMetrics`), so that one such row breaks nothing."""
    from benchmark.report.known import KnownMetrics

    return KnownMetrics(store)


def _say_skipped(name: str, view) -> None:
    """One line on stderr per series a report left out."""
    for line in view.lines():
        print(safe_line(f"benchmark {name}: {line}"), file=sys.stderr)


def _guard(name: str, work) -> int:
    """_common's error guard, and the report modules' LookupError (no such run) as a user error too."""
    try:
        return command(name)(lambda _args: work())(argparse.Namespace())
    except LookupError as exc:
        return fail(name, one_line(exc))


# -------------------------------------------------------------------------------------------------- plot


def cmd_plot(args) -> int:
    return _guard("plot", lambda: _plot(args))


def _plot(args) -> int:
    from benchmark.report.build import plot_history
    from benchmark.report.jobs import files_of

    with open_history(args.db) as history:
        store = _readable(history)
        run_id = None if args.run is None else resolve_run(store, args.run)
        _check_baseline(store, args.baseline)
        rendered = plot_history(store, args.out, patterns=args.patterns, place=args.place, last=args.last,
                                run_id=run_id, baseline=args.baseline, formats=args.format, workers=args.jobs)  # fmt: skip
    _say_skipped("plot", store)
    print(f"{sum(bool(r.files) for r in rendered)} plot(s), {len(files_of(rendered))} file(s) in {args.out}")
    return 0


# ------------------------------------------------------------------------------------------------ report


def cmd_report(args) -> int:
    return _guard("report", lambda: _report(args))


def _report(args) -> int:
    if args.format == "md":
        return _report_md(args)
    if args.format == "html":
        return _report_html(args)
    return _report_module(args)


def report_module(name: str):
    """The module of report `name`: `benchmark/report/NAME.py`, else the module `name` (a dotted
    path on sys.path), which must define `report(store, run_id, *, baseline)` returning its text.
    A CommandError saying what was expected otherwise."""
    import importlib

    if not all(part.isidentifier() for part in name.split(".")):
        raise CommandError(f"--format {name!r}: expected md, html or a report module's name")
    for candidate in (f"benchmark.report.{name}", name):
        try:
            module = importlib.import_module(candidate)
        except ModuleNotFoundError as exc:
            if exc.name is not None and candidate.startswith(exc.name):
                continue  # no such module: try the next place
            raise
        if callable(getattr(module, "report", None)):
            return module
        raise CommandError(
            f"--format {name}: module {candidate} has no report(store, run_id, *, baseline) function"
        )
    raise CommandError(f"--format {name}: expected md, html, benchmark/report/{name}.py or a module {name}")


def _report_module(args) -> int:
    """A report in a module of its own (`report_module`): its text on stdout, and in DIR/report.txt
    with --out."""
    module = report_module(args.format)
    with open_history(args.db) as history:
        store = _readable(history)
        run_id = resolve_run(store, args.run)
        _check_baseline(store, args.baseline)
        text = module.report(store, run_id, baseline=args.baseline)
    _say_skipped("report", store)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "report.txt").write_text(text, encoding="utf-8")
    sys.stdout.write(safe_lines(text))  # no control character, no CI command from the history
    return 0


def _report_md(args) -> int:
    from benchmark.report.build import markdown_report

    with open_history(args.db) as history:
        store = _readable(history)
        run_id = resolve_run(store, args.run)
        _check_baseline(store, args.baseline)
        text = markdown_report(store, run_id, baseline=args.baseline, out=args.out, plots_url=args.plots_url,
                               formats=args.plot_format or ("png", "svg"), min_effect=args.min_effect,
                               workers=args.jobs)  # fmt: skip
    _say_skipped("report", store)
    if args.out:
        (Path(args.out) / "report.md").write_text(text, encoding="utf-8")
    sys.stdout.write(safe_lines(text))  # no control character, no CI command from the history
    return 0


def _report_html(args) -> int:
    from benchmark.report.html import build_dashboard

    out = Path(args.out) if args.out else paths.results_dir() / "report"
    clock = time.perf_counter()
    with open_history(args.db) as history:
        store = _readable(history)
        run_id = resolve_run(store, args.run)
        _check_baseline(store, args.baseline)
        dash = build_dashboard(
            store,
            out,
            run_id=run_id,
            baseline=args.baseline,
            all_plots=args.all_plots,
            formats=args.plot_format or ("png",),
            workers=args.jobs,
            min_effect=args.min_effect,
        )
    took = time.perf_counter() - clock
    _say_skipped("report", store)
    print(f"{dash.index} ({len(dash.entries)} series, {len(dash.plot_files)} plot files, {took:.1f} s)")
    return 0


# ---------------------------------------------------------------------------------------------- register


def _jobs_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help="worker processes for analysis and plots (default: the number of CPUs; 1 renders serially)",
    )


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
    p.add_argument("--format", type=_formats, default=("png", "svg"), metavar="LIST",
                   help="comma-separated file formats: png, svg, pdf (default: png,svg)")  # fmt: skip
    _jobs_option(p)
    add_db(p)
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser(
        "report",
        help="a Markdown report of a run, or the static HTML dashboard",
        description="--format md: the run's counts, gate verdict (PASS/FAIL), regressions and improvements "
        "with effect, interval, evidence and baseline, for a pull request comment or a CI summary (stdout; "
        "with --out also DIR/report.md and its plots). --format html: a self-contained dashboard of every "
        "series in DIR that opens from disk. Exit 2 on an error (no such run, empty history).",
    )
    p.add_argument(
        "--format",
        default="md",
        metavar="NAME",
        help="md (default), html, or a report of its own: benchmark/report/NAME.py or a module NAME on "
        "the path, defining report(store, run_id, *, baseline) that returns its text",
    )
    add_run(p, help="the run to report: an id or 'latest' (default)")
    p.add_argument("--baseline", type=int, metavar="RUN_ID",
                   help="compare with this run (an A/B) instead of the previous result of each series")  # fmt: skip
    p.add_argument("--out", metavar="DIR",
                   help="md: also write DIR/report.md with the A/B chart and the trend plots of changed "
                        "series; html: the dashboard directory (default: results/report)")  # fmt: skip
    p.add_argument("--plots-url", metavar="URL",
                   help="md: where readers find the plots (e.g. the CI artifact link), shown in the report")  # fmt: skip
    p.add_argument("--all-plots", action="store_true",
                   help="html: a matplotlib trend plot for every series, not only those that changed (slower)")  # fmt: skip
    p.add_argument("--plot-format", type=_formats, metavar="LIST",
                   help="file formats of the plots: png, svg, pdf (default: png,svg for md; png for html, "
                        "whose pages show the PNG)")  # fmt: skip
    p.add_argument("--min-effect", type=float, metavar="X",
                   help="smallest relative change that counts, 0.05 = 5%% (default: configs/gates.yaml)")  # fmt: skip
    _jobs_option(p)
    add_db(p)
    p.set_defaults(func=cmd_report)
