"""The registry of model builders: what a model case may name, its arguments and its memory estimate.

A model case's `model:` is the name of one `ModelEntry`; nothing else can be built. Each entry
holds:

- `name`: what a config names (`model: resnet50`);
- `args`: a pydantic model of the builder's arguments, with the small CPU size as defaults. It is
  strict (integers are integers, a string is one of a few listed words such as an AMP level) and
  refuses unknown keys, so an argument can never carry a path, a function or a module;
- `estimate(args)`: (parameters, saved activation floats) of a training step, from the arguments
  alone: `--bench-max-bytes` compares it before anything is allocated;
- `build(args)`: the builder, which imports paddle only when called.

Importing this module (and every family module it lists) imports neither paddle nor torch, so
`benchmark validate` checks a model case before any framework import. One module per model family
declares its entries in `ENTRIES`; adding a model is one entry in a family module (or
a new module of this package that declares `ENTRIES`) plus its YAML under `configs/models/` (CONTRIBUTING.md).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError


def _families() -> list[str]:
    """The family modules: every module of this package whose source assigns ``ENTRIES`` at its top
    level (reviewed code), by name. Read as text, so the package's other modules are not imported."""
    here = Path(__file__).parent
    return [
        m.name
        for m in sorted(pkgutil.iter_modules([str(here)]), key=lambda m: m.name)
        if re.search(r"^ENTRIES\b", (here / f"{m.name}.py").read_text(encoding="utf-8"), re.MULTILINE)
    ]


Count = Annotated[int, Field(ge=1, le=2**31)]
AmpLevel = Literal["O0", "O1", "O2"]


class ModelArgs(BaseModel):
    """Arguments every builder takes: the batch and the AMP level (O1/O2 run on a GPU only: the
    runner skips them on CPU with that reason). Subclasses add their sizes, defaults being the small
    CPU size."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    batch_size: Count = 4
    amp: AmpLevel = "O0"


@dataclass
class Built:
    """What a builder returns: the network (a `paddle.nn.Layer`); `make_batch(rng)` -> (inputs,
    labels), tuples of numpy arrays (the network is called on the inputs, `loss(out, *labels)`
    gives a scalar); `items` per step (samples, or tokens where a batch is tokens) and their unit."""

    net: Any
    make_batch: Callable[[np.random.Generator], tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]]
    loss: Callable[..., Any]
    items: int
    unit: str = "samples"


@dataclass(frozen=True)
class ModelEntry:
    name: str
    family: str
    args: type[ModelArgs]
    estimate: Callable[[Any], tuple[int, int]]
    build: Callable[[Any], Built]
    description: str = ""
    # activations and layers the network uses (e.g. relu, conv2d): documentation, and what
    # eval/model_perturbation.py expects a perturbation of one of them to change
    uses: frozenset[str] = field(default_factory=frozenset)

    def defaults(self) -> dict[str, Any]:
        return self.args().model_dump()


def _load() -> dict[str, ModelEntry]:
    entries: dict[str, ModelEntry] = {}
    for family in _families():
        module = importlib.import_module(f"benchmark.runners.models.{family}")
        for entry in module.ENTRIES:
            if entry.name in entries:
                raise RuntimeError(f"model {entry.name!r} is registered twice ({family})")
            entries[entry.name] = entry
    return entries


REGISTRY: dict[str, ModelEntry] = _load()


def model_names() -> list[str]:
    return sorted(REGISTRY)


def _unknown(name: str) -> str:
    return f"unknown model {name!r}: expected one of the registered builders ({', '.join(model_names())})"


def _issue(name: str, e: ValidationError, entry: ModelEntry) -> str:
    parts = []
    for err in e.errors():
        key = ".".join(str(x) for x in err["loc"]) or "args"
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown argument {key!r} (expected some of {sorted(entry.args.model_fields)})")
        else:
            parts.append(f"{key} = {err.get('input')!r}: {err['msg']}")
    return f"model {name!r}: args: " + "; ".join(parts)


def resolve(name: str, args: dict[str, Any], batch_size: Any = None) -> tuple[ModelEntry, ModelArgs]:
    """The entry and its validated arguments, or ValueError saying what is wrong (no framework)."""
    entry = REGISTRY.get(name)
    if entry is None:
        raise ValueError(_unknown(name))
    given = dict(args)
    if batch_size is not None:
        given["batch_size"] = batch_size
    try:
        return entry, entry.args.model_validate(given)
    except ValidationError as e:
        raise ValueError(_issue(name, e, entry)) from None


def estimate_bytes(params: int, activations: int, amp: str = "O0") -> int:
    """Bytes of a training step: parameters, their gradients and two Adam moments, plus the saved
    activations, in float32 (activations in half precision with AMP). The gradients of the
    activations are freed layer by layer as the backward pass goes, so they are not counted twice."""
    act_bytes = 2 if amp != "O0" else 4
    return 4 * 4 * params + act_bytes * activations


def check_args(name: str, args: dict[str, Any], batch_size: Any = None) -> tuple[str | None, int]:
    """(reason or None, estimated bytes) for building `name` with `args`, without importing paddle:
    the hook `benchmark.config.expand.Checks.model_check` calls."""
    try:
        entry, full = resolve(name, args, batch_size)
    except ValueError as e:
        return str(e), 0
    params, activations = entry.estimate(full)
    return None, estimate_bytes(params, activations, full.amp)
