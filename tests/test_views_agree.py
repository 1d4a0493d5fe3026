"""One number per change: every view of one real two-run history says the same status and effect.

The history is the golden one (tests/data/golden: two real runs of the smoke suite, the second
judged against the first). For every case, `benchmark gate` (text), `benchmark gate --format json`, the
Markdown report, the dashboard (its index row and the series page) and the trend plot's title
must give the same status and the same effect with its interval (so the same sign), all rendered
through `benchmark`'s own entry point; and each states one interval level, the same everywhere.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest

from benchmark import cli
from benchmark.datamodel.metrics import CONFIDENCE
from benchmark.datamodel.verdict import Verdict, verdict_words
from benchmark.report.words import effect

GOLDEN = Path(__file__).parent / "data" / "golden"

# The gate's verdict words and the Markdown report's section titles, in the dashboard's status words.
GATE_WORDS = {str(v).upper(): verdict_words(v).status for v in Verdict}
MD_SECTIONS = {"Regressions": "regression", "Improvements": "improvement", "Inconclusive": "inconclusive",
               "Pass": "pass", "New": "new"}  # fmt: skip


def _benchmark(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(list(argv)) == 0, argv
    return out.getvalue()


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> str:
    saved = os.environ.pop("BENCHMARK_DB_URL", None)
    db = str(tmp_path_factory.mktemp("views") / "history.sqlite")
    try:
        _benchmark(
            "import", "--as-baseline", "--db", db, str(GOLDEN / "run1.json"), str(GOLDEN / "run2.json")
        )
        yield db
    finally:
        if saved is not None:
            os.environ["BENCHMARK_DB_URL"] = saved


Key = tuple[str, str, str]  # case id, place, mode


def gate_text(db: str, run: str = "2") -> dict[Key, tuple[str, str]]:
    out = {}
    for line in _benchmark("gate", "--all", "--run", run, "--db", db).splitlines():
        m = re.match(r"(\w+)\s+(\S+) \[(\S+) (\S+)\] \S+\s+effect (.+?\))(?:  |$)", line)
        if m:
            out[m[2], m[3], m[4]] = (GATE_WORDS[m[1]], m[5])
    return out


def gate_json(db: str, run: str = "2") -> dict[Key, tuple[str, str]]:
    decisions = json.loads(_benchmark("gate", "--format", "json", "--run", run, "--db", db))["decisions"]
    return {
        (d["case_id"], d["place"], d["mode"]): (GATE_WORDS[d["verdict"].upper()],
                                                effect(d["effect"], d["ci_low"], d["ci_high"]))
        for d in decisions
    }  # fmt: skip


def markdown(db: str, run: str = "2") -> dict[Key, tuple[str, str]]:
    out, section = {}, None
    for line in _benchmark("report", "--format", "md", "--run", run, "--db", db).splitlines():
        if m := re.match(r"(?:### |<details><summary>)(\w+) \(\d+\)", line):
            section = MD_SECTIONS.get(m[1])
        elif section and (m := re.match(r"\| `([^`]+)` \| (\S+) \| (\S+) \| ([^|]+) \|", line)):
            out[m[1], m[2], m[3]] = (section, m[4].strip())
    return out


def _cells(row: str) -> list[str]:
    return [
        html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
        for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]


def dashboard(
    db: str, out: Path, run: str = "2"
) -> tuple[dict[Key, tuple[str, str]], dict[Key, tuple[str, str]]]:
    _benchmark("report", "--format", "html", "--run", run, "--out", str(out), "--db", db, "--jobs", "1")
    index, pages = {}, {}
    text = (out / "index.html").read_text()
    header = [html.unescape(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<th[^>]*>(.*?)</th>", text)]
    judged_col = header.index("Change (judged)")
    for row in re.findall(r'<tr class="series".*?</tr>', text, re.S):
        cells = _cells(row)
        key = (cells[0], cells[1], cells[2])
        index[key] = (re.search(r'data-status="([^"]+)"', row)[1], cells[judged_col])
        page = (out / re.search(r'<a href="([^"]+)"', row)[1]).read_text()
        status = re.search(r'<span>status <span class="badge"[^>]*>([^<]+)</span>', page)[1]
        change = html.unescape(re.search(r"<span>change \(judged\) <b>([^<]+)</b>", page)[1])
        pages[key] = (status, change)
    return index, pages


LEVEL = re.compile(r"intervals: (\d+)% confidence")


def stated_levels(db: str, dash: Path, run: str = "2") -> dict[str, list[str]]:
    """The interval level each view states, every time it states one (each states it once)."""
    decisions = json.loads(_benchmark("gate", "--format", "json", "--run", run, "--db", db))["decisions"]
    pages = [dash / "index.html", *sorted((dash / "series").glob("*.html"))]
    return {
        "gate": LEVEL.findall(_benchmark("gate", "--all", "--run", run, "--db", db)),
        "gate --json": sorted({f"{d['confidence']:.0%}".rstrip("%") for d in decisions}),
        "Markdown": LEVEL.findall(_benchmark("report", "--format", "md", "--run", run, "--db", db)),
        **{f"dashboard {p.name}": LEVEL.findall(p.read_text()) for p in pages},
    }


def plot_titles(db: str, out: Path) -> dict[Key, tuple[str, str]]:
    # text as text in the SVG files, so the titles can be read back
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        _benchmark("plot", "--out", str(out), "--plot-format", "svg", "--jobs", "1", "--db", db)
    titles = {}
    for svg in out.glob("*.trend.svg"):
        texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg.read_text())]
        title = next(t for t in texts if t.count(" · ") == 2 and "status" not in t)
        note = next(t for t in texts if "status: " in t)
        m = re.fullmatch(r"(\S+) · (\S+) · (\S+)", title)
        s = re.search(r"status: ([^,·]+?)(?:, (.+?\)))? ·", note)
        titles[m[1], m[2], m[3]] = (s[1], s[2] or "")
    return titles


def test_every_view_gives_each_case_the_same_status_and_effect(history, tmp_path):
    views = {
        "gate": gate_text(history),
        "gate --format json": gate_json(history),
        "Markdown": markdown(history),
        "plot titles": plot_titles(history, tmp_path / "plots"),
    }
    views["dashboard index"], views["dashboard series pages"] = dashboard(history, tmp_path / "dash")
    reference = views["gate --format json"]
    assert len(reference) == 6
    for name, view in views.items():
        assert view == reference, name
    # one interval level, the same in every view, stated once in each (a page, an output)
    levels = stated_levels(history, tmp_path / "dash")
    assert len(levels) > 6 and all(found == [f"{CONFIDENCE:.0%}".rstrip("%")] for found in levels.values()), (
        levels
    )
    # the judged effect is a number with its interval, not an empty cell
    assert all(
        re.fullmatch(r"[+-]\d+\.\d% \([+-]\d+\.\d% \.\. [+-]\d+\.\d%\)", e) for _, e in reference.values()
    )


def test_a_trend_plot_shows_each_worker_process_value_not_an_interval_pooled_over_them(history):
    from benchmark.report import trend
    from benchmark.store import open_store

    store = open_store(f"sqlite:///{history}")
    try:
        (series,) = [s for s in store.series(["abs_smoke"]) if s.mode == "static"]
    finally:
        store.close()
    stored = np.concatenate(series.process_values)
    assert stored.size == 4  # two runs of two processes each
    fig = trend.trend_plot(series)
    ax = fig.axes[0]
    (dashes,) = [c for c in ax.collections if c.get_gid() == "processes"]
    shown_us = np.sort(dashes.get_offsets()[:, 1])
    assert np.allclose(shown_us, np.sort(stored) * 1e6)
    assert not [c for c in ax.collections if c.get_gid() == "ci-band"]
