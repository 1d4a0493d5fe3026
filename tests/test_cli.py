"""The `benchmark` CLI as a whole: light to start, read-only readers, one error convention."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from benchmark import cli
from benchmark.store import open_store

# What `benchmark --help` must not load: the analysis stack, the store, plotting, the frameworks and
# the config machinery. Each command imports what it needs when it runs.
HEAVY = ("scipy", "numpy", "sqlalchemy", "alembic", "matplotlib", "paddle", "torch", "pydantic", "rich")


def benchmark_cli(*args, cwd, env=None):
    return subprocess.run(
        [sys.executable, "-m", "benchmark.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def _tree(path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_building_the_parser_and_every_help_imports_nothing_heavy(tmp_path):
    code = (
        "import sys, contextlib, io\n"
        "from benchmark import cli\n"
        "parser = cli.build_parser()\n"
        "sub = next(a for a in parser._actions if a.dest == 'command')\n"
        "for name in [None, *sub.choices]:\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        cli.main(([name] if name else []) + ['--help'])\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"imported at --help time: {proc.stdout.strip()}"


def test_no_paddle_warning_opens_the_output(tmp_path):
    proc = benchmark_cli("--help", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: benchmark")
    assert proc.stderr == ""


READERS = [
    ["runs"],
    ["history", "abs*"],
    ["export", "--format", "csv"],
    ["profile", "abs*"],
    ["gate"],
    ["report", "--format", "md"],
    ["plot", "--out", "plots"],
]


@pytest.mark.parametrize("argv", READERS, ids=lambda a: a[0])
def test_readers_in_an_empty_folder_create_nothing(tmp_path, argv):
    proc = benchmark_cli(*argv, cwd=tmp_path, env={"BENCHMARK_DB_URL": ""})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"benchmark {argv[0]}: error: no history at results/history.sqlite "
        "(run `pytest benchmark/` first, or give --db)"
    ]
    assert _tree(tmp_path) == []


@pytest.mark.parametrize("argv", READERS[:5], ids=lambda a: a[0])
def test_a_db_in_a_missing_directory_is_not_created(tmp_path, argv):
    proc = benchmark_cli(*argv, "--db", "nodir/x.sqlite", cwd=tmp_path)
    assert proc.returncode == 2
    assert "no history at nodir/x.sqlite" in proc.stderr
    assert _tree(tmp_path) == []


@pytest.fixture
def history(sqlite_url, machine, make_result):
    with open_store(sqlite_url) as store:
        run_id = store.begin_run(machine, {"started_at": time.time(), "hostname": "h", "pid": 1})
        store.add_result(run_id, make_result("op.abs[8]"))
        store.finish_run(run_id)
    return sqlite_url


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["history", "nothing*"], "no results match 'nothing*'"),
        (["plot", "nothing*", "--out", "plots"], "no series"),
        (["export", "--run", "99", "--format", "csv"], "there is no run 99"),
        (["profile", "abs*", "--run", "99"], "there is no run 99"),
        (["gate", "--run", "99"], "no run 99"),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else "",
)
def test_not_found_is_exit_2_with_one_line(history, tmp_path, argv, message):
    here = tmp_path / "elsewhere"
    here.mkdir()
    proc = benchmark_cli(*argv, "--db", history, cwd=here)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"benchmark {argv[0]}: ") and message in lines[0]
    assert _tree(here) == []


def test_a_plain_path_is_a_sqlite_history(history, tmp_path):
    path = history.removeprefix("sqlite:///")
    proc = benchmark_cli("history", "op.abs*", "--db", path, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "op.abs[8]" in proc.stdout


def test_every_command_module_is_registered_once():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    names = list(sub.choices)
    assert len(names) == len(set(names))
    assert {"validate", "list", "runs", "history", "gate", "report", "plot", "detect"} <= set(names)


def test_legacy_defaults_in_the_help_are_the_converters():
    from benchmark import legacy
    from benchmark.commands import legacy as legacy_command

    assert legacy_command.DEFAULT_BATCH_SIZE == legacy.DEFAULT_BATCH_SIZE
    assert legacy_command.DEFAULT_UNKNOWN_DIM == legacy.DEFAULT_UNKNOWN_DIM


def test_detect_json_still_works_without_the_store(tmp_path):
    (tmp_path / "s.csv").write_text("value\n" + "\n".join(["1.0"] * 10) + "\n")
    proc = benchmark_cli("detect", "s.csv", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"change_points": [], "alerts": []}
