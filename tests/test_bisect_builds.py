"""The builds of `benchmark bisect --package`: versions read from a real (local) package index over
HTTP, and environments made by uv once, kept, and never left half made."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import shutil
import subprocess
import threading
import zipfile
from pathlib import Path

import pytest

from benchmark.bisect.builds import READY, BuildError, EnvCache, index_versions

pytestmark = pytest.mark.skipif(
    shutil.which("uv") is None, reason="needs uv on PATH (the test extra installs it)"
)


def _wheel(folder: Path, version: str, tag: str = "py3-none-any") -> Path:
    """A minimal pure-Python wheel of `fakepkg` that knows its version."""
    name = f"fakepkg-{version}-{tag}.whl"
    info = f"fakepkg-{version}.dist-info"
    files = {
        "fakepkg/__init__.py": f"__version__ = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: fakepkg\nVersion: {version}\n",
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    with zipfile.ZipFile(folder / name, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return folder / name


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """A PEP 691 JSON index of fakepkg over HTTP: 1.0, 1.1 (a wheel for another platform only),
    1.2 (yanked), 1.3, 2.0rc1 (a pre-release), 2.0."""
    root = tmp_path_factory.mktemp("index")
    (root / "files").mkdir()
    entries = []
    for version, tag, yanked in [("1.0", "py3-none-any", False), ("1.1", "cp27-cp27m-win32", False),
                                 ("1.2", "py3-none-any", True), ("1.3", "py3-none-any", False),
                                 ("2.0rc1", "py3-none-any", False), ("2.0", "py3-none-any", False)]:  # fmt: skip
        wheel = _wheel(root / "files", version, tag)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        entries.append({"filename": wheel.name, "url": f"../../files/{wheel.name}", "hashes": {"sha256": digest},
                        "yanked": yanked})  # fmt: skip
    doc = {"meta": {"api-version": "1.0"}, "name": "fakepkg", "files": entries}
    (root / "simple" / "fakepkg").mkdir(parents=True)
    (root / "simple" / "fakepkg" / "index.json").write_text(json.dumps(doc))

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

        def do_GET(self):  # noqa: N802 (the http.server API)
            if self.path.rstrip("/") == "/simple/fakepkg":
                body = (root / "simple" / "fakepkg" / "index.json").read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()


def test_the_versions_between_the_ends_are_those_installable_here_and_not_yanked(index):
    assert index_versions("fakepkg", "1.0", "2.0", index) == ["1.0", "1.3", "2.0"]
    assert index_versions("fakepkg", "1.0", "2.0rc1", index) == ["1.0", "1.3", "2.0rc1"]  # a pre-release end
    with pytest.raises(BuildError, match="fakepkg 1.2: no wheel for this Python"):
        index_versions("fakepkg", "1.2", "2.0", index)  # yanked
    with pytest.raises(BuildError, match="must be older"):
        index_versions("fakepkg", "2.0", "1.0", index)


def test_an_environment_is_made_once_and_a_version_that_cannot_be_installed_is_one_line(index, tmp_path):
    cache = EnvCache("fakepkg", index_url=index, root=tmp_path / "envs", needs=(), installer="uv")
    python = cache.python_for("1.3")
    version = subprocess.run([python, "-c", "import fakepkg; print(fakepkg.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert version == "1.3"
    assert cache.seconds["1.3"] > 0
    assert cache.python_for("1.3") == python and cache.seconds["1.3"] == 0.0  # kept, not made again
    with pytest.raises(BuildError) as e:
        cache.python_for("9.9")
    assert "fakepkg==9.9: cannot be installed" in str(e.value) and "\n" not in str(e.value)
    assert not cache.path("9.9").exists()  # nothing half made left behind
    # a half-made environment (no ready mark) is made again, not used
    (cache.path("1.3") / READY).unlink()
    assert cache.python_for("1.3") == python and cache.seconds["1.3"] > 0
