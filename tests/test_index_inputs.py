"""Index-carrying inputs in range by construction (issue 44): the table beside the allowlist
(`configs/index_inputs.yaml`) classifies every index-like parameter of every allowlisted op and layer;
a plain range (or a plain attr) for one is refused by `benchmark validate` in one line naming the
input and the generator to use; the generators give values the ops accept. Real paddle on CPU.

The attacks of the issue (each killed the worker, or wrote out of bounds, with paddle 3.3.1 CPU) are
re-run here through `validate`: each is one line and exit 2; none reaches a worker."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from benchmark import cli, runners
from benchmark.config import indexed, load_file
from benchmark.runners import paddle_common as pc
from benchmark.runners.base import resolve_allowed
from benchmark.sandbox import allowlist


def validate(path: Path, capsys, monkeypatch) -> tuple[int, str, str]:
    """`benchmark validate PATH` as a user runs it (in this process: paddle is imported once for all
    the attacks), from the file's directory: (exit status, stdout, stderr)."""
    monkeypatch.chdir(path.parent)
    capsys.readouterr()
    code = cli.main(["validate", path.name])
    out, err = capsys.readouterr()
    return code, out, err


def _op(name: str, op: str, inputs: dict, **fields) -> dict:
    return {"name": name, "kind": "op", "op": op, "inputs": inputs, "places": ["cpu"], **fields}


def _write(tmp_path: Path, *cases: dict) -> Path:
    path = tmp_path / "c.yaml"
    plain = json.loads(json.dumps({"cases": list(cases)}))  # no shared objects, so no YAML aliases
    path.write_text(yaml.safe_dump(plain, sort_keys=False))
    return path


# --- the table is derived from the signatures ---------------------------------------------------


def _signatures():
    """(field, name, parameters) of every allowlisted op and layer (the layer's forward) here."""
    listed = allowlist.load_allowlist()
    for field in ("op", "layer"):
        for name in sorted(listed.names(field)):
            try:
                obj = resolve_allowed(field, name, classes=field == "layer")
                sig = inspect.signature(obj.forward if field == "layer" else obj)
            except (ValueError, TypeError):
                continue  # absent from this paddle, or no signature (a builtin)
            yield field, name, [p for p in sig.parameters if p not in ("self", "name")]


def test_every_index_like_parameter_of_an_allowlisted_op_is_classified():
    """A parameter whose name says index, count, length, label, ... (`indexed.index_like`) of an op or
    layer on the allowlist has a rule in the table; a new op with one fails here until it is reviewed."""
    missing = [
        f"{name}.{param}"
        for _, name, params in _signatures()
        for param in params
        if indexed.index_like(param) and param not in indexed.rules_of(name)
    ]
    assert missing == []


def test_the_table_names_only_allowlisted_ops_and_their_parameters():
    table = indexed.load_table()
    params = {name: set(ps) for _, name, ps in _signatures()}
    stale = [
        f"{name}.{param}"
        for name, rules in table.items()
        for param in rules
        if name not in params or param not in params[name]
    ]
    assert stale == []


@pytest.mark.parametrize(
    "name, param",
    [
        ("paddle.nn.functional.max_unpool2d", "indices"),
        ("paddle.geometric.send_uv", "src_index"),
        ("paddle.geometric.send_ue_recv", "src_index"),
        ("paddle.nn.functional.ctc_loss", "labels"),
        ("paddle.geometric.sample_neighbors", "input_nodes"),
        ("paddle.geometric.weighted_sample_neighbors", "input_nodes"),
        ("paddle.geometric.reindex_graph", "count"),
        ("paddle.vision.ops.roi_align", "boxes_num"),
        ("paddle.vision.ops.roi_pool", "boxes"),
        ("paddle.nn.LSTM", "sequence_length"),
        ("paddle.nn.GRU", "sequence_length"),
        ("paddle.nn.functional.embedding", "x"),  # an index whose name does not say so
        ("paddle.Tensor.gather", "index"),  # a method takes its function's rules
        ("paddle.repeat_interleave", "repeats"),
    ],
)
def test_the_ops_of_the_issue_have_a_generator_rule(name, param):
    rule = indexed.rules_of(name)[param]
    assert {"index", "values", "count"} & set(rule), rule


# --- the attacks of the issue: one line, exit 2 ------------------------------------------------

X4 = {"shape": [4, 3]}
ATTACKS = {
    "max_unpool2d far below": (
        _op(
            "a",
            "paddle.nn.functional.max_unpool2d",
            {
                "x": {"shape": [1, 1, 2, 2]},
                "indices": {"shape": [1, 1, 2, 2], "dtype": "int32", "low": -100000000, "high": -99999999},
            },
            attrs={"kernel_size": 2, "stride": 2},
        ),
        "inputs.indices",
        "'indices' of paddle.nn.functional.max_unpool2d is positions in the unpooled output: a plain low/high "
        "range is refused; use values: {unpool_of: x} (docs/sandbox.md)",
    ),
    "max_unpool2d at -5 (a silent out-of-bounds write)": (
        _op(
            "a",
            "paddle.nn.functional.max_unpool2d",
            {
                "x": {"shape": [1, 1, 2, 2]},
                "indices": {"shape": [1, 1, 2, 2], "dtype": "int32", "low": -5, "high": -4},
            },
            attrs={"kernel_size": 2, "stride": 2},
        ),
        "inputs.indices",
        "a plain low/high range is refused; use values: {unpool_of: x}",
    ),
    "send_uv near 1e9": (
        _op(
            "a",
            "paddle.geometric.send_uv",
            {
                "x": X4,
                "y": X4,
                "src_index": {"shape": [2], "dtype": "int32", "low": 999999990, "high": 1000000000},
                "dst_index": {"shape": [2], "dtype": "int32", "index": {"of": "y"}},
            },
        ),
        "inputs.src_index",
        "'src_index' of paddle.geometric.send_uv is an index: a plain low/high range is refused; use index: "
        "{of: x, dim: 0}",
    ),
    "send_uv indexing the wrong input": (
        _op(
            "a",
            "paddle.geometric.send_uv",
            {
                "x": {"shape": [100, 3]},
                "y": X4,
                "src_index": {"shape": [2], "dtype": "int32", "index": {"of": "x"}},
                "dst_index": {"shape": [2], "dtype": "int32", "index": {"of": "x"}},
            },
        ),
        "inputs.dst_index",
        "'dst_index' of paddle.geometric.send_uv is an index: expected index: {of: y, dim: 0}, got of: 'x'",
    ),
    "send_ue_recv near 1e9": (
        _op(
            "a",
            "paddle.geometric.send_ue_recv",
            {
                "x": X4,
                "y": {"shape": [2, 3]},
                "src_index": {"shape": [2], "dtype": "int32", "low": 999999990, "high": 1000000000},
                "dst_index": {"shape": [2], "dtype": "int32", "index": {"of": "x"}},
            },
        ),
        "inputs.src_index",
        "a plain low/high range is refused; use index: {of: x, dim: 0}",
    ),
    "ctc_loss labels near 1e6": (
        _op(
            "a",
            "paddle.nn.functional.ctc_loss",
            {
                "log_probs": {"shape": [5, 2, 4]},
                "labels": {"shape": [2, 3], "dtype": "int32", "low": 999999, "high": 1000000},
                "input_lengths": {
                    "shape": [2],
                    "dtype": "int64",
                    "index": {"of": "log_probs", "dim": 0, "low": 1, "inclusive": True},
                },
                "label_lengths": {
                    "shape": [2],
                    "dtype": "int64",
                    "index": {"of": "labels", "dim": 1, "low": 1, "inclusive": True},
                },
            },
        ),
        "inputs.labels",
        "'labels' of paddle.nn.functional.ctc_loss is class labels (1 to classes - 1; 0 is the blank): a plain "
        "low/high range is refused; use index: {of: log_probs, dim: 2, low: 1}",
    ),
    "ctc_loss input lengths past the end (SIGABRT)": (
        _op(
            "a",
            "paddle.nn.functional.ctc_loss",
            {
                "log_probs": {"shape": [5, 2, 4]},
                "labels": {
                    "shape": [2, 3],
                    "dtype": "int32",
                    "index": {"of": "log_probs", "dim": 2, "low": 1},
                },
                "input_lengths": {
                    "shape": [2],
                    "dtype": "int64",
                    "index": {"of": "labels", "dim": 1, "low": 1, "inclusive": True},
                },
                "label_lengths": {
                    "shape": [2],
                    "dtype": "int64",
                    "index": {"of": "labels", "dim": 1, "low": 1, "inclusive": True},
                },
            },
        ),
        "inputs.input_lengths",
        "expected index: {of: log_probs, dim: 0, low: 1, inclusive: true}, got of: 'labels'",
    ),
    "sample_neighbors input_nodes near 1e9": (
        _op(
            "a",
            "paddle.geometric.sample_neighbors",
            {
                "row": {"shape": [6], "dtype": "int64", "values": {"nodes_of": "colptr"}},
                "colptr": {"shape": [4], "dtype": "int64", "values": {"colptr_of": "row"}},
                "input_nodes": {"shape": [2], "dtype": "int64", "low": 999999990, "high": 1000000000},
            },
            attrs={"sample_size": 2},
        ),
        "inputs.input_nodes",
        "'input_nodes' of paddle.geometric.sample_neighbors is node ids of the graph: a plain low/high range is "
        "refused; use values: {nodes_of: colptr}",
    ),
    "weighted_sample_neighbors input_nodes near 1e9": (
        _op(
            "a",
            "paddle.geometric.weighted_sample_neighbors",
            {
                "row": {"shape": [6], "dtype": "int64", "values": {"nodes_of": "colptr"}},
                "colptr": {"shape": [4], "dtype": "int64", "values": {"colptr_of": "row"}},
                "edge_weight": {"shape": [6]},
                "input_nodes": {"shape": [2], "dtype": "int64", "low": 999999990, "high": 1000000000},
            },
            attrs={"sample_size": 2},
        ),
        "inputs.input_nodes",
        "a plain low/high range is refused; use values: {nodes_of: colptr}",
    ),
    "reindex_graph counts past the neighbours": (
        _op(
            "a",
            "paddle.geometric.reindex_graph",
            {
                "x": {"shape": [3], "dtype": "int64", "low": 0, "high": 10},
                "neighbors": {"shape": [7], "dtype": "int64", "low": 0, "high": 10},
                "count": {"shape": [3], "dtype": "int32", "low": 1000000, "high": 2000000},
            },
        ),
        "inputs.count",
        "a plain low/high range is refused; use values: {sum_of: neighbors}",
    ),
    "roi_align boxes_num summing to fewer than the boxes": (
        _op(
            "a",
            "paddle.vision.ops.roi_align",
            {
                "x": {"shape": [2, 2, 16, 16]},
                "boxes": {"shape": [3, 4], "values": {"boxes_in": "x"}},
                "boxes_num": {"shape": [2], "dtype": "int32", "low": 1, "high": 2},
            },
            attrs={"output_size": 2},
        ),
        "inputs.boxes_num",
        "'boxes_num' of paddle.vision.ops.roi_align is the boxes of each image: a plain low/high range is "
        "refused; use values: {sum_of: boxes}",
    ),
    "roi_align boxes in [1e8, 1e9) (SIGABRT)": (
        _op(
            "a",
            "paddle.vision.ops.roi_align",
            {
                "x": {"shape": [2, 2, 16, 16]},
                "boxes": {"shape": [3, 4], "low": 1.0e8, "high": 1.0e9},
                "boxes_num": {"shape": [2], "dtype": "int32", "values": {"sum_of": "boxes"}},
            },
            attrs={"output_size": 2},
        ),
        "inputs.boxes",
        "a plain low/high range is refused; use values: {boxes_in: x}",
    ),
    "roi_pool boxes_num for the wrong batch": (
        _op(
            "a",
            "paddle.vision.ops.roi_pool",
            {
                "x": {"shape": [2, 2, 16, 16]},
                "boxes": {"shape": [3, 4], "values": {"boxes_in": "x"}},
                "boxes_num": {"shape": [3], "dtype": "int32", "values": {"sum_of": "boxes"}},
            },
            attrs={"output_size": 2},
        ),
        "inputs.boxes_num",
        "expected shape [2] (one entry per dimension 0 of 'x'), got [3]",
    ),
    "gather index as a plain attr": (
        _op("a", "paddle.gather", {"x": X4}, attrs={"index": [1000000000]}),
        "attrs.index",
        "'index' of paddle.gather is an index: a plain value is refused; give it as an input with index: "
        "{of: x, dim: 0}",
    ),
    "gather_nd index": (
        _op(
            "a",
            "paddle.gather_nd",
            {"x": X4, "index": {"shape": [2, 2], "dtype": "int64", "low": -9, "high": 9}},
        ),
        "inputs.index",
        "use index: {of: x, dim: min}",
    ),
    "one_hot past num_classes": (
        _op(
            "a",
            "paddle.nn.functional.one_hot",
            {"x": {"shape": [4], "dtype": "int64", "low": 0, "high": 99}},
            attrs={"num_classes": 10},
        ),
        "inputs.x",
        "expected low >= 0 and high <= num_classes (10), got low 0 and high 99",
    ),
    "repeat_interleave with huge repeats (std::bad_alloc)": (
        _op(
            "a",
            "paddle.repeat_interleave",
            {
                "x": {"shape": [4]},
                "repeats": {"shape": [4], "dtype": "int64", "low": 999999999, "high": 1000000000},
            },
        ),
        "inputs",
        "the output's size depends on the values: at most about 29.8 GiB, with the inputs more than the 8.0 GiB "
        "allowed on this machine (--max-bytes / --bench-max-bytes; refused before allocating)",
    ),
    "repeat_interleave with a huge plain repeat": (
        _op("a", "paddle.repeat_interleave", {"x": {"shape": [1000]}}, attrs={"repeats": 1000000000}),
        "inputs",
        "the output's size depends on the values",
    ),
    "LSTM sequence_length 1000 (a hang)": (
        {
            "name": "a",
            "kind": "layer",
            "layer": "paddle.nn.LSTM",
            "places": ["cpu"],
            "args": {"input_size": 8, "hidden_size": 8},
            "inputs": {
                "inputs": {"shape": [4, 10, 8]},
                "sequence_length": {"shape": [4], "dtype": "int64", "low": 1000, "high": 1001},
            },
        },
        "inputs.sequence_length",
        "'sequence_length' of paddle.nn.LSTM is sequence lengths: a plain low/high range is refused; use index: "
        "{of: inputs, dim: 1, low: 1, inclusive: true}",
    ),
    "GRU sequence_length along the batch of a batch-major input": (
        {
            "name": "a",
            "kind": "layer",
            "layer": "paddle.nn.GRU",
            "places": ["cpu"],
            "args": {"input_size": 8, "hidden_size": 8},
            "inputs": {
                "inputs": {"shape": [40, 10, 8]},
                "sequence_length": {
                    "shape": [40],
                    "dtype": "int64",
                    "index": {"of": "inputs", "dim": 0, "low": 1, "inclusive": True},
                },
            },
        },
        "inputs.sequence_length",
        "expected index: {of: inputs, dim: 1, low: 1, inclusive: true}, got dim: 0",
    ),
    "a program feeding gather an index from another step": (
        {
            "name": "a",
            "kind": "program",
            "places": ["cpu"],
            "modes": ["static"],
            "feed": {"x": X4, "i": {"shape": [2], "dtype": "int64", "index": {"of": "x"}}},
            "ops": [
                {"op": "paddle.scale", "inputs": ["i"], "attrs": {"scale": 1000000}, "out": "j"},
                {"op": "paddle.gather", "inputs": {"x": "x", "index": "j"}, "out": "y"},
            ],
            "fetch": ["y"],
        },
        "feed",
        "'index' of paddle.gather is an index: it must be fed from an input with index: {of: x, dim: 0}, not "
        "from another step's output",
    ),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_each_attack_of_the_issue_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, attack):
    case, field, message = ATTACKS[attack]
    code, out, err = validate(_write(tmp_path, case), capsys, monkeypatch)
    assert code == 2, out + err
    lines = out.splitlines()
    assert len(lines) == 1 and "1 problem(s) found" in err, out + err
    assert lines[0].startswith("c.yaml:") and f"case 'a': field '{field}': " in lines[0], lines[0]
    assert message in lines[0]


# --- the generators give values the ops accept --------------------------------------------------

GOOD = [
    _op(
        "unpool",
        "paddle.nn.functional.max_unpool2d",
        {
            "x": {"shape": [2, 3, 5, 7]},
            "indices": {"shape": [2, 3, 5, 7], "dtype": "int32", "values": {"unpool_of": "x"}},
        },
        attrs={"kernel_size": 3, "stride": 2, "padding": 1},
    ),
    _op(
        "unpool1d",
        "paddle.nn.functional.max_unpool1d",
        {
            "x": {"shape": [2, 3, 9]},
            "indices": {"shape": [2, 3, 9], "dtype": "int64", "values": {"unpool_of": "x"}},
        },
        attrs={"kernel_size": 2},
    ),
    _op(
        "send_uv",
        "paddle.geometric.send_uv",
        {
            "x": {"shape": [50, 3]},
            "y": {"shape": [7, 3]},
            "src_index": {"shape": [400], "dtype": "int32", "index": {"of": "x"}},
            "dst_index": {"shape": [400], "dtype": "int32", "index": {"of": "y"}},
        },
    ),
    _op(
        "send_ue_recv",
        "paddle.geometric.send_ue_recv",
        {
            "x": {"shape": [50, 3]},
            "y": {"shape": [400, 3]},
            "src_index": {"shape": [400], "dtype": "int64", "index": {"of": "x"}},
            "dst_index": {"shape": [400], "dtype": "int64", "index": {"of": "x"}},
        },
    ),
    _op(
        "ctc",
        "paddle.nn.functional.ctc_loss",
        {
            "log_probs": {"shape": [30, 4, 6]},
            "labels": {"shape": [4, 10], "dtype": "int32", "index": {"of": "log_probs", "dim": 2, "low": 1}},
            "input_lengths": {
                "shape": [4],
                "dtype": "int64",
                "index": {"of": "log_probs", "dim": 0, "low": 1, "inclusive": True},
            },
            "label_lengths": {
                "shape": [4],
                "dtype": "int64",
                "index": {"of": "labels", "dim": 1, "low": 1, "inclusive": True},
            },
        },
    ),
    _op(
        "sample",
        "paddle.geometric.sample_neighbors",
        {
            "row": {"shape": [300], "dtype": "int64", "values": {"nodes_of": "colptr"}},
            "colptr": {"shape": [41], "dtype": "int64", "values": {"colptr_of": "row"}},
            "input_nodes": {"shape": [25], "dtype": "int64", "values": {"nodes_of": "colptr"}},
        },
        attrs={"sample_size": 4},
    ),
    _op(
        "wsample",
        "paddle.geometric.weighted_sample_neighbors",
        {
            "row": {"shape": [300], "dtype": "int64", "values": {"nodes_of": "colptr"}},
            "colptr": {"shape": [41], "dtype": "int64", "values": {"colptr_of": "row"}},
            "edge_weight": {"shape": [300], "low": 0.1, "high": 1.0},
            "input_nodes": {"shape": [25], "dtype": "int64", "values": {"nodes_of": "colptr"}},
        },
        attrs={"sample_size": 4},
    ),
    _op(
        "reindex",
        "paddle.geometric.reindex_graph",
        {
            "x": {"shape": [5], "dtype": "int64", "low": 0, "high": 100},
            "neighbors": {"shape": [40], "dtype": "int64", "low": 0, "high": 100},
            "count": {
                "shape": [5],
                "dtype": "int32",
                "values": {"sum_of": "neighbors"},
                "requires_grad": False,
            },
        },
    ),
    _op(
        "roi_pool",
        "paddle.vision.ops.roi_pool",
        {
            "x": {"shape": [3, 2, 20, 30]},
            "boxes": {"shape": [11, 4], "values": {"boxes_in": "x"}},
            "boxes_num": {"shape": [3], "dtype": "int32", "values": {"sum_of": "boxes"}},
        },
        attrs={"output_size": 2},
    ),
    _op(
        "multiplex",
        "paddle.multiplex",
        {
            "inputs": {"tensors": [{"shape": [6, 4]}, {"shape": [6, 4]}, {"shape": [6, 4]}]},
            "index": {"shape": [6, 1], "dtype": "int32", "index": {"of": "inputs", "dim": "count"}},
        },
    ),
    _op(
        "gather_nd",
        "paddle.gather_nd",
        {
            "x": {"shape": [5, 9, 7]},
            "index": {"shape": [12, 3], "dtype": "int64", "index": {"of": "x", "dim": "min"}},
        },
    ),
    _op(
        "repeat",
        "paddle.repeat_interleave",
        {"x": {"shape": [20]}, "repeats": {"shape": [20], "dtype": "int64", "low": 0, "high": 5}},
    ),
]
LAYERS = [
    {"name": f"{cls.lower()}_{major}", "kind": "layer", "layer": f"paddle.nn.{cls}", "places": ["cpu"],
     "args": {"input_size": 8, "hidden_size": 8, "time_major": major},
     "inputs": {"inputs": {"shape": [12, 3, 8] if major else [3, 12, 8]},
                "sequence_length": {"shape": [3], "dtype": "int64",
                                    "index": {"of": "inputs", "dim": 0 if major else 1, "low": 1, "inclusive": True}}}}
    for cls in ("LSTM", "GRU", "SimpleRNN") for major in (False, True)
]  # fmt: skip


@pytest.mark.parametrize("case", GOOD + LAYERS, ids=lambda c: c["name"])
def test_generated_index_inputs_are_valid_and_the_op_runs_on_them(tmp_path, case):
    """Each generator's values lie where the op needs them, and the op (in this process: a bad value
    would crash the test run, not a worker) computes on them."""
    result = load_file(_write(tmp_path, case), checks=runners.config_checks())
    assert [str(i) for i in result.issues] == []
    (loaded,) = result.cases
    spec = loaded.spec
    arrays = pc.make_arrays(spec.inputs, spec.seed)
    if case["name"] == "unpool":
        assert arrays["indices"].min() >= 0 and arrays["indices"].max() < 9 * 13  # (5-1)*2-2+3, (7-1)*2-2+3
    if case["name"] in ("sample", "wsample"):
        colptr = arrays["colptr"]
        assert colptr[0] == 0 and colptr[-1] == 300 and (np.diff(colptr) >= 0).all()
        assert arrays["row"].max() < 40 and arrays["input_nodes"].max() < 40 and arrays["row"].min() >= 0
    if case["name"] == "ctc":
        assert arrays["labels"].min() >= 1 and arrays["labels"].max() < 6
        assert arrays["input_lengths"].min() >= 1 and arrays["input_lengths"].max() <= 30
        assert arrays["label_lengths"].min() >= 1 and arrays["label_lengths"].max() <= 10
    if case["name"] == "reindex":
        assert arrays["count"].sum() == 40
    if case["kind"] == "layer":
        time = spec.inputs["inputs"].shape[0 if case["args"]["time_major"] else 1]
        assert arrays["sequence_length"].min() >= 1 and arrays["sequence_length"].max() <= time
    prepared = runners.prepare(loaded)
    try:
        assert prepared.step() is not None
    finally:
        prepared.close()


def test_an_index_input_resolves_to_the_range_a_plain_one_had(tmp_path):
    """The config hash of a converted corpus case does not move: `index: {of: x, dim: 1}` resolves to
    the floats a plain `low: 0, high: 9` holds."""
    plain = _op(
        "p",
        "paddle.abs",
        {"x": {"shape": [6, 9]}, "i": {"shape": [4], "dtype": "int32", "low": 0, "high": 9}},
    )
    gen = _op(
        "p",
        "paddle.abs",
        {"x": {"shape": [6, 9]}, "i": {"shape": [4], "dtype": "int32", "index": {"of": "x", "dim": 1}}},
    )
    (a,) = load_file(_write(tmp_path, plain)).cases
    (b,) = load_file(_write(tmp_path, gen)).cases
    assert a.config_hash == b.config_hash
