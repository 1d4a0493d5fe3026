"""Benchmark configs: YAML files -> validated schema -> expanded Case objects.

A config file holds `cases:` (a list), optionally with `defaults:` merged into each of them. Each
entry is one of three kinds:

* ``op``: one public paddle API call, e.g. ``op: paddle.abs``, with named ``inputs`` (shape, dtype,
  value range) and keyword ``attrs``;
* ``program``: a static program (``feed`` -> ``ops`` -> ``fetch``) run by ``paddle.static.Executor``
  (mode ``static``), eagerly (``dynamic``) or compiled (``to_static``);
* ``model``: a registered model builder (see ``benchmark.runners.models``) with ``args`` and a
  ``train`` or ``infer`` step.

A parameter ``grid`` (a mapping of name -> list of values, expanded as a product, or a list of
mappings, one point each) is substituted into any string value that is exactly ``$name``; the
dtype list and ``backward``/``step`` lists are grid dimensions too. Each expanded case gets a readable,
stable id and a hash of its fully expanded config.

Configs are data: files are read with ``yaml.safe_load`` semantics (a tag that would construct an
object is an error), names are checked against strict patterns, and nothing is executed. Caps come
before any work they bound (`benchmark.sandbox.limits`): a file's size before it is read, list lengths
and the node count while it is parsed, the case count of the whole file (from the grid's lengths)
before any entry is expanded, and each case's memory footprint before anything is allocated. Every
problem is reported as one ``ConfigIssue`` naming the file, the case, the field and the YAML line.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from benchmark.config.expand import Checks, case_count, expand
from benchmark.config.schema import NOT_CASE_FILES, CaseSpec, ConfigIssue, FileSpec
from benchmark.config.yaml_lines import (
    ConfigYAMLError,
    line_for,
    load_with_lines,
    pydantic_field,
    pydantic_issues,
)
from benchmark.datamodel.case import Case
from benchmark.sandbox.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_CASES, MAX_FILE_BYTES, MAX_FILE_CASES


def _display_path(path: Path) -> str:
    """The path relative to the working directory when it is below it (shorter, copyable)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


@dataclass
class LoadedFile:
    path: str
    cases: list[Case]
    issues: list[ConfigIssue]


def load_file(
    path: str | Path,
    *,
    resolver: Callable[[str], str | None] | None = None,
    models: Iterable[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    display: str | None = None,
    checks: Checks | None = None,
    max_cases: int = DEFAULT_MAX_CASES,
) -> LoadedFile:
    """Load, validate and expand one YAML file. Never raises for bad content: see `.issues`.

    `checks` (or the older `resolver` and `models` alone) asks the framework side what the
    allowlist cannot tell; `max_bytes` caps a case's inputs or model, `max_cases` the cases one
    config entry expands to. Both are checked before anything is expanded or allocated.
    """
    checks = checks or Checks(resolver=resolver, models=models)
    path = Path(path)
    fname = display or _display_path(path)
    issues: list[ConfigIssue] = []

    def issue(case: str | None, fld: str | None, msg: str, line: int | None = None) -> None:
        issues.append(ConfigIssue(fname, case, fld, msg, line))

    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            issue(
                None,
                None,
                f"the file is {size} bytes, more than the {MAX_FILE_BYTES} a config file may hold "
                "(refused before reading it; split it into several files)",
            )
            return LoadedFile(fname, [], issues)
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        issue(None, None, f"cannot read file: {e}")
        return LoadedFile(fname, [], issues)
    try:
        data, lines = load_with_lines(text)
    except ConfigYAMLError as e:
        issue(None, None, e.problem, e.problem_mark.line + 1 if e.problem_mark else None)
        return LoadedFile(fname, [], issues)
    except yaml.constructor.ConstructorError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else None
        issue(None, None, f"YAML tag not allowed (configs are data, no objects): {e.problem}", line)
        return LoadedFile(fname, [], issues)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        issue(None, None, f"YAML syntax error: {problem}", line)
        return LoadedFile(fname, [], issues)
    if data is None:
        issue(None, None, "empty file: expected a mapping with a 'cases' list")
        return LoadedFile(fname, [], issues)
    if not isinstance(data, dict):
        issue(None, None, f"expected a mapping with a 'cases' list, got {type(data).__name__}", 1)
        return LoadedFile(fname, [], issues)
    try:
        fspec = FileSpec.model_validate(data)
    except ValidationError as e:
        for loc, msg in pydantic_issues(e, FileSpec):
            issue(None, pydantic_field(loc), msg, line_for(lines, loc))
        return LoadedFile(fname, [], issues)
    if not fspec.cases:
        issue(None, "cases", "expected at least one case", line_for(lines, ("cases",)))

    specs: list[tuple[tuple[str, int], CaseSpec]] = []
    for idx, raw in enumerate(fspec.cases):
        base = ("cases", idx)
        cname = raw.get("name") if isinstance(raw, dict) else None
        label = cname if isinstance(cname, str) else f"#{idx + 1}"
        merged = {**copy.deepcopy(fspec.defaults), **raw}
        try:
            spec = CaseSpec.model_validate(merged)
        except ValidationError as e:
            for loc, msg in pydantic_issues(e, CaseSpec):
                issue(label, pydantic_field(loc) or None, msg, line_for(lines, base + loc))
            continue
        specs.append((base, spec))
    # Counted from the grid's lengths before any entry is expanded; an entry over its own cap
    # (max_cases) says so itself below, and counts as its cap here.
    total = sum(min(case_count(spec), max_cases + 1) for _, spec in specs)
    file_cap = max(MAX_FILE_CASES, max_cases)
    if total > file_cap:
        issue(
            None,
            "cases",
            f"the file's entries expand to {total} cases or more, more than the {file_cap} "
            "one config file may hold (refused before expanding; split it into several files)",
            line_for(lines, ("cases",)),
        )
        return LoadedFile(fname, [], issues)
    cases: list[Case] = []
    for base, spec in specs:
        cases.extend(
            expand(spec, fname, line_for(lines, base), lines, base, issue, checks, max_bytes, max_cases)
        )
    return LoadedFile(fname, cases, issues)


def find_config_files(paths: Iterable[str | Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files.extend(
                sorted(
                    f
                    for f in p.rglob("*")
                    if f.suffix in (".yaml", ".yml") and f.is_file() and f.name not in NOT_CASE_FILES
                )
            )
        else:
            files.append(p)
    return files


def load_paths(
    paths: Iterable[str | Path],
    *,
    resolver: Callable[[str], str | None] | None = None,
    models: Iterable[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    checks: Checks | None = None,
    max_cases: int = DEFAULT_MAX_CASES,
) -> tuple[list[Case], list[ConfigIssue]]:
    """Load every config under `paths`; check ids are unique across files."""
    cases: list[Case] = []
    issues: list[ConfigIssue] = []
    files = find_config_files(paths)
    for p in paths:
        if not Path(p).exists():
            issues.append(ConfigIssue(str(p), None, None, "no such file or directory"))
    first_seen: dict[str, Case] = {}
    reported: set[tuple[str, int | None, str]] = set()
    for f in files:
        if not f.exists():
            continue
        loaded = load_file(
            f, resolver=resolver, models=models, max_bytes=max_bytes, checks=checks, max_cases=max_cases
        )
        issues.extend(sorted(loaded.issues, key=lambda i: (i.line is None, i.line or 0)))  # as the file reads
        for c in loaded.cases:
            prev = first_seen.get(c.id)
            if prev is not None and (prev.source != c.source or prev.line != c.line):
                if (c.source, c.line, c.case_id) in reported:
                    continue
                reported.add((c.source, c.line, c.case_id))
                issues.append(
                    ConfigIssue(
                        c.source,
                        c.name,
                        "name",
                        f"duplicate case id {c.case_id!r} (also defined in {prev.source}:{prev.line})",
                        c.line,
                    )
                )
                continue
            first_seen.setdefault(c.id, c)
            cases.append(c)
    return cases, issues
