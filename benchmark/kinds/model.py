"""The `model` kind: a registered model builder (`benchmark/runners/models/`) trained or run for
inference one step at a time, optionally data parallel (`devices`)."""

from __future__ import annotations

from typing import Any

from benchmark.kinds.base import Kind, Problem, Sizes


def _names(spec: Any, checks: Any) -> tuple[tuple[Any, ...], str] | None:
    if checks.models is None or spec.model in set(checks.models):
        return None
    known = ", ".join(sorted(checks.models))
    return ("model",), f"unknown model {spec.model!r}: expected one of the registered builders ({known})"


def _case(cfg: dict[str, Any], checks: Any, sizes: Sizes) -> list[Problem]:
    """The builder takes the args, and its estimate (the registry entry's, for every rank) fits."""
    if not checks.model_check:
        return []
    reason, need = checks.model_check(cfg["model"], cfg.get("args") or {}, cfg.get("batch_size"))
    need *= cfg.get("devices") or 1  # data parallel: one replica per rank
    if reason:
        return [("args", reason)]
    if need > sizes.max_bytes:
        return [
            (
                "args",
                f"the model needs about {need / 1024**3:.1f} GiB (weights, gradients, optimizer state, "
                f"activations), more than the {sizes.max_bytes / 1024**3:.1f} GiB allowed (refused before "
                "allocating; raise it with --max-bytes / --bench-max-bytes)",
            )
        ]
    return []


KIND = Kind(
    name="model",
    description="benchmark cases of kind 'model' (a registered model builder's step)",
    required=("model",),
    forbidden=("op", "inputs", "feed", "ops", "fetch", "reference", "layer"),
    runner="benchmark.runners.models",
    variant="step",
    steps=("train", "infer"),
    check_names=_names,
    check_case=_case,
    # A model's step takes seconds under valgrind and settles in a few; one to two minutes of CPU an
    # iteration under callgrind: the probe is its one sample (benchmark/instructions/callgrind.py).
    warmup_iterations=2,
    heavy_chunks=0,
    heavy_probe=True,
    counted_first=True,
)
