"""`benchmark bisect`: the first build in an ordered range whose instruction count is worse than the
first build's by at least the case's minimum effect; exit 0 no step, 1 a step, 2 an error.

The builds are released versions of a package from an index (`--package NAME --good V1 --bad V2`,
`benchmark.bisect.builds`), commits of a repository built by the user's command (`--repo DIR --good
SHA --bad SHA --build CMD`), or interpreters the user already has (`--python P`, repeated, oldest
first). The search is `benchmark.bisect.search`; a build is counted by `benchmark.bisect.counting`;
every build counted is stored as a run of the run group `bisect-<time>` (`benchmark.bisect.storing`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from benchmark.commands._common import add_case_selection, add_db, command, deprecated_alias

if TYPE_CHECKING:
    from benchmark.bisect.builds import CommitEnvs, EnvCache


def register(sub) -> None:
    p = sub.add_parser(
        "bisect",
        help="find the first build in an ordered range whose count is worse than the first build's: "
        "exit 0 no step, 1 a step, 2 an error",
        description="Bisect an ordered range of builds for each selected case: the released versions "
        "of a package between --good and --bad (each in an environment made once and cached under "
        "~/.cache/paddle-benchmark/envs), the commits of a repository between --good and --bad, each "
        "built once by your --build command into a wheel (cached under ~/.cache/paddle-benchmark/wheels), "
        "or interpreters of environments you have (--python, oldest first). The two ends are counted first, then the midpoints; a build that cannot be made or "
        "used is skipped with one line; the step found is confirmed by measuring its two builds again. "
        "The harness's code comes from this checkout; every build counted is stored in the history as "
        "a run of the group bisect-<time>, never a baseline of the suite.",
    )
    builds = p.add_argument_group("builds (one of)")
    builds.add_argument("--package", default=None, metavar="NAME",
                        help="the package whose released versions are bisected (e.g. paddlepaddle)")  # fmt: skip
    builds.add_argument("--repo", default=None, metavar="DIR",
                        help="a git repository whose commits are bisected (first-parent line), built by --build")  # fmt: skip
    builds.add_argument("--build", default=None, metavar="CMD",
                        help="with --repo: a shell command that builds a wheel of $COMMIT into the directory "
                        "$OUT; it runs in a clean worktree of that commit, once per commit")  # fmt: skip
    builds.add_argument("--base-python", default=None, metavar="PYTHON",
                        help="with --repo: install each commit's wheels without dependencies over this "
                        "interpreter's packages (default: with their dependencies, from the index)")  # fmt: skip
    builds.add_argument(
        "--good",
        default=None,
        metavar="REF",
        help="with --package: the good (older) version; with --repo: commit",
    )
    builds.add_argument(
        "--bad",
        default=None,
        metavar="REF",
        help="with --package: the bad (newer) version; with --repo: commit",
    )
    builds.add_argument("--index-url", default=None, metavar="URL",
                        help="with --package: the package index (default PyPI; Paddle's own index for GPU "
                        "builds)")  # fmt: skip
    builds.add_argument("--python", action="append", default=[], metavar="PYTHON", dest="python",
                        help="an interpreter to measure: a build's (VENV/bin/python); repeat it, oldest first")  # fmt: skip
    builds.add_argument("--pythons", nargs="+", default=[], metavar="PYTHON",
                        help="the builds' interpreters at once, oldest first (takes every argument after it: "
                        "give CONFIGs before it, or use --python)")  # fmt: skip
    deprecated_alias(p, "--base", "--base-python")
    add_case_selection(p, place="cpu")
    p.add_argument("--gates", default=None, metavar="FILE", help="gate settings (default configs/gates.yaml)")
    p.add_argument(
        "--metric",
        choices=["instructions", "time"],
        default="instructions",
        help="the metric: instructions per iteration under callgrind (default, CPU cases), or time: each build "
        "visited against the first with the paired sequential test of `benchmark compare`",
    )
    p.add_argument("--budget-min", type=float, default=None, metavar="MIN",
                   help="with --metric time: the time budget in minutes of each build's comparison (default: "
                   "benchmark compare's); a case still inconclusive then is treated as skipped on that build")  # fmt: skip
    p.add_argument("--quick", action="store_true",
                   help="with --metric time: the quick measurement settings of benchmark compare --quick")  # fmt: skip
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes counting under callgrind at once (default: one per CPU, at most 4): the cases "
                   "of a build, or the builds of a confirmation")  # fmt: skip
    p.add_argument("--markdown", default=None, metavar="FILE", help="write the result as Markdown")
    p.add_argument("--json", default=None, metavar="FILE", help="write the result as JSON")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="write the plot: each case's count across the builds, the step marked (.png or .svg)")  # fmt: skip
    add_db(p)
    p.add_argument("--no-store", action="store_true", help="do not store the counts in the history")
    p.set_defaults(func=run)


def _builds(args: argparse.Namespace, say) -> tuple[list[str], EnvCache | CommitEnvs | None]:
    """(build labels, cache) from --package or --repo (the cache makes each build's interpreter on
    first use) or the interpreters given (cache None; the labels are the interpreters)."""
    from benchmark.bisect.builds import DEFAULT_INDEX, BuildError, EnvCache, index_versions
    from benchmark.compare.sides import CompareError

    pythons = [*args.python, *args.pythons]
    kinds = [
        k for k, given in (("--package", args.package), ("--repo", args.repo), ("--python", pythons)) if given
    ]
    if len(kinds) > 1:
        raise CompareError(f"{' and '.join(kinds)}: give one kind of builds")
    if (args.build or args.base_python) and not args.repo:
        raise CompareError("--build and --base-python go with --repo")
    if args.repo:
        from benchmark.bisect.builds import CommitEnvs, WheelCache, repo_commits

        if not (args.good and args.bad and args.build):
            raise CompareError("--repo needs --good COMMIT, --bad COMMIT and --build CMD")
        try:
            commits = repo_commits(Path(args.repo), args.good, args.bad)
        except BuildError as e:
            raise CompareError(str(e)) from None
        say(f"bisect: {len(commits)} commits of {args.repo} from {args.good} to {args.bad}")
        wheels = WheelCache(Path(args.repo), args.build, say=say)
        return [c[:12] for c in commits], CommitEnvs(wheels, base=args.base_python, say=say)
    if args.package:
        if not (args.good and args.bad):
            raise CompareError("--package needs --good VERSION and --bad VERSION")
        index = args.index_url or DEFAULT_INDEX
        try:
            versions = index_versions(args.package, args.good, args.bad, index)
        except BuildError as e:
            raise CompareError(str(e)) from None
        say(
            f"bisect: {len(versions)} versions of {args.package} from {args.good} to {args.bad}: {', '.join(versions)}"
        )
        return versions, EnvCache(args.package, index_url=index, say=say)
    if args.good or args.bad or args.index_url:
        raise CompareError("--good and --bad go with --package or --repo, --index-url with --package")
    if len(pythons) < 2:
        raise CompareError(
            f"a bisection needs at least two builds (--package, --repo, or --python twice), got {len(pythons)}"
        )
    return pythons, None


@command("bisect")
def run(args: argparse.Namespace) -> int:
    from benchmark.bisect import output
    from benchmark.bisect.builds import BuildError
    from benchmark.bisect.counting import count_build
    from benchmark.bisect.search import search_cases
    from benchmark.bisect.storing import BisectStore
    from benchmark.bisect.timing import time_build
    from benchmark.compare.instruction_counts import gate_settings
    from benchmark.compare.job import DEFAULT_BUDGET_MIN
    from benchmark.compare.run import Request, min_effects, select_cases
    from benchmark.compare.sides import CompareError, check_side
    from benchmark.instructions import callgrind as instructions
    from benchmark.instructions.counting_pass import default_jobs
    from benchmark.paths import CHECKOUT_DIR, db_url

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    timed = args.metric == "time"
    if args.budget_min is not None and not (timed and args.budget_min > 0):
        raise CompareError("--budget-min goes with --metric time and is a positive number of minutes")
    if args.quick and not timed:
        raise CompareError("--quick goes with --metric time (instruction counts have one setting)")
    builds, cache = _builds(args, say)
    req = Request(a="", b="", configs=args.configs, keyword=args.keyword, tags=args.tags, place=args.place,
                  gates=args.gates)  # fmt: skip
    cases = select_cases(req) if timed else [c for c in select_cases(req) if instructions.eligible(c)]
    if not cases:
        raise CompareError("no CPU case matches the selection: instruction counts need a CPU case")
    tooling = None
    if not timed:
        try:
            tooling = instructions.find_tooling()
        except instructions.InstructionsUnavailable as e:
            raise CompareError(str(e)) from None
    jobs = max(1, args.jobs or default_jobs())
    thresholds = {}
    if timed:
        min_effect = min_effects(req)
        thresholds = {c.id: min_effect(c) for c in cases}
    else:
        settings = gate_settings(args.gates)
        for c in cases:
            effect, noise_floor = settings(c)
            thresholds[c.id] = effect + noise_floor
    group = "bisect-" + dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    stored = BisectStore(db_url(args.db), group, root=CHECKOUT_DIR) if not args.no_store else None
    what = (
        "time against the first build (paired sequential test)"
        if timed
        else "instruction counts under callgrind"
    )
    say(f"bisect: {len(cases)} case(s) over {len(builds)} builds, {what}")
    checked: dict[int, object] = {}  # build -> its checked side (--metric time)

    def side_of(i: int, python: str):
        if i not in checked:
            checked[i] = check_side(builds[i], python, CHECKOUT_DIR)
        return checked[i]

    def count(i: int, only: set[str] | None = None, jobs: int = jobs):
        """Measure build i (every case, or the cases `only`): count it in up to `jobs` workers, or
        time it against the first build; store it; None when it is skipped."""
        try:
            python = cache.python_for(builds[i]) if cache is not None else builds[i]
        except BuildError as e:
            say(f"bisect: skipping build {i} ({builds[i]}): {e}")
            return None
        results: dict = {}
        sides: dict = {}
        chosen = [c for c in cases if only is None or c.id in only]
        if timed:
            try:
                side = side_of(i, python)
                sides["side"] = side
                if i == 0:
                    return {c.id: 1.0 for c in chosen}  # the reference every build is timed against
                first = side_of(0, cache.python_for(builds[0]) if cache is not None else builds[0])
            except (CompareError, BuildError) as e:
                say(f"bisect: skipping build {i} ({builds[i]}): {e}")
                return None
            budget = 60 * (args.budget_min if args.budget_min is not None else DEFAULT_BUDGET_MIN)
            values: dict[str, float | None] | None = time_build(
                builds[i], chosen, first, side, min_effect=min_effect, budget_s=budget, say=say,
                results=results, quick=args.quick,
            )  # fmt: skip
        else:
            assert tooling is not None  # found above for instruction counts
            values = count_build(builds[i], python, chosen, root=CHECKOUT_DIR, tooling=tooling, say=say,
                                 results=results, sides=sides, jobs=jobs)  # fmt: skip
        if stored is not None and values is not None:
            stored.add_build(builds[i], python, sides.get("side"), list(results.values()))
        return values

    try:
        results, order = search_cases(len(builds), count, thresholds)
        # timed builds are confirmed one after the other (two timing jobs at once would disturb each other)
        at_once = 1 if timed else jobs
        confirmed = (
            _confirm(results, count, thresholds, say, at_once) if not output.interrupted(results) else {}
        )
    finally:
        if stored is not None:
            stored.close()
    for case_id, r in results.items():
        print("\n".join(output.table(case_id, r, builds, confirmed.get(case_id), args.metric)))
    print(
        f"{len(order)} of {len(builds)} build(s) measured, in the order {', '.join(builds[i] for i in order)}"
    )
    if stored is not None and stored.run_ids:
        print(f"stored as run group {group}: {len(stored.run_ids)} run(s)")
    if args.markdown:
        Path(args.markdown).write_text(output.markdown(results, builds, args.metric), encoding="utf-8")
        print(f"wrote {args.markdown}")
    if args.json:
        doc = output.to_dict(results, builds, args.metric, order)
        doc["confirmed"] = confirmed
        doc["run_group"] = group if stored is not None and stored.run_ids else None
        Path(args.json).write_text(json.dumps(doc, indent=1), encoding="utf-8")
        print(f"wrote {args.json}")
    if args.plot:
        from benchmark.bisect.plot import write_plot

        for path in write_plot(results, builds, args.plot):
            print(f"wrote {path}")
    return output.exit_code(results)


def _confirm(results, count, thresholds, say, jobs: int = 1) -> dict[str, bool]:
    """Count the two builds of each step found once more, side by side: a case's step is confirmed
    when the new counts still put the last good build under its threshold and the first bad one at
    or over it (both against the case's first build, as the search judged them). Up to `jobs`
    builds are counted at once (each in one worker: a confirmation counts few cases per build)."""
    from concurrent.futures import ThreadPoolExecutor

    from benchmark.bisect.search import STEP

    wanted: dict[int, set[str]] = {}  # build -> the cases whose step it is an end of
    for case_id, r in results.items():
        if r.status == STEP and r.good is not None and r.bad is not None:
            for i in (r.good, r.bad):
                wanted.setdefault(i, set()).add(case_id)
    for i, only in sorted(wanted.items()):
        say(f"bisect: confirming: measuring build {i} again ({len(only)} case(s))")
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {i: pool.submit(count, i, only, 1) for i, only in sorted(wanted.items())}
        again = {i: f.result() or {} for i, f in futures.items()}
    out = {}
    for case_id, r in results.items():
        if r.status != STEP:
            continue
        before, after = again.get(r.good, {}).get(case_id), again.get(r.bad, {}).get(case_id)
        base, limit = r.baseline, thresholds[case_id]
        out[case_id] = bool(before and after and base and before / base - 1 < limit <= after / base - 1)
    return out
