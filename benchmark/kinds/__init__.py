"""The case kinds: what a case's `kind:` may name, each said once.

A :class:`~benchmark.kinds.base.Kind` holds everything the harness does differently for a kind: its
schema fields, its expansion hooks, its cost, its runner (by dotted path), its counting settings
and what the suite offers it. The config schema, the grid expansion, the cost estimate, the
runners' dispatch, the callgrind pass and the pytest markers all read the registry :data:`KINDS`;
adding a kind is one module here defining ``KIND``, plus its tests: the package finds it. Nothing of
the harness is imported but :mod:`benchmark.sandbox.nn_layers`, so every package can read it.
"""

from __future__ import annotations

import importlib
import pkgutil

from benchmark.kinds.base import Kind, op_arguments

__all__ = ["KINDS", "Kind", "KindError", "get", "names", "op_arguments", "register"]


class KindError(ValueError):
    """An unknown case kind, or one that cannot be registered; the message says which."""


KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Add `kind` to the registry (a kind with the same name must be the same definition)."""
    known = KINDS.get(kind.name)
    if known is not None and known != kind:
        raise KindError(f"kind {kind.name!r} is already registered with another definition")
    KINDS[kind.name] = kind
    return kind


def names() -> tuple[str, ...]:
    """The registered kinds, in the order they were registered."""
    return tuple(KINDS)


def get(name: str) -> Kind:
    """The kind called `name`, or KindError naming the known kinds."""
    kind = KINDS.get(name)
    if kind is None:
        raise KindError(f"unknown kind {name!r}: expected one of {', '.join(KINDS)}")
    return kind


def _discover() -> None:
    """Register the ``KIND`` of every module of this package (a new module is a new kind)."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if isinstance(getattr(module, "KIND", None), Kind):
            register(module.KIND)


_discover()
