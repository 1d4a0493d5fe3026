"""Reading a config file: YAML (safe, no anchors, aliases or merge keys, bounded nesting, list
lengths and node count) with the line of every key, and pydantic errors turned into (field,
message, line)."""

from __future__ import annotations

import difflib
import re
import types
from typing import Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from benchmark.config.schema import MAX_YAML_DEPTH
from benchmark.sandbox.limits import MAX_LIST_ITEMS, MAX_YAML_NODES


class ConfigYAMLError(yaml.YAMLError):
    """A YAML construct configs do not allow (anchors, aliases, merge keys, deep nesting)."""

    def __init__(self, problem: str, mark: yaml.Mark | None):
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark


class _LineLoader(yaml.SafeLoader):
    """SafeLoader for configs: no anchors, aliases or merge keys (so nothing expands behind a name,
    and no alias bomb), nesting at most MAX_YAML_DEPTH deep, lists of at most MAX_LIST_ITEMS
    items and at most MAX_YAML_NODES nodes in all, checked while composing, before any value is
    constructed (a huge list costs its first MAX_LIST_ITEMS items, not its whole length)."""

    _depth = 0
    _nodes = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise ConfigYAMLError(
                "YAML anchors and aliases are not allowed in configs (use `defaults:` or a grid)",
                event.start_mark,
            )
        self._depth += 1
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            raise ConfigYAMLError(
                f"more than {MAX_YAML_NODES} values in one file: split it into several files",
                event.start_mark,
            )
        if isinstance(parent, yaml.SequenceNode) and isinstance(index, int) and index >= MAX_LIST_ITEMS:
            raise ConfigYAMLError(
                f"a list of more than {MAX_LIST_ITEMS} items: expected at most {MAX_LIST_ITEMS}",
                event.start_mark,
            )
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise ConfigYAMLError(f"nesting deeper than {MAX_YAML_DEPTH} levels", event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        for key, _ in node.value:
            if key.tag == "tag:yaml.org,2002:merge":
                raise ConfigYAMLError("YAML merge keys ('<<') are not allowed in configs", key.start_mark)
        return super().construct_mapping(node, deep=deep)


def load_with_lines(text: str) -> tuple[Any, dict[tuple, int]]:
    loader = _LineLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[tuple, int] = {}

        def walk(n: yaml.Node, path: tuple) -> None:
            lines.setdefault(path, n.start_mark.line + 1)
            if isinstance(n, yaml.MappingNode):
                for k, v in n.value:
                    key = k.value if isinstance(k, yaml.ScalarNode) else str(k)
                    lines[path + (key,)] = k.start_mark.line + 1
                    walk(v, path + (key,))
            elif isinstance(n, yaml.SequenceNode):
                for i, v in enumerate(n.value):
                    walk(v, path + (i,))

        if node is None:
            return None, {}
        walk(node, ())
        data = loader.construct_document(node)
        return data, lines
    finally:
        loader.dispose()


_UNION_TAG = re.compile(
    r"^(str|int|float|bool|none|[a-z]+\[.*\]|function-(after|before|wrap|plain)\[.*\]|literal\[.*\])$"
)


def _clean_loc(loc: tuple) -> tuple:
    """Drop pydantic's union-member and validator tags from an error location."""
    return tuple(p for p in loc if not (isinstance(p, str) and _UNION_TAG.match(p)))


def pydantic_field(loc: tuple) -> str:
    return ".".join(str(p) for p in _clean_loc(loc))


def _alternatives(tp: Any) -> list[Any]:
    """The members of a union annotation (`X | None`), else [tp]."""
    if get_origin(tp) in (Union, types.UnionType):
        return [m for arg in get_args(tp) for m in _alternatives(arg)]
    return [tp]


def _models_at(model: type[BaseModel], loc: tuple) -> list[type[BaseModel]]:
    """The pydantic models that may hold the key at the end of `loc` (a path from `model` through
    its fields, mappings, lists and unions)."""
    at: list[Any] = [model]
    for part in loc:
        step: list[Any] = []
        for tp in (m for a in at for m in _alternatives(a)):
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                if isinstance(part, str) and part in tp.model_fields:
                    step.append(tp.model_fields[part].annotation)
            elif (get_origin(tp), type(part)) in ((list, int), (dict, str)):
                step.append(get_args(tp)[-1])
        at = step
    return [tp for a in at for tp in _alternatives(a) if isinstance(tp, type) and issubclass(tp, BaseModel)]


def unknown_field(loc: tuple, model: type[BaseModel] | None) -> str:
    """The message of a key `model` does not know at `loc`, with the nearest known field."""
    known = sorted({f for m in _models_at(model, loc[:-1]) for f in m.model_fields}) if model else []
    close = difflib.get_close_matches(str(loc[-1]), known, n=1) if loc else []
    return f"unknown field; did you mean {close[0]!r}?" if close else "unknown field"


def pydantic_issues(err: ValidationError, model: type[BaseModel] | None = None) -> list[tuple[tuple, str]]:
    """One (location, message) per field: union alternatives are merged into one message; an
    unknown field gets the nearest field `model` (the validated model) knows there."""
    grouped: dict[tuple, list[str]] = {}
    errors = err.errors()
    locs = [_clean_loc(tuple(e["loc"])) for e in errors]

    def beside_a_deeper_error(loc: tuple) -> bool:
        return any(len(other) > len(loc) and other[: len(loc)] == loc for other in locs)

    # A union's other alternative (a $grid reference string) failing beside a real error inside the
    # value says nothing: keep the error that names the field.
    errors = [
        e
        for e, loc in zip(errors, locs, strict=True)
        if not (e["type"] == "string_type" and beside_a_deeper_error(loc))
    ]
    for e in errors:
        msg = e["msg"].removeprefix("Value error, ")
        loc = _clean_loc(tuple(e["loc"]))
        if e["type"] == "extra_forbidden":
            msg = unknown_field(loc, model)
        if msg not in grouped.setdefault(loc, []):
            grouped[loc].append(msg)
    return [(loc, " or ".join(msgs)) for loc, msgs in grouped.items()]


def line_for(lines: dict[tuple, int], path: tuple) -> int | None:
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get(())
