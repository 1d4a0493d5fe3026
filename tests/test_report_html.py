"""The HTML dashboard, built from a real SQLite history and loaded in a real headless browser.

Browser tests use Debian's chromium (/usr/bin/chromium) driven by Playwright's Python package and are
skipped, with the reason, only when one of the two is missing. The index screenshot is kept in the
test's tmp dir and copied to results/report-screenshots/ for people to look at.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from synthetic import result_from_samples

from benchmark.cli import main
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.result import CaseResult
from benchmark.report import html as dashboard
from benchmark.report import svg as inline_svg
from benchmark.store import open_store

DAY = 86400.0
MACHINE = {"hostname": "html-host", "cpu_model": "test", "fingerprint": "htmlmachine0001"}
RUNS, ROUNDS = 16, 8
XSS = "<script>alert(1)</script>"
SERIES = [  # case id, place, level (s), kind of history
    ("ops.matmul[m=512]", "cpu", 800e-6, "flat"),
    ("ops.matmul[m=512]", "gpu:0", 90e-6, "flat"),
    ("ops.relu[n=64]", "cpu", 5e-6, "regression"),
    ("ops.conv[k=3]", "gpu:0", 2e-3, "improvement"),
    (XSS, "cpu", 1e-4, "flat"),
    ("ops.crash[n=1]", "cpu", 1e-3, "error"),
    ("ops.attention[n=8]", "gpu:1", 1e-4, "skipped"),  # never run here: its own section, not the table
]
SHOWN = [s for s in SERIES if s[3] != "skipped"]
TELEMETRY = {
    "summary": {"available": True, "device_name": "NVIDIA H200"},
    "timeline": [
        {"t": 0.1 * i, "gpu_util": 80 + i % 7, "mem_util": 30, "power_w": 250.0 + i, "mem_used_bytes": 2**32,
         "sm_clock_mhz": 1980}
        for i in range(40)
    ],
}  # fmt: skip
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[1] / "results" / "report-screenshots"


def _keep(shot: Path) -> None:
    """A copy of screenshot `shot` in SCREENSHOTS, for people to look at (made here, so that a test
    run alone does not depend on another having made the folder)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, SCREENSHOTS / shot.name)


def _level(kind: str, base: float, r: int) -> float:
    # The badges are the judge's verdicts on the latest run: these changes are flagged there (the
    # online detector needs two runs at the new level).
    if kind == "regression" and r >= RUNS - 2:
        return base * 1.25
    if kind == "improvement" and r >= RUNS - 2:
        return base * 0.8
    return base


def _result(case_id: str, place: str, level: float, rng, status: str = "ok") -> CaseResult:
    samples = level * np.exp(rng.normal(0, 0.01, ROUNDS)) if status == "ok" else []
    return result_from_samples(
        case_id,
        samples,
        place=place,
        config={"case": case_id, "note": "<img src=x onerror=alert(5)>"},
        status=status,
        message={"ok": None, "skipped": "needs a CUDA place"}.get(status, "RuntimeError: <b>boom</b>"),
    )


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "history.sqlite"
    url = f"sqlite:///{path}"
    rng = np.random.default_rng(5)
    with open_store(url) as st:
        for r in range(RUNS):
            run = {"started_at": 1.70e9 + r * DAY, "git_commit": f"{r:02d}" + "cd" * 19, "git_branch": "develop",
                   "git_message": "<script>alert(3)</script> fix", "env": {"OMP_NUM_THREADS": '"><script>alert(4)</script>'}}  # fmt: skip
            run_id = st.begin_run(MachineDescription.of(MACHINE), RunDescription.of(run))
            results = []
            for case_id, place, base, kind in SERIES:
                status = (
                    "error" if kind == "error" and r == RUNS - 1 else "skipped" if kind == "skipped" else "ok"
                )
                noise = float(np.exp(rng.normal(0, 0.003)))
                results.append(_result(case_id, place, _level(kind, base, r) * noise, rng, status))
                if place.startswith("gpu") and kind == "improvement" and r == RUNS - 1:
                    results[-1].telemetry = TELEMETRY
            st.add_results(run_id, results)
            st.finish_run(run_id)
    yield url


@pytest.fixture(scope="module")
def site(history, tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "report"
    with open_store(history, create=False, readonly=True) as store:
        dash = dashboard.build_dashboard(store, out, workers=1, progress=False, min_effect=0.05)
    return dash


# ---------------------------------------------------------------------------------------- without browser


def test_dashboard_files_and_statuses(site):
    assert site.index.is_file()
    statuses = {(en.series.case_id, en.series.place): en.analysis.status for en in site.entries}
    assert len(statuses) == len(SERIES)
    assert statuses[("ops.relu[n=64]", "cpu")] == "regression"
    assert statuses[("ops.conv[k=3]", "gpu:0")] == "improvement"
    assert statuses[("ops.crash[n=1]", "cpu")] == "error"
    assert statuses[("ops.matmul[m=512]", "cpu")] == "pass"
    assert statuses[("ops.attention[n=8]", "gpu:1")] == "skipped"
    for en in site.entries:
        assert (site.out_dir / en.page).is_file()
        changed = (en.analysis.status not in ("ok", "pass") or en.analysis.change_points) and len(en.series)
        assert bool(en.plot_files) == bool(changed), en.series.case_id  # full plots only where it changed
    assert (site.out_dir / f"ab-run{site.run_id}.png").stat().st_size > 0


def test_dashboard_is_self_contained_and_escaped(site):
    pages = [site.index, *site.out_dir.glob("series/*.html")]
    for page in pages:
        text = page.read_text()
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), (
            page
        )  # nothing from the network
        assert "<link" not in text
        for attack in ("<script>alert(", "<img src=x", "<b>boom"):
            assert attack not in text, (page.name, attack)
    index = site.index.read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    assert index.count("<script>") == 1  # the filter script, ours


def test_values_are_written_as_everywhere(site):
    """One formatter (benchmark.units): each value in the unit that fits it, 4 significant digits
    (no '0.5526 ms' next to '125.1 µs')."""
    index = site.index.read_text()
    latest = re.findall(r'<td class="num">([0-9.,]+) (ns|µs|ms|s)</td>', index)
    assert len(latest) == len(SHOWN)  # the latest ok median of every series in the table
    for number, _unit in latest:
        assert float(number) >= 1 and len(number.replace(".", "").lstrip("0")) == 4, number


def test_skipped_cases_get_a_short_section_after_the_table(site):
    index = site.index.read_text()
    table, rest = index.split('<table id="series">', 1)[1].split("</table>", 1)
    assert "ops.attention[n=8]" not in table and "skipped" not in table
    assert '<option value="skipped">' not in index  # nor among the status filters
    assert (
        '<section id="not-run"><h2>Not run on this machine: 1 case</h2><ul><li>1 GPU case: needs a CUDA place'
        in rest
    )
    assert 'href="series/ops.attention_n_8_-gpu_1-dynamic-' in rest  # its page is still there


def test_series_page_content(site):
    entry = next(en for en in site.entries if en.series.case_id == "ops.relu[n=64]")
    text = (site.out_dir / entry.page).read_text()
    assert 'src="' + Path(entry.plot_files[0]).name + '"' in text  # the PNG trend plot, next to the page
    assert "Change points and gate alerts" in text and "regression" in text
    assert "History (newest first)" in text and text.count("<tr") >= RUNS
    assert "Environment of the latest run" in text and "git_commit" in text and "OMP_NUM_THREADS" in text
    assert "&lt;script&gt;alert(3)&lt;/script&gt; fix" in text  # the commit message, as text
    flat = next(
        en for en in site.entries if en.series.case_id == "ops.matmul[m=512]" and en.series.place == "cpu"
    )
    assert '<svg class="trend"' in (site.out_dir / flat.page).read_text()  # light inline trend instead


def test_sparkline_is_an_inline_svg_polyline():
    svg = inline_svg.sparkline_svg(np.linspace(1.0, 2.0, 500), "regression")
    assert svg.startswith('<svg class="spark"') and "<polyline" in svg
    points = re.search(r'points="([^"]+)"', svg).group(1).split()
    assert len(points) == inline_svg.SPARK_POINTS  # downsampled
    ys = [float(p.split(",")[1]) for p in points]
    assert ys[0] > ys[-1]  # rising values go up (SVG y points down)
    assert "<svg" in inline_svg.sparkline_svg([])


def test_cli_report_html(history, tmp_path, capsys):
    out = tmp_path / "cli-report"
    rc = main(
        [
            "report",
            "--format",
            "html",
            "--db",
            history,
            "--out",
            str(out),
            "--jobs",
            "1",
            "--plot-format",
            "png",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    assert "index.html" in capsys.readouterr().out
    assert (out / "index.html").is_file() and not list(out.glob("series/*.svg"))


# -------------------------------------------------------------------------------------------- in a browser


def _playwright():
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium: install it with `apt-get install -y chromium`")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright Python package is not installed: `pip install playwright`")
    return sync_playwright


@pytest.fixture(scope="module")
def browser():
    sync_playwright = _playwright()
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run"]  # fmt: skip
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=args)
        yield b
        b.close()


class Watched:
    """A page with its console errors, uncaught exceptions, dialogs and network requests recorded."""

    def __init__(self, browser) -> None:
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": 1300, "height": 900})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("dialog", self._dialog)
        self.page.on("request", lambda req: self.requests.append(req.url))

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def visible_rows(self) -> list[str]:
        rows = self.page.locator("#series tbody tr.series:visible td.case")
        return [rows.nth(i).inner_text() for i in range(rows.count())]


@pytest.fixture
def index(browser, site):
    w = Watched(browser)
    w.page.goto(site.index.as_uri())
    w.page.wait_for_load_state("load")
    yield w
    w.page.close()


@pytest.mark.slow
def test_index_renders_every_series_without_errors(index, site, tmp_path):
    assert index.page.title() == "Benchmark history"
    assert len(index.visible_rows()) == len(SHOWN)
    assert index.page.locator("#shown-count").inner_text() == str(len(SHOWN))
    assert index.errors == [] and index.dialogs == []
    assert all(url.startswith("file://") for url in index.requests), index.requests
    assert index.page.locator("svg.spark").count() == len(SHOWN)
    shot = tmp_path / "dashboard-index.png"
    index.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    _keep(shot)


def test_script_in_a_case_name_shows_as_text(index):
    assert XSS in index.visible_rows()
    assert index.page.get_by_text(XSS, exact=True).count() == 1
    assert index.dialogs == []


def test_filters_hide_the_right_rows(index):
    page = index.page
    page.fill("#filter-name", "MATMUL")
    assert sorted(index.visible_rows()) == ["ops.matmul[m=512]", "ops.matmul[m=512]"]
    page.select_option("#filter-place", "gpu:0")
    assert index.visible_rows() == ["ops.matmul[m=512]"]
    assert page.locator("#shown-count").inner_text() == "1"
    page.fill("#filter-name", "")
    assert sorted(index.visible_rows()) == ["ops.conv[k=3]", "ops.matmul[m=512]"]
    page.select_option("#filter-place", "")
    page.select_option("#filter-status", "regression")
    assert index.visible_rows() == ["ops.relu[n=64]"]
    page.select_option("#filter-status", "error")
    assert index.visible_rows() == ["ops.crash[n=1]"]
    page.fill("#filter-name", "no such case")
    assert index.visible_rows() == [] and page.locator("#no-match").is_visible()
    assert index.errors == []


def test_series_page_opens_from_its_link(index, browser, tmp_path):
    page = index.page
    page.get_by_role("link", name="ops.relu[n=64]").click()
    page.wait_for_load_state("load")
    assert page.url.endswith(".html") and "/series/" in page.url
    assert page.locator("h1").inner_text() == "ops.relu[n=64]"
    img = page.locator("section img").first
    assert img.evaluate("el => el.complete && el.naturalWidth > 0")  # the PNG trend plot loaded
    assert page.get_by_text("Change points and gate alerts").count() == 1
    assert index.errors == [] and index.dialogs == []
    page.screenshot(path=str(tmp_path / "dashboard-series.png"), full_page=True)
    _keep(tmp_path / "dashboard-series.png")
    # the page of the case named <script>...: shown as text, nothing runs
    w = Watched(browser)
    w.page.goto(index.page.url.rsplit("/series/", 1)[0] + "/index.html")
    w.page.get_by_role("link", name=XSS).click()
    w.page.wait_for_load_state("load")
    assert w.page.locator("h1").inner_text() == XSS
    assert w.dialogs == [] and w.errors == []
    w.page.close()


def test_the_index_opens_on_the_latest_complete_run_and_its_counts_agree(tmp_path):
    # runs 1 and 2 measure the whole selection; run 3 only one case (-k); a compare side runs after
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    rng = np.random.default_rng(3)
    cases = [("ops.a", "cpu"), ("ops.b", "cpu"), ("ops.c", "cpu"), ("ops.g", "gpu")]
    runs = [(cases, {}, MACHINE), (cases, {}, MACHINE), (cases[:1], {"selection": {"keyword": "ops.a"}}, MACHINE),
            (cases, {"trigger": "compare"}, {**MACHINE, "fingerprint": "htmlmachine0001/compare-A"})]  # fmt: skip
    with open_store(url) as st:
        for r, (which, extra, machine) in enumerate(runs):
            run_id = st.begin_run(
                MachineDescription.of(machine), RunDescription.of({"started_at": 1.70e9 + r * DAY, **extra})
            )
            st.add_results(
                run_id,
                [_result(c, p, 1e-3, rng, "skipped" if p == "gpu" else "ok") for c, p in which],
            )
            st.finish_run(run_id)
    with open_store(url, create=False, readonly=True) as store:
        dash = dashboard.build_dashboard(
            store, tmp_path / "site", workers=1, progress=False, plots_enabled=False
        )
    assert dash.run_id == 2
    text = dash.index.read_text()
    assert "Run 2, the latest complete run; run 3 was partial: 1 of 3 series." in text
    shown = int(re.search(r'<b id="shown-count">(\d+)</b> of (\d+) series shown', text)[1])
    assert f'<div class="meta">{shown} series (+ 1 not run on this machine)' in text
    machines = set(re.findall(r"</td><td>dynamic</td><td>([^<]+)</td>", text))
    assert machines == {"htmlmach"}  # the compare side is no series of the suite's table ...
    jobs = text[text.index('<section id="jobs">') :]
    assert "<h3>compare</h3>" in jobs and "htmlmachine0001/compare-A" in jobs  # ... but a job apart
