"""The outputs of one real two-run history stay byte-identical.

`tests/data/golden/run1.json` and `run2.json` are `benchmark export --format json --pytest-benchmark`
of two real runs of `pytest benchmark/ --bench-tags smoke --bench-quick` (paddle on CPU) stored in
one SQLite history. The test imports both into a fresh SQLite file (`benchmark import --as-baseline`,
so the second run is judged against the first) and renders, through `benchmark`'s own entry point:
the exports (JSON, CSV, pytest-benchmark JSON), `benchmark gate` as text (`--all`) and `--format json`,
and `benchmark report --format md`. Each must equal its file in `tests/data/golden/` byte for byte.

Normalised, as inherently variable: the fresh history's path (a temporary directory) becomes `<DB>`
wherever an output names it, and the exports' `heartbeat_at` (the time of the import, when the run
was last written) becomes `<IMPORT TIME>`. The `--bench-json` summary is written only by a live run (from the
session's state, not from the history), so it is not part of this check. The JSON outputs' floats
that come out of numpy and scipy's statistics (an interval's ends, a p-value) may move in their
last digits between library builds, so in a JSON output the floats are compared to 1e-9 relative
and all else (keys, layout, strings, integers) byte for byte; the text outputs, whose numbers are
rounded, stay byte for byte.

After an intended change of an output, regenerate the expected files with
`python tests/test_golden_outputs.py` and review the diff.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
from pathlib import Path

import pytest

from benchmark import cli

GOLDEN = Path(__file__).parent / "data" / "golden"
RUNS = ("run1.json", "run2.json")
HEARTBEAT = re.compile(r'("heartbeat_at": )"[^"]*"')
FLOAT = re.compile(r"-?\d+(?:\.\d+(?:e[-+]?\d+)?|e[-+]?\d+)")  # a float as json.dumps writes it

# output file -> the `benchmark` arguments that render it (the history is added as --db)
RENDERINGS: dict[str, list[str]] = {
    "export_run2.json": ["export", "--run", "2", "--format", "json"],
    "export_run2.csv": ["export", "--run", "2", "--format", "csv"],
    "export_run1_pytest_benchmark.json": ["export", "--run", "1", "--format", "json", "--pytest-benchmark"],
    # run 2 by id: "latest" is the latest run of the suite, never an imported one
    "gate.txt": ["gate", "--all", "--run", "2"],
    "gate.json": ["gate", "--format", "json", "--run", "2"],
    "report.md": ["report", "--format", "md", "--run", "2"],
}


def _benchmark(*argv: str) -> tuple[int, str]:
    """`benchmark ARGV` in this process; its exit status and stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.main(list(argv))
    return status, out.getvalue()


def render_all(folder: Path) -> dict[str, str]:
    """Import the golden runs into a fresh SQLite history in `folder`; every rendering, normalised."""
    db = str(folder / "history.sqlite")
    status, _ = _benchmark("import", "--as-baseline", "--db", db, *(str(GOLDEN / r) for r in RUNS))
    assert status == 0
    rendered = {}
    for name, argv in RENDERINGS.items():
        status, text = _benchmark(*argv, "--db", db)
        assert status == 0, (name, status)
        rendered[name] = HEARTBEAT.sub(r'\1"<IMPORT TIME>"', text.replace(db, "<DB>"))
    return rendered


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, str]:
    saved = os.environ.pop("BENCHMARK_DB_URL", None)
    try:
        return render_all(tmp_path_factory.mktemp("golden"))
    finally:
        if saved is not None:
            os.environ["BENCHMARK_DB_URL"] = saved


@pytest.mark.parametrize("name", sorted(RENDERINGS))
def test_rendering_is_identical(rendered, name):
    expected = (GOLDEN / name).read_text(encoding="utf-8")
    if name.endswith(".json"):
        assert FLOAT.sub("F", rendered[name]) == FLOAT.sub("F", expected)
        got, want = ([float(x) for x in FLOAT.findall(text)] for text in (rendered[name], expected))
        assert got == pytest.approx(want, rel=1e-9, abs=1e-15)
    else:
        assert rendered[name] == expected


def test_the_golden_history_judges_run_2_against_run_1(rendered):
    # the check is only worth something if the renderings carry the two runs' numbers
    assert "run 2 vs history" in rendered["gate.txt"]
    assert "A/B vs run 1" in rendered["gate.txt"]
    assert "abs_smoke" in rendered["report.md"]


if __name__ == "__main__":  # regenerate the expected files
    os.environ.pop("BENCHMARK_DB_URL", None)
    with tempfile.TemporaryDirectory() as tmp:
        for file_name, text in render_all(Path(tmp)).items():
            (GOLDEN / file_name).write_text(text, encoding="utf-8")
            print(f"wrote {file_name}", file=sys.stderr)
