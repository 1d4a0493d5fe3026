"""`benchmark pr-configs`: write a data-only change's case configs out of git blobs, for the trusted job."""

from __future__ import annotations

import sys
from pathlib import Path

from benchmark.commands._common import deprecated_alias, fail
from benchmark.pullrequest.changes import MAX_FILE_BYTES, MAX_FILES, ChangeError, diff, extract
from benchmark.text import safe_line


def cmd_pr_configs(args) -> int:
    try:
        written = extract(
            diff(args.base, args.head),
            Path(args.out),
            max_file_bytes=args.max_file_bytes,
            max_files=args.max_files,
        )
    except ChangeError as exc:
        return fail("pr-configs", str(exc))
    for path in written:
        print(safe_line(repr(path)))
    print(f"{len(written)} case file(s) written under {args.out}", file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "pr-configs",
        help="write a data-only change's case configs from git blobs (for the trusted GPU job)",
        description="Read the changes of HEAD since its merge base with BASE from git objects (nothing "
        "is checked out) and write each added or changed case config to OUT/<its path>, from its blob. "
        "Refuses, with one line and exit 2, a change that is not data only (see pr-scope), a file over "
        "--max-file-bytes, more than --max-files files, or an OUT that is not empty.",
    )
    p.add_argument("--base", required=True, help="the base commit of the pull request")
    p.add_argument("--head", required=True, help="the head commit of the pull request (fetched as objects)")
    p.add_argument(
        "--out",
        required=True,
        help="where the output goes: an empty or new directory to write configs/... into",
    )
    p.add_argument(
        "--max-file-bytes",
        type=int,
        default=MAX_FILE_BYTES,
        help=f"the largest case file taken, in bytes (default {MAX_FILE_BYTES})",
    )
    p.add_argument(
        "--max-files",
        type=int,
        default=MAX_FILES,
        help=f"the most case files taken (default {MAX_FILES})",
    )
    deprecated_alias(p, "--max-bytes", "--max-file-bytes")
    p.set_defaults(func=cmd_pr_configs)
