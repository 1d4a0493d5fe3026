"""The store's typed records, read back from a run the real suite recorded (`pytest benchmark/` in a
subprocess, two worker processes per case): `Store.run`, `Store.runs` and `Store.history` give a
`RunRecord` and `HistoryPoint`s whose fields hold what the suite measured and stored, on SQLite
and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from benchmark.datamodel.result import ProcessValue, Stats
from benchmark.datamodel.run import RunRecord
from benchmark.datamodel.series import HistoryPoint, SeriesKey
from benchmark.store import open_store
from benchmark.store.export import export_run

PROJECT = Path(__file__).resolve().parents[1]
CONFIG = """
cases:
  - name: rec_abs
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [16, 16]}}
    places: [cpu]
    modes: [dynamic]
    measure: {processes: 2}
"""


@pytest.fixture
def recorded(db_url, tmp_path) -> tuple[str, dict]:
    """(URL, the suite's --bench-json summary) of a history holding one real run of one case."""
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(textwrap.dedent(CONFIG))
    summary = tmp_path / "summary.json"
    cmd = [sys.executable, "-m", "pytest", "benchmark/", "-q", "-p", "no:cacheprovider", "--bench-quick",
           "--bench-config", str(cfg), "--bench-db", db_url, "--bench-json", str(summary)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return db_url, json.loads(summary.read_text())


@pytest.mark.slow
def test_a_recorded_run_reads_back_as_typed_records(recorded):
    url, summary = recorded
    check_run(url, summary)
    check_history(url, summary)


def check_run(url: str, summary: dict) -> None:
    (measured,) = summary["results"]
    with open_store(url, readonly=True) as store:
        run = store.run(store.latest_run_id())
        assert store.runs() == [run]  # the list and the single read agree field by field
        exported = json.loads(export_run(store, run.id, "json"))["run"]
    assert isinstance(run, RunRecord)
    assert isinstance(run.id, int) and isinstance(run.machine_id, int)
    assert isinstance(run.started_at, dt.datetime) and run.started_at.tzinfo is not None
    assert isinstance(run.finished_at, dt.datetime) and run.finished_at >= run.started_at
    assert (run.status, run.recorded_status) == ("complete", "complete")
    assert (run.expected_results, run.results, run.missing) == (1, 1, 0)
    assert run.results_by_status == {"ok": 1}
    assert run.places == ("cpu",)
    assert run.extra["expected_cases"] == [[measured["case_id"], "cpu", "dynamic"]]
    assert run.extra["trials"]["processes"] == summary["run"]["trials"]["processes"]
    assert isinstance(run.machine, str) and len(run.machine) >= 12
    assert run.machine_info["python_version"] and run.hostname == run.machine_info["hostname"]
    assert isinstance(run.pid, int) and isinstance(run.heartbeat_s, float)
    assert isinstance(run.tags, tuple) and run.trigger == summary["run"]["trigger"]
    # The export's `run` is the record as a dict (times as ISO text), without the machine's columns.
    assert list(exported) == [
        k for k in run.to_dict() if k not in ("machine_id", "machine_info", "recorded_status")
    ]
    assert exported["started_at"] == run.started_at.isoformat() and exported["places"] == ["cpu"]


def check_history(url: str, summary: dict) -> None:
    (measured,) = summary["results"]
    with open_store(url, readonly=True) as store:
        run = store.run(store.latest_run_id())
        (stored,) = store.results(run.id)
        (point,) = store.history(measured["case_id"], with_samples=True)
        (light,) = store.history("rec_*")
    assert isinstance(point, HistoryPoint) and isinstance(point.stats, Stats)
    assert (point.run_id, point.result_id) == (run.id, stored.result_id)
    assert (point.started_at, point.git_commit, point.machine) == (
        run.started_at,
        run.git_commit,
        run.machine,
    )
    assert (
        point.key
        == SeriesKey.of(stored)
        == SeriesKey(measured["case_id"], measured["config_hash"], "cpu", "dynamic")
    )
    assert (point.name, point.status, point.unit, point.metric) == ("rec_abs", "ok", "s", "time")
    assert point.iterations == measured["iterations"] and isinstance(point.series_id, int)
    assert point.median == point.stats.median == pytest.approx(measured["stats"]["median"])
    assert point.rounds == measured["stats"]["rounds"] == len(measured["samples"])
    assert point.stats.q1 <= point.stats.median <= point.stats.q3
    assert point.stats.iqr == pytest.approx(measured["stats"]["iqr"])
    assert isinstance(point.samples, np.ndarray) and point.samples.dtype == np.float64
    np.testing.assert_allclose(point.samples, measured["samples"])
    assert len(point.processes) == 2 and all(isinstance(p, ProcessValue) for p in point.processes)
    assert [p.to_dict() for p in point.processes] == measured["processes"]
    for p in point.processes:
        assert p.status == "ok" and isinstance(p.pid, int) and isinstance(p.samples, tuple)
        assert p.value == pytest.approx(statistics.median(p.samples))
    # The run's CaseResult holds the same typed entries and stats, and writes the summary's dicts.
    assert isinstance(stored.stats, Stats) and stored.stats.median == point.median
    assert stored.stats.processes == 2 and stored.processes == list(point.processes)
    assert set(stored.to_dict()["stats"]) == set(measured["stats"])
    # Without samples the point is the same but light.
    assert light.samples is None and light.processes is None
    assert (light.result_id, light.stats) == (point.result_id, point.stats)
