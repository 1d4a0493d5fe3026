"""One pytest item per expanded YAML case (see benchmark/plugin.py)."""

from benchmark.plugin import run_case


def test_case(bench_case, benchmark, bench_session):
    run_case(bench_case, benchmark, bench_session)
