"""`benchmark night`'s parts that run without callgrind: the builds an index holds (a directory of
wheels, a PEP 503 page over HTTP, a file:// index), an environment holding exactly one wheel (uv),
what a night decides from the earlier nights it stored (the last passing night, a standing
regression not bisected again, the budget), and the culprit range in words. The whole flow under
callgrind is tests/test_night_e2e.py (slow)."""

from __future__ import annotations

import base64
import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from benchmark.bisect import night
from benchmark.bisect.builds import BuildError
from benchmark.bisect.index import BuildEnvs, builds_between, index_builds, newest_build
from benchmark.datamodel.environment import RunDescription
from benchmark.report import night as words
from benchmark.store import open_store


def wheel(folder: Path, version: str, tag: str = "py3-none-any", name: str = "fakepkg") -> Path:
    """A minimal pure-Python wheel of `name` that knows its version."""
    filename = f"{name}-{version}-{tag}.whl"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"__version__ = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    with zipfile.ZipFile(folder / filename, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return folder / filename


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- the builds of an index -------------------------------------------------------------------


def test_a_directory_of_wheels_lists_this_interpreters_builds_oldest_first_with_hash_and_date(tmp_path):
    wheel(tmp_path, "1.0")
    nightly = wheel(tmp_path, "1.1.dev20250811")
    wheel(tmp_path, "1.2", tag="cp27-cp27m-win32")  # not for this interpreter
    wheel(tmp_path, "2.0", name="otherpkg")  # another package
    os.utime(tmp_path / "fakepkg-1.0-py3-none-any.whl", (1_700_000_000, 1_700_000_000))
    builds = index_builds("fakepkg", str(tmp_path))
    assert [b.version for b in builds] == ["1.0", "1.1.dev20250811"]
    assert builds[0].date == "2023-11-14" and builds[0].date_source == "file-mtime"
    assert builds[1].date == "2025-08-11" and builds[1].date_source == "version"
    assert builds[1].sha256 == sha(nightly) and builds[1].url == str(nightly.resolve())
    assert newest_build("fakepkg", f"file://{tmp_path}").version == "1.1.dev20250811"
    assert [b.version for b in index_builds("fakepkg", str(tmp_path), pre=False)] == ["1.0"]
    # the hash is kept beside the wheel and read back while the file is unchanged
    assert (tmp_path / f"{nightly.name}.sha256").read_text().split()[1] == sha(nightly)
    with pytest.raises(BuildError, match=r"no wheel of nopkg for this Python"):
        index_builds("nopkg", str(tmp_path))


@pytest.fixture
def html_index(tmp_path):
    """A PEP 503 HTML index of fakepkg over HTTP: 1.0, 1.1 (yanked), 1.2, with sha256 fragments."""
    files = tmp_path / "files"
    files.mkdir()
    links = []
    for version, yanked in [("1.0", False), ("1.1", True), ("1.2", False)]:
        w = wheel(files, version)
        attr = ' data-yanked=""' if yanked else ""
        links.append(f'<a href="../../files/{w.name}#sha256={sha(w)}"{attr}>{w.name}</a><br>')
    page = tmp_path / "simple" / "fakepkg"
    page.mkdir(parents=True)
    (page / "index.html").write_text("<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>")

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(tmp_path), **kw)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple", tmp_path
    server.shutdown()


def test_a_pep503_html_index_over_http_and_file_urls(html_index):
    url, root = html_index
    builds = index_builds("fakepkg", url)
    assert [b.version for b in builds] == ["1.0", "1.2"]  # 1.1 is yanked
    w = root / "files" / "fakepkg-1.2-py3-none-any.whl"
    assert builds[-1].sha256 == sha(w) and builds[-1].url.endswith("/files/fakepkg-1.2-py3-none-any.whl")
    assert builds[-1].url.startswith("http://")
    # the same index read from disk (file://: the page is the package directory's index.html)
    local = index_builds("fakepkg", f"file://{root}/simple")
    assert [(b.version, b.sha256) for b in local] == [(b.version, b.sha256) for b in builds]
    assert [b.version for b in builds_between(builds, "1.0", "1.2")] == ["1.0", "1.2"]
    with pytest.raises(BuildError, match=r"build 1.1 is no longer on the index"):
        builds_between(builds, "1.1", "1.2")
    with pytest.raises(BuildError, match=r"cannot read the builds of fakepkg"):
        index_builds("fakepkg", url.replace("/simple", "/nothing"))


def test_a_pep691_json_index_gives_hashes_yanks_and_upload_times(tmp_path):
    import json

    files = tmp_path / "files"
    files.mkdir()
    entries = []
    for version, yanked, day in [
        ("1.0", False, "2025-01-15"),
        ("1.1", True, "2025-02-15"),
        ("1.2", False, "2025-03-15"),
    ]:
        w = wheel(files, version)
        entries.append({"filename": w.name, "url": f"../../files/{w.name}", "hashes": {"sha256": sha(w)},
                        "yanked": yanked, "upload-time": f"{day}T02:00:00.000Z"})  # fmt: skip
    body = json.dumps({"meta": {"api-version": "1.1"}, "name": "fakepkg", "files": entries}).encode()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(tmp_path), **kw)

        def do_GET(self):  # noqa: N802 (the http.server API)
            if self.path.rstrip("/") != "/simple/fakepkg":
                return super().do_GET()
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        builds = index_builds("fakepkg", f"http://127.0.0.1:{server.server_address[1]}/simple")
    finally:
        server.shutdown()
    assert [(b.version, b.date, b.date_source) for b in builds] == [
        ("1.0", "2025-01-15", "upload-time"),
        ("1.2", "2025-03-15", "upload-time"),
    ]
    assert builds[-1].sha256 == sha(files / "fakepkg-1.2-py3-none-any.whl")
    assert builds[-1].url.endswith("/files/fakepkg-1.2-py3-none-any.whl")


@pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv on PATH (the test extra installs it)")
def test_an_environment_holds_exactly_the_wheel_of_its_build_and_is_made_once(tmp_path):
    idx = tmp_path / "idx"
    idx.mkdir()
    wheel(idx, "1.0")
    wheel(idx, "1.1")
    builds = index_builds("fakepkg", str(idx))
    envs = BuildEnvs(builds, root=tmp_path / "envs")
    envs.builds = {b.version: b for b in builds}
    python = envs.python_for("1.0")
    out = subprocess.run([python, "-c", "import fakepkg; print(fakepkg.__version__)"], capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "1.0" and envs.seconds["1.0"] > 0
    assert envs.python_for("1.0") == python and envs.seconds["1.0"] == 0.0  # cached
    with pytest.raises(BuildError, match=r"9.9: not a build of this range"):
        envs.python_for("9.9")


# ---- what a night decides from the earlier nights ---------------------------------------------


def _night_run(store, machine, version: str, *, values, verdicts, bisections=(), commit=None, sha256=None):
    record = {"build": {"package": "paddlepaddle", "version": version, "commit": commit or f"c{version}",
                        "sha256": sha256 or f"s{version}"},
              "values": values, "verdicts": verdicts, "bisections": list(bisections), "stands_for": "2025-01-01"}  # fmt: skip
    run_id = store.begin_run(machine, RunDescription(trigger=night.TRIGGER, extra={night.KEY: record}))
    store.finish_run(run_id, "complete")
    return run_id


@pytest.fixture
def history(tmp_path):
    from benchmark.datamodel.environment import MachineDescription

    store = open_store(f"sqlite:///{tmp_path / 'h.sqlite'}")
    machine = MachineDescription.of({"fingerprint": "abc" + night.FINGERPRINT_SUFFIX})
    other = MachineDescription.of({"fingerprint": "other" + night.FINGERPRINT_SUFFIX})
    yield store, machine, other
    store.close()


def test_the_last_passing_night_and_a_known_bisection_come_from_what_earlier_nights_recorded(history):
    store, machine, other = history
    first = _night_run(store, machine, "3.0.0", values={"a": 100.0}, verdicts={"a": "new"})
    step = {"case": "a", "status": "step", "last_good": "3.1.0", "first_bad": "3.1.1", "good_commit": "g",
            "bad_commit": "b", "effect": 0.09}  # fmt: skip
    failed = _night_run(
        store, machine, "3.2.0", values={"a": 109.0}, verdicts={"a": "regression"}, bisections=[step]
    )
    _night_run(store, other, "3.2.0", values={"a": 1.0}, verdicts={"a": "pass"})  # another machine's night
    earlier = night.earlier_nights(store, machine.fingerprint)
    assert [r.id for r in earlier] == [first, failed]
    assert night.last_passing_night(earlier, "a").id == first
    assert night.last_passing_night(earlier, "b") is None
    found, record = night.known_bisection(earlier, "a")
    assert found.id == failed and record["first_bad"] == "3.1.1"
    assert night.same_build(earlier[1].extra["night"]["build"], {"version": "3.2.0", "sha256": "s3.2.0"})
    assert not night.same_build(earlier[1].extra["night"]["build"], {"version": "3.2.0", "sha256": "other"})
    assert (
        night.compare_url(night.DEFAULT_UPSTREAM, "g", "b")
        == "https://github.com/PaddlePaddle/Paddle/compare/g...b"
    )
    assert night.compare_url(night.DEFAULT_UPSTREAM, "g", None) is None


def _settings(tmp_path, budget_s=600.0):
    return night.NightSettings(cases=[], db_url=f"sqlite:///{tmp_path / 'h.sqlite'}", root=tmp_path,
                               tooling=None, thresholds={"a": 0.012}, budget_s=budget_s)  # type: ignore[arg-type]  # fmt: skip


class _Decision:
    """What bisect_failures reads of the judge's decision: the effect and the minimum effect."""

    effect, min_effect = 0.09, 0.01


def test_a_regression_already_bisected_is_standing_and_not_measured_again(history, tmp_path):
    store, machine, _ = history
    _night_run(store, machine, "3.0.0", values={"a": 100.0}, verdicts={"a": "new"})
    step = {"case": "a", "status": "step", "last_good": "3.1.0", "first_bad": "3.1.1", "good_commit": "g",
            "bad_commit": "b", "effect": 0.09, "compare": "https://x/compare/g...b"}  # fmt: skip
    _night_run(store, machine, "3.2.0", values={"a": 109.0}, verdicts={"a": "regression"}, bisections=[step])
    earlier = night.earlier_nights(store, machine.fingerprint)
    tonight = {"build": {"version": "3.3.1", "commit": "t"}, "values": {"a": 109.5}}
    # no tooling, no environments: anything measured would fail this test
    (out,) = night.bisect_failures(_settings(tmp_path), [("a", _Decision())], tonight, earlier, None, None,
                                   label_python="none")  # fmt: skip
    assert out["status"] == "standing" and (out["last_good"], out["first_bad"]) == ("3.1.0", "3.1.1")
    assert out["bisected_in"] == earlier[1].id and "not bisected again" in out["message"]
    assert out["compare"] == "https://x/compare/g...b"


def test_worse_again_is_bisected_from_the_night_that_held_the_known_level(history, tmp_path):
    store, machine, _ = history
    _night_run(store, machine, "3.0.0", values={"a": 100.0}, verdicts={"a": "new"})
    step = {"case": "a", "status": "step", "last_good": "3.1.0", "first_bad": "3.1.1"}
    _night_run(store, machine, "3.2.0", values={"a": 109.0}, verdicts={"a": "regression"}, bisections=[step])
    earlier = night.earlier_nights(store, machine.fingerprint)
    tonight = {"build": {"version": "3.3.1", "commit": "t"}, "values": {"a": 115.0}}
    # without an index the range is the two nights themselves: both values are known, nothing is counted
    (out,) = night.bisect_failures(_settings(tmp_path), [("a", _Decision())], tonight, earlier, None, None,
                                   label_python="none")  # fmt: skip
    assert out["status"] == "step" and (out["last_good"], out["first_bad"]) == ("3.2.0", "3.3.1")
    assert (out["good_commit"], out["bad_commit"]) == ("c3.2.0", "t")
    assert out["compare"] == f"{night.DEFAULT_UPSTREAM}/compare/c3.2.0...t"
    assert out["effect"] == pytest.approx(115 / 109 - 1) and out["builds_counted"] == []


def test_a_spent_budget_reports_the_interval_left(history, tmp_path):
    from benchmark.bisect.index import Build

    store, machine, _ = history
    _night_run(store, machine, "1.0", values={"a": 100.0}, verdicts={"a": "new"})
    earlier = night.earlier_nights(store, machine.fingerprint)
    listing = [
        Build("paddlepaddle", v, f"p-{v}.whl", f"/nowhere/p-{v}.whl", "idx")
        for v in ("1.0", "1.1", "1.2", "1.3")
    ]
    envs = BuildEnvs(listing, root=tmp_path / "envs")
    tonight = {"build": {"version": "1.3", "commit": "t"}, "values": {"a": 120.0}}
    (out,) = night.bisect_failures(_settings(tmp_path, budget_s=0.0), [("a", _Decision())], tonight, earlier,
                                   envs, listing, label_python="none")  # fmt: skip
    assert out["status"] == "budget-spent"
    assert (
        out["message"]
        == "the budget ran out: the step is between 1.0 and 1.3 (2 build(s) between them not measured: 1.1, 1.2)"
    )
    assert (out["last_good"], out["first_bad"]) == ("1.0", "1.3")


def test_a_case_without_a_passing_night_is_said_so(history, tmp_path):
    store, machine, _ = history
    _night_run(store, machine, "1.0", values={"a": 100.0}, verdicts={"a": "regression"})
    earlier = night.earlier_nights(store, machine.fingerprint)
    tonight = {"build": {"version": "1.3"}, "values": {"a": 120.0}}
    (out,) = night.bisect_failures(_settings(tmp_path), [("a", _Decision())], tonight, earlier, None, None,
                                   label_python="none")  # fmt: skip
    assert out["status"] == "no-good-night"


# ---- the culprit range in words ----------------------------------------------------------------


RECORD = {
    "stands_for": "2025-09-01",
    "build": {"package": "paddlepaddle", "version": "3.2.0", "commit": "e22e2f9af7aa", "date": "2025-09-01",
              "date_source": "upload-time", "index": "https://example.org/simple"},  # fmt: skip
    "verdicts": {"mul-fwd-cpu-dynamic": "regression", "abs-fwd-cpu-dynamic": "pass"},
    "effects": {"mul-fwd-cpu-dynamic": 0.095, "abs-fwd-cpu-dynamic": -0.0002},
    "bisections": [
        {"case": "mul-fwd-cpu-dynamic", "status": "step", "last_good": "3.1.0", "first_bad": "3.1.1",
         "good_commit": "aaaaaaaaaaaa11", "bad_commit": "bbbbbbbbbbbb22", "effect": 0.095,
         "compare": "https://github.com/PaddlePaddle/Paddle/compare/aaaaaaaaaaaa11...bbbbbbbbbbbb22",
         "message": "3.1.0 -> 3.1.1 (+9.50%)"},
        {"case": "<script>x</script>", "status": "budget-spent", "last_good": "3.0.0", "first_bad": "3.2.0",
         "message": "the budget ran out: the step is between 3.0.0 and 3.2.0"},
    ],
}  # fmt: skip


def test_the_report_names_each_failing_case_its_builds_commits_and_the_upstream_comparison():
    md = words.markdown(RECORD)
    assert "paddlepaddle 3.2.0 (commit e22e2f9af7" in md
    row = next(line for line in md.splitlines() if "mul-fwd-cpu-dynamic" in line)
    assert "+9.5" in row and "3.1.0 -> 3.1.1" in row and "`aaaaaaaaaa`" in row and "`bbbbbbbbbb`" in row
    assert "(https://github.com/PaddlePaddle/Paddle/compare/aaaaaaaaaaaa11...bbbbbbbbbbbb22)" in row
    assert "budget spent: the budget ran out" in md
    html = words.html(RECORD)
    assert "<script>x" not in html and "&lt;script&gt;" in html
    assert 'href="https://github.com/PaddlePaddle/Paddle/compare/aaaaaaaaaaaa11...bbbbbbbbbbbb22"' in html
    text = "\n".join(words.lines(RECORD))
    assert (
        "REGRESSION   mul-fwd-cpu-dynamic +9.5" in text
        and "last good 3.1.0 (aaaaaaaaaa) -> first bad 3.1.1" in text
    )
    assert words.html(None) == ""
    assert "No case regressed" in words.markdown({**RECORD, "bisections": []})


# ---- the command's input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --index-url URL|DIR (the builds to follow) or --python PYTHON"),
        (["--python", sys.executable, "--backfill", "2"], "--backfill and --version install builds"),
        (["--index-url", "x", "--repo", "."], "--repo needs --build CMD"),
        (["--index-url", "x", "--build", "make"], "--build and --base-python go with --repo"),
        (["--index-url", "x", "--budget-min", "0"], "--budget-min must be a positive number of minutes"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args, message, tmp_path, capsys):
    from benchmark.cli import main

    assert main(["night", *args, "--db", str(tmp_path / "h.sqlite")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("benchmark night: error: " + message)
    assert not (tmp_path / "h.sqlite").exists()


def test_resolve_names_the_newest_build_or_the_pinned_one_as_one_json_line(tmp_path, capsys):
    import json

    from benchmark.cli import main

    wheel(tmp_path, "1.0")
    newest = wheel(tmp_path, "1.1.dev20250811")

    def resolve(*extra):
        code = main(["night", "--resolve", "--package", "fakepkg", "--index-url", str(tmp_path), *extra])
        return code, capsys.readouterr()

    code, out = resolve()
    doc = json.loads(out.out)
    assert code == 0 and (doc["version"], doc["sha256"], doc["date"]) == (
        "1.1.dev20250811",
        sha(newest),
        "2025-08-11",
    )
    assert json.loads(resolve("--version", "1.0")[1].out)["version"] == "1.0"
    code, out = resolve("--version", "2.0")
    assert code == 2 and "--version 2.0: no such build of fakepkg" in out.err


def test_only_regressions_are_bisected_never_an_improvement():
    from benchmark.datamodel.verdict import Decision, Verdict

    ids = {(f"c{v}", "cpu", "dynamic"): f"c{v}-cpu-dynamic" for v in Verdict}
    decisions = [Decision(case_id=f"c{v}", name="n", place="cpu", mode="dynamic", metric="instructions", verdict=v)
                 for v in Verdict]  # fmt: skip
    assert [case for case, _ in night.to_bisect(decisions, ids)] == ["cregression-cpu-dynamic"]


def test_set_run_extra_sets_one_key_and_keeps_the_others(history):
    from benchmark.store.engine import StoreError

    store, machine, _ = history
    run_id = store.begin_run(machine, RunDescription(extra={"selection": {"keyword": "abs"}}))
    store.set_run_extra(run_id, "night", {"verdicts": {"a": "pass"}})
    store.set_run_extra(run_id, "night", {"verdicts": {"a": "regression"}})
    extra = store.run(run_id).extra
    assert extra["selection"] == {"keyword": "abs"} and extra["night"] == {"verdicts": {"a": "regression"}}
    with pytest.raises(StoreError, match=r"there is no run 999"):
        store.set_run_extra(999, "night", {})
