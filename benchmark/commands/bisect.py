"""`benchmark bisect`: the first build in an ordered range whose instruction count is worse than the
first build's by at least the case's minimum effect; exit 0 no step, 1 a step, 2 an error.

The search is `benchmark.bisect.search`; a build is counted by `benchmark.bisect.counting`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmark.commands._common import add_case_selection, command


def register(sub) -> None:
    p = sub.add_parser(
        "bisect",
        help="find the first build in an ordered range whose count is worse than the first build's: "
        "exit 0 no step, 1 a step, 2 an error",
        description="Bisect an ordered range of builds (interpreters of environments with their own "
        "paddle, given with --pythons, oldest first) for each selected case: the two ends are "
        "measured first, then the midpoints; a build that cannot be used is skipped with one line. "
        "The harness's code comes from this checkout.",
    )
    p.add_argument(
        "--pythons",
        nargs="+",
        required=True,
        metavar="PYTHON",
        help="the builds' interpreters, oldest first (give CONFIGs before this option)",
    )
    add_case_selection(p, place="cpu")
    p.add_argument("--gates", default=None, metavar="FILE", help="gate settings (default configs/gates.yaml)")
    p.add_argument(
        "--metric",
        choices=["instructions", "time"],
        default="instructions",
        help="instructions per iteration under callgrind (default; 'time' is not implemented yet)",
    )
    p.add_argument("--markdown", default=None, metavar="FILE", help="write the result as Markdown")
    p.add_argument("--json", default=None, metavar="FILE", help="write the result as JSON")
    p.set_defaults(func=run)


@command("bisect")
def run(args: argparse.Namespace) -> int:
    from benchmark.bisect import output
    from benchmark.bisect.counting import count_build
    from benchmark.bisect.search import search_cases
    from benchmark.compare.counts import gate_settings
    from benchmark.compare.run import Request, select_cases
    from benchmark.compare.sides import CompareError
    from benchmark.instructions import callgrind as instructions
    from benchmark.paths import CHECKOUT_DIR

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.metric != "instructions":
        raise CompareError("--metric time: not implemented yet; use --metric instructions")
    builds = list(args.pythons)
    if len(builds) < 2:
        raise CompareError(f"--pythons: a bisection needs at least two builds, got {len(builds)}")
    req = Request(a="", b="", configs=args.configs, keyword=args.keyword, tags=args.tags, place=args.place)
    cases = [c for c in select_cases(req) if instructions.eligible(c)]
    if not cases:
        raise CompareError("no CPU case matches the selection: instruction counts need a CPU case")
    try:
        tooling = instructions.find_tooling()
    except instructions.InstructionsUnavailable as e:
        raise CompareError(str(e)) from None
    settings = gate_settings(args.gates)
    thresholds = {}
    for c in cases:
        min_effect, noise_floor = settings(c)
        thresholds[c.id] = min_effect + noise_floor
    by_id = {c.id: c for c in cases}
    say(f"bisect: {len(cases)} case(s) over {len(builds)} builds, instruction counts under callgrind")

    def measure_all(i: int):
        return count_build(
            str(i), builds[i], list(by_id.values()), root=CHECKOUT_DIR, tooling=tooling, say=say
        )

    results, order = search_cases(len(builds), measure_all, thresholds)
    for case_id, r in results.items():
        print("\n".join(output.table(case_id, r, builds)))
    print(f"{len(order)} of {len(builds)} build(s) measured, in the order {', '.join(map(str, order))}")
    if args.markdown:
        Path(args.markdown).write_text(output.markdown(results, builds, args.metric), encoding="utf-8")
        print(f"wrote {args.markdown}")
    if args.json:
        doc = output.to_dict(results, builds, args.metric, order)
        Path(args.json).write_text(json.dumps(doc, indent=1), encoding="utf-8")
        print(f"wrote {args.json}")
    return output.exit_code(results)
