"""The two sides of a comparison: each an interpreter with its own paddle, checked once before the
job (it must exist, import paddle and the harness's worker)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

CHECK_TIMEOUT_S = 300.0
VENV_NEEDS = "paddlepaddle, numpy, scipy, pyyaml and pydantic (Python >= 3.10)"

# Run in each side's interpreter: can it import paddle and the harness's worker? One JSON line.
_CHECK = r"""
import json, sys
out = {"python_version": sys.version.split()[0], "executable": sys.executable}
try:
    import paddle
except Exception as e:
    out["error"] = "cannot import paddle (%s: %s)" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
else:
    try:
        import benchmark.runners.worker, benchmark.config, benchmark.execution.measure
        from benchmark import runners
        out["framework"] = runners.framework_info("paddle")
    except Exception as e:
        out["error"] = "cannot import the harness's worker (%s: %s)" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
print("BENCHMARK-CHECK " + json.dumps(out, default=str))
"""


class CompareError(ValueError):
    """The comparison cannot run (a side's interpreter is missing or lacks paddle, bad input); a
    ValueError, so that the commands' error guard reports it as one line with exit status 2."""


@dataclasses.dataclass
class Side:
    """One environment: its label (A or B), interpreter and what it reported about itself."""

    label: str
    python: str
    env: dict[str, str]
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def paddle_version(self) -> str:
        return str((self.info.get("framework") or {}).get("paddle_version") or "?")

    def describe(self) -> str:
        commit = (self.info.get("framework") or {}).get("paddle_commit")
        commit = f" ({str(commit)[:10]})" if commit else ""
        return (
            f"side {self.label}: {self.python} (Python {self.info.get('python_version', '?')}, "
            f"paddle {self.paddle_version}{commit})"
        )


def worker_env(root: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The workers' environment: `base` (default: this process's, with thread counts and allocator
    settings already exported) with the project root first on PYTHONPATH, so `benchmark` comes
    from this checkout and paddle from the side's environment."""
    env = dict(os.environ if base is None else base)
    parts = [str(root), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    return env


def check_side(label: str, python: str, root: Path, env: dict[str, str] | None = None) -> Side:
    """Run `python` once: it must exist, import paddle and the harness's worker; raises
    CompareError with one line saying what is wrong."""
    env = worker_env(root, env)
    where = f"side {label} ({python})"
    path = Path(python)
    if os.sep in python and not path.exists():
        raise CompareError(f"{where}: no such interpreter")
    if path.is_dir():
        raise CompareError(f"{where}: is a directory, expected an interpreter such as VENV/bin/python")
    try:
        proc = subprocess.run(
            [python, "-c", _CHECK],
            env=env,
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise CompareError(f"{where}: no such interpreter") from None
    except PermissionError:
        raise CompareError(f"{where}: not executable") from None
    except OSError as e:
        raise CompareError(f"{where}: cannot run it ({e.strerror or e})") from None
    except subprocess.TimeoutExpired:
        raise CompareError(f"{where}: did not answer within {CHECK_TIMEOUT_S:.0f} s") from None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("BENCHMARK-CHECK ")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise CompareError(
            f"{where}: not a working Python interpreter (exit status {proc.returncode}: {tail})"
        )
    info = json.loads(lines[-1].removeprefix("BENCHMARK-CHECK "))
    if info.get("error"):
        raise CompareError(f"{where}: {info['error']}; the environment needs {VENV_NEEDS}")
    return Side(label=label, python=python, env=env, info=info)


def check_sides(
    pythons: dict[str, str], root: Path, say: Callable[[str], None] = lambda line: None
) -> dict[str, Side]:
    """`check_side` of both sides at once (each check imports paddle); the first side's problem
    is raised when both have one."""

    with ThreadPoolExecutor(max_workers=len(pythons)) as pool:
        futures = {label: pool.submit(check_side, label, python, root) for label, python in pythons.items()}
        sides = {label: f.result() for label, f in futures.items()}
    for side in sides.values():
        say(f"compare: {side.describe()}")
    return sides
