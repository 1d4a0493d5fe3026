"""`benchmark pr-scope`: is a change data only (case configs) or code (needs a maintainer's label)?"""

from __future__ import annotations

import subprocess
import sys

from benchmark.commands._common import fail


def cmd_pr_scope(args) -> int:
    from benchmark.review import code_paths

    if args.paths:
        paths = args.paths
    else:
        proc = subprocess.run(
            ["git", "diff", "--no-renames", "--name-only", f"{args.base}...{args.head}"],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            reason = " ".join(proc.stderr.split()) or f"exit status {proc.returncode}"
            return fail("pr-scope", f"git diff {args.base}...{args.head} failed: {reason}")
        paths = proc.stdout.splitlines()
    code = code_paths(paths)
    print("code" if code else "data")
    for path in code:
        print(f"not case data: {path}", file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "pr-scope",
        help="say whether a change is data only (case configs) or changes code",
        description="Print 'data' when every changed path is a YAML case file under configs/ (the operator "
        "allowlist excluded), else 'code' (the code paths go to stderr). The pull-request workflow runs "
        "a code change on the self-hosted GPU runner only after a maintainer's label. Exit 0, or 2 when "
        "git fails.",
    )
    p.add_argument(
        "paths", nargs="*", metavar="PATH", help="changed paths (default: ask git for BASE...HEAD)"
    )
    p.add_argument("--base", default="origin/main", help="the base of the comparison (default origin/main)")
    p.add_argument("--head", default="HEAD", help="the head of the comparison (default HEAD)")
    p.set_defaults(func=cmd_pr_scope)
