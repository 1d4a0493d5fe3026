"""The `program` kind: a static program of steps (`ops`, a step may be control flow with
`branches`) over `feed`, fetching `fetch`."""

from __future__ import annotations

from typing import Any

from benchmark.kinds.base import Kind, Problem, Sizes

STEP_BUILD_S = 0.06  # building one step, once per process (a switch_case of 6,000 branches: 5 min 52 s)


def branch_lists(step: Any) -> list[tuple[str | int, list]]:
    get = step.get if isinstance(step, dict) else lambda k: getattr(step, k)
    lists: list[tuple[str | int, list]] = [(j, b) for j, b in enumerate(get("branches") or [])]
    default = get("default")
    return lists + ([("default", default)] if default else [])


def program_steps(step: Any, where: tuple) -> list[tuple[tuple, Any]]:
    """(path, step) of a program step and of every step in its branches (a step as a dict or a
    ProgramOp): path as ("ops", 1, "branches", 0, 2) or ("ops", 1, "default", 0)."""
    out = [(where, step)]
    for key, steps in branch_lists(step):
        prefix = (*where, "default") if key == "default" else (*where, "branches", key)
        for k, inner in enumerate(steps):
            out += program_steps(inner, (*prefix, k))
    return out


def _names(spec: Any, checks: Any) -> tuple[tuple[Any, ...], str] | None:
    if not checks.resolver:
        return None
    for i, top in enumerate(spec.ops or []):
        for where, step in program_steps(top, ("ops", i)):
            reason = checks.resolver(step.op)
            if reason:
                return (*where, "op"), reason
    return None


def _case(cfg: dict[str, Any], checks: Any, sizes: Sizes) -> list[Problem]:
    problems: list[Problem] = []
    if not checks.binder:
        return problems
    for i, top in enumerate(cfg["ops"]):
        for where, op in program_steps(top, ("ops", i)):
            if op.get("branches") is not None:
                continue  # control flow: called by the runner with closures over its branches
            inputs = op["inputs"] if isinstance(op["inputs"], list) else dict.fromkeys(op["inputs"])
            reason = checks.binder(op["op"], inputs, op.get("attrs") or {})
            if reason:
                problems.append((".".join(map(str, (*where, "attrs"))), reason))
    return problems


def _steps(step: Any) -> int:
    return 1 + sum(_steps(s) for _, steps in branch_lists(step) for s in steps)


def _build_seconds(spec: Any) -> float:
    return STEP_BUILD_S * sum(_steps(s) for s in (spec.ops or ()))


KIND = Kind(
    name="program",
    description="benchmark cases of kind 'program' (a static program of steps)",
    required=("feed", "ops", "fetch"),
    forbidden=("op", "inputs", "model", "step", "reference", "layer", "devices"),
    runner="benchmark.runners.paddle_program",
    check_names=_names,
    check_case=_case,
    build_seconds=_build_seconds,
    control=True,
)
