"""`benchmark compare`: two environments (two paddle builds) measured in one job; exit 0, 1 or 2.

The command parses its options into a `benchmark.compare.run.Request` and calls
`benchmark.compare.run.compare`; the job itself (steps, workers, sequential stopping, storing)
is `benchmark.compare`; the statistics are `benchmark.analysis.sequential`; the Markdown and the
chart are `benchmark.compare.render`.
"""

from __future__ import annotations

import argparse
import os

from benchmark.commands._common import add_case_selection, add_db, add_min_effect, command, default_min_effect
from benchmark.compare import settings as ec
from benchmark.compare.sides import VENV_NEEDS

EPILOG = f"""\
Each interpreter's environment needs
{VENV_NEEDS}; the harness's own code comes
from this checkout (its root goes first on the workers' PYTHONPATH), so e.g.
  python -m venv /tmp/pr && /tmp/pr/bin/pip install paddlepaddle==3.3.1 numpy scipy pyyaml pydantic
is enough. Exit status: 0 no case slower, 1 a case slower (in time, or with --instructions in
instructions), 2 an input error or a case that could not be measured on a side.
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
            "(paired by step; the Hodges-Lehmann estimate of the log ratios) with the overlap of a t and a "
            "signed-rank interval on them; verdicts slower, "
            "faster, same (within --min-effect) or inconclusive (with the pairs it would need). Cases are "
            "measured until decided or the budget runs out; false slower/faster verdicts are bounded by "
            "--alpha over all cases and looks. Both sides are stored in the history as two runs of one "
            "run group (compare-<timestamp>), in series of their own.",
            width=100,
            break_on_hyphens=False,
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
    add_case_selection(p, modes=True)
    p.add_argument(
        "--budget-min",
        type=float,
        default=ec.DEFAULT_BUDGET_MIN,
        metavar="M",
        help=f"the time budget in minutes: no step starts that would end after it (default {ec.DEFAULT_BUDGET_MIN:g})",
    )
    add_min_effect(p, also="; with --gates, each case's own from that file; smaller changes are 'same'")
    p.add_argument(
        "--gates",
        default=None,
        metavar="FILE",
        help="gate settings: take each case's min_effect from this file (e.g. configs/gates.yaml; "
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
        f"(its warmup, rounds and time per process; default {ec.DEFAULT_TRIAL_PROCESSES})",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="the quick measurement settings: short, for smoke runs and tests; rough numbers, more pairs per minute",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        metavar="N",
        help="OMP/MKL/paddle threads of the workers unless set in the environment (default 1; 0: leave)",
    )
    p.add_argument(
        "--pairing",
        choices=ec.PAIRINGS,
        default=ec.DEFAULT_PAIRING,
        help="how a pair's two trials run: back-to-back (one side then the other, seconds apart) or "
        "simultaneous (both at once, each side's worker pinned to its own core, the cores swapped "
        "every step, a barrier before the timed rounds; needs 2 cores; docs/compare.md) "
        f"(default {ec.DEFAULT_PAIRING})",
    )
    p.add_argument(
        "--pin",
        default="off",
        metavar="auto|off|CORE",
        help="the one core both sides' workers of back-to-back pairs run on, once they have imported "
        "the framework: 'auto' the highest core no other run on this machine has claimed, when "
        "--threads is 1 and 2 or more cores are allowed; 'off'; or a core number. Simultaneous "
        "pairs take their own two cores. Off by default: on a 2-core VM one core for both sides "
        "gave pairs with outliers that unpinned ones did not (docs/compare.md) (default off)",
    )
    p.add_argument(
        "--probe",
        action="store_true",
        help="time the reference probe (a fixed numpy workload, docs/measurement.md) in each worker "
        "before its first trial and after each, and keep each trial's figure beside its value (in "
        "--json and the stored runs); the verdicts do not use it (default off)",
    )
    p.add_argument("--seed", type=int, default=None, help="seed of the randomized order (default: random)")
    add_db(p)
    p.add_argument("--no-store", action="store_true", help="do not store the comparison in the history")
    p.add_argument(
        "--markdown", default=None, metavar="FILE", help="write the result as Markdown (a PR comment)"
    )
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="write the plot: the A/B chart (FILE.png or FILE.svg; other: both)",
    )
    p.add_argument(
        "--json",
        default=None,
        metavar="FILE",
        help="write the result as JSON: the job (sides, verdicts, values)",
    )
    p.add_argument(
        "--worker-log",
        default=os.devnull,
        metavar="FILE",
        help="where the workers' own output goes (what paddle prints; default: discarded)",
    )
    p.add_argument(
        "--instructions",
        action="store_true",
        help="after the timing job (not after an interrupted one), count the instructions per iteration "
        "of each CPU case timed on both sides under callgrind, once per side in that side's "
        "interpreter: B/A of the counts, 'slower' (exit 1) when it is at least the instruction "
        "min_effect of the gate settings (--gates, default configs/gates.yaml: 1%%) and beyond 3x "
        "the noise (the counts' spread, at least the noise_floor, 0.2%%). --min-effect does not "
        "apply. Without valgrind: one line and the timing comparison only",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_compare)


@command("compare")
def cmd_compare(args: argparse.Namespace) -> int:
    from benchmark.compare.run import Request, compare

    request = Request(
        a=args.a,
        b=args.b,
        configs=list(args.configs),
        keyword=args.keyword,
        tags=args.tags,
        modes=args.modes,
        place=args.place,
        budget_min=args.budget_min,
        # without --gates, one minimum effect for every case: --min-effect, else gates.yaml's default
        min_effect=default_min_effect()
        if args.min_effect is None and args.gates is None
        else args.min_effect,
        gates=args.gates,
        alpha=args.alpha,
        max_pairs=args.max_pairs,
        processes=args.processes,
        quick=args.quick,
        threads=args.threads,
        seed=args.seed,
        db=args.db,
        store=not args.no_store,
        markdown=args.markdown,
        plot=args.plot,
        json=args.json,
        worker_log=args.worker_log,
        quiet=args.quiet,
        instructions=args.instructions,
        pairing=args.pairing,
        pin=args.pin,
        probe=args.probe,
    )
    return compare(request)
