"""Config schema, grid expansion, ids, hashes and every rejection of bad input."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from benchmark.config import load_file, load_paths
from benchmark.datamodel.case import Tensor, config_hash
from benchmark.runners.paddle_ops import resolver

PROJECT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def issues_of(tmp_path, text, **kw):
    loaded = load_file(write(tmp_path, text), resolver=resolver, models=["lstm", "gru"], **kw)
    return loaded.issues, loaded.cases


def one_issue(tmp_path, text, **kw):
    issues, _ = issues_of(tmp_path, text, **kw)
    assert len(issues) == 1, [str(i) for i in issues]
    return issues[0]


def test_grid_expands_product_dtypes_backward_places_modes(tmp_path):
    issues, cases = issues_of(
        tmp_path,
        """
        cases:
          - name: red
            kind: op
            op: paddle.sum
            inputs: {x: {shape: $shape}}
            attrs: {axis: $axis}
            grid: {shape: [[4, 8], [2, 3]], axis: [0, 1]}
            dtypes: [float32, float64]
            backward: [false, true]
            places: [cpu, gpu]
            modes: [dynamic, static]
        """,
    )
    assert not issues
    assert len(cases) == 2 * 2 * 2 * 2 * 2 * 2
    ids = {c.id for c in cases}
    assert len(ids) == len(cases), "every item id is unique"
    assert "red-shape_4x8-axis_0-float32-fwd-cpu-dynamic" in ids
    c = next(c for c in cases if c.id == "red-shape_2x3-axis_1-float64-bwd-gpu-static")
    assert c.spec.inputs["x"] == Tensor(shape=(2, 3), dtype="float64", low=-1.0, high=1.0)
    assert c.spec.attrs == {"axis": 1} and c.spec.backward is True
    assert c.config["inputs"]["x"] == {  # stored and hashed as plain JSON, every field present
        "shape": [2, 3],
        "dtype": "float64",
        "low": -1.0,
        "high": 1.0,
        "requires_grad": None,
    }


def test_explicit_grid_points_and_single_key_ids(tmp_path):
    issues, cases = issues_of(
        tmp_path,
        """
        cases:
          - name: mul
            kind: op
            op: paddle.multiply
            inputs: {x: {shape: $x}, y: {shape: $y}}
            grid:
              - {x: [5, 4], y: [1, 4]}
              - {x: [5, 4], y: [4]}
            places: [cpu]
          - name: ab
            kind: op
            op: paddle.abs
            inputs: {x: {shape: $shape}}
            grid: {shape: [[10, 10]]}
            places: [cpu]
        """,
    )
    assert not issues
    assert [c.case_id for c in cases] == ["mul-x_5x4-y_1x4", "mul-x_5x4-y_4", "ab-10x10"]


def test_id_and_hash_are_stable_and_hash_follows_config(tmp_path):
    text = """
        cases:
          - {name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [3, 3]}}, places: [cpu]}
        """
    _, c1 = issues_of(tmp_path, text)
    _, c2 = issues_of(tmp_path, text)
    assert (c1[0].id, c1[0].config_hash) == (c2[0].id, c2[0].config_hash)
    assert c1[0].config_hash == config_hash(c1[0].config)
    _, c3 = issues_of(tmp_path, text.replace("[3, 3]", "[3, 4]"))
    assert c3[0].case_id == c1[0].case_id and c3[0].config_hash != c1[0].config_hash


def test_grid_reference_inside_a_shape(tmp_path):
    issues, cases = issues_of(
        tmp_path,
        """
        cases:
          - {name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [$n, 64]}}, grid: {n: [8, 16]}, places: [cpu]}
        """,
    )
    assert not issues
    assert [c.spec.inputs["x"].shape for c in cases] == [(8, 64), (16, 64)]
    assert [c.case_id for c in cases] == ["a-8", "a-16"]


def test_defaults_merge_into_cases(tmp_path):
    issues, cases = issues_of(
        tmp_path,
        """
        defaults: {kind: op, places: [cpu], tags: [smoke], seed: 7}
        cases:
          - {name: a, op: paddle.abs, inputs: {x: {shape: [2]}}}
          - {name: b, op: paddle.abs, inputs: {x: {shape: [2]}}, tags: [nightly]}
        """,
    )
    assert not issues
    assert cases[0].tags == ("smoke",) and cases[1].tags == ("nightly",)
    assert cases[0].spec.seed == 7


def test_program_and_model_kinds(tmp_path):
    issues, cases = issues_of(
        tmp_path,
        """
        cases:
          - name: p
            kind: program
            feed: {x: {shape: [4]}}
            ops: [{op: paddle.abs, inputs: [x], out: y}]
            fetch: [y]
            places: [cpu]
            modes: [static, dynamic, to_static]
          - {name: m, kind: model, model: lstm, args: {batch_size: 2}, places: [cpu]}
        """,
    )
    assert not issues
    assert [c.id for c in cases] == [
        "p-cpu-static",
        "p-cpu-dynamic",
        "p-cpu-to_static",
        "m-train-cpu-dynamic",
        "m-infer-cpu-dynamic",
    ]


@pytest.mark.parametrize(
    ("case", "field", "expected"),
    [
        (
            "{name: a, kind: op, op: paddle.no_such_op, inputs: {x: {shape: [2]}}}",
            "op",
            "not on the allowlist",
        ),
        (
            "{name: a, kind: op, op: os.system, inputs: {x: {shape: [2]}}}",
            "op",
            "namespace 'os' is not allowed",
        ),
        (
            "{name: a, kind: op, op: paddle.__class__, inputs: {x: {shape: [2]}}}",
            "op",
            "no private, dunder",
        ),
        (
            "{name: a, kind: op, op: paddle._C_ops.abs, inputs: {x: {shape: [2]}}}",
            "op",
            "no private, dunder",
        ),
        (
            "{name: a, kind: op, op: paddle.os.system, inputs: {x: {shape: [2]}}}",
            "op",
            "not on the allowlist",
        ),
        (
            "{name: a, kind: op, op: paddle.nn.Linear, inputs: {x: {shape: [2]}}}",
            "op",
            "not on the allowlist",
        ),
        ("{name: a, kind: op, op: paddle.nn, inputs: {x: {shape: [2]}}}", "op", "not on the allowlist"),
        (
            "{name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [2]}}, colour: red}",
            "colour",
            "unknown field",
        ),
        (
            "{name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [2], dtype: float33}}}",
            "inputs.x.dtype",
            "unknown dtype",
        ),
        (
            "{name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [2, 0]}}}",
            "inputs.x.shape",
            "positive integers",
        ),
        (
            "{name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [-1, 3]}}}",
            "inputs.x.shape",
            "positive integers",
        ),
        (
            "{name: a, kind: op, op: paddle.abs, inputs: {x: {shape: two}}}",
            "inputs.x.shape",
            "list of integers",
        ),
        (
            "{name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [100000, 100000, 100]}}}",
            "inputs",
            "refused before allocating",
        ),
        (
            "{name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [2]}}, places: [tpu]}",
            "places",
            "unknown place",
        ),
        (
            "{name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [2]}}, modes: [eager]}",
            "modes",
            "unknown mode",
        ),
        (
            "{name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [2]}}, seed: many}",
            "seed",
            "valid integer",
        ),
        ("{name: a, kind: op, op: paddle.abs}", None, "'inputs' is required"),
        ("{name: a, kind: model, model: bert}", "model", "unknown model 'bert'"),
        ("{name: a, kind: model, model: os.system}", "model", "registered model builder"),
        ("{name: a, kind: op, op: paddle.abs, inputs: {x: {shape: $s}}}", "grid", "not defined in the grid"),
        (
            "{name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [2]}}, reference: os.system}",
            "reference",
            "numpy, scipy.special or torch",
        ),
        (
            "{name: '1a', kind: op, op: paddle.abs, inputs: {x: {shape: [2]}}}",
            "name",
            "starting with a letter",
        ),
    ],
)
def test_each_bad_field_gets_one_line_naming_file_case_field(tmp_path, case, field, expected):
    issue = one_issue(tmp_path, f"cases:\n  - {case}\n")
    assert issue.file.endswith("c.yaml")
    assert issue.case in ("a", "1a")
    assert issue.field == field
    assert expected in issue.message
    assert issue.line == 2
    text = str(issue)
    assert "\n" not in text and text.startswith(issue.file + ":2: case ")


@pytest.mark.parametrize(
    ("text", "expected", "line"),
    [
        ("", "empty file", None),
        ("cases:\n  - {name: a, kind: op\n", "YAML syntax error", 3),
        ("cases:\n  - !!python/object/apply:os.system ['touch /tmp/pwned']\n", "YAML tag not allowed", 2),
        ("- 1\n", "expected a mapping", 1),
        ("cases: []\n", "at least one case", 1),
        (
            "cases:\n  - {name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [2]}}}\nextra: 1\n",
            "unknown field",
            3,
        ),
    ],
)
def test_file_level_problems(tmp_path, text, expected, line):
    issue = one_issue(tmp_path, text)
    assert expected in issue.message
    assert issue.line == line


def test_yaml_tag_is_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    one_issue(tmp_path, f"cases:\n  - !!python/object/apply:os.system ['touch {marker}']\n")
    assert not marker.exists()


def test_duplicate_case_id_across_files(tmp_path):
    body = "cases:\n  - {name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [2]}}, places: [cpu, gpu]}\n"
    write(tmp_path, body, "one.yaml")
    write(tmp_path, body, "two.yaml")
    cases, issues = load_paths([tmp_path], resolver=resolver)
    assert len(issues) == 1
    assert "duplicate case id 'a'" in issues[0].message and "one.yaml" in issues[0].message
    assert issues[0].file.endswith("two.yaml")
    assert len(cases) == 2  # the first definition, on both places


def test_missing_path_is_reported(tmp_path):
    _, issues = load_paths([tmp_path / "nope.yaml"])
    assert issues and "no such file" in issues[0].message


def test_shipped_configs_are_valid():
    from benchmark.runners import model_names

    cases, issues = load_paths([PROJECT / "configs"], resolver=resolver, models=model_names())
    assert not issues, [str(i) for i in issues]
    names = {c.name for c in cases}
    assert {
        "abs",
        "elementwise_mul",
        "reduce_sum",
        "matmul",
        "softmax",
        "feed_abs_fetch",
        "feed_fetch_empty",
        "reduce_pair",
        "lstm",
        "gru",
        "resnet18",
    } <= names
    smoke = [c for c in cases if "smoke" in c.tags]
    assert smoke, "a smoke subset exists for CI"
    assert all("slow" in c.tags for c in cases if c.name == "resnet18")
    # The typed spec serializes back to exactly the config that was hashed (so stored series keep
    # their hash), and the cases of the project round-trip through the worker protocol.
    from benchmark.datamodel.case import Case

    assert all(config_hash(c.config) == c.config_hash for c in cases)
    assert all(Case.from_json(json.loads(json.dumps(c.to_json()))) == c for c in cases)


def test_case_is_typed_frozen_and_round_trips_as_json(tmp_path):
    import dataclasses

    from benchmark.datamodel.case import Case

    issues, cases = issues_of(
        tmp_path,
        """
        cases:
          - name: add
            kind: op
            op: paddle.add
            inputs: {x: {shape: $shape}, y: {shape: [1, 64], low: 0}}
            grid: {shape: [[8, 64]]}
            places: [cpu]
        """,
    )
    assert not issues
    case = cases[0]
    assert case.spec.inputs["x"].shape == (8, 64) and case.spec.inputs["y"].low == 0.0
    assert case.spec.inputs["x"].dtype == "float32"
    assert case.config["inputs"]["x"]["shape"] == [8, 64]  # the serialized form: plain JSON
    assert config_hash(case.config) == case.config_hash
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.place = "gpu"  # type: ignore[misc]
    again = Case.from_json(json.loads(json.dumps(case.to_json())))
    assert again == case and again.config == case.config
