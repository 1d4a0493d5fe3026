"""The gate's adjustment by the reference probe (issue 29, part 1): a real SQLite history and
`benchmark gate --format json`, on synthetic worker-process values whose runs drift with the machine, the
probe timed beside them drifting alike.

What it must do: take the machine's drift out where the series' history shows it follows the
probe, and never take out a slowdown of the framework itself, which the probe does not call."""

from __future__ import annotations

import json

import numpy as np
import pytest
from synthetic import gate_rows, result_from_processes

from benchmark.analysis.adjust import MIN_RUNS, estimate
from benchmark.cli import main
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.store import open_store
from benchmark.units import format_value

MACHINE = {"hostname": "probe-host", "cpu_model": "test", "fingerprint": "probemachine0001"}
CASES = {"abs-fwd": 20e-6, "mul-fwd": 30e-6, "sum-fwd": 50e-6, "softmax-fwd": 80e-6}
PROBE_S = 0.02
DAY = 86400.0


def _record(url: str, r: int, rng, *, machine: float, framework: float = 1.0, only: str | None = None,
            cases: tuple[str, ...] = tuple(CASES)) -> int:  # fmt: skip
    """One run: every case and the probe slowed by `machine` (the machine's drift), the cases alone
    by `framework` (a slowdown of the framework's dispatch; of the case `only`, where given); 3
    processes a case, each with its probe."""
    with open_store(url) as st:
        run_id = st.begin_run(
            MachineDescription.of(MACHINE),
            RunDescription.of({"started_at": 1.7e9 + r * DAY, "git_commit": f"{r:02d}" + "cd" * 19}),
        )
        results = []
        for case, level in ((c, CASES[c]) for c in cases):
            drift = machine * np.exp(rng.normal(0.0, 0.004, 3))  # the machine, as each process saw it
            slowed = framework if only in (None, case) else 1.0
            procs = level * slowed * drift * np.exp(rng.normal(0.0, 0.005, 3))
            probes = PROBE_S * drift * np.exp(rng.normal(0.0, 0.003, 3))
            samples = [p * np.exp(rng.normal(0.0, 0.003, 20)) for p in procs]
            results.append(result_from_processes(case, samples, probes))
        st.add_results(run_id, results)
        st.finish_run(run_id)
    return run_id


def _gate(url: str, run_id: int, capsys, *flags: str) -> dict[str, dict]:
    main(["gate", "--db", url, "--run", str(run_id), "--format", "json", *flags])
    return {d["case_id"]: d for d in json.loads(capsys.readouterr().out)["decisions"]}


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


@pytest.fixture
def no_shift(tmp_path) -> list[str]:
    """`--gates` with the run's common shift off: the probe's adjustment alone. (On, a change of
    every case together is the common shift itself, in wall time, and is removed: on CPU the
    deterministic cost is what sees a slowdown of every op.)"""
    path = tmp_path / "gates.yaml"
    path.write_text("defaults: {common_shift: false}\n")
    return ["--gates", str(path)]


def _history(
    url: str, rng, runs: int = 14, sd: float = 0.03, cases: tuple[str, ...] = tuple(CASES)
) -> list[float]:
    drifts = np.exp(rng.normal(0.0, sd, runs))
    for r, m in enumerate(drifts):
        _record(url, r, rng, machine=float(m), cases=cases)
    return list(drifts)


def test_a_framework_slowdown_fails_the_gate_with_and_without_the_adjustment(url, capsys, no_shift):
    """A slowdown of every op (the dispatch: +15%) on a machine at its usual speed: the probe does
    not move, so the adjusted values keep the slowdown whole, and the raw ones too. The history
    detector raises a change on its second run (docs/detection.md), so the second slow run is gated."""
    rng = np.random.default_rng(3)
    _history(url, rng, sd=0.02)
    _record(url, 14, rng, machine=1.0, framework=1.15)
    run_id = _record(url, 15, rng, machine=1.0, framework=1.15)
    adjusted = _gate(url, run_id, capsys, *no_shift)
    raw = _gate(url, run_id, capsys, "--no-probe-adjust", *no_shift)
    # with the common shift on (the default), a slowdown of every case together is the run's
    # common shift in wall time, and is removed
    shifted = _gate(url, run_id, capsys)
    assert {c for c, d in shifted.items() if d["verdict"] == "regression"} == set(), shifted
    assert all("common shift (+1" in d["evidence"] for d in shifted.values())
    for case in CASES:
        assert adjusted[case]["verdict"] == "regression", adjusted[case]
        assert adjusted[case]["adjusted_value"] is not None, adjusted[case]["probe"]
        assert raw[case]["verdict"] == "regression", raw[case]
        assert raw[case]["adjusted_value"] is None
        assert adjusted[case]["effect"] == pytest.approx(0.15, abs=0.05)
    # the gate's text names the adjustment: in the regime line and on each failing row
    main(["gate", "--db", url, "--run", str(run_id), *no_shift])
    rows = gate_rows(capsys.readouterr().out)
    assert rows[1].endswith(f"on values adjusted by the machine probe: {len(CASES)}"), rows
    failing = [r for r in rows if r.startswith("REGRESSION")]
    assert len(failing) == len(CASES), rows
    assert all(
        "effect probe-adjusted +1" in r and "adjusted by the machine probe (beta" in r for r in failing
    )


def test_a_slow_machine_alone_fails_the_raw_gate_and_passes_the_adjusted_one(url, capsys, no_shift):
    """The same code on a machine 12% slower for two runs (the probe 12% slower too): the raw
    values move and fail; the adjusted ones do not (and, by default, the run's common shift
    removes the machine's 12% from the raw values as well)."""
    rng = np.random.default_rng(4)
    _history(url, rng, sd=0.01)
    _record(url, 14, rng, machine=1.12)
    run_id = _record(url, 15, rng, machine=1.12)
    raw = _gate(url, run_id, capsys, "--no-probe-adjust", *no_shift)
    adjusted = _gate(url, run_id, capsys, *no_shift)
    shifted = _gate(url, run_id, capsys, "--no-probe-adjust")
    assert {c for c, d in shifted.items() if d["verdict"] == "regression"} == set(), shifted
    assert {c for c, d in raw.items() if d["verdict"] == "regression"} == set(CASES), raw
    assert {c for c, d in adjusted.items() if d["verdict"] == "regression"} == set(), adjusted
    for d in adjusted.values():
        assert abs(d["effect"]) < 0.05 and d["value"] > d["adjusted_value"], d


def test_a_series_whose_values_do_not_follow_the_probe_is_judged_raw(url, capsys):
    """A probe that moves on its own (the cases do not follow it): held-out runs show no gain, so
    beta is 0 and the gate says why it did not adjust."""
    rng = np.random.default_rng(8)
    with open_store(url) as st:
        for r in range(12):
            run_id = st.begin_run(
                MachineDescription.of(MACHINE), RunDescription.of({"started_at": 1.7e9 + r * DAY})
            )
            probe = PROBE_S * np.exp(rng.normal(0.0, 0.05))
            level = 20e-6 * np.exp(rng.normal(0.0, 0.01))
            samples = [level * np.exp(rng.normal(0.0, 0.003, 20)) for _ in range(3)]
            st.add_results(run_id, [result_from_processes("abs-fwd", samples, [probe] * 3)])
            st.finish_run(run_id)
    d = _gate(url, run_id, capsys)["abs-fwd"]
    assert d["adjusted_value"] is None
    assert d["probe"].startswith("probe adjustment not used: held-out noise"), d["probe"]


def test_the_estimate_follows_the_drift_a_series_shares_with_the_probe():
    rng = np.random.default_rng(0)
    drift = rng.normal(0.0, 0.04, 20)
    probes = PROBE_S * np.exp(drift + rng.normal(0.0, 0.003, 20))
    half = 1e-3 * np.exp(0.5 * drift + rng.normal(0.0, 0.003, 20))  # follows half of the drift
    a = estimate(half, probes)
    assert a.used and a.beta == pytest.approx(0.5, abs=0.1)
    assert a.adjusted_noise < 0.5 * a.raw_noise
    # a level step in the series (a regression) does not bend beta: differences weigh it once
    stepped = half * np.where(np.arange(20) >= 10, 1.2, 1.0)
    assert estimate(stepped, probes).beta == pytest.approx(0.5, abs=0.1)
    # too short a history: not used, and said
    short = estimate(half[: MIN_RUNS - 1], probes[: MIN_RUNS - 1])
    assert not short.used and short.factor(0.03) == 1.0 and "it needs" in short.why
    # runs without a probe (an older history) do not count
    missing = estimate(half, [None] * 12 + list(probes[12:]))
    assert missing.runs == 8


def test_a_real_run_stores_the_probe_per_process_and_per_run_and_lists_it(tmp_path, capsys):
    """The suite's workers time the probe beside every trial: it reaches the history per process
    and per run, and `benchmark runs` shows it; --bench-no-probe leaves it out."""
    import subprocess
    import sys

    db = tmp_path / "h.sqlite"
    url = f"sqlite:///{db}"
    base = [sys.executable, "-m", "pytest", "benchmark/", "-q", "-p", "no:cacheprovider", "--bench-quick",
            "--bench-place", "cpu", "-k", "abs_smoke and dynamic", "--bench-db", url]  # fmt: skip
    for extra in ([], ["--bench-no-probe"]):
        done = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with open_store(url) as st:
        with_probe, without = sorted(st.runs(), key=lambda r: r.id)
        assert 0.001 < with_probe.probe_s < 1.0 and without.probe_s is None
        results = st.results(with_probe.id)
    probes = [p.probe_s for r in results for p in r.processes]
    assert probes and all(p is not None and 0.001 < p < 1.0 for p in probes)
    main(["runs", "--db", url])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-1] == "PROBE"
    assert lines[1].split()[-1] == "-" and lines[2].rstrip().endswith("ms")


def test_the_report_and_the_trend_plot_show_the_raw_value_with_the_adjusted_one_beside_it(
    url, capsys, tmp_path
):
    from benchmark.report import trend

    # two cases: too few for a run's common shift (which would take the machine's drift out
    # before the probe could), so the report shows what the probe did
    rng = np.random.default_rng(3)
    two = ("abs-fwd", "mul-fwd")
    _history(url, rng, sd=0.02, cases=two)
    _record(url, 14, rng, machine=1.0, framework=1.15, only="abs-fwd", cases=two)
    run_id = _record(url, 15, rng, machine=1.0, framework=1.15, only="abs-fwd", cases=two)
    decision = _gate(url, run_id, capsys)["abs-fwd"]
    main(["report", "--db", url, "--run", str(run_id), "--format", "md"])
    # the regressions table's row (the history table below has one too)
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| `abs-fwd`"))
    # the new median raw, its adjusted value beside it, the baseline marked adjusted
    cells = [c.strip() for c in row.split("|")]
    assert cells[4].endswith("(adjusted)"), row
    assert (
        cells[5] == f"{format_value(decision['value'])} (adjusted {format_value(decision['adjusted_value'])})"
    )
    with open_store(url) as store:
        (series,) = store.series(["abs-fwd"])
    ax = trend.trend_plot(series).axes[0]
    (adjusted,) = [line for line in ax.lines if line.get_gid() == "adjusted"]
    (median,) = [line for line in ax.lines if line.get_gid() == "median"]
    assert len(adjusted.get_ydata()) == len(median.get_ydata()) == 16
    # the machine's drift is out of the adjusted line: it moves less before the slowdown
    raw_before, adj_before = np.log(median.get_ydata()[:14]), np.log(adjusted.get_ydata()[:14])
    assert np.std(adj_before) < 0.5 * np.std(raw_before)


def test_a_run_on_a_machine_much_slower_than_usual_is_named_with_its_probe(url, capsys):
    """Two busy loops beside a run on a 2-core VM read 1.5-1.9x the usual probe (docs/measurement.md):
    the gate says so in one line, with the figures, and in --json; a run at the usual speed gets
    no such line."""
    rng = np.random.default_rng(5)
    for r in range(6):
        _record(url, r, rng, machine=1.0)
    usual = _record(url, 6, rng, machine=1.02)
    main(["gate", "--db", url, "--run", str(usual)])
    assert "machine:" not in capsys.readouterr().out
    slow = _record(url, 7, rng, machine=1.8)
    main(["gate", "--db", url, "--run", str(slow)])
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("machine:")]
    assert f"machine: run {slow} ran 1." in line and "slower (probe 3" in line and "usually 20." in line
    assert line.endswith("regressions may be the machine's") and len(line) <= 100
    ratio = float(line.split(" ran ")[1].split("x slower")[0])
    assert ratio == pytest.approx(1.8, rel=0.03)
    main(["gate", "--db", url, "--run", str(slow), "--format", "json"])
    speed = json.loads(capsys.readouterr().out)["machine"][str(slow)]
    assert speed["unusual"] and speed["runs"] == 7 and speed["ratio"] == pytest.approx(ratio, abs=0.006)
