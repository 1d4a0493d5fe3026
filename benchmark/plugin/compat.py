"""pytest-benchmark's own options in a suite run: honoured or refused, never silently ignored.

The suite measures its cases itself (worker processes, its own calibration and rounds) and keeps
its results in the JSON summary and the history, with one results table. So of pytest-benchmark's
options only `--benchmark-disable` (each case runs once, untimed, nothing recorded: a quick check
of the configs) and `--benchmark-enable` (which cancels it) are honoured; any other
`--benchmark-*` option stops the session with one line saying what to use instead. Standard
library and pytest only (this runs before the configs are loaded).
"""

from __future__ import annotations

import os
import shlex

import pytest

HONOURED = ("--benchmark-disable", "--benchmark-enable")
TIMING = (
    "--benchmark-min-time",
    "--benchmark-max-time",
    "--benchmark-min-rounds",
    "--benchmark-timer",
    "--benchmark-calibration-precision",
    "--benchmark-warmup",
    "--benchmark-warmup-iterations",
    "--benchmark-disable-gc",
    "--benchmark-cprofile",
    "--benchmark-cprofile-loops",
    "--benchmark-cprofile-top",
    "--benchmark-cprofile-dump",
)
OUTPUT = (
    "--benchmark-save",
    "--benchmark-autosave",
    "--benchmark-save-data",
    "--benchmark-json",
    "--benchmark-compare",
    "--benchmark-compare-fail",
    "--benchmark-storage",
    "--benchmark-netrc",
    "--benchmark-histogram",
    "--benchmark-csv",
)
SELECTION = ("--benchmark-skip", "--benchmark-only")
DISPLAY = (
    "--benchmark-columns",
    "--benchmark-sort",
    "--benchmark-group-by",
    "--benchmark-name",
    "--benchmark-time-unit",
    "--benchmark-verbose",
    "--benchmark-quiet",
)
INSTEAD = {
    TIMING: "the suite calibrates and times each case itself: --bench-quick, --bench-processes, "
    "--bench-profile, or `measure:` in a case's config",
    OUTPUT: "results go to --bench-json and the history (--bench-db); `benchmark export --format json "
    "--pytest-benchmark` writes pytest-benchmark's JSON, `benchmark gate` compares",
    SELECTION: "every item of the suite is a benchmark: select cases with --bench-tags, -k or -m",
    DISPLAY: "the suite prints one results table, its own summary",
}


def given_options(config: pytest.Config) -> list[str]:
    """The `--benchmark-*` options of this session as given: on the command line, in
    PYTEST_ADDOPTS and in the ini file's addopts (names only, in that order, once each)."""
    args = [*config.getini("addopts"), *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    args += list(config.invocation_params.args)
    names = [str(a).split("=", 1)[0] for a in args if str(a).startswith("--benchmark-")]
    return list(dict.fromkeys(names))


def check_options(config: pytest.Config) -> None:
    """Refuse, in one line, every pytest-benchmark option the suite does not honour."""
    refused: dict[str, list[str]] = {}
    for name in given_options(config):
        if name in HONOURED:
            continue
        instead = next(
            (text for names, text in INSTEAD.items() if name in names), "see --help's bench options"
        )
        refused.setdefault(instead, []).append(name)
    if refused:
        parts = [f"{', '.join(names)} ({instead})" for instead, names in refused.items()]
        raise pytest.UsageError(f"pytest-benchmark options not used by this suite: {'; '.join(parts)}")


def quiet_pytest_benchmark(config: pytest.Config) -> None:
    """Keep pytest-benchmark's own table out of a suite run (the in-process path, --bench-processes
    0, measures through its fixture): one results table. Before pytest-benchmark's configure."""
    config.option.benchmark_quiet = True


def disabled(config: pytest.Config) -> bool:
    """--benchmark-disable (and not --benchmark-enable): run each case once, untimed."""
    return bool(config.getoption("benchmark_disable", False)) and not config.getoption(
        "benchmark_enable", False
    )
