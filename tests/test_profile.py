"""The profile pass: paddle.profiler on real CPU cases, flattening of the event tree, op tables and copy
counts from recorded events (a real CPU capture and a hand-written GPU-like one), diffs and text."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmark import runners
from benchmark.config import load_file
from benchmark.runners import profile_tables as profile
from benchmark.runners.paddle_profile import flatten, profile_record, profile_steps, snake

DATA = Path(__file__).resolve().parent / "data"
PROJECT = Path(__file__).resolve().parents[1]


def load_events(name):
    doc = json.loads((DATA / name).read_text())
    return doc["events"], doc["steps"]


def case_from(tmp_path, text, case_id=None):
    p = tmp_path / "c.yaml"
    p.write_text(textwrap.dedent(text))
    loaded = load_file(p, resolver=runners.op_resolver(), models=runners.model_names())
    assert not loaded.issues, [str(i) for i in loaded.issues]
    return loaded.cases[0] if case_id is None else next(c for c in loaded.cases if c.id == case_id)


def run_profile(case, steps, **kw):
    prepared = runners.prepare(case)
    try:
        return profile_steps(prepared, case.place, steps=steps, **kw)
    finally:
        prepared.close()


def assert_no_copies(events):
    counts = profile.copy_counts(events)
    assert set(counts) == set(profile.COPY_KINDS)
    assert all(c == {"count": 0, "bytes": 0, "time_ns": 0} for c in counts.values()), counts


def assert_tree(events):
    ids = {e["id"] for e in events}
    assert [e["id"] for e in events] == list(range(len(events)))
    for e in events:
        assert e["parent"] is None or (e["parent"] in ids and e["parent"] < e["id"])
        assert e["end_ns"] >= e["start_ns"]


# ---------------------------------------------------------------------------------------------
# The profile pass on CPU
# ---------------------------------------------------------------------------------------------


def test_profile_pass_on_abs_op_case(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # paddle's default exporter would write ./profiler_log/: it must not
    case = case_from(
        tmp_path,
        """
        cases:
          - {name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [200, 200]}}, places: [cpu]}
        """,
    )
    steps = 4
    trace = tmp_path / "traces" / "abs.json"
    events = run_profile(case, steps, trace_path=trace)
    assert_tree(events)
    table = {r["name"]: r for r in profile.op_table(events, steps)}
    assert table["abs"]["calls"] == steps and table["abs"]["calls_per_step"] == 1
    assert table["abs"]["cpu_total_ns"] > 0 and table["abs"]["gpu_total_ns"] == 0
    assert table["abs"]["share"] == pytest.approx(1.0)
    assert_no_copies(events)
    assert len(profile.step_times(events)) == steps
    assert trace.is_file() and json.loads(trace.read_text())  # a chrome trace, valid JSON
    assert not (tmp_path / "profiler_log").exists()
    summary = profile.summarize(events, steps)
    assert summary["has_device_events"] is False and summary["op_table"][0]["name"] == "abs"


def test_profile_pass_on_static_program_case():
    loaded = load_file(
        PROJECT / "configs" / "programs" / "feed_abs_fetch.yaml", resolver=runners.op_resolver()
    )
    case = next(c for c in loaded.cases if c.id == "feed_abs_fetch-100x100-cpu-static")
    steps = 3
    events = run_profile(case, steps)
    assert_tree(events)
    table = {r["name"]: r for r in profile.op_table(events, steps)}
    # Static programs run their operators on executor threads, outside the profile_step events.
    fetch = table.get("fetch") or table.get("fetch_v2")  # PIR (Paddle 3) / the old executor (2.6)
    assert table["abs"]["calls"] == steps and fetch is not None and fetch["calls"] == steps
    assert sum(r["share"] for r in table.values()) == pytest.approx(1.0)
    assert_no_copies(events)


def test_profile_record_is_the_result_record(tmp_path):
    case = case_from(
        tmp_path,
        """
        cases:
          - {name: m, kind: op, op: paddle.multiply, inputs: {x: {shape: [8, 4]}, y: {shape: [4]}},
             backward: true, places: [cpu]}
        """,
    )
    prepared = runners.prepare(case)
    try:
        record = profile_record(prepared, "cpu", steps=2, top=1, keep_events=True)
    finally:
        prepared.close()
    assert record["steps"] == 2 and record["profile_s"] > 0 and record["trace_path"] is None
    assert len(record["op_table"]) == 1 and record["op_table"][0]["name"] in ("multiply", "multiply_grad")
    assert record["event_list"] and record["copies"]["h2d"]["count"] == 0
    json.dumps(record)  # plain data, storable as is


def test_profile_steps_rejects_zero_steps():
    with pytest.raises(ValueError, match="at least 1"):
        profile_steps(SimpleNamespace(step=lambda: None, sync=lambda: None), "cpu", steps=0)


# ---------------------------------------------------------------------------------------------
# Flattening the profiler's node tree (fake nodes with the HostPythonNode/DevicePythonNode fields)
# ---------------------------------------------------------------------------------------------


def _host(name, type_, start, end, children=(), runtime=()):
    return SimpleNamespace(
        name=name,
        type=SimpleNamespace(name=type_),
        start_ns=start,
        end_ns=end,
        children_node=list(children),
        runtime_node=list(runtime),
        device_node=[],
    )


def test_flatten_walks_children_runtime_and_device_nodes():
    memcpy = SimpleNamespace(
        name="MEMCPY_HtoD",
        type=SimpleNamespace(name="Memcpy"),
        start_ns=40,
        end_ns=60,
        device_id=1,
        stream_id=7,
        correlation_id=5,
        num_bytes=4096,
    )
    kernel = SimpleNamespace(
        name="abs_kernel",
        type=SimpleNamespace(name="Kernel"),
        start_ns=70,
        end_ns=90,
        device_id=1,
        stream_id=7,
        correlation_id=6,
        num_bytes=0,
    )
    rt1 = _host("cudaMemcpyAsync", "CudaRuntime", 30, 35)
    rt1.correlation_id, rt1.device_node = 5, [memcpy]
    rt2 = _host("cudaLaunchKernel", "CudaRuntime", 50, 55)
    rt2.correlation_id, rt2.device_node = 6, [kernel]
    launch = _host("abs kernel launch", "DygraphKernelLaunch", 45, 58, runtime=[rt2])
    op = _host("abs dygraph", "Operator", 20, 60, children=[launch], runtime=[rt1])
    root = _host(
        "root node",
        "UserDefined",
        0,
        2**64 - 1,
        children=[_host("ProfileStep#1", "ProfileStep", 10, 100, [op])],
    )
    events = flatten({42: root})
    assert_tree(events)
    by_name = {e["name"]: e for e in events}
    assert "root node" not in by_name
    assert by_name["ProfileStep#1"]["parent"] is None and by_name["ProfileStep#1"]["depth"] == 0
    assert by_name["abs dygraph"]["type"] == "operator" and by_name["abs dygraph"]["thread"] == 42
    assert by_name["abs kernel launch"]["type"] == "dygraph_kernel_launch"
    assert by_name["MEMCPY_HtoD"]["bytes"] == 4096 and by_name["MEMCPY_HtoD"]["device"] == "gpu:1"
    assert by_name["MEMCPY_HtoD"]["parent"] == by_name["cudaMemcpyAsync"]["id"]
    assert "bytes" not in by_name["abs_kernel"] and by_name["abs_kernel"]["stream"] == 7
    row = profile.op_table(events, 1)[0]
    assert row["name"] == "abs" and row["gpu_total_ns"] == 40  # the copy and the kernel it launched
    assert profile.copy_counts(events)["h2d"] == {"count": 1, "bytes": 4096, "time_ns": 20}
    assert snake("StaticKernelLaunch") == "static_kernel_launch" and snake("Operator") == "operator"


# ---------------------------------------------------------------------------------------------
# Recorded events
# ---------------------------------------------------------------------------------------------


def test_recorded_cpu_events():
    events, steps = load_events("profile_events_cpu.json")
    assert_tree(events)
    table = {r["name"]: r for r in profile.op_table(events, steps)}
    assert set(table) == {"abs", "abs_grad", "grad_accumulation"}
    assert all(r["calls"] == steps for r in table.values())
    assert all(r["gpu_total_ns"] == 0 for r in table.values())
    assert sum(r["share"] for r in table.values()) == pytest.approx(1.0)
    assert table["abs"]["cpu_avg_ns"] == pytest.approx(table["abs"]["cpu_total_ns"] / steps)
    assert_no_copies(events)
    assert len(profile.step_times(events)) == steps
    assert profile.op_table(events) == profile.op_table(events, steps)  # steps inferred from the events
    text = profile.format_table(list(table.values()))
    assert "abs_grad" in text and "GPU" not in text  # no GPU columns for a CPU-only profile


def test_recorded_gpu_like_events_copy_counts_and_gpu_time():
    events, steps = load_events("profile_events_gpu.json")
    assert_tree(events)
    counts = profile.copy_counts(events)
    assert counts["h2d"] == {"count": 2, "bytes": 8_000_000, "time_ns": 700_000}
    assert counts["d2h"] == {"count": 2, "bytes": 8_000_000, "time_ns": 600_000}
    assert counts["d2d"] == {"count": 2, "bytes": 8_000_000, "time_ns": 16_000}
    assert counts["memset"] == {"count": 2, "bytes": 8_000_000, "time_ns": 10_000}
    assert counts["p2p"]["count"] == counts["other"]["count"] == 0
    table = profile.op_table(events, steps)
    assert [r["name"] for r in table] == ["fetch", "abs", "assign", "full_like"]  # by GPU time
    rows = {r["name"]: r for r in table}
    assert (
        rows["abs"]["calls"] == 2
        and rows["abs"]["gpu_total_ns"] == 40_000
        and rows["abs"]["gpu_avg_ns"] == 20_000
    )
    assert rows["fetch"]["gpu_share"] == pytest.approx(600 / 666)  # the feed copy belongs to no operator
    summary = profile.summarize(events, steps, top=2)
    assert summary["has_device_events"] and len(summary["op_table"]) == 2 and summary["copies"] == counts
    assert "GPU total" in profile.format_table(table)


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("abs dygraph", "abs"),
        ("pd_op.abs", "abs"),
        ("Global_AbsGradNode", "abs_grad"),
        ("Global_CrossEntropyWithSoftmaxGradNode", "cross_entropy_with_softmax_grad"),
        ("Global_GradNodeAccumulation", "grad_accumulation"),
        ("adam_ dygraph", "adam_"),
        ("custom", "custom"),
    ],
)
def test_operator_names_are_normalised(raw, name):
    assert profile.operator_name(raw) == name


# ---------------------------------------------------------------------------------------------
# Diffs and text
# ---------------------------------------------------------------------------------------------


def _row(name, calls, cpu_avg, gpu_avg=0.0, steps=2):
    return {
        "name": name,
        "calls": calls,
        "calls_per_step": calls / steps,
        "cpu_avg_ns": cpu_avg,
        "cpu_total_ns": cpu_avg * calls,
        "cpu_per_step_ns": cpu_avg * calls / steps,
        "gpu_avg_ns": gpu_avg,
        "gpu_total_ns": gpu_avg * calls,
        "gpu_per_step_ns": gpu_avg * calls / steps,
    }


def test_diff_tables_finds_slower_and_more_frequent_operators():
    old = [_row("matmul", 2, 1000), _row("add", 2, 100), _row("relu", 2, 50), _row("gone_op", 2, 10)]
    new = [_row("matmul", 2, 1500), _row("add", 4, 100), _row("relu", 2, 52), _row("new_op", 2, 30)]
    rows = {r["name"]: r for r in profile.diff_tables(old, new)}
    assert rows["matmul"]["change"] == "slower" and rows["matmul"]["time_ratio"] == pytest.approx(1.5)
    assert rows["add"]["change"] == "more_calls" and rows["add"]["calls_ratio"] == 2.0
    assert rows["relu"]["change"] == "same"  # 4% is within the default 10% threshold
    assert rows["new_op"]["change"] == "new" and rows["gone_op"]["change"] == "gone"
    order = [r["name"] for r in profile.diff_tables(old, new)]
    assert order[0] == "matmul" and order[-1] == "gone_op"  # largest increase of time per step first
    changed = profile.diff_tables(old, new, changed_only=True)
    assert "relu" not in {r["name"] for r in changed}
    strict = {r["name"]: r for r in profile.diff_tables(old, new, threshold=1.01)}
    assert strict["relu"]["change"] == "slower"
    with pytest.raises(ValueError, match="threshold"):
        profile.diff_tables(old, new, threshold=0.9)


def test_diff_is_per_step_and_uses_gpu_time_when_both_have_it():
    events, steps = load_events("profile_events_gpu.json")
    old = profile.op_table(events, steps)
    # The same run profiled over twice the steps: nothing changed per step.
    doubled = [dict(r, calls=2 * r["calls"], cpu_total_ns=2 * r["cpu_total_ns"]) for r in old]
    rows = profile.diff_tables(old, doubled)
    assert all(r["change"] == "same" and r["time"] == "gpu" for r in rows)
    slower = [
        dict(
            r,
            gpu_avg_ns=r["gpu_avg_ns"] * (3 if r["name"] == "abs" else 1),
            gpu_per_step_ns=r["gpu_per_step_ns"] * (3 if r["name"] == "abs" else 1),
        )
        for r in old
    ]
    top = profile.diff_tables(old, slower)[0]
    assert top["name"] == "abs" and top["change"] == "slower" and top["time_ratio"] == pytest.approx(3.0)
    text = profile.format_table(profile.diff_tables(old, slower))
    assert text.splitlines()[0].split()[:2] == ["operator", "change"] and "3.00x" in text


def test_format_table_edge_cases():
    assert profile.format_table([]) == "(no operators)"
    with pytest.raises(ValueError, match="unknown column"):
        profile.format_table([_row("a", 1, 1)], columns=["name", "bogus"])
    assert profile.format_ns(1_500) == "1.500 µs" and profile.format_ns(2.5e9) == "2.500 s"


# ---------------------------------------------------------------------------------------------
# Kernel time beside event time (CUDA places)
# ---------------------------------------------------------------------------------------------


def test_kernel_time_per_step_from_recorded_gpu_events():
    from benchmark.runners.paddle_profile import device_time_figures, kernel_time

    events, steps = load_events("profile_events_gpu.json")
    k = kernel_time(events, steps)
    assert k["kernel_s"] == pytest.approx(20_000e-9)  # one 20 us abs kernel per step
    assert k["device_s"] == pytest.approx((350_000 + 5_000 + 20_000 + 8_000 + 300_000) * 1e-9)
    assert k["kernels_per_step"] == 1
    figures = device_time_figures(k, event_s=1e-3)
    assert figures["event_s"] == 1e-3 and figures["launch_gap_s"] == pytest.approx(1e-3 - k["device_s"])
    assert device_time_figures(k, None)["launch_gap_s"] is None
    assert kernel_time(load_events("profile_events_cpu.json")[0], 2) is None  # no device events


def test_event_time_per_step_uses_the_cases_device_timer():
    from benchmark.runners.base import Prepared
    from benchmark.runners.paddle_profile import event_time_per_step

    try:
        from tests.fakes import fake_paddle_device as fake_device
    except ImportError:
        from fakes import fake_paddle_device as fake_device
    from benchmark.runners import paddle_common

    fake = fake_device.FakePaddle("3.3.1")
    durations = iter([3e-6, 5e-6, 4e-6])
    prepared = Prepared(
        step=lambda: fake.work(next(durations)),
        device_timer=lambda: paddle_common.CudaEventTimer("gpu:0", fake),
    )
    assert event_time_per_step(prepared, 3) == pytest.approx(4e-6)
    assert event_time_per_step(Prepared(step=lambda: None), 3) is None


def test_cpu_profile_record_has_no_device_time(tmp_path):
    case = case_from(
        tmp_path,
        """
        cases:
          - {name: a, kind: op, op: paddle.abs, inputs: {x: {shape: [16, 16]}}, places: [cpu]}
        """,
    )
    prepared = runners.prepare(case)
    try:
        record = profile_record(prepared, case.place, steps=2)
    finally:
        prepared.close()
    assert record["device_time"] is None
