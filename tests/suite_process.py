"""The suite run as a user runs it: `python -m pytest benchmark/` in a fresh process, from the
project's root, for the tests that need a real run (its history, its summary, its exit status)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def run_suite(
    *args: str, user_env: bool = False, check: bool = True, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`pytest benchmark/ -q ARGS` in a fresh process; with `check`, its exit status must be 0 (the
    failure shows the ends of its output). `user_env`: without this test session's
    $PYTEST_ADDOPTS, so every installed plugin loads, as on a user's machine or in a workflow.
    `env_extra`: variables set for the run (e.g. COLUMNS)."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "benchmark/",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        *args,
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS" or not user_env} | (env_extra or {})
    proc = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc
