"""The pytest side of the suite: options, one item per YAML case, the run's records.

`benchmark/conftest.py` exposes these hooks, so `pytest benchmark/` collects
`benchmark/test_cases.py::test_case[<case id>]` once per expanded case. Configs are loaded and
validated in `pytest_configure` (a bad file stops the session with one line per problem, before
anything runs); thread counts and the allocator are set before paddle is imported; each finished
case is appended at once to the JSON summary and the history store, so a crash loses nothing
that finished.

Cases are measured in worker processes (`--bench-processes N`, default 3) before the items run
(`pytest_runtestloop`, `BenchSession.measure_in_workers`): trials in randomized interleaved
rounds (`benchmark.trials`), then the checks after timing in a worker of their own; each item then
reports its case's recorded result. `--bench-processes 0` measures inside each item instead, through
pytest-benchmark's fixture (`run_case`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import hashlib
import json
import os
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

from benchmark import measure
from benchmark.config import load_paths
from benchmark.config.expand import config_hash
from benchmark.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_CASES
from benchmark.model import Case
from benchmark.paths import RUN_GROUP_ENV
from benchmark.results import CaseResult, json_safe

SESSION_KEY = pytest.StashKey["BenchSession"]()
DEFAULT_PROCESSES = 3
QUICK_PROCESSES = 2  # smoke runs: the fewest processes that still show a between-process spread
# pyperf warns when the standard deviation exceeds 10% of the mean; so do we, between processes.
BETWEEN_CV_WARNING = 0.10
JSON_REFRESH_S = 5.0
PYTEST_BENCHMARK_DEFAULT_COLUMNS = [
    "min",
    "max",
    "mean",
    "stddev",
    "median",
    "iqr",
    "outliers",
    "ops",
    "rounds",
    "iterations",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("bench", "PaddlePaddle benchmark suite")
    g.addoption(
        "--bench-config",
        action="append",
        default=None,
        metavar="PATH",
        help="config file or directory to run (repeatable; default: configs/ of the project)",
    )
    g.addoption(
        "--bench-place",
        default=None,
        metavar="PLACES",
        help="comma-separated places to run, e.g. cpu or gpu,gpu:1 (default: every place a case "
        "declares; places this machine lacks are skipped with the reason)",
    )
    g.addoption(
        "--bench-tags",
        default=None,
        metavar="TAGS",
        help="comma-separated tags; run cases carrying any of them (default: every case not tagged "
        "'slow'; 'all' runs everything)",
    )
    g.addoption(
        "--bench-modes", default=None, metavar="MODES", help="comma-separated modes: dynamic,static,to_static"
    )
    g.addoption(
        "--bench-quick",
        action="store_true",
        default=False,
        help="short warmup and measurement (smoke runs; numbers are rough)",
    )
    g.addoption(
        "--bench-threads",
        type=int,
        default=1,
        metavar="N",
        help="OMP/MKL/paddle threads for CPU cases unless already set in the environment (default 1; 0: leave)",
    )
    g.addoption(
        "--bench-no-malloc-control",
        action="store_true",
        default=False,
        help="do not raise glibc's mmap/trim thresholds (large CPU tensors then measure page faults)",
    )
    g.addoption(
        "--bench-json",
        default=None,
        metavar="FILE",
        help="where to write the run's JSON summary (default: results/summary.json)",
    )
    g.addoption(
        "--bench-db",
        default=None,
        metavar="URL",
        help="SQLAlchemy URL of the history (default: $BENCHMARK_DB_URL, else sqlite:///results/history.sqlite)",
    )
    g.addoption(
        "--bench-no-store", action="store_true", default=False, help="do not record results in the history"
    )
    g.addoption(
        "--bench-trigger",
        default=None,
        help="what started this run: local, pr, nightly (default $BENCHMARK_TRIGGER or local)",
    )
    g.addoption(
        "--bench-run-group",
        default=None,
        metavar="NAME",
        help="name shared by the runs of one job, e.g. the shards of one nightly (default "
        "$BENCHMARK_RUN_GROUP); `benchmark gate --run-group NAME` and `export --run-group NAME` then "
        "take them as one run",
    )
    g.addoption(
        "--bench-shard",
        default=None,
        metavar="I/N",
        help="run only shard I of N (1-based); cases are split deterministically by id",
    )
    g.addoption(
        "--bench-framework",
        default="paddle",
        choices=("paddle", "torch"),
        help="framework that runs op cases (default paddle); 'torch' runs each op case's torch "
        "equivalent as its own series (id suffix '-torch')",
    )
    g.addoption(
        "--bench-gate",
        action="store_true",
        default=False,
        help="after all cases ran, judge each against its history (configs/gates.yaml): the gate item of a "
        "case that regressed fails with the reason, the others pass",
    )
    g.addoption(
        "--bench-gates", default=None, metavar="FILE", help="gate settings (default configs/gates.yaml)"
    )
    g.addoption(
        "--bench-profile",
        action="store_true",
        default=False,
        help="after timing, profile each case (op table, host/device copies; program cases: overhead "
        "decomposition); cases with `profile: true` are always profiled",
    )
    g.addoption(
        "--bench-trace-dir", default=None, metavar="DIR", help="with profiling, write chrome traces here"
    )
    g.addoption(
        "--bench-no-accuracy",
        action="store_true",
        default=False,
        help="skip the reference checks of cases that name a `reference`",
    )
    g.addoption(
        "--bench-vs-torch",
        action="store_true",
        default=False,
        help="also time each op case's torch equivalent the same way and record the paddle/torch ratio",
    )
    g.addoption(
        "--bench-nvml-interval",
        type=float,
        default=0.1,
        metavar="SECONDS",
        help="NVML sampling interval for CUDA cases (default 0.1; floor 0.01)",
    )
    g.addoption(
        "--bench-max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        metavar="BYTES",
        help="refuse cases whose inputs (or model, by estimate) need more memory than this (checked "
        "before allocating)",
    )
    g.addoption(
        "--bench-max-cases",
        type=int,
        default=DEFAULT_MAX_CASES,
        metavar="N",
        help=f"refuse a config entry that expands to more than N cases (default {DEFAULT_MAX_CASES})",
    )
    g.addoption(
        "--bench-instructions",
        action="store_true",
        default=False,
        help="also count instructions per iteration of every CPU case under valgrind's callgrind, in one "
        "worker process (a deterministic metric, its own series, gated at 1%% by default); without "
        "valgrind the suite says so in one line and measures time only",
    )
    g.addoption(
        "--bench-processes",
        type=int,
        default=None,
        metavar="N",
        help=f"measure each case in N fresh worker processes (default {DEFAULT_PROCESSES}, "
        f"{QUICK_PROCESSES} with --bench-quick; a case's "
        "`measure: {processes: N}` overrides it); the trials run in randomized interleaved rounds and "
        "the case's value is the median of the per-process medians. 0: measure in this process "
        "through pytest-benchmark's fixture, as before issue 11 (for debugging; one process is no "
        "evidence of run-to-run noise)",
    )
    g.addoption(
        "--bench-seed",
        type=int,
        default=None,
        metavar="SEED",
        help="seed of the random order of the trials (default: a fresh one, recorded with the run)",
    )
    g.addoption(
        "--bench-require-place",
        default=None,
        metavar="PLACES",
        help="comma-separated places (e.g. gpu) of which at least one case must execute: the session fails "
        "with one line when none did (all skipped or errored, e.g. no usable GPU); for CI jobs",
    )


def project_root(config: pytest.Config) -> Path:
    """The checkout the suite runs from: the directory holding pyproject.toml and configs/."""
    here = Path(__file__).resolve().parent.parent
    if (here / "configs").is_dir():
        return here
    return Path(config.rootpath)


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


class BenchSession:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.root = project_root(config)
        opt = config.getoption
        self.settings = measure.MeasureSettings.quick() if opt("bench_quick") else measure.MeasureSettings()
        self.threads = measure.pin_threads(opt("bench_threads") or None)
        self.allocator = measure.control_allocator(not opt("bench_no_malloc_control"))
        self.framework = opt("bench_framework")
        self.results: list[CaseResult] = []
        self.json_path = Path(opt("bench_json") or self.root / "results" / "summary.json")
        self.started = time.time()
        self.json_written = 0.0
        self.store = None
        self.run_id: int | None = None
        self.run_group: str | None = opt("bench_run_group") or os.environ.get(RUN_GROUP_ENV) or None
        self.session: pytest.Session | None = None
        # What the run set out to store (the measured items after deselection), and what happened.
        self.expected: list[Case] | None = None
        self.stored = 0
        self.store_error: str | None = None
        self.json_error: str | None = None
        self.status: str | None = None
        self.note: str | None = None
        self.problems: list[str] = []  # one line each, printed at the end of the session
        self.decisions: dict | None = None
        self.instructions = None  # benchmark.instructions.InstructionPass with --bench-instructions
        self.run_info: dict[str, Any] = {}
        self.machine: dict[str, Any] = {}
        processes = opt("bench_processes")
        if processes is None:
            processes = QUICK_PROCESSES if opt("bench_quick") else DEFAULT_PROCESSES
        self.processes: int = processes
        if self.processes < 0:
            raise pytest.UsageError(f"--bench-processes {self.processes}: expected 0 (in-process) or more")
        seed = opt("bench_seed")
        self.seed: int = seed if seed is not None else random.SystemRandom().randrange(2**31)
        # Results of the cases measured in worker processes (`measure_in_workers`), by case id.
        self.worker_results: dict[str, CaseResult] = {}
        self.cases = self._load_cases()

    # -- cases ---------------------------------------------------------------------------
    def _load_cases(self) -> list[Case]:
        from benchmark import runners

        opt = self.config.getoption
        paths = opt("bench_config") or [str(self.root / "configs")]
        cases, issues = load_paths(
            paths,
            checks=runners.config_checks(),
            max_bytes=opt("bench_max_bytes"),
            max_cases=opt("bench_max_cases"),
        )
        if issues:
            lines = "\n".join(str(i) for i in issues)
            raise pytest.UsageError(f"invalid benchmark config ({len(issues)} problem(s)):\n{lines}")
        places, tags, modes = _csv(opt("bench_place")), _csv(opt("bench_tags")), _csv(opt("bench_modes"))
        selected = []
        for c in cases:
            if places and not any(c.place == p or fnmatch.fnmatch(c.place, p) for p in places):
                continue
            if modes and c.mode not in modes:
                continue
            if tags is None and "slow" in c.tags:
                continue
            if tags and "all" not in tags and not set(tags) & set(c.tags):
                continue
            selected.append(c)
        shard = opt("bench_shard")
        if shard:
            selected = shard_cases(selected, shard)
        if self.framework == "torch":
            selected = [as_torch_case(c) for c in selected if c.kind == "op" and c.mode == "dynamic"]
        return selected

    # -- history -------------------------------------------------------------------------
    def open_history(self) -> None:
        """Open the history before anything is measured: a bad URL stops the session here."""
        from benchmark import environment, runners

        self.machine = environment.collect_machine()
        framework = {}
        ok, reason = runners.framework_available(self.framework)
        if ok:
            framework = runners.framework_info(self.framework)
        self.run_info = environment.collect_run(
            framework,
            trigger=self.config.getoption("bench_trigger"),
            tags=sorted({t for c in self.cases for t in c.tags}),
        )
        self.run_info["threads"] = self.threads
        self.run_info["allocator"] = self.allocator
        self.run_info["settings"] = measure.asdict(self.settings)
        self.run_info["trials"] = (
            {"processes": self.processes, "seed": self.seed, "order": "randomized interleaved rounds"}
            if self.processes
            else {"processes": 0, "order": "in-process"}
        )
        if self.config.getoption("bench_no_store"):
            if self.config.getoption("bench_gate"):
                raise pytest.UsageError(
                    "--bench-gate judges runs from the history: it cannot run with --bench-no-store"
                )
            return
        from benchmark.store import StoreError, open_store, resolve_url

        url = resolve_url(self.config.getoption("bench_db"), self.root)
        try:
            self.store = open_store(url)
        except StoreError as e:
            raise pytest.UsageError(f"history store: {e}") from None

    def check_json_path(self) -> None:
        """Refuse an unwritable --bench-json path before anything is measured (one line)."""
        tmp = self.json_path.with_suffix(".tmp")
        try:
            if self.json_path.is_dir():
                raise IsADirectoryError(21, "is a directory", str(self.json_path))
            self.json_path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text("")
            tmp.unlink()
        except OSError as e:
            raise pytest.UsageError(
                f"--bench-json {self.json_path}: cannot write there ({_os_error(e)})"
            ) from None

    def begin_run(self, items: list) -> None:
        """After collection and deselection: the run starts, naming the cases it will store, so its
        status can be checked against them; a heartbeat thread keeps its lease while it runs."""
        from benchmark.store import StoreError
        from benchmark.store.core import HEARTBEAT_PERIOD_S

        self.expected = [i.callspec.params["bench_case"] for i in items if _bench_case_item(i)]
        counted = [c for c in self.expected if self.counts_instructions(c)]
        self.run_info["expected_results"] = len(self.expected) + len(counted)
        self.run_info["expected_cases"] = [[c.case_id, c.place, c.mode] for c in self.expected]
        self.run_info["run_group"] = self.run_group
        if self.store is None:
            return
        self.run_info["heartbeat_s"] = HEARTBEAT_PERIOD_S
        try:
            self.run_id = self.store.begin_run(self.machine, self.run_info)
        except StoreError as e:
            raise pytest.UsageError(f"history store: {e}") from None
        self.store.start_heartbeat(self.run_id, HEARTBEAT_PERIOD_S)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            group = f", group {self.run_group}" if self.run_group else ""
            reporter.write_line(f"benchmark: history run {self.run_id}{group} ({self.store.display_url})")

    def gate_decision(self, case: Case, metric: str = "time"):
        """The judge's decision (benchmark.gate.judge, as `benchmark gate` and the reports decide)
        for `case` (its time series, or its "instructions" series) in this run (all cases are judged
        together, once)."""
        if self.decisions is None:
            from benchmark.gate import judge
            from benchmark.gates import DEFAULT_GATES_PATH, load_gates

            gates = load_gates(self.config.getoption("bench_gates") or DEFAULT_GATES_PATH)
            self.decisions = {d.key: d for d in judge(self.store, self.run_id, gates).decisions}
        return self.decisions.get((case.case_id, case.place, case.mode, metric))

    def start_instructions(self, config: pytest.Config) -> None:
        """--bench-instructions: find valgrind and build the callgrind hook, or say in one line why
        instruction counts are not measured (the suite goes on with time only)."""
        if not config.getoption("bench_instructions"):
            return
        from benchmark import instructions

        if not any(instructions.eligible(c) for c in self.cases):
            return
        try:
            tooling = instructions.find_tooling()
        except instructions.InstructionsUnavailable as e:
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            (reporter.write_line if reporter is not None else print)(f"benchmark: {e}")
            self.run_info["instructions"] = {"measured": False, "reason": str(e)}
            return
        self.instructions = instructions.InstructionPass(
            tooling, allocator_control=not config.getoption("bench_no_malloc_control")
        )
        self.run_info["instructions"] = {"measured": True, "valgrind": tooling.version}

    def counts_instructions(self, case: Case) -> bool:
        from benchmark import instructions

        return self.instructions is not None and instructions.eligible(case)

    def record_instructions(self, case: Case, timed: CaseResult) -> None:
        """After the case's timing (never during it): its instruction count, as a result of its own."""
        if not self.counts_instructions(case):
            return
        from benchmark import instructions

        if timed.status in ("ok", "failed"):
            result = self.instructions.measure(case)
        else:
            result = instructions.instruction_result_base(case)
            result.status = "skipped"
            result.message = f"not counted: the case was {timed.status} when timed"
            result.finished_at = time.time()
        self.record(result)
        if result.status == "error":  # the time result is recorded; the item fails with the reason
            pytest.fail(f"{case.id}: instruction count: {result.message}", pytrace=False)

    # -- worker processes ------------------------------------------------------------------
    def case_processes(self, case: Case) -> int:
        """How many worker processes measure `case` (0: in this process, the run's --bench-processes 0)."""
        if self.processes == 0:
            return 0
        return int(case.measure.get("processes") or self.processes)

    def trial_params(self, trial) -> dict[str, Any]:
        """The `time` request of one trial: the case's settings divided over its processes
        (`MeasureSettings.per_process`)."""
        settings = self.settings.override(trial.case.measure).per_process(trial.processes)
        return {
            "settings": measure.asdict(settings),
            "allocator_control": not self.config.getoption("bench_no_malloc_control"),
        }

    def checks_wanted(self, case: Case) -> dict[str, Any]:
        """The checks after timing that `case` gets (what `diagnose` does in process): reference
        check (op cases naming a `reference`), torch timing, profile pass; {} when none."""
        opt = self.config.getoption
        wanted = {
            "accuracy": bool(not opt("bench_no_accuracy") and case.kind == "op" and case.spec.reference),
            "vs_torch": bool(opt("bench_vs_torch") and case.kind == "op" and self.framework == "paddle"),
            "profile": bool(opt("bench_profile") or case.spec.profile),
        }
        if not any(wanted.values()):
            return {}
        trace_dir = opt("bench_trace_dir")
        if wanted["profile"] and trace_dir:
            trace = Path(trace_dir) / f"{case.id}.json"
            trace.parent.mkdir(parents=True, exist_ok=True)
            wanted["trace"] = str(trace)
        return wanted

    def run_checks(self, states: dict, keys: list[str], log, progress) -> None:
        """The checks after timing of the cases `keys` (measured ok), in one worker of their own
        after all trials, so that a profiler or a torch import never shares a process with a
        timing; then each case is recorded."""
        from benchmark import trials
        from benchmark.workers import Worker

        progress.line(f"benchmark: checks after timing (reference, torch, profile) of {len(keys)} case(s)")
        worker = None
        try:
            for key in keys:
                state = states[key]
                if self.store_error is None:
                    if worker is None or not worker.alive():
                        if worker is not None:
                            worker.close()
                        worker = Worker(stderr=log)
                    settings = self.settings.override(state.case.measure)
                    params = {
                        "settings": measure.asdict(settings),
                        "allocator_control": not self.config.getoption("bench_no_malloc_control"),
                        "diagnose": self.checks_wanted(state.case),
                    }
                    record = worker.request("checks", state.case, params, timeout_s=trials.TRIAL_TIMEOUT_S)
                    state.apply_checks(record)
                self.record(state.result)
        except BaseException:  # interrupted: the worker goes too
            if worker is not None and worker.alive():
                worker.proc.kill()
            raise
        finally:
            if worker is not None:
                worker.close()

    def measure_in_workers(self, items: list) -> None:
        """Measure every selected case in worker processes, in randomized interleaved rounds
        (`benchmark.trials`), before the items run; each case is recorded (history, JSON) as soon
        as its last trial is in, and its item then reports it."""
        from benchmark import runners, trials
        from benchmark.workers import Worker

        cases = [i.callspec.params["bench_case"] for i in items if _bench_case_item(i)]
        if self.processes == 0 or not cases:
            return
        todo, states = [], {}
        for case in cases:
            if case.id in states:
                continue
            ok, reason = runners.framework_available(self.framework)
            if ok:
                ok, reason = runners.place_available(case.place, self.framework)
            result = CaseResult.for_case(case)
            if not ok:
                result.status, result.message = "skipped", reason
                result.finished_at = time.time()
                self.worker_results[case.id] = result
                self.record(result)
                continue
            states[case.id] = _CaseTrials(case=case, result=result)
            todo.append((case.id, case, self.case_processes(case)))
        if not todo:
            return
        rounds = trials.plan_trials(todo, self.seed)
        total = sum(len(r) for r in rounds)
        progress = _Progress(self.config, total, len(rounds))
        progress.line(
            f"benchmark: {len(todo)} case(s) in worker processes ({_counts(p for _, _, p in todo)} "
            f"each): {total} trials in {len(rounds)} randomized interleaved round(s), seed {self.seed}; "
            f"worker output in {self.json_path.with_name('workers.log')}"
        )
        interval = self.config.getoption("bench_nvml_interval")

        def should_run(trial) -> bool:
            return self.store_error is None and not states[trial.key].done

        def on_start(trial, worker):
            progress.start(trial)
            sampler = start_telemetry(trial.case.place, interval)
            if sampler is None:
                return None

            def stop() -> None:
                sampler.stop()
                states[trial.key].telemetry.setdefault(trial.index, sampler.telemetry())

            return stop

        checks: list[str] = []  # cases measured ok that get checks after timing, recorded after them

        def on_record(trial, record) -> None:
            state = states[trial.key]
            progress.done(trial, record)
            if state.add(trial, record):
                result = self.worker_results[trial.key] = state.finish()
                if result.status == "ok" and self.checks_wanted(trial.case):
                    checks.append(trial.key)
                else:
                    self.record(result)

        log = self.worker_log()

        def new_worker():
            return Worker(stderr=log)

        try:
            trials.run_trials(
                rounds,
                new_worker,
                self.trial_params,
                on_record,
                should_run=should_run,
                on_start=on_start,
                on_round=progress.round_done,
            )
            if checks:
                self.run_checks(states, checks, log, progress)
        finally:
            if log is not None:
                log.close()

    def worker_log(self):
        """Where the workers' own output goes (what the framework prints): `workers.log` beside the
        JSON summary; None (the terminal) when it cannot be opened."""
        path = self.json_path.with_name("workers.log")
        try:
            return open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed after the trials
        except OSError:
            return None

    def check_telemetry(self, config: pytest.Config) -> None:
        """Say once, in one line, when CUDA cases will run without GPU telemetry."""
        from benchmark import runners
        from benchmark.telemetry.devices import warn_once

        gpu_places = {c.place for c in self.cases if c.place.startswith("gpu")}
        if not gpu_places or not runners.framework_available(self.framework)[0]:
            return
        if not any(runners.place_available(p, self.framework)[0] for p in gpu_places):
            return  # no CUDA place here: those cases are skipped with their own reason

        reporter = config.pluginmanager.get_plugin("terminalreporter")
        emit = reporter.write_line if reporter is not None else None
        warn_once(emit=emit)
        # What this framework build cannot measure on the device (Paddle 2.6: event timing, peak memory).
        for note in (self.run_info.get("framework") or {}).get("gpu_notes") or []:
            (emit or print)(note)

    def record(self, result: CaseResult) -> None:
        from benchmark.results import timing_problem

        problem = timing_problem(result)
        if problem:  # NaN, inf or non-positive timings are an error of the case, never numbers
            result.status, result.message = "error", f"invalid timing samples: {problem}"
            result.samples, result.device_samples, result.stats = [], None, {"rounds": 0}
        self.results.append(result)
        # The history first, at once; side outputs after it, and never able to lose it. The JSON
        # summary (all results, rewritten whole) is refreshed every few seconds and at the end.
        self.store_result(result)
        if time.time() - self.json_written >= JSON_REFRESH_S:
            self.write_json()

    def store_result(self, result: CaseResult) -> None:
        if self.store is None or self.run_id is None or self.store_error is not None:
            return
        from benchmark.store import StoreError

        try:
            self.store.add_result(self.run_id, result.to_dict())
            self.stored += 1
        except (StoreError, ValueError) as e:
            # Stop here: what is measured from now on could not be stored either. The run is
            # recorded as incomplete (if the database still answers) and the session ends in a line.
            self.store_error = " ".join(str(e).split())
            if self.session is not None:
                self.session.shouldstop = f"history store: {self.store_error}"

    def write_json(self, status: str = "running") -> bool:
        """Rewrite the JSON summary; False (and the reason kept for the end) when it cannot be."""
        doc = {
            "run": {
                **self.run_info,
                "id": self.run_id,
                "status": status,
                "note": self.note,
                "stored_results": self.stored if self.store is not None else None,
                "started": self.started,
            },
            "machine": self.machine,
            "results": [r.to_dict() for r in self.results],
        }
        tmp = self.json_path.with_suffix(".tmp")
        try:
            self.json_path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(json_safe(doc), indent=1, default=str, allow_nan=False))
            os.replace(tmp, self.json_path)
        except OSError as e:
            self.json_error = _os_error(e)
            return False
        finally:
            self.json_written = time.time()
        self.json_error = None
        return True

    def final_status(self, exitstatus: int) -> tuple[str, str | None]:
        """The run's status from what happened (the store still checks `complete` against its
        results): a failed write makes it incomplete, an interrupted session interrupted."""
        expected = len(self.expected) if self.expected is not None else None
        done = self.stored if self.store is not None else len(self.results)
        if self.store_error is not None:
            missing = f"{expected - done} of {expected}" if expected is not None else "some"
            return "incomplete", f"{missing} results not stored: {self.store_error}"
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            return "interrupted", f"the session was interrupted after {done} of {expected} results"
        if exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            if expected is not None and done < expected:
                return (
                    "incomplete",
                    f"{expected - done} of {expected} results missing (the session stopped early)",
                )
            return "complete", None
        return "failed", f"pytest exit status {int(exitstatus)}"

    def finish(self, exitstatus: int) -> bool:
        """Close the run: history first, then the JSON summary. Returns False when either could
        not be written (each problem is kept as one line for the end of the session)."""
        from benchmark.store import StoreError

        if self.instructions is not None:
            self.instructions.close()
        self.status, self.note = self.final_status(exitstatus)
        if self.store is not None and self.run_id is not None:
            try:
                self.status = self.store.finish_run(self.run_id, self.status, note=self.note)
            except StoreError as e:
                self.problems.append(
                    f"history store: the end of run {self.run_id} was not recorded ({' '.join(str(e).split())});"
                    " it reads as interrupted"
                )
        if self.store_error is not None:
            self.problems.append(f"history store: run {self.run_id} is {self.status}: {self.note}")
        if not self.write_json(self.status):
            where = f"; every result is in history run {self.run_id}" if self.stored else ""
            self.problems.append(f"--bench-json: the summary was not written: {self.json_error}{where}")
            if self.store is not None and self.run_id is not None and self.store_error is None:
                with contextlib.suppress(StoreError):  # the run record says so too (the gate prints it)
                    self.store.add_note(self.run_id, f"JSON summary not written: {self.json_error}")
        return not self.problems


def as_torch_case(case: Case) -> Case:
    """The same op case run by torch: its own series (framework in the config, so a new hash)."""
    twin = dataclasses.replace(
        case, case_id=f"{case.case_id}-torch", spec=case.spec.model_copy(update={"framework": "torch"})
    )
    return dataclasses.replace(twin, config_hash=config_hash(twin.config))


def shard_cases(cases: list[Case], spec: str) -> list[Case]:
    try:
        i, n = (int(x) for x in spec.split("/"))
        if not 1 <= i <= n:
            raise ValueError
    except ValueError:
        raise pytest.UsageError(f"--bench-shard {spec!r}: expected I/N with 1 <= I <= N, e.g. 1/4") from None

    def bucket(c: Case) -> int:
        return int(hashlib.sha1(c.case_id.encode()).hexdigest(), 16) % n

    return [c for c in cases if bucket(c) == i - 1]


# ----------------------------------------------------------------------------------------------
# Hooks
# ----------------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "help", False):
        return
    session = BenchSession(config)
    config.stash[SESSION_KEY] = session
    for t in sorted({t for c in session.cases for t in c.tags}):
        config.addinivalue_line("markers", f"{t}: cases tagged '{t}' in their config")
    for m in ("op", "program", "model", "cpu", "gpu", "gate"):
        config.addinivalue_line("markers", f"{m}: benchmark cases of kind/place '{m}'")
    # Fewer, more readable pytest-benchmark columns unless the user chose some.
    if config.getoption("benchmark_columns", None) in (None, [], PYTEST_BENCHMARK_DEFAULT_COLUMNS):
        config.option.benchmark_columns = ["min", "median", "iqr", "rounds", "iterations"]


def pytest_sessionstart(session: pytest.Session) -> None:
    bench = session.config.stash.get(SESSION_KEY, None)
    if bench is not None and not session.config.getoption("collectonly"):
        bench.session = session
        bench.check_json_path()
        bench.open_history()
        bench.check_telemetry(session.config)
        bench.start_instructions(session.config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    bench = metafunc.config.stash[SESSION_KEY]
    if "gate_case" in metafunc.fixturenames:
        params = [pytest.param(c, id=c.id, marks=[pytest.mark.gate]) for c in bench.cases]
        metafunc.parametrize("gate_case", params)
        return
    if "bench_case" not in metafunc.fixturenames:
        return
    params = []
    for c in bench.cases:
        marks = [getattr(pytest.mark, m) for m in (c.kind, c.device, *c.tags)]
        marks.append(pytest.mark.benchmark(timer=measure.timer_for(c.place), disable_gc=True, group=c.name))
        params.append(pytest.param(c, id=c.id, marks=marks))
    metafunc.parametrize("bench_case", params)


def pytest_collection_finish(session: pytest.Session) -> None:
    bench = session.config.stash.get(SESSION_KEY, None)
    if bench is not None and not session.config.getoption("collectonly"):
        bench.begin_run(session.items)


def _bench_case_item(item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and isinstance(callspec.params.get("bench_case"), Case)


def _os_error(e: OSError) -> str:
    return f"{e.strerror} ({e.filename})" if e.strerror and e.filename else " ".join(str(e).split())


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """Gate items run after every case was measured, and only with --bench-gate."""
    gate_items = [i for i in items if i.get_closest_marker("gate")]
    if not gate_items:
        return
    others = [i for i in items if not i.get_closest_marker("gate")]
    # Without --bench-gate the gate items are not part of the session at all (not "deselected").
    items[:] = others + gate_items if config.getoption("bench_gate") else others


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session):
    """Before the items run: measure the selected cases in worker processes (interleaved trials)."""
    bench = session.config.stash.get(SESSION_KEY, None)
    if (
        bench is not None
        and not session.config.getoption("collectonly")
        and not session.testsfailed
        and bench.processes > 0
    ):
        bench.measure_in_workers(session.items)
    return (yield)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    bench = session.config.stash.get(SESSION_KEY, None)
    if bench is not None and not session.config.getoption("collectonly"):
        if not bench.finish(int(exitstatus)) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        check_required_places(session, bench)


def check_required_places(session: pytest.Session, bench: BenchSession) -> None:
    """--bench-require-place: fail the session, in one line, when no case of a required place
    executed (measured, whatever its accuracy); a skipped or errored case does not count."""
    for want in _csv(session.config.getoption("bench_require_place")) or []:
        on_place = [
            r
            for r in bench.results
            if r.place == want or fnmatch.fnmatch(r.place, want) or r.place.split(":")[0] == want
        ]
        if any(r.status in ("ok", "failed") and r.samples for r in on_place):
            continue
        why = next((f"{r.status}: {r.message}" for r in on_place if r.message), "none was selected")
        line = f"--bench-require-place {want}: 0 of {len(on_place)} case(s) on place {want} executed ({why})"
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write("\n")  # after the progress dots of the last item
            reporter.write_line(line, red=True)
        else:
            print(line, file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    bench = config.stash.get(SESSION_KEY, None)
    if bench is None:
        return
    if not bench.results:
        _write_problems(terminalreporter, bench)
        return
    tr = terminalreporter
    tr.section("benchmark summary (time per iteration)")
    tr.write_line(
        f"{'case':<58} {'place':<6} {'mode':<9} {'median':>10} {'IQR':>9} {'95% CI of median':>22} {'n':>5} "
        f"{'P':>2} {'between':>7}  throughput"
    )
    skipped: dict[str, int] = {}
    # In collection order (cases measured in worker processes are recorded as their last trial ends).
    order = {(c.case_id, c.place, c.mode): i for i, c in enumerate(bench.expected or [])}
    for r in sorted(bench.results, key=lambda r: order.get((r.case_id, r.place, r.mode), len(order))):
        s = r.stats or {}
        if r.metric != "time":
            continue  # instruction counts: their own section below
        if r.status == "skipped":
            skipped[r.message or ""] = skipped.get(r.message or "", 0) + 1
            continue
        if r.status != "ok" and not r.samples:
            tr.write_line(f"{r.case_id:<58} {r.place:<6} {r.mode:<9} {r.status.upper()}: {r.message or ''}")
            continue
        ci = f"{measure.format_time(s.get('ci_low'))} .. {measure.format_time(s.get('ci_high'))}"
        thr = f"{r.throughput:,.1f} {r.throughput_unit}" if r.throughput else ""
        tr.write_line(
            f"{r.case_id:<58} {r.place:<6} {r.mode:<9} {measure.format_time(s.get('median')):>10} "
            f"{measure.format_time(s.get('iqr')):>9} {ci:>22} {s.get('rounds', 0):>5} {_between(s)}  {thr}"
        )
        for w in r.warnings:
            tr.write_line(f"    warning: {w}", yellow=True)
        if r.status != "ok":
            tr.write_line(f"    {r.status.upper()}: {r.message}", red=True)
        torch = r.extra.get("torch") or {}
        if torch.get("paddle_over_torch"):
            tr.write_line(
                f"    vs torch: {measure.format_time(torch['median'])} per iteration, "
                f"paddle/torch = {torch['paddle_over_torch']:.2f}x"
            )
    for reason, count in skipped.items():
        tr.write_line(f"skipped {count} case(s): {reason}")
    counted = [r for r in bench.results if r.metric == "instructions" and r.status != "skipped"]
    if counted:
        tr.section("benchmark summary (instructions per iteration, callgrind)")
        tr.write_line(f"{'case':<58} {'place':<6} {'mode':<9} {'instructions':>14} {'spread':>8} {'n':>3}")
        for r in counted:
            if r.status != "ok":
                tr.write_line(
                    f"{r.case_id:<58} {r.place:<6} {r.mode:<9} {r.status.upper()}: {r.message or ''}"
                )
                continue
            from benchmark.instructions import spread

            tr.write_line(
                f"{r.case_id:<58} {r.place:<6} {r.mode:<9} {r.stats.get('median', 0):>14,.0f} "
                f"{spread(r.samples):>8.3%} {len(r.samples):>3}"
            )
    where = [] if bench.json_error else [str(bench.json_path)]
    if bench.store is not None and bench.run_id is not None:
        group = f", group {bench.run_group}" if bench.run_group else ""
        where.append(f"history run {bench.run_id}{group}, {bench.status} ({bench.store.display_url})")
    tr.write_line(f"results: {', '.join(where) or 'none written'}")
    _write_problems(tr, bench)


def _between(stats: dict) -> str:
    """The summary table's P (ok worker processes) and between (their spread, `between_cv`)
    columns; blank for in-process measurement."""
    processes = stats.get("processes")
    if not processes:
        return f"{'':>2} {'':>7}"
    cv = stats.get("between_cv")
    spread = f"{cv:.1%}" if cv is not None and cv == cv else "-"
    return f"{processes:>2} {spread:>7}"


def _write_problems(tr, bench: BenchSession) -> None:
    for line in bench.problems:
        tr.write_line(line, red=True)


# ----------------------------------------------------------------------------------------------
# Fixtures and the body of every item
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def bench_session(request) -> BenchSession:
    return request.config.stash[SESSION_KEY]


def diagnose(case: Case, prepared, result: CaseResult, bench: BenchSession, settings) -> None:
    """After the timed measurement, never inside it: reference check, profile pass, torch timing."""
    from benchmark import runners

    opt = bench.config.getoption
    if not opt("bench_no_accuracy"):
        result.accuracy = runners.check_accuracy(case, prepared)
        if result.accuracy and result.accuracy.get("status") in ("failed", "error"):
            result.status = "failed"
            result.message = f"accuracy vs {result.accuracy['reference']}: {result.accuracy.get('message')}"
    if opt("bench_vs_torch") and case.kind == "op" and bench.framework == "paddle":
        result.extra["torch"] = torch_comparison(case, settings, result.stats.get("median"))
    if opt("bench_profile") or case.spec.profile:
        trace_dir = opt("bench_trace_dir")
        trace = Path(trace_dir) / f"{case.id}.json" if trace_dir else None
        if trace is not None:
            trace.parent.mkdir(parents=True, exist_ok=True)
        result.profile = runners.profile_pass(case, prepared, trace)


def torch_comparison(case: Case, settings, paddle_median: float | None) -> dict:
    """Time the case's torch equivalent with the same warmup, calibration and sync; the ratio."""
    from benchmark import runners

    ok, reason = runners.framework_available("torch")
    if ok:
        ok, reason = runners.place_available(case.place, "torch")
    if not ok:
        return {"status": "skipped", "message": reason}
    torch_case = as_torch_case(case)
    try:
        prepared = runners.prepare(torch_case)
    except runners.RunnerUnavailable as e:
        return {"status": "skipped", "message": str(e)}
    try:
        samples = measure.measure_plain(prepared, settings)
    finally:
        prepared.close()
    median = float(sorted(samples)[len(samples) // 2])
    return {
        "status": "ok",
        "median": median,
        "rounds": len(samples),
        "paddle_over_torch": paddle_median / median if paddle_median and median else None,
        "info": prepared.info,
    }


def run_gate(case: Case, bench: BenchSession) -> None:
    """The body of a gate item: fail it when the case regressed (or errored), with the reason."""
    d = bench.gate_decision(case)
    counted = bench.gate_decision(case, "instructions")  # None without --bench-instructions
    failing = [x for x in (d, counted) if x is not None and x.failing]
    if failing:
        from benchmark.commands.gate import format_decision

        pytest.fail("\n".join(format_decision(x) for x in failing), pytrace=False)
    if d is None or d.verdict == "skipped":
        pytest.skip("no result of this case in this run")


def start_telemetry(place: str, interval: float):
    """An NVML sampler for a CUDA place, started before warmup; None on CPU or without NVML.

    Without a driver, the session has already said so in one line (`pytest_sessionstart`).
    """
    if not place.startswith("gpu"):
        return None
    from benchmark.telemetry.devices import nvml_device_index
    from benchmark.telemetry.nvml import nvml_status
    from benchmark.telemetry.sampler import NvmlSampler

    if not nvml_status()[0]:
        return None
    index = nvml_device_index(int(place.split(":")[1]) if ":" in place else 0)
    if index is None:
        return None
    return NvmlSampler(device_index=index, interval=interval).start()


def run_case(case: Case, benchmark, bench: BenchSession) -> CaseResult:
    """Prepare, measure and record one case in this process (--bench-processes 0); skips and
    errors are recorded too, never as numbers. `benchmark`: pytest-benchmark's fixture, or a
    callable returning it (requested only for a case that is measured)."""
    from benchmark import runners

    result = CaseResult.for_case(case)
    ok, reason = runners.framework_available(bench.framework)
    if ok:
        ok, reason = runners.place_available(case.place, bench.framework)
    if not ok:
        result.status, result.message = "skipped", reason
        result.finished_at = time.time()
        bench.record(result)
        bench.record_instructions(case, result)
        pytest.skip(reason)
    if not hasattr(benchmark, "pedantic"):
        benchmark = benchmark()
    settings = bench.settings.override(case.measure)
    prepared = None
    sampler = start_telemetry(case.place, bench.config.getoption("bench_nvml_interval"))
    try:
        t0 = time.perf_counter()
        prepared = runners.prepare(case)
        result.extra["prepare_s"] = time.perf_counter() - t0
        result.extra.update(prepared.info)
        for key, value in measure.measure(benchmark, prepared, case.place, settings).items():
            if key == "extra":
                result.extra.update(value)
            else:
                setattr(result, key, value)
        result.status = "ok"
        diagnose(case, prepared, result, bench, settings)
    except runners.RunnerUnavailable as e:
        result.status, result.message = "skipped", str(e)
    except Exception as e:  # noqa: BLE001 - any failure of a case is recorded as that case's error
        result.status = "error"
        result.message = f"{type(e).__name__}: {e}".splitlines()[0][:500]
        result.extra["traceback"] = traceback.format_exc(limit=8)
    finally:
        if sampler is not None:
            sampler.stop()
            result.telemetry = sampler.telemetry()
        if prepared is not None:
            prepared.close()
        result.finished_at = time.time()
    bench.record(result)
    bench.record_instructions(case, result)
    return item_outcome(case, result, bench)


def report_case(case: Case, bench: BenchSession) -> CaseResult:
    """The body of an item whose case was measured in worker processes: count its instructions
    (with --bench-instructions), then pass, skip or fail with the recorded result."""
    result = bench.worker_results.get(case.id)
    if result is None:
        why = f"history store: {bench.store_error}" if bench.store_error else "the trials did not reach it"
        pytest.skip(f"not measured ({why})")
    bench.record_instructions(case, result)
    return item_outcome(case, result, bench)


def item_outcome(case: Case, result: CaseResult, bench: BenchSession) -> CaseResult:
    """The case item passes, skips or fails as its recorded result says (warnings with -v)."""
    if result.status == "skipped":
        pytest.skip(result.message)
    if result.status in ("error", "failed"):
        pytest.fail(f"{case.id}: {result.message}", pytrace=False)
    if result.warnings and bench.config.getoption("verbose") > 0:
        print("\n".join(f"warning: {w}" for w in result.warnings), file=sys.stderr)
    return result


@dataclasses.dataclass
class _CaseTrials:
    """The trials of one case so far, and the result they make (`finish`)."""

    case: Case
    result: CaseResult
    entries: list = dataclasses.field(default_factory=list)
    records: list = dataclasses.field(default_factory=list)  # the ok records, in trial order
    telemetry: dict = dataclasses.field(default_factory=dict)
    skipped: str | None = None
    error: str | None = None
    done: bool = False

    def add(self, trial, record: dict) -> bool:
        """Take one trial's record; True when the case has no more trials to run."""
        from benchmark.results import bad_timings, process_entry

        status = record.get("status")
        if status == "skipped":
            self.skipped = str(record.get("message") or "skipped by the runner")
        else:
            ok = status == "ok" and bool(record.get("samples"))
            message = None if ok else str(record.get("message") or f"trial status {status!r} without samples")
            bad = bad_timings(record.get("samples")) if ok else 0
            if bad:  # NaN, inf or non-positive timings are an error of the trial, never numbers
                ok, message = (
                    False,
                    f"invalid timing samples: {bad} of {len(record['samples'])} in trial {trial.index + 1}",
                )
            self.entries.append(
                process_entry(
                    trial.index,
                    record.get("pid"),
                    trial.order,
                    "ok" if ok else "error",
                    record.get("samples") if ok else None,
                    int(record.get("iterations") or 1),
                    message,
                )
            )
            if ok:
                self.records.append(record)
            elif self.error is None:
                self.error = message
                if record.get("traceback"):
                    self.result.extra["traceback"] = record["traceback"]
        self.done = bool(self.skipped or self.error) or trial.index == trial.processes - 1
        return self.done

    def finish(self) -> CaseResult:
        """The case's result from its trials (see the shared contract: run value = median of the
        process values, pooled raw samples, per-process entries)."""
        from benchmark.analysis.summary import stability_warnings
        from benchmark.results import summarize_processes

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
            r.stats = {"rounds": 0, "processes": len(self.records)}
            return r
        pooled, stats = summarize_processes(self.entries)
        records = self.records
        first = records[0]
        r.status = "ok"
        r.samples, r.stats = pooled, stats
        r.iterations = int(first.get("iterations") or 1)
        r.warmup_rounds = 1
        device = [x for rec in records for x in rec.get("device_samples") or []]
        r.device_samples = device or None
        peaks = [rec["peak_memory_bytes"] for rec in records if rec.get("peak_memory_bytes") is not None]
        r.peak_memory_bytes = max(peaks) if peaks else None
        faults = [float(rec.get("page_faults_per_iter") or 0.0) for rec in records]
        r.page_faults_per_iter = sum(faults) / len(faults)
        r.extra.update(
            {
                "prepare_s": first.get("prepare_s"),
                "warmup_iterations": first.get("warmup_iterations"),
                "estimate_s": first.get("estimate_s"),
                "warmup_s": sum(float(rec.get("warmup_s") or 0.0) for rec in records),
                "timed_s": sum(float(rec.get("timed_s") or 0.0) for rec in records),
                "processes": len(records),
            }
        )
        r.extra.update(first.get("info") or {})
        # Within-process stability: each process's samples scaled to the run value, so that the
        # level differences between processes (reported as between_cv) do not count twice.
        median = stats["median"]
        scaled = [
            x * median / e["value"]
            for e in self.entries
            if e["status"] == "ok" and e["value"]
            for x in e["samples"]
        ]
        r.warnings = stability_warnings(scaled, min_rounds=10)
        cv = stats.get("between_cv")
        if cv is not None and cv == cv and cv > BETWEEN_CV_WARNING:
            values = ", ".join(measure.format_time(e["value"]) for e in self.entries if e["status"] == "ok")
            r.warnings.append(
                f"processes disagree: the {stats['processes']} process values ({values}) spread by "
                f"{cv:.0%} (> {BETWEEN_CV_WARNING:.0%}); the machine may be busy or the case sensitive "
                "to process state (try more processes)"
            )
        if median and r.page_faults_per_iter * measure.FAULT_COST_S > 0.02 * median:
            r.warnings.append(
                f"page faults: {r.page_faults_per_iter:.1f} minor faults per iteration (~"
                f"{r.page_faults_per_iter * measure.FAULT_COST_S / median:.0%} of the time); the timing "
                "includes memory mapping (allocator not controlled, or tensors above the mmap threshold)"
            )
        items = first.get("items_per_step")
        if items and median:
            r.throughput, r.throughput_unit, r.batch_size = items / median, "samples/s", items
        return r

    def apply_checks(self, record: dict) -> None:
        """The record of the case's checks after timing (`checks` task): reference check, torch
        timing (against the run value), profile pass; a failed check request errs the case."""
        r = self.result
        if record.get("status") != "ok":
            r.status = "error"
            message = str(record.get("message") or "no record")
            r.message = f"checks after timing: {message.replace('worker process:', 'worker process')}"
            if record.get("traceback"):
                r.extra["traceback"] = record["traceback"]
            return
        if record.get("accuracy") is not None:
            r.accuracy = record["accuracy"]
            if r.accuracy.get("status") in ("failed", "error"):
                r.status = "failed"
                r.message = f"accuracy vs {r.accuracy['reference']}: {r.accuracy.get('message')}"
        torch = record.get("torch")
        if torch is not None:
            median = r.stats.get("median")
            if torch.get("status") == "ok":
                torch["paddle_over_torch"] = (
                    median / torch["median"] if median and torch.get("median") else None
                )
            r.extra["torch"] = torch
        if record.get("profile") is not None:
            r.profile = record["profile"]


def _counts(values) -> str:
    distinct = sorted(set(values))
    return "/".join(str(v) for v in distinct)


class _Progress:
    """Progress of the trials on the terminal: one line per round; with -v one line per trial; on
    a TTY the current trial on a line rewritten in place."""

    def __init__(self, config: pytest.Config, total: int, rounds: int):
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")
        self.verbose = config.getoption("verbose") > 0
        self.tty = bool(getattr(self.reporter, "isatty", False)) if self.reporter is not None else False
        self.total, self.rounds = total, rounds
        self.count = 0
        self.errors = 0
        self.round_started = time.monotonic()
        self.round_trials = 0

    def line(self, text: str, **markup) -> None:
        if self.reporter is None:
            print(text, file=sys.stderr)
            return
        if self.tty:  # over the in-place line of the current trial
            self.reporter.rewrite(text, erase=True, **markup)
            self.reporter.write("\n")
            return
        self.reporter.ensure_newline()
        self.reporter.write_line(text, **markup)

    def start(self, trial) -> None:
        if self.tty and self.reporter is not None:
            self.reporter.rewrite(
                f"round {trial.round + 1}/{self.rounds}, trial {self.count + 1}/{self.total}: "
                f"{trial.case.id} ({trial.index + 1} of {trial.processes})",
                erase=True,
            )

    def done(self, trial, record: dict) -> None:
        self.count += 1
        self.round_trials += 1
        ok = record.get("status") == "ok" and record.get("samples")
        if not ok and record.get("status") != "skipped":
            self.errors += 1
        if self.verbose or (not ok and record.get("status") != "skipped"):
            samples = sorted(record.get("samples") or [])
            what = (
                measure.format_time(samples[len(samples) // 2])
                if ok
                else f"{str(record.get('status')).upper()}: {record.get('message')}"
            )
            self.line(
                f"  trial {self.count}/{self.total} {trial.case.id} [{trial.case.place} {trial.case.mode}] "
                f"process {trial.index + 1}/{trial.processes} pid {record.get('pid')}: {what}",
                red=not ok and record.get("status") != "skipped",
            )

    def round_done(self, r: int, trials: list) -> None:
        took = time.monotonic() - self.round_started
        errors = f", {self.errors} error(s) so far" if self.errors else ""
        self.line(
            f"benchmark: round {r + 1}/{self.rounds} done: {self.round_trials} trial(s) in {took:.1f} s{errors}"
        )
        self.round_started = time.monotonic()
        self.round_trials = 0
