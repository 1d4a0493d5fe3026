"""The `benchmark` CLI as a whole: light to start, read-only readers, one error convention."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from benchmark import cli
from benchmark.datamodel.environment import MachineDescription, RunDescription
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


def in_folder(monkeypatch, folder, *argv: str, capsys) -> tuple[int, str, str]:
    """`benchmark ARGV` run in `folder` (in this process: the same code path as the console script)."""
    monkeypatch.chdir(folder)
    monkeypatch.delenv("BENCHMARK_DB_URL", raising=False)
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("argv", READERS, ids=lambda a: a[0])
def test_readers_in_an_empty_folder_create_nothing(tmp_path, monkeypatch, capsys, argv):
    status, out, err = in_folder(monkeypatch, tmp_path, *argv, capsys=capsys)
    assert status == 2, out + err
    assert out == ""
    assert err.splitlines() == [
        f"benchmark {argv[0]}: error: no history at results/history.sqlite "
        "(run `pytest benchmark/` first, or give --db)"
    ]
    assert _tree(tmp_path) == []


@pytest.mark.parametrize("argv", READERS[:5], ids=lambda a: a[0])
def test_a_db_in_a_missing_directory_is_not_created(tmp_path, monkeypatch, capsys, argv):
    status, _, err = in_folder(monkeypatch, tmp_path, *argv, "--db", "nodir/x.sqlite", capsys=capsys)
    assert status == 2
    assert "no history at nodir/x.sqlite" in err
    assert _tree(tmp_path) == []


@pytest.fixture
def history(sqlite_url, machine, make_result):
    with open_store(sqlite_url) as store:
        run_id = store.begin_run(
            MachineDescription.of(machine),
            RunDescription.of({"started_at": time.time(), "hostname": "h", "pid": 1}),
        )
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
def test_not_found_is_exit_2_with_one_line(history, tmp_path, monkeypatch, capsys, argv, message):
    here = tmp_path / "elsewhere"
    here.mkdir()
    status, out, err = in_folder(monkeypatch, here, *argv, "--db", history, capsys=capsys)
    assert status == 2, out + err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"benchmark {argv[0]}: ") and message in lines[0]
    assert _tree(here) == []


def test_a_plain_path_is_a_sqlite_history(history, tmp_path, monkeypatch, capsys):
    path = history.removeprefix("sqlite:///")
    status, out, err = in_folder(monkeypatch, tmp_path, "history", "op.abs*", "--db", path, capsys=capsys)
    assert status == 0, err
    assert "op.abs[8]" in out


def test_each_command_lives_in_the_module_named_after_it():
    """A new module in benchmark/commands/ is a new command, and a command's module is found by its name."""
    import keyword

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    modules = cli.command_modules()
    assert {"validate", "list", "runs", "history", "gate", "report", "plot", "detect"} <= set(sub.choices)
    assert len(sub.choices) == len(modules)
    for name, command_parser in sub.choices.items():
        module = name.replace("-", "_") + ("_" if keyword.iskeyword(name) else "")
        assert f"benchmark.commands.{module}" in modules, name
        func = command_parser.get_default("func")  # `db` has actions, each with its own
        if func is not None:
            assert func.__module__ == f"benchmark.commands.{module}", name


def test_detect_reads_a_csv_in_the_working_directory(tmp_path, monkeypatch, capsys):
    (tmp_path / "s.csv").write_text("value\n" + "\n".join(["1.0"] * 10) + "\n")
    status, out, err = in_folder(monkeypatch, tmp_path, "detect", "s.csv", "--format", "json", capsys=capsys)
    assert status == 0, err
    assert json.loads(out) == {"change_points": [], "alerts": []}
    assert _tree(tmp_path) == ["s.csv"]
