"""The sandbox around configs and cases (issue 26, "a sandbox around every case" and "caps before
expansion"): caps refuse a file before it is read, parsed or expanded; `measure` overrides have
ceilings; a worker runs under a memory limit the config cannot raise, and a case that hits it is
an error naming the limit while the suite goes on. Real paddle on CPU, real worker processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from suite_process import run_suite

from benchmark.config import load_file
from benchmark.sandbox import limits


def validate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`benchmark validate ARGS` as a user runs it, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "benchmark.cli", "validate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _entries(n: int, points: int) -> str:
    """A config of `n` op entries, each with a grid of `points` values."""
    grid = ", ".join(str(i) for i in range(1, points + 1))
    entry = (
        "  - name: c{i}\n    kind: op\n    op: paddle.abs\n    places: [cpu]\n"
        "    inputs: {{x: {{shape: [$n]}}}}\n    grid: {{n: [{grid}]}}\n"
    )
    return "cases:\n" + "".join(entry.format(i=i, grid=grid) for i in range(n))


# --- caps before expansion -------------------------------------------------------------------


def test_million_case_file_is_refused_by_its_size_before_it_is_read(tmp_path):
    """1,000 entries x 1,000 grid points (about 4.9 MB): one line naming the file and the cap, exit
    2, and the refusal comes before the file is parsed (docs/sandbox.md has the time and memory)."""
    path = tmp_path / "million.yaml"
    path.write_text(_entries(1000, 1000))
    assert path.stat().st_size > 4_500_000
    proc = validate(path.name, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    assert lines[0].startswith("million.yaml: the file is ")
    assert f"more than the {limits.MAX_FILE_BYTES} a config file may hold" in lines[0]


def test_two_million_item_list_is_refused_cheaply(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text(
        "cases:\n  - {name: a, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [4]}},\n"
        "     grid: {n: [" + ",".join(["1"] * 2_000_000) + "]}}\n"
    )
    loaded = load_file(path)
    assert [i.message for i in loaded.issues] == [
        f"the file is {path.stat().st_size} bytes, more than the {limits.MAX_FILE_BYTES} a config "
        "file may hold (refused before reading it; split it into several files)"
    ]
    assert loaded.cases == []


def test_a_list_over_the_cap_is_refused_while_parsing(tmp_path):
    """Under the size cap, a list longer than MAX_LIST_ITEMS stops the parser at that item."""
    path = tmp_path / "list.yaml"
    n = limits.MAX_LIST_ITEMS + 1
    path.write_text(
        "cases:\n  - {name: a, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [4]}},\n"
        "     grid: {n: [" + ",".join(["1"] * n) + "]}}\n"
    )
    assert path.stat().st_size <= limits.MAX_FILE_BYTES
    loaded = load_file(path)
    assert len(loaded.issues) == 1, loaded.issues
    assert f"a list of more than {limits.MAX_LIST_ITEMS} items" in str(loaded.issues[0])


def test_file_case_count_is_refused_before_any_entry_is_expanded(tmp_path):
    """Entries each under their own cap whose sum is over the file's: refused from the grid's
    lengths; a sentinel entry that would fail on expansion is never reached."""
    n = limits.MAX_FILE_CASES // 1000 + 1
    text = _entries(n, 1000)
    # An entry whose expansion would report an undefined grid variable: not reported, never expanded.
    text += "  - {name: late, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [$undefined]}}}\n"
    path = tmp_path / "many.yaml"
    path.write_text(text)
    loaded = load_file(path, display="many.yaml")
    assert loaded.cases == []
    assert [str(i) for i in loaded.issues] == [
        f"many.yaml:1: field 'cases': the file's entries expand to {n * 1000 + 1} cases or more, more than "
        f"the {limits.MAX_FILE_CASES} one config file may hold (refused before expanding; split it into "
        "several files)"
    ]


def test_a_file_at_the_case_cap_still_validates(tmp_path):
    path = tmp_path / "ten.yaml"
    path.write_text(_entries(limits.MAX_FILE_CASES // 1000, 1000))
    loaded = load_file(path)
    assert loaded.issues == []
    assert len(loaded.cases) == limits.MAX_FILE_CASES


# --- measure ceilings ------------------------------------------------------------------------


def test_time_bomb_measure_is_refused_naming_field_value_and_ceiling(tmp_path):
    (tmp_path / "bomb.yaml").write_text(
        "cases:\n"
        "  - name: bomb\n"
        "    kind: op\n"
        "    op: paddle.abs\n"
        "    places: [cpu]\n"
        "    inputs: {x: {shape: [16]}}\n"
        "    measure: {warmup_time: 1.0e9, processes: 64}\n"
    )
    proc = validate("--no-resolve", "bomb.yaml", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "bomb.yaml:7: case 'bomb': field 'measure.warmup_time': 1e+09 is above the ceiling of 30 s a "
        "config may ask for (the sandbox limit on a case's budget, see docs/sandbox.md)",
        "bomb.yaml:7: case 'bomb': field 'measure.processes': 64 is above the ceiling of 16 processes a "
        "config may ask for (the sandbox limit on a case's budget, see docs/sandbox.md)",
    ]


@pytest.mark.parametrize("field", sorted(limits.MEASURE_CEILINGS))
def test_every_measure_field_has_a_ceiling_and_the_ceiling_itself_passes(tmp_path, field):
    ceiling, _ = limits.MEASURE_CEILINGS[field]
    value = int(ceiling) if float(ceiling).is_integer() else ceiling
    for v, ok in ((value, True), (value * 2, False)):
        path = tmp_path / "m.yaml"
        path.write_text(
            "cases:\n  - {name: m, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [4]}}, "
            f"measure: {{{field}: {v}}}}}\n"
        )
        loaded = load_file(path)
        if ok:
            assert loaded.issues == [], loaded.issues
        else:
            assert len(loaded.issues) == 1, loaded.issues
            assert loaded.issues[0].field == f"measure.{field}"
            assert f"above the ceiling of {ceiling:g}" in loaded.issues[0].message


def test_trial_timeout_follows_the_case_budget():
    """The per-trial wall limit grows with what the settings allow, not a fixed 900 s."""
    quick = limits.trial_timeout_s(
        {"warmup_time": 0.02, "max_time": 0.05, "min_rounds": 5, "round_time": 0.002}
    )
    default = limits.trial_timeout_s(
        {"warmup_time": 0.3, "max_time": 1.0, "min_rounds": 20, "round_time": 0.01}
    )
    worst = limits.trial_timeout_s({f: c for f, (c, _) in limits.MEASURE_CEILINGS.items()})
    assert quick < default < worst
    assert default == pytest.approx(limits.TRIAL_BASE_S + limits.TRIAL_BUDGET_FACTOR * 1.3)
    # min_rounds x round_time counts when it exceeds max_time
    assert limits.trial_budget_s({"max_time": 1.0, "min_rounds": 1000, "round_time": 1.0}) == 1000.0


# --- operators that crash the worker leave the allowlist ------------------------------------


@pytest.mark.parametrize(
    "op",
    [
        "paddle.index_fill",  # SIGSEGV on an index out of range (no bounds check in the CPU kernel)
        "paddle.index_put",  # the same
        "paddle.Tensor.index_fill",
        "paddle.as_strided",  # any strides, no bounds
        "paddle.nn.functional.gather_tree",  # reads out of range
        "paddle.increment",  # in place
    ],
)
def test_crashing_and_in_place_ops_are_refused_by_validate(tmp_path, op):
    (tmp_path / "c.yaml").write_text(
        "cases:\n  - name: seg\n    kind: op\n    places: [cpu]\n"
        f"    op: {op}\n    inputs: {{x: {{shape: [4, 4]}}}}\n"
    )
    proc = validate("--no-resolve", "c.yaml", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        f"c.yaml:5: case 'seg': field 'op': {op!r} is not on the allowlist (configs/allowlist.yaml): "
        "expected an operator of the tensor API (e.g. 'paddle.abs', 'paddle.nn.functional.softmax') "
        "(to propose one: `python tools/allowlist_candidates.py`, then a pull request that changes the "
        "allowlist, reviewed by maintainers)"
    ]


@pytest.mark.parametrize(
    "name",
    ["torch.nn.functional.Optional", "torch.nn.functional.boolean_dispatch", "torch.sparse_csc_tensor"],
)
def test_non_operators_and_unchecked_constructors_are_off_the_allowlist(name):
    from benchmark.sandbox import allowlist

    assert allowlist.check("torch_op", name) is not None


# --- the worker's memory limit and a real suite ----------------------------------------------

BOMBS = """\
cases:
  - name: before
    kind: op
    op: paddle.abs
    places: [cpu]
    inputs: {x: {shape: [64, 64]}}
  - name: zeros_bomb
    kind: op
    op: paddle.zeros
    places: [cpu]
    inputs: {}
    attrs: {shape: [100000, 100000]}
  - name: onehot_bomb
    kind: op
    op: paddle.nn.functional.one_hot
    places: [cpu]
    inputs: {x: {shape: [4], dtype: int64, low: 0, high: 3}}
    attrs: {num_classes: 1000000000}
  - name: reshape_mismatch
    kind: op
    op: paddle.reshape
    places: [cpu]
    inputs: {x: {shape: [4, 4]}}
    attrs: {shape: [7]}
  - name: after
    kind: op
    op: paddle.abs
    places: [cpu]
    inputs: {x: {shape: [32, 32]}}
"""


def suite_on(tmp: Path, configs: Path, url: str, *extra: str) -> subprocess.CompletedProcess:
    """The suite on `configs`, CPU, short, one process a case; its exit status is the caller's to check."""
    return run_suite("--bench-config", str(configs), "--bench-place", "cpu", "--bench-quick", "--bench-processes", "1",
                     "--bench-db", url, "--bench-json", str(tmp / "summary.json"), *extra, check=False)  # fmt: skip


@pytest.mark.slow
def test_memory_bombs_end_as_errors_naming_the_limit_and_the_suite_goes_on(tmp_path):
    """A suite of a good case, two memory bombs (40 GB and 16 GB from plain attrs), a reshape the op
    refuses (an index out of range no longer validates: tests/test_index_inputs.py) and another good case, run on the history of an earlier run: each bomb is an error naming
    the worker's memory limit, the good cases are measured, and the earlier run is all there."""
    import json
    import sqlite3

    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    first = tmp_path / "first"
    first.mkdir()
    (first / "ok.yaml").write_text(BOMBS.split("  - name: zeros_bomb")[0])
    proc = suite_on(tmp_path, first, url)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    bombs = tmp_path / "bombs"
    bombs.mkdir()
    (bombs / "bombs.yaml").write_text(BOMBS)
    max_bytes = 1024**3
    proc = suite_on(tmp_path, bombs, url, "--bench-max-bytes", str(max_bytes))
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = {r["case_id"]: r for r in json.loads((tmp_path / "summary.json").read_text())["results"]}
    assert {k: r["status"] for k, r in results.items()} == {
        "before": "ok",
        "zeros_bomb": "error",
        "onehot_bomb": "error",
        "reshape_mismatch": "error",
        "after": "ok",
    }
    limit_gib = limits.worker_memory_limit(max_bytes) / 1024**3
    for bomb in ("zeros_bomb", "onehot_bomb"):
        message = results[bomb]["message"]
        assert "\n" not in message
        assert message.startswith(
            f"worker memory limit: the case needed more than the {limit_gib:.1f} GiB a worker may hold"
        ), message
    assert "shape" in results["reshape_mismatch"]["message"].lower()
    with sqlite3.connect(tmp_path / "history.sqlite") as db:
        runs = db.execute("select count(*) from run").fetchone()[0]
        rows = db.execute("select status, count(*) from result group by status").fetchall()
    assert runs == 2
    assert dict(rows) == {"ok": 3, "error": 3}


def test_worker_runs_under_the_memory_limit_and_the_gpu_flag():
    """The limit is the worker's own (RLIMIT_DATA, soft and hard, read from /proc), set before the
    framework import; the GPU cap is in its environment."""
    from benchmark.execution.workers import Worker

    limit = limits.worker_memory_limit(256 * 1024**2)
    worker = Worker(memory_limit=limit, stderr=subprocess.DEVNULL)
    try:
        assert worker.wait_ready()
        pid = worker.ready["pid"]
        line = next(x for x in Path(f"/proc/{pid}/limits").read_text().splitlines() if "data size" in x)
        assert line.split()[3:5] == [str(limit), str(limit)], line
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"FLAGS_gpu_memory_limit_mb={limit // 1024**2}".encode() in env
    finally:
        worker.close()


@pytest.mark.slow
def test_a_trial_over_its_time_limit_is_an_error_naming_the_limit(tmp_path):
    """A real worker on a case that warms up for 30 s, with a 20 s trial limit: killed, one
    error line naming the trial time limit; a fresh worker then measures the next case. (20 s leaves the
    quick case's start and trial room on a loaded machine; the slow one's warm-up alone is 30 s.)"""
    from benchmark.execution import trials
    from benchmark.execution.workers import Worker

    path = tmp_path / "slow.yaml"
    path.write_text(
        "cases:\n"
        "  - {name: slow, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [4]}},\n"
        "     measure: {warmup_time: 30}}\n"
        "  - {name: quick, kind: op, op: paddle.abs, places: [cpu], inputs: {x: {shape: [4]}}}\n"
    )
    loaded = load_file(path)
    assert loaded.issues == []
    slow, quick = loaded.cases
    rounds = [
        [
            trials.Trial(case=slow, key="slow", index=0, processes=1, round=0, order=0),
            trials.Trial(case=quick, key="quick", index=0, processes=1, round=0, order=1),
        ]
    ]
    records: dict = {}

    def params(trial):
        settings = {"warmup_time": 0.02, "max_time": 0.05, "min_rounds": 5, "round_time": 0.002}
        return {"settings": {**settings, **trial.case.measure}}

    trials.run_trials(
        rounds,
        lambda: Worker(stderr=subprocess.DEVNULL),
        params,
        lambda trial, record: records.__setitem__(trial.key, record),
        timeout_s=20.0,
    )
    assert records["slow"].status == "error"
    assert records["slow"].message.startswith(
        "trial time limit: no answer within 20 s, killed during trial 1 of 1"
    ), records["slow"].message
    assert records["quick"].status == "ok", records["quick"]


def test_the_trial_limit_at_the_ceilings_is_the_old_fixed_limit():
    """Whatever a config asks within the ceilings, one trial is allowed at most 900 s (the fixed
    limit every trial had before)."""
    worst = {f: c for f, (c, _) in limits.MEASURE_CEILINGS.items()}
    assert limits.trial_timeout_s(worst) == 900.0


# --- index inputs ----------------------------------------------------------------------------

INDEXED = """\
cases:
  - name: g
    kind: op
    op: {op}
    places: [cpu]
    grid: {{n: [8, 3]}}
    inputs: {{x: {{shape: [16, $n]}}, index: {{shape: [64], index: {{of: x, dim: {dim}}}}}}}
    attrs: {attrs}
"""


@pytest.mark.parametrize(
    "op, dim, attrs",
    [("paddle.gather", 1, "{axis: 1}"), ("paddle.index_select", -1, "{axis: 1}"), ("paddle.gather", 0, "{}")],
)
def test_index_inputs_are_generated_in_range_whatever_the_grid(tmp_path, op, dim, attrs):
    """`index: {of: x, dim: d}`: int64 values in [0, x.shape[d]) for every grid point, and the op
    runs on them (real paddle, CPU)."""
    from benchmark import runners
    from benchmark.runners.paddle_common import make_arrays

    path = tmp_path / "g.yaml"
    path.write_text(INDEXED.format(op=op, dim=dim, attrs=attrs))
    loaded = load_file(path, checks=runners.config_checks())
    assert loaded.issues == []
    assert len(loaded.cases) == 2
    for case in loaded.cases:
        size = case.spec.inputs["x"].shape[dim]
        index = case.spec.inputs["index"]
        assert (index.dtype, index.low, index.high) == ("int64", 0, size)
        arrays = make_arrays(case.spec.inputs, case.spec.seed)
        assert arrays["index"].min() >= 0 and arrays["index"].max() < size
        prepared = runners.prepare(case)
        try:
            prepared.step()
            prepared.sync()
        finally:
            prepared.close()


@pytest.mark.parametrize(
    "index, field, message",
    [
        ("{of: y}", "inputs.index.index.of", "'y' is not another input of this case (inputs: x)"),
        ("{of: index}", "inputs.index.index.of", "'index' is not another input of this case"),
        ("{of: x, dim: 2}", "inputs.index.index.dim", "expected a dimension of 'x' (shape [16, 8]): -2 to 1"),
        ("{of: x, dtype: int64}", "inputs.index.index.dtype", "unknown field"),
    ],
)
def test_bad_index_inputs_are_one_line_naming_the_field(tmp_path, index, field, message):
    path = tmp_path / "g.yaml"
    path.write_text(
        "cases:\n  - {name: g, kind: op, op: paddle.gather, places: [cpu],\n"
        f"     inputs: {{x: {{shape: [16, 8]}}, index: {{shape: [4], index: {index}}}}}}}\n"
    )
    loaded = load_file(path)
    assert len(loaded.issues) == 1, loaded.issues
    assert loaded.issues[0].field == field
    assert message in loaded.issues[0].message


def test_a_float_index_input_is_refused(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(
        "cases:\n  - {name: g, kind: op, op: paddle.gather, places: [cpu],\n"
        "     inputs: {x: {shape: [16, 8]}, index: {shape: [4], dtype: float32, index: {of: x}}}}\n"
    )
    loaded = load_file(path)
    assert [(i.field, i.message) for i in loaded.issues] == [
        ("inputs.index.dtype", "an index input needs an integer dtype, got 'float32'")
    ]
