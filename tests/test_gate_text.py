"""`benchmark gate` text: what fails first and in full, the rest in short rows, the skipped ones last
and collapsed one line per reason (issue 31). Real SQLite, the real CLI."""

from __future__ import annotations

from synthetic import result_from_processes, result_from_samples

from benchmark.cli import main
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.store import open_store

STEADY = [[1.0e-4, 1.01e-4], [1.02e-4, 0.99e-4], [1.0e-4, 1.0e-4]]
SLOW = [[x * 3 for x in p] for p in STEADY]
NO_GPU = "place gpu: this paddle build has no CUDA (CPU-only build)"
LONG = "elementwise_mul-x_50x128x1000-y_1x128x1000-fwd"  # a real case id of the default suite


def test_regressions_first_skipped_last_and_collapsed(sqlite_url, machine, capsys):
    with open_store(sqlite_url) as store:
        for k in range(2):
            run_id = store.begin_run(
                MachineDescription.of(machine),
                RunDescription.of({"started_at": 1.8e9 + 60 * k, "trigger": "local"}),
            )
            for case in ("op.a", "op.b", LONG):
                slow = k == 1 and case == "op.b"
                store.add_result(run_id, result_from_processes(case, SLOW if slow else STEADY))
            for case in ("op.c", "op.d", "op.e"):
                store.add_result(
                    run_id, result_from_samples(case, [], place="gpu", status="skipped", message=NO_GPU)
                )
            store.finish_run(run_id)
    capsys.readouterr()
    # op.b's wall time on CPU regressed: shown first and in full, and it does not fail the gate
    # (configs/gates.yaml: CPU wall time fails only when a re-measurement reproduces it)
    assert main(["gate", "--run", "latest", "--all", "--db", sqlite_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "judged by: a young series' level 3"  # which rule judged the three cases
    assert lines[-2] == "intervals: 98% confidence"  # stated once, before the verdict
    rows = lines[2:-2]
    assert rows[0].startswith("REGRESSION   op.b [cpu dynamic] time")
    # the regression in full, wrapped under its verdict; then the others, one short row each
    rest = [row for row in rows[1:] if not row.startswith(" ")]
    assert all(row.startswith(" " * 13) for row in rows[1 : rows.index(rest[0])])
    assert rest[0].startswith("PASS") or rest[0].startswith("INCONCLUSIVE")
    assert "op.a [cpu dynamic]" in rest[0]
    # a long case id: the comparison goes on an indented second line, so no row passes 120 columns
    long_row = next(i for i, row in enumerate(rows) if LONG in row)
    assert rows[long_row + 1].startswith(" " * 13 + "A/B vs run")
    assert all(len(line) <= 120 for line in lines)
    assert rows[-1] == f"SKIPPED      3 series: {NO_GPU}"
    assert lines[-1] == "gate: PASS (0 failing case(s), 0 improvement(s), 1 regression(s) that do not block)"
    assert "does not block on cpu, where instructions, cycles block(s)" in " ".join(
        rows[: rows.index(rest[0])]
    )
