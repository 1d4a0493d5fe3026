"""`benchmark validate` and `benchmark list`: check configs and show the cases they expand to."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmark import paths as project_paths
from benchmark.commands._common import positive_int
from benchmark.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_CASES
from benchmark.text import safe_line, terminal_line


def default_config_dir() -> Path:
    """The shipped configs/ beside the package, else ./configs."""
    return project_paths.CONFIGS_DIR if project_paths.CONFIGS_DIR.is_dir() else Path("configs")


GATES_FILES = ("gates.yaml", "gates.yml")


def _split(paths: list[str]) -> tuple[list[str], list[Path]]:
    """(case config paths, gate settings files): a gates.yaml named directly, or at the top of a
    directory, is gate settings, checked by the loader the gate uses."""
    case_paths: list[str] = []
    gate_files: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.name in GATES_FILES and path.is_file():
            gate_files.append(path)
            continue
        case_paths.append(text)
        if path.is_dir():
            gate_files.extend(path / name for name in GATES_FILES if (path / name).is_file())
    return case_paths, gate_files


def _lazy_checks(resolve: bool):
    """`runners.config_checks`, built on the first question a config asks: a file refused by a cap
    (size, list length, case count) costs no framework import (paddle's is about 3 s and 300 MB).
    Returns (checks, the resolver once built or None)."""
    from benchmark import runners
    from benchmark.config.expand import Checks

    built: list = []

    def real():
        if not built:
            built.append(runners.config_checks(resolve=resolve))
        return built[0]

    def resolver(op: str) -> str | None:
        r = real().resolver
        return r(op) if r else None

    def binder(op: str, inputs, attrs) -> str | None:
        b = real().binder
        return b(op, inputs, attrs) if b else None

    def layer_binder(layer: str, args, inputs, attrs) -> tuple[str, str] | None:
        b = real().layer_binder
        return b(layer, args, inputs, attrs) if b else None

    checks = Checks(
        resolver=resolver,
        binder=binder,
        layer_binder=layer_binder,
        models=runners.model_names(),
        # a model's arguments and estimate need no framework: asked without building `real()`
        model_check=runners.model_check,
    )
    return checks, lambda: real().resolver


def _load(args, case_paths: list[str] | None = None):
    from benchmark.config import load_paths

    checks, resolver = _lazy_checks(resolve=not args.no_resolve)
    paths = case_paths if case_paths is not None else args.paths or [str(default_config_dir())]
    if not paths:
        return ([], []), resolver
    return load_paths(paths, checks=checks, max_bytes=args.max_bytes, max_cases=args.max_cases), resolver


def _gate_problems(files: list[Path]) -> list[str]:
    """One line per gate settings file that `benchmark.gate.settings.load_gates` refuses."""
    if not files:
        return []
    from benchmark.gate.settings import GateError, load_gates

    problems = []
    for path in files:
        try:
            load_gates(path)
        except GateError as e:
            problems.append(" ".join(str(e).split()))
    return problems


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
    case_paths, gate_files = _split(args.paths or [str(default_config_dir())])
    (cases, issues), resolver = _load(args, case_paths)
    problems = [str(i) for i in issues] + _gate_problems(gate_files)
    for problem in problems:
        print(terminal_line(problem))  # a file name may hold a newline or a CI command (issue 44)
    n_files = len({c.source for c in cases})
    if problems:
        print(f"{len(problems)} problem(s) found", file=sys.stderr)
        return 2
    if args.budget is not None:
        over = _over_budget(cases, args.budget, args.budget_tag)
        if over:
            print(safe_line(over))
            print("1 problem(s) found", file=sys.stderr)
            return 2
    parts = []
    if case_paths:
        note = "" if resolver() else " (names checked against the allowlist only: paddle not resolved here)"
        n_cases = len({c.case_id for c in cases})
        parts.append(f"{n_cases} case(s), {len(cases)} item(s) in {n_files} file(s){note}")
    if gate_files:
        parts.append(f"gate settings {', '.join(map(str, gate_files))}")
    print(safe_line("ok: " + "; ".join(parts)))
    return 0


def _over_budget(cases, budget: float, tag: str | None) -> str | None:
    """One line when the estimated cost of `cases` (those tagged `tag`) is over `budget` seconds."""
    from benchmark.config.cost import estimate  # the config layer: not at --help time

    rows = estimate(cases, tag)
    total = sum(s for s, _ in rows)
    if total <= budget:
        return None
    worst = ", ".join(f"{c.id} ({s:.0f} s, {c.source}:{c.line})" for s, c in rows[:3])
    what = f"the cases tagged {tag!r}" if tag else "the cases"
    return (
        f"budget: {what} would cost about {total:.0f} s, over the budget of {budget:g} s "
        f'(docs/sandbox.md, "Cost"; the costliest: {worst})'
    )


def cmd_list(args) -> int:
    (cases, issues), _ = _load(args)
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
        "validate",
        help="check benchmark config files",
        description="Check config files: one line per problem naming the file, case, field and line. "
        "A gates.yaml (named, or at the top of a directory) is checked as gate settings. "
        "Exit 0 when every file is valid, 2 otherwise.",
    )
    _common(p)
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="refuse (exit 2, one line) when running the cases would cost more than about SECONDS: a "
        "generous estimate per case, place and mode from its measure settings (--bench-quick's, with its "
        'own on top), processes, input generation and program steps (docs/sandbox.md, "Cost")',
    )
    p.add_argument(
        "--budget-tag",
        default=None,
        metavar="TAG",
        help="with --budget: count only the cases carrying TAG (e.g. smoke, what the GPU job runs)",
    )
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser(
        "list",
        help="list the cases the configs expand to",
        description="List every expanded case (pytest id, kind, config hash, tags, source line).",
    )
    _common(p)
    p.add_argument("--tag", help="only cases carrying this tag")
    p.set_defaults(func=cmd_list)
