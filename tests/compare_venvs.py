"""Helpers of the `benchmark compare` and `benchmark bisect` tests: venvs that see this
interpreter's packages, and .pth modules that patch paddle once it is imported (a change a config
does not show)."""

from __future__ import annotations

import select
import subprocess
import sys
import time
from pathlib import Path

# A .pth-loaded module that patches paddle right after it is imported (paddle is not on sys.path
# yet when .pth files run): `_patch` comes from the case, the import hook is the same for all.
HOOK_IMPORT = """class _Hook(importlib.abc.MetaPathFinder):  # paddle is not on sys.path yet when .pth files run
    def find_spec(self, name, path, target=None):
        if name != "paddle":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("paddle")
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            _patch(module)
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, _Hook())
"""


def pth_hook(patch: str) -> str:
    """The source of a module whose `_patch(paddle)` (in `patch`) runs once paddle is imported."""
    return "import importlib.abc, importlib.util, sys, time\n" + patch + HOOK_IMPORT


# One extra small op (a sign of a 16x16 tensor) per paddle.abs call: work that no config shows, for
# the compare and bisect tests that must find it.
EXTRA_OP_HOOK = pth_hook(
    """def _patch(paddle):
    original = paddle.abs
    small = []

    def abs(*args, **kwargs):
        out = original(*args, **kwargs)
        if not small:
            small.append(paddle.ones([16, 16]))
        paddle.sign(small[0])
        return out

    paddle.abs = abs
"""
)


# The one case of the bisect tests: abs on 100x100 float32, forward, dynamic mode, on CPU.
BISECT_CONFIG = """cases:
  - name: bis_abs
    kind: op
    op: paddle.abs
    inputs:
      x: {shape: [100, 100]}
    places: [cpu]
    modes: [dynamic]
"""


def slowdown_hook(fraction: float) -> str:
    """A .pth module that makes each `paddle.abs` call `fraction` slower than its own duration: it
    spins for that fraction of the call's time after the call returns (a slowdown of paddle itself,
    whatever the machine's speed)."""
    return pth_hook(
        f"""def _patch(paddle):
    original = paddle.abs

    def abs(*args, **kwargs):
        start = time.perf_counter()
        out = original(*args, **kwargs)
        until = start + (time.perf_counter() - start) * (1 + {fraction!r})
        while time.perf_counter() < until:
            pass
        return out

    paddle.abs = abs
"""
    )


def far_slower_hook(factor: float, extra_s: float) -> str:
    """A .pth module that makes each `paddle.abs` call `factor` times as long plus `extra_s`
    seconds (a busy wait): a slowdown far beyond any machine's noise."""
    return pth_hook(
        f"""def _patch(paddle):
    original = paddle.abs
    def abs(*args, **kwargs):
        t0 = time.perf_counter()
        out = original(*args, **kwargs)
        until = t0 + (time.perf_counter() - t0) * {factor!r} + {extra_s!r}
        while time.perf_counter() < until:
            pass
        return out
    paddle.abs = abs
"""
    )


def make_venv(path: Path, *, hook: str | None = None) -> Path:
    """A venv that sees exactly this interpreter's packages (paddle included, whether this
    interpreter is itself a venv or not: its site directories are added by a .pth file, not taken
    from the base installation); `hook`: the source of a module (see `pth_hook`) that a .pth file
    imports at start, which no config shows."""
    import site

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    purelib = ask(python, "import sysconfig; print(sysconfig.get_path('purelib'))")
    dirs = [d for d in site.getsitepackages() if Path(d).is_dir()]
    Path(purelib, "_share_test_interpreter.pth").write_text(
        "".join(f"import site; site.addsitedir({d!r})\n" for d in dirs)
    )
    if hook:
        Path(purelib, "paddle_patch_hook.py").write_text(hook)
        Path(purelib, "paddle_patch_hook.pth").write_text("import paddle_patch_hook\n")
    import importlib.util

    ours = importlib.util.find_spec("paddle").origin
    theirs = ask(python, "import importlib.util; print(importlib.util.find_spec('paddle').origin)")
    assert theirs == ours, f"the test venv sees another paddle ({theirs}) than this interpreter ({ours})"
    return python


def ask(python: Path, code: str) -> str:
    """What `code` prints when `python` runs it."""
    return subprocess.run(
        [str(python), "-c", code], check=True, capture_output=True, text=True
    ).stdout.strip()


def builds(directory: Path, hooked: list[bool], hook: str = EXTRA_OP_HOOK) -> list[str]:
    """A range of venvs (oldest first) under `directory`; build i imports `hook` where hooked[i]."""
    return [str(make_venv(directory / f"b{i}", hook=hook if h else None)) for i, h in enumerate(hooked)]


def compare(
    *args: str, cwd: Path, timeout: float = 300, env: dict | None = None
) -> subprocess.CompletedProcess:
    """`benchmark compare ARGS` run by this interpreter in `cwd`, its output captured."""
    return cli("compare", *args, cwd=cwd, timeout=timeout, env=env)


def bisect(
    *args: str, cwd: Path, timeout: float = 900, env: dict | None = None
) -> subprocess.CompletedProcess:
    """`benchmark bisect ARGS` run by this interpreter in `cwd`, its output captured."""
    return cli("bisect", *args, cwd=cwd, timeout=timeout, env=env)


def wait_for(proc: subprocess.Popen, text: str, *, times: int = 1, timeout_s: float) -> str:
    """stderr of `proc` up to its `times`-th line containing `text` (fails after `timeout_s`, or
    when the process ends first)."""
    seen, deadline = "", time.monotonic() + timeout_s
    assert proc.stderr is not None
    while seen.count(text) < times:
        left = deadline - time.monotonic()
        assert left > 0, f"no {text!r} x{times} within {timeout_s:.0f} s; stderr so far:\n{seen}"
        ready, _, _ = select.select([proc.stderr], [], [], min(left, 1.0))
        if ready:
            line = proc.stderr.readline()
            assert line, f"the process exited ({proc.poll()}) before {text!r}; stderr:\n{seen}"
            seen += line
    return seen


def cli(command: str, *args: str, cwd: Path, timeout: float, env: dict | None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmark.cli", command, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )
