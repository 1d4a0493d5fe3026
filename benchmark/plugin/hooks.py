"""The pytest plugin of the suite (entry point `paddle_benchmark`, group pytest11): its options
and hooks, nothing else. `pytest benchmark/` then collects `benchmark/test_cases.py::test_case[<case
id>]` once per expanded YAML case.

The plugin is loaded by every pytest session of this environment, but it acts only in a session
that collects the suite's file (benchmark/test_cases.py, named on the command line or under a
directory that is): elsewhere (`pytest tests/`) its options exist and its hooks do nothing; no
config is loaded, no store opened, nothing printed. The state of a run is a `BenchSession`
(benchmark/plugin/session.py); how cases are measured is benchmark/plugin/running.py; what
is printed is benchmark/plugin/terminal.py; pytest-benchmark's own options are honoured or refused
in benchmark/plugin/compat.py; the hooks other plugins may implement are in
benchmark/plugin/hookspecs.py. This module imports only the standard library and pytest, so the
sessions it stays out of do not pay for the suite's imports.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from benchmark import kinds
from benchmark.sandbox.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_CASES, DEFAULT_PROCESSES, QUICK_PROCESSES

if TYPE_CHECKING:
    from benchmark.plugin.session import BenchSession

SESSION_KEY = pytest.StashKey["BenchSession"]()
SUITE_FILE = Path(__file__).resolve().parent.parent / "test_cases.py"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from benchmark.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


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
        "--bench-pin",
        default="auto",
        metavar="auto|off|CORE",
        help="run each timing worker, and every thread it starts, on one core: 'auto' (default) the "
        "last core this process may use, when CPU cases run with 1 thread and 2 or more cores are "
        "allowed; 'off'; or a core number. A framework that hands work between its threads then "
        "does not wait for a wake-up on another core (docs/measurement.md)",
    )
    g.addoption(
        "--bench-no-malloc-control",
        action="store_true",
        default=False,
        help="do not raise glibc's mmap/trim thresholds (large CPU tensors then measure page faults)",
    )
    g.addoption(
        "--bench-no-probe",
        action="store_true",
        default=False,
        help="do not time the reference probe (a fixed numpy workload of about 20 ms, the machine's "
        "speed) before each worker's first trial and after each trial; the gate then judges this "
        "run's values raw",
    )
    g.addoption(
        "--bench-json",
        default=None,
        metavar="FILE",
        help="where to write the run's JSON summary (default: results/summary.json; with "
        "--bench-no-store results/no-store/summary.json)",
    )
    g.addoption(
        "--bench-db",
        default=None,
        metavar="URL",
        help="SQLAlchemy URL of the history (default: $BENCHMARK_DB_URL, else sqlite:///results/history.sqlite)",
    )
    g.addoption(
        "--bench-no-store",
        action="store_true",
        default=False,
        help="do not record results in the history; the JSON summary then goes to "
        "results/no-store/summary.json (unless --bench-json), leaving the stored run's "
        "results/summary.json as it was",
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
        help="also count instructions per iteration of every CPU case under valgrind's callgrind, after "
        "the timing, each case in a process forked from a worker that imported the framework (a "
        "deterministic metric, its own series, gated at 1%% by default); without "
        "valgrind the suite says so in one line and measures time only",
    )
    g.addoption(
        "--bench-instruction-jobs",
        type=int,
        default=None,
        metavar="N",
        help="with --bench-instructions: count up to N cases at once, each in its own callgrind worker "
        "(default: one per CPU, at most 4); a case counts the same whichever worker serves it",
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


def collects_suite(config: pytest.Config) -> bool:
    """Whether this session collects the suite's file: one of its arguments is the file or its
    directory (`pytest benchmark/`, `pytest /path/to/checkout/benchmark`: collected whatever
    --ignore says), or a directory above it that no --ignore cuts it from (`pytest .`), or with
    --pyargs the package `benchmark`."""
    base = Path(config.invocation_params.dir)
    ignored = any(
        path == SUITE_FILE or path in SUITE_FILE.parents
        for path in ((base / p).resolve() for p in config.getoption("ignore") or [])
    )
    for arg in config.args:
        target = arg.split("::")[0]
        if config.getoption("pyargs") and target in ("benchmark", "benchmark.test_cases"):
            return True
        path = (base / target).resolve()
        if path in (SUITE_FILE, SUITE_FILE.parent):
            return True
        if path in SUITE_FILE.parents and path.is_dir() and not ignored:
            return True
    return False


def bench_of(config: pytest.Config) -> BenchSession | None:
    """The run's BenchSession; None in a session that does not run the suite (or only collects)."""
    bench = config.stash.get(SESSION_KEY, None)
    if bench is None or config.getoption("collectonly"):
        return None
    return bench


@pytest.hookimpl(tryfirst=True)  # before pytest-benchmark's (trylast), which reads its options
def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "help", False) or not collects_suite(config):
        return
    from benchmark.plugin import compat
    from benchmark.plugin.session import BenchSession

    compat.check_options(config)
    compat.quiet_pytest_benchmark(config)
    session = BenchSession(config)
    config.stash[SESSION_KEY] = session
    for t in sorted({t for c in session.cases for t in c.tags}):
        config.addinivalue_line("markers", f"{t}: cases tagged '{t}' in their config")
    for kind in kinds.KINDS.values():
        config.addinivalue_line("markers", f"{kind.name}: {kind.description}")
    for m in ("cpu", "gpu", "gate"):
        config.addinivalue_line("markers", f"{m}: benchmark cases of kind/place '{m}'")


@pytest.hookimpl(wrapper=True)
def pytest_report_header(config: pytest.Config):
    """In a suite run, the header says what the suite will do instead of pytest-benchmark's
    defaults line (its calibration settings do not apply here)."""
    lines = yield
    bench = config.stash.get(SESSION_KEY, None)
    if bench is None:
        return lines
    from benchmark.plugin.terminal import header_line

    kept = [x for x in lines if not (isinstance(x, str) and x.startswith("benchmark:") and "(defaults:" in x)]
    return [header_line(bench), *kept]


def pytest_sessionstart(session: pytest.Session) -> None:
    bench = bench_of(session.config)
    if bench is not None:
        bench.session = session
        if bench.disabled:  # nothing is measured, stored or written
            return
        bench.check_json_path()
        bench.open_history()
        bench.check_telemetry(session.config)
        bench.start_instructions(session.config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    wanted = {"gate_case", "bench_case"} & set(metafunc.fixturenames)
    if not wanted:
        return
    bench = metafunc.config.stash.get(SESSION_KEY, None)
    if bench is None:
        raise pytest.UsageError(
            f"{SUITE_FILE.name} was collected without being named on the command line: run the suite "
            "as `pytest benchmark/` (or the path of that directory)"
        )
    if "gate_case" in wanted:
        params = [pytest.param(c, id=c.id, marks=[pytest.mark.gate]) for c in bench.cases]
        metafunc.parametrize("gate_case", params)
        return
    from benchmark.execution.measure import timer_for

    params = []
    for c in bench.cases:
        marks = [getattr(pytest.mark, m) for m in (c.kind, c.device, *c.tags)]
        marks.append(pytest.mark.benchmark(timer=timer_for(c.place), disable_gc=True, group=c.name))
        params.append(pytest.param(c, id=c.id, marks=marks))
    metafunc.parametrize("bench_case", params)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> list | None:
    """Without --bench-gate the gate items are not collected at all, so that pytest's count of
    collected items is the count of items that run."""
    if name != "test_gate" or collector.config.stash.get(SESSION_KEY, None) is None:
        return None
    if Path(collector.path).resolve() == SUITE_FILE and not collector.config.getoption("bench_gate"):
        return []
    return None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """Gate items run after every case was measured."""
    if config.stash.get(SESSION_KEY, None) is None:
        return
    gate_items = [i for i in items if i.get_closest_marker("gate")]
    if gate_items:
        items[:] = [i for i in items if not i.get_closest_marker("gate")] + gate_items


def pytest_collection_finish(session: pytest.Session) -> None:
    bench = bench_of(session.config)
    if bench is not None and not bench.disabled:
        bench.begin_run(session.items)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session):
    """Before the items run: measure the selected cases in worker processes (interleaved trials)."""
    bench = bench_of(session.config)
    if bench is not None and not session.testsfailed and bench.processes > 0 and not bench.disabled:
        from benchmark.plugin.running import measure_in_workers

        measure_in_workers(bench, session.items)
    return (yield)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    bench = bench_of(session.config)
    if bench is not None and not bench.disabled:
        if not bench.finish(int(exitstatus)) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        from benchmark.plugin.terminal import check_required_places

        check_required_places(session, bench)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    bench = config.stash.get(SESSION_KEY, None)
    if bench is not None:
        from benchmark.plugin.terminal import write_summary

        write_summary(terminalreporter, bench)


@pytest.fixture
def bench_session(request) -> BenchSession:
    """The run's BenchSession (the case and gate items of benchmark/test_cases.py)."""
    return request.config.stash[SESSION_KEY]
