"""Registered model builders (`registry`, one module per model family) and their runner (`running`).

A model case names one registered builder; nothing else can be built. Importing this package
imports no framework: the registry, the argument schemas and the memory estimates are plain
Python, and each builder imports paddle only when it is called.
"""

from __future__ import annotations

from benchmark.runners.models.registry import REGISTRY, ModelEntry, check_args, model_names, resolve
from benchmark.runners.models.running import LOSS_STEPS, build, prepare

# name -> default arguments (the small size), for callers that list the models
MODELS = {name: entry.defaults() for name, entry in REGISTRY.items()}

__all__ = [
    "LOSS_STEPS",
    "MODELS",
    "REGISTRY",
    "ModelEntry",
    "build",
    "check_args",
    "model_names",
    "prepare",
    "resolve",
]
