"""A stored run (`RunRecord`) and the job it came from (`job_of`: the suite, or a side job)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The jobs a run can come from, by its trigger: the suite's own runs (local, ci, nightly, imports ...)
# and the side jobs, whose runs live in series of their own (machine fingerprint suffixed
# /compare-A, /compare-B, /bisect, /night) and in views of their own.
SUITE = "suite"
SIDE_JOBS = ("compare", "bisect", "night")
JOBS = (SUITE, *SIDE_JOBS)


def job_of(trigger: str | None) -> str:
    """The job of a run with this trigger: "compare", "bisect", "night" or "suite"."""
    return trigger if trigger in SIDE_JOBS else SUITE


@dataclass(frozen=True)
class RunRecord:
    """One stored run (`Store.run`, `Store.runs`): the run row, its machine, and what the store
    found of its results. Times are aware UTC datetimes."""

    id: int
    machine_id: int
    started_at: dt.datetime
    finished_at: dt.datetime | None
    heartbeat_at: dt.datetime | None  # the writer's last sign of life
    # The effective status: "complete" with results missing reads "incomplete", and a "running"
    # run whose process died (or lease expired) reads "interrupted"; `recorded_status` is the row's.
    status: str
    git_commit: str | None
    git_branch: str | None
    git_dirty: bool | None
    paddle_version: str | None
    paddle_commit: str | None
    cuda_version: str | None
    cudnn_version: str | None
    framework: Mapping[str, Any]  # the framework build's description
    env: Mapping[str, Any]  # speed-relevant environment variables
    trigger: str  # local, ci, nightly, compare, ...
    tags: tuple[str, ...]
    hostname: str | None
    pid: int | None  # of the process that ran it
    extra: Mapping[str, Any]  # the rest of the run's description (settings, expected_cases, machine_env)
    expected_results: int | None  # results it set out to store (None: not known)
    run_group: str | None
    heartbeat_s: float | None  # heartbeat period, seconds
    note: str | None  # why it ended the way it did
    machine: str  # the machine fingerprint
    machine_info: Mapping[str, Any]  # the machine's full description
    places: tuple[str, ...]  # places of its stored results but the skipped ones, sorted
    results: int  # stored results
    results_by_status: Mapping[str, int]  # stored results per status
    missing: int | None  # expected but not stored (None: not known)
    recorded_status: str  # the status in the run row
    # Where the run came from: the file it was imported from and its sha256 (None: measured by the
    # harness), and whether it may be the baseline of later runs (an import only with --as-baseline).
    import_source: str | None = None
    import_sha256: str | None = None
    baseline: bool = True
    # The reference probe's median figure over the run's trials, seconds (None: none was timed).
    probe_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The run as a plain dict in field order (the exports' `run`)."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name in ("framework", "env", "extra", "machine_info", "results_by_status"):
            data[name] = dict(data[name])
        data["tags"], data["places"] = list(self.tags), list(self.places)
        return data
