"""Layer cases (`kind: layer`): a class from the allowlist's `layer` section, built once from plain
constructor arguments outside the timed region; its forward is the step, and backward gives its
parameters' gradients too. Config safety as for ops: a hostile or unlisted name, or arguments that
could name a file, are refused before anything is imported. Real paddle on CPU."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from benchmark import runners
from benchmark.config import load_file
from benchmark.sandbox import allowlist
from benchmark.sandbox import nn_layers as layers

PROJECT = Path(__file__).resolve().parents[1]


def _case(**fields) -> dict:
    case = {
        "name": "lin",
        "kind": "layer",
        "layer": "paddle.nn.Linear",
        "args": {"in_features": 8, "out_features": 4},
        "inputs": {"input": {"shape": [3, 8]}},
        "places": ["cpu"],
    }
    return {**case, **fields}


def _load(tmp_path: Path, *cases: dict):
    path = tmp_path / "layers.yaml"
    path.write_text(yaml.safe_dump({"cases": list(cases)}, sort_keys=False))
    return load_file(path, checks=runners.config_checks())


def _refusal(tmp_path: Path, case: dict, field: str) -> str:
    loaded = _load(tmp_path, case)
    assert not loaded.cases
    assert len(loaded.issues) == 1, [str(i) for i in loaded.issues]
    line = str(loaded.issues[0])
    assert f"field {field!r}" in line and "\n" not in line, line
    return line


def test_a_layer_runs_forward_and_backward_with_parameter_gradients(tmp_path):
    loaded = _load(
        tmp_path,
        _case(backward=[False, True], modes=["dynamic", "static", "to_static"]),
    )
    assert not loaded.issues, [str(i) for i in loaded.issues]
    by_id = {(c.case_id, c.mode): c for c in loaded.cases}
    assert sorted({c.case_id for c in loaded.cases}) == ["lin-bwd", "lin-fwd"]
    outputs = {}
    for (case_id, mode), case in by_id.items():
        prepared = runners.prepare(case)
        try:
            prepared.step()
            outputs[case_id, mode] = prepared.outputs()
        finally:
            prepared.close()
    # forward: one output of the layer's shape; backward: the input's and both parameters' gradients
    assert list(outputs["lin-fwd", "dynamic"]) == ["out"]
    assert outputs["lin-fwd", "dynamic"]["out"].shape == (3, 4)
    grads = outputs["lin-bwd", "dynamic"]
    assert sorted(grads) == ["grad_input", "grad_param0", "grad_param1", "out"]
    assert grads["grad_param0"].shape == (8, 4) and grads["grad_param1"].shape == (4,)
    # d(sum out)/d bias is the batch size for every output; the same in every mode
    np.testing.assert_allclose(grads["grad_param1"], np.full(4, 3.0), rtol=1e-6)
    for mode in ("static", "to_static"):
        np.testing.assert_allclose(outputs["lin-bwd", mode]["grad_param1"], np.full(4, 3.0), rtol=1e-6)
        assert sorted(outputs["lin-bwd", mode]) == sorted(grads)


def test_a_layer_forward_takes_attrs_and_a_recurrent_layer_runs(tmp_path):
    conv = _case(
        name="convt",
        layer="paddle.nn.Conv3DTranspose",
        args={"in_channels": 3, "out_channels": 6, "kernel_size": 3},
        inputs={"x": {"shape": [2, 3, 4, 4, 4]}},
        attrs={"output_size": [6, 6, 6]},
    )
    rnn = _case(
        name="lstm",
        layer="paddle.nn.LSTM",
        args={"input_size": 8, "hidden_size": 16, "num_layers": 2, "direction": "bidirect"},
        inputs={"inputs": {"shape": [2, 5, 8]}},
        backward=True,
        dtypes=["float64"],
    )
    loaded = _load(tmp_path, conv, rnn)
    assert not loaded.issues, [str(i) for i in loaded.issues]
    out = {}
    for case in loaded.cases:
        prepared = runners.prepare(case)
        out[case.case_id] = prepared.outputs()
    assert out["convt"]["out"].shape == (2, 6, 6, 6, 6)
    lstm = out["lstm-float64-bwd"]
    assert lstm["out"].shape == (2, 5, 32) and lstm["out"].dtype == np.float64
    assert sum(k.startswith("grad_param") for k in lstm) == 16  # 2 layers x 2 directions x 4 tensors


@pytest.mark.slow
def test_the_suite_times_a_layer_case(tmp_path):
    (tmp_path / "l.yaml").write_text(yaml.safe_dump({"cases": [_case(backward=True)]}))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmark/", "--bench-config", str(tmp_path), "--bench-quick",
         "--bench-no-store", "--bench-json", str(tmp_path / "s.json"), "-q", "-p", "no:randomly"],
        cwd=PROJECT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lin-bwd" in proc.stdout and "1 passed" in proc.stdout


@pytest.mark.parametrize(
    "fields, field, expected",
    [
        ({"layer": "paddle.nn.Layer.__init__"}, "layer", "not a plain dotted name"),
        ({"layer": "paddle.nn.Layer"}, "layer", "not on the allowlist"),  # the base class
        ({"layer": "paddle.nn.Upsample"}, "layer", "not on the allowlist"),
        ({"layer": "paddle.vision.models.resnet18"}, "layer", "not on the allowlist"),
        ({"layer": "os.system"}, "layer", "not on the allowlist"),
        (
            {"args": {"in_features": 8, "out_features": 4, "weight_attr": "/etc/passwd"}},
            "args",
            "weight_attr",
        ),
        ({"args": {"in_features": 8, "out_features": 4, "name": "x"}}, "args", "cannot set name"),
        ({"args": {"in_features": 8, "out_features": 4, "bias_attr": "../w.pdparams"}}, "args", "bias_attr"),
        (
            {
                "layer": "paddle.nn.Conv2D",
                "args": {"in_channels": 3, "out_channels": 3, "kernel_size": 1, "data_format": "../../etc/x"},
            },
            "args",
            "not a plain word",
        ),  # fmt: skip
        ({"args": {"in_features": 10**6, "out_features": 10**6}}, "args", "GiB"),
        ({"args": {"in_features": 8}}, "args", "out_features: required"),
        ({"op": "paddle.abs"}, "op", "does not apply to kind 'layer'"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_hostile_layer_cases_are_refused_before_anything_is_imported(tmp_path, fields, field, expected):
    """Each is refused with one line naming its field, and validating it imports no framework."""
    path = tmp_path / "hostile.yaml"
    path.write_text(yaml.safe_dump({"cases": [_case(**fields)]}, sort_keys=False))
    probe = textwrap.dedent(
        f"""
        import sys
        from benchmark.commands._configs import lazy_checks
        from benchmark.config import load_file
        checks, _ = lazy_checks(resolve=True)
        loaded = load_file({str(path)!r}, checks=checks)
        print([str(i) for i in loaded.issues], len(loaded.cases))
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("paddle", "torch")))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=PROJECT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    issues_line, imported = proc.stdout.strip().splitlines()[-2:]
    assert imported == "[]", f"validating a refused layer case imported {imported}"
    assert expected in issues_line and f"field {field!r}" in issues_line and issues_line.endswith(" 0"), (
        issues_line
    )


def test_constructor_arguments_are_bound_to_the_signature(tmp_path):
    line = _refusal(tmp_path, _case(args={"in_features": 8, "out_features": 4, "bias": False}), "args")
    assert "constructor" in line and "'bias'" in line
    line = _refusal(tmp_path, _case(attrs={"y": 1}), "inputs")
    assert "forward" in line and "'y'" in line


def test_every_allowlisted_layer_has_a_parameter_estimate_and_resolves():
    from benchmark.runners.paddle_ops import resolve_layer

    names = allowlist.load_allowlist().names("layer")
    assert names, "the allowlist has a layer section"
    for name in sorted(names):
        assert name.rpartition(".")[2] in layers.PARAM_COUNT, (
            f"{name}: no estimate in benchmark/sandbox/nn_layers.py"
        )
        assert isinstance(resolve_layer(name), type)


@pytest.mark.parametrize(
    "name, args",
    [
        ("Linear", {"in_features": 7, "out_features": 5}),
        ("Conv2D", {"in_channels": 4, "out_channels": 6, "kernel_size": [3, 2], "groups": 2}),
        ("Conv3DTranspose", {"in_channels": 3, "out_channels": 6, "kernel_size": 3}),
        ("BatchNorm2D", {"num_features": 5}),
        ("LayerNorm", {"normalized_shape": [4, 6]}),
        ("GroupNorm", {"num_groups": 2, "num_channels": 6}),
        ("Embedding", {"num_embeddings": 11, "embedding_dim": 3}),
        ("LSTM", {"input_size": 8, "hidden_size": 16, "num_layers": 2, "direction": "bidirect"}),
        ("GRU", {"input_size": 40, "hidden_size": 16}),
        ("GRUCell", {"input_size": 8, "hidden_size": 16}),
        ("MultiHeadAttention", {"embed_dim": 16, "num_heads": 4}),
        ("PReLU", {"num_parameters": 3}),
    ],
)
def test_the_parameter_estimate_bounds_the_real_layer(name, args):
    """The estimate is never below what paddle builds (so the memory cap holds), and not far above."""
    from benchmark.runners.paddle_ops import resolve_layer

    reason, estimate = layers.check_args(f"paddle.nn.{name}", args)
    assert reason is None
    layer = resolve_layer(f"paddle.nn.{name}")(**args)
    real = sum(int(np.prod(p.shape)) for p in layer.parameters()) + sum(
        int(np.prod(b.shape)) for b in layer.buffers()
    )
    assert real <= estimate <= 2 * real + 64, (real, estimate)
