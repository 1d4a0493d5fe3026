"""One pytest item per expanded YAML case (see benchmark/plugin.py), and with --bench-gate one gate
item per case, run after all cases were measured."""

from benchmark.plugin import run_case, run_gate


def test_case(bench_case, benchmark, bench_session):
    run_case(bench_case, benchmark, bench_session)


def test_gate(gate_case, bench_session):
    run_gate(gate_case, bench_session)
