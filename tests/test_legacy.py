"""The legacy config importer: parsing, the not-convertible report, and every shared legacy file imported,
validated and (one case per op) run on CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from benchmark import cli, legacy, runners
from benchmark.config import load_paths, tensor_bytes
from benchmark.legacy import NotConvertible, convert, convert_config, parse_shape, parse_value
from benchmark.runners.reference import check_accuracy

LEGACY_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "legacy-api-configs"
needs_legacy = pytest.mark.skipif(
    not LEGACY_DIR.is_dir(),
    reason=f"shared legacy configs not found at {LEGACY_DIR} (checkout without ../shared)",
)


def legacy_files():
    return sorted(LEGACY_DIR.glob("*.json"))


def var(shape, dtype="float32"):
    return {"type": "Variable", "dtype": dtype, "shape": shape}


def attr(type_, value):
    return {"type": type_, "value": value}


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def test_parse_shape():
    assert parse_shape("[-1L, 128L, 8L]", 4) == [4, 128, 8]
    assert parse_shape("[50L, 128L]") == [50, 128]
    assert parse_shape("[1]") == [1]
    assert parse_shape("[-1L, 1000L]") == [legacy.DEFAULT_BATCH_SIZE, 1000]
    with pytest.raises(NotConvertible, match="-1 in dimension 2"):
        parse_shape("[-1L, 2048L, -1L, -1L]")
    with pytest.raises(NotConvertible, match="not a list of integers"):
        parse_shape("[a, 3]")
    with pytest.raises(NotConvertible, match="dimension 1 is 0"):
        parse_shape("[3, 0]")


@pytest.mark.parametrize(
    ("type_", "value", "parsed"),
    [
        ("int", "-1", -1),
        ("float", "0.5", 0.5),
        ("bool", "False", False),
        ("bool", "True", True),
        ("string", "None", None),
        ("string", "forward", "forward"),
        ("list", "[2, 3]", [2, 3]),
        ("tuple", "(1,)", [1]),
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
# Conversion rules and the not-convertible report
# ---------------------------------------------------------------------------------------------


def test_op_case_fields_tolerance_repeat_and_float16():
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
    (case,), notes = convert_config(cfg, source="r.json", index=3, batch_size=2)
    assert case["name"] == "reduce_sum_legacy_3" and case["op"] == "paddle.sum" and case["kind"] == "op"
    assert case["inputs"] == {"x": {"shape": [2, 8, 128]}} and case["dtypes"] == ["float32"]
    assert case["attrs"] == {"axis": [1], "keepdim": False}
    assert case["tolerance"] == {"atol": 0.001} and "repeat hint: 100" in case["description"]
    assert case["tags"] == ["imported"] and case["places"] == ["cpu", "gpu"] and notes == []
    cfg["param_info"]["x"]["dtype"] = "float16"
    (case,), notes = convert_config(cfg, source="r.json", index=3)
    assert case["places"] == ["gpu"] and case["dtypes"] == ["float16"] and "float16: GPU only" in notes[0]


def test_elementwise_emits_add_and_multiply_and_applies_the_legacy_axis():
    cfg = {
        "config_id": 2,
        "op": "elementwise",
        "param_info": {"axis": attr("int", "0"), "x": var("[-1L, 2048L, 7L, 7L]"), "y": var("[-1L, 2048L]")},
    }
    cases, notes = convert_config(cfg, source="e.json", index=0, batch_size=4)
    assert [(c["name"], c["op"]) for c in cases] == [
        ("elementwise_add_legacy_2", "paddle.add"),
        ("elementwise_mul_legacy_2", "paddle.multiply"),
    ]
    assert cases[1]["inputs"]["y"]["shape"] == [4, 2048, 1, 1] and "attrs" not in cases[1]
    assert any("axis=0 dropped" in n for n in notes) and any("y reshaped" in n for n in notes)
    cfg["param_info"]["y"] = var("[3L, 7L]")
    with pytest.raises(NotConvertible, match="do not broadcast"):
        convert_config(cfg, source="e.json", index=0)


@pytest.mark.parametrize(
    ("cfg", "reason"),
    [
        ({"op": "conv2d", "param_info": {"x": var("[1L]")}}, "legacy op 'conv2d' has no mapping"),
        (
            {"op": "softmax", "param_info": {"x": var("[2L, 3L]"), "use_cudnn": attr("bool", "True")}},
            "unknown attribute 'use_cudnn'",
        ),
        ({"op": "softmax", "param_info": {"x": var("[2L, -1L]")}}, "-1 in dimension 1"),
        ({"op": "softmax", "param_info": {"x": var("[2L]", "complex64")}}, "dtype 'complex64'"),
        ({"op": "softmax", "param_info": {}}, "param_info is missing"),
        (
            {"op": "matmul", "param_info": {"x": var("[2L, 3L]"), "y": var("[4L, 5L]")}},
            "contracted dimensions 3 != 4",
        ),
        ({"op": "matmul", "param_info": {"x": var("[2L, 3L]")}}, "missing"),
        (
            {
                "op": "lstm",
                "param_info": {
                    "inputs": var("[4L, 5L, 6L]"),
                    "hidden_size": attr("int", "8"),
                    "direction": attr("string", "bidirect"),
                },
            },
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
            "initial states",
        ),
        (
            {
                "op": "lstm",
                "param_info": {
                    "inputs": var("[4L, 5L, 6L]"),
                    "hidden_size": attr("int", "8"),
                    "proj_size": attr("int", "4"),
                },
            },
            "unknown parameter",
        ),
    ],
)
def test_not_convertible_reasons(cfg, reason):
    with pytest.raises(NotConvertible, match=reason):
        convert_config(cfg, source="f.json", index=0)
    conv = convert([cfg], source="f.json")
    assert conv.cases == [] and len(conv.skipped) == 1
    assert str(conv.skipped[0]).startswith("f.json #0 (") and "not converted:" in str(conv.skipped[0])


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


def test_yaml_output_names_what_was_not_converted():
    conv = convert(
        [
            {"op": "softmax", "param_info": {"x": var("[2L, 3L]"), "axis": attr("int", "-1")}},
            {"op": "nope", "param_info": {}},
        ],
        source="s.json",
    )
    text = legacy.to_yaml(conv)
    assert text.startswith("# Imported by `benchmark import-legacy` from s.json")
    assert "# not converted: config #1: legacy op 'nope'" in text
    assert yaml.safe_load(text)["cases"][0]["attrs"] == {"axis": -1}


def test_command_exit_codes(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert cli.main(["import-legacy", str(bad), "--out", str(tmp_path / "out")]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    none = tmp_path / "none.json"
    none.write_text(json.dumps([{"op": "nope", "param_info": {}}]))
    assert cli.main(["import-legacy", str(none), "--out", str(tmp_path / "out")]) == 1
    assert "not converted" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["import-legacy", str(none), "--out", str(tmp_path), "--batch-size", "0"])


# ---------------------------------------------------------------------------------------------
# Every shared legacy file: import, validate, run one case per op
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    if not LEGACY_DIR.is_dir():
        pytest.skip(f"shared legacy configs not found at {LEGACY_DIR}")
    out = tmp_path_factory.mktemp("imported")
    code = cli.main(["import-legacy", *map(str, legacy_files()), "--out", str(out), "--batch-size", "2"])
    assert code == 0
    cases, issues = load_paths([str(out)], resolver=runners.op_resolver(), models=runners.model_names())
    return out, cases, issues


@needs_legacy
def test_every_legacy_file_imports_and_validates(imported, capsys):
    out, cases, issues = imported
    assert not issues, [str(i) for i in issues]
    assert {p.stem for p in out.glob("*.yaml")} == {p.stem for p in legacy_files()}
    assert all("imported" in c.tags for c in cases)
    names = {c.name for c in cases}
    for prefix in ("relu", "elementwise_add", "elementwise_mul", "matmul", "reduce_sum", "softmax", "lstm"):
        assert any(n.startswith(f"{prefix}_legacy_") for n in names), prefix
    # The two configs with -1 outside the batch dimension are reported, in the files too.
    assert "-1 in dimension 2" in (out / "elementwise.yaml").read_text()
    assert "-1 in dimension 1" in (out / "matmul.yaml").read_text()


@needs_legacy
def test_one_imported_case_per_op_runs(imported):
    _, cases, _ = imported
    smallest: dict[str, object] = {}
    for c in cases:
        if c.place != "cpu" or c.params.get("dtype", "float32") != "float32":
            continue
        if c.kind == "model" and c.config["step"] != "train":
            continue
        prefix = c.name.split("_legacy_")[0]
        size = tensor_bytes(c.config.get("inputs"))
        if prefix not in smallest or size < tensor_bytes(smallest[prefix].config.get("inputs")):
            smallest[prefix] = c
    assert set(smallest) == {
        "relu",
        "elementwise_add",
        "elementwise_mul",
        "matmul",
        "reduce_sum",
        "softmax",
        "lstm",
    }
    for case in smallest.values():
        prepared = runners.prepare(case)
        try:
            prepared.step()
            prepared.sync()
            record = check_accuracy(case, prepared)
            if case.config.get("reference"):
                assert record["status"] == "passed", (case.id, record["message"])
        finally:
            prepared.close()
