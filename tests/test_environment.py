"""Machine and run descriptions: fingerprints, NVML fallbacks, git state, the speed environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest

from benchmark.datamodel import environment
from benchmark.datamodel.environment import (
    FINGERPRINT_FIELDS,
    collect_machine,
    collect_run,
    fingerprint,
    git_info,
)


def test_collect_machine_describes_this_machine_as_plain_data():
    machine = collect_machine()
    json.dumps(machine)  # plain data
    for field in (*FINGERPRINT_FIELDS, "hostname", "fingerprint", "memory_total_bytes"):
        assert field in machine
    assert machine["cpu_count_logical"] >= 1
    assert machine["memory_total_bytes"] > 0
    assert len(machine["fingerprint"]) == 16
    assert int(machine["fingerprint"], 16) >= 0
    assert machine["fingerprint"] == collect_machine()["fingerprint"]
    assert machine["python_version"] == "{}.{}.{}".format(*sys.version_info[:3])


def test_the_fingerprint_ignores_the_hostname_but_not_the_hardware():
    machine = collect_machine()
    assert fingerprint({**machine, "hostname": "another-name"}) == machine["fingerprint"]
    assert fingerprint({**machine, "cpu_model": "Another CPU"}) != machine["fingerprint"]
    assert fingerprint({**machine, "gpu_count": 8}) != machine["fingerprint"]
    assert fingerprint({**machine, "python_version": "3.99.0"}) != machine["fingerprint"]


def fake_pynvml(*, fail_init: str | None = None, devices=()):
    module = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    def init():
        if fail_init:
            raise NVMLError(fail_init)

    module.NVMLError = NVMLError
    module.nvmlInit = init
    module.nvmlShutdown = lambda: None
    module.nvmlSystemGetDriverVersion = lambda: b"550.54.15"
    module.nvmlSystemGetCudaDriverVersion = lambda: 12040
    module.nvmlDeviceGetCount = lambda: len(devices)
    module.nvmlDeviceGetHandleByIndex = lambda i: i
    module.nvmlDeviceGetName = lambda i: devices[i].encode()
    module.nvmlDeviceGetMemoryInfo = lambda i: types.SimpleNamespace(total=80 * 2**30)
    return module


def test_no_pynvml_means_no_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    machine = collect_machine()
    assert (machine["gpu_count"], machine["gpu_models"], machine["gpu_driver"]) == (0, [], None)
    assert "not installed" in machine["gpu_unavailable"]


def test_an_nvml_error_means_no_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(fail_init="NVML Shared Library Not Found"))
    machine = collect_machine()
    assert machine["gpu_count"] == 0
    assert "NVML Shared Library Not Found" in machine["gpu_unavailable"]


def test_gpus_are_described_through_nvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(devices=("NVIDIA H200", "NVIDIA H200")))
    machine = collect_machine()
    assert machine["gpu_count"] == 2
    assert machine["gpu_models"] == ["NVIDIA H200", "NVIDIA H200"]
    assert machine["gpu_driver"] == "550.54.15"
    assert machine["cuda_driver_version"] == "12.4"
    assert machine["gpus"][1] == {"index": 1, "name": "NVIDIA H200", "memory_total_bytes": 80 * 2**30}
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(devices=("NVIDIA H200",)))
    assert collect_machine()["fingerprint"] != machine["fingerprint"]


def test_collect_run_records_framework_trigger_tags_and_process(monkeypatch, tmp_path):
    monkeypatch.delenv("BENCHMARK_TRIGGER", raising=False)
    framework = {"paddle_version": "3.0.0", "cuda_version": "12.3"}
    run = collect_run(framework, tags=("smoke",), cwd=tmp_path)
    json.dumps(run)
    assert run["framework"] == framework
    assert run["trigger"] == "local"
    assert run["tags"] == ["smoke"]
    assert run["pid"] == os.getpid()
    assert run["hostname"] == environment.socket.gethostname()
    assert run["started_at"] > 1.6e9
    monkeypatch.setenv("BENCHMARK_TRIGGER", "nightly")
    assert collect_run(cwd=tmp_path)["trigger"] == "nightly"
    assert collect_run(trigger="pr", cwd=tmp_path)["trigger"] == "pr"
    assert collect_run(cwd=tmp_path)["framework"] == {}


def test_only_the_environment_that_affects_speed_is_recorded():
    pytest.importorskip("paddle")  # the FLAGS_* recorded are the ones the loaded paddle defines
    environ = {
        "FLAGS_api_token": "s3cret",  # not a paddle flag: never recorded
        "OMP_NUM_THREADS": "4",
        "MKL_NUM_THREADS": "4",
        "OPENBLAS_NUM_THREADS": "2",
        "MALLOC_MMAP_THRESHOLD_": "131072",
        "FLAGS_check_nan_inf": "1",
        "FLAGS_allocator_strategy": "auto_growth",
        "CUDA_VISIBLE_DEVICES": "0",
        "HOME": "/root",
        "PATH": "/usr/bin",
        "AWS_SECRET_ACCESS_KEY": "nope",
        "BENCHMARK_DB_URL": "postgresql://u:pw@h/db",
    }
    recorded = collect_run(environ=environ)["env"]
    assert recorded == {
        k: v
        for k, v in environ.items()
        if k.startswith(("OMP", "MKL", "OPEN", "MALLOC", "FLAGS", "CUDA")) and k != "FLAGS_api_token"
    }


def test_secret_looking_values_are_masked():
    environ = {"FLAGS_auth_token": "t0ken", "MALLOC_ARENA_MAX": "2", "MKL_LICENSE_PASSWORD": "pw"}
    recorded = environment.speed_environment(environ, known_flags={"FLAGS_auth_token"})
    assert recorded == {"FLAGS_auth_token": "***", "MALLOC_ARENA_MAX": "2", "MKL_LICENSE_PASSWORD": "***"}


def git(cwd, *args):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def test_git_state_of_the_working_tree(tmp_path):
    assert git_info(tmp_path) == {"git_commit": None, "git_branch": None, "git_dirty": None}
    git(tmp_path, "init", "-q", "-b", "feature")
    (tmp_path / "a.txt").write_text("a")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "first")
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True
    ).stdout.strip()
    assert git_info(tmp_path) == {"git_commit": head, "git_branch": "feature", "git_dirty": False}
    (tmp_path / "a.txt").write_text("changed")
    assert git_info(tmp_path)["git_dirty"] is True
    assert collect_run(cwd=tmp_path)["git_commit"] == head


def test_no_git_binary_means_unknown(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert git_info(tmp_path) == {"git_commit": None, "git_branch": None, "git_dirty": None}


@pytest.mark.parametrize("name", ["paddle", "torch"])
def test_describing_the_environment_imports_no_framework(name):
    code = f"import sys, benchmark.datamodel.environment as e; e.collect_machine(); e.collect_run(); print({name!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
