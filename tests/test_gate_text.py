"""`benchmark gate` text: what fails first and in full, the rest in short rows, the skipped ones last
and collapsed one line per reason (issue 31). Real SQLite, the real CLI."""

from __future__ import annotations

from synthetic import result_from_processes, result_from_samples

from benchmark.cli import main
from benchmark.environment import MachineDescription, RunDescription
from benchmark.store import open_store

STEADY = [[1.0e-4, 1.01e-4], [1.02e-4, 0.99e-4], [1.0e-4, 1.0e-4]]
SLOW = [[x * 3 for x in p] for p in STEADY]
NO_GPU = "place gpu: this paddle build has no CUDA (CPU-only build)"


def test_regressions_first_skipped_last_and_collapsed(sqlite_url, machine, capsys):
    with open_store(sqlite_url) as store:
        for k in range(2):
            run_id = store.begin_run(
                MachineDescription.of(machine),
                RunDescription.of({"started_at": 1.8e9 + 60 * k, "trigger": "local"}),
            )
            for case in ("op.a", "op.b"):
                slow = k == 1 and case == "op.b"
                store.add_result(run_id, result_from_processes(case, SLOW if slow else STEADY))
            for case in ("op.c", "op.d", "op.e"):
                store.add_result(
                    run_id, result_from_samples(case, [], place="gpu", status="skipped", message=NO_GPU)
                )
            store.finish_run(run_id)
    capsys.readouterr()
    assert main(["gate", "--run", "latest", "--all", "--db", sqlite_url]) == 1
    lines = capsys.readouterr().out.splitlines()
    rows = lines[1:-1]
    assert rows[0].startswith("REGRESSION   op.b [cpu dynamic] time")
    assert rows[1].startswith("PASS") or rows[1].startswith("INCONCLUSIVE")
    assert "op.a [cpu dynamic]" in rows[1] and len(rows[1]) <= 120
    assert rows[-1] == f"SKIPPED      3 series: {NO_GPU}"
    assert lines[-1].startswith("gate: FAIL (1 failing case(s)")
