"""The `layer` kind: a `paddle.nn` layer class built once from `args`, its forward called on inputs."""

from __future__ import annotations

from typing import Any

from benchmark.kinds.base import Kind, Problem, Sizes, op_arguments
from benchmark.sandbox import nn_layers as layers


def _case(cfg: dict[str, Any], checks: Any, sizes: Sizes) -> list[Problem]:
    """The constructor's arguments are plain (`benchmark.sandbox.nn_layers.check_args`, no framework imported),
    its parameters (and their gradients, backward) fit `max_bytes` with its inputs, and, where the
    framework is here, the class takes these arguments and its forward these inputs."""
    args = cfg.get("args") or {}
    reason, count = layers.check_args(cfg["layer"], args)
    if reason:
        return [("args", reason)]
    inputs = cfg.get("inputs") or {}
    wide = any(d in ("float64", "complex128") for d in sizes.tensor_dtypes(inputs))
    per_param = (8 if wide else 4) * (2 if cfg.get("backward") else 1)
    need = count * per_param + sizes.tensor_bytes(inputs) * (3 if cfg.get("backward") else 1)
    if need > sizes.max_bytes:
        return [
            (
                "args",
                f"the layer's parameters and inputs need about {need / 1024**3:.1f} GiB, more than the "
                f"{sizes.max_bytes / 1024**3:.1f} GiB allowed (refused before anything is built; raise it with "
                "--max-bytes / --bench-max-bytes)",
            )
        ]
    if checks.layer_binder:
        problem = checks.layer_binder(cfg["layer"], args, op_arguments(cfg), cfg.get("attrs") or {})
        if problem:
            return [problem]
    return []


KIND = Kind(
    name="layer",
    description="benchmark cases of kind 'layer' (a paddle.nn layer's forward)",
    required=("layer", "inputs"),
    forbidden=("op", "feed", "ops", "fetch", "model", "step", "reference", "torch_op", "devices"),
    runner="benchmark.runners.paddle_ops",
    call="layer",
    check_case=_case,
    # Counting: a layer's step is one forward (and backward) of a few operators, as close to an op
    # case as to anything: the op's 50 warm-up iterations and 2 heavy chunks (what layer cases got,
    # unsaid, before each kind said its own).
    warmup_iterations=50,
    heavy_chunks=2,
)
