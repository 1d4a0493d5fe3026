"""One pytest item per expanded YAML case (see benchmark/plugin/hooks.py), and with --bench-gate one
gate item per case, run after all cases were measured."""

from benchmark.plugin.running import check_case, report_case, run_case, run_gate


def test_case(bench_case, bench_session, request):
    if bench_session.disabled:  # --benchmark-disable: run once, untimed, nothing recorded
        check_case(bench_case, bench_session)
    elif bench_session.processes > 0:  # measured in worker processes before the items ran
        report_case(bench_case, bench_session)
    else:  # --bench-processes 0: measured here, through pytest-benchmark's fixture
        run_case(bench_case, lambda: request.getfixturevalue("benchmark"), bench_session)


def test_gate(gate_case, bench_session):
    run_gate(gate_case, bench_session)
