"""Which cases a run takes: --bench-place/--bench-tags/--bench-modes selection, --bench-shard,
and the torch variant of an op case (--bench-framework torch). Pure functions over Case records
(no pytest import: the worker processes use `as_torch_case` too)."""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib

from benchmark.config.expand import config_hash
from benchmark.config.schema import OPT_IN_TAGS
from benchmark.model import Case


def csv(value: str | None) -> list[str] | None:
    """A comma-separated option as a list (None when the option is not given or empty)."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def select_cases(
    cases: list[Case], places: list[str] | None, tags: list[str] | None, modes: list[str] | None
) -> list[Case]:
    """The cases on any of `places` (globs allowed), in any of `modes`, carrying any of `tags`;
    without `tags`, every case not tagged with an opt-in tag ('slow', 'pb': the legacy corpus); the
    tag 'all' takes every case."""
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
        selected.append(c)
    return selected


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
