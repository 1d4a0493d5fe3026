"""What `benchmark validate` and `benchmark list` share: the config options and loading the cases."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmark import paths as project_paths
from benchmark.commands._common import positive_int
from benchmark.sandbox.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_CASES


def default_config_dir() -> Path:
    """The shipped configs/ beside the package, else ./configs."""
    return project_paths.CONFIGS_DIR if project_paths.CONFIGS_DIR.is_dir() else Path("configs")


def lazy_checks(resolve: bool):
    """`runners.config_checks`, built on the first question a config asks: a file refused by a cap
    (size, list length, case count) costs no framework import (paddle's is about 3 s and 300 MB).
    Returns (checks, the resolver once built or None)."""
    from benchmark import runners
    from benchmark.config.expand import Checks

    built: list = []

    def real():
        if not built:
            built.append(runners.config_checks(resolve=resolve))
        return built[0]

    def resolver(op: str) -> str | None:
        r = real().resolver
        return r(op) if r else None

    def binder(op: str, inputs, attrs) -> str | None:
        b = real().binder
        return b(op, inputs, attrs) if b else None

    def layer_binder(layer: str, args, inputs, attrs) -> tuple[str, str] | None:
        b = real().layer_binder
        return b(layer, args, inputs, attrs) if b else None

    checks = Checks(
        resolver=resolver,
        binder=binder,
        layer_binder=layer_binder,
        models=runners.model_names(),
        # a model's arguments and estimate need no framework: asked without building `real()`
        model_check=runners.model_check,
    )
    return checks, lambda: real().resolver


def load_cases(args, case_paths: list[str] | None = None):
    from benchmark.config import load_paths

    checks, resolver = lazy_checks(resolve=not args.no_resolve)
    paths = case_paths if case_paths is not None else args.paths or [str(default_config_dir())]
    if not paths:
        return ([], []), resolver
    return load_paths(paths, checks=checks, max_bytes=args.max_bytes, max_cases=args.max_cases), resolver


def add_config_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="config files or directories (default: configs/)")
    p.add_argument(
        "--no-resolve",
        action="store_true",
        help="check names against the allowlist only, without importing paddle to resolve them and "
        "bind their attrs",
    )
    p.add_argument(
        "--max-bytes",
        type=positive_int,
        default=DEFAULT_MAX_BYTES,
        help="largest footprint allowed per case: inputs (and gradients), or a model's estimate "
        f"(default {DEFAULT_MAX_BYTES})",
    )
    p.add_argument(
        "--max-cases",
        type=positive_int,
        default=DEFAULT_MAX_CASES,
        help=f"most cases one config entry may expand to (default {DEFAULT_MAX_CASES})",
    )
