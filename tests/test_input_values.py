"""Inputs whose values an op needs beyond a uniform range (`values:`): sorted segment ids, positive
definite matrices, boxes inside an image and counts that add up; and a tensor list passed as an
op's *varargs (paddle.einsum). Real paddle on CPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from benchmark import runners
from benchmark.config import load_file
from benchmark.runners import paddle_common as pc


def _load(tmp_path: Path, *cases: dict):
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump({"cases": list(cases)}, sort_keys=False))
    return load_file(path, checks=runners.config_checks())


def _op(name: str, op: str, inputs: dict, **fields) -> dict:
    return {"name": name, "kind": "op", "op": op, "inputs": inputs, "places": ["cpu"], **fields}


CASES = [
    _op(
        "seg",
        "paddle.geometric.segment_sum",
        {
            "data": {"shape": [400, 8]},
            "segment_ids": {
                "shape": [400],
                "dtype": "int64",
                "index": {"of": "data", "dim": 0},
                "values": "sorted",
            },
        },
    ),
    _op(
        "chol",
        "paddle.linalg.cholesky",
        {"x": {"shape": [3, 12, 12], "values": "positive_definite"}},
        backward=True,
    ),
    _op(
        "roi",
        "paddle.vision.ops.roi_align",
        {
            "x": {"shape": [3, 2, 40, 60]},
            "boxes": {"shape": [31, 4], "values": {"boxes_in": "x", "side": [5, 9]}},
            "boxes_num": {"shape": [3], "dtype": "int32", "values": {"sum_of": "boxes"}},
        },
        attrs={"output_size": 3},
    ),
    _op(
        "ein",
        "paddle.einsum",
        {"operands": {"tensors": [{"shape": [2, 3, 4]}, {"shape": [2, 4, 5]}]}},
        attrs={"equation": "bij,bjk->bik"},
        backward=True,
        modes=["dynamic", "static"],
    ),
]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    loaded = _load(tmp_path_factory.mktemp("values"), *CASES)
    assert not loaded.issues, [str(i) for i in loaded.issues]
    return {(c.case_id, c.mode): c for c in loaded.cases}


def test_generated_values_are_what_the_op_needs(loaded):
    seg = pc.make_arrays(loaded["seg", "dynamic"].spec.inputs, 1)["segment_ids"]
    assert np.all(np.diff(seg) >= 0) and seg.min() >= 0 and seg.max() < 400
    x = pc.make_arrays(loaded["chol-bwd", "dynamic"].spec.inputs, 1)["x"]
    np.testing.assert_allclose(x, np.swapaxes(x, -1, -2), rtol=1e-6)
    assert np.linalg.eigvalsh(x).min() >= 0.99
    arrays = pc.make_arrays(loaded["roi", "dynamic"].spec.inputs, 1)
    boxes, counts = arrays["boxes"], arrays["boxes_num"]
    sides = np.concatenate([boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]])
    assert sides.min() >= 5 - 1e-4 and sides.max() <= 9 + 1e-4
    assert boxes[:, [0, 1]].min() >= 0 and boxes[:, 2].max() <= 60 and boxes[:, 3].max() <= 40
    assert counts.tolist() == [11, 10, 10] and counts.dtype == np.int32


def test_the_ops_run_on_their_values(loaded):
    outputs = {}
    for key, case in loaded.items():
        prepared = runners.prepare(case)
        try:
            prepared.step()
            outputs[key] = prepared.outputs()
        finally:
            prepared.close()
    assert outputs["seg", "dynamic"]["out"].shape[1] == 8
    assert np.isfinite(outputs["chol-bwd", "dynamic"]["grad_x"]).all()
    assert outputs["roi", "dynamic"]["out"].shape == (31, 2, 3, 3)
    # einsum got its two tensors unpacked as *operands, in both modes, with both gradients
    for mode in ("dynamic", "static"):
        ein = outputs["ein-bwd", mode]
        assert ein["out"].shape == (2, 3, 5)
        assert ein["grad_operands__0"].shape == (2, 3, 4) and ein["grad_operands__1"].shape == (2, 4, 5)


@pytest.mark.parametrize(
    "inputs, expected",
    [
        ({"x": {"shape": [3, 4, 5], "values": "positive_definite"}}, "square float matrices"),
        ({"x": {"shape": [4], "values": "symmetric"}}, "inputs.x.values"),
        ({"x": {"shape": [2, 4]}, "b": {"shape": [3, 4], "values": {"boxes_in": "x"}}}, "4-d NCHW"),
        ({"x": {"shape": [1, 1, 8, 8]}, "b": {"shape": [3, 4], "values": {"boxes_in": "y"}}}, "'y' is not another input"),
        ({"x": {"shape": [1, 1, 8, 8]}, "b": {"shape": [3, 4], "values": {"boxes_in": "x", "side": [4, 9]}}}, "fit in the image"),
        ({"x": {"shape": [3, 4]}, "n": {"shape": [2], "values": {"sum_of": "x"}}}, "1-d integer"),
        ({"x": {"shape": [3, 4], "values": {"boxes_in": "x", "sum_of": "x"}}}, "one of boxes_in, sum_of"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_with_their_field(tmp_path, inputs, expected):
    loaded = _load(tmp_path, _op("bad", "paddle.add_n", inputs))
    assert not loaded.cases
    lines = [str(i) for i in loaded.issues]
    assert len(lines) == 1 and expected in lines[0] and "inputs." in lines[0], lines


def test_the_timed_step_reads_no_signature(loaded, monkeypatch):
    """Whether a tensor list is the op's *varargs is decided once, when the case is prepared: the
    timed step of an op case calls the op and nothing that introspects it (which would add its own
    instructions and time to every iteration)."""
    import inspect

    for key in (("seg", "dynamic"), ("ein-bwd", "dynamic")):
        prepared = runners.prepare(loaded[key])
        calls = []
        original = inspect.signature
        monkeypatch.setattr(
            inspect,
            "signature",
            lambda *a, calls=calls, original=original, **k: calls.append(a) or original(*a, **k),
        )
        try:
            prepared.step()
        finally:
            monkeypatch.setattr(inspect, "signature", original)
            prepared.close()
        assert calls == [], key
