"""The reference probe: a fixed workload that calls no framework code, timed in every worker process
before its first trial and after each, so that a trial's value has beside it how fast the machine
was at that moment.

It has two parts, so that a drift of the core's speed (frequency, a neighbour on the same core) and
one of the memory system (bandwidth, a neighbour's cache traffic) both show:

* **compute**: `numpy.sin` over 4,096 float64 values (32 KiB, inside the L1 data cache), 120 calls
  a block, 5 blocks (about 2 ms a block on the machine this was written on);
* **memory**: copies of a 16 MiB float64 array into another (32 MiB of traffic a copy, beyond the
  L2 cache), 2 copies a block, 4 blocks (about 2.5 ms a block there).

A part's time is the median of its blocks times the number of blocks (an interrupt inside one
block does not move it); the probe's figure is the sum of the two parts, in seconds: about 20 ms
there. The workload never changes, so the figure is comparable between runs of one machine, and
only there. Its arrays are allocated and touched once per process, on the first probe, outside the
timing.

numpy rather than compiled code: its ufuncs run single-threaded, whatever the thread settings of
the framework, and it is always installed beside the harness. Its repeatability on one machine is
measured in docs/measurement.md ("The reference probe").
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np

COMPUTE_VALUES = 4096
COMPUTE_CALLS_PER_BLOCK = 120
COMPUTE_BLOCKS = 5
MEMORY_BYTES = 16 * 1024 * 1024
MEMORY_COPIES_PER_BLOCK = 2
MEMORY_BLOCKS = 4


@dataclass(frozen=True)
class ProbeTime:
    """One probe: seconds of its compute part and of its memory part (each the median block times
    the number of blocks); `seconds` is their sum, the figure stored and compared."""

    compute_s: float
    memory_s: float

    @property
    def seconds(self) -> float:
        return self.compute_s + self.memory_s

    def to_dict(self) -> dict[str, float]:
        return {"compute_s": self.compute_s, "memory_s": self.memory_s}


class Probe:
    """The probe of one process: its arrays, allocated on the first call, and its last time."""

    def __init__(self) -> None:
        self._compute: tuple[np.ndarray, np.ndarray] | None = None
        self._memory: tuple[np.ndarray, np.ndarray] | None = None
        self.last: ProbeTime | None = None

    def _arrays(self):
        if self._compute is None or self._memory is None:
            x = np.linspace(0.0, 1.0, COMPUTE_VALUES)
            self._compute = (x, np.empty_like(x))
            src = np.ones(MEMORY_BYTES // 8)
            dst = np.empty_like(src)
            np.copyto(dst, src)  # every page touched before anything is timed
            self._memory = (src, dst)
        return self._compute, self._memory

    def run(self) -> ProbeTime:
        """Time the workload once; kept as `last`."""
        (x, y), (src, dst) = self._arrays()
        clock = time.perf_counter
        compute = []
        for _ in range(COMPUTE_BLOCKS):
            t0 = clock()
            for _ in range(COMPUTE_CALLS_PER_BLOCK):
                np.sin(x, out=y)
            compute.append(clock() - t0)
        memory = []
        for _ in range(MEMORY_BLOCKS):
            t0 = clock()
            for _ in range(MEMORY_COPIES_PER_BLOCK):
                np.copyto(dst, src)
            memory.append(clock() - t0)
        self.last = ProbeTime(
            compute_s=statistics.median(compute) * COMPUTE_BLOCKS,
            memory_s=statistics.median(memory) * MEMORY_BLOCKS,
        )
        return self.last


def around(before: ProbeTime | None, after: ProbeTime) -> float:
    """The probe figure of a trial between two probes: their geometric mean in seconds (the one
    after alone for a trial with none before)."""
    if before is None:
        return after.seconds
    return float(np.sqrt(before.seconds * after.seconds))
