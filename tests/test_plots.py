"""Plots: files are written, and the figures hold what a reader needs (checked on the Figure objects).

The history is real: results written through the store API into a temporary SQLite file, read back
with `Store.series`, analysed with the real change-point and online-gate code.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from synthetic import result_from_samples

from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.datamodel.result import CaseResult
from benchmark.datamodel.series import Series, SeriesKey
from benchmark.datamodel.verdict import Verdict, verdict_words
from benchmark.report import jobs, plots, trend
from benchmark.report.run_rows import Row, analyse
from benchmark.store import open_store

DAY = 86400.0
MACHINE = {"hostname": "plot-host", "cpu_model": "test", "fingerprint": "plotmachine0001"}
RUNS, STEP_AT, ROUNDS = 30, 18, 8


def _result(case_id: str, place: str, level: float, rng, **extra) -> CaseResult:
    samples = level * np.exp(rng.normal(0, 0.01, ROUNDS))
    return result_from_samples(case_id, samples, place=place, config_hash=f"cfg-{case_id}-{place}", **extra)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """3 series x 30 runs: a flat one (300 us), one with a +20% step at run 18 (2 ms), a throughput one."""
    path = tmp_path_factory.mktemp("plots") / "history.sqlite"
    st = open_store(f"sqlite:///{path}")
    rng = np.random.default_rng(7)
    for r in range(RUNS):
        run_id = st.begin_run(
            MachineDescription.of(MACHINE),
            RunDescription.of({"started_at": 1.70e9 + r * DAY, "git_commit": f"{r:04x}c0ffee{r:04x}"}),
        )
        noise = math.exp(rng.normal(0, 0.005))
        step = 1.2 if r >= STEP_AT else 1.0
        st.add_results(
            run_id,
            [
                _result("ops.flat[n=1]", "cpu", 300e-6 * noise, rng),
                _result("ops.step[n=2]", "gpu:0", 2e-3 * noise * step, rng),
                _result(
                    "models.resnet[bs=32]",
                    "cpu",
                    50e-3 * noise,
                    rng,
                    throughput=32 / (50e-3 * noise),
                    throughput_unit="samples/s",
                    batch_size=32,
                ),
            ],
        )
        st.finish_run(run_id)
    yield st
    st.close()


def _series(store, pattern):
    (s,) = store.series([pattern])
    return s


def _by_gid(fig, gid):
    ax = fig.axes[0]
    return [a for a in [*ax.lines, *ax.collections, *ax.texts] if a.get_gid() == gid]


# ----------------------------------------------------------------------------------------------- units


def test_rate_units():
    assert plots.rate_scale([1.5e6])[1] == "M samples/s"
    assert plots.rate_scale([640.0])[1] == "samples/s"


# ----------------------------------------------------------------------------------------------- trend


def test_trend_plot_shows_medians_samples_and_units(store):
    s = _series(store, "ops.flat")
    fig = trend.trend_plot(s)
    ax = fig.axes[0]
    assert "ops.flat[n=1]" in ax.get_title() and "cpu" in ax.get_title()
    (median,) = _by_gid(fig, "median")
    assert len(median.get_xdata()) == RUNS
    (samples,) = _by_gid(fig, "samples")
    assert len(samples.get_offsets()) == RUNS * ROUNDS
    assert _by_gid(fig, "ci-band")
    assert "µs" in ax.get_ylabel() and "time" in ax.get_ylabel()
    assert 250 < np.median(median.get_ydata()) < 350  # 300 us shown as ~300 on a µs axis
    assert "run" in ax.get_xlabel()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0].startswith("0000c0f\n2023-11-14")  # short commit hash, then the date
    assert not _by_gid(fig, "change-point")


def test_trend_plot_marks_the_change_point_and_the_alert(store):
    s = _series(store, "ops.step")
    analysis = analyse(s)
    assert [cp.index for cp in analysis.change_points] == [STEP_AT]
    fig = trend.trend_plot(s, analysis)
    (cp_line,) = _by_gid(fig, "change-point")
    assert cp_line.get_xdata()[0] == pytest.approx(STEP_AT - 0.5)
    (label,) = _by_gid(fig, "change-point-label")
    assert float(label.get_text().rstrip("%")) == pytest.approx(20, abs=3)  # "+19.5%"
    alerts = _by_gid(fig, "alert")
    assert alerts and all(a.get_offsets()[0][0] >= STEP_AT for a in alerts)
    assert "ms" in fig.axes[0].get_ylabel()
    assert "gpu:0" in fig.axes[0].get_title()


def _long_series(n: int = 200, step_at: int = 197) -> Series:
    """A plain 200-run series (numbers only) with a +20% step in its last 3 runs."""
    rng = np.random.default_rng(1)
    level = 1e-3 * np.where(np.arange(n) >= step_at, 1.2, 1.0) * np.exp(rng.normal(0, 0.005, n))
    samples = [m * np.exp(rng.normal(0, 0.01, ROUNDS)) for m in level]
    return Series(
        key=SeriesKey("ops.long[n=200]", "h", "cpu", "static"),
        name="ops.long",
        machine="m" * 16,
        series_id=1,
        run_ids=list(range(1, n + 1)),
        times=[1.7e9 + i * DAY for i in range(n)],
        commits=[f"{i:040x}" for i in range(n)],
        values=np.array([np.median(x) for x in samples]),
        ci_low=np.array([x.min() for x in samples]),
        ci_high=np.array([x.max() for x in samples]),
        samples=samples,
    )


def test_long_history_gets_a_zoom_on_the_latest_runs_and_no_overlapping_text():
    fig = trend.trend_plot(_long_series())
    assert len(fig.axes) == 2
    main, zoom = fig.axes
    assert len(_by_gid(fig, "median")[0].get_xdata()) == 200
    (zoom_median,) = [ln for ln in zoom.lines if ln.get_gid() == "median"]
    assert list(zoom_median.get_xdata()) == list(range(200 - trend.ZOOM_RUNS, 200))
    assert any(ln.get_gid() == "change-point" for ln in zoom.lines)
    assert f"last {trend.ZOOM_RUNS} runs" in zoom.get_title()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
        assert boxes and _overlaps(boxes) == 0
        assert all(fig.bbox.x0 <= b.x0 and b.x1 <= fig.bbox.x1 for b in boxes)  # nothing cut at the edges
    for label in [
        *_by_gid(fig, "change-point-label"),
        *(t for t in zoom.texts if t.get_gid() == "change-point-label"),
    ]:
        box = label.get_window_extent(renderer)
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1


def test_throughput_trend_uses_samples_per_second(store):
    s = _series(store, "models.resnet")
    fig = trend.trend_plot(s, metric="throughput")
    assert "samples/s" in fig.axes[0].get_ylabel()
    (median,) = _by_gid(fig, "median")
    assert np.median(median.get_ydata()) == pytest.approx(640, rel=0.05)


def test_save_writes_png_and_svg(store, tmp_path):
    fig = trend.trend_plot(_series(store, "ops.step"))
    paths = plots.save(fig, tmp_path / "sub" / "trend")
    assert [p.name for p in paths] == ["trend.png", "trend.svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and paths[0].stat().st_size > 10_000
    svg = paths[1].read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg


# ------------------------------------------------------------------------------------------------- A/B


def _ab_rows(n: int) -> list[Row]:
    rng = np.random.default_rng(3)
    verdicts = (Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.PASS, Verdict.INCONCLUSIVE)
    rows = []
    for i in range(n):
        r = float(np.exp(rng.normal(0, 0.06)))
        half = 0.004 + abs(rng.normal(0, 0.01))
        long = "x" * (i % 60)
        rows.append(
            Row(
                case_id=f"ops.conv2d[{long}batch={i},dtype=float16]" if i % 5 == 0 else f"ops.add[n={i}]",
                name="x",
                place="gpu:0" if i % 2 else "cpu",
                mode="dynamic",
                config_hash="h",
                verdict=verdicts[i % 4],
                ratio=r,
                ci_low=r - half,
                ci_high=r + half,
            )
        )
    return rows


def _overlaps(boxes) -> int:
    return sum(1 for a, b in zip(boxes, boxes[1:], strict=False) if a.overlaps(b))


def test_ab_chart_at_120_cases_has_no_overlapping_labels():
    rows = _ab_rows(120)
    fig = plots.ab_chart(rows, title="Run 7 against run 6")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = ax.get_yticklabels()
    assert len(labels) == 120
    boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.y0)
    assert _overlaps(boxes) == 0
    fig_box = fig.bbox
    assert all(b.x0 >= 0 and b.x1 <= fig_box.x1 and b.y0 >= 0 and b.y1 <= fig_box.y1 for b in boxes)
    # the title, the legend and the axis labels do not collide with each other either
    others = [ax.title, ax.xaxis.label, fig.legends[0]]
    extents = [o.get_window_extent(renderer) for o in others]
    assert not any(a.overlaps(b) for i, a in enumerate(extents) for b in extents[i + 1 :])
    assert "Run 7" in ax.get_title()


def test_ab_chart_is_sorted_and_colored_by_verdict():
    rows = _ab_rows(12)
    fig = plots.ab_chart(rows)
    ax = fig.axes[0]
    points = {}
    for verdict in plots.VERDICT_COLORS:
        lines = [ln for ln in ax.lines if ln.get_gid() == f"verdict-{verdict_words(verdict).ab}"]
        assert len(lines) == 1, verdict
        points[verdict] = (lines[0].get_xdata(), lines[0].get_ydata(), lines[0].get_color())
        assert lines[0].get_color() == plots.VERDICT_COLORS[verdict]
    xs_by_y = sorted((y, x) for xs, ys, _ in points.values() for x, y in zip(xs, ys, strict=True))
    xs = [x for _, x in xs_by_y]
    assert xs == sorted(xs)  # sorted by change, slowest on top
    assert "%" in ax.get_xlabel() or "change" in ax.get_xlabel()
    assert any(p.get_gid() == "equivalence" for p in ax.patches)


def test_ab_chart_grows_with_the_number_of_cases():
    small = plots.ab_chart(_ab_rows(10)).get_size_inches()[1]
    large = plots.ab_chart(_ab_rows(120)).get_size_inches()[1]
    assert large > small + 20 * plots.AB_ROW_INCHES


# ------------------------------------------------------------------------------------------- telemetry


def _telemetry_result(timeline):
    """A stored result of run 3 with this NVML timeline (None: no telemetry at all)."""
    telemetry = (
        None if timeline is None else {"summary": {"device_name": "NVIDIA H200"}, "timeline": timeline}
    )
    return CaseResult(case_id="ops.matmul[m=4096]", name="matmul", kind="op", place="gpu:0", mode="dynamic",
                      config={}, config_hash="h", run_id=3, telemetry=telemetry)  # fmt: skip


def test_telemetry_timeline_has_four_panels_sharing_time(tmp_path):
    t = np.arange(0, 5, 0.1)
    timeline = [
        {"t": float(x), "gpu_util": 90.0, "mem_util": 40.0, "power_w": 300.0 + x, "mem_used_bytes": 2**33,
         "sm_clock_mhz": 1980.0}
        for x in t
    ]  # fmt: skip
    fig = plots.telemetry_plot(_telemetry_result(timeline))
    assert len(fig.axes) == 4
    ylabels = [ax.get_ylabel() for ax in fig.axes]
    assert ylabels == ["utilization (%)", "power (W)", "memory used (GiB)", "SM clock (MHz)"]
    shared = fig.axes[0].get_shared_x_axes()
    assert all(shared.joined(fig.axes[0], ax) for ax in fig.axes[1:])
    assert "ops.matmul[m=4096]" in fig.get_suptitle() and "gpu:0" in fig.get_suptitle()
    mem = [ln for ln in fig.axes[2].lines if ln.get_gid() == "mem_used_bytes"][0]
    assert mem.get_ydata()[0] == pytest.approx(8.0)  # GiB
    assert "time" in fig.axes[-1].get_xlabel()
    assert all(p.stat().st_size > 0 for p in plots.save(fig, tmp_path / "tele"))


def test_telemetry_without_data_is_none():
    assert plots.telemetry_plot(_telemetry_result([])) is None
    assert plots.telemetry_plot(_telemetry_result(None)) is None
    # a panel whose metric NVML never reported is left out
    fig = plots.telemetry_plot(_telemetry_result([{"t": 0.0, "gpu_util": 5}, {"t": 0.1, "gpu_util": 7}]))
    assert len(fig.axes) == 1


# -------------------------------------------------------------------------------------------- parallel


def test_render_all_in_parallel_matches_serial(store, tmp_path):
    series = store.series()
    todo = [
        jobs.PlotJob("trend", str(tmp_path / "p" / f"s{i}"), s, None, ("png",))
        for i, s in enumerate(series * 3)
    ]
    assert len(todo) >= 8  # enough to use the process pool
    parallel = jobs.render_all(todo, workers=2, progress=False)
    serial = jobs.render_all(
        [jobs.PlotJob(j.kind, j.path.replace("/p/", "/q/"), j.data, None, j.formats) for j in todo], workers=1
    )
    assert len(parallel) == len(serial) == len(todo)
    assert all((tmp_path / "p" / f"s{i}.png").stat().st_size > 0 for i in range(len(todo)))


def test_one_builder_gives_every_job_its_series_key(store, tmp_path):
    series = store.series()
    run_id = store.latest_run_id()
    results = store.results(run_id)
    machine = store.run(run_id).machine
    timeline = {"timeline": [{"t": 0.0, "gpu_util": 5}, {"t": 0.1, "gpu_util": 9}]}
    with_timeline = dataclasses.replace(results[0], telemetry=timeline)
    todo = jobs.build(
        tmp_path,
        formats=("png",),
        run_id=run_id,
        rows=[],
        baseline=3,
        trends=[(s, None) for s in series],
        telemetry=[(jobs.result_key(with_timeline, machine), with_timeline),
                   *((jobs.result_key(r, machine), r) for r in results[1:])],  # no timeline: no job
        series_dir="series",
    )  # fmt: skip
    assert [j.kind for j in todo] == ["ab"] + ["trend"] * len(series) + ["telemetry"]
    assert todo[0].key is None and todo[0].title == f"Run {run_id} against run 3"
    assert [j.key for j in todo[1:-1]] == [s.report_key for s in series]
    assert todo[-1].key == jobs.result_key(with_timeline, machine)
    rendered = jobs.render_all(todo, workers=1)
    assert [(r.kind, r.key) for r in rendered] == [(j.kind, j.key) for j in todo]
    assert all(len(r.files) == 1 and r.files[0].endswith(".png") for r in rendered)
    assert jobs.files_of(rendered, "ab") == [str(tmp_path / f"ab-run{run_id}.png")]
    assert all(f.startswith(str(tmp_path / "series")) for f in jobs.files_of(rendered, "trend"))
    with pytest.raises(ValueError, match="run id"):
        jobs.build(tmp_path, formats=("png",), rows=[])


def test_model_series_are_drawn_as_throughput():
    import numpy as np

    from benchmark.report.trend import series_metric, trend_plot

    base = dict(key=SeriesKey("lstm-train", "h", "cpu", "dynamic"), name="lstm", machine="m", series_id=1)
    op = Series(**base, run_ids=[1, 2], times=[1.0, 2.0], commits=["a", "b"], values=np.array([1e-3, 1e-3]))
    assert series_metric(op) == "time"
    model = Series(
        **base,
        run_ids=[1, 2],
        times=[1.0, 2.0],
        commits=["a", "b"],
        values=np.array([0.1, 0.1]),
        ci_low=np.array([0.09, 0.09]),
        ci_high=np.array([0.11, 0.11]),
        throughput=np.array([320.0, 330.0]),
        throughput_unit="samples/s",
    )
    assert series_metric(model) == "throughput"
    fig = trend_plot(model, metric=series_metric(model))
    assert "samples/s" in fig.axes[0].get_ylabel()


def test_several_runs_of_one_commit_each_get_a_label():
    """Three runs of one commit on one day (a repeat): each tick says which run it is (issue 45)."""
    commits = ["a" * 40, "a" * 40, "a" * 40, "b" * 40]
    series = dataclasses.replace(
        _long_series(4, 4), commits=commits, times=[1.7e9 + i * 60 for i in range(4)]
    )
    fig = trend.trend_plot(series)
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    heads = [label.split("\n")[0] for label in labels]
    assert heads == ["aaaaaaa #1", "aaaaaaa #2", "aaaaaaa #3", "bbbbbbb"][: len(heads)]
    assert len(heads) >= 3 and len(set(labels)) == len(labels)


def test_the_empty_ab_chart_says_so_and_nothing_overlaps():
    fig = plots.ab_chart([])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    (message,) = ax.texts
    assert message.get_text() == "no case has a baseline to compare with"
    axis = [ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels()]
    drawn = [message, ax.title, *(axis if ax.axison else [])]
    boxes = [t.get_window_extent(renderer) for t in drawn if t.get_text()]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
