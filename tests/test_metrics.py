"""The metric registry (benchmark/datamodel/metrics.py): a metric is defined in one place.

The end-to-end test defines a new metric here, and only here (`peak_rss`: bytes, lower is better,
5% minimum effect, near-deterministic), stores results of it in a real SQLite history through the
store's write path, and runs the real judge, `benchmark gate`, the Markdown report, the dashboard
and the trend plot: the verdict, the unit and the label come out of that one definition.
"""

from __future__ import annotations

import json

import pytest
from synthetic import gate_rows, result_from_samples

from benchmark.cli import main
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.metrics import (
    BUILTIN,
    METRICS,
    TIME,
    Metric,
    MetricError,
    get_metric,
    register,
    unregister,
)
from benchmark.datamodel.result import CaseResult
from benchmark.gate.settings import GateError, load_gates
from benchmark.store import open_store

MACHINE = {"hostname": "metrics-host", "cpu_model": "test", "fingerprint": "metricsmachine01"}
DAY = 86400.0
PEAK_RSS = Metric(
    "peak_rss",
    "B",
    "peak resident memory",
    min_effect=0.05,
    noise="deterministic",
    noise_floor=0.002,
)
LEVEL = 120e6  # bytes


@pytest.fixture
def peak_rss():
    register(PEAK_RSS)
    yield PEAK_RSS
    unregister(PEAK_RSS.name)


def test_the_project_metrics_say_their_unit_direction_and_judge():
    time, rate, counts = get_metric(TIME), get_metric("throughput"), get_metric("instructions")
    assert (time.unit, time.label, time.higher_is_better, time.judge) == (
        "s",
        "time per iteration",
        False,
        "history",
    )
    assert (rate.series, rate.higher_is_better, rate.rate) == (TIME, True, True)
    assert (counts.judge, counts.min_effect, counts.noise_floor) == ("level", 0.01, 0.001)
    assert time.format(125.1e-6) == "125.1 µs" and rate.format(812.5) == "812.5 items/s"
    assert counts.cell(6372100.0) == "6,372,100" and get_metric(None) is time
    assert set(BUILTIN) == {"time", "throughput", "instructions", "cycles"}
    cycles = get_metric("cycles")
    assert (cycles.series, cycles.judge, cycles.min_effect, cycles.whole) == ("cycles", "level", 0.01, True)


def test_an_unknown_or_conflicting_metric_gets_a_clear_error():
    with pytest.raises(MetricError, match=r"unknown metric 'memory'; known: time, throughput, instructions"):
        get_metric("memory")
    with pytest.raises(MetricError, match="already registered with another definition"):
        register(Metric(TIME, "ms", "time"))
    with pytest.raises(MetricError, match="cannot be removed"):
        unregister("instructions")
    with pytest.raises(MetricError, match="letters, digits and _ only"):
        Metric("peak rss", "B", "x")
    with pytest.raises(MetricError, match="computed from another metric"):
        Metric("per_s", "1/s", "x", rate=True)
    with pytest.raises(MetricError, match="unknown metric 'nothing'"):
        register(Metric("view", "B", "x", of="nothing"))
    assert "view" not in METRICS


def _result(value: float, k: int) -> CaseResult:
    samples = [value * (1 + 1e-4 * (i - 2)) for i in range(5)]  # repeats to 0.04%
    return result_from_samples(
        "resnet18-infer", samples, name="resnet18", kind="model", mode="infer", config={"case": "resnet18"},
        config_hash="cfg-resnet18", metric="peak_rss", unit="B", started_at=1.7e9 + k * DAY,
    )  # fmt: skip


def _history(url: str, levels: list[float]) -> list[int]:
    runs = []
    with open_store(url) as store:
        for k, level in enumerate(levels):
            run_id = store.begin_run(
                MachineDescription.of(MACHINE),
                RunDescription.of({"started_at": 1.7e9 + k * DAY, "git_commit": f"{k:02d}" + "ab" * 19}),
            )
            store.add_results(run_id, [_result(level, k)])
            store.finish_run(run_id)
            runs.append(run_id)
    return runs


def test_a_metric_defined_in_one_place_is_stored_judged_and_reported(peak_rss, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    runs = _history(url, [LEVEL] * 4 + [LEVEL * 1.10])

    # the judge, through `benchmark gate` (text, then JSON)
    assert main(["gate", "--db", url, "--run", str(runs[-1]), "--gates", str(tmp_path / "none.yaml")]) == 1
    text = capsys.readouterr().out
    line = next(x for x in gate_rows(text) if "resnet18-infer" in x)
    assert line.startswith("REGRESSION") and "[cpu infer] peak_rss" in line, text
    assert "peak resident memory +10.00% against the level (minimum effect 5.0%" in line, line
    assert "peak_rss level: 4 run(s) from run" in line and "peak resident memory changed at this run" in line
    assert main(["gate", "--db", url, "--run", str(runs[-1]), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    (d,) = [x for x in doc["decisions"] if x["case_id"] == "resnet18-infer"]
    assert (d["metric"], d["unit"], d["evidence_kind"], d["min_effect"]) == (
        "peak_rss",
        "B",
        "deterministic",
        0.05,
    )
    assert d["value"] == pytest.approx(LEVEL * 1.10) and d["change_run_id"] == runs[-1]

    # the Markdown report: the regression, with the values in the metric's unit
    assert main(["report", "--format", "md", "--db", url, "--run", str(runs[-1])]) == 0
    md = capsys.readouterr().out
    assert "**Gate: FAIL** (1 regression(s)" in md
    assert "| `resnet18-infer` | cpu | infer | 1.2e+08 B | 1.32e+08 B | +10.0% (" in md, md

    # the dashboard: the judge's badge, the latest value in the metric's unit
    from benchmark.report import html as dashboard

    with open_store(url, create=False, readonly=True) as store:
        dash = dashboard.build_dashboard(
            store, tmp_path / "site", run_id=runs[-1], workers=1, progress=False, plots_enabled=False
        )
    assert [(en.series.metric, en.analysis.status) for en in dash.entries] == [("peak_rss", "regression")]
    assert '<td class="num">1.32e+08 B</td>' in dash.index.read_text(encoding="utf-8")

    # the trend plot: the metric's label and unit on the y axis, its name in the title
    from benchmark.report.trend import series_metric, trend_plot

    with open_store(url, create=False, readonly=True) as store:
        (series,) = store.series()
    assert series_metric(series) == "peak_rss"
    fig = trend_plot(series, metric=series_metric(series))
    assert fig.axes[0].get_ylabel() == "peak resident memory (M B)"
    assert "peak_rss" in fig.axes[0].get_title()


def test_gates_yaml_takes_a_section_and_overrides_for_a_registered_metric(peak_rss, tmp_path):
    p = tmp_path / "gates.yaml"
    p.write_text(
        "peak_rss: {min_effect: 0.2, noise_floor: 0.01}\n"
        "overrides:\n  - {match: 'lstm-*', metric: peak_rss, min_effect: 0.5}\n"
    )
    gates = load_gates(p)
    s = gates.for_case("resnet18-infer", "resnet18", "cpu", "peak_rss")
    assert (s.metric, s.min_effect, s.noise_floor, s.higher_is_better) == ("peak_rss", 0.2, 0.01, False)
    assert gates.for_case("lstm-train", "lstm", "cpu", "peak_rss").min_effect == 0.5
    assert gates.for_case("lstm-train", "lstm", "cpu").metric == TIME  # its time series is left alone
    defaults = load_gates(tmp_path / "none.yaml").for_case("resnet18-infer", series_metric="peak_rss")
    assert (defaults.min_effect, defaults.noise_floor) == (0.05, 0.002)

    p.write_text("throughput: {min_effect: 0.1}\n")  # a view of the time series has no section
    with pytest.raises(GateError, match="'throughput': unknown field"):
        load_gates(p)


def test_a_noise_floor_is_refused_for_a_wall_clock_metric(tmp_path):
    register(Metric("wall_rss", "B", "resident memory"))
    try:
        p = tmp_path / "gates.yaml"
        p.write_text("wall_rss: {noise_floor: 0.01}\n")
        with pytest.raises(GateError, match="wall_rss is not a deterministic metric"):
            load_gates(p)
    finally:
        unregister("wall_rss")


def test_a_stored_metric_this_checkout_does_not_define_is_a_clear_gate_error(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    register(PEAK_RSS)
    try:
        runs = _history(url, [LEVEL])
    finally:
        unregister(PEAK_RSS.name)
    assert main(["gate", "--db", url, "--run", str(runs[-1])]) == 2
    err = capsys.readouterr().err
    assert "resnet18-infer [cpu infer]: unknown metric 'peak_rss'" in err, err


def test_the_trend_plot_of_an_instruction_series_is_labelled_by_its_metric():
    import numpy as np

    from benchmark.datamodel.series import Series, SeriesKey
    from benchmark.report.trend import series_metric, trend_plot

    counts = Series(
        key=SeriesKey("abs-cpu", "h", "cpu", "dynamic", "instructions"), name="abs", machine="m", series_id=1,
        unit="instructions", run_ids=[1, 2], times=[1.0, 2.0], commits=["a", "b"],
        values=np.array([6.3721e6, 6.3722e6]), ci_low=np.array([6.37e6] * 2), ci_high=np.array([6.38e6] * 2),
    )  # fmt: skip
    assert series_metric(counts) == "instructions"
    fig = trend_plot(counts, metric=series_metric(counts))
    assert fig.axes[0].get_ylabel() == "instructions per iteration (M instructions)"
    assert "instructions" in fig.axes[0].get_title()


def test_a_wall_clock_metric_defined_here_goes_through_the_history_judge(tmp_path):
    """A noisy metric (its own stored series, in seconds, higher is better) is judged like time: the
    online detector over its history, in its direction, with its minimum effect."""
    import numpy as np

    from benchmark.analysis.processes import summarize_processes
    from benchmark.datamodel.result import process_entry
    from benchmark.gate.judge import evaluate

    metric = register(Metric("idle_s", "s", "idle time per step", higher_is_better=True, min_effect=0.1))
    rng = np.random.default_rng(7)

    def result(level: float) -> CaseResult:
        levels = level * np.exp(rng.normal(0.0, 0.01, 3))
        entries = [
            process_entry(k, 100 + k, k, "ok", list(lv * np.exp(rng.normal(0.0, 0.005, 10))), 10)
            for k, lv in enumerate(levels)
        ]
        pooled, stats = summarize_processes(entries)
        return CaseResult(
            case_id="op-idle", name="op", kind="op", place="cpu", mode="dynamic", config={}, config_hash="cfg",
            metric="idle_s", unit="s", samples=pooled, stats=stats, processes=entries,
        )  # fmt: skip

    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    try:
        with open_store(url) as store:
            runs = []
            for k in range(16):
                run_id = store.begin_run(
                    MachineDescription.of(MACHINE), RunDescription.of({"started_at": 1.7e9 + k * DAY})
                )
                store.add_results(run_id, [result(2e-3 * (0.7 if k >= 14 else 1.0))])  # 30% less idle
                store.finish_run(run_id)
                runs.append(run_id)
            gates = load_gates(tmp_path / "none.yaml")
            (steady,) = evaluate(store, runs[-3], gates)
            (dropped,) = evaluate(store, runs[-1], gates)
    finally:
        unregister(metric.name)
    assert (steady.metric, steady.verdict, steady.evidence_kind) == ("idle_s", "pass", "history")
    assert (dropped.verdict, dropped.unit, dropped.min_effect) == ("regression", "s", 0.1), dropped
    assert -0.32 < dropped.effect < -0.28 and dropped.change_run_id == runs[-2], dropped
    assert metric.format(dropped.value).endswith(" ms") and metric.format(1.4e-3) == "1.400 ms"
