"""`benchmark profile CASE [--run ID] [--vs RUN_ID]`: the stored operator table of a case, and
which operators got slower or were called more often between two runs."""

from __future__ import annotations

import argparse
import fnmatch
import sys

from benchmark.commands._common import (
    CommandError,
    add_db,
    add_run,
    command,
    deprecated_alias,
    open_history,
    resolve_run,
)


def register(sub) -> None:
    p = sub.add_parser(
        "profile",
        help="show a case's profiled operator table from the history",
        description="Print the operator table and host/device copy counts that `pytest benchmark/ "
        "--bench-profile` stored for CASE in a run; with --vs, the operators that got slower or were "
        "called more often since RUN_ID.",
    )
    p.add_argument("case", metavar="CASE", help="case id or glob, e.g. 'abs-1000x1000-fwd' or 'abs*'")
    add_run(p)
    p.add_argument(
        "--baseline", metavar="RUN_ID", help="compare with this (older) run's profile of the same case"
    )
    deprecated_alias(p, "--vs", "--baseline")
    p.add_argument("--place", metavar="P", help="only cases on this place (cpu, gpu:0)")
    p.add_argument(
        "--all", action="store_true", help="list every operator, unchanged ones too (with --baseline)"
    )
    add_db(p)
    p.set_defaults(func=cmd_profile)


def _profiled(store, run_id: int, pattern: str, place: str | None) -> dict[tuple, dict]:
    out = {}
    for r in store.results(run_id):
        if not r.profile or not fnmatch.fnmatchcase(r.case_id, pattern):
            continue
        if place and r.place != place:
            continue
        out[(r.case_id, r.place, r.mode)] = r.profile
    return out


def _copies_line(copies: dict | None) -> str:
    if not copies:
        return "copies: not recorded"
    parts = [f"{k.upper()} {v['count']} ({v['bytes']:,} B)" for k, v in copies.items() if isinstance(v, dict)]
    return "copies per profiled steps: " + ", ".join(parts)


@command("profile")
def cmd_profile(args: argparse.Namespace) -> int:
    from benchmark.runners.profile_tables import diff_tables, format_phases, format_table

    with open_history(args.db) as store:
        run_id = resolve_run(store, args.run)
        current = _profiled(store, run_id, args.case, args.place)
        if not current:
            raise CommandError(
                f"run {run_id} has no profile for {args.case!r}: run `pytest benchmark/ -k ... --bench-profile` "
                "first"
            )
        older = (
            _profiled(store, resolve_run(store, args.baseline), args.case, args.place)
            if args.baseline
            else None
        )
    for (case_id, place, mode), prof in sorted(current.items()):
        print(f"== {case_id} [{place} {mode}] run {run_id}, {prof.get('steps', '?')} profiled steps")
        if older is None:
            print(format_table(prof.get("op_table") or []))
            print(_copies_line(prof.get("copies")))
            if prof.get("phases"):
                print(format_phases(prof["phases"]))
            overhead = prof.get("overhead")
            if overhead:
                from benchmark.runners.paddle_overhead import format_decomposition

                print(format_decomposition(overhead))
        else:
            base = older.get((case_id, place, mode))
            if base is None:
                print(f"run {args.baseline} has no profile of this case", file=sys.stderr)
                continue
            rows = diff_tables(
                base.get("op_table") or [], prof.get("op_table") or [], changed_only=not args.all
            )
            print(f"vs run {args.baseline}:")
            if prof.get("phases"):
                print(format_phases(prof["phases"], base.get("phases")))
            print(format_table(rows) if rows else "no operator changed beyond the threshold")
        print()
    return 0
