"""What a run ran on and under: the machine (hardware/OS, fingerprinted) and the run (code, environment).

`collect_machine()` describes the hardware and OS. Its `fingerprint` hashes only the hardware (CPU,
memory, GPU models, OS family, architecture, Python minor version), never the hostname, so two
identical machines share series; drivers, kernel, OS release and the Python patch version are
recorded per run instead (`volatile_environment`), and an upgrade is an event on the series.

`collect_run()` describes one invocation: when it started, which code (git commit, branch, dirty tree),
which framework build (passed in by the caller: this module never imports paddle), the environment
variables that change speed (thread counts, allocator settings, `FLAGS_*`), the trigger and tags.

Everything they return is plain JSON-serialisable data. The store takes a run's start as typed
records: `MachineDescription` (a description and its fingerprint) and `RunDescription` (the run's
columns as fields, everything else recorded with the run in `extra`), made from those dicts with
`MachineDescription.of` and `RunDescription.of`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

# Fields of collect_machine() that make timings comparable; the fingerprint hashes exactly these.
FINGERPRINT_FIELDS = (
    "cpu_model",
    "cpu_count_logical",
    "cpu_count_physical",
    "memory_gib",
    "gpu_models",
    "gpu_count",
    "gpu_driver",
    "os",
    "os_release",
    "kernel",
    "arch",
    "python_implementation",
    "python_version",
)

# Environment variables recorded with a run: exact names, and name prefixes.
SPEED_ENV_NAMES = frozenset(
    {
        "CUDA_VISIBLE_DEVICES",
        "CUDA_LAUNCH_BLOCKING",
        "CUDA_DEVICE_MAX_CONNECTIONS",
        "CUBLAS_WORKSPACE_CONFIG",
        "NVIDIA_TF32_OVERRIDE",
        "LD_PRELOAD",
        "NUMEXPR_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
    }
)
SPEED_ENV_PREFIXES = ("OMP_", "MKL_", "OPENBLAS_", "GOTO_", "KMP_", "GOMP_", "MALLOC_", "TCMALLOC_", "FLAGS_")

TRIGGER_ENV = "BENCHMARK_TRIGGER"
FINGERPRINT_LENGTH = 16


# --------------------------------------------------------------------------------------------- machine


def collect_machine() -> dict[str, Any]:
    """Describe this machine; the result carries its `fingerprint`."""
    info: dict[str, Any] = {"hostname": socket.gethostname()}
    info.update(_cpu_info())
    info.update(_memory_info())
    info.update(_gpu_info())
    info.update(_os_info())
    info["python_implementation"] = platform.python_implementation()
    info["python_version"] = platform.python_version()
    info["fingerprint"] = fingerprint(info)
    return info


# Fields that change under a machine without making it another machine: driver, kernel and OS
# point releases, Python patch versions. They are not part of the fingerprint (an upgrade keeps the
# series); each run records them (`volatile_environment`) and a change between two runs of a series
# is an event on it (benchmark.analysis.events), drawn on plots and listed in reports.
VOLATILE_FIELDS = ("gpu_driver", "cuda_driver_version", "kernel", "os_release", "python_version")


def fingerprint(machine: Mapping[str, Any]) -> str:
    """Short sha256 of the hardware of a machine description: CPU model and counts, memory, GPU
    models and count, OS family, architecture, Python implementation and minor version.

    The hostname and the volatile fields (`VOLATILE_FIELDS`: drivers, kernel, OS release, Python
    patch version) are left out, so an upgrade keeps the machine's series."""
    relevant: dict[str, Any] = {k: machine.get(k) for k in FINGERPRINT_FIELDS if k not in VOLATILE_FIELDS}
    version = str(machine.get("python_version") or "")
    relevant["python_minor"] = ".".join(version.split(".")[:2]) or None
    blob = json.dumps(relevant, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:FINGERPRINT_LENGTH]


def volatile_environment(machine: Mapping[str, Any]) -> dict[str, Any]:
    """The volatile fields of a machine description, recorded with every run."""
    return {k: machine.get(k) for k in VOLATILE_FIELDS if machine.get(k) is not None}


def _cpu_info() -> dict[str, Any]:

    logical = psutil.cpu_count(logical=True) or os.cpu_count()
    physical = psutil.cpu_count(logical=False)
    return {"cpu_model": _cpu_model(), "cpu_count_logical": logical, "cpu_count_physical": physical}


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        text = ""
    for key in ("model name", "Hardware", "Processor", "cpu model"):
        for line in text.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == key and value.strip():
                return value.strip()
    return platform.processor() or platform.machine() or "unknown"


def _memory_info() -> dict[str, Any]:

    total = int(psutil.virtual_memory().total)
    # The fingerprint uses whole GiB: the exact byte count moves with kernel reservations.
    return {"memory_total_bytes": total, "memory_gib": round(total / 2**30) if total else None}


def _gpu_info() -> dict[str, Any]:
    """GPU model/count/driver via NVML; any NVML failure (or no pynvml) means "no GPU"."""
    none: dict[str, Any] = {"gpu_count": 0, "gpu_models": [], "gpu_driver": None, "gpus": []}
    try:
        import pynvml  # optional: a machine without it has no GPU to describe
    except ImportError:
        return {**none, "gpu_unavailable": "pynvml is not installed"}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return {**none, "gpu_unavailable": f"NVML: {exc}"}
    try:
        return _nvml_devices(pynvml)
    except pynvml.NVMLError as exc:
        return {**none, "gpu_unavailable": f"NVML: {exc}"}
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()


def _nvml_devices(pynvml) -> dict[str, Any]:
    driver = _text(pynvml.nvmlSystemGetDriverVersion())
    gpus = []
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        gpus.append(
            {
                "index": index,
                "name": _text(pynvml.nvmlDeviceGetName(handle)),
                "memory_total_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total),
            }
        )
    cuda_driver = None
    try:
        version = int(pynvml.nvmlSystemGetCudaDriverVersion())
        cuda_driver = f"{version // 1000}.{version % 1000 // 10}"
    except (pynvml.NVMLError, AttributeError):
        pass
    return {
        "gpu_count": len(gpus),
        "gpu_models": sorted(g["name"] for g in gpus),
        "gpu_driver": driver,
        "cuda_driver_version": cuda_driver,
        "gpus": gpus,
    }


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _os_info() -> dict[str, Any]:
    return {
        "os": platform.system(),
        "os_release": _os_release(),
        "kernel": platform.release(),
        "arch": platform.machine(),
    }


def _os_release() -> str | None:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            lines = Path(path).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.partition("=")
            if key == "PRETTY_NAME":
                return value.strip().strip('"')
    return None


# ------------------------------------------------------------------------------------------------- run


def collect_run(
    framework: Mapping[str, Any] | None = None,
    *,
    trigger: str | None = None,
    tags: Iterable[str] = (),
    cwd: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Describe this invocation of the suite.

    `framework` is what the caller found out about the framework (e.g. `paddle_version`,
    `paddle_commit`, `cuda_version`, `cudnn_version`); it is stored as given. `trigger` defaults to
    the environment variable BENCHMARK_TRIGGER, then "local". `cwd` is the working tree whose git
    state is recorded (default: the current directory).
    """
    env = os.environ if environ is None else environ
    return {
        "started_at": time.time(),
        **git_info(cwd),
        "framework": dict(framework or {}),
        "env": speed_environment(env),
        "cpu_affinity": _cpu_affinity(),
        "cpu_governor": _cpu_governor(),
        "trigger": trigger or env.get(TRIGGER_ENV) or "local",
        "tags": list(tags),
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "python_executable": sys.executable,
    }


def speed_environment(
    environ: Mapping[str, str], known_flags: Collection[str] | None = None
) -> dict[str, str]:
    """The environment variables that change speed: thread counts, allocators, devices, and the
    `FLAGS_*` that paddle defines (`known_flags`, default: those of the paddle already loaded by the
    runner; none when paddle is not loaded), so `FLAGS_api_token=...` is never recorded. A value
    whose name looks secret (token, password, key...) is recorded as ***."""
    flags = _paddle_flag_names() if known_flags is None else set(known_flags)
    out = {}
    for name, value in sorted(environ.items()):
        if name.startswith("FLAGS_"):
            if name not in flags:
                continue
        elif not (name in SPEED_ENV_NAMES or name.startswith(SPEED_ENV_PREFIXES)):
            continue
        out[name] = "***" if SECRET_NAME.search(name) else value
    return out


SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|PWD|CREDENTIAL|AUTH|COOKIE|PRIVATE|API_?KEY|ACCESS_?KEY", re.I)


def _paddle_flag_names() -> set[str]:
    """The flags paddle defines, read from the paddle module the runner already imported (this
    module never imports a framework itself)."""
    paddle = sys.modules.get("paddle")
    try:
        return set(paddle.base.core.globals().keys()) if paddle is not None else set()
    except Exception:  # noqa: BLE001 - another build without this API: record no FLAGS_*
        return set()


def git_info(cwd: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Commit, branch and dirty flag of the working tree at `cwd`; all None outside a git repository."""
    if _git(cwd, "rev-parse", "--show-toplevel") is None:
        return {"git_commit": None, "git_branch": None, "git_dirty": None}
    status = _git(cwd, "status", "--porcelain")
    return {
        "git_commit": _git(cwd, "rev-parse", "--verify", "-q", "HEAD"),
        "git_branch": _git(cwd, "symbolic-ref", "--short", "-q", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
    }


def _git(cwd, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip()


def _cpu_affinity() -> list[int] | None:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _cpu_governor() -> str | None:
    try:
        return Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip()
    except OSError:
        return None


# --------------------------------------------------------------------------------- typed descriptions


_fingerprint = fingerprint  # `MachineDescription.of` has a parameter of that name


@dataclass(frozen=True)
class MachineDescription:
    """A machine as the store records it: its fingerprint (the machine's key) and its description
    (`collect_machine()`, stored as given)."""

    fingerprint: str
    info: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, info: Mapping[str, Any], *, fingerprint: str | None = None) -> MachineDescription:
        """The description `info` under `fingerprint` (default: its own `fingerprint`, computed
        from its hardware when it has none). The stored description is `info` as given."""
        fp = fingerprint or info.get("fingerprint") or _fingerprint(info)
        return cls(fingerprint=str(fp), info=dict(info))

    @property
    def hostname(self) -> str | None:
        return self.info.get("hostname")


@dataclass(frozen=True)
class RunDescription:
    """A run as `Store.begin_run` / `Store.import_run` record it: one field per column of the run
    table, and `extra`, everything else recorded with the run (in the order given; e.g. the settings
    and trials of a suite run, the side of a comparison). A run begun by the suite is `running`;
    an import also gives `status` and `finished_at`."""

    started_at: float | str | dt.datetime | None = None
    finished_at: float | str | dt.datetime | None = None
    status: str | None = None
    git_commit: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None
    framework: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    trigger: str | None = None
    tags: tuple[str, ...] | list[str] = ()
    hostname: str | None = None
    pid: int | None = None
    expected_results: int | None = None
    run_group: str | None = None
    heartbeat_s: float | None = None
    note: str | None = None
    import_source: str | None = None
    import_sha256: str | None = None
    baseline: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, run: Mapping[str, Any]) -> RunDescription:
        """The description of a `collect_run()` dict (and what the caller added to it): its keys
        that name a column become fields, the others `extra`, in their order."""
        names = RUN_COLUMNS
        known = {k: v for k, v in run.items() if k in names}
        for key in ("framework", "env"):
            if known.get(key) is None:
                known.pop(key, None)
        if known.get("tags") is None:
            known.pop("tags", None)
        return cls(**known, extra={k: v for k, v in run.items() if k not in names})


# The fields of RunDescription that are columns of the run table (all but `extra`).
RUN_COLUMNS = frozenset(f for f in RunDescription.__dataclass_fields__ if f != "extra")
