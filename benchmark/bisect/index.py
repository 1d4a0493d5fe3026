"""The builds a package index holds, newest last: what `benchmark night` installs (the newest) and
what its automatic bisection walks (those between two nights).

An index is one of:

* a PEP 503 simple index over HTTP(S) or ``file://`` (the HTML page of the package, or the JSON of
  PEP 691 when the server offers it), e.g. Paddle's nightly index for ``paddlepaddle-gpu``;
* a local directory of wheels (a path, or a ``file://`` URL of a directory without a
  ``<package>/`` page): what ``pip download -d DIR`` leaves, which makes the loop testable offline.

A build is one wheel this interpreter can install (its tags), not yanked: its version, file name,
sha256 (from the index's link fragment or JSON, or read from a local file), and its date. The
date is the day in a nightly version (``3.2.0.dev20250811``), else the index's upload time (PEP
700), else a local file's modification time; where it came from is kept beside it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import html.parser
import json
import re
import shutil
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from packaging.tags import sys_tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from benchmark.bisect.builds import (
    READY,
    WORKER_NEEDS,
    BuildError,
    _install_command,
    _run,
    _venv_command,
    cache_root,
)

_NIGHTLY_DAY = re.compile(r"(?:dev|post)(20\d{6})")


@dataclasses.dataclass(frozen=True)
class Build:
    """One installable build of a package on an index (see the module)."""

    package: str
    version: str
    filename: str
    url: str  # where the wheel is (a URL, or a local path for a directory index)
    index: str
    sha256: str | None = None
    date: str | None = None  # ISO date (UTC) the build stands for
    date_source: str | None = None  # "version", "upload-time" or "file-mtime"

    @property
    def key(self) -> str:
        """What makes two nights' builds the same build: the version and, where known, the wheel's hash."""
        return f"{self.version}#{self.sha256}" if self.sha256 else self.version

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def local_directory(index: str) -> Path | None:
    """The directory of a directory index (a path or a file:// URL naming a directory that has no
    page for packages), or None for a URL index."""
    if "://" not in index:
        path = Path(index).expanduser()
    elif index.startswith("file://"):
        path = Path(urllib.parse.unquote(urllib.parse.urlparse(index).path))
    else:
        return None
    return path if path.is_dir() and any(path.glob("*.whl")) else None


def index_builds(package: str, index: str, *, pre: bool = True) -> list[Build]:
    """Every build of `package` on `index` that this interpreter can install, oldest first (by
    version, then date). Raises BuildError (one line) when the index cannot be read or holds none."""
    directory = local_directory(index)
    files = _directory_files(directory) if directory is not None else _index_files(package, index)
    wanted = {str(t) for t in sys_tags()}
    name = canonicalize_name(package)
    builds: dict[tuple[Version, str], Build] = {}
    for f in files:
        filename = str(f.get("filename", ""))
        if not filename.endswith(".whl") or f.get("yanked"):
            continue
        try:
            wheel_name, version, _, tags = parse_wheel_filename(filename)
        except (ValueError, InvalidVersion):
            continue
        if wheel_name != name or not {str(t) for t in tags} & wanted or (version.is_prerelease and not pre):
            continue
        date, source = _build_date(str(version), f)
        b = Build(package=package, version=str(version), filename=filename, url=str(f["url"]), index=index,
                  sha256=f.get("sha256"), date=date, date_source=source)  # fmt: skip
        builds.setdefault((version, filename), b)
    if not builds:
        raise BuildError(f"{index}: no wheel of {package} for this Python and platform")
    # one build per version (several wheels of one version for this interpreter: the first name)
    by_version: dict[str, Build] = {}
    for (_, _), b in sorted(builds.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        by_version.setdefault(b.version, b)
    return sorted(by_version.values(), key=lambda b: (Version(b.version), b.date or ""))


def newest_build(package: str, index: str, *, pre: bool = True) -> Build:
    """The newest build of `package` on `index` (see :func:`index_builds`)."""
    return index_builds(package, index, pre=pre)[-1]


def builds_between(builds: list[Build], first: str, last: str) -> list[Build]:
    """The builds from version `first` to version `last` (inclusive), oldest first; the two ends are
    always kept (a build the index no longer holds is not invented: BuildError)."""
    low, high = Version(first), Version(last)
    found = [b for b in builds if low <= Version(b.version) <= high]
    for end in (first, last):
        if not any(Version(b.version) == Version(end) for b in found):
            raise BuildError(f"build {end} is no longer on the index")
    return found


def _build_date(version: str, f: dict[str, Any]) -> tuple[str | None, str | None]:
    m = _NIGHTLY_DAY.search(version)
    if m:
        day = m.group(1)
        return f"{day[:4]}-{day[4:6]}-{day[6:]}", "version"
    if f.get("upload-time"):
        return str(f["upload-time"])[:10], "upload-time"
    if f.get("mtime") is not None:
        return dt.datetime.fromtimestamp(float(f["mtime"]), dt.timezone.utc).date().isoformat(), "file-mtime"
    return None, None


def _directory_files(directory: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(directory.glob("*.whl")):
        out.append({"filename": path.name, "url": str(path.resolve()), "mtime": path.stat().st_mtime,
                    "sha256": _sha256_cached(path)})  # fmt: skip
    return out


def _sha256_cached(path: Path) -> str:
    """A local wheel's sha256, kept beside it in a `.sha256` file keyed by size and mtime (a wheel
    of 200 MB takes a second to hash, and a night lists the directory more than once)."""
    stat = path.stat()
    stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
    memo = path.with_name(path.name + ".sha256")
    try:
        saved_stamp, saved = memo.read_text().split()
        if saved_stamp == stamp:
            return saved
    except (OSError, ValueError):
        pass
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    value = digest.hexdigest()
    with contextlib.suppress(OSError):  # a read-only directory of wheels: hash it again next time
        memo.write_text(f"{stamp} {value}\n")
    return value


class _Links(html.parser.HTMLParser):
    """The anchors of a PEP 503 page: (href, data-yanked present)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            a = dict(attrs)
            if a.get("href"):
                self.links.append((str(a["href"]), "data-yanked" in a))


def _index_files(package: str, index: str) -> list[dict[str, Any]]:
    url = f"{index.rstrip('/')}/{canonicalize_name(package)}/"
    accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 (the user's index URL)
            body = response.read()
            kind = response.headers.get("Content-Type", "") if hasattr(response, "headers") else ""
    except OSError as e:
        if url.startswith("file://"):  # a file:// index serves the page as index.html
            return _index_files_file(url)
        raise BuildError(f"cannot read the builds of {package} from {url}: {e}") from None
    return _parse(body, kind, url)


def _index_files_file(url: str) -> list[dict[str, Any]]:
    page = Path(urllib.parse.unquote(urllib.parse.urlparse(url).path)) / "index.html"
    try:
        body = page.read_bytes()
    except OSError as e:
        raise BuildError(f"cannot read {page}: {e.strerror}") from None
    return _parse(body, "text/html", url)


def _parse(body: bytes, kind: str, url: str) -> list[dict[str, Any]]:
    if "json" in kind:
        try:
            doc = json.loads(body)
        except ValueError as e:
            raise BuildError(f"{url}: not a PEP 691 JSON page ({e})") from None
        files = []
        for f in doc.get("files", []):
            files.append({"filename": f.get("filename"), "url": urllib.parse.urljoin(url, str(f.get("url", ""))),
                          "sha256": (f.get("hashes") or {}).get("sha256"), "yanked": f.get("yanked"),
                          "upload-time": f.get("upload-time")})  # fmt: skip
        return files
    parser = _Links()
    parser.feed(body.decode("utf-8", "replace"))
    files = []
    for href, yanked in parser.links:
        full = urllib.parse.urljoin(url, href)
        path, _, fragment = full.partition("#")
        filename = urllib.parse.unquote(path.rsplit("/", 1)[-1])
        sha = fragment.split("=", 1)[1] if fragment.startswith("sha256=") else None
        files.append({"filename": filename, "url": path, "sha256": sha, "yanked": yanked})
    return files


class BuildEnvs:
    """One environment per build of an index, holding exactly that wheel (by its file or URL, so a
    nightly re-uploaded under the same version is another environment), setuptools and what the
    harness's worker imports; made once under ``~/.cache/paddle-benchmark/envs/`` and kept (with uv
    where it is on PATH, else pip), as :class:`benchmark.bisect.builds.EnvCache` does for versions.
    `python_for(version)` takes a version of `builds`, so the bisection's search labels builds by
    version."""

    def __init__(self, builds: list[Build], *, root: Path | None = None,
                 say: Callable[[str], None] = lambda line: None, installer: str = "auto") -> None:  # fmt: skip
        self.builds = {b.version: b for b in builds}
        self.root = root or cache_root()
        self.say = say
        self.uv = shutil.which("uv") if installer in ("auto", "uv") else None
        if installer == "uv" and self.uv is None:
            raise BuildError("uv is not on PATH (pip install uv, or use pip)")
        self.seconds: dict[str, float] = {}  # version -> seconds its environment took (0: cached)

    def path(self, build: Build) -> Path:
        ident = hashlib.sha256(f"{build.url}\0{build.sha256}".encode()).hexdigest()[:10]
        py = f"py{sys.version_info.major}{sys.version_info.minor}"
        return self.root / f"{canonicalize_name(build.package)}-{build.version}-{py}-{ident}"

    def python_for(self, version: str) -> str:
        build = self.builds.get(version)
        if build is None:
            raise BuildError(f"{version}: not a build of this range")
        env = self.path(build)
        python = env / "bin" / "python"
        if (env / READY).exists() and python.exists():
            self.seconds[version] = 0.0
            return str(python)
        shutil.rmtree(env, ignore_errors=True)  # half made by an earlier attempt
        env.parent.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        self.say(f"night: making the environment of {build.package} {version} ({'uv' if self.uv else 'pip'})")
        try:
            _run([_venv_command(self.uv, sys.executable, env),
                  _install_command(self.uv, str(python), [build.url, *WORKER_NEEDS])],
                 f"{build.package} {version}")  # fmt: skip
        except BuildError:
            shutil.rmtree(env, ignore_errors=True)
            raise
        (env / READY).write_text(json.dumps(build.to_dict()))
        self.seconds[version] = time.monotonic() - start
        return str(python)
