"""`benchmark ack`: accept a regressed level as the new baseline, recording who and why.

A regression stands: the gate fails every later run that keeps it (docs/gate.md, "A regression
stands"). When the change is intended (a new feature's cost, a deliberate trade), a user
acknowledges it here: from the acknowledged run on, the judge reads the series' history from that
run, so the run and every later run at that level pass. The acknowledgement is stored in the history
(who, why, when) and shown in the gate's output for that series.
"""

from __future__ import annotations

import fnmatch
import getpass

from benchmark.commands._common import add_db, add_run, command, open_history, open_writable, resolve_run
from benchmark.text import safe_line


def register(sub) -> None:
    p = sub.add_parser(
        "ack",
        help="acknowledge a regression: its level becomes the baseline from a run on (who and why recorded)",
        description="Acknowledge the level of the series of CASE (a case id or a glob, e.g. 'abs-*') in "
        "a run: from that run on the gate judges those series against their history since it, so a "
        "regression that stood passes at its new level. Every series of the matching cases in the run "
        "is acknowledged unless --place, --mode or --metric narrow it. Recorded with --by and --why.",
    )
    p.add_argument("case", metavar="CASE", help="case id or glob (as `benchmark gate` names it)")
    add_run(p, help="the run whose level is accepted: an id or 'latest' (default)")
    p.add_argument("--place", default="*", help="only cases on this place or glob (default: every place)")
    p.add_argument("--mode", default="*", help="mode or glob (default: every mode)")
    p.add_argument(
        "--metric",
        default="*",
        help="the metric: a stored metric or glob: time, instructions, cycles (default: every metric)",
    )
    p.add_argument("--by", default=None, help="who acknowledges it (default: the login name)")
    p.add_argument("--why", required=True, help="why the new level is accepted (a sentence, an issue link)")
    add_db(p)
    p.set_defaults(func=cmd_ack)


@command("ack")
def cmd_ack(args) -> int:
    with open_history(args.db) as store:  # refuses a history that does not exist, creating nothing
        run_id = resolve_run(store, args.run)
        series = sorted(
            {
                (r.case_id, r.place, r.mode, r.metric or "time")
                for r in store.results(run_id)
                if r.status == "ok"
                and fnmatch.fnmatchcase(r.case_id, args.case)
                and fnmatch.fnmatchcase(r.place, args.place)
                and fnmatch.fnmatchcase(r.mode, args.mode)
                and fnmatch.fnmatchcase(r.metric or "time", args.metric)
            }
        )
    if not series:
        raise ValueError(
            f"run {run_id} has no ok result of {args.case!r} (place {args.place!r}, mode {args.mode!r}, "
            f"metric {args.metric!r})"
        )
    by = args.by or getpass.getuser()
    with open_writable(args.db) as store:
        for case_id, place, mode, metric in series:
            store.acknowledge(run_id, case_id, place, mode, metric, by, args.why)
            print(safe_line(f"acknowledged {case_id} [{place} {mode}] {metric} at run {run_id} by {by}"))
    return 0
