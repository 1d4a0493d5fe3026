"""`benchmark import-legacy` on files: its exit codes, then every shared legacy file plus our own
fixtures of other ops imported, validated and run on CPU (one iteration, with the accuracy check
where a reference is set)."""

from __future__ import annotations

import json

import pytest
from legacy_support import FIXTURES, LEGACY_DIR, legacy_files, needs_legacy, var

from benchmark import cli, legacy, runners
from benchmark.config import load_paths
from benchmark.config.expand import tensor_bytes
from benchmark.legacy import convert
from benchmark.legacy import ops as legacy_ops
from benchmark.runners.paddle_ops import resolve_op
from benchmark.runners.reference import check_accuracy


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
        if case.spec.reference:
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
    assert by_name["pool2d_max_legacy_1"].spec.attrs["kernel_size"] == [16, 16]  # global pooling
    assert by_name["interp_bilinear_legacy_0"].spec.attrs == {
        "size": [10, 14],
        "align_corners": False,
        "data_format": "NCHW",
        "mode": "bilinear",
    }
    assert set(by_name["batch_norm_legacy_0"].spec.inputs) == {
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
        "converted": 18,  # concat's tensor list, einsum's inputs as its *operands, cond's program
        legacy_ops.PARAM: 1,
        legacy_ops.UNKNOWN_OP: 1,
        legacy_ops.DTYPE: 1,
    }


def test_fixture_cases_run_one_iteration_with_the_accuracy_check(fixtures_imported):
    _, cases, _ = fixtures_imported
    cpu = [c for c in cases if c.place == "cpu"]
    assert len(cpu) == 26  # einsum's (its inputs passed as *operands) and cond's program among them
    checked = 0
    for case in cpu:
        record = _run_one_iteration(case)
        checked += record is not None and record["status"] == "passed"
    assert checked == 12  # the compare family (6), the reduce family (5) and concat have numpy references


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
@pytest.mark.slow
def test_one_shared_case_per_op_runs(shared_imported):
    _, cases, _ = shared_imported
    smallest: dict[str, object] = {}
    for c in cases:
        if c.place != "cpu" or c.params.get("dtype", "float32") != "float32":
            continue
        if c.kind == "model" and c.spec.step != "train":
            continue
        prefix = c.name.split("_legacy_")[0]
        size = tensor_bytes(c.spec.inputs)
        if prefix not in smallest or size < tensor_bytes(smallest[prefix].spec.inputs):
            smallest[prefix] = c
    assert {"activation_sigmoid", "elementwise_add", "matmul", "reduce_sum", "softmax", "lstm"} <= set(
        smallest
    )
    for case in smallest.values():
        _run_one_iteration(case)
