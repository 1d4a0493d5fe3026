"""The boundary between the harness and a framework.

A runner turns a Case into a Prepared callable: inputs are built once, outside the timed region,
from the case's seed; `step()` runs exactly one iteration; `sync()` waits for the device. Runner
modules are the only place that imports a framework (paddle, torch), so the rest of the harness
imports and tests without one.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmark.sandbox import allowlist


class RunnerUnavailable(Exception):
    """The case cannot run here (framework missing, place absent): the case is skipped with this reason."""


@dataclass
class Prepared:
    # One iteration of the case (inputs already built, on the case's place).
    step: Callable[[], Any]
    # Wait for all queued device work of the place; a no-op on CPU.
    sync: Callable[[], None] = lambda: None
    # Items processed per iteration (batch size), for throughput; None for operator cases.
    items_per_step: int | None = None
    # Framework-side outputs of one step as numpy arrays (for reference checks), if supported.
    outputs: Callable[[], dict[str, Any]] | None = None
    # Returns the device's peak memory in bytes since prepare() (None where unknown).
    peak_memory: Callable[[], int | None] | None = None
    # Creates a device timer (CUDA events) for the place, or None on CPU.
    device_timer: Callable[[], Any] | None = None
    close: Callable[[], None] = lambda: None
    info: dict[str, Any] = field(default_factory=dict)


class Runner:
    """Interface of a runner module's runner object."""

    name: str = "base"

    def prepare(self, case) -> Prepared:  # pragma: no cover - interface
        raise NotImplementedError


def resolve_allowed(
    field: str,
    name: str,
    *,
    noun: str = "a function",
    is_function: Callable[[Any], bool] = callable,
    missing: Callable[[str], Exception] | None = None,
    classes: bool = False,
) -> Any:
    """The function a config names in `field` ("op", "reference" or "torch_op"), or with `classes`
    the class it names (field "layer"), or ValueError saying
    why. Only names on the operator allowlist (`benchmark.sandbox.allowlist`, deny by default) resolve: the
    namespace is imported by its reviewed name and the function looked up in it, so no chain of
    attributes a config spells out is ever walked.

    `missing(what)` builds the error when the namespace's package or the name is absent from the
    installed version (default: a ValueError); e.g. RunnerUnavailable where torch is not installed.
    """
    reason = allowlist.check(field, name)
    if reason:
        raise ValueError(reason)
    namespace, leaf = allowlist.load_allowlist().split(field, name)

    def absent(what: str) -> Exception:
        return missing(what) if missing else ValueError(f"{name!r} is on the allowlist but {what}")

    try:
        owner = importlib.import_module(namespace)
    except ModuleNotFoundError:
        # A class namespace such as paddle.Tensor: import its module, then take the class.
        module_name, _, attr = namespace.rpartition(".")
        try:
            owner = getattr(importlib.import_module(module_name), attr, None)
        except ImportError as e:
            raise absent(f"{module_name} cannot be imported here ({e})") from e
        if not isinstance(owner, type):
            raise absent(f"{namespace} does not exist in the installed version") from None
    except ImportError as e:
        raise absent(f"{namespace} cannot be imported here ({e})") from e
    obj = getattr(owner, leaf, None)
    if obj is None:
        raise absent(f"the installed {namespace.split('.')[0]} has no {name!r}")
    if classes:
        if not isinstance(obj, type):
            raise ValueError(
                f"{name!r} is not {noun} in the installed version (it is a {type(obj).__name__})"
            )
        return obj
    if isinstance(obj, (type, types.ModuleType)) or not is_function(obj):
        kind = (
            "module"
            if isinstance(obj, types.ModuleType)
            else "class"
            if isinstance(obj, type)
            else type(obj).__name__
        )
        raise ValueError(f"{name!r} is not {noun} in the installed version (it is a {kind})")
    return obj
