"""The pytest side of the suite: options, one item per YAML case, the run's records.

`benchmark/conftest.py` exposes these hooks, so `pytest benchmark/` collects
`benchmark/test_cases.py::test_case[<case id>]` once per expanded case. Configs are loaded and
validated in `pytest_configure` (a bad file stops the session with one line per problem, before
anything runs); thread counts and the allocator are set before paddle is imported; each finished
case is appended at once to the JSON summary and the history store, so a crash loses nothing
that finished.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import hashlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

from benchmark import measure
from benchmark.config import DEFAULT_MAX_BYTES, DEFAULT_MAX_CASES, Case, config_hash, load_paths
from benchmark.results import CaseResult

SESSION_KEY = pytest.StashKey["BenchSession"]()
RUN_GROUP_ENV = "BENCHMARK_RUN_GROUP"
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
        """The gate's decision for `case` (its time series, or its "instructions" series) in this run
        (all cases are judged together, once)."""
        if self.decisions is None:
            from benchmark.gate import evaluate
            from benchmark.gates import DEFAULT_GATES_PATH, load_gates

            gates = load_gates(self.config.getoption("bench_gates") or DEFAULT_GATES_PATH)
            self.decisions = {d.key: d for d in evaluate(self.store, self.run_id, gates)}
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

    def check_telemetry(self, config: pytest.Config) -> None:
        """Say once, in one line, when CUDA cases will run without GPU telemetry."""
        from benchmark import runners, telemetry

        gpu_places = {c.place for c in self.cases if c.place.startswith("gpu")}
        if not gpu_places or not runners.framework_available(self.framework)[0]:
            return
        if not any(runners.place_available(p, self.framework)[0] for p in gpu_places):
            return  # no CUDA place here: those cases are skipped with their own reason

        reporter = config.pluginmanager.get_plugin("terminalreporter")
        emit = reporter.write_line if reporter is not None else None
        telemetry.warn_once(emit=emit)
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
            tmp.write_text(json.dumps(doc, indent=1, default=str))
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
    config = {**case.config, "framework": "torch"}
    return dataclasses.replace(
        case, case_id=f"{case.case_id}-torch", config=config, config_hash=config_hash(config)
    )


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
        f"{'case':<58} {'place':<6} {'mode':<9} {'median':>10} {'IQR':>9} {'95% CI of median':>22} {'n':>5}  throughput"
    )
    skipped: dict[str, int] = {}
    for r in bench.results:
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
            f"{measure.format_time(s.get('iqr')):>9} {ci:>22} {s.get('rounds', 0):>5}  {thr}"
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
    if opt("bench_profile") or case.config.get("profile"):
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
    from benchmark import telemetry

    if not telemetry.nvml_status()[0]:
        return None
    index = telemetry.nvml_device_index(int(place.split(":")[1]) if ":" in place else 0)
    if index is None:
        return None
    return telemetry.NvmlSampler(device_index=index, interval=interval).start()


def run_case(case: Case, benchmark, bench: BenchSession) -> CaseResult:
    """Prepare, measure and record one case; skips and errors are recorded too, never as numbers."""
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
    if result.status == "skipped":
        pytest.skip(result.message)
    if result.status in ("error", "failed"):
        pytest.fail(f"{case.id}: {result.message}", pytrace=False)
    if result.warnings and bench.config.getoption("verbose") > 0:
        print("\n".join(f"warning: {w}" for w in result.warnings), file=sys.stderr)
    return result
