"""`benchmark night`: tonight's build of paddle, measured, judged against the earlier nights of this
machine and, where a case regressed, bisected to the culprit range (`benchmark.bisect.night`); with
`--backfill N`, the nights of the last N builds on the index, oldest first. Exit 0 when the judge
passes tonight, 1 when it fails a case (a regression, standing ones included, or a case that errored
or failed its check), 2 on an error of the command."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from benchmark.commands._common import add_case_selection, add_db, command, deprecated_alias, positive_int

DEFAULT_BUDGET_MIN = 60.0


def register(sub) -> None:
    p = sub.add_parser(
        "night",
        help="run tonight's build of paddle (the newest on an index), gate it against the earlier nights "
        "and bisect each regression to its culprit range: exit 0 pass, 1 a regression, 2 an error",
        description="Install the newest build of --package from --index-url (a PEP 503 index, or a "
        "directory of wheels) into a cached environment (or take --python as it is), count the selected "
        "CPU cases' instructions under callgrind, store the run as a night (the build's version, paddle "
        "commit, date and index in the run), judge it against the earlier nights of this machine, and "
        "bisect every case that regressed over the index's builds between the last night that passed "
        "for it and tonight (then over commits with --repo and --build). A regression an earlier night "
        "already bisected is reported as standing, with its range, and not bisected again; a night "
        "whose build equals the last night's is recorded as such and not bisected; an improvement is "
        "never bisected. --backfill N plays the nights of the last N builds, oldest first, skipping "
        "those already played (run it again to resume).",
    )
    b = p.add_argument_group("the build")
    b.add_argument("--package", default="paddlepaddle", metavar="NAME",
                   help="the package whose builds the nights follow (default paddlepaddle; "
                   "paddlepaddle-gpu on a GPU machine)")  # fmt: skip
    b.add_argument("--index-url", default=None, metavar="URL|DIR",
                   help="the package index where the builds are: a PEP 503 simple index (https:// or file://; Paddle's "
                   "nightly index for develop builds) or a directory of wheels")  # fmt: skip
    b.add_argument("--version", default=None, metavar="V",
                   help="this version instead of the newest (a pinned release, for a reproducible re-run); "
                   "with --backfill, the newest build of the backfill")  # fmt: skip
    b.add_argument("--python", default=None, metavar="PYTHON",
                   help="an interpreter to measure: its paddle as it is, instead of installing a build "
                   "(its builds are then bisected only where --index-url lists them)")  # fmt: skip
    b.add_argument("--backfill", type=positive_int, default=None, metavar="N",
                   help="play the nights of the last N builds on the index, oldest first, each recorded as "
                   "the night it stands for; builds already played are skipped, so a re-run resumes")  # fmt: skip
    b.add_argument("--resolve", action="store_true",
                   help="print the build the night would install (version, wheel URL, sha256, date, index) as "
                   "one JSON line and exit: a workflow installs it beside the suite")  # fmt: skip
    add_case_selection(p, place="cpu")
    p.add_argument("--gates", default=None, metavar="FILE", help="gate settings (default configs/gates.yaml)")
    p.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="worker processes counting under callgrind at once (default: one per CPU, at most 4)")  # fmt: skip
    s = p.add_argument_group("the bisection")
    s.add_argument("--budget-min", type=float, default=DEFAULT_BUDGET_MIN, metavar="MIN",
                   help=f"the time budget in minutes of the whole bisection of a night (default "
                   f"{DEFAULT_BUDGET_MIN:.0f}); when it runs out the report says how far it got")  # fmt: skip
    s.add_argument("--no-bisect", dest="bisect", action="store_false",
                   help="judge the night but bisect nothing")  # fmt: skip
    s.add_argument("--repo", default=None, metavar="DIR",
                   help="a git repository, a clone of paddle: after the builds, bisect a step's two paddle commits over the "
                   "commits between them, each built by --build")  # fmt: skip
    s.add_argument("--build", default=None, metavar="CMD",
                   help="with --repo: a shell command that builds a wheel of $COMMIT into $OUT (as "
                   "benchmark bisect --build)")  # fmt: skip
    s.add_argument("--base-python", default=None, metavar="PYTHON",
                   help="with --repo: install each commit's wheels without dependencies over this interpreter's packages")  # fmt: skip
    s.add_argument("--upstream", default=None, metavar="URL",
                   help="the repository whose compare view links two commits (default "
                   "https://github.com/PaddlePaddle/Paddle)")  # fmt: skip
    o = p.add_argument_group("output")
    o.add_argument(
        "--markdown", default=None, metavar="FILE", help="write the result as Markdown: the night(s)"
    )
    o.add_argument("--json", default=None, metavar="FILE", help="write the result as JSON: the night records")
    o.add_argument("--summary", default=None, metavar="FILE",
                   help="append the Markdown to this file (default $GITHUB_STEP_SUMMARY when set: the job "
                   "summary of a GitHub workflow)")  # fmt: skip
    add_db(p)
    deprecated_alias(p, "--base", "--base-python")
    p.set_defaults(func=run)


def _check(args: argparse.Namespace) -> None:
    from benchmark.commands._common import CommandError

    if args.python is None and not args.index_url:
        raise CommandError(
            "give --index-url URL|DIR (the builds to follow) or --python PYTHON (a build as it is)"
        )
    if args.resolve and (args.python is not None or args.backfill):
        raise CommandError(
            "--resolve names the build of --index-url (and --version): not with --python or --backfill"
        )
    if args.python is not None and (args.backfill or args.version):
        raise CommandError("--backfill and --version install builds from --index-url: not with --python")
    if (args.build or args.base_python) and not args.repo:
        raise CommandError("--build and --base-python go with --repo")
    if args.repo and not args.build:
        raise CommandError("--repo needs --build CMD (the command that builds a commit's wheel)")
    if not args.budget_min > 0:
        raise CommandError(f"--budget-min must be a positive number of minutes, got {args.budget_min}")


def _pick(listing, args: argparse.Namespace):
    """The newest build of the listing, or the one of --version."""
    from packaging.version import InvalidVersion, Version

    from benchmark.commands._common import CommandError

    if not args.version:
        return listing[-1]
    try:
        return next(b for b in listing if Version(b.version) == Version(args.version))
    except (StopIteration, InvalidVersion):
        raise CommandError(
            f"--version {args.version}: no such build of {args.package} on {args.index_url}"
        ) from None


def _resolve(args: argparse.Namespace) -> int:
    from benchmark.bisect.builds import BuildError
    from benchmark.bisect.index import index_builds
    from benchmark.commands._common import CommandError

    try:
        build = _pick(index_builds(args.package, args.index_url), args)
    except BuildError as e:
        raise CommandError(str(e)) from None
    print(json.dumps(build.to_dict()))
    return 0


@command("night")
def run(args: argparse.Namespace) -> int:
    _check(args)
    if args.resolve:
        return _resolve(args)
    from benchmark.bisect import night
    from benchmark.bisect.builds import BuildError
    from benchmark.bisect.index import BuildEnvs, index_builds
    from benchmark.commands._common import CommandError
    from benchmark.compare.instruction_counts import gate_settings
    from benchmark.compare.run import Request, select_cases
    from benchmark.instructions import callgrind as instructions
    from benchmark.instructions.counting_pass import default_jobs
    from benchmark.paths import CHECKOUT_DIR, db_url
    from benchmark.report import night as words

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    req = Request(a="", b="", configs=args.configs, keyword=args.keyword, tags=args.tags, place=args.place,
                  gates=args.gates)  # fmt: skip
    cases = [c for c in select_cases(req) if instructions.eligible(c)]
    if not cases:
        raise CommandError("no CPU case matches the selection: a night counts instructions of CPU cases")
    try:
        tooling = instructions.find_tooling()
    except instructions.InstructionsUnavailable as e:
        raise CommandError(str(e)) from None
    settings = gate_settings(args.gates)
    thresholds = {c.id: sum(settings(c)) for c in cases}
    s = night.NightSettings(
        cases=cases, db_url=db_url(args.db), root=CHECKOUT_DIR, tooling=tooling, thresholds=thresholds,
        gates_path=args.gates, jobs=args.jobs or default_jobs(), budget_s=60 * args.budget_min,
        bisect=args.bisect, repo=args.repo, build_cmd=args.build, base=args.base_python,
        upstream=args.upstream or night.DEFAULT_UPSTREAM,
        selection={k: v for k, v in (("keyword", args.keyword),) if v}, say=say, package=args.package,
        index=args.index_url,
    )  # fmt: skip
    try:
        if args.backfill:
            records = night.backfill(s, args.package, args.index_url, args.backfill, newest=args.version)
        elif args.python:
            listing = index_builds(args.package, args.index_url) if args.index_url else None
            envs = BuildEnvs(listing, say=say) if listing else None
            records = [night.play_night(s, python=args.python, envs=envs, index_list=listing)]
        else:
            listing = index_builds(args.package, args.index_url)
            build = _pick(listing, args)
            say(
                f"night: {args.package} {build.version} from {args.index_url} (the {'pinned' if args.version else 'newest'} build)"
            )
            records = [night.play_night(s, build=build, envs=BuildEnvs(listing, say=say), index_list=listing)]
    except BuildError as e:
        raise CommandError(str(e)) from None
    for record in records:
        print("\n".join(words.lines(record)))
    md = "\n\n".join(words.markdown(r) for r in records) + "\n"
    if args.markdown:
        Path(args.markdown).write_text(md, encoding="utf-8")
        print(f"wrote {args.markdown}")
    summary = args.summary or os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(md)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1, default=str), encoding="utf-8")
        print(f"wrote {args.json}")
    if not records:
        print("night: every build of the backfill was already played")
    # the judge's failing verdicts (a regression, a case that errored or failed its check) fail the night
    failing = any(
        v in ("regression", "failed", "error") for r in records[-1:] for v in r.get("verdicts", {}).values()
    )
    return 1 if failing else 0
