"""The trials of one case measured in worker processes, and the result they make.

`CaseTrials.add` takes each trial's record (benchmark.runners.worker's `time` task) as it comes
in; `finish` makes the case's result: the run value is the median of the per-process medians, the
raw samples are pooled, each process keeps its entry (benchmark.analysis.processes.summarize_processes).
`apply_checks` adds the record of the checks after timing (reference check, torch timing, profile
pass), in-process or from the `checks` worker task.
"""

from __future__ import annotations

import dataclasses
import time

from benchmark.analysis.processes import summarize_processes
from benchmark.analysis.summary import stability_warnings
from benchmark.datamodel.case import Case
from benchmark.datamodel.result import CaseResult, ProcessValue, Stats
from benchmark.execution import measure
from benchmark.execution.replies import ChecksRecord, TrialRecord

# pyperf warns when the standard deviation exceeds 10% of the mean; so do we, between processes.
BETWEEN_CV_WARNING = 0.10


@dataclasses.dataclass
class CaseTrials:
    """The trials of one case so far, and the result they make (`finish`)."""

    case: Case
    result: CaseResult
    entries: list[ProcessValue] = dataclasses.field(default_factory=list)
    records: list[TrialRecord] = dataclasses.field(default_factory=list)  # the ok records, in trial order
    telemetry: dict = dataclasses.field(default_factory=dict)
    skipped: str | None = None
    error: str | None = None
    done: bool = False

    def add(self, trial, record: TrialRecord) -> bool:
        """Take one trial's record; True when the case has no more trials to run."""
        if record.skipped:
            self.skipped = record.message or "skipped by the runner"
        else:
            entry, message = record.entry(trial.index, trial.order)
            self.entries.append(entry)
            if message is None:
                self.records.append(record)
            elif self.error is None:
                self.error = message
                if record.traceback:
                    self.result.traceback = record.traceback
        self.done = bool(self.skipped or self.error) or trial.index == trial.processes - 1
        return self.done

    def finish(self) -> CaseResult:
        """The case's result from its trials (see the shared contract: run value = median of the
        process values, pooled raw samples, per-process entries)."""

        r = self.result
        r.processes = self.entries
        r.finished_at = time.time()
        if self.telemetry:
            r.telemetry = self.telemetry[min(self.telemetry)]
        if self.skipped:
            r.status, r.message = "skipped", self.skipped
            return r
        if self.error:
            r.status, r.message = "error", self.error
            r.stats = Stats(rounds=0, processes=len(self.records))
            return r
        pooled, stats = summarize_processes(self.entries)
        records = self.records
        first = records[0]
        r.status = "ok"
        r.samples, r.stats = pooled, stats
        r.iterations = first.iterations
        r.warmup_rounds = 1
        device = [x for rec in records for x in rec.device_samples or ()]
        r.device_samples = device or None
        peaks = [rec.peak_memory_bytes for rec in records if rec.peak_memory_bytes is not None]
        r.peak_memory_bytes = max(peaks) if peaks else None
        faults = [rec.page_faults_per_iter for rec in records]
        r.page_faults_per_iter = sum(faults) / len(faults)
        r.prepare_s = first.prepare_s
        r.timing = {
            "warmup_iterations": first.warmup_iterations,
            "estimate_s": first.estimate_s,
            "warmup_s": sum(rec.warmup_s for rec in records),
            "timed_s": sum(rec.timed_s for rec in records),
            "processes": len(records),
        }
        r.extra.update(first.info)
        # Within-process stability: each process's samples scaled to the run value, so that the
        # level differences between processes (reported as between_cv) do not count twice.
        median = stats.median or 0.0
        scaled = [
            x * median / e.value for e in self.entries if e.status == "ok" and e.value for x in e.samples
        ]
        r.warnings = stability_warnings(scaled, min_rounds=10)
        cv = stats.between_cv
        if cv is not None and cv == cv and cv > BETWEEN_CV_WARNING:
            values = ", ".join(measure.format_time(e.value) for e in self.entries if e.status == "ok")
            r.warnings.append(
                f"processes disagree: the {stats.processes} process values ({values}) spread by "
                f"{cv:.0%} (> {BETWEEN_CV_WARNING:.0%}); the machine may be busy or the case sensitive "
                "to process state (try more processes)"
            )
        if median and r.page_faults_per_iter * measure.FAULT_COST_S > 0.02 * median:
            r.warnings.append(
                f"page faults: {r.page_faults_per_iter:.1f} minor faults per iteration (~"
                f"{r.page_faults_per_iter * measure.FAULT_COST_S / median:.0%} of the time); the timing "
                "includes memory mapping (allocator not controlled, or tensors above the mmap threshold)"
            )
        items = first.items_per_step
        if items and median:
            unit = f"{first.info.get('items_unit') or 'samples'}/s"  # tokens/s where a batch is tokens
            r.throughput, r.throughput_unit, r.batch_size = items / median, unit, items
        return r

    def apply_checks(self, record: ChecksRecord) -> None:
        """The record of the case's checks after timing (see `apply_checks`)."""
        apply_checks(self.result, record)


def apply_checks(r: CaseResult, record: ChecksRecord) -> None:
    """The record of the case's checks after timing (`checks` task): reference check, torch
    timing (against the run value), profile pass; a failed check request errs the case."""
    if record.status != "ok":
        r.status = "error"
        message = record.message or "no record"
        r.message = f"checks after timing: {message.replace('worker process:', 'worker process')}"
        if record.traceback:
            r.traceback = record.traceback
        return
    if record.accuracy is not None:
        r.accuracy = record.accuracy
        if r.accuracy.get("status") in ("failed", "error"):
            r.status = "failed"
            r.message = f"accuracy vs {r.accuracy['reference']}: {r.accuracy.get('message')}"
    torch = record.torch
    if torch is not None:
        median = r.stats.median
        if torch.get("status") == "ok":
            torch["paddle_over_torch"] = median / torch["median"] if median and torch.get("median") else None
        r.torch = torch
    if record.profile is not None:
        r.profile = record.profile
