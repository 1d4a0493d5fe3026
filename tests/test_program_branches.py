"""Control flow in program cases: a step of `paddle.static.nn.cond`, `switch_case` or `case` with
`branches` (lists of steps) runs the branch its predicate picks, in static, dynamic and to_static
mode; a config gives only step lists, never a function. Real paddle on CPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from benchmark import runners
from benchmark.config import load_file

XY = {"x": {"shape": [3, 4]}, "y": {"shape": [3, 4], "low": 1.0, "high": 2.0}}
ADD, SUB, MUL, DIV = (
    [{"op": f"paddle.{name}", "inputs": ["x", "y"], "out": "r"}]
    for name in ("add", "subtract", "multiply", "divide")
)


def _program(
    name: str, ops: list, feed: dict | None = None, modes=("static", "dynamic", "to_static")
) -> dict:
    return {
        "name": name,
        "kind": "program",
        "feed": {**XY, **(feed or {})},
        "ops": ops,
        "fetch": ["result"],
        "places": ["cpu"],
        "modes": list(modes),
    }


def _cond(threshold: float) -> dict:
    return _program(
        f"cond_{int(threshold)}",
        [
            {"op": "paddle.full_like", "inputs": ["p"], "attrs": {"fill_value": threshold}, "out": "t"},
            {"op": "paddle.less_than", "inputs": ["p", "t"], "out": "pred"},
            {"op": "paddle.static.nn.cond", "inputs": ["pred"], "branches": [MUL, DIV], "out": "result"},
        ],
        feed={"p": {"shape": [1], "low": 0.0, "high": 1.0}},
    )


def _switch(index: int) -> dict:
    return _program(
        f"switch_{index}",
        [
            {"op": "paddle.full", "inputs": [], "attrs": {"shape": [1], "fill_value": index, "dtype": "int32"}, "out": "i"},
            {"op": "paddle.static.nn.switch_case", "inputs": ["i"], "branches": [ADD, SUB], "default": MUL, "out": "result"},
        ],
    )  # fmt: skip


def _case(first: bool, second: bool) -> dict:
    flag = [{"op": "paddle.full", "inputs": [], "attrs": {"shape": [1], "fill_value": v, "dtype": "bool"}, "out": n}
            for n, v in (("p1", first), ("p2", second))]  # fmt: skip
    step = {
        "op": "paddle.static.nn.case",
        "inputs": ["p1", "p2"],
        "branches": [ADD, SUB],
        "default": MUL,
        "out": "result",
    }
    return _program(f"case_{int(first)}{int(second)}", [*flag, step], modes=("static", "dynamic"))


def _load(tmp_path: Path, *cases: dict):
    path = tmp_path / "branches.yaml"
    path.write_text(yaml.safe_dump({"cases": list(cases)}, sort_keys=False))
    return load_file(path, checks=runners.config_checks())


def _result(case) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    from benchmark.runners import paddle_common as pc

    prepared = runners.prepare(case)
    try:
        prepared.step()
        return prepared.outputs()["result"], pc.make_arrays(case.spec.feed, case.spec.seed)
    finally:
        prepared.close()


@pytest.mark.parametrize(
    "config, expected",
    [
        (_cond(10), np.multiply),  # p < 10: the true branch
        (_cond(-10), np.divide),  # p < -10 is false
        (_switch(0), np.add),
        (_switch(1), np.subtract),
        (_switch(7), np.multiply),  # no branch 7: the default
        (_case(True, False), np.add),
        (_case(False, True), np.subtract),
        (_case(False, False), np.multiply),
    ],
    ids=lambda v: v["name"] if isinstance(v, dict) else "",
)
def test_the_branch_the_predicate_picks_runs_in_every_mode(tmp_path, config, expected):
    loaded = _load(tmp_path, config)
    assert not loaded.issues, [str(i) for i in loaded.issues]
    assert {c.mode for c in loaded.cases} == set(config["modes"])
    for case in loaded.cases:
        out, feed = _result(case)
        np.testing.assert_allclose(out, expected(feed["x"], feed["y"]), rtol=1e-6, err_msg=case.mode)


@pytest.mark.parametrize(
    "step, expected",
    [
        ({"op": "paddle.add", "inputs": ["x", "y"], "branches": [ADD], "out": "result"}, "only control flow"),
        ({"op": "paddle.static.nn.cond", "inputs": ["x"], "branches": [ADD], "out": "result"}, "[when true, when false]"),
        ({"op": "paddle.static.nn.cond", "inputs": ["x"], "branches": [ADD, SUB], "default": MUL, "out": "result"}, "takes no default"),
        ({"op": "paddle.static.nn.case", "inputs": ["x", "y"], "branches": [ADD], "out": "result"}, "one per pred"),
        ({"op": "paddle.static.nn.switch_case", "inputs": ["x"], "branches": [[]], "out": "result"}, "non-empty list"),
        ({"op": "paddle.static.nn.switch_case", "inputs": ["x"], "out": "result"}, "needs a list of inputs and branches"),
        (
            {"op": "paddle.static.nn.switch_case", "inputs": ["x"], "out": "result", "branches": [[
                {"op": "paddle.static.nn.switch_case", "inputs": ["x"], "out": "r", "branches": [[
                    {"op": "paddle.static.nn.switch_case", "inputs": ["x"], "out": "r", "branches": [ADD]}]]}]]},
            "more than 2",
        ),
        ({"op": "paddle.static.nn.while_loop", "inputs": ["x"], "branches": [ADD], "out": "result"}, "not on the allowlist"),
    ],
)  # fmt: skip
def test_malformed_control_flow_is_refused_with_its_field(tmp_path, step, expected):
    loaded = _load(tmp_path, _program("bad", [step]))
    lines = [str(i) for i in loaded.issues]
    assert not loaded.cases and len(lines) == 1 and expected in lines[0] and "ops.0" in lines[0], lines


def test_a_branch_sees_only_what_its_step_sees(tmp_path):
    step = {
        "op": "paddle.static.nn.switch_case",
        "inputs": ["x"],
        "branches": [[{"op": "paddle.add", "inputs": ["x", "later"], "out": "r"}]],
        "out": "result",
    }
    later = {"op": "paddle.abs", "inputs": ["x"], "out": "later"}
    loaded = _load(tmp_path, _program("scoped", [step, later], modes=("static",)))
    assert not loaded.issues
    with pytest.raises(ValueError, match=r"ops\.0\.branches\.0\.0\.inputs: variable 'later'"):
        runners.prepare(loaded.cases[0])


def test_a_branch_step_is_bound_to_its_signature(tmp_path):
    step = {
        "op": "paddle.static.nn.cond",
        "inputs": ["x"],
        "branches": [ADD, [{"op": "paddle.abs", "inputs": ["x"], "attrs": {"axis": 1}, "out": "r"}]],
        "out": "result",
    }
    lines = [str(i) for i in _load(tmp_path, _program("bound", [step])).issues]
    assert len(lines) == 1 and "ops.0.branches.1.0.attrs" in lines[0] and "axis" in lines[0], lines


def test_a_branch_step_holds_plain_values_only(tmp_path):
    step = {
        "op": "paddle.static.nn.switch_case",
        "inputs": ["x"],
        "branches": [[{"op": "paddle.sum", "inputs": ["x"], "attrs": {"__class__": 1}, "out": "r"}]],
        "out": "result",
    }
    lines = [str(i) for i in _load(tmp_path, _program("plain", [step])).issues]
    assert len(lines) == 1 and "is not a plain name" in lines[0], lines
