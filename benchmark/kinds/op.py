"""The `op` kind: one operator of the tensor API called on generated inputs with `attrs`."""

from __future__ import annotations

from typing import Any

from benchmark.kinds.base import Kind, Problem, Sizes, op_arguments


def _names(spec: Any, checks: Any) -> tuple[tuple[Any, ...], str] | None:
    reason = checks.resolver(spec.op) if checks.resolver else None
    return (("op",), reason) if reason else None


def _case(cfg: dict[str, Any], checks: Any, sizes: Sizes) -> list[Problem]:
    reason = checks.binder(cfg["op"], op_arguments(cfg), cfg.get("attrs") or {}) if checks.binder else None
    return [("attrs", reason)] if reason else []


KIND = Kind(
    name="op",
    description="benchmark cases of kind 'op' (one operator)",
    required=("op", "inputs"),
    forbidden=("feed", "ops", "fetch", "model", "step", "layer", "devices"),
    runner="benchmark.runners.paddle_ops",
    call="op",
    value_sized_output=True,
    check_names=_names,
    check_case=_case,
    accuracy=True,
    vs_torch=True,
    torch_cases=True,
    control=True,
)
