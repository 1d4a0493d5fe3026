"""docs/cli.md is the parsers' own table, one option name means one thing, every --help reads well,
and each deprecated spelling still works with one line on stderr (issue 45)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from benchmark.cli import main
from benchmark.commands._common import default_min_effect, deprecated_actions
from benchmark.gate.settings import DEFAULT_GATES_PATH, load_gates

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("cli_doc", ROOT / "tools" / "cli_doc.py")
assert _spec and _spec.loader
cli_doc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cli_doc)

COMMANDS = cli_doc.commands()

# Options whose name is shared but whose meaning is not: none today. An entry needs a reason.
ALLOWED: dict[str, str] = {}


def test_docs_cli_md_is_generated_from_the_parsers():
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == cli_doc.render(), (
        "docs/cli.md is out of date: run python tools/cli_doc.py > docs/cli.md"
    )
    assert cli_doc.main(["--check"]) == 0


def test_the_doc_lists_every_command_and_the_plugin_options():
    text = cli_doc.render()
    for name in COMMANDS:
        assert f"### `benchmark {name}`" in text
    assert "| `--bench-tags TAGS` |" in text
    assert "| `gate` | `--json` | `--format json` |" in text


def _key(help_text: str | None) -> str:
    """The first words of a help, the meaning's name: after a leading 'with --X:' condition, up to
    the first punctuation, two words."""
    text = re.sub(r"^with [^:]*: ", "", help_text or "")
    return " ".join(re.split(r"[(:;,]", text)[0].split()[:2]).lower()


def _options() -> dict[str, list[tuple[str, str, bool, str]]]:
    found: dict[str, list[tuple[str, str, bool, str]]] = defaultdict(list)
    for name, parser in COMMANDS.items():
        for action in cli_doc.shown_actions(parser):
            for option in action.option_strings:
                found[option].append((name, action.dest, action.nargs == 0, _key(action.help)))
    return found


def test_no_option_name_means_two_things():
    for option, uses in _options().items():
        meanings = {use[1:] for use in uses}
        if option in ALLOWED:
            continue
        assert len(meanings) == 1, f"{option} means {len(meanings)} things: {uses}"


def test_a_plugin_option_is_its_command_option_with_the_bench_prefix():
    options = _options()
    shared = 0
    for names, kwargs in cli_doc.plugin_options():
        assert names[0].startswith("--bench-")
        plain = "--" + names[0].removeprefix("--bench-")
        if plain not in options:
            continue
        shared += 1
        dest = kwargs.get("dest") or plain[2:].replace("-", "_")
        flag = kwargs.get("action") in ("store_true", "store_false")
        _, cli_dest, cli_flag, _ = options[plain][0]
        assert (dest, flag) == (cli_dest, cli_flag), f"{names[0]} is not {plain}"
    assert shared >= 10  # --bench-tags, --bench-place, --bench-db, --bench-gates, ...


def _help(parser: argparse.ArgumentParser) -> str:
    return parser.format_help()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_fits_100_columns_and_reads_as_words(name, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the width is fixed, whatever the terminal
    text = _help(cli_doc.commands()[name])
    wide = [line for line in text.splitlines() if len(line) > 100]
    assert not wide, wide
    assert not re.search(r"``|:(func|class|mod|meth|attr|data):`", text), "reStructuredText markup"
    identifier = re.search(r"\b[A-Z][a-z]+[A-Z]\w*\.[a-z_]+\b|\bbenchmark\.[a-z_]+\.|\b\w+\(\)", text)
    assert identifier is None, f"a Python identifier in the help: {identifier.group()}"


def test_the_command_list_fits_100_columns_too(monkeypatch):
    from benchmark.cli import build_parser

    monkeypatch.setenv("COLUMNS", "200")
    assert max(len(line) for line in build_parser().format_help().splitlines()) <= 100


def test_the_checks_catch_what_they_look_for():
    assert _key("with --repo: the package index (default PyPI)") == _key("the package index where")
    assert re.search(r"\b[A-Z][a-z]+[A-Z]\w*\.[a-z_]+\b", "(MeasureSettings.per_process)")


# argv that parses for each command, and a value for each deprecated option that takes one
MINIMAL = {
    "bisect": [],
    "detect": ["s.csv"],
    "gate": [],
    "list": [],
    "night": [],
    "plot": ["--out", "p"],
    "pr-configs": ["--base", "a", "--head", "b", "--out", "o"],
    "profile": ["abs*"],
}
VALUES = {"--base": "py", "--tag": "smoke", "--format": "svg", "--max-bytes": "10", "--vs": "3"}


def _deprecated() -> list[tuple[str, argparse.Action]]:
    return [(name, action) for name, parser in COMMANDS.items() for action in deprecated_actions(parser)]


@pytest.mark.parametrize("name,action", _deprecated(), ids=lambda x: x if isinstance(x, str) else None)
def test_a_deprecated_spelling_says_so_and_does_what_the_new_one_does(name, action, capsys):
    old = action.option_strings[0]
    new = action.new.split()
    value = [] if action.nargs == 0 else [VALUES[old]]
    parser = cli_doc.commands()[name]
    before = parser.parse_args([*MINIMAL[name], old, *value])
    line = capsys.readouterr().err
    assert line == f"benchmark {name}: {old} is deprecated, use {action.new} (removed in the next release)\n"
    after = parser.parse_args([*MINIMAL[name], *new, *value])
    assert capsys.readouterr().err == ""
    assert before == after


def test_detect_json_and_format_json_print_the_same(tmp_path, capsys):
    csv = tmp_path / "s.csv"
    csv.write_text("value\n" + "".join(f"{1.0 if i < 12 else 1.3}\n" for i in range(24)), encoding="utf-8")
    assert main(["detect", str(csv), "--format", "json"]) == 0
    new = capsys.readouterr()
    assert main(["detect", str(csv), "--json"]) == 0
    old = capsys.readouterr()
    assert json.loads(old.out) == json.loads(new.out)
    assert "--json is deprecated, use --format json" in old.err and new.err == ""


def test_min_effect_defaults_to_the_gate_settings_default(tmp_path, capsys):
    value = load_gates(DEFAULT_GATES_PATH).spec.defaults.min_effect
    assert default_min_effect() == value
    csv = tmp_path / "s.csv"
    csv.write_text("value\n" + "1.0\n" * 10, encoding="utf-8")
    assert main(["detect", str(csv)]) == 0
    assert f"minimum effect {value:.1%}" in capsys.readouterr().out
    for name in ("gate", "compare", "report", "detect"):
        assert "--min-effect" in _help(COMMANDS[name])
        assert COMMANDS[name].parse_args([*MINIMAL.get(name, []), *_required(name)]).min_effect is None


def _required(name: str) -> list[str]:
    return ["--a", "x", "--b", "y"] if name == "compare" else []


def test_bisect_names_every_kind_of_build_when_none_is_given(capsys):
    assert main(["bisect"]) == 2
    err = capsys.readouterr().err
    assert "--package" in err and "--repo" in err and "--python" in err
