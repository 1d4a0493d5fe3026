"""The optional torch runner: outputs against numpy on CPU for small inputs, places, TF32, errors.

Skipped where torch is not importable, except the test of what happens then.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from benchmark.datamodel.case import Case, Spec, Tensor
from benchmark.runners.base import RunnerUnavailable
from benchmark.runners.torch_runner import OPS, TorchRunner, parse_place, prepare


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def op_case(op, inputs, attrs=None, backward=False, place="cpu", seed=7, **extra):
    return {
        "op": op,
        "inputs": {name: {"shape": shape, "dtype": "float64"} for name, shape in inputs.items()},
        "attrs": attrs or {},
        "backward": backward,
        "place": place,
        "seed": seed,
        **extra,
    }


def run(case):
    prepared = prepare(case)
    try:
        prepared.step()
        prepared.sync()
        return prepared.outputs()
    finally:
        prepared.close()


def inputs_of(case):
    from benchmark.runners.paddle_common import make_arrays

    return make_arrays({n: Tensor.model_validate(t) for n, t in case["inputs"].items()}, case["seed"])


@pytest.mark.usefixtures("torch")
class TestOutputsAgainstNumpy:
    def test_abs_forward_and_backward(self):
        case = op_case("paddle.abs", {"x": [4, 5]}, backward=True)
        x = inputs_of(case)["x"]
        out = run(case)
        np.testing.assert_allclose(out["out"], np.abs(x))
        np.testing.assert_allclose(out["grad_x"], np.sign(x))

    def test_multiply_broadcast_forward_and_backward(self):
        case = op_case("paddle.multiply", {"x": [3, 4, 5], "y": [1, 4, 5]}, backward=True)
        arrays = inputs_of(case)
        out = run(case)
        np.testing.assert_allclose(out["out"], arrays["x"] * arrays["y"])
        np.testing.assert_allclose(out["grad_x"], np.broadcast_to(arrays["y"], (3, 4, 5)))
        np.testing.assert_allclose(out["grad_y"], arrays["x"].sum(axis=0, keepdims=True))

    @pytest.mark.parametrize("axis,keepdim", [([2, 3], True), ([1], False), (0, False)])
    def test_sum_axis_keepdim(self, axis, keepdim):
        case = op_case("paddle.sum", {"x": [2, 3, 4, 5]}, {"axis": axis, "keepdim": keepdim})
        x = inputs_of(case)["x"]
        want = x.sum(axis=tuple(axis) if isinstance(axis, list) else axis, keepdims=keepdim)
        np.testing.assert_allclose(run(case)["out"], want)

    def test_matmul_with_transpose(self):
        case = op_case("paddle.matmul", {"x": [2, 3, 4], "y": [2, 5, 4]}, {"transpose_y": True})
        a = inputs_of(case)
        np.testing.assert_allclose(run(case)["out"], a["x"] @ np.swapaxes(a["y"], -1, -2))

    def test_softmax_default_and_explicit_axis(self):
        case = op_case("paddle.nn.functional.softmax", {"x": [3, 6]}, {"axis": 0})
        x = inputs_of(case)["x"]
        e = np.exp(x - x.max(axis=0))
        np.testing.assert_allclose(run(case)["out"], e / e.sum(axis=0))
        last = run(op_case("softmax", {"x": [3, 6]}))["out"]
        np.testing.assert_allclose(last.sum(axis=-1), np.ones(3))

    def test_relu_and_a_torch_name(self):
        case = op_case("paddle.nn.functional.relu", {"x": [10]})
        np.testing.assert_allclose(run(case)["out"], np.maximum(inputs_of(case)["x"], 0))
        case = op_case("torch.tanh", {"x": [10]})
        np.testing.assert_allclose(run(case)["out"], np.tanh(inputs_of(case)["x"]))

    def test_explicit_torch_op_keeps_the_attribute_renaming(self):
        case = op_case("paddle.softmax", {"x": [4, 3]}, {"axis": 0}, torch_op="torch.softmax")
        np.testing.assert_allclose(run(case)["out"].sum(axis=0), np.ones(3))


@pytest.mark.usefixtures("torch")
class TestPrepared:
    def test_cpu_place_has_no_device_timer_or_peak_memory(self):
        prepared = prepare(op_case("abs", {"x": [3]}))
        assert prepared.device_timer is None and prepared.peak_memory is None
        assert prepared.sync() is None
        assert prepared.info["framework"] == "torch" and prepared.info["torch_op"] == "torch.abs"

    def test_inputs_follow_the_seed_and_match_the_paddle_runners(self):
        base = op_case("abs", {"x": [50]}, seed=3)
        assert np.array_equal(run(base)["out"], np.abs(inputs_of(base)["x"]))
        assert not np.array_equal(run(base)["out"], run({**base, "seed": 4})["out"])

    def test_step_does_not_accumulate_gradients(self, torch):
        prepared = prepare(op_case("abs", {"x": [8]}, backward=True))
        grads = [prepared.step()[0].clone() for _ in range(3)]
        assert all(torch.equal(grads[0], g) for g in grads)

    @pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "bool"])
    def test_dtypes(self, torch, dtype):
        case = op_case("abs" if dtype != "bool" else "torch.logical_not", {"x": [2, 3]})
        case["inputs"]["x"]["dtype"] = dtype
        out = run(case)["out"]
        assert out.shape == (2, 3)

    def test_a_case_runs_from_its_typed_spec_and_place(self):
        config = {k: v for k, v in op_case("abs", {"x": [2]}).items() if k != "place"}
        spec = Spec.model_validate({"name": "abs", "kind": "op", **config})
        case = Case(case_id="abs", place="cpu", mode="dynamic", spec=spec, config_hash="")
        assert run(case)["out"].shape == (2,)

    def test_tf32_off_by_default_and_restored_on_close(self, torch):
        matmul = torch.backends.cuda.matmul
        matmul.allow_tf32 = True
        try:
            prepared = prepare(op_case("matmul", {"x": [2, 2], "y": [2, 2]}))
            assert matmul.allow_tf32 is False and torch.backends.cudnn.allow_tf32 is False
            assert prepared.info["tf32"] is False
            prepared.close()
            assert matmul.allow_tf32 is True
            prepared = TorchRunner(tf32=True).prepare(op_case("matmul", {"x": [2, 2], "y": [2, 2]}))
            assert matmul.allow_tf32 is True and prepared.info["tf32"] is True
            prepared.close()
        finally:
            matmul.allow_tf32 = False


@pytest.mark.usefixtures("torch")
class TestUnavailableAndErrors:
    def test_gpu_place_without_cuda_is_skipped_with_reason(self, torch):
        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
        with pytest.raises(RunnerUnavailable, match=r"place gpu:0: torch .* sees no CUDA device"):
            prepare(op_case("abs", {"x": [3]}, place="gpu:0"))

    def test_unknown_op_and_unmappable_attribute(self):
        with pytest.raises(RunnerUnavailable, match="no torch equivalent"):
            prepare(op_case("paddle.nonexistent_op", {"x": [3]}))
        with pytest.raises(RunnerUnavailable, match="attribute 'axis' has no torch mapping"):
            prepare(op_case("multiply", {"x": [3], "y": [3]}, {"axis": -1}))
        with pytest.raises(ValueError, match="'torch.no_such_fn' is not on the allowlist"):
            prepare(op_case("torch.no_such_fn", {"x": [3]}))

    @pytest.mark.parametrize("name", ["torch._C._nn", "torch.__class__", "torch.nn.Linear", "torch"])
    def test_private_or_non_function_torch_names_are_rejected(self, name):
        with pytest.raises(ValueError):
            prepare(op_case(name, {"x": [3]}, torch_op=name))

    def test_a_torch_name_cannot_reach_modules_outside_torch(self):
        with pytest.raises(ValueError, match="namespace 'torch.os' is not allowed"):
            prepare(op_case("torch.os.system", {"x": [3]}, torch_op="torch.os.system"))

    def test_a_name_outside_paddle_and_torch_resolves_to_nothing(self):
        with pytest.raises(RunnerUnavailable, match="no torch equivalent"):
            prepare(op_case("os.system", {"x": [3]}))

    def test_backward_needs_a_floating_input(self):
        case = op_case("abs", {"x": [3]}, backward=True)
        case["inputs"]["x"]["dtype"] = "int32"
        with pytest.raises(RunnerUnavailable, match="floating"):
            prepare(case)


def test_places_parse():
    assert parse_place("cpu") == ("cpu", None)
    assert parse_place("gpu") == ("cuda", 0)
    assert parse_place("gpu:3") == ("cuda", 3)
    assert parse_place("cuda:1") == ("cuda", 1)
    with pytest.raises(ValueError):
        parse_place("tpu")


def test_table_targets_are_public_torch_names():
    assert all(spec.target.startswith("torch.") and "._" not in spec.target for spec in OPS.values())
    assert {"abs", "multiply", "sum", "matmul", "softmax", "nn.functional.softmax"} <= set(OPS)


def test_without_torch_the_runner_is_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    with pytest.raises(RunnerUnavailable, match="torch is not installed"):
        prepare(op_case("abs", {"x": [3]}))
