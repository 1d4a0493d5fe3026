"""Synthetic case results for the analysis, gate, store and report tests.

The CaseResult fields every such test fills the same way live here; each test draws its own
numbers and passes them in, with any field it needs different (kind, mode, status, config, ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from benchmark.analysis.processes import summarize_processes
from benchmark.analysis.summary import summarize
from benchmark.datamodel.result import CaseResult, Stats, process_entry

ITERATIONS = 10  # iterations per round recorded with every synthetic process


def _fields(case_id: str, fields: dict) -> dict:
    return {
        "case_id": case_id,
        "name": case_id.split("[")[0],
        "kind": "op",
        "place": "cpu",
        "mode": "dynamic",
        "config": {"case": case_id},
        "config_hash": f"cfg-{case_id}",
        "status": "ok",
        **fields,
    }


def result_from_samples(case_id: str, samples: Iterable[float], **fields) -> CaseResult:
    """A result whose raw samples are `samples` (none: empty stats, e.g. for an error)."""
    values = [float(x) for x in samples]
    stats = Stats.from_dict(summarize(values) if values else {})
    return CaseResult(**_fields(case_id, fields), samples=values, stats=stats)


def result_from_processes(
    case_id: str, processes: Sequence[Iterable[float]], probes: Sequence[float] | None = None, **fields
) -> CaseResult:
    """A result measured in one worker process per entry of `processes` (that
    process's samples), pooled and summarised as the suite does; `probes`: the
    reference probe's figure of each process (seconds), if any."""
    entries = [
        process_entry(k, 1000 + k, k, "ok", [float(x) for x in xs], ITERATIONS, None,
                      None if probes is None else float(probes[k]))
        for k, xs in enumerate(processes)
    ]  # fmt: skip
    pooled, stats = summarize_processes(entries)
    return CaseResult(**_fields(case_id, fields), samples=pooled, stats=stats, processes=entries)


def gate_rows(text: str) -> list[str]:
    """`benchmark gate`'s lines with each wrapped row joined back (a failing case's full reason goes
    on under its verdict, indented 13 columns, to keep rows within 120 characters)."""
    rows: list[str] = []
    for line in text.splitlines():
        if line.startswith(" " * 13) and rows:
            rows[-1] += " " + line.strip()
        else:
            rows.append(line)
    return rows
