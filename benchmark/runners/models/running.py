"""The model runner: a model case (a registered builder and its arguments) -> a prepared step.

The runner times a full training step (forward, loss, backward, optimizer step, clear gradients;
under `paddle.amp.auto_cast` and a GradScaler with AMP O1/O2) or an inference step (forward under
`paddle.no_grad`), and reports items/s from the builder's items per step. Before the timed steps,
in `prepare` and so never inside the timed region, it records in the result's `extra` (the
runner's `info`):

- `loss`: the loss after `LOSS_STEPS` training steps from the case's seed on its fixed synthetic
  batch (an inference step: the loss of one forward), with the loss of every step; the judge holds
  it to the series' earlier value (`benchmark.gate.numerics`);
- `first_step_s` and `steady_step_s`: the first step's wall time (in `to_static` mode it holds
  the translation and compilation) and the median of the following ones; `compile_s` is their
  difference.

On CPU the peak memory is the worker's peak resident set (VmHWM, reset before the model is built
where the kernel lets it: /proc/self/clear_refs), on a GPU the allocator's peak.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.datamodel.case import Case
from benchmark.runners import paddle_common as pc
from benchmark.runners.base import Prepared, RunnerUnavailable
from benchmark.runners.models.registry import Built, ModelArgs, ModelEntry, resolve

LOSS_STEPS = 3  # K: the loss after this many training steps is the case's numerics check


def build(name: str, args: dict[str, Any], batch_size: Any = None) -> tuple[ModelEntry, ModelArgs, Built]:
    """Build the registered model `name` with `args` (ValueError where they are refused)."""
    entry, full = resolve(name, args, batch_size)
    return entry, full, entry.build(full)


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def rss_peak_tracker() -> tuple[Any, str]:
    """(reader of this process's peak resident set in bytes, what it covers). Resets the peak to the
    current resident set first (writing 5 to /proc/self/clear_refs, Linux 4.0+) so that it is this
    case's; where that is refused the peak covers the whole process."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        covers = "peak RSS of the worker since the model was built (VmHWM, reset)"
    except OSError:
        covers = "peak RSS of the worker process since it started (VmHWM)"
    if _status_kib("VmHWM") is None:
        return (lambda: None), "unavailable"
    return (lambda: _status_kib("VmHWM")), covers


def prepare(case: Case) -> Prepared:
    spec = case.spec
    place, mode, step_kind = case.place, case.mode, spec.step
    if spec.model is None:
        raise ValueError(f"{case.case_id}: not a model case (kind {spec.kind!r})")
    if mode == "static":
        raise ValueError("model cases run in 'dynamic' or 'to_static' mode")
    entry, a = resolve(spec.model, dict(spec.args), spec.batch_size)
    if a.amp != "O0" and place == "cpu":
        raise RunnerUnavailable(f"AMP {a.amp} runs on a GPU place only (this case's place is cpu)")
    pc.set_place(place)
    pd = pc.paddle()
    rss, rss_covers = rss_peak_tracker() if place == "cpu" else (None, None)
    pd.seed(spec.seed)
    built = entry.build(a)
    net = built.net
    inputs, labels = built.make_batch(np.random.default_rng(spec.seed))
    xs = [pd.to_tensor(v, place=pc.static_place(place)) for v in inputs]
    ys = [pd.to_tensor(v, place=pc.static_place(place)) for v in labels]
    amp = a.amp != "O0"
    if step_kind == "train":
        net.train()
        opt = pd.optimizer.Adam(learning_rate=1e-4, parameters=net.parameters())
        if a.amp == "O2":
            net, opt = pd.amp.decorate(models=net, optimizers=opt, level="O2")
        scaler = pd.amp.GradScaler(init_loss_scaling=1024) if amp else None
    else:
        net.eval()
    if mode == "to_static":
        net = pd.jit.to_static(net)

    def forward_loss():
        with pd.amp.auto_cast(enable=amp, level=a.amp if amp else "O1"):
            return built.loss(net(*xs), *ys)

    if step_kind == "train":
        # marks for the profile pass's phases (benchmark.runners.profile_tables.phase_times); no-ops without a profiler
        from paddle.profiler import RecordEvent

        def step():
            with RecordEvent("model.forward"):
                loss = forward_loss()
            with RecordEvent("model.backward"):
                (scaler.scale(loss) if scaler is not None else loss).backward()
            with RecordEvent("model.optimizer"):
                if scaler is not None:
                    scaler.step(opt)
                    scaler.update()
                else:
                    opt.step()
                opt.clear_grad()
            return loss
    else:

        def step():
            with pd.no_grad(), pd.amp.auto_cast(enable=amp, level=a.amp if amp else "O1"):
                return net(*xs)

    sync = pc.synchronizer(place)
    losses, times = [], []
    for _ in range(LOSS_STEPS if step_kind == "train" else 2):
        t0 = time.perf_counter()
        out = step()
        sync()
        times.append(time.perf_counter() - t0)
        if step_kind == "train":
            losses.append(float(pc.to_numpy(out).reshape(-1)[0]))
    if step_kind != "train":
        with pd.no_grad():
            losses.append(float(pc.to_numpy(forward_loss()).reshape(-1)[0]))
    steady = statistics.median(times[1:])
    info: dict[str, Any] = {
        "model": spec.model,
        "args": a.model_dump(),
        "step": step_kind,
        "parameters": int(sum(int(np.prod(p.shape)) for p in built.net.parameters())),
        "items_per_step": built.items,
        "items_unit": built.unit,
        "loss": {
            "value": losses[-1],
            "step": LOSS_STEPS if step_kind == "train" else 0,
            "losses": losses,
            "seed": spec.seed,
        },
        "first_step_s": times[0],
        "steady_step_s": steady,
        "compile_s": max(0.0, times[0] - steady),
    }
    if rss_covers is not None:
        info["peak_memory_source"] = rss_covers
    device_peak = pc.peak_memory_tracker(place)

    def outputs() -> dict[str, np.ndarray]:
        return {"out": pc.to_numpy(step())}

    return Prepared(
        step=step,
        sync=sync,
        items_per_step=built.items,
        outputs=outputs,
        peak_memory=device_peak or rss,
        device_timer=pc.device_timer_factory(place),
        info=info,
    )
