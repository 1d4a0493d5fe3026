"""`benchmark.units` and `benchmark.paths`: one way to write a duration, one answer to "where"."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from benchmark import paths, units


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (1.5, "1.500 s"),
        (1.2e-3, "1.200 ms"),
        (125.1e-6, "125.1 µs"),
        (5.526e-4, "552.6 µs"),
        (2.5e-7, "250.0 ns"),
        (5e-9, "5.000 ns"),
        (0.0, "0 s"),
        (None, "-"),
        (math.nan, "-"),
        (math.inf, "-"),
        (12_345.0, "12,345 s"),
        (-3.2e-6, "-3.200 µs"),
        (0.99996e-3, "1.000 ms"),  # rounds up into the next unit, never "1000 µs"
    ],
)
def test_format_seconds(seconds, text):
    assert units.format_seconds(seconds) == text


def test_other_units_keep_their_unit_at_the_same_precision():
    assert units.format_value(812.54, "MB/s") == "812.5 MB/s"
    assert units.format_value(2e-3, "s") == units.format_value(2e-3, None) == "2.000 ms"
    assert units.format_value(None, "MB/s") == "-"


def test_time_scale_fits_the_median():
    assert units.time_scale([1e-6, 5e-4, 6e-4]) == (1e6, "µs")
    assert units.time_scale([2e-3, 3e-3, math.nan, 0.0]) == (1e3, "ms")
    assert units.time_scale([]) == (1.0, "s")


def test_format_percent():
    assert units.format_percent(0.0321) == "+3.2%"
    assert units.format_percent(-0.5, signed=False) == "-50.0%"
    assert units.format_percent(math.nan) == "-"


def test_format_ratio_change():
    """A ratio as a change in percent; from 2x on as a factor; missing when not finite."""
    assert units.format_ratio_change(1.048) == "+4.8%"
    assert units.format_ratio_change(0.5) == "-50.0%"
    assert units.format_ratio_change(1.999) == "+99.9%"
    assert units.format_ratio_change(2.0) == "x2.0"
    assert units.format_ratio_change(12345.6) == "x12,345.6"
    assert [units.format_ratio_change(x) for x in (math.inf, math.nan, None)] == ["-"] * 3


def test_project_root_is_the_nearest_pyproject_or_git(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    assert paths.project_root(inner) == tmp_path.resolve()
    assert paths.history_path(tmp_path) == tmp_path.resolve() / "results" / "history.sqlite"
    assert paths.default_db_url(tmp_path) == f"sqlite:///{tmp_path.resolve()}/results/history.sqlite"


def test_db_url_takes_a_url_a_file_path_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(paths.DB_URL_ENV, raising=False)
    assert paths.db_url("postgresql://h/x") == "postgresql://h/x"
    monkeypatch.chdir(tmp_path)
    assert paths.db_url("h.sqlite") == f"sqlite:///{Path(os.getcwd()) / 'h.sqlite'}"
    monkeypatch.setenv(paths.DB_URL_ENV, "sqlite:///elsewhere.sqlite")
    assert paths.db_url(None) == "sqlite:///elsewhere.sqlite"


def test_the_shipped_configs_are_where_paths_says():
    assert paths.GATES_PATH.is_file() and paths.ALLOWLIST_PATH.is_file()


def _square(x: int) -> list[int]:
    return [x * x]


def test_parallel_map_keeps_order_in_processes_and_in_process():
    from benchmark.report.parallel import parallel_map

    items = list(range(20))
    expected = [[x * x] for x in items]
    assert parallel_map(_square, items, workers=2, progress=False) == expected
    assert parallel_map(_square, items, workers=1, progress=False, flatten=True) == [x * x for x in items]
    assert parallel_map(_square, items[:3], workers=4, progress=True) == expected[:3]  # few: in process


@pytest.mark.parametrize(
    ("seconds", "unit"), [(5e-9, "ns"), (3e-7, "ns"), (2e-6, "µs"), (999e-6, "µs"), (3e-3, "ms"), (2.5, "s")]
)
def test_time_scale_of_a_plot_axis(seconds, unit):
    """The unit of a plot's axis or a dashboard column fits the median of what it shows."""
    factor, got = units.time_scale([seconds * 0.9, seconds, seconds * 1.1])
    assert got == unit
    assert 0.1 <= seconds * factor < 1000
