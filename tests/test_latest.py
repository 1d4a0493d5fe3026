"""`--run latest` means the latest run of the suite: never a `benchmark compare` or `bisect` side,
nor an imported file (issue 31). Real SQLite, the real CLI."""

from __future__ import annotations

import json

import pytest
from suite_process import run_suite
from synthetic import result_from_processes

from benchmark.cli import main
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.store import open_store

PROCESSES = [[1.0e-4, 1.01e-4], [1.02e-4, 0.99e-4], [1.0e-4, 1.0e-4]]


def _history(url, machine, triggers: list[tuple[str, str | None]]) -> list[int]:
    """One run per (trigger, run group), oldest first, each with one ok result of `op.abs`."""
    ids = []
    with open_store(url) as store:
        for k, (trigger, group) in enumerate(triggers):
            fp = machine["fingerprint"] + ("/compare-A" if trigger == "compare" else "")
            run_id = store.begin_run(MachineDescription.of({**machine, "fingerprint": fp}),
                                     RunDescription.of({"started_at": 1.8e9 + 60 * k, "trigger": trigger, "run_group": group}))  # fmt: skip
            store.add_result(run_id, result_from_processes("op.abs", PROCESSES))
            store.finish_run(run_id)
            ids.append(run_id)
    return ids


def _gate(capsys, url, *args) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["gate", "--format", "json", "--all", "--db", url, *args])
    return code, json.loads(capsys.readouterr().out)


def test_gate_latest_after_a_compare_judges_the_last_suite_run(sqlite_url, machine, capsys):
    suite, _, compare_a, compare_b = _history(
        sqlite_url,
        machine,
        [("local", None), ("local", None), ("compare", "compare-x"), ("compare", "compare-x")],
    )
    code, out = _gate(capsys, sqlite_url, "--run", "latest")
    assert code == 0
    (decision,) = [d for d in out["decisions"] if d["case_id"] == "op.abs"]
    assert decision["baseline_run_id"] == suite  # the second suite run, judged against the first
    # the compare's runs are addressed by their group
    code, out = _gate(capsys, sqlite_url, "--run-group", "compare-x")
    assert code == 0 and {d["case_id"] for d in out["decisions"]} == {"op.abs"}


def test_latest_skips_imports_and_says_so_when_only_they_exist(sqlite_url, machine, capsys):
    (imported,) = _history(sqlite_url, machine, [("import", None)])
    capsys.readouterr()
    assert main(["gate", "--run", "latest", "--db", sqlite_url]) == 2
    err = capsys.readouterr().err
    assert "no suite run" in err and "--run ID" in err
    assert main(["gate", "--run", str(imported), "--db", sqlite_url]) == 0


@pytest.mark.slow
def test_a_partial_selection_says_so_when_it_is_gated(tmp_path, capsys):
    """A real `-k` run of the suite: the gate names its selection."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    run_suite("--bench-tags", "smoke", "--bench-quick", "--bench-place", "cpu", "-k", "abs_smoke and dynamic",
              "--bench-db", url, "--bench-json", str(tmp_path / "s.json"))  # fmt: skip
    capsys.readouterr()
    assert main(["gate", "--run", "latest", "--db", url]) == 0
    out = capsys.readouterr().out
    assert "run 1 measured a partial selection (-k 'abs_smoke and dynamic'): only its cases are judged" in out
