"""The operator allowlist: which names a config may call (`configs/allowlist.yaml`), deny by default.

A config names functions in three fields: `op` (a case's operator or a program step's), `reference`
(the numpy/scipy/torch function its output is checked against) and `torch_op` (its torch
equivalent); and a layer case names a class in a fourth, `layer` (`benchmark.sandbox.nn_layers`). Each name must be exactly `<namespace>.<name>` for a pair listed under that field in
the allowlist. This module answers "is it admitted, and if not, why" without importing any
framework; `benchmark.runners.base.resolve_allowed` turns an admitted name into the function.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from benchmark.paths import ALLOWLIST_PATH

FIELDS = ("op", "reference", "torch_op", "layer")
DEFAULT_PATH = ALLOWLIST_PATH
# ASCII only, no empty, private or dunder segment, no trailing dot, newline or space.
_DOTTED = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+", re.ASCII)
_WHAT = {
    "op": "an operator of the tensor API (e.g. 'paddle.abs', 'paddle.nn.functional.softmax')",
    "reference": "a numeric numpy, scipy.special or torch function (e.g. 'numpy.abs')",
    "torch_op": "an operator of the torch tensor API (e.g. 'torch.abs')",
    "layer": "a layer class of paddle.nn (e.g. 'paddle.nn.Conv2D')",
}


class AllowlistError(Exception):
    """The allowlist file itself is unreadable or malformed."""


@dataclass(frozen=True)
class Allowlist:
    path: Path
    # field -> namespace -> names
    entries: Mapping[str, Mapping[str, frozenset[str]]]

    def names(self, field: str) -> frozenset[str]:
        """Every admitted dotted name of `field`."""
        return frozenset(f"{ns}.{n}" for ns, names in self.entries.get(field, {}).items() for n in names)

    def split(self, field: str, name: str) -> tuple[str, str] | None:
        """(namespace, leaf) when `name` is admitted for `field`, else None."""
        if not isinstance(name, str) or not _DOTTED.fullmatch(name):
            return None
        namespace, _, leaf = name.rpartition(".")
        return (namespace, leaf) if leaf in self.entries.get(field, {}).get(namespace, ()) else None

    def check(self, field: str, name: object) -> str | None:
        """None when `name` is admitted for `field`, else the reason, in one line."""
        if field not in FIELDS:
            raise ValueError(f"unknown allowlist field {field!r}: expected one of {', '.join(FIELDS)}")
        if not isinstance(name, str):
            return f"expected {_WHAT[field]} as a string, got {type(name).__name__}"
        if not _DOTTED.fullmatch(name):
            return (
                f"{name!r} is not a plain dotted name (ASCII letters, digits and '_', no private, dunder "
                f"or empty segment, no spaces): expected {_WHAT[field]}"
            )
        if self.split(field, name):
            return None
        return (
            f"{name!r} is not on the allowlist ({self._where()}){self._hint(field, name)}: expected "
            f"{_WHAT[field]} (to propose one: `python tools/allowlist_candidates.py`, then a pull request "
            "that changes the allowlist, reviewed by maintainers)"
        )

    def _where(self) -> str:
        try:
            return str(self.path.relative_to(DEFAULT_PATH.parents[1]))
        except ValueError:
            return self.path.name

    def _hint(self, field: str, name: str) -> str:
        namespace, _, leaf = name.rpartition(".")
        listed = self.entries.get(field, {})
        if leaf.endswith("_") and leaf[:-1] in listed.get(namespace, ()):
            return f"; in-place variants change the inputs between iterations, use {namespace + '.' + leaf[:-1]!r}"
        if namespace not in listed:
            return f"; namespace {namespace!r} is not allowed (allowed: {', '.join(sorted(listed))})"
        close = difflib.get_close_matches(leaf, sorted(listed[namespace]), n=1, cutoff=0.8)
        return f"; did you mean {namespace + '.' + close[0]!r}?" if close else ""


def check(field: str, name: object) -> str | None:
    """`Allowlist.check` on the project's allowlist."""
    return load_allowlist().check(field, name)


@functools.lru_cache(maxsize=8)
def load_allowlist(path: str | Path | None = None) -> Allowlist:
    """The allowlist at `path` (default: configs/allowlist.yaml), validated; cached per path."""
    path = Path(path) if path else DEFAULT_PATH
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise AllowlistError(f"{path}: cannot read the operator allowlist: {e}") from e
    if not isinstance(data, dict) or set(data) - set(FIELDS):
        raise AllowlistError(f"{path}: expected a mapping with the keys {', '.join(FIELDS)}")
    entries: dict[str, dict[str, frozenset[str]]] = {}
    for field in FIELDS:
        sections = data.get(field) or {}
        if not isinstance(sections, dict):
            raise AllowlistError(f"{path}: {field}: expected a mapping of namespace -> list of names")
        entries[field] = {}
        for namespace, names in sections.items():
            bad = [
                n for n in names or [] if not isinstance(n, str) or not _DOTTED.fullmatch(f"{namespace}.{n}")
            ]
            if not isinstance(names, list) or bad:
                raise AllowlistError(
                    f"{path}: {field}.{namespace}: expected a list of plain names, got {bad or names!r}"
                )
            entries[field][str(namespace)] = frozenset(names)
    return Allowlist(path, entries)
