"""The builds of a bisection over released versions (`benchmark bisect --package NAME --good V1 --bad
V2`): the versions in between, read from the package index, and one Python environment per version,
made once and kept in a cache.

* :func:`index_versions`: the released versions from `good` to `bad` (inclusive) that have a wheel
  this interpreter can install and are not yanked, oldest first, from the index's JSON simple API
  (PEP 691). Pre-releases only when an end is one.
* :class:`EnvCache`: `python_for(version)` is the interpreter of a virtual environment holding
  `NAME==version`, setuptools (paddle imports it at start-up; a uv environment has none) and what the
  harness's worker imports (numpy, scipy, pyyaml, pydantic, psutil), under
  ``~/.cache/paddle-benchmark/envs/`` keyed by package, version, index and Python. Made with uv
  where it is installed (it fills an environment from its own cache in seconds), else with venv and
  pip. A version whose environment cannot be made raises :class:`BuildError` with one line; a
  half-made environment is removed, so the next attempt starts clean.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from packaging.tags import sys_tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

DEFAULT_INDEX = "https://pypi.org/simple"
READY = ".benchmark-env-ready"  # written last: an environment without it is half made
# Beside the package: what the harness's worker imports in a build's interpreter (see
# benchmark.compare.sides.VENV_NEEDS), and setuptools, which paddle imports at start-up.
WORKER_NEEDS = ("setuptools", "numpy", "scipy", "pyyaml", "pydantic", "psutil")
INSTALL_TIMEOUT_S = 1800


class BuildError(Exception):
    """A build that cannot be made; its message is one line."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "paddle-benchmark" / "envs"


def index_versions(package: str, good: str, bad: str, index_url: str = DEFAULT_INDEX) -> list[str]:
    """The versions of `package` from `good` to `bad` (inclusive), oldest first, that have a wheel
    for this interpreter and are not yanked. Raises BuildError when the index cannot be read or an
    end is not among them."""
    try:
        low, high = Version(good), Version(bad)
    except InvalidVersion as e:
        raise BuildError(f"--good/--bad: {e}") from None
    if low >= high:
        raise BuildError(f"--good {good} must be older than --bad {bad}")
    url = f"{index_url.rstrip('/')}/{canonicalize_name(package)}/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 (the user's index URL)
            doc = json.loads(response.read())
    except (OSError, ValueError) as e:
        raise BuildError(f"cannot read the versions of {package} from {url}: {e}") from None
    wanted = {str(t) for t in sys_tags()}
    pre = low.is_prerelease or high.is_prerelease
    found: set[Version] = set()
    for f in doc.get("files", []):
        name = str(f.get("filename", ""))
        if not name.endswith(".whl") or f.get("yanked"):
            continue
        try:
            _, version, _, tags = parse_wheel_filename(name)
        except ValueError:
            continue
        if low <= version <= high and (pre or not version.is_prerelease) and {str(t) for t in tags} & wanted:
            found.add(version)
    versions = [str(v) for v in sorted(found)]
    for end in (good, bad):
        if str(Version(end)) not in versions:
            raise BuildError(f"{package} {end}: no wheel for this Python and platform on {index_url}")
    return versions


class EnvCache:
    """One environment per version of `package`, made on first use and kept (see the module)."""

    def __init__(
        self,
        package: str,
        *,
        index_url: str = DEFAULT_INDEX,
        root: Path | None = None,
        say: Callable[[str], None] = lambda line: None,
        needs: tuple[str, ...] = WORKER_NEEDS,
        installer: str = "auto",
    ) -> None:
        """`installer`: "uv", "pip", or "auto" (uv where it is on PATH, else pip)."""
        self.package, self.index_url, self.say, self.needs = package, index_url, say, needs
        self.root = root or cache_root()
        self.uv = shutil.which("uv") if installer in ("auto", "uv") else None
        if installer == "uv" and self.uv is None:
            raise BuildError("uv is not on PATH (pip install uv, or use pip)")
        self.seconds: dict[str, float] = {}  # version -> seconds it took to make (0: cached)

    def path(self, version: str) -> Path:
        index = hashlib.sha256(self.index_url.encode()).hexdigest()[:8]
        py = f"py{sys.version_info.major}{sys.version_info.minor}"
        return self.root / f"{canonicalize_name(self.package)}-{version}-{py}-{index}"

    def python_for(self, version: str) -> str:
        """The interpreter of the environment of `version`, made now if it is not in the cache."""
        env = self.path(version)
        python = env / "bin" / "python"
        if (env / READY).exists() and python.exists():
            self.seconds[version] = 0.0
            return str(python)
        shutil.rmtree(env, ignore_errors=True)  # half made by an earlier attempt
        env.parent.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        self.say(f"bisect: making the environment of {self.package} {version} ({'uv' if self.uv else 'pip'})")
        try:
            self._make(env, version)
        except BuildError:
            shutil.rmtree(env, ignore_errors=True)
            raise
        (env / READY).write_text(
            json.dumps({"package": self.package, "version": version, "index": self.index_url})
        )
        self.seconds[version] = time.monotonic() - start
        return str(python)

    def _make(self, env: Path, version: str) -> None:
        requirement = f"{self.package}=={version}"
        # The package's own index is searched beside PyPI (Paddle's index holds paddle, not numpy).
        index = [] if self.index_url == DEFAULT_INDEX else ["--extra-index-url", self.index_url]
        if self.uv:
            steps = [
                [self.uv, "venv", "--quiet", "--python", sys.executable, str(env)],
                [self.uv, "pip", "install", "--quiet", "--python", str(env / "bin" / "python"), *index,
                 requirement, *self.needs],
            ]  # fmt: skip
        else:
            steps = [
                [sys.executable, "-m", "venv", str(env)],
                [
                    str(env / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    *index,
                    requirement,
                    *self.needs,
                ],
            ]
        for cmd in steps:
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise BuildError(f"{requirement}: {Path(cmd[0]).name} failed: {e}") from None
            if proc.returncode != 0:
                last = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()[
                    -1
                ]
                raise BuildError(f"{requirement}: cannot be installed ({last.strip()})")
