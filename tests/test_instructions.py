"""Instruction counts (`pytest benchmark/ --bench-instructions`): real callgrind workers, the line
when valgrind is missing, and the gate on the instructions metric over a history of real runs.

The callgrind tests run real `valgrind --tool=callgrind` processes (about 30-100 s each for the
paddle import under valgrind); they are skipped with the reason where valgrind, its header or a C
compiler is missing. The two processes of the stability test run side by side.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchmark.analysis.deterministic import check_deterministic
from benchmark.datamodel.case import Case, Spec
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.execution.replies import CountRecord
from benchmark.gate.settings import load_gates
from benchmark.instructions import callgrind as instructions
from benchmark.instructions import counting_pass as instruction_pass

PROJECT = Path(__file__).resolve().parents[1]
# A case whose count is its kernel's (1M elements, ~640k instructions a call); SMALL's is nearly
# all the framework's own.
TINY = """
cases:
  - name: abs_1m
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [1000, 1000]}}
    places: [cpu]
    modes: [dynamic]
    measure: {warmup_time: 0.01, max_time: 0.02, min_rounds: 3}
"""


# Counted before TINY's case in the second process (see `counted_runs`).
OTHER_CASE = """
  - name: mul_other
    kind: op
    op: paddle.multiply
    inputs: {x: {shape: [300, 300]}, y: {shape: [300, 300]}}
    places: [cpu]
    modes: [dynamic]
"""


def suite(tmp: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    cfg = tmp / "tiny.yaml"
    cfg.write_text(TINY)
    cmd = [sys.executable, "-m", "pytest", "benchmark/", "-q", "-p", "no:cacheprovider"]
    cmd += ["--bench-config", str(cfg), "--bench-json", str(tmp / "summary.json"), *args]
    return subprocess.run(
        cmd,
        cwd=PROJECT,
        env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
    )


# ------------------------------------------------------------------------------------------ pure parts


def test_a_callgrind_dump_is_read_for_its_label_and_total(tmp_path):
    dump = tmp_path / "callgrind.out.1.2"
    dump.write_text(
        "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 1\ncmd:  python\npart: 2\n\n"
        "desc: I1 cache: \ndesc: Timerange: Basic block 10 - 20\n"
        "desc: Trigger: Client Request: abs-cpu-dynamic:chunk0\n\npositions: line\nevents: Ir\n"
        "summary: 6372100\n\n\nfl=(1) x.c\nfn=(1) f\n0 6372100\n\ntotals: 6372874\n"
    )
    assert instructions.read_dump(dump) == ("abs-cpu-dynamic:chunk0", 6372100)
    (tmp_path / "empty").write_text("version: 1\n")
    with pytest.raises(ValueError, match="no 'summary:' line"):
        instructions.read_dump(tmp_path / "empty")


def _case() -> Case:
    spec = Spec.model_validate(
        {"name": "abs", "kind": "op", "op": "paddle.abs", "inputs": {"x": {"shape": [2]}}}
    )
    return Case(case_id="abs-2", place="cpu", mode="dynamic", spec=spec, config_hash="h")


def test_a_cache_simulated_dump_gives_the_estimated_cycles_and_missing_trailing_events_are_zero(tmp_path):
    dump = tmp_path / "callgrind.out.1.3"
    dump.write_text(
        "version: 1\ndesc: Trigger: Client Request: c:chunk1\nevents: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\n"
        "summary: 1000 2 1 300 20 3 100 5\n"
    )
    label, events = instructions.read_dump_events(dump)
    assert label == "c:chunk1"
    assert events == {"Ir": 1000, "I1mr": 2, "ILmr": 1, "Dr": 300, "D1mr": 20, "DLmr": 3, "Dw": 100,
                      "D1mw": 5, "DLmw": 0}  # fmt: skip
    # Ir + 10 x (2 + 20 + 5) L1 misses + 100 x (1 + 3 + 0) last-level misses
    assert instructions.estimated_cycles(events) == 1000 + 10 * 27 + 100 * 4
    assert instructions.read_dump(dump) == ("c:chunk1", 1000)
    # without the cache simulation there is no estimate
    assert instructions.estimated_cycles({"Ir": 1000}) is None


def test_the_cycles_result_is_a_series_of_its_own_from_the_counts_chunks():
    counted = instructions.instruction_result_base(_case())
    record = CountRecord(
        status="ok",
        chunks=[10_100, 10_300],
        empty=100,
        iterations=10,
        cycle_chunks=[40_200, 41_200],
        cycle_empty=200,
    )
    instructions.fill_result(counted, record)
    cycles = instructions.cycles_result(counted)
    assert cycles is not None and cycles.metric == "cycles" and cycles.unit == "cycles"
    assert cycles.samples == [4000.0, 4100.0] and counted.samples == [1000.0, 1020.0]
    assert cycles.case_id == counted.case_id and cycles.config_hash == counted.config_hash
    # a count made without the cache simulation has no cycles; an error carries over as an error
    counted.callgrind = {**counted.callgrind, "cycle_chunks": None}
    assert instructions.cycles_result(counted) is None
    failed = instructions.instruction_result_base(_case())
    instructions.fill_result(failed, CountRecord(status="error", message="boom"))
    carried = instructions.cycles_result(failed)
    assert carried is not None and carried.status == "error" and carried.message == "boom"


def test_thread_dumps_finds_each_threads_file_of_one_dump(tmp_path):
    """--separate-threads=yes writes PATTERN.DUMP-TT per thread; thread 1 is the main thread's."""
    pattern = str(tmp_path / "callgrind.out.42")
    for name in (
        "callgrind.out.42.3-01",
        "callgrind.out.42.3-02",
        "callgrind.out.42.30-01",
        "callgrind.out.42.4-01",
    ):
        (tmp_path / name).write_text("")
    found = instructions.thread_dumps(pattern, 3)
    assert found == {1: pattern + ".3-01", 2: pattern + ".3-02"}
    (tmp_path / "callgrind.out.42.5").write_text("")  # one thread, no suffix
    assert instructions.thread_dumps(pattern, 5) == {1: pattern + ".5"}
    assert instructions.thread_dumps(pattern, 6) == {}


def test_chunk_size_is_a_power_of_two_sized_by_instructions():
    assert instructions.chunk_iterations(1_000) == instructions.MAX_CHUNK_ITERATIONS == 1024  # capped
    assert instructions.chunk_iterations(30_000) == 512  # 512 x 30k ~ 15M <= 20M < 1024 x 30k
    assert instructions.chunk_iterations(640_000) == 16  # 16 x 640k ~ 10M <= 20M < 32 x 640k
    assert instructions.chunk_iterations(300_000_000) == 1
    assert instructions.per_iteration([1_000_100, 2_000_100], 100, 10) == [100_000.0, 200_000.0]


def test_the_level_rule_fails_the_first_run_of_a_one_percent_change_and_never_noise():
    flat = [1_000_000 * (1 + 0.0001 * ((i * 7) % 5 - 2)) for i in range(21)]  # +-0.02% wobble
    for n in range(2, len(flat) + 1):
        assert check_deterministic(flat[:n], min_effect=0.01).verdict == "pass"
    stepped = [*flat[:10], flat[10] * 1.011]
    c = check_deterministic(stepped, min_effect=0.01)
    assert c.verdict == "regression" and 0.010 < c.effect < 0.012
    # A regression stands: the next run at the new level fails again, naming where it was raised,
    # and so does every later one that keeps it
    kept = [*stepped, flat[10] * 1.011, flat[10] * 1.0112, flat[10] * 1.0109]
    for n in range(len(stepped) + 1, len(kept) + 1):
        again = check_deterministic(kept[:n], min_effect=0.01)
        assert again.verdict == "regression" and again.standing_since == 10 and again.level_start == 0
    # Its series acknowledged from the regressed run on (`benchmark ack`: the history starts there),
    # the level passes
    assert check_deterministic(kept[10:], min_effect=0.01).verdict == "pass"
    # An improvement is not a regression; a 0.5% step is below the minimum effect.
    assert check_deterministic([*flat[:10], flat[10] * 0.98], min_effect=0.01).verdict == "improvement"
    assert check_deterministic([*flat[:10], flat[10] * 1.005], min_effect=0.01).verdict == "pass"
    # One odd run and back: the return passes and says it reverted.
    back = check_deterministic([*stepped, flat[11]], min_effect=0.01)
    assert back.verdict == "pass" and back.reverted


def test_gates_yaml_gives_instructions_a_one_percent_minimum_and_overrides_by_metric(tmp_path):
    gates = load_gates(PROJECT / "configs" / "gates.yaml")
    s = gates.for_case("abs_smoke", "abs_smoke", "cpu", "instructions")
    assert (s.metric, s.min_effect, s.noise_floor) == ("instructions", 0.01, 0.002)
    # 3 x the floor is under the 1% minimum: a 1% step of a repeating count fails at once
    flat = [1_000_000.0] * 10
    assert (
        check_deterministic([*flat, 1_010_500.0], min_effect=0.01, noise_floor=s.noise_floor).verdict
        == "regression"
    )
    assert gates.for_case("lstm-train", "lstm", "cpu", "instructions").min_effect == 0.01
    assert gates.for_case("lstm-train", "lstm", "cpu").metric == "throughput"
    custom = tmp_path / "gates.yaml"
    custom.write_text(
        "instructions: {min_effect: 0.02}\noverrides:\n"
        "  - {match: 'abs*', metric: instructions, min_effect: 0.005}\n"
        "  - {match: 'abs*', min_effect: 0.10}\n"
    )
    g = load_gates(custom)
    assert g.for_case("abs_smoke", place="cpu", series_metric="instructions").min_effect == 0.005
    assert g.for_case("abs_smoke", place="cpu").min_effect == 0.10  # the time series' own override
    assert g.for_case("matmul", place="cpu", series_metric="instructions").min_effect == 0.02


# ------------------------------------------------------------------------------------------ no valgrind


@pytest.mark.slow
def test_without_valgrind_the_suite_says_so_in_one_line_and_measures_time(tmp_path):
    if shutil.which("valgrind", path=str(Path(sys.executable).parent)):
        pytest.skip("valgrind sits beside the interpreter: cannot hide it by PATH")
    proc = suite(
        tmp_path,
        "--bench-instructions",
        "--bench-no-store",
        "--bench-processes",
        "1",
        env={"PATH": str(Path(sys.executable).parent)},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    lines = [ln for ln in out.splitlines() if "instruction counts" in ln]
    assert len(lines) == 1, lines
    assert "install Debian package 'valgrind'" in lines[0] and "measuring time only" in lines[0]
    results = json.loads((tmp_path / "summary.json").read_text())["results"]
    assert [(r["case_id"], r["metric"], r["status"]) for r in results] == [("abs_1m", "time", "ok")]


# ------------------------------------------------------------------------------------------ real callgrind


@pytest.fixture(scope="module")
def counted_runs(tmp_path_factory, callgrind_tooling):
    """One real suite run with --bench-instructions (stored in a SQLite history) and, at the same
    time, a second worker process counting the same case: (db url, summary results, second count)."""
    tooling = callgrind_tooling
    tmp = tmp_path_factory.mktemp("instr")
    url = f"sqlite:///{tmp / 'history.sqlite'}"
    second: dict = {}

    def other_process():
        from benchmark.config import load_paths

        (tmp / "other").mkdir()
        (tmp / "other" / "tiny.yaml").write_text(TINY + OTHER_CASE)
        cases, issues = load_paths([str(tmp / "other" / "tiny.yaml")])
        assert not issues
        tiny = next(c for c in cases if c.name == "abs_1m")
        other = next(c for c in cases if c.name == "mul_other")
        counter = instruction_pass.InstructionPass(tooling)
        try:
            # Another case first, in the same worker: a case's count must not depend on what the
            # worker served before it (each case is counted in a child forked for it).
            second["before"] = counter.measure(other)
            second["result"] = counter.measure(tiny)
        finally:
            counter.close()

    # Both workers start from the same environment (the suite's subprocess gets PYTHONWARNINGS).
    saved = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = "ignore"
    try:
        thread = threading.Thread(target=other_process)
        thread.start()
        # one time trial: the time series is here only to be told apart from the instructions one
        proc = suite(
            tmp,
            "--bench-instructions",
            "--bench-instruction-jobs",
            "2",
            "--bench-processes",
            "1",
            "--bench-db",
            url,
        )
        thread.join()
    finally:
        if saved is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = saved
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "instructions per iteration" in out, out[-4000:]
    results = json.loads((tmp / "summary.json").read_text())["results"]
    assert second["before"].status == "ok", second["before"].message
    return url, results, second["result"]


@pytest.mark.slow
def test_real_callgrind_counts_are_positive_and_repeat_across_processes(counted_runs):
    _, results, other = counted_runs
    counted = [r for r in results if r["metric"] == "instructions"]
    assert len(counted) == 1 and counted[0]["status"] == "ok", counted
    first = counted[0]["stats"]["median"]
    assert other.status == "ok", other.message
    second = other.stats.median
    assert first > 1000 and second > 1000
    # Issue 12's 0.1%, for two workers started at the same time by different parents (a suite and
    # this test, which counted another case first in the same worker): what used to move the count
    # between them (the pipe's fd number in the worker's arguments, a warm-up cut by time, what the
    # worker did before the case) is held fixed.
    assert abs(first / second - 1) <= 0.001, (first, second)
    assert counted[0]["unit"] == "instructions" and counted[0]["extra"]["tool"] == "callgrind"
    # The same chunks' estimated cycles (cache simulation): at least one per instruction
    cycles = [r for r in results if r["metric"] == "cycles"]
    assert len(cycles) == 1 and cycles[0]["status"] == "ok", cycles
    assert cycles[0]["stats"]["median"] >= first
    # The time result of the same case is its own series, measured natively.
    timed = [r for r in results if r["metric"] == "time"]
    assert len(timed) == 1 and timed[0]["unit"] == "s"


SMALL = """
cases:
  - name: abs_small
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [16, 16]}}
    places: [cpu]
    modes: [dynamic]
"""


@pytest.mark.slow
def test_a_small_framework_bound_case_repeats_across_workers_whatever_their_directory_holds(
    tmp_path, callgrind_tooling
):
    """Issue 12's tiny case: a 16x16 abs, whose ~25k instructions an iteration are nearly all the
    framework's own (dispatch, allocation, Python), so its count moves with the worker's heap
    layout. The import system lists each directory on sys.path and keeps the listing, which
    shifts that heap: two workers started at once, one in an empty directory and one in a
    directory of 40 files (same path length), each counting the case in a child of its own,
    count it alike within issue 12's 0.1% target for op cases (0.34% apart when the working
    directory was on the workers' sys.path, and up to 0.37% apart when the worker's ready line,
    written before it forks, carried a CPU time). Not to 0.01%: a worker can land in one of two
    states 0.02-0.09% apart, whatever its directory, more often on a loaded machine (README,
    "Instruction counts"; it failed CI once at 0.038%)."""
    from benchmark.config import load_paths

    tooling = callgrind_tooling
    (tmp_path / "small.yaml").write_text(SMALL)
    cases, issues = load_paths([str(tmp_path / "small.yaml")])
    assert not issues
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for i in range(40):
        (tmp_path / "b" / f"file{i}.txt").write_text("x")
    passes = [instruction_pass.InstructionPass(tooling, cwd=str(tmp_path / d)) for d in "ab"]
    try:
        futures = [p.start(cases)[cases[0].id] for p in passes]
        a, b = (f.result(timeout=900) for f in futures)
        assert a.status == "ok" and b.status == "ok", (a.message, b.message)
        counts = {"a": [a.stats.median], "b": [b.stats.median]}
        if abs(a.stats.median / b.stats.median - 1) > 0.001:
            # one worker may have landed in the other state of the two (see above): count each
            # directory once more, one at a time, and judge the closest pair
            for d, p in zip("ab", passes, strict=True):
                r = p.start(cases)[cases[0].id].result(timeout=900)
                assert r.status == "ok", r.message
                counts[d].append(r.stats.median)
    finally:
        for p in passes:
            p.close()
    assert a.stats.median > 1000
    closest = min(abs(x / y - 1) for x in counts["a"] for y in counts["b"])
    assert closest <= 0.001, counts


@pytest.mark.slow
def test_the_gate_fails_the_first_run_whose_count_moved_by_one_percent(counted_runs):
    """History: the real run, then replays of its recorded results (the count is deterministic)
    through the same store; a run whose instruction count is 1.5% higher fails only the
    instructions series, at once, and an unchanged run passes."""
    from benchmark.gate.judge import evaluate
    from benchmark.store import open_store

    url, _, _ = counted_runs
    gates = load_gates(PROJECT / "configs" / "gates.yaml")
    with open_store(url) as store:
        real_run = store.latest_run_id()
        real = [r for r in store.results(real_run) if r.status == "ok"]
        first = store.run(real_run)
        machine = {**first.machine_info, "fingerprint": first.machine}  # the same series

        def replay(factor: float) -> int:
            run_id = store.begin_run(MachineDescription.of(machine), RunDescription.of({"trigger": "local"}))
            for r in real:
                r = dataclasses.replace(r, result_id=None, run_id=None)
                if r.metric == "instructions":
                    r = dataclasses.replace(r, samples=[x * factor for x in r.samples])
                store.add_result(run_id, r)
            store.finish_run(run_id, "complete")
            return run_id

        for _ in range(3):
            unchanged = replay(1.0)
        by_metric = {d.series_metric: d for d in evaluate(store, unchanged, gates)}
        assert by_metric["instructions"].verdict == "pass", by_metric["instructions"]
        changed = replay(1.015)
        decisions = {d.series_metric: d for d in evaluate(store, changed, gates)}
    d = decisions["instructions"]
    assert d.verdict == "regression" and d.failing, d
    assert 0.014 < d.effect < 0.016 and d.change_run_id == changed
    assert not decisions["time"].failing


def test_worker_env_keeps_only_what_counts_and_pads_to_a_fixed_size():
    """Counts depend on the size of the worker's environment (it shifts addresses), so the worker
    gets the kept variables only, padded: two callers whose environments differ get blocks of the
    same size, and a variable a test runner sets (PYTEST_CURRENT_TEST) never reaches the worker."""
    a = instructions.worker_env(
        environ={"PATH": "/usr/bin", "PYTEST_CURRENT_TEST": "x" * 300, "HOME": "/root"}
    )
    b = instructions.worker_env(environ={"PATH": "/usr/bin", "HOME": "/root", "FLAGS_check_nan_inf": "0"})
    assert "PYTEST_CURRENT_TEST" not in a and b["FLAGS_check_nan_inf"] == "0"
    assert a["PYTHONHASHSEED"] == instructions.WORKER_HASH_SEED and a["OMP_NUM_THREADS"] == "1"
    # paddle's static executor runs serially, freeing on the calling thread (unless the user says)
    assert a["FLAGS_enable_pir_in_executor_trace_run"] == "1" and a["FLAGS_eager_delete_tensor_gb"] == "-1"
    assert (
        instructions.worker_env(environ={"FLAGS_eager_delete_tensor_gb": "0"})["FLAGS_eager_delete_tensor_gb"]
        == "0"
    )
    user_seed = instructions.worker_env(environ={"PYTHONHASHSEED": "7"})
    assert user_seed["PYTHONHASHSEED"] == "7"

    def block(env, argv):
        return sum(len(x) + 1 for x in argv) + sum(len(k) + len(v) + 2 for k, v in env.items())

    for env, argv in (
        (a, ["python", "-m", "w", "--records-fd", "5"]),
        (b, ["python", "-m", "w", "--records-fd", "12"]),
    ):
        padded = instructions.pad_env(env, argv)
        assert block(padded, argv) % instructions.ENV_BLOCK_BYTES == 0
        assert block(padded, argv) == instructions.ENV_BLOCK_BYTES  # both fit in one block
        assert instructions.pad_env(padded, argv) == padded  # padding an already padded env: same


def test_worker_env_makes_relative_pythonpath_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = instructions.worker_env(environ={"PYTHONPATH": "src" + os.pathsep + "/abs/lib"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path / "src"), "/abs/lib"]


def test_a_pythonpath_is_named_in_one_line_because_its_listing_is_counted():
    notice = instructions.pythonpath_notice({"PYTHONPATH": "/some/checkout"})
    assert notice is not None and "PYTHONPATH" in notice and "pip install -e ." in notice
    assert "\n" not in notice
    assert instructions.pythonpath_notice({"PATH": "/usr/bin"}) is None
    assert instructions.pythonpath_notice({"PYTHONPATH": ""}) is None
