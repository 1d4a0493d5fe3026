"""The builds of a bisection, each a Python environment made once and kept in a cache: released
versions of a package (`benchmark bisect --package NAME --good V1 --bad V2`), or commits of a
repository built by the user's command (`--repo DIR --good SHA --bad SHA --build CMD`).

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
* :func:`repo_commits`, :class:`WheelCache` and :class:`CommitEnvs`: the commits from `good` to `bad`
  on the first-parent line; each built once by the command into a wheel (cached per commit); and
  an environment holding that wheel, optionally layered over a base interpreter's packages.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
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
        python = str(env / "bin" / "python")
        steps = [
            _venv_command(self.uv, sys.executable, env),
            _install_command(self.uv, python, [*index, requirement, *self.needs]),
        ]
        _run(steps, requirement)


# ---- commits of a repository, built by the user's command ----------------------------------

BUILD_TIMEOUT_S = 4 * 3600  # a Paddle wheel takes about an hour on a big machine


def repo_commits(repo: Path, good: str, bad: str) -> list[str]:
    """The commits from `good` to `bad` (inclusive) on the first-parent line, oldest first, as full
    hashes. Raises BuildError when `repo` is not a git repository or `good` is not an ancestor of
    `bad`."""

    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            last = (proc.stderr.strip() or f"exit {proc.returncode}").splitlines()[-1]
            raise BuildError(f"git {' '.join(args)} in {repo}: {last}")
        return proc.stdout.strip()

    low, high = (
        git("rev-parse", "--verify", f"{good}^{{commit}}"),
        git("rev-parse", "--verify", f"{bad}^{{commit}}"),
    )
    if subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", low, high]).returncode != 0:
        raise BuildError(f"--good {good} is not an ancestor of --bad {bad} in {repo}")
    between = git("rev-list", "--first-parent", "--reverse", f"{low}..{high}").split()
    return [low, *between]


class WheelCache:
    """One built wheel per commit of a repository: `wheels_for(commit)` runs the build command once
    per commit, in a clean worktree of that commit, with ``$COMMIT`` (the full hash) and ``$OUT`` (an
    empty directory it writes the wheel to) in its environment, and keeps the wheels under
    ``~/.cache/paddle-benchmark/wheels/`` keyed by the repository, the command and the commit. A
    failed build raises BuildError with one line (its log is kept beside the cache), and is tried
    again only by a later bisection."""

    def __init__(self, repo: Path, command: str, *, root: Path | None = None,
                 say: Callable[[str], None] = lambda line: None, timeout_s: float = BUILD_TIMEOUT_S) -> None:  # fmt: skip
        self.repo, self.command, self.say, self.timeout_s = Path(repo).resolve(), command, say, timeout_s
        key = hashlib.sha256(f"{self.repo}\0{command}".encode()).hexdigest()[:12]
        self.root = (root or cache_root().parent / "wheels") / key
        self.seconds: dict[str, float] = {}  # commit -> seconds its build took (0: cached)

    def full(self, ref: str) -> str:
        """The full hash of `ref` (a short hash, as the bisection labels commits)."""
        proc = subprocess.run(["git", "-C", str(self.repo), "rev-parse", "--verify", f"{ref}^{{commit}}"],
                              capture_output=True, text=True, check=False)  # fmt: skip
        if proc.returncode != 0:
            raise BuildError(f"{ref}: not a commit of {self.repo}")
        return proc.stdout.strip()

    def wheels_for(self, ref: str) -> list[Path]:
        commit = self.full(ref)
        done = self.root / commit
        if (done / READY).exists():
            self.seconds[commit] = 0.0
            return sorted(done.glob("*.whl"))
        self.root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile_dir(self.root, f".{commit[:12]}-"))
        tree, out, log = work / "tree", work / "out", self.root / f"{commit}.log"
        out.mkdir()
        start = time.monotonic()
        self.say(f"bisect: building {commit[:12]} ({self.command})")
        try:
            add = subprocess.run(["git", "-C", str(self.repo), "worktree", "add", "--detach", str(tree), commit],
                                 capture_output=True, text=True, check=False)  # fmt: skip
            if add.returncode != 0:
                raise BuildError(
                    f"{commit[:12]}: cannot check it out ({add.stderr.strip().splitlines()[-1:]})"
                )
            env = {**os.environ, "COMMIT": commit, "OUT": str(out)}
            with open(log, "w", encoding="utf-8") as f:
                try:
                    proc = subprocess.run(["bash", "-c", self.command], cwd=tree, env=env, stdout=f,
                                          stderr=subprocess.STDOUT, timeout=self.timeout_s, check=False)  # fmt: skip
                except subprocess.TimeoutExpired:
                    raise BuildError(
                        f"{commit[:12]}: the build ran over {self.timeout_s:.0f} s (log: {log})"
                    ) from None
            if proc.returncode != 0:
                raise BuildError(
                    f"{commit[:12]}: the build command failed with exit {proc.returncode} (log: {log})"
                )
            wheels = sorted(out.glob("*.whl"))
            if not wheels:
                raise BuildError(f"{commit[:12]}: the build command wrote no wheel to $OUT (log: {log})")
            shutil.rmtree(done, ignore_errors=True)
            out.rename(done)
            (done / READY).write_text(json.dumps({"commit": commit, "command": self.command}))
        finally:
            subprocess.run(["git", "-C", str(self.repo), "worktree", "remove", "--force", str(tree)],
                           capture_output=True, check=False)  # fmt: skip
            shutil.rmtree(work, ignore_errors=True)
        self.seconds[commit] = time.monotonic() - start
        return sorted(done.glob("*.whl"))


def tempfile_dir(parent: Path, prefix: str) -> str:
    return tempfile.mkdtemp(prefix=prefix, dir=parent)


class CommitEnvs:
    """One environment per commit, holding the commit's wheels (`WheelCache`): with `base` (an
    interpreter), a venv layered over that interpreter's packages (its site directories added by a
    .pth file, the wheels installed without their dependencies, so a commit's wheel shadows the
    base's copy of the package); without it, the wheels with their dependencies and what the
    harness's worker imports, from the index. Kept under ``~/.cache/paddle-benchmark/envs/``."""

    def __init__(self, wheels: WheelCache, *, base: str | None = None, root: Path | None = None,
                 say: Callable[[str], None] = lambda line: None, installer: str = "auto") -> None:  # fmt: skip
        self.wheels, self.base, self.say = wheels, base, say
        self.root = root or cache_root()
        self.uv = shutil.which("uv") if installer in ("auto", "uv") else None
        self.seconds: dict[str, float] = {}

    def path(self, commit: str) -> Path:
        py = f"py{sys.version_info.major}{sys.version_info.minor}"
        base = "-base-" + hashlib.sha256(str(self.base).encode()).hexdigest()[:8] if self.base else ""
        return self.root / f"commit-{self.wheels.root.name}-{commit[:16]}-{py}{base}"

    def python_for(self, ref: str) -> str:
        commit = self.wheels.full(ref)
        env = self.path(commit)
        python = env / "bin" / "python"
        if (env / READY).exists() and python.exists():
            self.seconds[commit] = 0.0
            return str(python)
        wheels = self.wheels.wheels_for(commit)  # BuildError: the build is skipped
        shutil.rmtree(env, ignore_errors=True)
        env.parent.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        try:
            self._make(env, [str(w) for w in wheels], commit)
        except BuildError:
            shutil.rmtree(env, ignore_errors=True)
            raise
        (env / READY).write_text(json.dumps({"commit": commit, "wheels": [w.name for w in wheels]}))
        self.seconds[commit] = time.monotonic() - start
        return str(python)

    def _make(self, env: Path, wheels: list[str], commit: str) -> None:
        base = self.base or sys.executable
        python = str(env / "bin" / "python")
        _run([_venv_command(self.uv, base, env)], f"{commit[:12]}'s environment")
        if self.base:
            code = "import site, sys; print('\\n'.join(d for d in site.getsitepackages() if d))"
            dirs = subprocess.run(
                [self.base, "-c", code], capture_output=True, text=True, check=False
            ).stdout.split()
            purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                     capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
            Path(purelib, "_bisect_base.pth").write_text(
                "".join(f"import site; site.addsitedir({d!r})\n" for d in dirs)
            )
            extra = ["--no-deps", *wheels]
        else:
            extra = [*wheels, *WORKER_NEEDS]
        _run([_install_command(self.uv, python, extra)], f"{commit[:12]}'s wheels")


def _venv_command(uv: str | None, base: str, env: Path) -> list[str]:
    """The command that makes a venv at `env` on interpreter `base` (with uv where it is found)."""
    return [uv, "venv", "--quiet", "--python", base, str(env)] if uv else [base, "-m", "venv", str(env)]


def _install_command(uv: str | None, python: str, args: list[str]) -> list[str]:
    """The command that installs `args` (requirements, wheels, pip options) into `python`'s venv."""
    if uv:
        return [uv, "pip", "install", "--quiet", "--python", python, *args]
    return [python, "-m", "pip", "install", "--quiet", *args]


def _run(steps: list[list[str]], what: str) -> None:
    for cmd in steps:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BuildError(f"{what}: {Path(cmd[0]).name} failed: {e}") from None
        if proc.returncode != 0:
            last = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()[-1]
            raise BuildError(f"{what}: cannot be installed ({last.strip()})")
