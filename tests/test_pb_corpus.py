"""The legacy op corpus in the tree (`configs/pb/`, tag `pb`): converting its sources again gives
exactly what is checked in, it validates, and it stays out of the default selection."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from benchmark.config import load_paths
from benchmark.config.schema import OPT_IN_TAGS
from benchmark.config.selection import select_cases
from benchmark.legacy.files import import_files

ROOT = Path(__file__).resolve().parents[1]
PB = ROOT / "configs" / "pb"
SOURCES = Path(__file__).parent / "data" / "legacy" / "pb"


def test_the_sources_convert_to_exactly_the_files_in_the_tree(tmp_path):
    header = (PB / "concat.yaml").read_text().splitlines()[0]
    snapshot = re.search(r"API configs, (.+)\)\.$", header)[1]  # as the corpus was made
    sources = sorted(SOURCES.glob("*.json"))
    assert len(sources) == 11
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = import_files(sources, tmp_path, tag="pb", snapshot=snapshot)
    assert status == 0
    for source in sources:
        again = (tmp_path / f"{source.stem}.yaml").read_text()
        assert again == (PB / f"{source.stem}.yaml").read_text(), source.name


def test_the_corpus_validates_and_runs_only_when_asked_for():
    cases, issues = load_paths([PB])
    assert issues == []
    assert len(cases) > 500 and all(c.tags == ("pb",) for c in cases)
    assert "pb" in OPT_IN_TAGS
    assert select_cases(cases, None, None, None) == []  # not in the default run
    assert len(select_cases(cases, ["cpu"], ["pb"], None)) == len([c for c in cases if c.place == "cpu"])
