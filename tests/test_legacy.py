"""The legacy config converter: parsing, the alias table, signature binding, the reasons of what is
not converted (the command on files, and every shared legacy file imported and run:
test_legacy_files.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from legacy_support import var

from benchmark import legacy
from benchmark.legacy import convert, convert_config
from benchmark.legacy import ops as legacy_ops
from benchmark.legacy.cases import ADJUST
from benchmark.legacy.values import NotConvertible, parse_shape, parse_value
from benchmark.runners.paddle_ops import resolve_op
from benchmark.runners.reference import NUMPY_ATTRS
from benchmark.sandbox import allowlist


def attr(type_, value):
    return {"type": type_, "value": value}


def one(cfg, **kw):
    kw.setdefault("resolve", resolve_op)
    return convert_config(cfg, source="t.json", index=0, **kw)


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def test_parse_shape():
    assert parse_shape("[-1L, 128L, 8L]", 4) == [4, 128, 8]
    assert parse_shape("[50L, 128L]") == [50, 128]
    assert parse_shape("[1]") == [1]
    assert parse_shape("[]") == []
    assert parse_shape("[-1L, 1000L]") == [legacy.DEFAULT_BATCH_SIZE, 1000]
    # -1 elsewhere: the legacy harness's unknown_dim (16 by default)
    assert parse_shape("[-1L, 2048L, -1L, -1L]", 2) == [2, 2048, 16, 16]
    assert parse_shape("[-1L, 2048L, -1L]", 2, 5) == [2, 2048, 5]
    assert parse_shape("[-1L, 33L, 2048L", 2) == [2, 33, 2048]  # a corpus shape lacks its "]"
    with pytest.raises(NotConvertible, match="not a list of integers") as e:
        parse_shape("[a, 3]")
    assert e.value.reason == legacy_ops.SHAPE
    with pytest.raises(NotConvertible, match="dimension 1 is 0"):
        parse_shape("[3, 0]")


@pytest.mark.parametrize(
    ("type_", "value", "parsed"),
    [
        ("int", "-1", -1),
        ("int32", "100", 100),
        ("long", "128L", 128),
        ("float", "0.5", 0.5),
        ("float32", "1e-05", 1e-05),
        ("float", "inf", float("inf")),
        ("bool", "False", False),
        ("bool", "True", True),
        ("string", "None", None),
        ("int", "None", None),
        ("string", "forward", "forward"),
        ("list", "[2, 3]", [2, 3]),
        ("list", "[7L, 7L]", [7, 7]),
        ("tuple", "(1,)", [1]),
        ("tuple", "(33L, 33L)", [33, 33]),
    ],
)
def test_parse_value(type_, value, parsed):
    assert parse_value(type_, value) == parsed


@pytest.mark.parametrize(
    ("type_", "value", "reason"),
    [
        ("int", "x", "does not parse"),
        ("bool", "yes", "expected True or False"),
        ("list", "__import__('os')", "not a literal list"),
        ("list", "['a']", "list of numbers"),
        ("dtype", "float32", "not supported"),
    ],
)
def test_parse_value_rejects(type_, value, reason):
    with pytest.raises(NotConvertible, match=reason):
        parse_value(type_, value)


# ---------------------------------------------------------------------------------------------
# Conversion rules
# ---------------------------------------------------------------------------------------------


def test_family_case_fields_tolerance_repeat_and_float16():
    cfg = {
        "op": "reduce",
        "param_info": {
            "x": var("[-1L, 8L, 128L]"),
            "axis": attr("list", "[1]"),
            "keepdim": attr("bool", "False"),
        },
        "atol": 0.001,
        "repeat": 100,
    }
    cases, notes = convert_config(cfg, source="r.json", index=3, batch_size=2)  # no resolver: table only
    assert [(c["name"], c["op"], c["reference"]) for c in cases] == [
        ("reduce_sum_legacy_3", "paddle.sum", "numpy.sum"),
        ("reduce_mean_legacy_3", "paddle.mean", "numpy.mean"),
        ("reduce_max_legacy_3", "paddle.max", "numpy.max"),
        ("reduce_min_legacy_3", "paddle.min", "numpy.min"),
        ("reduce_prod_legacy_3", "paddle.prod", "numpy.prod"),
    ]
    case = cases[0]
    assert (
        case["kind"] == "op"
        and case["inputs"] == {"x": {"shape": [2, 8, 128]}}
        and case["dtypes"] == ["float32"]
    )
    assert case["attrs"] == {"axis": [1], "keepdim": False}
    assert case["tolerance"] == {"atol": 0.001} and "repeat hint: 100" in case["description"]
    assert case["tags"] == ["imported"] and case["places"] == ["cpu", "gpu"] and notes == []
    cfg["param_info"]["x"]["dtype"] = "float16"
    cases, notes = convert_config(cfg, source="r.json", index=3)
    assert (
        cases[0]["places"] == ["gpu"]
        and cases[0]["dtypes"] == ["float16"]
        and "float16: GPU only" in notes[0]
    )


def test_elementwise_family_applies_the_legacy_axis():
    cfg = {
        "config_id": 2,
        "op": "elementwise",
        "param_info": {"axis": attr("int", "0"), "x": var("[-1L, 2048L, 7L, 7L]"), "y": var("[-1L, 2048L]")},
    }
    cases, notes = one(cfg, batch_size=4)
    assert [c["name"] for c in cases][:3] == [
        "elementwise_add_legacy_2",
        "elementwise_subtract_legacy_2",
        "elementwise_multiply_legacy_2",
    ]
    assert {c["op"] for c in cases} >= {"paddle.add", "paddle.multiply", "paddle.mod"}
    assert all(c["inputs"]["y"]["shape"] == [4, 2048, 1, 1] and "attrs" not in c for c in cases)
    assert any("axis dropped" in n for n in notes) and any("y reshaped" in n for n in notes)
    # mod has no reference (float remainders near a multiple of y differ between float32 and float64)
    assert [c.get("reference") for c in cases if c["op"] == "paddle.mod"] == [None]
    cfg["param_info"]["y"] = var("[3L, 7L]")
    with pytest.raises(NotConvertible, match="do not broadcast") as e:
        one(cfg)
    assert e.value.reason == legacy_ops.SHAPE


def test_generic_resolution_renames_and_signature_binding():
    # not in the alias table: paddle.nn.functional / paddle / paddle.linalg, first one admitted
    (case,), _ = one({"op": "flip", "param_info": {"x": var("[4L, 5L]"), "axis": attr("int", "1")}})
    assert case["op"] == "paddle.flip" and case["attrs"] == {"axis": 1} and case["reference"] == "numpy.flip"
    (case,), _ = one({"op": "gelu", "param_info": {"x": var("[4L]"), "approximate": attr("bool", "True")}})
    assert case["op"] == "paddle.nn.functional.gelu"
    # renamed parameter (alias table) and a constant the legacy test passed (layer_norm's shape)
    (case,), _ = one(
        {"op": "lerp", "param_info": {"x": var("[4L]"), "y": var("[4L]"), "w": attr("float32", "0.5")}}
    )
    assert case["attrs"] == {"weight": 0.5}
    (case,), _ = one(
        {"op": "layer_norm", "param_info": {"x": var("[-1L, 4L, 8L]"), "epsilon": attr("float", "1e-5")}}
    )
    assert case["attrs"] == {"epsilon": 1e-5, "normalized_shape": [4, 8]}
    # the legacy test's own fix-ups: expand's target shape gets x's batch dimension
    (case,), notes = one(
        {"op": "expand", "param_info": {"x": var("[-1L, 5L, 1L]"), "shape": attr("list", "[5L, 3L]")}}
    )
    assert case["attrs"] == {"shape": [16, 5, 3]} and "batch dimension prepended" in notes[0]
    # an op with kernels for one place only
    (case,), _ = one(
        {
            "op": "fused_rotary_position_embedding",
            "param_info": {"q": var("[1L, 8L, 2L, 4L]"), "k": var("[1L, 8L, 2L, 4L]")},
        }
    )
    assert case["places"] == ["gpu"]
    # index inputs get the generator of the indexed dimension (configs/index_inputs.yaml)
    (case,), _ = one(
        {
            "op": "gather",
            "param_info": {"x": var("[6L, 9L]"), "index": var("[4L]", "int32"), "axis": attr("int", "1")},
        }
    )
    assert case["inputs"]["index"] == {"shape": [4], "dtype": "int32", "index": {"of": "x", "dim": 1}}
    # a parameter the function does not take is reported, never passed
    with pytest.raises(NotConvertible, match="unexpected keyword argument 'eps'") as e:
        one({"op": "softmax", "param_info": {"x": var("[2L, 3L]"), "eps": attr("float", "1e-5")}})
    assert e.value.reason == legacy_ops.PARAM
    # without paddle (no resolver), only the alias table converts
    with pytest.raises(NotConvertible, match="not in the alias table") as e:
        one({"op": "flip", "param_info": {"x": var("[4L]")}}, resolve=None)
    assert e.value.reason == legacy_ops.UNKNOWN_OP


@pytest.mark.parametrize(
    ("cfg", "reason", "message"),
    [
        (
            {"op": "no_such_op", "param_info": {"x": var("[1L]")}},
            legacy_ops.UNKNOWN_OP,
            "no admitted paddle function",
        ),
        (
            {"op": "softmax", "param_info": {"x": var("[2L, 3L]"), "data_layout": attr("string", "NCHW")}},
            legacy_ops.PARAM,
            "data_layout",
        ),
        (
            {"op": "softmax", "param_info": {"x": var("[2L]", "complex64")}},
            legacy_ops.DTYPE,
            "dtype 'complex64'",
        ),
        ({"op": "softmax", "param_info": {}}, legacy_ops.MALFORMED, "param_info is missing"),
        ({"op": ["softmax"], "param_info": {}}, legacy_ops.MALFORMED, "expected the legacy op name"),
        (
            {"op": "matmul", "param_info": {"x": var("[2L, 3L]"), "y": var("[4L, 5L]")}},
            legacy_ops.SHAPE,
            "contracted dimensions 3 != 4",
        ),
        (
            {"op": "matmul", "param_info": {"x": var("[2L, 3L]")}},
            legacy_ops.PARAM,
            "missing a required argument",
        ),
        (
            {
                "op": "concat",
                "param_info": {"x": {"type": "list<Variable>", "x0": {"type": "int", "value": "1"}}},
            },
            legacy_ops.MALFORMED,
            "whose items are not all tensors",
        ),
        ({"op": "cond", "param_info": {"input": var("[1L]")}}, legacy_ops.PARAM, "input 'x' is missing"),
        (
            {"op": "affine_channel", "param_info": {"x": var("[1L]")}},
            legacy_ops.REMOVED,
            "no API in paddle 3",
        ),
        (
            {"op": "squared_l2_norm", "param_info": {"x": var("[1L]")}},
            legacy_ops.PRIVATE,
            "paddle._C_ops.squared_l2_norm",
        ),
        (
            {
                "op": "one_hot",
                "param_info": {"x": var("[4L]", "int64"), "allow_out_of_range": attr("bool", "True")},
            },
            legacy_ops.PARAM,
            "allow_out_of_range=True",
        ),
        (
            {
                "op": "lstm",
                "param_info": {
                    "inputs": var("[4L, 5L, 6L]"),
                    "hidden_size": attr("int", "8"),
                    "direction": attr("string", "bidirect"),
                },
            },
            legacy_ops.MODEL,
            "direction 'bidirect'",
        ),
        (
            {
                "op": "lstm",
                "param_info": {
                    "inputs": var("[4L, 5L, 6L]"),
                    "hidden_size": attr("int", "8"),
                    "inital_states": var("[1L, 4L, 9L]"),
                },
            },
            legacy_ops.MODEL,
            "initial states",
        ),
    ],
)
def test_not_convertible_reasons(cfg, reason, message):
    with pytest.raises(NotConvertible, match=message) as e:
        one(cfg)
    assert e.value.reason == reason and reason in legacy_ops.REASONS
    conv = convert([cfg], source="f.json", resolve=resolve_op)
    assert conv.cases == [] and len(conv.skipped) == 1 and conv.skipped[0].reason == reason
    assert str(conv.skipped[0]).startswith("f.json #0 (") and f"not converted ({reason})" in str(
        conv.skipped[0]
    )


def test_lstm_maps_onto_the_model_builder():
    cfg = {
        "op": "lstm",
        "param_info": {
            "inputs": var("[20L, 10L, 30L]"),
            "inital_states": var("[2L, 20L, 40L]"),
            "sequence_length": attr("int", "10"),
            "hidden_size": attr("int", "40"),
            "num_layers": attr("int", "2"),
            "direction": attr("string", "forward"),
        },
    }
    (case,), notes = convert_config(cfg, source="lstm.json", index=0)
    assert case["kind"] == "model" and case["model"] == "lstm" and case["step"] == ["train", "infer"]
    assert case["args"] == {
        "batch_size": 20,
        "seq_len": 10,
        "input_size": 30,
        "hidden_size": 40,
        "num_layers": 2,
    }
    assert any("zero initial states" in n for n in notes)


def test_alias_table_is_data_the_allowlist_and_references_agree_with():
    assert set(NUMPY_ATTRS) == legacy_ops.REFERENCE_ATTRS
    for op, entry in legacy_ops.OPS.items():
        assert set(entry) <= {
            "api",
            "apis",
            "rename",
            "drop",
            "drop_default",
            "set",
            "shape_attrs",
            "extra_inputs",
            "flag_inputs",
            "ranges",
            "values",
            "layer",
            "args",
            "program",
            "references",
            "adjust",
            "places",
            "skip",
            "note",
        }, op
        if "skip" in entry:
            assert entry["skip"][0] in legacy_ops.REASONS, op
        for ref in (entry.get("references") or {}).values():
            assert allowlist.check("reference", ref) is None, (op, ref)
        if "layer" in entry:
            assert allowlist.check("layer", entry["layer"]) is None, op
            assert set(entry) & {"api", "apis", "skip"} == set() and "args" in entry, op
        if entry.get("adjust"):
            assert entry["adjust"] in ADJUST, op
        # ranges and extra inputs name today's parameters (they apply after the renames)
        assert not set(entry.get("ranges") or {}) & set(entry.get("rename") or {}), op


def test_the_converter_does_not_import_paddle():
    code = "import sys, benchmark.legacy, benchmark.legacy.ops; assert 'paddle' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_yaml_output_names_what_was_not_converted_and_has_no_aliases():
    conv = convert(
        [
            {"op": "logical", "param_info": {"x": var("[2L, 3L]", "bool"), "y": var("[2L, 3L]", "bool")}},
            {"op": "nope", "param_info": {"x": var("[1L]")}},
        ],
        source="s.json",
        resolve=resolve_op,
    )
    text = legacy.to_yaml(conv)
    assert text.startswith("# Imported by `benchmark import-legacy` from s.json")
    assert "# not converted: config #1 (unknown op): legacy op 'nope'" in text
    assert "&id" not in text and "*id" not in text  # configs may not contain anchors or aliases
    assert [c["op"] for c in yaml.safe_load(text)["cases"]] == [
        "paddle.logical_and",
        "paddle.logical_or",
        "paddle.logical_xor",
    ]


def test_reason_table():
    reports = [
        legacy.Report("a", 0, "x", "converted", ""),
        legacy.Report("a", 1, "y", "skipped", "m", reason=legacy_ops.UNKNOWN_OP),
        legacy.Report("a", 2, "z", "skipped", "m", reason=legacy_ops.UNKNOWN_OP),
    ]
    table = legacy.format_reason_table(legacy.reason_counts(reports))
    lines = table.splitlines()
    assert lines[1].split() == ["converted", "1", "33.3%"]
    assert lines[2].split() == ["unknown", "op", "2", "66.7%"] and lines[-1].split() == ["total", "3"]
