"""`benchmark compare`: two environments (two paddle builds) measured in one job; exit 0, 1 or 2.

The job itself (steps, workers, sequential stopping, storing) is `benchmark.envcompare`; the
statistics are `benchmark.analysis.sequential`; the Markdown and the chart are
`benchmark.report.comparison`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from benchmark import envcompare as ec

EPILOG = f"""\
Each interpreter's environment needs {ec.VENV_NEEDS};
the harness's own code comes from this checkout (its root goes first on the workers' PYTHONPATH), so e.g.
  python -m venv /tmp/pr && /tmp/pr/bin/pip install paddlepaddle==3.3.1 numpy scipy pyyaml pydantic
is enough. Exit status: 0 no case slower, 1 a case slower, 2 an input error or a case that could
not be measured on a side.
"""


def register(sub) -> None:
    import textwrap

    p = sub.add_parser(
        "compare",
        help="A/B of two environments (e.g. the develop and the PR build of paddle) in one job: exit 0 "
        "when no case is slower in B, 1 when one is, 2 on an error",
        description=textwrap.fill(
            "Measure the selected cases in worker processes of two interpreters, A and B, "
            "alternating in randomized steps (a fresh A and a fresh B worker per step, each timing every "
            "still-open case once, in random order). Per case: the B/A ratio of the per-process values "
            "(paired by step, geometric mean) with a t interval on the log ratios; verdicts slower, "
            "faster, same (within --min-effect) or inconclusive (with the pairs it would need). Cases are "
            "measured until decided or the budget runs out; false slower/faster verdicts are bounded by "
            "--alpha over all cases and looks. Both sides are stored in the history as two runs of one "
            "run group (compare-<timestamp>), in series of their own.",
            width=100,
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--a", required=True, metavar="PYTHON", help="interpreter of side A, the base (VENV/bin/python)"
    )
    p.add_argument(
        "--b", required=True, metavar="PYTHON", help="interpreter of side B, the change (VENV/bin/python)"
    )
    p.add_argument(
        "configs",
        nargs="*",
        metavar="CONFIG",
        help="config files or directories (default: the project's configs/)",
    )
    p.add_argument(
        "-k",
        dest="keyword",
        default=None,
        metavar="EXPR",
        help="select cases as pytest -k does: substrings of the case id with and/or/not "
        "(e.g. 'abs and not bwd')",
    )
    p.add_argument(
        "--tags",
        default=None,
        metavar="TAG,...",
        help="only cases with one of these tags ('all': every case; default: all but 'slow')",
    )
    p.add_argument(
        "--place",
        default=None,
        metavar="PLACE,...",
        help="only cases on these places (globs, e.g. cpu or 'gpu*'; default: all; a place this "
        "machine lacks is reported as skipped)",
    )
    p.add_argument(
        "--budget-min",
        type=float,
        default=ec.DEFAULT_BUDGET_MIN,
        metavar="M",
        help=f"stop starting steps that would end after M minutes (default {ec.DEFAULT_BUDGET_MIN:g})",
    )
    p.add_argument(
        "--min-effect",
        type=float,
        default=None,
        metavar="F",
        help=f"smallest relative difference that counts (default {ec.DEFAULT_MIN_EFFECT:g}, or per case "
        "from --gates); smaller differences are 'same'",
    )
    p.add_argument(
        "--gates",
        default=None,
        metavar="FILE",
        help="take each case's min_effect from this gate settings file (e.g. configs/gates.yaml; "
        "--min-effect then replaces its default)",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=ec.DEFAULT_ALPHA,
        metavar="P",
        help=f"probability of any false slower/faster verdict in the job, over all cases and looks "
        f"(default {ec.DEFAULT_ALPHA:g})",
    )
    p.add_argument(
        "--max-pairs",
        type=int,
        default=ec.DEFAULT_MAX_PAIRS,
        metavar="N",
        help=f"at most N pairs of processes per case (default {ec.DEFAULT_MAX_PAIRS})",
    )
    p.add_argument(
        "--processes",
        type=int,
        default=ec.DEFAULT_TRIAL_PROCESSES,
        metavar="P",
        help="each trial gets the measure settings of one of P worker processes of a suite run "
        f"(MeasureSettings.per_process; default {ec.DEFAULT_TRIAL_PROCESSES})",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="short measure settings (smoke runs and tests): rough numbers, more pairs per minute",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        metavar="N",
        help="OMP/MKL/paddle threads of the workers unless set in the environment (default 1; 0: leave)",
    )
    p.add_argument("--seed", type=int, default=None, help="seed of the randomized order (default: random)")
    p.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="history database to store both sides in: a SQLAlchemy URL or a SQLite file path "
        "(default: $BENCHMARK_DB_URL, else results/history.sqlite of the project)",
    )
    p.add_argument("--no-store", action="store_true", help="do not store the comparison in the history")
    p.add_argument(
        "--markdown", default=None, metavar="FILE", help="write the comparison as Markdown (a PR comment)"
    )
    p.add_argument(
        "--plot", default=None, metavar="FILE", help="write the A/B chart (FILE.png or FILE.svg; other: both)"
    )
    p.add_argument(
        "--json", default=None, metavar="FILE", help="write the job (sides, verdicts, values) as JSON"
    )
    p.add_argument(
        "--worker-log",
        default=os.devnull,
        metavar="FILE",
        help="where the workers' own output goes (what paddle prints; default: discarded)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_compare)


def _csv(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def select_cases(root: Path, args: argparse.Namespace):
    """The cases to compare: loaded and validated (without importing paddle here), then filtered by
    --place, --tags (default: all but 'slow') and -k."""
    import fnmatch

    from benchmark import runners
    from benchmark.config import load_paths

    paths = args.configs or [str(root / "configs")]
    cases, issues = load_paths(paths, checks=runners.config_checks(resolve=False))
    if issues:
        raise ec.CompareError(
            f"invalid benchmark config: {issues[0]}"
            + (f" (and {len(issues) - 1} more)" if len(issues) > 1 else "")
        )
    expr = None
    if args.keyword:
        from _pytest.mark.expression import Expression  # pytest's own -k grammar

        try:
            expr = Expression.compile(args.keyword)
        except (SyntaxError, ValueError) as e:  # ParseError before pytest 8.4, SyntaxError since
            raise ec.CompareError(f"-k {args.keyword!r}: {e}") from None
    places, tags = _csv(args.place), _csv(args.tags)
    out = []
    for c in cases:
        if places and not any(fnmatch.fnmatch(c.place, p) for p in places):
            continue
        if tags is None and "slow" in c.tags:
            continue
        if tags and "all" not in tags and not set(tags) & set(c.tags):
            continue
        if expr is not None and not expr.evaluate(lambda name, c=c, **kw: name.lower() in c.id.lower()):
            continue
        out.append(c)
    if not out:
        raise ec.CompareError("no case matches the selection (configs, --place, --tags, -k)")
    return out


def _min_effects(args: argparse.Namespace):
    if args.min_effect is not None and not (0 <= args.min_effect < 1):
        raise ec.CompareError(f"--min-effect {args.min_effect}: expected a fraction in [0, 1), e.g. 0.02")
    if args.gates is None:
        value = ec.DEFAULT_MIN_EFFECT if args.min_effect is None else args.min_effect
        return lambda case: value
    from benchmark.gates import load_gates, with_min_effect

    gates = with_min_effect(load_gates(args.gates), args.min_effect)
    return lambda case: gates.for_case(case.case_id, case.name, case.place).min_effect


def _db_url(db: str | None) -> str | None:
    """A SQLite file path as a URL; URLs (anything with ://) unchanged."""
    if db is None or "://" in db:
        return db
    return f"sqlite:///{Path(db).resolve()}"


def cmd_compare(args: argparse.Namespace) -> int:
    from benchmark import measure
    from benchmark.gates import GateError
    from benchmark.store import StoreError, find_project_root, open_store, resolve_url

    def say(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    root = find_project_root(Path(__file__))
    try:
        if not (0 < args.alpha < 0.5):
            raise ec.CompareError(f"--alpha {args.alpha}: expected a probability in (0, 0.5)")
        if not (args.budget_min > 0 and math.isfinite(args.budget_min)):
            raise ec.CompareError(f"--budget-min {args.budget_min}: expected a positive number of minutes")
        if args.max_pairs < 3:
            raise ec.CompareError(
                f"--max-pairs {args.max_pairs}: at least 3 pairs are needed for an interval"
            )
        if args.processes < 1:
            raise ec.CompareError(f"--processes {args.processes}: expected 1 or more")
        min_effect = _min_effects(args)
        cases = select_cases(root, args)
        store = None
        if not args.no_store:
            store = open_store(resolve_url(_db_url(args.db), root))
        measure.pin_threads(args.threads or None)
        measure.control_allocator(True)
        say(f"compare: checking side A ({args.a}) and side B ({args.b})")
        sides = ec.check_sides({"A": args.a, "B": args.b}, root, say)
        settings = measure.MeasureSettings.quick() if args.quick else measure.MeasureSettings()
        say(
            f"compare: {len(cases)} case(s), budget {args.budget_min:g} min, alpha {args.alpha:g} over all "
            f"cases and looks"
        )
        with open(args.worker_log, "a", encoding="utf-8") as log:
            job = ec.run_job(
                cases,
                sides,
                min_effect=min_effect,
                settings=settings,
                budget_s=args.budget_min * 60,
                alpha=args.alpha,
                max_pairs=args.max_pairs,
                processes=args.processes,
                seed=args.seed,
                progress=say,
                worker_output=log,
            )
    except (ec.CompareError, GateError, StoreError, OSError) as e:
        print(f"benchmark compare: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    print(f"{sides['A'].describe()}\n{sides['B'].describe()}")
    for s in job.states:
        print(ec.case_line(s))
    print(
        f"{job.steps} step(s) in {job.elapsed_s:.0f} s ({job.stopped}); seed {job.seed}; B/A > 1: B is slower"
    )
    code = job.exit_code()
    try:
        if store is not None:
            ids = ec.store_job(store, job, root=root)
            print(f"stored as run group {job.run_group}: side A run {ids['A']}, side B run {ids['B']}")
        from benchmark.report import comparison

        if args.markdown:
            Path(args.markdown).write_text(comparison.markdown(job), encoding="utf-8")
            print(f"wrote {args.markdown}")
        if args.json:
            Path(args.json).write_text(json.dumps(ec.job_dict(job), indent=1, default=str), encoding="utf-8")
            print(f"wrote {args.json}")
        if args.plot:
            for path in comparison.write_chart(job, args.plot):
                print(f"wrote {path}")
    except (StoreError, OSError, ValueError) as e:
        print(f"benchmark compare: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    return code
