"""benchmark.analysis.common_shift: each run's common shift, from the other series of the run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmark.analysis.common_shift import MIN_OTHERS, leave_one_out_median, run_shifts


def test_a_run_where_every_series_moved_together_is_its_shift_and_a_series_own_step_is_not():
    rng = np.random.default_rng(0)
    levels = {f"s{i}": 10.0 * (i + 1) for i in range(6)}
    machine = {1: 1.0, 2: 1.3, 3: 1.0, 4: 1.0}  # run 2: the machine 30% slower
    series = {
        k: {r: lv * m * math.exp(rng.normal(0, 0.002)) * (1.5 if (k == "s0" and r == 4) else 1.0)
            for r, m in machine.items()}
        for k, lv in levels.items()
    }  # fmt: skip
    shifts = run_shifts(series)
    for k in levels:
        assert shifts[k][2] == pytest.approx(math.log(1.3), abs=0.01)  # removed from every series
        assert abs(shifts[k][1]) < 0.01 and abs(shifts[k][3]) < 0.01
    # s0's own +50% on run 4 is not part of its shift (the others' median), nor of theirs much
    assert abs(shifts["s0"][4]) < 0.01
    assert all(abs(shifts[k][4]) < 0.01 for k in levels)


def test_no_shift_without_enough_other_series():
    three = {f"s{i}": {1: 1.0, 2: 2.0} for i in range(MIN_OTHERS)}
    assert run_shifts(three) == {}
    four = {f"s{i}": {1: 1.0, 2: 2.0} for i in range(MIN_OTHERS + 1)}
    four["s3"] = {1: 1.0}  # s3 missing from run 2: the others have only 2 others there
    shifts = run_shifts(four)
    assert 2 not in shifts["s0"] and 2 not in shifts["s3"]
    assert leave_one_out_median([0.1, 0.2, 0.3, 0.4], 0) == pytest.approx(0.3)
    assert leave_one_out_median([0.1, 0.2, 0.3], 0) is None
