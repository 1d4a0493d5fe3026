"""The boundary between the harness and a framework.

A runner turns a Case into a Prepared callable: inputs are built once, outside the timed region,
from the case's seed; `step()` runs exactly one iteration; `sync()` waits for the device. Runner
modules are the only place that imports a framework (paddle, torch), so the rest of the harness
imports and tests without one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


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
