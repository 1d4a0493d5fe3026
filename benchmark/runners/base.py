"""The boundary between the harness and a framework.

A runner turns a Case into a Prepared callable: inputs are built once, outside the timed region,
from the case's seed; `step()` runs exactly one iteration; `sync()` waits for the device. Runner
modules are the only place that imports a framework (paddle, torch), so the rest of the harness
imports and tests without one.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_SEGMENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


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


def resolve_public(
    name: str,
    root: types.ModuleType,
    label: str,
    noun: str,
    *,
    is_function: Callable[[Any], bool] = callable,
    missing: Callable[[str], Exception] | None = None,
) -> Any:
    """Resolve a dotted name under the package `root` ("paddle.nn.functional.softmax") by attribute
    access only, or raise ValueError saying why. The rule every config name obeys: each segment is
    public (no leading underscore, no dunder), each intermediate object is a module of the package
    (so `paddle.os.system` or `torch.os.system` never reach `os`), and the target is a function
    (`is_function`), not a class or a module, defined inside the package.

    `label` starts each message (e.g. "'paddle.abs'"); `missing(path)` builds the error for an
    attribute the package does not have (default: a ValueError).
    """
    package = root.__name__
    parts = name.split(".")
    if parts[0] != package or len(parts) < 2:
        raise ValueError(f"{label} is not under '{package}.'")
    for seg in parts[1:]:
        if not _SEGMENT.match(seg):
            raise ValueError(f"{label}: segment {seg!r} is private or not a plain name")

    def inside(module_name: str) -> bool:
        return module_name == package or module_name.startswith(package + ".")

    obj: Any = root
    for i, seg in enumerate(parts[1:], start=1):
        if not (isinstance(obj, types.ModuleType) and inside(obj.__name__)):
            raise ValueError(f"{label}: {'.'.join(parts[:i])} is not a {package} module")
        if not hasattr(obj, seg):
            path = ".".join(parts[: i + 1])
            raise (missing(path) if missing else ValueError(f"{label}: {package} has no attribute {path!r}"))
        obj = getattr(obj, seg)
    if isinstance(obj, (type, types.ModuleType)) or not is_function(obj):
        kind = (
            "module"
            if isinstance(obj, types.ModuleType)
            else "class"
            if isinstance(obj, type)
            else type(obj).__name__
        )
        raise ValueError(f"{label} is not {noun} (it is a {kind})")
    module = getattr(obj, "__module__", None) or ""
    if not inside(module):
        raise ValueError(f"{label} is defined outside {package} (in {module or 'an unknown module'})")
    return obj
