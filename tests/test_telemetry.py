"""The NVML sampler (benchmark.telemetry) against a fake NVML, and the real pynvml's unavailable path
(which device it reads: test_telemetry_devices.py)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.result import CaseResult
from benchmark.telemetry.devices import warn_once
from benchmark.telemetry.nvml import UNAVAILABLE_PREFIX, nvml_status, reset_status
from benchmark.telemetry.sampler import MIN_INTERVAL_S, NvmlSampler
from benchmark.telemetry.summary import decode_throttle_reasons, summarize_timeline

try:
    from tests.fakes import fake_pynvml as fake
except ImportError:  # tests/ itself is on sys.path (pytest's rootdir-less import mode)
    from fakes import fake_pynvml as fake

FAST = 0.01  # the interval floor: short tests, many samples


@pytest.fixture(autouse=True)
def _fresh_status():
    reset_status()
    yield
    reset_status()


def sample_for(nvml, seconds=0.08, interval=FAST, **kwargs) -> NvmlSampler:
    with NvmlSampler(interval=interval, nvml=nvml, **kwargs) as sampler:
        time.sleep(seconds)
    return sampler


# -- lifecycle ---------------------------------------------------------------------------------------


def test_start_stop_runs_a_daemon_thread_that_ends():
    sampler = NvmlSampler(interval=FAST, nvml=fake.FakeNvml()).start()
    try:
        assert sampler.available and sampler.running
        assert sampler._thread.daemon
        assert len(sampler.timeline()) >= 1  # start() returns after the first sample
    finally:
        sampler.stop()
    assert not sampler.running
    assert not any(t.name == "nvml-sampler" and t.is_alive() for t in threading.enumerate())


def test_context_manager_and_double_stop_are_safe():
    with NvmlSampler(interval=FAST, nvml=fake.FakeNvml()) as sampler:
        time.sleep(0.03)
    count = len(sampler.timeline())
    sampler.stop()
    sampler.stop()
    assert not sampler.running
    assert len(sampler.timeline()) == count >= 2  # first sample + closing sample at least
    NvmlSampler(nvml=fake.FakeNvml()).stop()  # never started: no-op


def test_start_twice_is_an_error():
    with NvmlSampler(interval=FAST, nvml=fake.FakeNvml()) as sampler, pytest.raises(RuntimeError):
        sampler.start()


def test_stop_takes_a_closing_sample():
    sampler = NvmlSampler(interval=1.0, nvml=fake.FakeNvml()).start()
    sampler.stop()  # well before the next tick
    assert len(sampler.timeline()) == 2


def test_timestamps_are_seconds_since_start_and_increasing():
    timeline = sample_for(fake.FakeNvml(), seconds=0.1).timeline()
    ts = [row["t"] for row in timeline]
    assert ts == sorted(ts) and 0 <= ts[0] < 0.5 and ts[-1] >= 0.09


# -- interval ------------------------------------------------------------------------------------------


def test_default_interval_is_100ms():
    assert NvmlSampler(nvml=fake.FakeNvml()).interval == 0.1


def test_interval_below_the_floor_is_raised_with_a_warning():
    with pytest.warns(UserWarning, match="floor"):
        sampler = NvmlSampler(interval=0.001, nvml=fake.FakeNvml())
    assert sampler.interval == MIN_INTERVAL_S


def test_interval_paces_the_samples():
    s = sample_for(fake.FakeNvml(), seconds=0.2, interval=0.05).summary()
    assert 4 <= s["samples"] <= s["duration_s"] / 0.05 + 2  # one per tick, plus the closing sample


# -- summaries -----------------------------------------------------------------------------------------


def _row(t, **values):
    base = dict.fromkeys(
        ["gpu_util", "mem_util", "mem_used_bytes", "power_w", "sm_clock_mhz", "temperature_c", "energy_mj"]
    )
    return {"t": t, "throttle_reasons": [], **base, **values}


def test_summarize_timeline_from_known_values():
    rows = [
        _row(
            0.0, gpu_util=10, mem_util=5, mem_used_bytes=100, power_w=100.0, sm_clock_mhz=1400, energy_mj=1000
        ),
        _row(
            0.1,
            gpu_util=90,
            mem_util=15,
            mem_used_bytes=300,
            power_w=200.0,
            sm_clock_mhz=1900,
            energy_mj=1500,
        ),
        _row(
            0.2,
            gpu_util=50,
            mem_util=10,
            mem_used_bytes=200,
            power_w=300.0,
            sm_clock_mhz=1700,
            energy_mj=4000,
        ),
    ]
    s = summarize_timeline(rows)
    assert s["samples"] == 3
    assert s["gpu_util_mean"] == pytest.approx(50) and s["gpu_util_max"] == 90
    assert s["mem_util_mean"] == pytest.approx(10) and s["mem_util_max"] == 15
    assert s["mem_used_max_bytes"] == 300
    assert s["power_mean_w"] == pytest.approx(200) and s["power_max_w"] == 300
    assert (s["sm_clock_min_mhz"], s["sm_clock_max_mhz"]) == (1400, 1900)
    assert s["energy_j"] == pytest.approx(3.0) and s["energy_source"] == "counter"
    assert s["throttled"] is False and s["throttle_reasons"] == []


def test_energy_integrates_power_when_the_counter_is_missing():
    rows = [_row(0.0, power_w=100.0), _row(0.5, power_w=300.0), _row(1.0, power_w=300.0)]
    s = summarize_timeline(rows)
    assert s["energy_source"] == "integrated_power"
    assert s["energy_j"] == pytest.approx(0.5 * 200 + 0.5 * 300)


def test_summary_of_nothing_is_none_not_zero():
    s = summarize_timeline([_row(0.0)])
    assert s["energy_j"] is None and s["gpu_util_mean"] is None and s["sm_clock_min_mhz"] is None


def test_sampled_summary_matches_the_scripted_values():
    nvml = fake.FakeNvml(gpu_util=[20, 80], power_mw=[250_000], sm_clock=[1500, 1980], energy_step_mj=40_000)
    sampler = sample_for(nvml, seconds=0.1)
    s, timeline = sampler.summary(), sampler.timeline()
    n = s["samples"]
    assert n == len(timeline) >= 3
    gpu = [20, 80] * n
    assert [row["gpu_util"] for row in timeline] == gpu[:n]
    assert s["gpu_util_max"] == 80 and s["gpu_util_mean"] == pytest.approx(sum(gpu[:n]) / n)
    assert s["power_mean_w"] == pytest.approx(250.0)  # mW -> W
    assert (s["sm_clock_min_mhz"], s["sm_clock_max_mhz"]) == (1500, 1980)
    assert s["energy_source"] == "counter"
    assert s["energy_j"] == pytest.approx((n - 1) * 40.0)  # counter delta, mJ -> J
    assert s["mem_used_max_bytes"] == 10 * fake.GiB
    assert s["device_name"] == "NVIDIA Fake GPU" and s["errors"] == [] and s["error_count"] == 0
    assert s["duration_s"] >= 0.1 and s["interval_s"] == FAST


def test_energy_from_power_when_counter_not_supported():
    sampler = sample_for(fake.FakeNvml(unsupported={"energy"}, power_mw=200_000), seconds=0.1)
    s, timeline = sampler.summary(), sampler.timeline()
    assert s["energy_source"] == "integrated_power"
    assert s["energy_j"] == pytest.approx(200.0 * (timeline[-1]["t"] - timeline[0]["t"]))
    assert "energy" in s["unsupported"]


# -- throttling ----------------------------------------------------------------------------------------


def test_throttle_bits_match_the_real_pynvml_constants():
    pynvml = pytest.importorskip("pynvml")
    assert decode_throttle_reasons(pynvml.nvmlClocksThrottleReasonSwPowerCap) == ["sw_power_cap"]
    assert decode_throttle_reasons(pynvml.nvmlClocksThrottleReasonHwThermalSlowdown) == [
        "hw_thermal_slowdown"
    ]
    assert decode_throttle_reasons(pynvml.nvmlClocksThrottleReasonGpuIdle) == ["gpu_idle"]
    assert decode_throttle_reasons(pynvml.nvmlClocksThrottleReasonAll)[-1] == "reliability"
    assert decode_throttle_reasons(0) == [] and decode_throttle_reasons(None) == []
    assert decode_throttle_reasons(0x1000) == ["unknown_0x1000"]


def test_throttling_window_is_detected():
    mask = fake.nvmlClocksEventReasonHwSlowdown | fake.nvmlClocksEventReasonSwThermalSlowdown
    nvml = fake.FakeNvml(throttle_window=(1, 3), throttle_mask=mask)
    sampler = sample_for(nvml, seconds=0.15)
    s, timeline = sampler.summary(), sampler.timeline()
    assert s["throttled"] is True
    assert s["throttle_reasons"] == ["hw_slowdown", "sw_thermal_slowdown"]
    assert [row["throttle_mask"] for row in timeline[:4]] == [0, mask, mask, 0]


def test_idle_is_a_reason_but_not_throttling():
    nvml = fake.FakeNvml(idle_mask=fake.nvmlClocksEventReasonGpuIdle)
    s = sample_for(nvml, seconds=0.03).summary()
    assert s["throttled"] is False and s["throttle_reasons"] == ["gpu_idle"]


def test_legacy_throttle_function_when_the_new_one_is_absent():
    nvml = fake.FakeNvml(
        missing_functions={"nvmlDeviceGetCurrentClocksEventReasons"},
        throttle_window=(0, 100),
        throttle_mask=fake.nvmlClocksThrottleReasonSwPowerCap,
    )
    assert sample_for(nvml, seconds=0.03).summary()["throttle_reasons"] == ["sw_power_cap"]


def test_legacy_throttle_function_when_the_driver_lacks_the_new_one():
    nvml = fake.FakeNvml(throttle_window=(0, 100), fail_at={"throttle": [0]})
    nvml.fail_error = lambda: fake.NVMLError(fake.NVML_ERROR_FUNCTION_NOT_FOUND)
    s = sample_for(nvml, seconds=0.03).summary()
    assert s["throttle_reasons"] == ["sw_power_cap"] and s["errors"] == []


# -- unsupported metrics and errors --------------------------------------------------------------------


def test_not_supported_metric_is_none_and_not_asked_again():
    nvml = fake.FakeNvml(unsupported={"power", "temperature"})
    sampler = sample_for(nvml, seconds=0.05)
    s, timeline = sampler.summary(), sampler.timeline()
    assert all(row["power_w"] is None and row["temperature_c"] is None for row in timeline)
    assert all(row["gpu_util"] == 50 for row in timeline)
    assert s["unsupported"] == ["power", "temperature"]
    assert s["power_mean_w"] is None and s["temperature_max_c"] is None
    assert s["errors"] == [] and s["energy_source"] == "counter"
    assert nvml.calls["power"] == 1 and nvml.calls["temperature"] == 1


def test_error_mid_run_is_recorded_and_sampling_goes_on():
    nvml = fake.FakeNvml(fail_at={"power": [2, 3]})
    sampler = sample_for(nvml, seconds=0.15)
    s, timeline = sampler.summary(), sampler.timeline()
    assert [row["power_w"] for row in timeline[1:5]] == [300.0, None, None, 300.0]
    assert s["errors"] == ["power: Unknown Error (NVMLError_Unknown) (x2)"] and s["error_count"] == 2
    assert s["samples"] == len(timeline) >= 5 and s["unsupported"] == []


def test_any_exception_in_the_thread_never_reaches_the_benchmark(monkeypatch):
    escaped = []
    monkeypatch.setattr(threading, "excepthook", escaped.append)
    nvml = fake.FakeNvml(fail_at={"utilization": range(1000)}, fail_error=lambda: RuntimeError("boom"))
    with NvmlSampler(interval=FAST, nvml=nvml) as sampler:
        total = sum(i * i for i in range(200_000))  # the "measured" work
        time.sleep(0.03)
    assert total == sum(i * i for i in range(200_000))
    assert escaped == []
    s = sampler.summary()
    assert s["errors"][0].startswith("utilization: boom (RuntimeError)") and s["error_count"] == s["samples"]
    assert s["gpu_util_mean"] is None and s["power_mean_w"] == 300.0


def test_a_broken_sample_is_an_error_not_a_dead_thread(monkeypatch):
    sampler = NvmlSampler(interval=FAST, nvml=fake.FakeNvml())
    monkeypatch.setattr(sampler, "_sample", lambda: 1 / 0)
    with sampler:
        time.sleep(0.03)
    s = sampler.summary()
    assert s["samples"] == 0 and s["error_count"] >= 2
    assert s["errors"][0].startswith("sample: division by zero (ZeroDivisionError)")


def test_missing_gpu_index_is_unavailable_with_reason():
    sampler = NvmlSampler(device_index=3, nvml=fake.FakeNvml(device_count=2)).start()
    sampler.stop()
    assert not sampler.available and "GPU 3" in sampler.reason and "Invalid Argument" in sampler.reason
    assert sampler.telemetry() is None


# -- NVML unavailable ----------------------------------------------------------------------------------


def test_library_not_found_says_so_in_one_line_once():
    nvml = fake.FakeNvml(library_missing=True)
    lines: list[str] = []
    assert warn_once(nvml, emit=lines.append) is False
    assert warn_once(nvml, emit=lines.append) is False
    for _ in range(3):
        with NvmlSampler(nvml=nvml, emit=lines.append) as sampler:
            pass
        assert not sampler.available and sampler.telemetry() is None
        assert sampler.summary() == {"available": False, "reason": sampler.reason, "device_index": 0}
    assert lines == [
        UNAVAILABLE_PREFIX + "nvmlInit failed: NVML Shared Library Not Found (NVMLError_LibraryNotFound)"
    ]
    assert nvml.init_calls == 1  # nvmlInit tried once


def test_default_emit_is_one_line_on_stderr(capsys):
    nvml = fake.FakeNvml(init_error=fake.NVML_ERROR_DRIVER_NOT_LOADED)
    warn_once(nvml)
    NvmlSampler(nvml=nvml).start().stop()
    err = capsys.readouterr().err
    assert (
        err == "GPU telemetry unavailable: nvmlInit failed: Driver Not Loaded (NVMLError_DriverNotLoaded)\n"
    )


def test_available_status_names_the_driver():
    nvml = fake.FakeNvml(device_count=2)
    assert nvml_status(nvml) == (True, "NVML ok: driver 550.54.15, 2 GPU(s)")
    assert warn_once(nvml, emit=pytest.fail) is True


def test_no_gpu_is_unavailable():
    assert nvml_status(fake.FakeNvml(device_count=0)) == (False, "NVML reports no GPU")


def test_fake_module_works_as_a_pynvml_stand_in():
    fake.configure(gpu_util=70)
    sampler = sample_for(fake, seconds=0.02)
    assert sampler.summary()["gpu_util_max"] == 70


def test_real_pynvml_on_a_machine_without_driver_is_unavailable_once(capsys):
    pynvml = pytest.importorskip("pynvml")
    available, reason = nvml_status()
    if available:
        pytest.skip(f"this machine has NVML ({reason})")
    assert "nvmlInit failed" in reason
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:  # the same failure, straight from the real module
        assert type(exc).__name__ in reason
    lines: list[str] = []
    for _ in range(2):
        with NvmlSampler() as sampler:
            pass
        assert sampler.telemetry() is None
    warn_once(emit=lines.append)
    err = capsys.readouterr().err.splitlines()
    assert err == [UNAVAILABLE_PREFIX + reason] and lines == []


# -- storage -------------------------------------------------------------------------------------------


def test_telemetry_round_trips_through_a_result_record():
    sampler = sample_for(fake.FakeNvml(throttle_window=(1, 2)), seconds=0.03)
    result = CaseResult(
        case_id="abs-1000x1000",
        name="abs",
        kind="op",
        place="gpu:0",
        mode="dynamic",
        config={},
        config_hash="x",
        telemetry=sampler.telemetry(),
    )
    data = json.loads(json.dumps(result.to_dict()))
    back = CaseResult.from_dict(data)
    assert back.telemetry == sampler.telemetry()
    assert set(back.telemetry) == {"summary", "timeline"}
    assert back.telemetry["summary"]["throttled"] is True


def test_timeline_is_stored_and_read_back_from_the_history(tmp_path):
    store_mod = pytest.importorskip("benchmark.store")
    sampler = sample_for(fake.FakeNvml(gpu_util=[30, 70], throttle_window=(1, 2)), seconds=0.05)
    result = CaseResult(
        case_id="abs-1000x1000",
        name="abs",
        kind="op",
        place="gpu:0",
        mode="dynamic",
        config={"op": "paddle.abs"},
        config_hash="h",
        samples=[1e-4, 1.1e-4],
        telemetry=sampler.telemetry(),
    )
    with store_mod.open_store(f"sqlite:///{tmp_path / 'history.sqlite'}") as store:
        run_id = store.begin_run(
            MachineDescription.of({"hostname": "test"}),
            RunDescription.of({"started_at": time.time(), "tags": []}),
        )
        store.add_result(run_id, result)
        store.finish_run(run_id, "complete")
        (row,) = store.results(run_id)
    assert row.telemetry["timeline"] == sampler.timeline()
    assert row.telemetry["summary"] == sampler.summary()
