"""Environment changes of a series as events (pure: dicts in, labels out).

The machine fingerprint keys a series by hardware only; the volatile fields (GPU driver, CUDA driver,
kernel, OS release, Python patch version) are recorded with every run (``run.extra["machine_env"]``,
see :func:`benchmark.datamodel.environment.volatile_environment`). Where they differ between two consecutive
runs of a series, the later run is an *event*: a candidate change point for the detector
(``events=`` of :func:`benchmark.analysis.online.simulate_online` and
:func:`benchmark.analysis.segmentation.segment`), a line on the plots, an entry in the reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# How a field is named in an event's label.
FIELD_NAMES = {
    "gpu_driver": "driver",
    "cuda_driver_version": "CUDA driver",
    "kernel": "kernel",
    "os_release": "OS",
    "python_version": "Python",
}


def describe_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """``"driver 550.54 -> 560.28, Python 3.11.4 -> 3.11.7"``: the fields that differ ("" if none)."""
    parts = []
    for key in sorted(set(before) | set(after), key=lambda k: (k not in FIELD_NAMES, k)):
        old, new = before.get(key), after.get(key)
        if old != new:
            parts.append(
                f"{FIELD_NAMES.get(key, key)} {old if old is not None else '?'} -> {new if new is not None else '?'}"
            )
    return ", ".join(parts)


def environment_events(envs: Sequence[Mapping[str, Any] | None]) -> dict[int, str]:
    """``{index: label}`` of the runs whose environment differs from the previous known one.

    ``envs`` holds one environment per run of a series, oldest first; None or an empty mapping
    (a run recorded before environments were kept) is unknown and neither starts nor ends an event.
    """
    out: dict[int, str] = {}
    last: Mapping[str, Any] | None = None
    for i, env in enumerate(envs):
        if not env:
            continue
        if last is not None:
            label = describe_change(last, env)
            if label:
                out[i] = label
        last = env
    return out


def run_environment(extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """The recorded volatile environment of a stored run from its `extra` (`RunRecord.extra`);
    {} for a run recorded without one."""
    env = extra.get("machine_env") if isinstance(extra, Mapping) else None
    return dict(env) if isinstance(env, Mapping) else {}
