"""A hostile history: imported rows that tried to break the reports, the terminal and the CI log.

One real smoke run on SQLite, exported with `benchmark export --pytest-benchmark`, doctored and
imported back (issue 26): an unknown metric, a mathtext case id, control characters and workflow
commands in strings, JSON nested 200,000 deep and wrongly typed fields. Each is one line and exit 2
with nothing stored, or rendered escaped while every other row is still rendered. A failed
`benchmark import-legacy` leaves nothing behind.
"""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from suite_process import run_suite

from benchmark import cli
from benchmark.text import safe_line, safe_lines, safe_text

INJECTED = "evil\n::error title=x::pwned\x1b[2J\r##vso[task.setvariable variable=x]1"
BRANCH = "main\x1b]0;title\x07\n::warning::branch"
MATH = r"op.$\undefinedmacro{x}^$-fwd"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, dict]:
    """(a SQLite history of one real smoke run, that run exported in pytest-benchmark's schema)."""
    where = tmp_path_factory.mktemp("hostile")
    db = where / "history.sqlite"
    run_suite("--bench-tags", "smoke", "--bench-quick", "--bench-db", f"sqlite:///{db}",
              "--bench-json", str(where / "summary.json"))  # fmt: skip
    out = where / "export.json"
    assert (
        cli.main(["export", "--format", "json", "--pytest-benchmark", "--db", str(db), "--out", str(out)])
        == 0
    )
    return db, json.loads(out.read_text())


@pytest.fixture
def history(exported, tmp_path) -> Path:
    """A fresh copy of the smoke history."""
    db = tmp_path / "history.sqlite"
    shutil.copyfile(exported[0], db)
    return db


def doctored(exported, tmp_path: Path, name: str, change) -> Path:
    doc = copy.deepcopy(exported[1])
    change(doc)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


def rename_case(doc: dict, index: int, case_id: str) -> None:
    bench = doc["benchmarks"][index]
    bench["name"] = bench["fullname"] = case_id
    bench["extra_info"]["benchmark_case"]["case_id"] = case_id


def case_ids(exported) -> list[str]:
    return [b["fullname"] for b in exported[1]["benchmarks"]]


def runs_in(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM run").fetchone()[0]


def main(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_no_ci_command(text: str) -> None:
    """No control character but line breaks, and no line a CI system would obey."""
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
        assert "##vso[" not in line and "##[" not in line, line
        assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in line), repr(line)


# ------------------------------------------------------------------------------- an unknown metric


def poison_metric(db: Path, case_id: str, metric: str) -> int:
    """Give the stored series of `case_id` a metric this checkout does not define (what an import
    from another version, or a plugin no longer installed, leaves in a history)."""
    with sqlite3.connect(db) as conn:
        changed = conn.execute(
            'UPDATE series SET metric = ? WHERE case_pk IN (SELECT id FROM "case" WHERE case_id = ?)',
            (metric, case_id),
        ).rowcount
    assert changed >= 1
    return changed


@pytest.mark.slow
def test_an_unknown_metric_is_skipped_with_one_line_and_every_other_row_renders(
    exported, history, tmp_path, capsys
):
    poisoned, *others = sorted(set(case_ids(exported)))
    series = poison_metric(history, poisoned, "bogus\x1b[31m")
    for argv in (
        ["report", "--format", "md", "--jobs", "1"],
        ["report", "--format", "html", "--all-plots", "--out", str(tmp_path / "html"), "--jobs", "1"],
        ["plot", "--out", str(tmp_path / "plots"), "--plot-format", "png", "--jobs", "1"],
    ):
        code, out, err = main(capsys, *argv, "--db", str(history))
        assert code == 0, err
        skipped = [line for line in err.splitlines() if "unknown metric" in line]
        assert len(skipped) == series, err  # one line per series left out
        assert all(poisoned in line and "bogus\\x1b[31m" in line for line in skipped), skipped
        assert "\x1b" not in err
    index = (tmp_path / "html" / "index.html").read_text()
    assert all(case in index for case in others)
    assert poisoned not in index
    trends = {p.name.split(".")[0] for p in (tmp_path / "plots").glob("*.trend.png")}
    assert trends and not any(poisoned in name for name in trends)


def test_the_gate_still_refuses_a_run_with_an_unknown_metric(exported, history, capsys):
    poison_metric(history, case_ids(exported)[0], "bogus")
    code, out, err = main(capsys, "gate", "--db", str(history))
    assert code == 2 and len(err.splitlines()) == 1 and "unknown metric 'bogus'" in err


# ------------------------------------------------------------------------ a mathtext case id


def test_a_mathtext_case_id_is_plotted_as_plain_text(exported, history, tmp_path, capsys):
    path = doctored(exported, tmp_path, "math", lambda d: rename_case(d, 0, MATH))
    assert main(capsys, "import", str(path), "--db", str(history))[0] == 0
    code, out, err = main(capsys, "plot", MATH, "--out", str(tmp_path / "plots"), "--plot-format", "png,svg",
                          "--jobs", "1", "--db", str(history))  # fmt: skip
    assert code == 0, err
    assert out.startswith("1 plot(s), 2 file(s)")
    code, out, err = main(capsys, "report", "--format", "html", "--all-plots", "--out", str(tmp_path / "html"),
                          "--jobs", "1", "--db", str(history))  # fmt: skip
    assert code == 0, err
    assert "$\\undefinedmacro{x}^$" in (tmp_path / "html" / "index.html").read_text()


# ----------------------------------------------------------------- control characters and CI commands


def test_imported_control_characters_and_workflow_commands_stay_escaped_on_their_line(
    exported, history, tmp_path, capsys
):
    def hostile(doc: dict) -> None:
        rename_case(doc, 0, INJECTED)
        doc["commit_info"]["branch"] = BRANCH

    assert (
        main(capsys, "import", str(doctored(exported, tmp_path, "inject", hostile)), "--db", str(history))[0]
        == 0
    )
    escaped = safe_text(INJECTED)
    assert escaped == "evil\\n::error title=x::pwned\\x1b[2J\\r##vso[task.setvariable variable=x]1"
    outputs = {}
    for argv in (
        ["runs"],
        ["history", "evil"],
        ["gate", "--all", "--run", "2"],  # the imported run ("latest" is the latest suite run)
        ["report", "--format", "md", "--jobs", "1", "--run", "2"],
    ):
        code, out, err = main(capsys, *argv, "--db", str(history))
        assert code == 0, err
        assert_no_ci_command(out + err)
        outputs[argv[0]] = out
    assert "main\\x1b]0;title\\x07\\n::warning::branch"[:30] in outputs["runs"]
    # the Markdown and HTML reports escape them too
    code, out, err = main(capsys, "report", "--format", "html", "--all-plots", "--out", str(tmp_path / "html"),
                          "--jobs", "1", "--db", str(history))  # fmt: skip
    assert code == 0, err
    page = (tmp_path / "html" / "index.html").read_text()
    assert "\x1b" not in page and "evil\n::error title=x::pwned\\x1b[2J" in page
    # the case id is one cell of its row, the CI commands in it neutralised where they would count
    (row,) = [line for line in outputs["history"].splitlines() if line.lstrip().startswith("2 ")]
    assert "evil\\n::error title=x::pwned\\x1b[2J\\r\\x23#vso[" in row
    (decision,) = [line for line in outputs["gate"].splitlines() if "evil" in line]
    assert decision.startswith("NEW ") and "evil\\n::error" in decision


def test_safe_line_neutralises_what_a_ci_system_would_obey():
    assert safe_line("::error title=x::boom") == "\\x3a:error title=x::boom"
    assert safe_line("   ::set-output name=x::1") == "   \\x3a:set-output name=x::1"
    assert (
        safe_line("case ##vso[task.complete result=Failed]") == "case \\x23#vso[task.complete result=Failed]"
    )
    assert safe_line("##[error]x") == "\\x23#[error]x"
    assert safe_line("a\u202eb\x00c\x9bd") == "a\\u202eb\\x00c\\x9bd"
    assert safe_lines("one\n::two\n") == "one\n\\x3a:two\n"


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp"))))
def test_printable_text_passes_byte_for_byte(text):
    assert safe_text(text) == text
    if not text.lstrip().startswith("::") and "##" not in text:
        assert safe_line(text) == text


# ----------------------------------------------------------------------- deep JSON and wrong types


def deep(path: Path) -> None:
    path.write_text('{"benchmarks": ' + "[" * 200_000 + "]" * 200_000 + "}")


def case_field(key: str, value):
    return lambda d: d["benchmarks"][0]["extra_info"]["benchmark_case"].__setitem__(key, value)


HOSTILE_FILES = {
    "benchmark_case": (lambda d: d["benchmarks"][0]["extra_info"].__setitem__("benchmark_case", 5),
                       "extra_info.benchmark_case: expected an object, got a number"),
    "tags": (case_field("tags", 3), "extra_info.benchmark_case.tags: expected a list of strings, got a number"),
    "name": (case_field("name", ["x"]), "extra_info.benchmark_case.name: expected a string, got a list"),
    "metric": (case_field("metric", "bogus\x1b[31m"),
               "extra_info.benchmark_case.metric: expected one of time, instructions, cycles, got 'bogus\\x1b[31m'"),
    "nested": (lambda d: d["benchmarks"][0]["extra_info"].__setitem__("x", json.loads("[" * 100 + "]" * 100)),
               "nested more than 64 levels deep"),
}  # fmt: skip


@pytest.mark.parametrize("name", ["deep", *HOSTILE_FILES])
def test_a_hostile_file_is_one_line_exit_2_and_nothing_stored(exported, history, tmp_path, capsys, name):
    if name == "deep":
        path, expected = tmp_path / "deep.json", "not valid JSON: a value nested too deep"
        deep(path)
    else:
        change, expected = HOSTILE_FILES[name]
        path = doctored(exported, tmp_path, name, change)
    before = runs_in(history)
    code, out, err = main(capsys, "import", str(path), "--db", str(history))
    assert code == 2
    (line,) = err.splitlines()
    assert line.startswith(f"benchmark import: error: {path}: ") and expected in line, line
    assert "Traceback" not in err and "\x1b" not in err
    assert runs_in(history) == before


# -------------------------------------------------------------------------------- import-legacy


def test_a_failed_import_legacy_leaves_nothing_behind(tmp_path, capsys):
    config = [
        {"op": "abs", "param_info": {"x": {"type": "Variable", "dtype": "float32", "shape": "[16L, 16L]"}}}
    ]
    for name in ("a.json", "b.json"):  # the same case twice: the second file does not validate
        (tmp_path / name).write_text(json.dumps(config))
    out = tmp_path / "configs" / "imported"
    code, stdout, err = main(capsys, "import-legacy", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
                             "--out", str(out))  # fmt: skip
    assert code == 2
    assert f"invalid output: {out / 'b.yaml'}: case id" in err and f"also defined in {out / 'a.yaml'}" in err
    assert "not written: the output does not validate" in stdout
    assert not out.exists() and not (tmp_path / "configs").exists()
    out.mkdir(parents=True)
    (out / "kept.yaml").write_text("cases: []\n")
    assert (
        main(capsys, "import-legacy", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(out))[
            0
        ]
        == 2
    )
    assert sorted(p.name for p in out.iterdir()) == ["kept.yaml"]
    code, stdout, err = main(capsys, "import-legacy", str(tmp_path / "a.json"), "--out", str(out))
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["a.yaml", "kept.yaml"]
