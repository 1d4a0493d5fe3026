"""The legacy config importer: parsing, the alias table, signature binding, the reasons of what is not
converted, and every shared legacy file plus our own fixtures of other ops imported, validated and
run on CPU (one iteration, with the accuracy check where a reference is set)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchmark import allowlist, cli, legacy, runners
from benchmark.config import load_paths, tensor_bytes
from benchmark.legacy import convert, convert_config
from benchmark.legacy import ops as legacy_ops
from benchmark.legacy.cases import ADJUST
from benchmark.legacy.values import NotConvertible, parse_shape, parse_value
from benchmark.runners.paddle_ops import resolve_op
from benchmark.runners.reference import NUMPY_ATTRS, check_accuracy

LEGACY_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "legacy-api-configs"
FIXTURES = Path(__file__).resolve().parent / "data" / "legacy"
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
    # index inputs get a value range inside the indexed dimension
    (case,), _ = one(
        {
            "op": "gather",
            "param_info": {"x": var("[6L, 9L]"), "index": var("[4L]", "int32"), "axis": attr("int", "1")},
        }
    )
    assert case["inputs"]["index"] == {"shape": [4], "dtype": "int32", "low": 0, "high": 9}
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
            {"op": "concat", "param_info": {"x": {"type": "list<Variable>", "x0": var("[2L]")}}},
            legacy_ops.LIST_INPUT,
            "list of tensors",
        ),
        ({"op": "cond", "param_info": {"input": var("[1L]")}}, legacy_ops.NEEDS_LAYER, "static program"),
        ({"op": "roi_align", "param_info": {"x": var("[1L]")}}, legacy_ops.NEEDS_VALUES, "boxes_num"),
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
            "ranges",
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


def test_command_exit_codes(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert cli.main(["import-legacy", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "not valid JSON" in err and "Traceback" not in err
    scalar = tmp_path / "scalar.json"
    scalar.write_text("42")
    assert cli.main(["import-legacy", str(scalar), "--out", str(tmp_path / "out")]) == 2
    assert "expected a JSON list of legacy configs, got int" in capsys.readouterr().err
    none = tmp_path / "none.json"
    none.write_text(json.dumps([{"op": "nope", "param_info": {"x": var("[1L]")}}, "junk"]))
    assert cli.main(["import-legacy", str(none), "--out", str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    assert "not converted (unknown op)" in captured.err and "not converted (malformed config)" in captured.err
    assert "unknown op" in captured.out and "malformed config" in captured.out  # the closing table
    for option in ("--batch-size", "--unknown-dim"):
        with pytest.raises(SystemExit):
            cli.main(["import-legacy", str(none), "--out", str(tmp_path), option, "0"])


# ---------------------------------------------------------------------------------------------
# Files: import with the command, validate, run one iteration of every CPU case
# ---------------------------------------------------------------------------------------------


def _import(tmp_path_factory, files, name):
    out = tmp_path_factory.mktemp(name)
    code = cli.main(["import-legacy", *map(str, files), "--out", str(out), "--batch-size", "2"])
    assert code == 0
    cases, issues = load_paths([str(out)], checks=runners.config_checks())
    return out, cases, issues


def _run_one_iteration(case):
    prepared = runners.prepare(case)
    try:
        prepared.step()
        prepared.sync()
        record = check_accuracy(case, prepared)
        if case.config.get("reference"):
            assert record["status"] == "passed", (case.id, record["message"])
        return record
    finally:
        prepared.close()


@pytest.fixture(scope="module")
def fixtures_imported(tmp_path_factory):
    return _import(tmp_path_factory, sorted(FIXTURES.glob("*.json")), "fixtures")


def test_fixtures_import_validate_and_report_reasons(fixtures_imported):
    out, cases, issues = fixtures_imported
    assert not issues, [str(i) for i in issues]
    names = {c.name for c in cases}
    for name in (
        "gather_legacy_0",
        "gather_legacy_1",
        "conv2d_legacy_0",
        "conv2d_legacy_1",
        "pool2d_avg_legacy_0",
        "pool2d_max_legacy_1",
        "interp_bilinear_legacy_0",
        "layer_norm_legacy_0",
        "batch_norm_legacy_0",
        "compare_less_than_legacy_0",
        "reduce_prod_legacy_0",
        "cast_legacy_0",
        "arange_legacy_0",
        "embedding_legacy_0",
        "softmax_legacy_1",
    ):
        assert name in names, name
    by_name = {c.name: c for c in cases if c.place == "cpu" or c.name == "softmax_legacy_1"}
    assert by_name["pool2d_max_legacy_1"].config["attrs"]["kernel_size"] == [16, 16]  # global pooling
    assert by_name["interp_bilinear_legacy_0"].config["attrs"] == {
        "size": [10, 14],
        "align_corners": False,
        "data_format": "NCHW",
        "mode": "bilinear",
    }
    assert set(by_name["batch_norm_legacy_0"].config["inputs"]) == {
        "x",
        "running_mean",
        "running_var",
        "weight",
        "bias",
    }
    assert by_name["softmax_legacy_1"].place == "gpu"
    conv = (out / "conv2d.yaml").read_text()
    assert "# not converted: config #2 (param not in signature)" in conv and "'act'" in conv
    reports = [
        r
        for f in sorted(FIXTURES.glob("*.json"))
        for r in convert(json.loads(f.read_text()), source=f.name, resolve=resolve_op).reports
    ]
    counts = legacy.reason_counts(reports)
    assert counts == {
        "converted": 15,
        legacy_ops.LIST_INPUT: 2,
        legacy_ops.NEEDS_LAYER: 1,
        legacy_ops.PARAM: 1,
        legacy_ops.UNKNOWN_OP: 1,
        legacy_ops.DTYPE: 1,
    }


def test_fixture_cases_run_one_iteration_with_the_accuracy_check(fixtures_imported):
    _, cases, _ = fixtures_imported
    cpu = [c for c in cases if c.place == "cpu"]
    assert len(cpu) == 23
    checked = 0
    for case in cpu:
        record = _run_one_iteration(case)
        checked += record is not None and record["status"] == "passed"
    assert checked == 11  # the compare family (6) and the reduce family (5) have numpy references


@pytest.fixture(scope="module")
def shared_imported(tmp_path_factory):
    if not LEGACY_DIR.is_dir():
        pytest.skip(f"shared legacy configs not found at {LEGACY_DIR}")
    return _import(tmp_path_factory, legacy_files(), "shared")


@needs_legacy
def test_every_shared_legacy_file_imports_and_validates(shared_imported):
    out, cases, issues = shared_imported
    assert not issues, [str(i) for i in issues]
    assert {p.stem for p in out.glob("*.yaml")} == {p.stem for p in legacy_files()}
    assert all("imported" in c.tags for c in cases)
    names = {c.name for c in cases}
    for prefix in ("activation_sigmoid", "elementwise_add", "matmul", "reduce_sum", "softmax", "lstm"):
        assert any(n.startswith(f"{prefix}_legacy_") for n in names), prefix
    # -1 outside the batch dimension is filled as the legacy harness did, and said so
    assert "filled with 16" in (out / "elementwise.yaml").read_text()


@needs_legacy
def test_one_shared_case_per_op_runs(shared_imported):
    _, cases, _ = shared_imported
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
    assert {"activation_sigmoid", "elementwise_add", "matmul", "reduce_sum", "softmax", "lstm"} <= set(
        smallest
    )
    for case in smallest.values():
        _run_one_iteration(case)
