"""Framework adapters. The only package that imports paddle (or torch), and only lazily.

`prepare(case)` dispatches on the case's kind to its runner module (`benchmark.kinds`) that returns a `Prepared`
callable; `place_available`, `framework_info`, `op_resolver` and `model_names` are what the rest of
the harness needs to know about the framework without importing it.
"""

from __future__ import annotations

import importlib

from benchmark import kinds
from benchmark.datamodel.case import Case
from benchmark.runners.base import Prepared, RunnerUnavailable

__all__ = [
    "Prepared",
    "RunnerUnavailable",
    "framework_available",
    "framework_info",
    "model_check",
    "model_names",
    "config_checks",
    "op_resolver",
    "place_available",
    "prepare",
]


def framework_available(framework: str = "paddle") -> tuple[bool, str]:
    try:
        if framework == "torch":
            importlib.import_module("benchmark.runners.torch_runner").import_torch()
        else:
            importlib.import_module("benchmark.runners.paddle_common").paddle()
    except RunnerUnavailable as e:
        return False, str(e)
    return True, ""


def prepare(case: Case) -> Prepared:
    """A prepared step for `case`; op cases whose config says `framework: torch` go to torch."""
    if case.spec.framework == "torch":
        module = importlib.import_module("benchmark.runners.torch_runner")
    else:
        module = importlib.import_module(kinds.get(case.kind).runner)
    return module.prepare(case)


def place_available(place: str, framework: str = "paddle") -> tuple[bool, str]:
    if framework == "torch":
        from benchmark.runners import torch_runner

        try:
            torch_runner.torch_device(torch_runner.import_torch(), place)
        except RunnerUnavailable as e:
            return False, str(e)
        return True, ""
    from benchmark.runners import paddle_common

    return paddle_common.place_available(place)


def framework_info(framework: str = "paddle") -> dict:
    if framework == "torch":
        torch = importlib.import_module("benchmark.runners.torch_runner").import_torch()
        return {
            "framework": "torch",
            "torch_version": torch.__version__,
            "cuda_version": torch.version.cuda,
            "cudnn_version": torch.backends.cudnn.version(),
        }
    from benchmark.runners import paddle_common

    return paddle_common.framework_info()


def op_resolver():
    """The resolver hook for config validation, or None when paddle is not importable here."""
    ok, _ = framework_available()
    if not ok:
        return None
    from benchmark.runners.paddle_ops import resolver

    return resolver


def config_checks(resolve: bool = True):
    """What config validation asks the framework side (`benchmark.config.expand.Checks`): op resolution
    and signature binding when paddle is importable here (and `resolve`), the registered model
    builders and their argument checks always (they need no framework)."""
    from benchmark.config.expand import Checks
    from benchmark.runners.models.registry import check_args

    resolver = op_resolver() if resolve else None
    binder = layer_binder = None
    if resolver is not None:
        from benchmark.runners.paddle_ops import binder, layer_binder
    return Checks(
        resolver=resolver,
        binder=binder,
        layer_binder=layer_binder,
        models=model_names(),
        model_check=check_args,
    )


def check_accuracy(case: Case, prepared) -> dict | None:
    """Outputs (and gradients) of an op case against its `reference`; None without a reference."""
    from benchmark.runners.reference import check_accuracy as _check

    return _check(case, prepared)


def profile_pass(case: Case, prepared, trace_path=None, steps: int = 5) -> dict:
    """The profiler pass (op table, copy counts) after timing; program cases in static mode also
    get the framework-overhead decomposition (net of an empty program, feed and fetch costs)."""
    if case.spec.framework == "torch":
        return {"skipped": "the profile pass profiles paddle; this case runs on torch"}
    from benchmark.runners.paddle_profile import profile_record

    record = profile_record(prepared, case.place, steps=steps, trace_path=trace_path)
    if case.kind == "program" and case.mode == "static":
        from benchmark.runners.paddle_overhead import decompose

        prepared.close()  # decompose builds its own programs
        record["overhead"] = decompose(case)
    return record


def model_check(name: str, args: dict, batch_size=None) -> tuple[str | None, int]:
    """(reason or None, estimated bytes) of a model case's builder and arguments, without paddle."""
    from benchmark.runners.models.registry import check_args

    return check_args(name, args, batch_size)


def model_names() -> list[str]:
    """The registered model builders (benchmark/runners/models/registry.py; no framework import)."""
    from benchmark.runners.models.registry import model_names as names

    return names()
