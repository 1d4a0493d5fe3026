"""The pure bisection of `benchmark bisect` (benchmark.bisect.search): real numbers, no process."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.bisect.search import INTERRUPTED, NO_ENDS, NO_STEP, STEP, UNRESOLVED, search, search_cases

BASE = 1_000_000.0


def counting(values: list[float | None]):
    calls: list[int] = []

    def measure(i: int) -> float | None:
        calls.append(i)
        return values[i]

    return measure, calls


@given(n=st.integers(2, 300), data=st.data())
@settings(max_examples=200, deadline=None)
def test_finds_the_first_worse_build_within_log2_builds(n, data):
    k = data.draw(st.integers(1, n - 1))
    values = [BASE + i % 3 for i in range(n)]  # noise far below the threshold
    for i in range(k, n):
        values[i] *= 1.05
    measure, calls = counting(values)
    r = search(n, measure, 0.01)
    assert r.status == STEP
    assert (r.good, r.bad) == (k - 1, k)
    assert len(calls) == len(set(calls)), "a build was measured twice"
    assert len(calls) <= math.ceil(math.log2(n)) + 3
    assert r.effect == pytest.approx(values[k] / values[k - 1] - 1)


@given(n=st.integers(3, 200), data=st.data())
@settings(max_examples=200, deadline=None)
def test_skips_are_searched_around(n, data):
    k = data.draw(st.integers(1, n - 1))
    skipped = data.draw(st.sets(st.integers(1, n - 2), max_size=n // 2))
    values: list[float | None] = [BASE * (1.1 if i >= k else 1.0) for i in range(n)]
    for i in skipped:
        values[i] = None
    measure, calls = counting(values)
    r = search(n, measure, 0.01)
    assert len(calls) == len(set(calls))
    assert set(r.skipped) <= skipped
    if r.status == STEP:
        assert (r.good, r.bad) == (k - 1, k)
    else:
        assert r.status == UNRESOLVED
        assert r.good is not None and r.bad is not None
        assert r.good < k <= r.bad
        assert all(i in skipped for i in range(r.good + 1, r.bad))


def test_no_step_when_the_last_build_is_not_worse():
    measure, calls = counting([BASE, BASE * 1.2, BASE * 1.2, BASE * 1.005])
    r = search(4, measure, 0.01)
    assert r.status == NO_STEP
    assert calls == [0, 3]
    assert "not worse" in r.message and "+0.50%" in r.message


def test_a_faster_range_is_no_step():
    r = search(5, lambda i: BASE * (1 - 0.1 * i), 0.01)
    assert r.status == NO_STEP


def test_step_and_revert_inside_a_worse_range_are_reported_as_measured():
    # slower at 2, faster again at 4, slower at 6: the search names one step, changes() all seen
    values = [BASE, BASE, 1.5 * BASE, 1.5 * BASE, BASE, BASE, 1.3 * BASE, 1.3 * BASE]
    measure, _ = counting(values)
    r = search(len(values), measure, 0.01)
    assert r.status == STEP
    assert values[r.bad] >= BASE * 1.01 and values[r.good] < BASE * 1.01
    assert r.bad - r.good == 1
    directions = [c.direction for c in r.changes()]
    assert directions.count("slower") >= 1
    for c in r.changes():
        assert abs(c.ratio - 1) >= 0.01


def test_skipped_ends_move_inwards():
    values = [None, BASE, BASE, BASE * 2, None]
    r = search(5, counting(values)[0], 0.01)
    assert r.status == STEP and (r.good, r.bad) == (2, 3)
    assert sorted(r.skipped) == [0, 4]


def test_nothing_measurable():
    r = search(3, lambda i: None, 0.01)
    assert r.status == NO_ENDS and r.skipped == [0, 1, 2]


def test_interrupt_keeps_what_was_measured_and_the_interval_left():
    values = [BASE] * 20 + [BASE * 2] * 12

    def measure(i):
        if len(seen) == 3:
            raise KeyboardInterrupt
        seen.append(i)
        return values[i]

    seen: list[int] = []
    r = search(len(values), measure, 0.01)
    assert r.status == INTERRUPTED
    assert sorted(r.values) == sorted(seen)
    assert r.good is not None and r.bad is not None and r.good < 20 <= r.bad
    assert f"between build {r.good} and build {r.bad}" in r.message
    assert r.to_dict()["status"] == INTERRUPTED


def test_cases_share_builds():
    n = 17
    steps = {"a": 5, "b": 12, "flat": None}
    calls: list[int] = []

    def measure_all(i):
        calls.append(i)
        return {c: BASE * (2 if k is not None and i >= k else 1) for c, k in steps.items()}

    results, order = search_cases(n, measure_all, {c: 0.01 for c in steps})
    assert calls == order and len(calls) == len(set(calls))
    assert results["a"].bad == 5 and results["b"].bad == 12
    assert results["flat"].status == NO_STEP
    assert len(calls) < 2 * (math.ceil(math.log2(n)) + 2)


def test_failed_build_skips_every_case():
    def measure_all(i):
        return None if i == 1 else {"x": BASE * (2 if i >= 3 else 1), "y": BASE * (2 if i >= 2 else 1)}

    results, order = search_cases(5, measure_all, {"x": 0.01, "y": 0.01})
    x, y = results["x"], results["y"]
    assert x.status == STEP and (x.good, x.bad) == (2, 3)
    # the step of y is at 1 or 2: build 1 could not be made, so which one stays open
    assert y.status == UNRESOLVED and (y.good, y.bad) == (0, 2) and y.skipped == [1]
    assert "between build 0 and build 2" in y.message
    assert order.count(1) == 1


def test_bad_arguments():
    with pytest.raises(ValueError):
        search(1, lambda i: 1.0, 0.01)
    with pytest.raises(ValueError):
        search(3, lambda i: 1.0, 0)
