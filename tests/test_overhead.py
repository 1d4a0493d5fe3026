"""Framework overhead decomposition of a static program on the real `feed_abs_fetch` case (100x100).

What is checked is the contract, not timings: every part is the median of its own per-round samples,
the derived costs are the documented differences of parts (so they may be negative: never clipped),
the resident route computes the case's output, and bad cases are refused. No wall-clock limits."""

from __future__ import annotations

import math
import statistics
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


def test_parts_are_medians_of_their_own_rounds(decomposition):
    d = decomposition
    assert set(d["parts"]) == set(d["samples"]) == set(d["iqr"]) == set(PARTS)
    for key, samples in d["samples"].items():
        assert len(samples) == d["rounds"] == 9
        assert all(math.isfinite(x) and x > 0 for x in samples), (key, samples)
        assert d["parts"][key] == statistics.median(samples)
    assert d["checks"]["resident_matches_full"] is True  # the scope route computes the same output
    assert d["iterations"] >= 1 and d["unit"] == "s"


def test_derived_costs_are_the_documented_differences_and_may_be_negative(decomposition):
    d, p = decomposition, decomposition["parts"]
    # module doc: program_net_of_empty = full - empty, feed_fetch_cost = full - resident,
    # fetch_cost = resident_fetch - resident, feed_cost = full - resident_fetch
    assert d["program_net_of_empty"] == p["full"] - p["empty"]
    assert d["feed_fetch_cost"] == p["full"] - p["resident"]
    assert d["fetch_cost"] == p["resident_fetch"] - p["resident"]
    assert d["feed_cost"] == p["full"] - p["resident_fetch"]
    # a part cheaper than the noise makes its difference negative, and it is shown as measured
    shown = {**d, "fetch_cost": -2.5e-6, "feed_cost": d["feed_fetch_cost"] + 2.5e-6}
    lines = {line.split()[0]: line for line in format_decomposition(shown).splitlines()[1:]}
    assert set(lines) == {*PARTS, "program_net_of_empty", "feed_fetch_cost", "feed_cost", "fetch_cost"}
    assert "-2.5" in lines["fetch_cost"]


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
