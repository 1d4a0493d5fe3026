"""Data parallel training of a registered model on N ranks with the engine Paddle ships,
`python -m paddle.distributed.launch --nproc_per_node N` (NCCL on GPUs, gloo between CPU ranks).

`run(model, args, ranks, ...)` is the parent side: it starts the launcher in a session of its own,
waits for it, and reads one JSON record per rank; interrupted (KeyboardInterrupt, a timeout), it
kills the launcher's whole process group, so no rank outlives it. Each rank (`python
data_parallel.py`, started by the launcher) builds the model with the registry's builder from the
same seed, wraps it in `paddle.DataParallel`, trains `warmup` steps, then times `steps` steps on its
own synthetic batch (drawn from seed + rank) and writes its step time and loss.

The figures: throughput per rank (items/s), the job's (their sum), and the scaling efficiency
against one rank, `throughput(N) / (N x throughput(1))`. A multi-node job runs the same launcher on
every node with `--nnodes K --master HOST:PORT` (docs/models.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


def run(
    model: str,
    args: dict[str, Any],
    ranks: int,
    out_dir: Path,
    *,
    steps: int = 20,
    warmup: int = 3,
    seed: int = 2024,
    timeout: float = 600.0,
) -> list[dict[str, Any]]:
    """Train `model` with `args` on `ranks` CPU ranks (or GPUs, where the launcher finds them) and
    return each rank's record: rank, world, items per step, step seconds (median), loss."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("rank*.json"):
        old.unlink()
    spec = json.dumps({"model": model, "args": args, "steps": steps, "warmup": warmup, "seed": seed})
    cmd = [
        sys.executable,
        "-m",
        "paddle.distributed.launch",
        "--nproc_per_node",
        str(ranks),
        "--log_dir",
        str(out_dir / "logs"),
        str(Path(__file__).resolve()),
        spec,
        str(out_dir),
    ]
    proc = subprocess.Popen(
        cmd,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,
    )
    # SIGTERM to this process ends the job as Ctrl-C does (the main thread only can set handlers)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if main else None
    try:
        code = proc.wait(timeout=timeout)
    except BaseException:
        stop(proc)
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
    if code != 0:
        raise RuntimeError(f"paddle.distributed.launch exited {code}; rank logs in {out_dir / 'logs'}")
    records = [json.loads(p.read_text()) for p in sorted(out_dir.glob("rank*.json"))]
    if len(records) != ranks:
        raise RuntimeError(f"{len(records)} of {ranks} ranks reported; rank logs in {out_dir / 'logs'}")
    return records


def _die_with_parent() -> None:
    """In the launcher, before it starts: SIGTERM when the process that started it dies (Linux
    prctl PR_SET_PDEATHSIG), even by SIGKILL; the launcher then stops its ranks."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def stop(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """End the launcher and every rank: SIGTERM to its process group, SIGKILL after `grace` s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # ranks that ignored SIGTERM, or outlived the launcher
    proc.wait()


def summarize(records: list[dict[str, Any]], single: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Throughput per rank and of the job; with `single` (the same model on one rank), the scaling
    efficiency."""
    per_rank = [r["items_per_step"] / r["step_s"] for r in records]
    out: dict[str, Any] = {"ranks": len(records), "per_rank": per_rank, "total": sum(per_rank)}
    if single:
        one = single[0]["items_per_step"] / single[0]["step_s"]
        out["efficiency"] = out["total"] / (len(records) * one)
    return out


def trial(case, settings) -> dict[str, Any]:
    """One timing trial of a model case with `devices: N` (the worker's `time` task): the case's
    model on one rank, then on N ranks, each through the launcher. The record's samples are rank
    0's seconds per step of the N-rank job (one step a round), its items per step the job's (N
    batches), and its info the throughput per rank, the single rank's and the scaling efficiency."""
    import tempfile

    spec = case.spec
    ranks = int(spec.devices)
    if spec.step != "train":
        raise ValueError("data parallel (devices) runs the train step only")
    steps = max(5, settings.min_rounds)
    warmup = max(2, settings.min_warmup_iterations)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-dp-") as tmp:
        single = run(
            spec.model, dict(spec.args), 1, Path(tmp, "one"), steps=steps, warmup=warmup, seed=spec.seed
        )
        start = time.time()
        records = run(
            spec.model, dict(spec.args), ranks, Path(tmp, "many"), steps=steps, warmup=warmup, seed=spec.seed
        )
        end = time.time()
    summary = summarize(records, single)
    first = min(records, key=lambda r: r["rank"])
    timed = float(sum(first["times"]))
    return {
        "status": "ok",
        "samples": first["times"],
        "device_samples": None,
        "iterations": 1,
        "warmup_iterations": warmup,
        "estimate_s": first["step_s"],
        "items_per_step": first["items_per_step"] * ranks,
        "peak_memory_bytes": None,
        "page_faults_per_iter": 0.0,
        "prepare_s": time.perf_counter() - t0 - timed,
        "warmup_s": 0.0,
        "timed_s": timed,
        "timed_window": [end - timed, end],
        "probe": None,
        "info": {
            "model": spec.model,
            "args": dict(spec.args),
            "step": "train",
            "devices": ranks,
            "items_per_step": first["items_per_step"] * ranks,
            "items_per_rank": first["items_per_step"],
            "items_unit": first.get("items_unit", "samples"),
            "per_rank_items_s": summary["per_rank"],
            "total_items_s": summary["total"],
            "single_rank_items_s": single[0]["items_per_step"] / single[0]["step_s"],
            "efficiency": summary["efficiency"],
            "engine": "paddle.distributed.launch",
            "window_s": [start, end],
        },
    }


def _rank_main(spec_text: str, out_dir: str) -> None:
    import numpy as np

    from benchmark.runners import paddle_common as pc
    from benchmark.runners.models.registry import resolve

    spec = json.loads(spec_text)
    pd = pc.paddle()
    dist = pd.distributed
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    entry, args = resolve(spec["model"], spec["args"])
    pd.seed(spec["seed"])
    built = entry.build(args)
    net = pd.DataParallel(built.net) if world > 1 else built.net
    inputs, labels = built.make_batch(np.random.default_rng(spec["seed"] + rank))
    xs = [pd.to_tensor(v) for v in inputs]
    ys = [pd.to_tensor(v) for v in labels]
    opt = pd.optimizer.Adam(learning_rate=1e-4, parameters=net.parameters())
    net.train()

    def step():
        loss = built.loss(net(*xs), *ys)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    for _ in range(spec["warmup"]):
        step()
    times = []
    for _ in range(spec["steps"]):
        t0 = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - t0)
    record = {
        "rank": rank,
        "world": world,
        "model": spec["model"],
        "items_per_step": built.items,
        "items_unit": built.unit,
        "step_s": float(np.median(times)),
        "times": times,
        "loss": float(pc.to_numpy(loss).reshape(-1)[0]),
    }
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    # started as a script: its directory (this package's) must not shadow top-level modules
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if not p or Path(p).resolve() != here]
    _rank_main(sys.argv[1], sys.argv[2])
