"""End-to-end check of the CUDA and NVML paths on a GPU machine (PyTorch + CUDA + NVML; no paddle).

Run from a checkout without installing it (scripts/gpu_check.sh does this):

    PYTHONPATH=. python scripts/gpu_check.py [--rounds 50] [--lstm-seconds 5]

It prints labelled lines:
  env:        torch, CUDA, device, NVML status
  case:       abs 1000x1000 and multiply [50,128,1000]x[1,128,1000] forward on gpu:0 through the torch
              runner: per-iteration host time (wall clock, device synchronize at each round's end) and
              device time (CUDA events around the round), medians over the rounds
  telemetry:  the NVML sampler (real pynvml) around an LSTM training loop (batch 32, seq 50, hidden 256)
  store:      one result with that telemetry stored into a temporary SQLite history and read back
              (skipped when benchmark.store is not importable)
Exit status: 0 all good, 1 no CUDA device (or a step failed), 2 torch missing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, even without PYTHONPATH

from benchmark.results import CaseResult  # noqa: E402
from benchmark.telemetry import NvmlSampler, nvml_device_index, nvml_status  # noqa: E402

CASES = {
    "abs[1000x1000]": {"op": "paddle.abs", "inputs": {"x": {"shape": [1000, 1000]}}},
    "multiply[50,128,1000]x[1,128,1000]": {
        "op": "paddle.multiply",
        "inputs": {"x": {"shape": [50, 128, 1000]}, "y": {"shape": [1, 128, 1000]}},
    },
}


def say(label: str, message: str) -> None:
    print(f"{label + ':':11s}{message}", flush=True)


def require_cuda():
    """torch with a CUDA device, or exit with a clear message."""
    try:
        import torch
    except ImportError as e:
        say("gpu_check", f"FAIL: PyTorch is not installed ({e})")
        sys.exit(2)
    if not torch.cuda.is_available():
        build = "CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda} build"
        say("gpu_check", f"FAIL: no CUDA device: torch {torch.__version__} ({build}) sees no GPU")
        sys.exit(1)
    return torch


def print_env(torch) -> None:
    props = torch.cuda.get_device_properties(0)
    say(
        "env", f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}"
    )
    say(
        "env",
        f"gpu:0 = {props.name}, {props.total_memory / 2**30:.1f} GiB, {props.multi_processor_count} SMs",
    )
    available, reason = nvml_status()
    say("env", f"NVML {'available' if available else 'UNAVAILABLE'}: {reason}")


def _median_us(values: list[float]) -> float:
    return statistics.median(values) * 1e6


def time_case(label: str, case: dict, rounds: int, iters: int) -> dict:
    """Per-iteration host and device time of one op case on gpu:0."""
    from benchmark.runners.torch_runner import prepare

    prepared = prepare({**case, "place": "gpu:0", "seed": 0, "backward": False})
    try:
        for _ in range(20):  # warmup: kernels loaded, allocator warm
            prepared.step()
        prepared.sync()
        host, device = [], []
        for _ in range(rounds):
            timer = prepared.device_timer()
            t0 = time.perf_counter()
            timer.start()
            for _ in range(iters):
                prepared.step()
            timer.stop()
            prepared.sync()
            host.append((time.perf_counter() - t0) / iters)
            device.append(timer.elapsed_s() / iters)
        peak = prepared.peak_memory()
    finally:
        prepared.close()
    h, d = _median_us(host), _median_us(device)
    say(
        "case",
        f"{label} fwd gpu:0: rounds={rounds} iters/round={iters} host median={h:.1f} us "
        f"device median={d:.1f} us host-device={h - d:+.1f} us host/device={h / d:.2f} "
        f"(host IQR {_iqr_us(host):.1f} us, device IQR {_iqr_us(device):.1f} us) peak={peak / 2**20:.0f} MiB",
    )
    return {"host": host, "device": device, "peak": peak}


def _iqr_us(values: list[float]) -> float:
    q = statistics.quantiles(values, n=4)
    return (q[2] - q[0]) * 1e6


def lstm_telemetry(torch, seconds: float) -> tuple[dict | None, float, list[float]]:
    """(telemetry, samples/s, per-step seconds) of an LSTM train loop under the real NVML sampler."""
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(256, 256, batch_first=True).to(dev)
    opt = torch.optim.SGD(lstm.parameters(), lr=0.01)
    x = torch.randn(32, 50, 256, device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        out, _ = lstm(x)
        out.pow(2).mean().backward()
        opt.step()

    for _ in range(10):
        step()
    torch.cuda.synchronize(dev)
    index = nvml_device_index(0)
    if index is None:
        say("telemetry", "CUDA_VISIBLE_DEVICES names devices by UUID/MIG: sampling NVML device 0")
        index = 0
    steps, per_step = 0, []
    with NvmlSampler(device_index=index, interval=0.1) as sampler:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            s0 = time.perf_counter()
            step()
            torch.cuda.synchronize(dev)
            per_step.append(time.perf_counter() - s0)
            steps += 1
        elapsed = time.perf_counter() - t0
    return sampler.telemetry(), steps * 32 / elapsed, per_step


def report_telemetry(telemetry: dict | None, rate: float, per_step: list[float]) -> None:
    say(
        "telemetry",
        f"LSTM train step (batch 32, seq 50, hidden 256): {rate:.0f} samples/s, "
        f"median step {_median_us(per_step) / 1000:.2f} ms over {len(per_step)} steps",
    )
    if telemetry is None:
        say("telemetry", "FAIL: no telemetry (NVML unavailable, see the env line)")
        return
    summary = telemetry["summary"]
    keys = (
        "samples",
        "duration_s",
        "gpu_util_mean",
        "gpu_util_max",
        "mem_util_mean",
        "mem_used_max_bytes",
        "power_mean_w",
        "energy_j",
        "energy_source",
        "sm_clock_min_mhz",
        "sm_clock_max_mhz",
        "temperature_max_c",
        "throttled",
        "throttle_reasons",
        "unsupported",
        "errors",
    )
    for key in keys:
        say("telemetry", f"{key} = {summary.get(key)}")
    say("telemetry", f"timeline[0] = {json.dumps(telemetry['timeline'][0])}")


def store_roundtrip(telemetry: dict | None, timing: dict, torch) -> bool:
    """Store one result into a temporary SQLite history and print it back; True unless it failed."""
    try:
        from benchmark.store import open_store
    except ImportError as e:
        say("store", f"SKIPPED: benchmark.store is not importable here ({e})")
        return True
    result = CaseResult(
        case_id="gpu_check.abs[1000x1000]",
        name="abs",
        kind="op",
        place="gpu:0",
        mode="torch",
        config={"op": "paddle.abs", "runner": "torch"},
        config_hash="gpu-check",
        samples=timing["host"],
        stats=_stats(timing["host"]),
        device_samples=timing["device"],
        peak_memory_bytes=timing["peak"],
        telemetry=telemetry,
        started_at=time.time(),
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(f"sqlite:///{Path(tmp) / 'history.sqlite'}")
            machine = _machine(torch)
            run_id = store.begin_run(machine, {"started_at": time.time(), "trigger": "gpu_check", "tags": []})
            store.add_result(run_id, result.to_dict())
            store.finish_run(run_id, "complete")
            for row in store.results(run_id):
                shown = {k: row.get(k) for k in ("result_id", "case_id", "place", "status")}
                shown["median_s"] = (row.get("stats") or {}).get("median")
                shown["samples"] = len(row.get("samples") or [])
                shown["device_samples"] = len(row.get("device_samples") or [])
                shown["telemetry_timeline"] = len((row.get("telemetry") or {}).get("timeline") or [])
                say("store", f"run {run_id} result: {json.dumps(shown, default=str)}")
            store.close()
    except Exception as e:  # the store is someone else's module: report, do not crash the check
        say("store", f"FAIL: {type(e).__name__}: {e}")
        return False
    return True


def _stats(samples: list[float]) -> dict:
    try:
        from benchmark.analysis.summary import summarize

        return summarize(samples)
    except ImportError:
        return {"median": statistics.median(samples), "rounds": len(samples)}


def _machine(torch) -> dict:
    try:
        from benchmark.environment import collect_machine

        return collect_machine()
    except ImportError:
        return {"hostname": "gpu-check", "gpu": torch.cuda.get_device_name(0)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="CUDA and NVML end-to-end check (torch runner)")
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--iters", type=int, default=10, help="iterations per round")
    parser.add_argument("--lstm-seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    torch = require_cuda()
    print_env(torch)
    timings = {label: time_case(label, case, args.rounds, args.iters) for label, case in CASES.items()}
    telemetry, rate, per_step = lstm_telemetry(torch, args.lstm_seconds)
    report_telemetry(telemetry, rate, per_step)
    ok = store_roundtrip(telemetry, timings["abs[1000x1000]"], torch) and telemetry is not None
    say("gpu_check", "OK" if ok else "FAIL (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
