"""`benchmark validate`: check config files, one line per problem."""

from __future__ import annotations

import sys
from pathlib import Path

from benchmark.commands._configs import add_config_options, default_config_dir, load_cases
from benchmark.text import safe_line, terminal_line

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


def cmd_validate(args) -> int:
    case_paths, gate_files = _split(args.paths or [str(default_config_dir())])
    (cases, issues), resolver = load_cases(args, case_paths)
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


def register(sub) -> None:
    p = sub.add_parser(
        "validate",
        help="check benchmark config files",
        description="Check config files: one line per problem naming the file, case, field and line. "
        "A gates.yaml (named, or at the top of a directory) is checked as gate settings. "
        "Exit 0 when every file is valid, 2 otherwise.",
    )
    add_config_options(p)
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
