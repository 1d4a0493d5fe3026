"""The state of one suite run (`BenchSession`): the selected cases, the history store and its
run record, the JSON summary, and the records of every finished case.

Created in `pytest_configure` when the session collects the suite (benchmark/plugin/hooks.py):
configs are loaded and validated there (a bad file stops the session with one line per problem,
before anything runs), thread counts and the allocator are set before paddle is imported. Each
finished case is recorded at once (`record`): the history store first, then the JSON summary
(rewritten every few seconds and at the end), so a crash loses nothing that finished.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import time
from concurrent.futures import CancelledError, Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from benchmark import kinds, runners
from benchmark.config import load_paths
from benchmark.config.selection import as_torch_case, csv, select_cases, shard_cases
from benchmark.datamodel import environment
from benchmark.datamodel.case import Case
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.result import CaseResult, Stats, json_safe, timing_problem
from benchmark.execution import cores, measure
from benchmark.gate.judge import judge
from benchmark.gate.settings import DEFAULT_GATES_PATH, load_gates
from benchmark.instructions import callgrind as instructions
from benchmark.instructions.counting_pass import InstructionPass, default_jobs
from benchmark.paths import RUN_GROUP_ENV
from benchmark.plugin import compat
from benchmark.sandbox.limits import DEFAULT_PROCESSES, QUICK_PROCESSES
from benchmark.store import StoreError, open_store
from benchmark.store.core import HEARTBEAT_PERIOD_S
from benchmark.telemetry.devices import warn_once
from benchmark.text import safe_line

if TYPE_CHECKING:
    from benchmark.instructions.counting_pass import InstructionPass
    from benchmark.store import Store

JSON_REFRESH_S = 5.0


def project_root(config: pytest.Config) -> Path:
    """The checkout the suite runs from: the directory holding pyproject.toml and configs/."""
    here = Path(__file__).resolve().parent.parent
    if (here / "configs").is_dir():
        return here
    return Path(config.rootpath)


def _say(config: pytest.Config, text: str) -> None:
    """One `benchmark: ...` line on the terminal (stdout without pytest's reporter)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    (reporter.write_line if reporter is not None else print)(f"benchmark: {text}")


def default_json_path(root: Path, no_store: bool) -> Path:
    """Where the run's JSON summary goes without --bench-json: results/summary.json, the stored run's;
    with --bench-no-store results/no-store/summary.json, so a run kept out of the history leaves the
    last stored run's summary (and its workers.log) as they were."""
    return root / "results" / ("no-store" if no_store else "") / "summary.json"


class BenchSession:
    """One run of the suite: options, selected cases, history run, JSON summary, results."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.root = project_root(config)
        opt = config.getoption
        self.settings = measure.MeasureSettings.quick() if opt("bench_quick") else measure.MeasureSettings()
        if opt("bench_no_probe"):
            self.settings = dataclasses.replace(self.settings, probe=False)
        self.threads = measure.pin_threads(opt("bench_threads") or None)
        try:
            # Held until this process ends, so that another run on this machine takes another core.
            self.core_claim = cores.claim_for(opt("bench_pin"), opt("bench_threads"))
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None
        self.core = self.core_claim.core
        self.allocator = measure.control_allocator(not opt("bench_no_malloc_control"))
        self.framework = opt("bench_framework")
        self.results: list[CaseResult] = []
        self.json_path = Path(opt("bench_json") or default_json_path(self.root, opt("bench_no_store")))
        self.started = time.time()
        self.json_written = 0.0
        self.store: Store | None = None
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
        self.instructions: InstructionPass | None = None  # with --bench-instructions
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
        self.instruction_counts: dict[str, Future] = {}  # case id -> its count, started after the trials
        # --benchmark-disable: each case runs once, untimed, in this process; nothing is recorded.
        self.disabled = compat.disabled(config)
        self.checked = 0  # cases run once with --benchmark-disable
        if self.disabled:
            given = [o for o in ("bench_gate", "bench_instructions", "bench_require_place") if opt(o)]
            if given:
                names = ", ".join("--" + o.replace("_", "-") for o in given)
                raise pytest.UsageError(
                    f"--benchmark-disable times and records nothing: {names} cannot run with it"
                )
        self.cases = self._load_cases()

    # -- cases ---------------------------------------------------------------------------
    def _load_cases(self) -> list[Case]:

        opt = self.config.getoption
        paths = opt("bench_config") or [str(self.root / "configs")]
        cases, issues = load_paths(
            paths,
            checks=runners.config_checks(),
            max_bytes=opt("bench_max_bytes"),
            max_cases=opt("bench_max_cases"),
        )
        if issues:
            lines = "\n".join(safe_line(i) for i in issues)  # a file name may hold a newline or "::"
            raise pytest.UsageError(f"invalid benchmark config ({len(issues)} problem(s)):\n{lines}")
        selected = select_cases(
            cases, csv(opt("bench_place")), csv(opt("bench_tags")), csv(opt("bench_modes"))
        )
        shard = opt("bench_shard")
        if shard:
            try:
                selected = shard_cases(selected, shard)
            except ValueError as e:
                raise pytest.UsageError(str(e)) from None
        if self.framework == "torch":
            selected = [
                as_torch_case(c) for c in selected if kinds.get(c.kind).torch_cases and c.mode == "dynamic"
            ]
        return selected

    # -- history -------------------------------------------------------------------------
    def open_history(self) -> None:
        """Open the history before anything is measured: a bad URL stops the session here."""

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
        self.run_info["worker_core"] = self.core  # None: the system placed the workers
        if self.core_claim.note:
            self.run_info["worker_core_note"] = self.core_claim.note
            _say(self.config, self.core_claim.note)
        self.run_info["allocator"] = self.allocator
        self.run_info["settings"] = measure.asdict(self.settings)
        self.run_info["trials"] = (
            {"processes": self.processes, "seed": self.seed, "order": "randomized interleaved rounds"}
            if self.processes
            else {"processes": 0, "order": "in-process"}
        )
        self.run_info["metadata"] = self.plugin_metadata()
        # A run narrowed by -k or -m measured part of the suite: the gate says so when it judges it.
        narrowed = {k: v for k in ("keyword", "markexpr") if (v := self.config.getoption(k, default=""))}
        if narrowed:
            self.run_info["selection"] = narrowed
        if self.config.getoption("bench_no_store"):
            if self.config.getoption("bench_gate"):
                raise pytest.UsageError(
                    "--bench-gate judges runs from the history: it cannot run with --bench-no-store"
                )
            return

        try:
            self.store = open_store(self.config.getoption("bench_db"), project_root=self.root)
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
        self.expected = item_cases(items)
        counted = [c for c in self.expected if self.counts_instructions(c)]
        # a counted case stores its time, its instruction count and its estimated cycles
        self.run_info["expected_results"] = len(self.expected) + 2 * len(counted)
        self.run_info["expected_cases"] = [[c.case_id, c.place, c.mode] for c in self.expected]
        self.run_info["run_group"] = self.run_group
        if self.store is None:
            return

        self.run_info["heartbeat_s"] = HEARTBEAT_PERIOD_S
        try:
            self.run_id = self.store.begin_run(
                MachineDescription.of(self.machine), RunDescription.of(self.run_info)
            )
        except StoreError as e:
            raise pytest.UsageError(f"history store: {e}") from None
        self.store.start_heartbeat(self.run_id, HEARTBEAT_PERIOD_S)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            group = f", group {self.run_group}" if self.run_group else ""
            reporter.write_line(f"benchmark: history run {self.run_id}{group} ({self.store.display_url})")

    def plugin_metadata(self) -> dict[str, Any]:
        """What other plugins add to the run's `metadata` (hook `pytest_bench_update_run_metadata`,
        benchmark/plugin/hookspecs.py); stored with the run and in the JSON summary. It must be
        JSON: anything else stops the session with one line, before anything is measured."""
        metadata: dict[str, Any] = {}
        self.config.hook.pytest_bench_update_run_metadata(config=self.config, metadata=metadata)
        try:
            json.dumps(metadata, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise pytest.UsageError(
                f"pytest_bench_update_run_metadata: the metadata is not JSON ({e})"
            ) from None
        return metadata

    def gate_decision(self, case: Case, metric: str = "time"):
        """The judge's decision (benchmark.gate.judge, as `benchmark gate` and the reports decide)
        for `case` (its time series, or its "instructions" series) in this run (all cases are judged
        together, once)."""
        if self.store is None or self.run_id is None:
            return None
        if self.decisions is None:
            self.decisions = {d.key: d for d in judge(self.store, self.run_id, self.gates()).decisions}
        return self.decisions.get((case.case_id, case.place, case.mode, metric))

    def gates(self):
        """The gate settings (--bench-gates, default configs/gates.yaml)."""
        return load_gates(self.config.getoption("bench_gates") or DEFAULT_GATES_PATH)

    def start_instructions(self, config: pytest.Config) -> None:
        """--bench-instructions: find valgrind and build the callgrind hook, or say in one line why
        instruction counts are not measured (the suite goes on with time only)."""
        if not config.getoption("bench_instructions"):
            return

        if not any(instructions.eligible(c) for c in self.cases):
            return
        try:
            tooling = instructions.find_tooling()
        except instructions.InstructionsUnavailable as e:
            _say(config, str(e))
            self.run_info["instructions"] = {"measured": False, "reason": str(e)}
            return

        jobs = config.getoption("bench_instruction_jobs") or default_jobs()
        self.instructions = InstructionPass(
            tooling, allocator_control=not config.getoption("bench_no_malloc_control"), jobs=jobs
        )
        self.run_info["instructions"] = {"measured": True, "valgrind": tooling.version, "jobs": jobs}
        notice = instructions.pythonpath_notice()
        if notice:
            _say(config, notice)
            self.run_info["instructions"]["pythonpath"] = True

    def start_instruction_counts(self, cases: list[Case]) -> int:
        """After every timing trial (counting beside a timing would disturb it): count the
        instructions of the timed CPU cases in the background, up to the pass's `jobs` at once;
        each item then waits for its own count. Returns how many cases are being counted."""
        if self.instructions is None:
            return 0
        todo = []
        for case in cases:
            timed = self.worker_results.get(case.id)
            if self.counts_instructions(case) and timed is not None and timed.status in ("ok", "failed"):
                todo.append(case)
        self.instruction_counts.update(self.instructions.start(todo))
        return len(todo)

    def counts_instructions(self, case: Case) -> bool:

        return self.instructions is not None and instructions.eligible(case)

    def record_instructions(self, case: Case, timed: CaseResult) -> None:
        """After the case's timing (never during it): its instruction count, as a result of its own."""
        counter = self.instructions
        if counter is None or not self.counts_instructions(case):
            return

        future = self.instruction_counts.pop(case.id, None)
        if future is not None:  # counted in the background since the trials ended
            try:
                result = future.result()
            except CancelledError:
                result = instructions.instruction_result_base(case)
                result.status, result.message = "error", "not counted: the session was stopped"
                result.finished_at = time.time()
        elif timed.status in ("ok", "failed"):
            result = counter.measure(case)
        else:
            result = instructions.instruction_result_base(case)
            result.status = "skipped"
            result.message = f"not counted: the case was {timed.status} when timed"
            result.finished_at = time.time()
        self.record(result)
        cycles = instructions.cycles_result(result)
        if cycles is not None:  # the same chunks' estimated cycles: a series of its own
            self.record(cycles)
        if result.status == "error":  # the time result is recorded; the item fails with the reason
            pytest.fail(f"{case.id}: instruction count: {result.message}", pytrace=False)

    def check_telemetry(self, config: pytest.Config) -> None:
        """Say once, in one line, when CUDA cases will run without GPU telemetry."""

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

        problem = timing_problem(result)
        if problem:  # NaN, inf or non-positive timings are an error of the case, never numbers
            result.status, result.message = "error", f"invalid timing samples: {problem}"
            result.samples, result.device_samples, result.stats = [], None, Stats()
        self.results.append(result)
        # The history first, at once; side outputs after it, and never able to lose it. The JSON
        # summary (all results, rewritten whole) is refreshed every few seconds and at the end.
        self.store_result(result)
        if time.time() - self.json_written >= JSON_REFRESH_S:
            self.write_json()

    def store_result(self, result: CaseResult) -> None:
        if self.store is None or self.run_id is None or self.store_error is not None:
            return

        try:
            self.store.add_result(self.run_id, result)
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


def item_cases(items: list) -> list[Case]:
    """The cases of the suite's case items among `items` (gate items and other tests left out)."""
    return [i.callspec.params["bench_case"] for i in items if _bench_case_item(i)]


def _bench_case_item(item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and isinstance(callspec.params.get("bench_case"), Case)


def _os_error(e: OSError) -> str:
    return f"{e.strerror} ({e.filename})" if e.strerror and e.filename else " ".join(str(e).split())
