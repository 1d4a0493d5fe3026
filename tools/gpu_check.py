"""The harness's CUDA path on a GPU machine that has PyTorch with CUDA and an NVIDIA driver, no paddle.

One prepared run of at most 8 minutes (tools/gpu_check.sh starts it, with a hard timeout) that
prints one ``PASS``, ``FAIL`` or ``SKIP`` line per check, then a summary line:

  env          torch, CUDA, the device, NVML status
  nvml         the NVML sampler (real pynvml) around 3 s of GPU work: utilization, power, energy and
               SM clock read (on a MIG slice: power, energy and utilization must NOT be recorded)
  mapping      CUDA device 0 -> NVML device (benchmark.telemetry.devices.resolve_device) matches torch's device UUID;
               a child process with CUDA_VISIBLE_DEVICES=<that UUID> maps to the same device; every
               MIG slice on the machine maps to a MIG target that leaves board power unattributed
  kernel:OP    abs [1000,1000] and elementwise_mul [50,128,1000]x[1,128,1000] (torch runner): CUDA
               event time per step beside the profiler's kernel time per step (torch.profiler); the
               kernel time must be positive and not above the event time; the difference is the
               launch gap
  peak:OP      the runner's peak device memory is at least the case's inputs and output
  suite        `pytest benchmark/` twice (torch runner, GPU place, --bench-require-place) into a
               fresh SQLite history; results ok with device samples, telemetry and peak memory
  gate         after the first run: nothing to compare, said as such, exit 0; after the second: passes

Exit status: 0 when nothing failed, 1 when a check failed or there is no GPU, 2 without torch.
``--cpu-dry-run`` runs only the suite and gate checks on the CPU place (to check this script's
plumbing on a machine without a GPU); it proves nothing about the CUDA path.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout, installed or not

from benchmark.telemetry import devices, nvml  # noqa: E402
from benchmark.telemetry.sampler import NvmlSampler  # noqa: E402

OPS = {
    "abs": {"op": "paddle.abs", "inputs": {"x": {"shape": [1000, 1000]}}},
    "elementwise_mul": {
        "op": "paddle.multiply",
        "inputs": {"x": {"shape": [50, 128, 1000]}, "y": {"shape": [1, 128, 1000]}},
    },
}
# Bytes a forward step needs at least: float32 inputs and the output.
MIN_PEAK_BYTES = {"abs": 2 * 4 * 1000 * 1000, "elementwise_mul": 4 * (2 * 50 * 128 * 1000 + 128 * 1000)}
SUITE_CASES = "abs-1000x1000-fwd or elementwise_mul-x_50x128x1000-y_1x128x1000-fwd"

results: list[tuple[str, str, str]] = []


def report(name: str, status: str, detail: str) -> None:
    results.append((name, status, detail))
    print(f"{status:<5} {name:<22} {detail}", flush=True)


def check(name: str, fn: Callable[[], tuple[str, str]]) -> None:
    """Run one check; any exception is its FAIL line, never a crash of the script."""
    try:
        status, detail = fn()
    except Exception as e:  # noqa: BLE001 - one line per failed check
        status, detail = "FAIL", f"{type(e).__name__}: {e}".splitlines()[0][:300]
        if os.environ.get("GPU_CHECK_TRACEBACK"):
            traceback.print_exc()
    report(name, status, detail)


def _median(values):
    return statistics.median(values) if values else float("nan")


# ---------------------------------------------------------------------------------------------- env


def require_torch():
    try:
        import torch
    except ImportError as e:
        print(f"FAIL  env                    PyTorch is not importable ({e})", flush=True)
        sys.exit(2)
    return torch


def env_check(torch) -> tuple[str, str]:
    props = torch.cuda.get_device_properties(0)
    ok, reason = nvml.nvml_status()
    detail = (
        f"torch {torch.__version__}, CUDA {torch.version.cuda}, gpu:0 = {props.name} "
        f"({props.total_memory / 2**30:.0f} GiB, sm_{props.major}{props.minor}), NVML: {reason}, "
        f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}"
    )
    return ("PASS" if ok else "FAIL"), detail


# --------------------------------------------------------------------------------------------- nvml


def nvml_check(torch) -> tuple[str, str]:
    device = devices.nvml_device_index(0)
    if device is None:
        return "FAIL", "CUDA device 0 is not in CUDA_VISIBLE_DEVICES"
    lines: list[str] = []
    dev = torch.device("cuda", 0)
    a = torch.randn(4096, 4096, device=dev)
    with NvmlSampler(device_index=device, interval=0.1, emit=lines.append) as sampler:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 3.0:
            for _ in range(10):
                a = torch.tanh(a @ a * 1e-3)
            torch.cuda.synchronize(dev)
    tel = sampler.telemetry()
    if tel is None:
        return "FAIL", f"no telemetry: {sampler.reason}"
    s = tel["summary"]
    shown = (
        f"{s['device']}: {s['samples']} samples, util max {s['gpu_util_max']}%, power mean "
        f"{s['power_mean_w']} W, energy {s['energy_j']} J ({s['energy_source']}), SM clock "
        f"{s['sm_clock_min_mhz']}-{s['sm_clock_max_mhz']} MHz, mem used max {s['mem_used_max_bytes']}, "
        f"throttle {s['throttle_reasons']}, unsupported {s['unsupported']}, errors {s['errors']}"
    )
    if s["mig"]:
        leaked = [k for k in ("power_mean_w", "energy_j", "gpu_util_max") if s[k] is not None]
        ok = s["samples"] >= 5 and not leaked and s["attribution"]
        return ("PASS" if ok else "FAIL"), f"MIG slice, board readings recorded: {leaked or 'none'}; " + shown
    ok = (
        s["samples"] >= 5
        and (s["gpu_util_max"] or 0) > 0
        and s["power_mean_w"]
        and s["energy_j"]
        and s["sm_clock_max_mhz"]
    )
    return ("PASS" if ok else "FAIL"), shown


# ------------------------------------------------------------------------------------------ mapping

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from benchmark.telemetry import devices
import torch
t = devices.resolve_device(devices.nvml_device_index(0))
print(json.dumps({"label": t.label, "uuid": t.uuid, "mig": t.mig, "cuda_devices": torch.cuda.device_count(),
                  "name": torch.cuda.get_device_name(0)}))
"""


def mapping_check(torch) -> tuple[str, str]:
    ok, _ = nvml.nvml_status()
    if not ok:
        return "FAIL", "NVML unavailable"
    target = devices.resolve_device(devices.nvml_device_index(0))
    props = torch.cuda.get_device_properties(0)
    torch_uuid = str(getattr(props, "uuid", "") or "")
    same = not torch_uuid or (target.uuid or "").lower().endswith(torch_uuid.lower())
    parts = [f"cuda:0 -> {target.label} {target.uuid} (torch uuid {torch_uuid or 'n/a'})"]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=target.uuid or "")
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT)], env=env, capture_output=True, text=True, timeout=120
    )
    if child.returncode != 0:
        return "FAIL", f"child with CUDA_VISIBLE_DEVICES=<uuid> failed: {child.stderr.strip()[-300:]}"
    got = json.loads(child.stdout.strip().splitlines()[-1])
    same_child = got["label"] == target.label and got["cuda_devices"] == 1
    parts.append(f"CUDA_VISIBLE_DEVICES={target.uuid} -> {got['label']} ({got['cuda_devices']} CUDA device)")
    mig_ok = True
    nv = nvml.load_nvml(None)
    migs = [devices._uuid(nv, m) for _, board in devices._boards(nv) for m in devices._mig_devices(nv, board)]
    if migs:
        for uuid in migs:
            t = devices.resolve_device(uuid)
            mig_ok &= t.mig and "power" in t.not_attributed
        parts.append(f"{len(migs)} MIG slice(s) mapped, board power unattributed: {mig_ok}")
    else:
        parts.append("no MIG slice on this machine (MIG mapping checked by the unit tests only)")
    return ("PASS" if same and same_child and mig_ok else "FAIL"), "; ".join(parts)


# -------------------------------------------------------------------------------- event vs kernels


def _kernel_s_per_step(torch, prepared, steps: int) -> float:
    """The sum of CUDA kernel durations per step, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    prepared.sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            prepared.step()
        prepared.sync()
    cuda = torch.autograd.DeviceType.CUDA
    total_us = 0.0
    for e in prof.events():
        if getattr(e, "device_type", None) == cuda:
            total_us += e.time_range.elapsed_us()
    return total_us / 1e6 / steps


def kernel_check(torch, name: str, peaks: dict) -> tuple[str, str]:
    from benchmark.runners.paddle_profile import event_time_per_step
    from benchmark.runners.torch_runner import prepare

    prepared = prepare({**OPS[name], "place": "gpu:0", "seed": 0, "backward": False})
    try:
        for _ in range(20):
            prepared.step()
        prepared.sync()
        event_s = event_time_per_step(prepared, 50)
        kernel_s = _kernel_s_per_step(torch, prepared, 20)
        host = []
        for _ in range(20):
            prepared.sync()
            t0 = time.perf_counter()
            prepared.step()
            prepared.sync()
            host.append(time.perf_counter() - t0)
        peaks[name] = prepared.peak_memory()
    finally:
        prepared.close()
    gap = event_s - kernel_s
    ok = kernel_s > 0 and kernel_s <= event_s * 1.10 + 2e-6
    return ("PASS" if ok else "FAIL"), (
        f"per step: event {event_s * 1e6:.1f} us, kernels {kernel_s * 1e6:.1f} us, launch gap "
        f"{gap * 1e6:+.1f} us ({gap / event_s:.0%} of event), host+sync {_median(host) * 1e6:.1f} us"
    )


def peak_check(name: str, peaks: dict) -> tuple[str, str]:
    peak = peaks.get(name)
    if peak is None:
        return "FAIL", "no peak memory (the kernel check did not run)"
    need = MIN_PEAK_BYTES[name]
    ok = need <= peak < 10 * need
    return ("PASS" if ok else "FAIL"), f"peak {peak / 2**20:.1f} MiB, inputs+output {need / 2**20:.1f} MiB"


# -------------------------------------------------------------------------------------- suite, gate


def _suite(tmp: Path, n: int, place: str, db: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pytest", "benchmark/", "-q", "-p", "no:cacheprovider", "--bench-quick"]
    cmd += ["--bench-framework", "torch", "--bench-place", place, "--bench-require-place", place]
    cmd += ["--bench-db", db, "--bench-json", str(tmp / f"run{n}.json"), "--bench-tags", "all"]
    cmd += ["-k", SUITE_CASES]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=150)


def _gate(db: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "benchmark.cli", "gate", "--run", "latest", "--db", db]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)


def _tail(proc: subprocess.CompletedProcess) -> str:
    return " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])[-400:]


def suite_and_gate(place: str) -> None:
    gpu = place != "cpu"
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as tmp_name:
        tmp = Path(tmp_name)
        db = f"sqlite:///{tmp / 'history.sqlite'}"
        first = _suite(tmp, 1, place, db)
        if first.returncode != 0:
            report("suite", "FAIL", f"run 1 exit {first.returncode}: {_tail(first)}")
            return
        gate1 = _gate(db)
        text1 = gate1.stdout + gate1.stderr
        ok1 = "nothing to compare yet" in text1 and gate1.returncode == 0
        report("gate (no baseline)", "PASS" if ok1 else "FAIL", f"exit {gate1.returncode}: {_tail(gate1)}")
        second = _suite(tmp, 2, place, db)
        if second.returncode != 0:
            report("suite", "FAIL", f"run 2 exit {second.returncode}: {_tail(second)}")
            return
        rows = json.loads((tmp / "run2.json").read_text())["results"]
        problems = []
        for r in rows:
            if r["status"] != "ok":
                problems.append(f"{r['case_id']}: {r['status']} {r.get('message')}")
            elif gpu and not r.get("device_samples"):
                problems.append(f"{r['case_id']}: no device samples")
            elif gpu and not r.get("peak_memory_bytes"):
                problems.append(f"{r['case_id']}: no peak memory")
            elif gpu and nvml.nvml_status()[0] and not (r.get("telemetry") or {}).get("summary"):
                problems.append(f"{r['case_id']}: no telemetry")
        shown = ", ".join(
            f"{r['case_id']} host {r['stats'].get('median', 0) * 1e6:.1f} us"
            + (f" device {_median(r['device_samples']) * 1e6:.1f} us" if r.get("device_samples") else "")
            for r in rows
        )
        ok = len(rows) == 2 and not problems
        report("suite", "PASS" if ok else "FAIL", "; ".join(problems) or f"2 runs, {shown}")
        gate2 = _gate(db)
        report(
            "gate (second run)",
            "PASS" if gate2.returncode == 0 else "FAIL",
            f"exit {gate2.returncode}: {_tail(gate2)}",
        )


# --------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cpu-dry-run",
        action="store_true",
        help="run only the suite and gate checks, on the CPU place (checks this script, not the GPU path)",
    )
    args = parser.parse_args(argv)
    torch = require_torch()
    t0 = time.perf_counter()
    if args.cpu_dry_run:
        suite_and_gate("cpu")
    else:
        if not torch.cuda.is_available():
            build = "CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda} build"
            report("env", "FAIL", f"no GPU: torch {torch.__version__} ({build}) sees no CUDA device")
            print("gpu_check: FAIL (no GPU)", flush=True)
            return 1
        check("env", lambda: env_check(torch))
        check("nvml", lambda: nvml_check(torch))
        check("mapping", lambda: mapping_check(torch))
        peaks: dict = {}
        for name in OPS:
            check(f"kernel:{name}", lambda name=name: kernel_check(torch, name, peaks))
            check(f"peak:{name}", lambda name=name: peak_check(name, peaks))
        try:
            suite_and_gate("gpu")
        except Exception as e:  # noqa: BLE001 - a timeout or a broken store: one line
            report("suite", "FAIL", f"{type(e).__name__}: {e}".splitlines()[0][:300])
    failed = [n for n, s, _ in results if s == "FAIL"]
    counts = {s: sum(1 for _, st, _ in results if st == s) for s in ("PASS", "FAIL", "SKIP")}
    print(
        f"gpu_check: {'FAIL' if failed else 'PASS'} ({counts['PASS']} passed, {counts['FAIL']} failed, "
        f"{counts['SKIP']} skipped; {time.perf_counter() - t0:.0f} s)"
        + (f": {', '.join(failed)}" if failed else ""),
        flush=True,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
