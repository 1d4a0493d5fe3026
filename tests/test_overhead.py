"""Framework overhead decomposition of a static program on the real `feed_abs_fetch` case (100x100).

Structural relations only (parts positive, the full run costs at least the resident one, the derived
costs add up); no wall-clock limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark import runners
from benchmark.config import load_file
from benchmark.runners import paddle_common
from benchmark.runners.paddle_overhead import PARTS, decompose, format_decomposition

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "programs" / "feed_abs_fetch.yaml"


def case_by_id(case_id):
    loaded = load_file(CONFIG, resolver=runners.op_resolver())
    assert not loaded.issues
    return next(c for c in loaded.cases if c.id == case_id)


@pytest.fixture(scope="module")
def decomposition():
    return decompose(case_by_id("feed_abs_fetch-100x100-cpu-static"), rounds=9)


def test_parts_are_positive_and_full_costs_at_least_resident(decomposition):
    d = decomposition
    assert set(d["parts"]) == set(PARTS)
    assert all(v > 0 for v in d["parts"].values()), d["parts"]
    assert d["parts"]["full"] >= d["parts"]["resident"]
    assert d["feed_fetch_cost"] >= 0
    assert d["checks"]["resident_matches_full"] is True  # the scope route computes the same output
    assert all(len(s) == d["rounds"] == 9 for s in d["samples"].values())
    assert d["iterations"] >= 1 and d["unit"] == "s"


def test_decomposition_is_consistent(decomposition):
    d, p = decomposition, decomposition["parts"]
    assert d["program_net_of_empty"] == pytest.approx(p["full"] - p["empty"])
    assert d["feed_fetch_cost"] == pytest.approx(p["full"] - p["resident"])
    assert d["feed_cost"] + d["fetch_cost"] == pytest.approx(d["feed_fetch_cost"])
    assert p["resident"] + d["feed_fetch_cost"] == pytest.approx(p["full"])
    assert p["empty"] + d["program_net_of_empty"] == pytest.approx(p["full"])
    for key, samples in d["samples"].items():
        assert min(samples) <= p[key] <= max(samples)
    text = format_decomposition(d)
    assert "program_net_of_empty" in text and "feed_fetch_cost" in text


def test_leaves_dynamic_mode_on_and_rejects_other_cases():
    assert paddle_common.paddle().in_dynamic_mode()
    with pytest.raises(ValueError, match="'program' case in 'static' mode"):
        decompose(
            next(c for c in load_file(CONFIG.parents[1] / "ops" / "abs.yaml").cases if c.place == "cpu")
        )
    with pytest.raises(ValueError, match="rounds"):
        decompose(case_by_id("feed_abs_fetch-100x100-cpu-static"), rounds=0)


def test_empty_program_case_decomposes_too():
    d = decompose(case_by_id("feed_fetch_empty-100x100-cpu-static"), rounds=3, iterations=5)
    assert d["iterations"] == 5 and all(v > 0 for v in d["parts"].values())
