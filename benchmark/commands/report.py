"""`benchmark report`: a Markdown report of a run, or the static HTML dashboard."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from benchmark import paths
from benchmark.commands._common import (
    CommandError,
    add_db,
    add_run,
    open_history,
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
from benchmark.text import safe_lines


def cmd_report(args) -> int:
    return guard("report", lambda: _report(args))


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
        store = readable(history)
        run_id = resolve_run(store, args.run)
        check_baseline(store, args.baseline)
        text = module.report(store, run_id, baseline=args.baseline)
    say_skipped("report", store)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "report.txt").write_text(text, encoding="utf-8")
    sys.stdout.write(safe_lines(text))  # no control character, no CI command from the history
    return 0


def _report_md(args) -> int:
    from benchmark.report.build import markdown_report

    with open_history(args.db) as history:
        store = readable(history)
        run_id = resolve_run(store, args.run)
        check_baseline(store, args.baseline)
        text = markdown_report(store, run_id, baseline=args.baseline, out=args.out, plots_url=args.plots_url,
                               formats=args.plot_format or ("png", "svg"), min_effect=args.min_effect,
                               workers=args.jobs)  # fmt: skip
    say_skipped("report", store)
    if args.out:
        (Path(args.out) / "report.md").write_text(text, encoding="utf-8")
    sys.stdout.write(safe_lines(text))  # no control character, no CI command from the history
    return 0


def _report_html(args) -> int:
    from benchmark.report.html import build_dashboard

    out = Path(args.out) if args.out else paths.results_dir() / "report"
    clock = time.perf_counter()
    with open_history(args.db) as history:
        store = readable(history)
        run_id = resolve_run(store, args.run)
        check_baseline(store, args.baseline)
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
    say_skipped("report", store)
    print(f"{dash.index} ({len(dash.entries)} series, {len(dash.plot_files)} plot files, {took:.1f} s)")
    return 0


def register(sub) -> None:
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
    p.add_argument("--plot-format", type=parse_formats, metavar="LIST",
                   help="file formats of the plots: png, svg, pdf (default: png,svg for md; png for html, "
                        "whose pages show the PNG)")  # fmt: skip
    p.add_argument("--min-effect", type=float, metavar="X",
                   help="smallest relative change that counts, 0.05 = 5%% (default: configs/gates.yaml)")  # fmt: skip
    add_jobs_option(p)
    add_db(p)
    p.set_defaults(func=cmd_report)
