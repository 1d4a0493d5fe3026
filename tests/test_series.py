"""`benchmark.datamodel.series.Series`: one type for a series' per-run values, whether the judge reads it
from the store (`Store.baselines`), the reports read its history (`Store.series`) or
`benchmark detect` reads a CSV."""

from __future__ import annotations

import os
import socket
import time

import numpy as np

from benchmark.commands.detect import read_series
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.series import Series, SeriesKey
from benchmark.store import open_store


def _series() -> Series:
    return Series(
        key=SeriesKey("op.add[n=4]", "h", "cpu", "dynamic", "instructions"),
        machine="m1",
        values=np.array([1.0, 2.0, 3.0]),
        run_ids=[1, 2, 3],
        times=[10.0, 20.0, 30.0],
        commits=["a", None, "c"],
        samples=[np.array([1.0, 1.0]), np.array([2.0]), np.empty(0)],
        ci_low=np.array([0.9, 1.9, 2.9]),
        events={1: "driver 1 -> 2", 2: "kernel 5 -> 6"},
        others=[{"run_id": 4, "time": 40.0, "commit": "d", "status": "failed", "message": "oom"}],
    )


def test_a_series_reads_its_key_and_pools_its_samples():
    s = _series()
    assert len(s) == 3 and (s.case_id, s.place, s.mode, s.metric) == (
        "op.add[n=4]",
        "cpu",
        "dynamic",
        "instructions",
    )
    assert s.report_key == ("op.add[n=4]", "h", "cpu", "dynamic", "m1", "instructions")
    assert Series(key=SeriesKey("a", "h", "cpu", "static"), machine="m").report_key == (
        "a",
        "h",
        "cpu",
        "static",
        "m",
    )
    np.testing.assert_array_equal(s.pooled(), [1.0, 1.0, 2.0])
    assert len(Series()) == 0 and Series().pooled().size == 0 and Series().latest_status == "none"
    assert s.latest_status == "failed"  # the failed run 4 came after the last ok run


def test_head_cuts_every_per_run_field_and_the_later_events():
    s = _series()
    cut = s.head(2)
    assert (
        len(cut) == 2 and cut.run_ids == [1, 2] and cut.times == [10.0, 20.0] and cut.commits == ["a", None]
    )
    assert len(cut.samples) == 2 and cut.ci_low.tolist() == [0.9, 1.9]
    assert cut.events == {1: "driver 1 -> 2"} and cut.others == s.others and cut.key == s.key
    assert cut.result_ids == [] and cut.throughput.size == 0  # fields never filled stay empty
    assert len(s) == 3 and s.events.keys() == {1, 2}  # the original is untouched


def test_the_judge_and_the_reports_read_the_same_series_from_the_store(db_url, machine, make_result):
    """Store.baselines (what the judge reads) and Store.series (the reports) give the same runs,
    values, times, commits and samples for one series."""
    with open_store(db_url) as store:
        run_ids = []
        for i in range(4):
            info = {"started_at": time.time() - 100 + i, "hostname": socket.gethostname(), "pid": os.getpid()}
            run_id = store.begin_run(
                MachineDescription.of(machine),
                RunDescription.of({**info, "trigger": "test", "git_commit": f"c{i}"}),
            )
            store.add_result(run_id, make_result("op.add", samples=[(i + 1) * 1e-3, (i + 1.5) * 1e-3] * 3))
            store.finish_run(run_id)
            run_ids.append(run_id)
        judged = store.baselines(run_ids[-1])[SeriesKey.of(make_result("op.add"))]
        (history,) = store.series(["op.add"], run_id=run_ids[-2])
    assert judged.key == history.key == SeriesKey("op.add", "cfg1", "cpu", "dynamic")
    assert judged.series_id == history.series_id != 0
    assert judged.run_ids == history.run_ids == run_ids[:3]
    assert judged.result_ids == history.result_ids and len(judged.result_ids) == 3
    np.testing.assert_allclose(judged.values, history.values)
    np.testing.assert_allclose(judged.times, history.times)
    assert judged.commits == history.commits == ["c0", "c1", "c2"]
    np.testing.assert_allclose(judged.pooled(), history.pooled())
    assert history.machine == machine["fingerprint"] and history.report_key[4] == machine["fingerprint"]


def test_a_csv_series_has_no_store_key(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("run,value,samples,env\nr0,1.0,,a\nr1,1.1,1.0 1.2 1.1,b\n")
    s = read_series(str(path))
    assert s.key == SeriesKey("", "", "", "") and s.values.tolist() == [1.0, 1.1] and s.labels == ["r0", "r1"]
    assert [x.tolist() for x in s.samples] == [[], [1.0, 1.2, 1.1]] and s.events == {1: "a -> b"}
