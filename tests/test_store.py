"""The history store on SQLite and PostgreSQL: round trips, runs and their status, history queries,
baselines (opening it and processes writing it: test_store_access.py)."""

from __future__ import annotations

import dataclasses
import math
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from benchmark.analysis.summary import summarize
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.result import CaseResult, Stats
from benchmark.datamodel.series import SeriesKey
from benchmark.store import StoreError, open_store


def run_info(**fields):
    info = {
        "started_at": time.time(),
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "trigger": "test",
    }
    info.update(fields)
    return info


@pytest.fixture
def store(db_url):
    with open_store(db_url) as opened:
        yield opened


def new_run(store, machine, offset: float = 0.0, **fields) -> int:
    return store.begin_run(
        MachineDescription.of(machine), RunDescription.of(run_info(started_at=time.time() + offset, **fields))
    )


# ------------------------------------------------------------------------------------------- round trip


def full_result() -> CaseResult:
    samples = [1.0e-3, 1.2e-3, 0.9e-3, 1.1e-3, 1.05e-3, 0.95e-3, 1.0e-3 + 1e-12]
    return CaseResult(
        case_id="model.resnet50[bs=32,amp]",
        name="resnet50",
        kind="model",
        place="gpu:0",
        mode="static",
        config={"model": "resnet50", "batch_size": 32, "amp": True, "shape": [32, 3, 224, 224]},
        config_hash="0123456789abcdef",
        tags=["nightly", "model"],
        samples=samples,
        iterations=5,
        warmup_rounds=3,
        stats=Stats.from_dict(summarize(samples)),
        device_samples=[s * 0.9 for s in samples],
        throughput=31234.5,
        throughput_unit="images/s",
        batch_size=32,
        peak_memory_bytes=7 * 2**30 + 123,
        page_faults_per_iter=0.25,
        warnings=["unstable: IQR is 12% of the median (> 10%)"],
        telemetry={"sm_util_mean": 87.5, "throttled": False, "timeline": {"t": [0.0, 0.1], "sm": [80, 95]}},
        profile={
            "op_table": [{"op": "conv2d", "calls": 53, "total_ms": 1.5}],
            "copies": {"h2d": 2},
            "trace": "x.json",
        },
        accuracy={"max_abs_err": 1e-6, "passed": True},
        extra={"note": "unicode ✓"},
        started_at=1_700_000_000.123456,
        finished_at=1_700_000_005.5,
    )


def test_round_trip_keeps_every_field_and_the_raw_samples(store, machine):
    original = full_result()
    run_id = new_run(store, machine)
    result_id = store.add_result(run_id, original)
    (stored,) = store.results(run_id)

    assert isinstance(stored, CaseResult)
    assert (stored.result_id, stored.run_id) == (result_id, run_id)
    assert stored.started_at == pytest.approx(original.started_at, abs=1e-6)
    assert stored.finished_at == pytest.approx(original.finished_at, abs=1e-6)
    assert stored.samples == original.samples  # bit-exact float64
    got, expected = stored.to_dict(), original.to_dict()
    assert "result_id" not in expected and "run_id" not in expected  # a result measured now has no ids
    for key in ("result_id", "run_id", "started_at", "finished_at"):
        got.pop(key, None)
        expected.pop(key, None)
    assert got == expected


def with_processes(result: CaseResult) -> CaseResult:
    """`result` as measured in three worker processes, the last of which died."""
    from benchmark.analysis.processes import summarize_processes
    from benchmark.datamodel.result import process_entry

    result.processes = [
        process_entry(0, 4101, 2, "ok", [1.0e-3, 1.1e-3, 0.9e-3], iterations=5),
        process_entry(1, 4102, 7, "ok", [1.3e-3, 1.2e-3, 1.25e-3], iterations=4),
        process_entry(
            2, 4103, 9, "error", None, message="worker process died (exit status -9) during trial 3 of 3"
        ),
    ]
    result.samples, result.stats = summarize_processes(result.processes)
    return result


def test_per_process_trials_round_trip_in_trial_order(store, machine):
    original = with_processes(full_result())
    run_id = new_run(store, machine)
    store.add_result(run_id, original)
    (stored,) = store.results(run_id)
    assert stored.processes == original.processes
    assert stored.stats.median == original.stats.median == pytest.approx(1.125e-3)  # of 1.0 and 1.25 ms
    assert stored.stats.processes == 2
    assert stored.stats.between_cv == pytest.approx(original.stats.between_cv)
    (row,) = store.history("resnet50", with_samples=True)
    assert row.processes == tuple(original.processes)
    assert store.history("resnet50")[0].processes is None  # summary rows stay light
    later = new_run(store, machine, offset=10)
    store.add_result(later, full_result())
    (base,) = store.baselines(later, statuses=None).values()
    assert [list(v) for v in base.process_values] == [pytest.approx([1.0e-3, 1.25e-3])]


def test_a_process_entry_with_bad_samples_is_refused(store, machine):
    result = with_processes(full_result())
    result.processes[0] = dataclasses.replace(result.processes[0], samples=(1e-3, float("nan")))
    run_id = new_run(store, machine)
    with pytest.raises(ValueError, match="process 0: 1 of 2 samples"):
        store.add_result(run_id, result)
    assert store.results(run_id) == []


def test_exported_processes_import_back(store, machine, tmp_path):
    from benchmark.store.export import export_run
    from benchmark.store.pytest_import import import_pytest_benchmark

    original = with_processes(full_result())
    run_id = new_run(store, machine)
    store.add_result(run_id, original)
    store.finish_run(run_id, "complete")
    path = tmp_path / "run.json"
    path.write_text(export_run(store, run_id, "json", pytest_benchmark=True))
    imported = import_pytest_benchmark(store, path)
    (again,) = store.results(imported.run_id)
    assert again.processes == original.processes
    assert again.stats.median == pytest.approx(original.stats.median)


def test_results_that_are_not_numbers_stay_that_way(store, machine, make_result):
    run_id = new_run(store, machine)
    store.add_result(run_id, make_result("op.skip", samples=[], status="skipped", message="no CUDA device"))
    store.add_result(run_id, make_result("op.err", samples=[], status="error", message="Traceback: boom"))
    by_case = {r.case_id: r for r in store.results(run_id)}
    assert by_case["op.skip"].status == "skipped"
    assert by_case["op.skip"].message == "no CUDA device"
    assert by_case["op.skip"].samples == []
    assert by_case["op.skip"].stats.median is None
    assert by_case["op.err"].status == "error"


def test_nan_and_numpy_values_are_stored_as_plain_json(store, machine, make_result):
    stats = {**summarize([1e-3, 1e-3, 1e-3]), "cv": math.nan, "odd": np.float32(1.5)}
    run_id = new_run(store, machine)
    store.add_result(run_id, make_result(samples=[1e-3, 1e-3, 1e-3], stats=stats, extra={"n": np.int64(3)}))
    (stored,) = store.results(run_id)
    assert stored.stats.cv is None
    assert stored.stats.extra["odd"] == 1.5
    assert stored.extra == {"n": 3}


def test_invalid_results_are_refused_and_nothing_is_left_behind(store, machine, make_result):
    run_id = new_run(store, machine)
    with pytest.raises(ValueError, match="status"):
        store.add_result(run_id, make_result(status="fast"))
    with pytest.raises(ValueError, match="place"):
        store.add_result(run_id, make_result(place=""))
    with pytest.raises(StoreError, match="no run 999"):
        store.add_result(999, make_result())
    assert store.results(run_id) == []
    store.add_result(run_id, make_result())  # the store still works after the rollbacks
    assert len(store.results(run_id)) == 1


def test_batch_insert_returns_ids_in_order(store, machine, make_result):
    run_id = new_run(store, machine)
    ids = store.add_results(run_id, [make_result(f"op.c{i}", telemetry={"i": i}) for i in range(5)])
    stored = store.results(run_id)
    assert [r.result_id for r in stored] == ids
    assert [r.case_id for r in stored] == [f"op.c{i}" for i in range(5)]
    assert [r.telemetry for r in stored] == [{"i": i} for i in range(5)]


# ------------------------------------------------------------------------------------------- runs


def test_runs_lists_newest_first_with_places_counts_and_status(store, machine, make_result):
    first = new_run(store, machine, offset=-10, git_commit="a" * 40, git_branch="develop", git_dirty=True)
    store.add_result(first, make_result("op.a"))
    store.add_result(first, make_result("op.a", place="gpu:0"))
    store.add_result(first, make_result("op.b", samples=[], status="failed", message="x"))
    store.finish_run(first, "complete")
    second = new_run(store, machine)

    runs = store.runs()
    assert [r.id for r in runs] == [second, first]
    assert store.latest_run_id() == second
    old = runs[1]
    assert old.places == ("cpu", "gpu:0")
    assert old.results == 3
    assert old.results_by_status == {"ok": 2, "failed": 1}
    assert old.status == "complete"
    assert (old.git_commit, old.git_branch, old.git_dirty) == ("a" * 40, "develop", True)
    assert old.machine == "machine-a"
    assert runs[0].status == "running"  # this process is alive
    assert store.runs(limit=1)[0].id == second


def test_a_running_run_whose_process_is_gone_reads_as_interrupted(store, machine):
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(proc.stdout)
    run_id = new_run(store, machine, pid=dead_pid)
    (run,) = store.runs()
    assert (run.id, run.status, run.recorded_status) == (run_id, "interrupted", "running")
    assert store.run(run_id).status == "interrupted"


def test_a_run_on_another_host_is_interrupted_only_when_its_heartbeat_is_stale(store, machine):
    run_id = new_run(store, machine, hostname="elsewhere", pid=1)
    assert store.run(run_id).status == "running"
    store.stale_after_s = 0.0
    time.sleep(0.01)
    assert store.run(run_id).status == "interrupted"


def test_finish_run_checks_its_arguments(store, machine):
    run_id = new_run(store, machine)
    with pytest.raises(ValueError, match="complete, interrupted, failed"):
        store.finish_run(run_id, "running")
    with pytest.raises(StoreError, match="no run 12345"):
        store.finish_run(12345)
    store.finish_run(run_id, "failed")
    assert store.run(run_id).status == "failed"
    assert store.run(run_id).finished_at is not None
    assert store.run(4242) is None


def test_run_keeps_framework_environment_and_machine(store, machine):
    run = run_info(
        framework={
            "paddle_version": "3.0.0",
            "paddle_commit": "abc",
            "cuda_version": "12.3",
            "cudnn_version": 9,
        },
        env={"OMP_NUM_THREADS": "4", "FLAGS_use_cinn": "1"},
        tags=["pr"],
        cpu_governor="performance",
    )
    run_id = store.begin_run(MachineDescription.of(machine), RunDescription.of(run))
    stored = store.run(run_id)
    assert stored.paddle_version == "3.0.0"
    assert stored.cudnn_version == "9"
    assert stored.env == {"OMP_NUM_THREADS": "4", "FLAGS_use_cinn": "1"}
    assert stored.tags == ("pr",)
    # machine_env: the volatile machine fields recorded with each run (revision 0005)
    assert {k: v for k, v in stored.extra.items() if k != "machine_env"} == {"cpu_governor": "performance"}
    assert stored.machine_info["cpu_model"] == "Test CPU"


# ------------------------------------------------------------------------------------------- history


def populate_history(store, machine, make_result, runs=4):
    ids = []
    for i in range(runs):
        run_id = new_run(store, machine, offset=i - runs, git_commit=f"{i:040d}")
        scale = 1 + i / 10
        store.add_result(run_id, make_result("op.matmul[float32,64x64]", samples=[scale * 1e-3] * 6))
        store.add_result(
            run_id, make_result("op.matmul[float32,64x64]", place="gpu:0", samples=[scale * 1e-4] * 6)
        )
        store.add_result(run_id, make_result("op.add[float32]", samples=[scale * 2e-3] * 6))
        store.finish_run(run_id)
        ids.append(run_id)
    return ids


def test_history_matches_substrings_and_globs_with_literal_brackets(store, machine, make_result):
    populate_history(store, machine, make_result)
    assert {r.case_id for r in store.history("matmul[float32")} == {"op.matmul[float32,64x64]"}
    assert {r.case_id for r in store.history("op.*")} == {"op.matmul[float32,64x64]", "op.add[float32]"}
    assert {r.case_id for r in store.history("op.add[float3?]")} == {"op.add[float32]"}
    assert store.history("op.a") and not store.history("op.a*x")
    assert store.history("nothing-like-this") == []


def test_history_is_oldest_first_per_series_and_filters_place_and_last(store, machine, make_result):
    run_ids = populate_history(store, machine, make_result)
    rows = store.history("matmul", place="cpu")
    assert [r.run_id for r in rows] == run_ids
    assert [r.median for r in rows] == pytest.approx([1e-3, 1.1e-3, 1.2e-3, 1.3e-3])
    assert rows[-1].git_commit == f"{3:040d}"
    assert {r.place for r in store.history("matmul", place="gpu")} == {"gpu:0"}
    last = store.history("op.", last=2)
    assert len(last) == 3 * 2
    assert {r.run_id for r in last} == set(run_ids[-2:])
    with_samples = store.history("op.add", last=1, with_samples=True)
    np.testing.assert_allclose(with_samples[0].samples, [1.3 * 2e-3] * 6)


def test_a_changed_config_is_a_new_series(store, machine, make_result):
    old = new_run(store, machine, offset=-2)
    store.add_result(old, make_result("op.add[float32]", config_hash="cfg1"))
    new = new_run(store, machine, offset=-1)
    store.add_result(new, make_result("op.add[float32]", config_hash="cfg2", config={"changed": True}))
    rows = store.history("op.add")
    assert sorted((r.config_hash, r.run_id) for r in rows) == [("cfg1", old), ("cfg2", new)]
    (baseline,) = store.baselines(new).values()
    assert len(baseline) == 0


# ------------------------------------------------------------------------------------------- baselines


def test_baselines_compare_like_with_like_only(store, machine, make_result):
    other_machine = {**machine, "fingerprint": "machine-b", "hostname": "host-b"}
    previous = []
    for i in range(5):
        run_id = new_run(store, machine, offset=i - 10, git_commit=f"c{i}")
        store.add_result(run_id, make_result("op.add", samples=[(i + 1) * 1e-3] * 6))
        store.add_result(run_id, make_result("op.add", config_hash="other-config"))
        store.add_result(run_id, make_result("op.add", mode="static"))
        store.add_result(run_id, make_result("op.add", place="gpu:0"))
        store.finish_run(run_id)
        previous.append(run_id)
    # Runs that did not complete are no baseline (unless asked): one killed, one still running.
    killed = new_run(store, machine, offset=-5.5)
    store.add_result(killed, make_result("op.add", samples=[5e-3] * 6))
    store.finish_run(killed, "interrupted")
    running = new_run(store, machine, offset=-5)
    store.add_result(running, make_result("op.add", samples=[5e-3] * 6))
    failed = new_run(store, machine, offset=-4)
    store.add_result(failed, make_result("op.add", samples=[], status="failed", message="oom"))
    elsewhere = new_run(store, other_machine, offset=-3)
    store.add_result(elsewhere, make_result("op.add", samples=[9.0] * 6))
    target = new_run(store, machine, offset=-2)
    store.add_result(target, make_result("op.add", samples=[7e-3] * 6))
    store.add_result(target, make_result("op.new-case"))
    later = new_run(store, machine, offset=-1)
    store.add_result(later, make_result("op.add", samples=[8e-3] * 6))

    baselines = store.baselines(target, last=100)
    key = SeriesKey.of(make_result("op.add"))
    assert set(baselines) == {key, SeriesKey.of(make_result("op.new-case"))}
    base = baselines[key]
    assert base.key == key and base.case_id == "op.add"
    assert base.run_ids == previous
    assert base.commits == [f"c{i}" for i in range(5)]
    np.testing.assert_allclose(base.values, [(i + 1) * 1e-3 for i in range(5)])
    assert [len(s) for s in base.samples] == [6] * 5
    assert base.pooled().shape == (30,)
    assert base.unit == "s"
    assert base.times == sorted(base.times)
    assert len(baselines[SeriesKey.of(make_result("op.new-case"))]) == 0

    assert store.baselines(target, statuses=None)[key].run_ids == [*previous, killed, running]
    last_two = store.baselines(target, last=2)[key]
    assert last_two.run_ids == previous[-2:]
    assert store.baselines(previous[0])[key].run_ids == []
    assert store.baselines(4242) == {}


# ------------------------------------------------------------------------------------ typed write API


def test_the_write_api_takes_typed_records_only(store, machine, make_result):
    """begin_run takes a MachineDescription and a RunDescription, add_result(s) CaseResults: a dict
    is refused before anything is written, and a typed run keeps its columns and extras."""
    run = {"started_at": 1.7e9, "trigger": "test", "run_group": "g", "threads": 4, "cpu_affinity": [0, 1]}
    with pytest.raises(TypeError, match="MachineDescription"):
        store.begin_run(machine, RunDescription.of(run))
    with pytest.raises(TypeError, match="RunDescription"):
        store.begin_run(MachineDescription.of(machine), run)
    assert store.runs() == []
    described = RunDescription.of(run)
    assert (described.trigger, described.run_group) == ("test", "g")
    assert list(described.extra) == ["threads", "cpu_affinity"]  # in the order given
    run_id = store.begin_run(MachineDescription.of(machine), described)
    with pytest.raises(TypeError, match="CaseResult"):
        store.add_result(run_id, make_result("op.a").to_dict())
    with pytest.raises(TypeError, match="CaseResult"):
        store.add_results(run_id, [make_result("op.a"), make_result("op.b").to_dict()])
    assert store.results(run_id) == []
    store.add_result(run_id, make_result("op.a"))
    stored = store.run(run_id)
    assert (stored.trigger, stored.run_group, stored.machine) == ("test", "g", "machine-a")
    assert [r.case_id for r in store.results(run_id)] == ["op.a"]


def test_known_extra_keys_are_fields_and_stored_where_they_were(store, machine, make_result):
    """`torch`, `traceback`, `compare`, `prepare_s`, the timing plan and the callgrind record are
    CaseResult fields; the stored and exported JSON keeps them inside `extra`, in the order the
    result was read with (an old history keeps its bytes)."""
    fresh = make_result("op.a", extra={"prepare_s": 0.5})
    fresh.torch, fresh.compare = {"status": "ok", "median": 1e-3}, {"side": "A", "verdict": "same"}
    assert list(fresh.to_dict()["extra"]) == ["prepare_s", "torch", "compare"]
    assert "torch" not in fresh.to_dict() and "extra_keys" not in fresh.to_dict()
    # A result whose extra has them elsewhere (an older writer) is written back in that order.
    old = make_result("op.b", samples=[], status="error", message="boom",
                      extra={"traceback": "Traceback ...", "prepare_s": 0.1, "op": "paddle.abs"})  # fmt: skip
    assert old.traceback == "Traceback ..." and old.prepare_s == 0.1 and old.extra == {"op": "paddle.abs"}
    assert list(old.to_dict()["extra"]) == ["traceback", "prepare_s", "op"]
    run_id = new_run(store, machine)
    store.add_results(run_id, [fresh, old])
    a, b = store.results(run_id)
    assert a.torch == fresh.torch and a.compare == fresh.compare and a.traceback is None
    assert a.extra == {} and a.prepare_s == 0.5
    assert b.traceback == "Traceback ..." and b.to_dict()["extra"] == old.to_dict()["extra"]
    if store.engine.dialect.name == "sqlite":  # PostgreSQL's JSONB keeps no key order of its own
        assert list(b.to_dict()["extra"]) == ["traceback", "prepare_s", "op"]


def test_timing_plan_and_callgrind_record_are_fields_and_written_back_flat(make_result):
    """A time result's timing plan and an instruction count's record are read out of `extra` into
    `timing` and `callgrind` and written back as the same flat keys, in the same order."""
    timed = {"prepare_s": 0.2, "warmup_iterations": 3, "estimate_s": 1e-3, "warmup_s": 0.1,
             "timed_s": 0.5, "processes": 2, "op": "paddle.abs"}  # fmt: skip
    r = make_result("op.a", extra=dict(timed))
    assert (r.prepare_s, r.timing["processes"], r.callgrind, r.extra) == (0.2, 2, None, {"op": "paddle.abs"})
    assert r.to_dict()["extra"] == timed and list(r.to_dict()["extra"]) == list(timed)
    counted = {"tool": "callgrind", "event": "Ir", "warmup_iterations": 2, "worker_pid": 7, "note": 1}
    c = make_result("op.a", extra=dict(counted), metric="instructions", unit="instructions")
    assert c.callgrind == {k: v for k, v in counted.items() if k != "note"} and c.timing is None
    assert list(c.to_dict()["extra"]) == list(counted) and c.extra == {"note": 1}
    # A result measured now writes prepare_s, the timing plan, then the other keys.
    fresh = make_result("op.a")
    fresh.extra["op"] = "paddle.abs"
    fresh.timing, fresh.prepare_s = {"warmup_iterations": 3, "processes": 2}, 0.1
    assert list(fresh.to_dict()["extra"]) == ["prepare_s", "warmup_iterations", "processes", "op"]
