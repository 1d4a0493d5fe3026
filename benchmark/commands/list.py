"""`benchmark list`: the cases the configs expand to, one line each."""

from __future__ import annotations

import sys

from benchmark.commands._configs import add_config_options, load_cases
from benchmark.text import safe_line


def cmd_list(args) -> int:
    (cases, issues), _ = load_cases(args)
    for issue in issues:
        print(safe_line(issue), file=sys.stderr)
    if issues:
        return 2
    for c in cases:
        if args.tag and args.tag not in c.tags:
            continue
        print(
            safe_line(f"{c.id:<64} {c.kind:<8} {c.config_hash}  tags={','.join(c.tags)}  {c.source}:{c.line}")
        )
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "list",
        help="list the cases the configs expand to",
        description="List every expanded case (pytest id, kind, config hash, tags, source line).",
    )
    add_config_options(p)
    p.add_argument("--tag", help="only cases carrying this tag")
    p.set_defaults(func=cmd_list)
