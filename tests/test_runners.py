"""Each paddle runner (dynamic, static, to_static; op, program, model) against numpy on CPU."""

from __future__ import annotations

import textwrap
import time

import numpy as np
import pytest

from benchmark import runners
from benchmark.config import load_file
from benchmark.datamodel.case import Spec, Tensor
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.runners import paddle_common
from benchmark.runners.paddle_ops import resolve_op
from benchmark.runners.paddle_program import program_parts


def cases_from(tmp_path, text):
    p = tmp_path / "c.yaml"
    p.write_text(textwrap.dedent(text))
    loaded = load_file(p, resolver=runners.op_resolver(), models=runners.model_names())
    assert not loaded.issues, [str(i) for i in loaded.issues]
    return {c.id: c for c in loaded.cases}


def run_outputs(case):
    prepared = runners.prepare(case)
    try:
        prepared.step()
        prepared.sync()
        return prepared.outputs()
    finally:
        prepared.close()


def inputs_of(case):
    return paddle_common.make_arrays(case.spec.tensors, case.spec.seed)


@pytest.mark.parametrize("mode", ["dynamic", "static", "to_static"])
def test_op_forward_and_backward_match_numpy(tmp_path, mode):
    cases = cases_from(
        tmp_path,
        f"""
        cases:
          - name: mul
            kind: op
            op: paddle.multiply
            inputs: {{x: {{shape: [3, 4, 5]}}, y: {{shape: [4, 5]}}}}
            backward: [false, true]
            places: [cpu]
            modes: [{mode}]
        """,
    )
    fwd = cases[f"mul-fwd-cpu-{mode}"]
    a = inputs_of(fwd)
    out = run_outputs(fwd)
    np.testing.assert_allclose(out["out"], a["x"] * a["y"], rtol=1e-6)
    bwd = run_outputs(cases[f"mul-bwd-cpu-{mode}"])
    np.testing.assert_allclose(bwd["grad_x"], np.broadcast_to(a["y"], a["x"].shape), rtol=1e-6)
    np.testing.assert_allclose(bwd["grad_y"], a["x"].sum(axis=0), rtol=1e-5)


@pytest.mark.parametrize("mode", ["dynamic", "static"])
def test_op_attrs_are_passed(tmp_path, mode):
    cases = cases_from(
        tmp_path,
        f"""
        cases:
          - {{name: s, kind: op, op: paddle.sum, inputs: {{x: {{shape: [2, 3, 4]}}}},
              attrs: {{axis: [1, 2], keepdim: true}}, places: [cpu], modes: [{mode}]}}
        """,
    )
    case = cases[f"s-cpu-{mode}"]
    np.testing.assert_allclose(
        run_outputs(case)["out"], inputs_of(case)["x"].sum(axis=(1, 2), keepdims=True), rtol=1e-5
    )


def test_inputs_are_deterministic_from_the_seed_and_in_range(tmp_path):
    spec = {"x": Tensor(shape=(50, 7), dtype="float32", low=-2.0, high=3.0)}
    a, b = paddle_common.make_arrays(spec, 11), paddle_common.make_arrays(spec, 11)
    np.testing.assert_array_equal(a["x"], b["x"])
    assert a["x"].dtype == np.float32 and a["x"].min() >= -2.0 and a["x"].max() < 3.0
    assert not np.array_equal(a["x"], paddle_common.make_arrays(spec, 12)["x"])


@pytest.mark.parametrize("mode", ["static", "dynamic", "to_static"])
def test_program_matches_numpy(tmp_path, mode):
    cases = cases_from(
        tmp_path,
        f"""
        cases:
          - name: pair
            kind: program
            feed: {{x: {{shape: [4, 3, 2, 2]}}}}
            ops:
              - {{op: paddle.sum, inputs: [x], attrs: {{axis: [2, 3]}}, out: s1}}
              - {{op: paddle.multiply, inputs: [x, x], out: xx}}
              - {{op: paddle.sum, inputs: {{x: xx}}, attrs: {{axis: [2, 3]}}, out: s2}}
            fetch: [s1, s2]
            places: [cpu]
            modes: [{mode}]
        """,
    )
    case = cases[f"pair-cpu-{mode}"]
    x = inputs_of(case)["x"]
    out = run_outputs(case)
    np.testing.assert_allclose(out["s1"], x.sum(axis=(2, 3)), rtol=1e-5)
    np.testing.assert_allclose(out["s2"], (x * x).sum(axis=(2, 3)), rtol=1e-5)


def test_empty_program_fetches_its_feed(tmp_path):
    cases = cases_from(
        tmp_path,
        """
        cases:
          - {name: e, kind: program, feed: {x: {shape: [5, 5]}}, ops: [], fetch: [x], places: [cpu], modes: [static]}
        """,
    )
    case = cases["e-cpu-static"]
    np.testing.assert_array_equal(run_outputs(case)["x"], inputs_of(case)["x"])


def test_program_with_unknown_variable_is_rejected():
    spec = Spec.model_validate(
        {
            "name": "p",
            "kind": "program",
            "feed": {"x": {"shape": [2]}},
            "ops": [{"op": "paddle.abs", "inputs": ["z"], "out": "y"}],
            "fetch": ["y"],
        }
    )
    with pytest.raises(ValueError, match="'z' is neither fed nor produced"):
        program_parts(spec)


@pytest.mark.parametrize("model", ["lstm", "gru"])
def test_model_train_step_learns_and_infer_is_deterministic(tmp_path, model):
    cases = cases_from(
        tmp_path,
        f"""
        cases:
          - {{name: m, kind: model, model: {model},
              args: {{batch_size: 4, seq_len: 5, input_size: 8, hidden_size: 16}}, places: [cpu]}}
        """,
    )
    train = runners.prepare(cases["m-train-cpu-dynamic"])
    losses = [float(train.step()) for _ in range(30)]
    assert train.items_per_step == 4
    assert losses[-1] < losses[0], "Adam on a fixed batch lowers the loss"
    infer = runners.prepare(cases["m-infer-cpu-dynamic"])
    a, b = infer.outputs()["out"], infer.outputs()["out"]
    assert a.shape == (4, 10)
    np.testing.assert_array_equal(a, b)


def test_cuda_place_is_unavailable_on_a_cpu_build_without_calling_device_apis():
    import paddle

    if paddle.device.is_compiled_with_cuda():
        pytest.skip("this paddle build has CUDA")
    ok, reason = runners.place_available("gpu:0")
    assert not ok and "CPU-only build" in reason
    assert paddle_common.synchronizer("cpu")() is None
    assert paddle_common.peak_memory_tracker("cpu") is None
    assert paddle_common.device_timer_factory("cpu") is None


@pytest.mark.parametrize("name", ["paddle.abs", "paddle.nn.functional.softmax", "paddle.multiply"])
def test_resolver_accepts_public_functions(name):
    assert callable(resolve_op(name))


def test_framework_info_names_versions():
    info = runners.framework_info()
    assert info["framework"] == "paddle" and info["paddle_version"]
    assert "compiled_with_cuda" in info


# -- the CUDA path, with a fake paddle device module (this machine has no GPU build) -------------------

try:
    from tests.fakes import fake_paddle_device as fake_device
except ImportError:  # tests/ itself is on sys.path
    from fakes import fake_paddle_device as fake_device


@pytest.fixture
def fresh_probe():
    paddle_common._probed.clear()
    paddle_common._probe_failures.clear()
    yield
    paddle_common._probed.clear()
    paddle_common._probe_failures.clear()


def _params(fn) -> list[str]:
    import inspect

    return list(inspect.signature(fn).parameters)


def test_fake_device_module_has_the_installed_paddles_signatures():
    import paddle

    version = ".".join(paddle.__version__.split(".")[:3])
    if version not in fake_device.SIGNATURES:
        pytest.skip(f"no recorded signatures for paddle {paddle.__version__}")
    real = {
        "max_memory_allocated": paddle.device.cuda.max_memory_allocated,
        "reset_max_memory_allocated": getattr(paddle.device.cuda, "reset_max_memory_allocated", None),
        "synchronize": paddle.device.synchronize,
        "Event.__init__": paddle.device.Event.__init__,
        "Event.record": paddle.device.Event.record,
        "Event.elapsed_time": paddle.device.Event.elapsed_time,
    }
    fake = fake_device.FakePaddle(version)
    mine = {
        "max_memory_allocated": fake.device.cuda.max_memory_allocated,
        "reset_max_memory_allocated": getattr(fake.device.cuda, "reset_max_memory_allocated", None),
        "synchronize": fake.device.synchronize,
        "Event.__init__": fake.device.Event.__init__,
        "Event.record": fake.device.Event.record,
        "Event.elapsed_time": fake.device.Event.elapsed_time,
    }
    for name, params in fake_device.SIGNATURES[version].items():
        assert _params(real[name]) == params, name
        assert _params(mine[name]) == params, name


def test_real_paddle_rejects_the_bare_gpu_string_and_so_does_the_fake():
    import paddle

    with pytest.raises(ValueError, match="string gpu is not expected"):
        paddle.device.cuda.extract_cuda_device_id("gpu", op_name="paddle.device.cuda.max_memory_allocated")
    fake = fake_device.FakePaddle()
    with pytest.raises(ValueError, match="string gpu is not expected"):
        fake.device.cuda.max_memory_allocated("gpu")


@pytest.mark.parametrize(("place", "name"), [("gpu", "gpu:0"), ("gpu:0", "gpu:0"), ("gpu:1", "gpu:1")])
def test_peak_memory_and_sync_pass_gpu_n_to_paddle(place, name):
    fake = fake_device.FakePaddle(count=2)
    index = int(name[-1])
    fake.dev.allocate(index, 1000)
    read = paddle_common.peak_memory_tracker(place, cuda=fake.device.cuda)
    fake.dev.allocate(index, 500)
    assert read() == 1500
    paddle_common.synchronizer(place, pd=fake)()
    assert ("reset_max_memory_allocated", name) in fake.dev.calls
    assert ("max_memory_allocated", name) in fake.dev.calls
    assert ("device.synchronize", name) in fake.dev.calls


def test_peak_memory_is_off_with_a_reason_on_paddle_2_6():
    fake = fake_device.FakePaddle("2.6.2")
    assert paddle_common.peak_memory_tracker("gpu", cuda=fake.device.cuda) is None
    ok, reason = paddle_common.peak_memory_support(fake.device.cuda, fake.__version__)
    assert not ok and "reset_max_memory_allocated" in reason and "2.6.2" in reason
    assert not fake.dev.calls, "no device API was called"


def test_device_timing_is_refused_on_paddle_2_6_and_said_once(fresh_probe):
    fake = fake_device.FakePaddle("2.6.2")
    assert paddle_common.device_timer_factory("gpu:0", pd=fake) is None
    notes = paddle_common.gpu_notes(fake)
    assert len(notes) == 2
    assert any("device timing off" in n and "elapsed_time returns 0" in n for n in notes)
    assert any("peak device memory off" in n for n in notes)


def test_device_timer_reads_the_device_clock_on_paddle_3(fresh_probe):
    fake = fake_device.FakePaddle("3.3.1")
    factory = paddle_common.device_timer_factory("gpu", pd=fake)
    assert factory is not None
    timer = factory()
    timer.start()
    fake.work(2e-3)
    timer.stop()
    assert timer.elapsed_s() == pytest.approx(2e-3)
    assert paddle_common.gpu_notes(fake) == []


def test_events_that_read_zero_turn_device_timing_off(fresh_probe, monkeypatch):
    from benchmark.execution import measure
    from benchmark.runners.base import Prepared

    fake = fake_device.FakePaddle("3.3.1")
    monkeypatch.setattr(fake.device.Event, "elapsed_time", lambda self, end: 0)
    assert paddle_common.device_timer_factory("gpu:0", pd=fake) is None
    assert any("read 0" in n for n in paddle_common.gpu_notes(fake))
    prepared = Prepared(step=lambda: None, device_timer=None)
    plan = measure.Plan(iterations=1, rounds=3, warmup_iterations=1, estimate=1e-3)
    assert measure.device_times(prepared, plan, 3) is None  # nothing stored, never a 0


def test_paddle_versions_are_read_as_numbers():
    assert paddle_common.version_tuple("2.6.2") == (2, 6, 2)
    assert paddle_common.version_tuple("3.0.0rc1") == (3, 0, 0)
    assert paddle_common._is_legacy(fake_device.FakePaddle("2.6.2"))
    assert not paddle_common._is_legacy(fake_device.FakePaddle("3.0.0"))
    assert not paddle_common._is_legacy(fake_device.FakePaddle("0.0.0"))  # develop build


def test_overhead_rounds_end_with_a_device_sync_before_the_clock_is_read(monkeypatch):
    from benchmark.runners import paddle_overhead

    log: list[str] = []
    clock = iter(range(1000))
    monkeypatch.setattr(paddle_overhead.time, "perf_counter", lambda: log.append("clock") or next(clock))
    variants = {"full": lambda: log.append("full"), "empty": lambda: log.append("empty")}
    samples = paddle_overhead._time_rounds(variants, rounds=2, iterations=2, sync=lambda: log.append("sync"))
    assert set(samples) == {"full", "empty"} and all(len(v) == 2 for v in samples.values())
    one_round = ["sync", "clock", "full", "full", "sync", "clock"]
    assert log[:6] == one_round and log.count("sync") == 2 * 2 * 2


def test_the_event_probe_runs_eagerly_inside_a_static_case(fresh_probe):
    fake = fake_device.FakePaddle("3.3.1")
    fake.enable_static()  # what a static case's prepare() has done when it asks for the device timer
    assert paddle_common.device_timer_factory("gpu:0", pd=fake) is not None
    assert fake.static_mode, "static mode is back on for the case"
    assert paddle_common.gpu_notes(fake) == []


def test_a_shape_goes_from_yaml_to_the_stored_result_through_typed_fields(tmp_path, sqlite_url, machine):
    from benchmark.datamodel.result import CaseResult
    from benchmark.datamodel.series import SeriesKey
    from benchmark.store import open_store

    cases = cases_from(
        tmp_path,
        """
        cases:
          - {name: s, kind: op, op: paddle.abs, inputs: {x: {shape: $shape}}, grid: {shape: [[3, 4]]}, places: [cpu]}
        """,
    )
    (case,) = cases.values()
    assert case.spec.inputs["x"].shape == (3, 4)
    assert run_outputs(case)["out"].shape == (3, 4)  # the runner built the input from the typed spec
    result = CaseResult.for_case(case, samples=[1e-3, 1.1e-3, 0.9e-3], finished_at=time.time())
    with open_store(sqlite_url) as store:
        run_id = store.begin_run(
            MachineDescription.of(machine), RunDescription.of({"started_at": time.time(), "trigger": "test"})
        )
        store.add_result(run_id, result)
        (stored,) = store.results(run_id)
        (point,) = store.history(case.case_id)
    assert stored.config_hash == case.config_hash
    assert Spec.model_validate(stored.config).inputs["x"].shape == (3, 4)
    # The series' history names the same case, config (hence shape) and series by typed fields.
    assert (
        point.key == SeriesKey.of(stored) == SeriesKey(case.case_id, case.config_hash, case.place, case.mode)
    )
    assert (point.run_id, point.result_id, point.rounds) == (run_id, stored.result_id, 3)
