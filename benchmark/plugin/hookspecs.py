"""Hooks the suite calls so that other pytest plugins can add to what a run records (registered
with `pytest_addhooks`, as pytest-benchmark's `pytest_benchmark_update_machine_info` and friends).

Implement them in a conftest.py, a `-p` module or an installed plugin:

    def pytest_bench_update_run_metadata(config, metadata):
        metadata["kernel_branch"] = "my-experiment"
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_bench_update_run_metadata(config: pytest.Config, metadata: dict[str, Any]) -> None:
    """Add fields to the run's metadata, once per suite run, at the start of the session (before
    collection). `metadata` starts empty; every implementation adds to it in place. It is stored
    with the run (history: the run's `extra["metadata"]`) and in the JSON summary (`run.metadata`).
    Values must be JSON (str, numbers, bool, None, lists, dicts): anything else stops the session
    with one line."""
