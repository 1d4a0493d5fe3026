"""Case selection, one function for the suite and for `benchmark compare`/`bisect`
(`benchmark.config.selection.select_cases`): places (globs), modes, tags, -k."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.compare.run import Request
from benchmark.compare.run import select_cases as compare_cases
from benchmark.compare.sides import CompareError
from benchmark.config import load_paths
from benchmark.config.selection import select_cases

ABS = Path(__file__).resolve().parents[1] / "configs" / "ops" / "abs.yaml"


@pytest.fixture(scope="module")
def cases():
    loaded, issues = load_paths([ABS])
    assert issues == []
    assert {c.mode for c in loaded} >= {"dynamic", "static"}
    return loaded


def test_places_modes_and_keyword_each_narrow_the_selection(cases):
    cpu = select_cases(cases, ["cpu"], None, None)
    assert cpu and all(c.place == "cpu" for c in cpu)
    assert select_cases(cases, ["gpu*"], None, None) == [c for c in cases if c.place.startswith("gpu")]
    static = select_cases(cases, None, None, ["static"])
    assert static and all(c.mode == "static" for c in static)
    picked = select_cases(cases, ["cpu"], None, ["static"], "abs and not bwd")
    assert picked and all(c.place == "cpu" and c.mode == "static" and "bwd" not in c.id for c in picked)
    with pytest.raises(ValueError, match="-k"):
        select_cases(cases, None, None, None, "abs and")


def test_compare_selects_as_the_suite_does_modes_included(cases):
    req = Request(a="a", b="b", configs=[str(ABS)], place="cpu", modes="static", keyword="abs")
    assert compare_cases(req) == select_cases(cases, ["cpu"], None, ["static"], "abs")
    with pytest.raises(CompareError, match="no case matches"):
        compare_cases(Request(a="a", b="b", configs=[str(ABS)], modes="nonesuch"))


def test_benchmark_compare_takes_modes_on_its_command_line(cases):
    """`benchmark compare --modes static` reaches the request as the suite's --bench-modes does."""
    from benchmark.cli import build_parser

    args = build_parser().parse_args(["compare", "--a", "a", "--b", "b", str(ABS), "--modes", "static"])
    req = Request(a=args.a, b=args.b, configs=args.configs, modes=args.modes, place=args.place)
    assert {c.mode for c in compare_cases(req)} == {"static"}
