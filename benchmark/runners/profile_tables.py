"""Profile summaries from flattened profiler events: the operator table, copy counts, run-to-run diffs.

Pure functions over plain data (no paddle import): the events come from
`benchmark.runners.paddle_profile.profile_steps` (format documented there), or from a stored JSON.
`op_table` (per operator: calls, CPU and GPU time), `copy_counts` (host/device copies and memsets),
`diff_tables` (what got slower or is called more often), `summarize` (the record stored in
``CaseResult.profile``), `format_table` (a fixed-width text table).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from benchmark.units import format_seconds

DEVICE_TYPES = ("kernel", "memcpy", "memset")
COPY_KINDS = ("h2d", "d2h", "d2d", "p2p", "other", "memset")
# CUPTI copy kinds as paddle names them (MEMCPY_HtoD, ...); anything else (HtoH, arrays) is "other".
_COPY_NAMES = {"MEMCPY_HtoD": "h2d", "MEMCPY_DtoH": "d2h", "MEMCPY_DtoD": "d2d", "MEMCPY_PtoP": "p2p"}
_GRAD_NODE = re.compile(r"^(?:Global_|Local_)?(\w*?)GradNode(\w*)$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Defaults of diff_tables: a ratio beyond this is "slower" / "more calls".
SLOWER_RATIO = 1.10


def _snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def operator_name(raw: str) -> str:
    """A mode-independent operator name: ``abs dygraph`` / ``pd_op.abs`` -> ``abs``,
    ``Global_AbsGradNode`` -> ``abs_grad``, ``Global_GradNodeAccumulation`` -> ``grad_accumulation``."""
    name = raw.strip()
    if name.endswith(" dygraph"):
        name = name[: -len(" dygraph")]
    for prefix in ("pd_op.", "pd_kernel.", "cinn_op.", "builtin."):
        if name.startswith(prefix):
            return name[len(prefix) :]
    m = _GRAD_NODE.match(name)
    if m:
        base, suffix = m.groups()
        if base:
            return _snake(base) + "_grad" + (("_" + _snake(suffix)) if suffix else "")
        return "grad" + (("_" + _snake(suffix)) if suffix else "")
    return name


def _duration(e: dict[str, Any]) -> int:
    return max(0, int(e["end_ns"]) - int(e["start_ns"]))


def _operator_ancestors(events: Sequence[dict[str, Any]]) -> list[list[int]]:
    """For each event, the ids of its operator ancestors (nearest first), via the parent links."""
    by_id = {e["id"]: e for e in events}
    out: list[list[int]] = []
    for e in events:
        chain, pid = [], e.get("parent")
        while pid is not None and pid in by_id:
            parent = by_id[pid]
            if parent["type"] == "operator":
                chain.append(pid)
            pid = parent.get("parent")
        out.append(chain)
    return out


def _step_count(events: Sequence[dict[str, Any]], steps: int | None) -> int:
    if steps:
        return int(steps)
    # The profiler opens one more (empty) step after the last prof.step(); count the non-empty ones.
    return max(1, len(step_times(events)))


def op_table(events: Sequence[dict[str, Any]], steps: int | None = None) -> list[dict[str, Any]]:
    """One row per operator (normalised by `operator_name`), sorted by GPU total then CPU total,
    largest first: calls, CPU (host) and GPU (device) time, total and average per step, and share.

    CPU time is the operator event's own span (inclusive of nested events); GPU time is the sum of
    the kernels, memcpys and memsets launched from it (from its CUDA runtime calls, at any depth).
    ``share`` is the operator's CPU total over the CPU total of all outermost operators (an operator
    nested in another is not counted twice); ``gpu_share`` likewise for GPU time."""
    n_steps = _step_count(events, steps)
    ancestors = _operator_ancestors(events)
    by_id = {e["id"]: i for i, e in enumerate(events)}
    gpu_of: dict[int, int] = {}
    for e, chain in zip(events, ancestors, strict=True):
        if e["type"] in DEVICE_TYPES:
            for op_id in chain:
                gpu_of[op_id] = gpu_of.get(op_id, 0) + _duration(e)
    rows: dict[str, dict[str, Any]] = {}
    total_cpu = total_gpu = 0
    for e in events:
        if e["type"] != "operator":
            continue
        cpu, gpu = _duration(e), gpu_of.get(e["id"], 0)
        if not ancestors[by_id[e["id"]]]:
            total_cpu += cpu
            total_gpu += gpu
        row = rows.setdefault(operator_name(e["name"]), {"calls": 0, "cpu_total_ns": 0, "gpu_total_ns": 0})
        row["calls"] += 1
        row["cpu_total_ns"] += cpu
        row["gpu_total_ns"] += gpu
    table = []
    for name, r in rows.items():
        calls = r["calls"]
        table.append(
            {
                "name": name,
                "calls": calls,
                "calls_per_step": calls / n_steps,
                "cpu_total_ns": r["cpu_total_ns"],
                "cpu_avg_ns": r["cpu_total_ns"] / calls,
                "cpu_per_step_ns": r["cpu_total_ns"] / n_steps,
                "gpu_total_ns": r["gpu_total_ns"],
                "gpu_avg_ns": r["gpu_total_ns"] / calls,
                "gpu_per_step_ns": r["gpu_total_ns"] / n_steps,
                "share": r["cpu_total_ns"] / total_cpu if total_cpu else 0.0,
                "gpu_share": r["gpu_total_ns"] / total_gpu if total_gpu else 0.0,
            }
        )
    table.sort(key=lambda r: (-r["gpu_total_ns"], -r["cpu_total_ns"], r["name"]))
    return table


def copy_kind(event: dict[str, Any]) -> str | None:
    """``h2d``/``d2h``/``d2d``/``p2p``/``other`` for a memcpy event, ``memset`` for a memset, else None."""
    if event["type"] == "memset":
        return "memset"
    if event["type"] == "memcpy":
        return _COPY_NAMES.get(event["name"], "other")
    return None


def copy_counts(events: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """{kind: {"count", "bytes", "time_ns"}} for every kind in COPY_KINDS (zeros when absent)."""
    counts = {k: {"count": 0, "bytes": 0, "time_ns": 0} for k in COPY_KINDS}
    for e in events:
        kind = copy_kind(e)
        if kind is None:
            continue
        counts[kind]["count"] += 1
        counts[kind]["bytes"] += int(e.get("bytes") or 0)
        counts[kind]["time_ns"] += _duration(e)
    return counts


def step_times(events: Iterable[dict[str, Any]]) -> list[int]:
    """Wall time (ns) of each non-empty profiled step, in order."""
    events = list(events)
    parents = {e.get("parent") for e in events}
    return [
        _duration(e)
        for e in sorted(events, key=lambda e: e["start_ns"])
        if e["type"] == "profile_step" and e["id"] in parents
    ]


# The phases of a model's training step, as the model runner marks them (`paddle.profiler.RecordEvent`
# around each; benchmark/runners/models/running.py): name of the event -> phase.
PHASES = {"model.forward": "forward", "model.backward": "backward", "model.optimizer": "optimizer"}


def phase_times(events: Sequence[dict[str, Any]], steps: int) -> dict[str, float] | None:
    """Host nanoseconds per step of each phase of a model's step (forward with the loss, backward,
    optimizer), from the runner's marks; None where the step has none (not a model's training step)."""
    totals: dict[str, float] = {}
    for e in events:
        phase = PHASES.get(e["name"])
        if phase is not None:
            totals[phase] = totals.get(phase, 0.0) + _duration(e)
    if not totals:
        return None
    return {phase: totals.get(phase, 0.0) / max(1, steps) for phase in PHASES.values()}


def format_phases(phases: dict[str, float] | None, before: dict[str, float] | None = None) -> str:
    """One line: each phase's time per step; with `before`, the earlier time and the ratio beside."""
    if not phases:
        return "phases: not recorded (a model's training step marks forward, backward and optimizer)"
    parts = []
    for name, ns in phases.items():
        text = f"{name} {format_seconds(ns / 1e9)}"
        old = (before or {}).get(name)
        if old:
            text += f" (was {format_seconds(old / 1e9)}, x{ns / old:.2f})"
        parts.append(text)
    return "phases per step: " + ", ".join(parts)


def summarize(events: Sequence[dict[str, Any]], steps: int, *, top: int | None = None) -> dict[str, Any]:
    """The profile record of a result: steps, the op table (optionally the `top` rows), copy counts,
    and for a model's training step its phases (`phase_times`)."""
    table = op_table(events, steps)
    times = step_times(events)
    record = {
        "steps": steps,
        "events": len(events),
        "step_ns": times,
        "has_device_events": any(e["type"] in DEVICE_TYPES for e in events),
        "op_table": table[:top] if top else table,
        "copies": copy_counts(events),
    }
    phases = phase_times(events, steps)
    if phases is not None:
        record["phases"] = phases
    return record


# ------------------------------------------------------------------------------------------
# Diffs between two runs
# ------------------------------------------------------------------------------------------


def _ratio(new: float, old: float) -> float | None:
    if old > 0:
        return new / old
    return None if new == 0 else float("inf")


def _time_key(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    """GPU time when both runs have it (or the one present has it), else CPU time."""
    rows = [r for r in (old, new) if r]
    return "gpu_avg_ns" if all(r.get("gpu_total_ns") for r in rows) else "cpu_avg_ns"


def _diff_row(
    name: str, old: dict[str, Any] | None, new: dict[str, Any] | None, threshold: float
) -> dict[str, Any]:
    key = _time_key(old, new)
    per_step = key.replace("avg", "per_step")
    o_calls, n_calls = (old or {}).get("calls_per_step", 0.0), (new or {}).get("calls_per_step", 0.0)
    o_time, n_time = (old or {}).get(key, 0.0), (new or {}).get(key, 0.0)
    row = {
        "name": name,
        "time": "gpu" if key.startswith("gpu") else "cpu",
        "old_calls_per_step": o_calls,
        "new_calls_per_step": n_calls,
        "calls_ratio": _ratio(n_calls, o_calls),
        "old_avg_ns": o_time,
        "new_avg_ns": n_time,
        "time_ratio": _ratio(n_time, o_time),
        "delta_per_step_ns": (new or {}).get(per_step, 0.0) - (old or {}).get(per_step, 0.0),
    }
    if old is None:
        row["change"] = "new"
    elif new is None:
        row["change"] = "gone"
    else:
        changes = []
        if row["time_ratio"] is not None and row["time_ratio"] > threshold:
            changes.append("slower")
        elif row["time_ratio"] is not None and row["time_ratio"] < 1 / threshold:
            changes.append("faster")
        if row["calls_ratio"] is not None and row["calls_ratio"] > 1.0:
            changes.append("more_calls")
        elif row["calls_ratio"] is not None and row["calls_ratio"] < 1.0:
            changes.append("fewer_calls")
        row["change"] = ",".join(changes) or "same"
    return row


def diff_tables(
    old: Sequence[dict[str, Any]],
    new: Sequence[dict[str, Any]],
    *,
    threshold: float = SLOWER_RATIO,
    changed_only: bool = False,
) -> list[dict[str, Any]]:
    """Compare two op tables by operator name, per step (the two runs may profile different step counts).

    Each row: ``name``, ``time`` (``gpu`` or ``cpu``: which average is compared), old/new calls per
    step and ``calls_ratio``, old/new average time and ``time_ratio`` (new/old), the change of the
    operator's time per step ``delta_per_step_ns``, and ``change``: ``new``, ``gone``, ``same`` or a
    comma-joined subset of ``slower``/``faster`` (time ratio beyond `threshold` either way) and
    ``more_calls``/``fewer_calls``. Sorted by ``delta_per_step_ns``, the largest increase first.
    """
    if threshold < 1:
        raise ValueError(f"threshold: expected a ratio >= 1, got {threshold}")
    old_rows, new_rows = {r["name"]: r for r in old}, {r["name"]: r for r in new}
    names = list(dict.fromkeys([*old_rows, *new_rows]))
    rows = [_diff_row(n, old_rows.get(n), new_rows.get(n), threshold) for n in names]
    if changed_only:
        rows = [r for r in rows if r["change"] != "same"]
    rows.sort(key=lambda r: (-r["delta_per_step_ns"], r["name"]))
    return rows


# ------------------------------------------------------------------------------------------
# Text
# ------------------------------------------------------------------------------------------


def format_ns(ns: float | None) -> str:
    """Nanoseconds (the profiler's unit) written as every duration is: benchmark.units."""

    return format_seconds(None if ns is None else ns * 1e-9)


def _fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    return "inf" if r == float("inf") else f"{r:.2f}x"


_COLUMNS: dict[str, tuple[str, Any]] = {
    "name": ("operator", str),
    "calls": ("calls", str),
    "calls_per_step": ("calls/step", lambda v: f"{v:.3g}"),
    "cpu_total_ns": ("CPU total", format_ns),
    "cpu_avg_ns": ("CPU avg", format_ns),
    "gpu_total_ns": ("GPU total", format_ns),
    "gpu_avg_ns": ("GPU avg", format_ns),
    "share": ("share", lambda v: f"{100 * v:.1f}%"),
    "gpu_share": ("GPU share", lambda v: f"{100 * v:.1f}%"),
    "time": ("time", str),
    "old_calls_per_step": ("old calls/step", lambda v: f"{v:.3g}"),
    "new_calls_per_step": ("new calls/step", lambda v: f"{v:.3g}"),
    "calls_ratio": ("calls ratio", _fmt_ratio),
    "old_avg_ns": ("old avg", format_ns),
    "new_avg_ns": ("new avg", format_ns),
    "time_ratio": ("time ratio", _fmt_ratio),
    "delta_per_step_ns": ("delta/step", format_ns),
    "change": ("change", str),
}
_OP_COLUMNS = ("name", "calls", "cpu_total_ns", "cpu_avg_ns", "gpu_total_ns", "gpu_avg_ns", "share")
_DIFF_COLUMNS = (
    "name",
    "change",
    "time",
    "old_calls_per_step",
    "new_calls_per_step",
    "old_avg_ns",
    "new_avg_ns",
    "time_ratio",
    "delta_per_step_ns",
)


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A fixed-width text table of op-table rows or diff rows (columns chosen by the row kind)."""
    if not rows:
        return "(no operators)"
    if columns is None:
        columns = _DIFF_COLUMNS if "change" in rows[0] else _OP_COLUMNS
        if "gpu_total_ns" in rows[0] and not any(r["gpu_total_ns"] for r in rows):
            columns = [c for c in columns if not c.startswith("gpu")]
    unknown = [c for c in columns if c not in _COLUMNS]
    if unknown:
        raise ValueError(f"unknown column(s) {unknown}; known: {', '.join(_COLUMNS)}")
    header = [_COLUMNS[c][0] for c in columns]
    body = [[_COLUMNS[c][1](r.get(c)) if r.get(c) is not None else "-" for c in columns] for r in rows]
    widths = [max(len(h), *(len(line[i]) for line in body)) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))]).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(b) for b in body)])
