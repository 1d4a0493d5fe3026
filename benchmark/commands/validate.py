"""`benchmark validate` and `benchmark list`: check configs and show the cases they expand to."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmark import paths as project_paths
from benchmark.commands._common import positive_int
from benchmark.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_CASES


def default_config_dir() -> Path:
    """The shipped configs/ beside the package, else ./configs."""
    return project_paths.CONFIGS_DIR if project_paths.CONFIGS_DIR.is_dir() else Path("configs")


def _load(args):
    from benchmark import runners
    from benchmark.config import load_paths

    checks = runners.config_checks(resolve=not args.no_resolve)
    paths = args.paths or [str(default_config_dir())]
    return load_paths(
        paths, checks=checks, max_bytes=args.max_bytes, max_cases=args.max_cases
    ), checks.resolver


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="config files or directories (default: configs/)")
    p.add_argument(
        "--no-resolve",
        action="store_true",
        help="check names against the allowlist only, without importing paddle to resolve them and "
        "bind their attrs",
    )
    p.add_argument(
        "--max-bytes",
        type=positive_int,
        default=DEFAULT_MAX_BYTES,
        help="largest footprint allowed per case: inputs (and gradients), or a model's estimate "
        f"(default {DEFAULT_MAX_BYTES})",
    )
    p.add_argument(
        "--max-cases",
        type=positive_int,
        default=DEFAULT_MAX_CASES,
        help=f"most cases one config entry may expand to (default {DEFAULT_MAX_CASES})",
    )


def cmd_validate(args) -> int:
    (cases, issues), resolver = _load(args)
    for issue in issues:
        print(issue)
    n_files = len({c.source for c in cases})
    if issues:
        print(f"{len(issues)} problem(s) found", file=sys.stderr)
        return 2
    note = "" if resolver else " (names checked against the allowlist only: paddle not resolved here)"
    print(f"ok: {len({c.case_id for c in cases})} case(s), {len(cases)} item(s) in {n_files} file(s){note}")
    return 0


def cmd_list(args) -> int:
    (cases, issues), _ = _load(args)
    for issue in issues:
        print(issue, file=sys.stderr)
    if issues:
        return 2
    for c in cases:
        if args.tag and args.tag not in c.tags:
            continue
        print(f"{c.id:<64} {c.kind:<8} {c.config_hash}  tags={','.join(c.tags)}  {c.source}:{c.line}")
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "validate",
        help="check benchmark config files",
        description="Check config files: one line per problem naming the file, case, field and line. "
        "Exit 0 when every file is valid, 2 otherwise.",
    )
    _common(p)
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser(
        "list",
        help="list the cases the configs expand to",
        description="List every expanded case (pytest id, kind, config hash, tags, source line).",
    )
    _common(p)
    p.add_argument("--tag", help="only cases carrying this tag")
    p.set_defaults(func=cmd_list)
