"""Which cases a run takes, for the suite (--bench-place/--bench-tags/--bench-modes, --bench-shard)
and the commands that run cases in other environments (`benchmark compare`, `benchmark bisect`:
--place, --tags, --modes, -k), and the torch variant of an op case (--bench-framework torch, in
the worker processes too). Pure functions over Case records."""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
from collections.abc import Callable

from _pytest.mark.expression import Expression

from benchmark.config.schema import OPT_IN_TAGS
from benchmark.datamodel.case import Case, config_hash


def csv(value: str | None) -> list[str] | None:
    """A comma-separated option as a list (None when the option is not given or empty)."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def select_cases(
    cases: list[Case],
    places: list[str] | None,
    tags: list[str] | None,
    modes: list[str] | None,
    keyword: str | None = None,
) -> list[Case]:
    """The cases on any of `places` (globs allowed), in any of `modes`, carrying any of `tags` and
    whose id matches `keyword` (pytest's -k: substrings of the id with and/or/not); without `tags`,
    every case not tagged with an opt-in tag ('slow', 'pb': the legacy corpus); the tag 'all' takes
    every case. Raises ValueError for a malformed `keyword`."""
    expr = None
    if keyword:
        try:
            expr = Expression.compile(keyword)
        except (SyntaxError, ValueError) as e:  # ParseError before pytest 8.4, SyntaxError since
            raise ValueError(f"-k {keyword!r}: {e}") from None
    selected = []
    for c in cases:
        if places and not any(c.place == p or fnmatch.fnmatch(c.place, p) for p in places):
            continue
        if modes and c.mode not in modes:
            continue
        if tags is None and OPT_IN_TAGS & set(c.tags):
            continue
        if tags and "all" not in tags and not set(tags) & set(c.tags):
            continue
        if expr is not None and not expr.evaluate(_id_matcher(c.id)):
            continue
        selected.append(c)
    return selected


def _id_matcher(case_id: str) -> Callable[..., bool]:
    """pytest's -k matching: a name matches when it is a substring of the case id (any case)."""

    def match(name: str, /, **kwargs: object) -> bool:
        return name.lower() in case_id.lower()

    return match


def shard_cases(cases: list[Case], spec: str) -> list[Case]:
    """Shard I of N ("I/N", 1-based): cases split deterministically by a hash of their id.
    Raises ValueError with the reason for a malformed spec."""
    try:
        i, n = (int(x) for x in spec.split("/"))
        if not 1 <= i <= n:
            raise ValueError
    except ValueError:
        raise ValueError(f"--bench-shard {spec!r}: expected I/N with 1 <= I <= N, e.g. 1/4") from None

    def bucket(c: Case) -> int:
        return int(hashlib.sha1(c.case_id.encode()).hexdigest(), 16) % n

    return [c for c in cases if bucket(c) == i - 1]


def as_torch_case(case: Case) -> Case:
    """The same op case run by torch: its own series (framework in the config, so a new hash)."""
    twin = dataclasses.replace(
        case, case_id=f"{case.case_id}-torch", spec=case.spec.model_copy(update={"framework": "torch"})
    )
    return dataclasses.replace(twin, config_hash=config_hash(twin.config))
