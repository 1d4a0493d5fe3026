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
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
        "step_s": float(np.median(times)),
        "loss": float(pc.to_numpy(loss).reshape(-1)[0]),
    }
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    # started as a script: its directory (this package's) must not shadow top-level modules
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if not p or Path(p).resolve() != here]
    _rank_main(sys.argv[1], sys.argv[2])
