"""`benchmark validate` and `benchmark list` as a user runs them: the shipped configs' validation
and `--help` in a process of their own, the rest through `benchmark.cli.main` in this process."""

from __future__ import annotations

import argparse
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.text import terminal_line

PROJECT = Path(__file__).resolve().parents[1]


def cli(*args, cwd=PROJECT):
    return subprocess.run(
        [sys.executable, "-m", "benchmark.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def cli_here(monkeypatch, capsys):
    """`benchmark ARGS` in this process, in the checkout: (exit status, stdout, stderr) as a
    CompletedProcess (the shipped configs' validation and --help run as processes)."""
    from benchmark.cli import main

    def run(*args: str) -> subprocess.CompletedProcess:
        monkeypatch.chdir(PROJECT)
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["benchmark", *args], code, out, err)

    return run


def test_validate_shipped_configs_exits_0():
    proc = cli("validate", "configs/")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok: ")
    assert "No ccache found" not in proc.stderr  # paddle was imported to resolve the names, quietly


def test_validate_reports_each_problem_and_exits_2(tmp_path, cli_here):
    (tmp_path / "a.yaml").write_text(
        "cases:\n  - {name: a, kind: op, op: paddle.nope, inputs: {x: {shape: [2]}}}\n"
    )
    (tmp_path / "b.yaml").write_text(
        "cases:\n  - {name: b, kind: op, op: paddle.abs, inputs: {x: {shape: [0]}}}\n"
    )
    (tmp_path / "c.yaml").write_text("cases: [\n")
    proc = cli_here("validate", str(tmp_path))
    assert proc.returncode == 2
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 3
    assert "a.yaml:2: case 'a': field 'op': 'paddle.nope' is not on the allowlist" in lines[0]
    assert "b.yaml:2: case 'b': field 'inputs.x.shape'" in lines[1]
    assert "c.yaml:2: YAML syntax error" in lines[2]
    assert "3 problem(s) found" in proc.stderr


def test_validate_without_paddle_resolution_still_checks_form(tmp_path, cli_here):
    (tmp_path / "a.yaml").write_text(
        "cases:\n  - {name: a, kind: op, op: paddle.__init__, inputs: {x: {shape: [2]}}}\n"
    )
    proc = cli_here("validate", "--no-resolve", str(tmp_path / "a.yaml"))
    assert proc.returncode == 2 and "no private, dunder or empty segment" in proc.stdout


def test_list_shows_ids_hashes_and_sources(cli_here):
    proc = cli_here("list", "--tag", "smoke")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines and all("smoke" in line for line in lines)
    assert any(line.startswith("abs_smoke-cpu-dynamic ") for line in lines)


def _subcommands(parser, prefix=()):
    """(argv prefix, parser) of every command and nested action (`db init` ...)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name), sub
                yield from _subcommands(sub, (*prefix, name))


def test_every_command_and_option_has_help(capsys):
    from benchmark.cli import build_parser, main

    commands = list(_subcommands(build_parser()))
    assert {("validate",), ("list",), ("db", "init")} <= {argv for argv, _ in commands}
    for argv, sub in commands:
        assert sub.description and sub.description.strip(), f"{' '.join(argv)} has no description"
        for action in sub._actions:
            if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                assert action.help and action.help.strip(), f"{' '.join(argv)} {action.dest} has no help"
        with pytest.raises(SystemExit) as info:
            main([*argv, "--help"])
        assert info.value.code == 0
        assert "usage: benchmark " + " ".join(argv) in capsys.readouterr().out


def test_the_benchmark_module_prints_its_help():
    proc = cli("--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: benchmark")
    assert "validate" in proc.stdout and "gate" in proc.stdout


def test_gate_settings_are_checked_by_the_gates_loader(tmp_path, cli_here):
    (tmp_path / "gates.yaml").write_text("defaults:\n  bogus: 1\n")
    proc = cli_here("validate", "--no-resolve", str(tmp_path / "gates.yaml"))
    assert proc.returncode == 2
    assert proc.stdout.splitlines() == [f"{tmp_path / 'gates.yaml'}: field 'defaults.bogus': unknown field"]
    proc = cli_here("validate", "--no-resolve", str(tmp_path))  # a directory's gates.yaml too
    assert proc.returncode == 2 and "unknown field" in proc.stdout
    proc = cli_here("validate", "--no-resolve", "configs/gates.yaml")
    assert proc.returncode == 0 and proc.stdout == "ok: gate settings configs/gates.yaml\n"


def test_a_problem_is_reported_at_the_line_and_field_path_of_the_bad_key_or_value(tmp_path, cli_here):
    (tmp_path / "cases.yaml").write_text(
        "cases:\n"
        "  - name: with_attr\n"  # 2
        "    kind: op\n"
        "    op: paddle.abs\n"
        "    inputs:\n"
        "      x: {shape: [16, 16]}\n"
        "    attrs:\n"  # 7: the block
        "      nosuch: 3\n"  # 8: the bad key
        "  - name: from_grid\n"  # 9
        "    kind: op\n"
        "    op: paddle.abs\n"
        "    inputs:\n"
        "      x: {shape: $shape}\n"  # 13: where the value is used
        "    grid:\n"
        "      shape:\n"
        "        - [16, 16]\n"
        "        - [-3, 4]\n"  # 17: the bad value
    )
    proc = cli_here("validate", str(tmp_path))
    assert proc.returncode == 2
    first, second = proc.stdout.strip().splitlines()
    assert "cases.yaml:8: case 'with_attr': field 'attrs.nosuch': " in first
    assert "unexpected keyword argument 'nosuch'" in first
    assert "cases.yaml:17: case 'from_grid': field 'grid.shape': " in second
    assert "(the grid value [-3, 4], used by inputs.x.shape)" in second


def test_a_value_json_cannot_hold_is_refused_in_one_line(tmp_path, cli_here):
    # the config is hashed and stored as JSON, which has no infinity: `.inf` would change on the way
    (tmp_path / "inf.yaml").write_text(
        "cases:\n  - {name: d, kind: op, op: paddle.dist, places: [cpu],\n"
        "     inputs: {x: {shape: [4]}, y: {shape: [4]}}, attrs: {p: .inf}}\n"
    )
    proc = cli_here("validate", str(tmp_path))
    assert proc.returncode == 2
    (line,) = proc.stdout.strip().splitlines()
    assert "field 'attrs'" in line and "p: inf is not a finite number" in line, line


def test_a_grid_value_of_a_type_the_signature_refuses_is_refused_at_that_value(tmp_path, cli_here):
    """`axis: $ax` with `ax: [-1, "last"]` used to pass and fail in the worker (issue 45): paddle's
    annotation says `int`, so the string is refused at its grid line, with the value and the type."""
    (tmp_path / "ax.yaml").write_text(
        "cases:\n"
        "  - name: softmax_ax\n"  # 2
        "    kind: op\n"
        "    op: paddle.nn.functional.softmax\n"
        "    inputs: {x: {shape: [8, 16]}}\n"
        "    attrs: {axis: $ax}\n"
        "    grid:\n"
        "      ax:\n"
        "        - -1\n"
        '        - "last"\n'  # 10: the bad value
        "    places: [cpu]\n"
    )
    proc = cli_here("validate", str(tmp_path))
    assert proc.returncode == 2
    (line,) = proc.stdout.splitlines()
    assert "ax.yaml:10: case 'softmax_ax': field 'grid.ax': " in line
    assert "argument 'axis' takes an integer (annotated `int` in the signature), not 'last' (str)" in line
    assert "(the grid value 'last', used by attrs.axis)" in line


def test_a_misspelt_field_gets_the_nearest_known_one(tmp_path, cli_here):
    (tmp_path / "typo.yaml").write_text(
        "cases:\n"
        "  - name: typo\n"
        "    kind: op\n"
        "    op: paddle.abs\n"
        "    inputs: {x: {shpe: [8]}}\n"  # 5
        "    atrs: {}\n"  # 6
        "    places: [cpu]\n"
    )
    proc = cli_here("validate", "--no-resolve", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stdout.splitlines() == [
        f"{tmp_path / 'typo.yaml'}:5: case 'typo': field 'inputs.x.shpe': unknown field; did you mean 'shape'?",
        f"{tmp_path / 'typo.yaml'}:6: case 'typo': field 'atrs': unknown field; did you mean 'attrs'?",
    ]


def test_a_long_refusal_is_wrapped_on_a_terminal_and_one_line_when_piped(tmp_path):
    """The allowlist refusal is ~400 characters: on a terminal (a real pseudo-terminal here) it is
    wrapped at 100 columns with its file:line prefix on the first line; piped it stays one line."""
    (tmp_path / "op.yaml").write_text(
        "cases:\n  - {name: bad_op, kind: op, op: paddle.nn.functional.softmaxx, inputs: {x: {shape: [8]}}}\n"
    )
    proc = cli("validate", "--no-resolve", "op.yaml", cwd=tmp_path)  # a short name, whatever tmp_path is
    (piped,) = proc.stdout.splitlines()
    assert len(piped) > 300 and "did you mean 'paddle.nn.functional.softmax'?" in piped
    controller, terminal = pty.openpty()
    with open(terminal, "w") as stream:
        shown = terminal_line(piped, stream)
    os.close(controller)
    lines = shown.splitlines()
    assert len(lines) > 3 and all(len(line) <= 100 for line in lines)
    assert lines[0].startswith("op.yaml:2: ")
    assert all(line.startswith("    ") for line in lines[1:])
    assert " ".join(line.strip() for line in lines) == piped
