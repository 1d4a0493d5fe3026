"""Reference checks: tolerances, comparison (NaN/inf, shapes), reference resolution and real paddle ops
against numpy and torch references, forward and backward, including deliberately wrong references."""

from __future__ import annotations

import importlib.util
import textwrap

import numpy as np
import pytest
import yaml

from benchmark import runners
from benchmark.config import load_file
from benchmark.runners import paddle_common
from benchmark.runners.accuracy import DEFAULT_TOLERANCES, compare_outputs, tolerance_for
from benchmark.runners.base import RunnerUnavailable
from benchmark.runners.reference import (
    check_accuracy,
    reference_outputs,
    resolve_reference,
    round_to_bfloat16,
    unbroadcast,
)

HAS_TORCH = importlib.util.find_spec("torch") is not None


def cases_from(tmp_path, text):
    p = tmp_path / "c.yaml"
    p.write_text(textwrap.dedent(text))
    loaded = load_file(p, resolver=runners.op_resolver(), models=runners.model_names())
    assert not loaded.issues, [str(i) for i in loaded.issues]
    return {c.id: c for c in loaded.cases}


def op_case(
    tmp_path, op, inputs, reference, *, attrs=None, backward=False, tolerance=None, modes="[dynamic]"
):
    """One op case per mode (YAML flow mappings given as strings, as in a config file)."""
    case = {
        "name": "c",
        "kind": "op",
        "op": op,
        "inputs": yaml.safe_load(inputs),
        "reference": reference,
        "backward": backward,
        "places": ["cpu"],
        "modes": yaml.safe_load(modes),
    }
    if attrs:
        case["attrs"] = yaml.safe_load(attrs)
    if tolerance:
        case["tolerance"] = yaml.safe_load(tolerance)
    return list(cases_from(tmp_path, yaml.safe_dump({"cases": [case]})).values())


def checked(case):
    prepared = runners.prepare(case)
    try:
        return check_accuracy(case, prepared)
    finally:
        prepared.close()


# ---------------------------------------------------------------------------------------------
# Pure: tolerances and comparison
# ---------------------------------------------------------------------------------------------


def test_tolerance_defaults_are_dtype_aware_and_overridable():
    assert tolerance_for("float32") == DEFAULT_TOLERANCES["float32"]
    f16, f32, f64 = tolerance_for("float16"), tolerance_for("float32"), tolerance_for("float64")
    assert tolerance_for("bfloat16")[0] >= f16[0] > f32[0] > f64[0]
    assert tolerance_for("int64") == (0.0, 0.0)
    assert tolerance_for("float32", {"atol": 1e-3}) == (f32[0], 1e-3)
    assert tolerance_for("float32", {"rtol": 0.1, "atol": 0}) == (0.1, 0.0)
    with pytest.raises(ValueError, match="unknown key"):
        tolerance_for("float32", {"atl": 1e-3})
    with pytest.raises(ValueError, match="non-negative"):
        tolerance_for("float32", {"rtol": -1})


def test_compare_reports_errors_and_passes_within_tolerance():
    exp = {"out": np.array([1.0, 2.0, 4.0])}
    res = compare_outputs(
        {"out": np.array([1.0, 2.0 + 1e-7, 4.0], dtype=np.float32)}, exp, rtol=1e-5, atol=1e-6
    )
    assert res["passed"] and res["message"].startswith("ok:")
    row = res["outputs"]["out"]
    assert row["shape_match"] and row["mismatched"] == 0 and row["max_abs_err"] < 1e-6

    res = compare_outputs({"out": np.array([1.0, 2.5, 4.0])}, exp, rtol=1e-5, atol=1e-6)
    assert not res["passed"]
    assert res["max_abs_err"] == pytest.approx(0.5) and res["max_rel_err"] == pytest.approx(0.25)
    assert "out: 1/3 elements beyond" in res["message"] and "worst at (1,)" in res["message"]


def test_relative_term_is_normwise_by_default_elementwise_on_request():
    # A reduction result that cancels to near zero keeps an absolute error at the output's scale.
    exp, act = {"o": np.array([1000.0, 1e-3])}, {"o": np.array([1000.0, 1.5e-3])}
    res = compare_outputs(act, exp, rtol=1e-5, atol=1e-6)
    assert res["passed"] and res["outputs"]["o"]["scale"] == 1000.0
    assert res["max_rel_err"] == pytest.approx(0.5) and res["max_scaled_err"] == pytest.approx(5e-7)
    res = compare_outputs(act, exp, rtol=1e-5, atol=1e-6, relative_to="element")
    assert not res["passed"] and res["relative_to"] == "element"
    with pytest.raises(ValueError, match="relative_to"):
        compare_outputs(act, exp, rtol=1, atol=1, relative_to="norm")


def test_compare_nan_inf_shape_and_missing():
    nan, inf = np.nan, np.inf
    exp = np.array([nan, inf, -inf, 1.0])
    assert compare_outputs({"o": exp.copy()}, {"o": exp}, rtol=0, atol=0)["passed"]
    for bad in (
        [0.0, inf, -inf, 1.0],
        [nan, -inf, -inf, 1.0],
        [nan, inf, -inf, nan],
        [nan, 1e308, -inf, 1.0],
    ):
        res = compare_outputs({"o": np.array(bad)}, {"o": exp}, rtol=1, atol=1)
        assert not res["passed"], bad
        assert res["outputs"]["o"]["nonfinite_mismatched"] == 1
        assert "NaN/inf" in res["message"]
    res = compare_outputs({"o": np.zeros((2, 3))}, {"o": np.zeros((3, 2))}, rtol=1, atol=1)
    assert not res["passed"] and "shape [2, 3] != reference shape [3, 2]" in res["message"]
    res = compare_outputs({}, {"grad_x": np.zeros(3)}, rtol=1, atol=1)
    assert not res["passed"] and "grad_x: missing" in res["message"]
    # 0-d outputs (a full reduction) compare too.
    assert compare_outputs({"o": np.float32(3.0)}, {"o": np.array(3.0)}, rtol=0, atol=0)["passed"]


def test_unbroadcast_and_bfloat16_rounding():
    g = np.ones((4, 3, 5))
    assert unbroadcast(g, (3, 5)).tolist() == np.full((3, 5), 4.0).tolist()
    assert unbroadcast(g, (1, 3, 1)).shape == (1, 3, 1) and unbroadcast(g, (1, 3, 1))[0, 0, 0] == 20
    x = np.array([1.0, 1.00390625, 1.01171875, 3.14159], dtype=np.float32)
    assert round_to_bfloat16(x).tolist() == [1.0, 1.0, 1.015625, 3.140625]


# ---------------------------------------------------------------------------------------------
# Resolution
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("os.system", "namespace 'os' is not allowed"),
        ("numpy.__class__", "no private, dunder"),
        ("numpy._core.x", "no private, dunder"),
        ("numpy.ndarray", "not on the allowlist"),
        ("numpy.linalg", "not on the allowlist"),
        ("numpy.load", "not on the allowlist"),
        ("numpy.test", "not on the allowlist"),
        ("numpy.abs.reduce", "namespace 'numpy.abs' is not allowed"),
        ("numpy.nosuchfunction", "not on the allowlist"),
        ("numpy", "not a plain dotted name"),
    ],
)
def test_resolve_reference_rejects(name, reason):
    with pytest.raises(ValueError, match=reason.replace(".", r"\.").replace("(", r"\(").replace(")", r"\)")):
        resolve_reference(name)


def test_resolve_reference_accepts_public_functions():
    assert resolve_reference("numpy.abs") is np.abs
    assert resolve_reference("numpy.sum") is np.sum
    assert resolve_reference("numpy.linalg.norm") is np.linalg.norm
    if HAS_TORCH:
        import torch

        assert resolve_reference("torch.nn.functional.softmax") is torch.nn.functional.softmax


# ---------------------------------------------------------------------------------------------
# Real paddle ops against references
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("modes", ["[dynamic]", "[static]"])
def test_abs_forward_and_backward_match_numpy(tmp_path, modes):
    for case in op_case(
        tmp_path, "paddle.abs", "{x: {shape: [64, 32]}}", "numpy.abs", backward=True, modes=modes
    ):
        res = checked(case)
        assert res["status"] == "passed", res["message"]
        assert set(res["outputs"]) == {"out", "grad_x"}
        assert res["max_abs_err"] == 0.0 and res["dtype"] == "float32"


def test_multiply_broadcast_with_gradients(tmp_path):
    (case,) = op_case(
        tmp_path,
        "paddle.multiply",
        "{x: {shape: [6, 16, 32]}, y: {shape: [16, 32]}}",
        "numpy.multiply",
        backward=True,
    )
    arrays = paddle_common.make_arrays(case.spec.tensors, case.spec.seed)
    expected = reference_outputs(case, arrays)
    assert expected["grad_y"].shape == (16, 32)
    np.testing.assert_allclose(expected["grad_y"], arrays["x"].astype(np.float64).sum(axis=0))
    res = checked(case)
    assert res["status"] == "passed", res["message"]
    assert set(res["outputs"]) == {"out", "grad_x", "grad_y"}


@pytest.mark.parametrize("backward", [False, True])
def test_sum_axis_keepdim(tmp_path, backward):
    cases = cases_from(
        tmp_path,
        f"""
        cases:
          - name: s
            kind: op
            op: paddle.sum
            inputs: {{x: {{shape: [4, 8, 6, 5]}}}}
            attrs: {{axis: $axis, keepdim: $keepdim}}
            grid: {{axis: [[2, 3], [1], -1], keepdim: [true, false]}}
            reference: numpy.sum
            backward: {str(backward).lower()}
            places: [cpu]
        """,
    )
    assert len(cases) == 6
    for case in cases.values():
        res = checked(case)
        assert res["status"] == "passed", (case.id, res["message"])
        assert ("grad_x" in res["outputs"]) is backward


def test_matmul_with_transpose_and_gradients(tmp_path):
    cases = op_case(
        tmp_path,
        "paddle.matmul",
        "{x: {shape: [3, 16, 8]}, y: {shape: [3, 32, 8]}}",
        "numpy.matmul",
        attrs="{transpose_x: false, transpose_y: true}",
        backward=True,
    ) + op_case(
        tmp_path,
        "paddle.matmul",
        "{x: {shape: [2, 5, 16, 8]}, y: {shape: [8, 4]}}",
        "numpy.matmul",
        backward=True,
    )
    for case in cases:
        res = checked(case)
        assert res["status"] == "passed", res["message"]
        assert set(res["outputs"]) == {"out", "grad_x", "grad_y"}


def test_wrong_reference_fails_with_a_clear_message(tmp_path):
    (case,) = op_case(tmp_path, "paddle.abs", "{x: {shape: [10, 10]}}", "numpy.negative", backward=True)
    res = checked(case)
    assert res["status"] == "failed" and res["passed"] is False
    assert res["message"].startswith("mismatch: out: ")
    assert "elements beyond rtol=1e-05 atol=1e-06" in res["message"]
    assert "grad_x" in res["message"]  # the gradient (sign vs -1) is wrong too
    (case,) = op_case(tmp_path, "paddle.exp", "{x: {shape: [10, 10]}}", "numpy.abs")
    res = checked(case)
    assert res["status"] == "failed" and "out:" in res["message"] and res["max_abs_err"] > 0.5


def test_tolerance_override_is_honoured(tmp_path):
    (strict,) = op_case(
        tmp_path, "paddle.exp", "{x: {shape: [50, 50]}}", "numpy.exp", tolerance="{rtol: 0, atol: 0}"
    )
    res = checked(strict)
    assert (
        res["status"] == "failed"
        and res["rtol"] == 0
        and res["atol"] == 0
        and "rtol=0 atol=0" in res["message"]
    )
    (default,) = op_case(tmp_path, "paddle.exp", "{x: {shape: [50, 50]}}", "numpy.exp")
    assert checked(default)["status"] == "passed"
    # |abs(x) - (-x)| <= 2 on [-1, 1]: a loose enough atol lets even a wrong reference pass.
    (loose,) = op_case(
        tmp_path, "paddle.abs", "{x: {shape: [10, 10]}}", "numpy.negative", tolerance="{atol: 3}"
    )
    res = checked(loose)
    assert res["status"] == "passed" and res["atol"] == 3 and res["rtol"] == DEFAULT_TOLERANCES["float32"][0]


def test_gradient_without_reference_is_a_note_not_a_failure(tmp_path):
    (case,) = op_case(
        tmp_path, "paddle.sqrt", "{x: {shape: [8, 8], low: 0.1, high: 1.0}}", "numpy.sqrt", backward=True
    )
    res = checked(case)
    assert res["status"] == "passed"
    assert set(res["outputs"]) == {"out"}
    assert any("gradient reference not available for numpy.sqrt" in n for n in res["notes"])
    assert "gradient reference not available" in res["message"]


def test_unmapped_attribute_and_no_reference(tmp_path):
    (case,) = op_case(
        tmp_path, "paddle.clip", "{x: {shape: [8, 8]}}", "numpy.clip", attrs="{min: -0.5, max: 0.5}"
    )
    res = checked(case)
    assert res["status"] == "error" and "attribute 'max' has no numpy equivalent" in res["message"]
    cases = cases_from(
        tmp_path, "cases: [{name: n, kind: op, op: paddle.abs, inputs: {x: {shape: [2]}}, places: [cpu]}]"
    )
    assert checked(next(iter(cases.values()))) is None


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_torch_references_with_autograd(tmp_path):
    cases = op_case(tmp_path, "paddle.abs", "{x: {shape: [16, 16]}}", "torch.abs", backward=True)
    cases += op_case(
        tmp_path,
        "paddle.sum",
        "{x: {shape: [4, 6, 5]}}",
        "torch.sum",
        attrs="{axis: [1, 2], keepdim: true}",
        backward=True,
    )
    cases += op_case(
        tmp_path,
        "paddle.nn.functional.softmax",
        "{x: {shape: [8, 10]}}",
        "torch.softmax",
        attrs="{axis: -1}",
        backward=True,
    )
    cases += op_case(
        tmp_path,
        "paddle.matmul",
        "{x: {shape: [4, 8, 3]}, y: {shape: [4, 8, 5]}}",
        "torch.matmul",
        attrs="{transpose_x: true}",
        backward=True,
    )
    for case in cases:
        res = checked(case)
        assert res["status"] == "passed", (case.spec.op, res["message"])
        assert "grad_x" in res["outputs"]


def test_missing_torch_is_unavailable_not_an_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    monkeypatch.setattr("importlib.import_module", lambda name: no_torch(name))
    with pytest.raises(RunnerUnavailable, match="torch cannot be imported here"):
        resolve_reference("torch.abs")
