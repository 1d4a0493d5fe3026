"""Tensor-list inputs: `inputs: {x: {tensors: [...]}}` hands the op one list of generated tensors
(paddle.concat, paddle.stack, paddle.add_n, ...), each with its own shape and dtype; a grid may vary
how many. Real paddle on CPU, real numpy references."""

from __future__ import annotations

import numpy as np
import pytest

from benchmark import runners
from benchmark.config import load_file
from benchmark.config.schema import MAX_LIST_TENSORS
from benchmark.runners.reference import check_accuracy

CONCAT = """
cases:
  - name: cat
    kind: op
    op: paddle.concat
    inputs:
      x:
        tensors:
          - {shape: [4, 6, 3]}
          - {shape: [4, 2, 3]}
          - {shape: [4, 5, 3], dtype: float32}
    attrs: {axis: 1}
    backward: [false, true]
    places: [cpu]
    modes: [dynamic, static]
    reference: numpy.concatenate
  - name: stk
    kind: op
    op: paddle.stack
    inputs:
      x: {tensors: $parts}
    grid:
      parts:
        - [{shape: [3, 5]}, {shape: [3, 5]}]
        - [{shape: [3, 5]}, {shape: [3, 5]}, {shape: [3, 5]}, {shape: [3, 5]}]
    places: [cpu]
    reference: numpy.stack
"""


def _load(tmp_path, text: str):
    path = tmp_path / "lists.yaml"
    path.write_text(text)
    return load_file(path, checks=runners.config_checks())


def test_a_tensor_list_reaches_the_op_as_one_list_and_matches_its_reference(tmp_path):
    loaded = _load(tmp_path, CONCAT)
    assert loaded.issues == []
    assert len(loaded.cases) == 4 + 2  # cat: fwd/bwd x dynamic/static; stk: two grid points
    for case in loaded.cases:
        parts = case.spec.lists["x"]
        assert list(case.spec.inputs) == parts  # one generated input per tensor, in order
        prepared = runners.prepare(case)
        try:
            prepared.step()
            record = check_accuracy(case, prepared)
        finally:
            prepared.close()
        assert record["status"] == "passed", (case.id, record)
    stacked = [c for c in loaded.cases if c.name == "stk"]
    assert sorted(len(c.spec.lists["x"]) for c in stacked) == [2, 4]  # the grid varies N


def test_each_tensor_of_a_list_gets_its_gradient(tmp_path):
    (case,) = [
        c
        for c in _load(tmp_path, CONCAT).cases
        if c.name == "cat" and c.spec.backward and c.mode == "dynamic"
    ]
    prepared = runners.prepare(case)
    try:
        outputs = prepared.outputs()
    finally:
        prepared.close()
    assert sorted(outputs) == ["grad_x__0", "grad_x__1", "grad_x__2", "out"]
    assert outputs["out"].shape == (4, 13, 3)
    for i, rows in enumerate((6, 2, 5)):  # d(sum)/d(part) of a concat is ones of the part's shape
        assert np.array_equal(outputs[f"grad_x__{i}"], np.ones((4, rows, 3), dtype=np.float32))


@pytest.mark.parametrize(
    "x, field, message",
    [
        ("{tensors: []}", "inputs.x", "expected 1 to"),
        ("{tensors: [{shape: [2]}], shape: [2]}", "inputs.x", "no shape or index beside tensors"),
        ("{tensors: [{tensors: [{shape: [2]}]}]}", "inputs.x", "cannot be a list itself"),
        ("{tensors: [{shape: [0]}]}", "inputs.x__0.shape", "expected positive integers"),
        ("{tensors: [{shape: [2], colour: red}]}", "inputs.x.tensors.0.colour", "unknown field"),
    ],
)
def test_a_bad_tensor_list_is_one_line_naming_the_field(tmp_path, x, field, message):
    loaded = _load(
        tmp_path,
        "cases:\n  - {name: c, kind: op, op: paddle.concat, places: [cpu], inputs: {x: " + x + "}}\n",
    )
    assert len(loaded.issues) == 1, [str(i) for i in loaded.issues]
    assert loaded.issues[0].field == field and message in loaded.issues[0].message, str(loaded.issues[0])


def test_tensors_count_toward_the_limits_before_anything_is_generated(tmp_path):
    many = ", ".join(["{shape: [2]}"] * (MAX_LIST_TENSORS + 1))
    loaded = _load(
        tmp_path,
        "cases:\n  - {name: c, kind: op, op: paddle.concat, places: [cpu], inputs: {x: {tensors: ["
        + many
        + "]}}}\n",
    )
    assert loaded.cases == [] and f"expected 1 to {MAX_LIST_TENSORS} tensors" in str(loaded.issues[0])
    # 40 tensors of 256 MiB each (10 GiB): over the memory ceiling as a whole, refused at load time
    big = ", ".join(["{shape: [8192, 8192]}"] * 40)
    loaded = _load(
        tmp_path,
        "cases:\n  - {name: c, kind: op, op: paddle.concat, places: [cpu], inputs: {x: {tensors: ["
        + big
        + "]}}}\n",
    )
    assert loaded.cases == [] and "GiB" in str(loaded.issues[0]), [str(i) for i in loaded.issues]
