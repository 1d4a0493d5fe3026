"""The summary of a telemetry timeline (pure functions of the samples): means and maxima,
energy, clocks, and the clock-event ("throttle") reasons decoded."""

from __future__ import annotations

import statistics
from typing import Any

# Clock event ("throttle") reason bits, identical to nvmlClocksEventReason* / nvmlClocksThrottleReason*.
THROTTLE_REASON_BITS: dict[int, str] = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}
# The reasons that mean the GPU ran slower than it could for the work it had (not idle, not a user
# setting): a case that saw one of these is marked `throttled`.
PERFORMANCE_THROTTLE_REASONS = frozenset(
    {
        "sw_power_cap",
        "hw_slowdown",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
        "hw_power_brake_slowdown",
        "board_limit",
        "reliability",
    }
)


def decode_throttle_reasons(mask: int | None) -> list[str]:
    """Names of the bits set in an NVML clock-event (throttle) reason bitmask."""
    if not mask:
        return []
    names = [name for bit, name in THROTTLE_REASON_BITS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_REASON_BITS)
    if unknown:
        names.append(f"unknown_0x{unknown:x}")
    return names


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _present(rows: list[dict[str, Any]], key: str) -> list[Any]:
    return [row[key] for row in rows if row.get(key) is not None]


def integrate_power_j(rows: list[dict[str, Any]]) -> float | None:
    """Energy in joules by the trapezoid rule over (t, power_w); None with fewer than two readings."""
    points = [(row["t"], row["power_w"]) for row in rows if row.get("power_w") is not None]
    if len(points) < 2:
        return None
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(points, points[1:], strict=False))


def energy_j(rows: list[dict[str, Any]]) -> tuple[float | None, str | None]:
    """(joules, source): the energy counter's delta when it was read, else integrated power."""
    counter = _present(rows, "energy_mj")
    if len(counter) >= 2 and counter[-1] >= counter[0]:
        return (counter[-1] - counter[0]) / 1000.0, "counter"
    integrated = integrate_power_j(rows)
    return (integrated, "integrated_power") if integrated is not None else (None, None)


def summarize_timeline(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-result summary of a timeline (pure; see NvmlSampler.summary for the other fields)."""
    gpu = _present(rows, "gpu_util")
    mem = _present(rows, "mem_util")
    power = _present(rows, "power_w")
    sm = _present(rows, "sm_clock_mhz")
    temp = _present(rows, "temperature_c")
    used = _present(rows, "mem_used_bytes")
    reasons = sorted({name for row in rows for name in row.get("throttle_reasons") or []})
    energy, source = energy_j(rows)
    return {
        "samples": len(rows),
        "gpu_util_mean": _mean(gpu),
        "gpu_util_max": max(gpu, default=None),
        "mem_util_mean": _mean(mem),
        "mem_util_max": max(mem, default=None),
        "mem_used_max_bytes": max(used, default=None),
        "power_mean_w": _mean(power),
        "power_max_w": max(power, default=None),
        "energy_j": energy,
        "energy_source": source,
        "sm_clock_min_mhz": min(sm, default=None),
        "sm_clock_max_mhz": max(sm, default=None),
        "temperature_max_c": max(temp, default=None),
        "throttled": any(name in PERFORMANCE_THROTTLE_REASONS for name in reasons),
        "throttle_reasons": reasons,
    }
