"""The result record: what one case measured in one run.

This is the contract between measurement, the JSON summary, the history store and the reports.
Everything in it is plain data (JSON-serialisable); samples are seconds per iteration.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

STATUSES = ("ok", "failed", "skipped", "error")


@dataclass
class CaseResult:
    case_id: str
    name: str
    kind: str
    place: str
    mode: str
    config: dict[str, Any]
    config_hash: str
    tags: list[str] = field(default_factory=list)
    status: str = "ok"
    message: str | None = None
    unit: str = "s"
    # Host wall-clock seconds per iteration, one value per timed round (the raw samples).
    samples: list[float] = field(default_factory=list)
    iterations: int = 1
    warmup_rounds: int = 0
    # Summary of `samples` (see benchmark.analysis.summary.summarize).
    stats: dict[str, float] = field(default_factory=dict)
    # Device seconds per iteration per round (CUDA events), where a device timed it.
    device_samples: list[float] | None = None
    throughput: float | None = None
    throughput_unit: str | None = None
    batch_size: int | None = None
    peak_memory_bytes: int | None = None
    page_faults_per_iter: float | None = None
    warnings: list[str] = field(default_factory=list)
    telemetry: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None
    accuracy: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    started_at: float | None = None
    finished_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseResult:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
