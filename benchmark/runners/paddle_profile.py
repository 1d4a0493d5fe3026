"""The profile pass: run a prepared case under `paddle.profiler` and flatten the event tree into plain dicts.

Run it after the timed measurement, never inside it: the profiler slows every event down. The
events come from the profiler's result tree (``Profiler.profiler_result.get_data()``: one
``HostPythonNode`` tree per thread, each node with ``children_node``, ``runtime_node`` (CUDA runtime
calls) and, under those, ``device_node`` (kernels, memcpy, memset with ``num_bytes``)), not from the
printed summary. `benchmark.runners.profile_tables` turns the flat list into the operator table and copy counts.

Device time, two figures (``record["device_time"]``, CUDA places only):

``kernel_s``
    the sum of the kernel durations the profiler recorded, per step (``device_s`` adds memcpy and
    memset): what the GPU spent computing.
``event_s``
    CUDA events around one step each (device synchronized before), per step, measured right after
    the profiled steps with the profiler off: what the suite's ``device_samples`` measure, including
    the gaps in which the device waits for the host to launch the next kernel.

``launch_gap_s = event_s - device_s`` is then the launch overhead of a launch-bound case (small
ops: most of ``event_s``), and near 0 for a compute-bound one.

A flattened event is::

    {"id": 7, "parent": 3 | None, "depth": 2, "thread": 8676, "name": "abs dygraph",
     "type": "operator", "start_ns": ..., "end_ns": ..., "device": "cpu",
     # device events only:
     "stream": 7, "correlation_id": 123, "bytes": 4000000 (memcpy/memset)}

``type`` is the profiler's TracerEventType in snake case (``operator``, ``operator_inner``,
``dygraph_kernel_launch``, ``static_kernel_launch``, ``cuda_runtime``, ``kernel``, ``memcpy``,
``memset``, ``profile_step``, ``user_defined``, ``forward``, ``backward``, ``optimization``, ...).
The per-thread root pseudo-node is dropped; its children have ``parent`` None and depth 0. Static
programs run their operators on executor worker threads, outside the ``profile_step`` events.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from benchmark.runners import paddle_common as pc

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ROOT_NAME = "root node"


def snake(name: str) -> str:
    """TracerEventType names to snake case: DygraphKernelLaunch -> dygraph_kernel_launch."""
    return _CAMEL.sub("_", name).lower()


def _type_name(t: Any) -> str:
    return snake(getattr(t, "name", None) or str(t).rsplit(".", 1)[-1])


class _Flattener:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def _add(self, **fields: Any) -> int:
        fields["id"] = len(self.events)
        self.events.append(fields)
        return fields["id"]

    def host(self, node, parent: int | None, depth: int, thread: int) -> None:
        own = self._add(
            parent=parent,
            depth=depth,
            thread=thread,
            name=node.name,
            type=_type_name(node.type),
            start_ns=int(node.start_ns),
            end_ns=int(node.end_ns),
            device="cpu",
        )
        self.children(node, own, depth + 1, thread)

    def children(self, node, parent: int | None, depth: int, thread: int) -> None:
        for runtime in node.runtime_node:
            rid = self._add(
                parent=parent,
                depth=depth,
                thread=thread,
                name=runtime.name,
                type=_type_name(runtime.type),
                start_ns=int(runtime.start_ns),
                end_ns=int(runtime.end_ns),
                device="cpu",
                correlation_id=int(runtime.correlation_id),
            )
            for dev in runtime.device_node:
                self.device(dev, rid, depth + 1, thread)
        for dev in getattr(node, "device_node", []) or []:
            self.device(dev, parent, depth, thread)
        for child in node.children_node:
            self.host(child, parent, depth, thread)

    def device(self, dev, parent: int | None, depth: int, thread: int) -> None:
        kind = _type_name(dev.type)
        fields: dict[str, Any] = {
            "parent": parent,
            "depth": depth,
            "thread": thread,
            "name": dev.name,
            "type": kind,
            "start_ns": int(dev.start_ns),
            "end_ns": int(dev.end_ns),
            "device": f"gpu:{int(dev.device_id)}",
            "stream": int(dev.stream_id),
            "correlation_id": int(dev.correlation_id),
        }
        if kind in ("memcpy", "memset"):
            fields["bytes"] = int(dev.num_bytes)
        self._add(**fields)


def flatten(data: dict[int, Any]) -> list[dict[str, Any]]:
    """Flatten ``profiler_result.get_data()`` (thread id -> root node) into event dicts (see module doc)."""
    flat = _Flattener()
    for thread, root in sorted(data.items()):
        if root is None:
            continue
        if root.name == _ROOT_NAME:
            flat.children(root, None, 0, int(thread))
        else:
            flat.host(root, None, 0, int(thread))
    return flat.events


def profile_steps(
    prepared, place: str, steps: int = 5, trace_path: str | Path | None = None, *, warmup: int = 1
) -> list[dict[str, Any]]:
    """Run `steps` iterations of `prepared` under the profiler; return the flattened events.

    Targets the CPU, plus the GPU on CUDA places. `warmup` untraced iterations first (one-time
    costs such as building a static program's executor stay out of the table). Each profiled step
    ends with a device sync, so its device events fall inside it. With `trace_path`, the chrome
    trace (JSON, for chrome://tracing or Perfetto) is written there; nothing is written otherwise
    (paddle's default would drop files in ./profiler_log/).
    """
    if steps < 1:
        raise ValueError(f"steps: expected at least 1, got {steps}")
    profiler = pc.paddle().profiler
    targets = [profiler.ProfilerTarget.CPU]
    if place != "cpu":
        targets.append(profiler.ProfilerTarget.GPU)
    for _ in range(warmup):
        prepared.step()
    prepared.sync()

    # READY for one untraced step (the tracer's own start-up cost lands there), then RECORD.
    def schedule(step_num: int):
        return profiler.ProfilerState.READY if step_num == 0 else profiler.ProfilerState.RECORD

    prof = profiler.Profiler(targets=targets, scheduler=schedule, on_trace_ready=lambda _prof: None)
    prof.start()
    try:
        prepared.step()
        prepared.sync()
        prof.step()
        for _ in range(steps):
            prepared.step()
            prepared.sync()
            prof.step()
    finally:
        prof.stop()
    result = prof.profiler_result
    if trace_path is not None:
        Path(trace_path).parent.mkdir(parents=True, exist_ok=True)
        result.save(str(trace_path), "json")
    return flatten(result.get_data())


def kernel_time(events: list[dict[str, Any]], steps: int) -> dict[str, Any] | None:
    """Per-step sums of the recorded device events: ``kernel_s`` (kernels), ``device_s`` (kernels,
    memcpy, memset), ``kernels_per_step``; None when the profile has no device event (CPU)."""
    device = [e for e in events if e["type"] in ("kernel", "memcpy", "memset")]
    if not device or steps < 1:
        return None
    kernels = [e for e in device if e["type"] == "kernel"]

    def total_s(rows) -> float:
        return sum(max(0, int(e["end_ns"]) - int(e["start_ns"])) for e in rows) / 1e9 / steps

    return {
        "kernel_s": total_s(kernels),
        "device_s": total_s(device),
        "kernels_per_step": len(kernels) / steps,
    }


def event_time_per_step(prepared, steps: int) -> float | None:
    """Median over `steps` single steps of CUDA-event device time (synchronized before each); None
    where the case has no device timer (CPU, or Paddle 2.6 whose events read 0)."""
    if prepared.device_timer is None:
        return None
    times = []
    for _ in range(steps):
        timer = prepared.device_timer()
        prepared.sync()
        timer.start()
        prepared.step()
        timer.stop()
        prepared.sync()
        times.append(timer.elapsed_s())
    times.sort()
    return times[len(times) // 2]


def device_time_figures(kernels: dict[str, Any] | None, event_s: float | None) -> dict[str, Any] | None:
    """``kernel_time`` beside the event time of the same step, and their difference (launch gaps)."""
    if kernels is None:
        return None
    out = dict(kernels, event_s=event_s, launch_gap_s=None)
    if event_s is not None:
        out["launch_gap_s"] = event_s - kernels["device_s"]
    return out


def profile_record(
    prepared,
    place: str,
    steps: int = 5,
    trace_path: str | Path | None = None,
    *,
    top: int | None = None,
    keep_events: bool = False,
) -> dict[str, Any]:
    """The profile pass as a `CaseResult.profile` record: `benchmark.runners.profile_tables.summarize` of the events,
    plus ``device_time`` (kernel time beside event time per step, module doc; None on CPU),
    ``profile_s`` (wall time the pass took), ``trace_path`` and, with `keep_events`, the events."""
    from benchmark.runners.profile_tables import summarize

    t0 = time.perf_counter()
    events = profile_steps(prepared, place, steps=steps, trace_path=trace_path)
    record = summarize(events, steps, top=top)
    kernels = kernel_time(events, steps)
    record["device_time"] = device_time_figures(
        kernels, event_time_per_step(prepared, steps) if kernels is not None else None
    )
    record["profile_s"] = time.perf_counter() - t0
    record["trace_path"] = str(trace_path) if trace_path is not None else None
    if keep_events:
        record["event_list"] = events
    return record
