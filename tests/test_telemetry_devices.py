"""Which GPU the NVML sampler reads (CUDA_VISIBLE_DEVICES as indices, UUIDs and MIG ids; on a MIG
slice never the board's power) against a fake NVML, and the GPU check script where there is no GPU."""

from __future__ import annotations

import subprocess
import time

import pytest

from benchmark.telemetry.devices import DeviceNotFound, nvml_device_index, resolve_device, warn_once
from benchmark.telemetry.nvml import reset_status
from benchmark.telemetry.sampler import NvmlSampler

try:
    from tests.fakes import fake_pynvml as fake
except ImportError:  # tests/ itself is on sys.path (pytest's rootdir-less import mode)
    from fakes import fake_pynvml as fake


@pytest.fixture(autouse=True)
def _fresh_status():
    reset_status()
    yield
    reset_status()


def sample_for(nvml, seconds=0.08, **kwargs) -> NvmlSampler:
    with NvmlSampler(interval=0.01, nvml=nvml, **kwargs) as sampler:
        time.sleep(seconds)
    return sampler


# -- which device: CUDA_VISIBLE_DEVICES as indices, UUIDs and MIG ids ------------------------------------


def test_visible_devices_map_to_indices_or_identifiers():
    env = {"CUDA_VISIBLE_DEVICES": f"{fake.board_uuid(1)},0,MIG-abc"}
    assert nvml_device_index(0, env) == fake.board_uuid(1)
    assert nvml_device_index(1, env) == 0
    assert nvml_device_index(2, env) == "MIG-abc"
    assert nvml_device_index(3, env) is None
    assert nvml_device_index(1, {"CUDA_VISIBLE_DEVICES": "2,bogus,0"}) is None  # CUDA stops there
    assert nvml_device_index(1, {}) == 1


def test_fake_mapping_functions_have_the_real_pynvml_signatures():
    import inspect

    pynvml = pytest.importorskip("pynvml")
    names = [n for n in dir(fake.FakeNvml) if n.startswith("nvml")]
    assert "nvmlDeviceGetHandleByUUID" in names and "nvmlDeviceGetMigDeviceHandleByIndex" in names
    for name in names:
        real = list(inspect.signature(getattr(pynvml, name)).parameters)
        mine = list(inspect.signature(getattr(fake.FakeNvml, name)).parameters)[1:]  # drop self
        assert mine == real, name
    assert pynvml.NVML_DEVICE_MIG_ENABLE == fake.NVML_DEVICE_MIG_ENABLE


def test_a_gpu_uuid_samples_that_gpu():
    nvml = fake.FakeNvml(device_count=2)
    sampler = sample_for(nvml, device_index=fake.board_uuid(1))
    s = sampler.summary()
    assert s["available"] and s["device"] == "GPU 1" and s["uuid"] == fake.board_uuid(1)
    assert s["mig"] is False and s["not_attributed"] == [] and s["attribution"] is None
    assert s["power_mean_w"] == pytest.approx(300.0)
    assert {label for _, label in nvml.handle_calls} == {"gpu1"}


def test_a_unique_uuid_prefix_is_accepted_and_an_ambiguous_one_is_not():
    nvml = fake.FakeNvml(device_count=2, uuids=["GPU-aaaa1111", "GPU-bbbb2222"])
    nvml.nvmlInit()
    assert resolve_device("GPU-bbbb", nvml).label == "GPU 1"
    nvml2 = fake.FakeNvml(device_count=2, uuids=["GPU-aaaa1111", "GPU-aaaa2222"])
    nvml2.nvmlInit()
    with pytest.raises(DeviceNotFound, match="unique prefix"):
        resolve_device("GPU-aaaa", nvml2)


@pytest.mark.parametrize("lookup", [True, False], ids=["driver-looks-up-mig", "enumerated"])
def test_a_mig_slice_never_gets_the_boards_power(lookup):
    nvml = fake.FakeNvml(mig={0: [(1, 0), (2, 0)]}, mig_uuid_lookup=lookup, power_mw=400_000)
    lines: list[str] = []
    for _ in range(2):
        sampler = sample_for(nvml, device_index=fake.mig_uuid(0, 1), emit=lines.append)
    s, timeline = sampler.summary(), sampler.timeline()
    assert s["available"] and s["mig"] is True and s["device"] == "MIG 2/0 on GPU 0"
    assert s["uuid"] == fake.mig_uuid(0, 1)
    assert set(s["not_attributed"]) == {"utilization", "power", "energy"}
    assert s["power_mean_w"] is None and s["energy_j"] is None and s["gpu_util_mean"] is None
    assert all(row["power_w"] is None and row["energy_mj"] is None for row in timeline)
    assert s["mem_used_max_bytes"] == 10 * fake.GiB // 8  # the slice's memory
    assert s["sm_clock_max_mhz"] == 1980 and s["temperature_max_c"] == 60  # the board's state
    calls = set(nvml.handle_calls)
    assert ("power", "gpu0") not in calls and ("energy", "gpu0") not in calls
    assert ("utilization", "gpu0") not in calls
    assert ("memory", "mig0/1") in calls and ("clock", "gpu0") in calls
    assert s["errors"] == [] and s["unsupported"] == []
    assert len(lines) == 1 and "not recorded" in lines[0] and "power" in lines[0]
    assert s["attribution"] == lines[0]


def test_a_legacy_mig_id_names_the_slice_by_gpu_and_compute_instance():
    nvml = fake.FakeNvml(mig={0: [(1, 0), (2, 0)]}, mig_uuid_lookup=False)
    nvml.nvmlInit()
    target = resolve_device(f"MIG-{fake.board_uuid(0)}/2/0", nvml)
    assert target.mig and target.label == "MIG 2/0 on GPU 0"
    with pytest.raises(DeviceNotFound, match="no such MIG instance"):
        resolve_device(f"MIG-{fake.board_uuid(0)}/5/0", nvml)


def test_a_mig_board_named_by_index():
    one = fake.FakeNvml(mig={0: [(3, 0)]})
    one.nvmlInit()
    target = resolve_device(0, one)
    assert target.mig and target.label == "MIG 3/0 on GPU 0"  # its only slice
    two = fake.FakeNvml(mig={0: [(1, 0), (2, 0)]})
    lines: list[str] = []
    sampler = sample_for(two, device_index=0, emit=lines.append)
    s = sampler.summary()
    assert s["available"] and s["mig"] and "memory" in s["not_attributed"]
    assert s["power_mean_w"] is None and s["mem_used_max_bytes"] is None
    assert s["sm_clock_max_mhz"] == 1980
    assert len(lines) == 1 and "MIG is on with 2 slices" in lines[0]
    assert not any(metric in ("power", "utilization", "memory") for metric, _ in two.handle_calls)


def test_an_unknown_uuid_is_one_line_and_no_telemetry():
    nvml = fake.FakeNvml()
    lines: list[str] = []
    for _ in range(2):
        sampler = NvmlSampler(device_index="GPU-deadbeef", nvml=nvml, emit=lines.append).start()
        sampler.stop()
        assert not sampler.available and sampler.telemetry() is None
    assert lines == [
        "GPU telemetry not attributed to the case: GPU-deadbeef: not found among NVML's devices "
        "(nvmlDeviceGetHandleByUUID: Not Found (NVMLError_NotFound))"
    ]


def test_session_start_says_once_when_device_0_cannot_be_attributed(monkeypatch):
    nvml = fake.FakeNvml(mig={0: [(1, 0), (2, 0)]})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", fake.mig_uuid(0, 0))
    lines: list[str] = []
    assert warn_once(nvml, emit=lines.append) is True
    assert len(lines) == 1 and lines[0].startswith("GPU telemetry on MIG 1/0 on GPU 0")
    sample_for(nvml, device_index=nvml_device_index(0), emit=lines.append)
    assert len(lines) == 1  # the sampler does not repeat it
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    reset_status()
    lines.clear()
    assert warn_once(fake.FakeNvml(), emit=lines.append) is True
    assert lines == [
        "GPU telemetry not attributed to the case: GPU 3 not available to NVML "
        "(Invalid Argument (NVMLError_InvalidArgument))"
    ]


# -- the GPU check script, where there is no GPU -----------------------------------------------------------


def test_gpu_check_fails_cleanly_without_a_gpu():
    from pathlib import Path

    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: run tools/gpu_check.sh itself")
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        ["bash", str(root / "tools" / "gpu_check.sh")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-2].startswith("FAIL  env")
    assert "no GPU" in proc.stdout and proc.stdout.splitlines()[-1] == "gpu_check: FAIL (no GPU)"
    assert "Traceback" not in proc.stdout + proc.stderr
