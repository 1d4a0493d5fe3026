"""`benchmark pr-scope`: is a change data only (case configs) or code (needs a maintainer's label)?"""

from __future__ import annotations

import sys

from benchmark.commands._common import fail
from benchmark.pullrequest.changes import ChangeError, diff, path_reasons, scope
from benchmark.text import safe_line


def cmd_pr_scope(args) -> int:
    try:
        refused = path_reasons(args.paths) if args.paths else scope(diff(args.base, args.head))
    except ChangeError as exc:
        return fail("pr-scope", str(exc))
    print("code" if refused else "data")
    for path, reason in refused:
        print(safe_line(f"not case data: {path!r}: {reason}"), file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "pr-scope",
        help="say whether a change is data only (case configs) or changes code",
        description="Print 'data' when every changed path is a regular YAML case file under configs/ "
        "(not the operator allowlist or its table of index inputs, not gates.yaml, not a symlink, and a "
        "canonical path: no '.', '..' or empty component, no backslash or control character), else 'code' "
        "(the other paths go to "
        "stderr with the reason). The trusted GPU workflow runs a code change on the GPU runner only after "
        "a maintainer's label. Exit 0, or 2 when git fails.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="changed paths, checked in the working tree (default: ask git for BASE...HEAD)",
    )
    p.add_argument(
        "--base", default="origin/main", help="the base commit of the comparison (default origin/main)"
    )
    p.add_argument("--head", default="HEAD", help="the head commit of the comparison (default HEAD)")
    p.set_defaults(func=cmd_pr_scope)
