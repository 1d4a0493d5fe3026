"""A paddle that is installed but fails to import (e.g. no setuptools in a bare `uv venv`) is said
to have failed to import, with the reason, not to be absent."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from compare_venvs import make_venv, pth_hook

ROOT = Path(__file__).resolve().parents[1]

NO_SETUPTOOLS = pth_hook(
    "def _patch(paddle):\n"
    "    raise ModuleNotFoundError(\"No module named 'setuptools'\", name='setuptools')\n"
)


def _unavailable(python: Path) -> str:
    code = (
        "from benchmark.runners.base import RunnerUnavailable\n"
        "from benchmark.runners.paddle_common import paddle\n"
        "try:\n    paddle()\nexcept RunnerUnavailable as e:\n    print(e)\nelse:\n    print('imported')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout


def test_a_failing_import_names_the_reason(tmp_path):
    out = _unavailable(make_venv(tmp_path / "venv", hook=NO_SETUPTOOLS))
    assert "paddle is installed but failed to import" in out
    assert "ModuleNotFoundError: No module named 'setuptools'" in out
    assert "not installed" not in out


def test_an_absent_paddle_is_not_installed():
    from benchmark.runners.paddle_common import import_failure

    absent = import_failure(ModuleNotFoundError("No module named 'paddle'", name="paddle"))
    assert absent.startswith("paddle is not installed")
    broken = import_failure(ModuleNotFoundError("No module named 'paddle.base'", name="paddle.base"))
    assert broken.startswith("paddle is installed but failed to import")
