"""Environment changes are events on a series, not new series (issue 13): the fingerprint keys the
hardware, each run records its drivers/kernel/Python, an old history merges its upgraded machines."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from synthetic import gate_rows

from benchmark.analysis.events import environment_events, run_environment
from benchmark.datamodel.environment import (
    MachineDescription,
    RunDescription,
    collect_machine,
    fingerprint,
    volatile_environment,
)
from benchmark.store import open_store, upgrade_store
from benchmark.store.engine import make_engine, parse_url
from benchmark.store.migrate import upgrade
from benchmark.store.tables import encode_samples

GPU_BOX = {
    "hostname": "nightly-1",
    "cpu_model": "AMD EPYC 7763",
    "cpu_count_logical": 128,
    "cpu_count_physical": 64,
    "memory_gib": 503,
    "gpu_models": ["NVIDIA A100-SXM4-80GB"] * 8,
    "gpu_count": 8,
    "gpu_driver": "550.54.15",
    "cuda_driver_version": "12.4",
    "os": "Linux",
    "os_release": "Ubuntu 22.04.3 LTS",
    "kernel": "5.15.0-91-generic",
    "arch": "x86_64",
    "python_implementation": "CPython",
    "python_version": "3.11.4",
}
UPGRADED = {**GPU_BOX, "gpu_driver": "560.28.03", "python_version": "3.11.7", "kernel": "5.15.0-94-generic"}


def record_daily_runs(url, levels, make_result, rng, upgrade_at: int = 30) -> list[int]:
    """One complete run a day of an `op.add` result at each level (7 samples with 0.2% noise), on
    GPU_BOX and, from run `upgrade_at` (0-based) on, on the UPGRADED box; returns the run ids."""
    import numpy as np

    run_ids = []
    with open_store(url, create=True) as store:
        for i, v in enumerate(levels):
            box = GPU_BOX if i < upgrade_at else UPGRADED
            run_id = store.begin_run(
                MachineDescription.of({**box, "fingerprint": fingerprint(box)}),
                RunDescription.of({"started_at": 1.7e9 + 86400 * i}),
            )
            samples = v * np.exp(rng.normal(0, 0.002, 7))  # on the GPU: its time blocks as judged
            store.add_result(run_id, make_result("op.add", samples=samples, place="gpu"))
            store.finish_run(run_id)
            run_ids.append(run_id)
    return run_ids


def test_the_fingerprint_keys_the_hardware_not_drivers_kernel_or_python_patch():
    fp = fingerprint(GPU_BOX)
    assert fingerprint(UPGRADED) == fp
    assert fingerprint({**GPU_BOX, "os_release": "Ubuntu 22.04.4 LTS"}) == fp
    for field, other in [
        ("cpu_model", "Intel Xeon 8480"),
        ("cpu_count_logical", 64),
        ("gpu_models", ["NVIDIA H100"] * 8),
        ("gpu_count", 4),
        ("python_version", "3.12.1"),  # a new minor version is a new interpreter
    ]:
        assert fingerprint({**GPU_BOX, field: other}) != fp, field
    assert volatile_environment(UPGRADED) == {
        "gpu_driver": "560.28.03",
        "cuda_driver_version": "12.4",
        "kernel": "5.15.0-94-generic",
        "os_release": "Ubuntu 22.04.3 LTS",
        "python_version": "3.11.7",
    }
    here = collect_machine()
    assert here["fingerprint"] == fingerprint({**here, "kernel": "another", "python_version": "3.11.999"})


def test_an_upgrade_keeps_the_series_and_is_an_event(sqlite_url, make_result):
    with open_store(sqlite_url, create=True) as store:
        runs = []
        for i, box in enumerate([GPU_BOX, GPU_BOX, UPGRADED, UPGRADED]):
            machine = {**box, "fingerprint": fingerprint(box)}
            run_id = store.begin_run(
                MachineDescription.of(machine), RunDescription.of({"started_at": 1.7e9 + 86400 * i})
            )
            store.add_result(run_id, make_result("op.add", samples=[1e-3 * (1 + 0.1 * (i >= 2))] * 5))
            store.finish_run(run_id)
            runs.append(run_id)
        history = store.history("op.add")
        assert len({r.series_id for r in history}) == 1 and len(history) == 4
        assert len({r.machine for r in history}) == 1
        envs = [run_environment(store.run(r).extra) for r in runs]
        assert store.run_environments([*runs, 10**6]) == dict(zip(runs, envs, strict=True))  # one query
        (base,) = store.baselines(runs[-1]).values()
        assert base.run_ids == runs[:-1]  # the upgraded runs are judged against the old ones
    assert envs[0]["gpu_driver"] == "550.54.15" and envs[2]["gpu_driver"] == "560.28.03"
    assert environment_events(envs) == {
        2: "driver 550.54.15 -> 560.28.03, kernel 5.15.0-91-generic -> 5.15.0-94-generic, "
        "Python 3.11.4 -> 3.11.7"
    }
    assert environment_events([None, {"kernel": "a"}, {}, {"kernel": "a"}, {"kernel": "b"}]) == {
        4: "kernel a -> b"
    }


def test_an_old_history_merges_machines_that_differ_only_by_volatile_fields(sqlite_url, make_result):
    """Two machine rows from before the upgrade of the key (old fingerprints: driver and Python
    patch version included) become one machine, and their two series of one case become one."""
    import hashlib
    import json

    old_fields = (
        "cpu_model", "cpu_count_logical", "cpu_count_physical", "memory_gib", "gpu_models", "gpu_count",
        "gpu_driver", "os", "os_release", "kernel", "arch", "python_implementation", "python_version",
    )  # fmt: skip

    def old_fp(info):
        blob = json.dumps(
            {k: info.get(k) for k in old_fields}, sort_keys=True, separators=(",", ":"), default=str
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    engine = make_engine(parse_url(sqlite_url))
    upgrade(engine, "0004")
    meta = sa.MetaData()
    meta.reflect(engine)
    t = meta.tables
    start = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
    with engine.begin() as conn:
        case_pk = conn.execute(
            t["case"].insert().values(case_id="op.add", name="add", kind="op", config={}, config_hash="h1")
        ).inserted_primary_key[0]
        other = conn.execute(
            t["machine"]
            .insert()
            .values(fingerprint="set-by-hand", hostname="x", info=GPU_BOX, created_at=start)
        ).inserted_primary_key[0]
        day = 0
        for box in (GPU_BOX, UPGRADED):
            mid = conn.execute(
                t["machine"]
                .insert()
                .values(fingerprint=old_fp(box), hostname="h", info=box, created_at=start)
            ).inserted_primary_key[0]
            sid = conn.execute(
                t["series"]
                .insert()
                .values(case_pk=case_pk, machine_id=mid, place="cpu", mode="dynamic", metric="time")
            ).inserted_primary_key[0]
            for _ in range(3):
                day += 1
                when = start + dt.timedelta(days=day)
                rid = conn.execute(
                    t["run"].insert().values(
                        machine_id=mid, started_at=when, status="complete", framework={}, env={}, trigger="nightly",
                        tags=[], extra={},
                    )
                ).inserted_primary_key[0]  # fmt: skip
                conn.execute(
                    t["result"].insert().values(
                        run_id=rid, series_id=sid, run_time=when.timestamp(), status="ok", unit="s", rounds=3,
                        iterations=1, warmup_rounds=0, median=1e-3, stats_extra={}, warnings=[], tags=[], extra={},
                        samples=encode_samples([1e-3] * 3),
                    )
                )  # fmt: skip
    engine.dispose()
    upgrade_store(sqlite_url)
    with open_store(sqlite_url) as store:
        history = store.history("op.add")
        assert len(history) == 6 and len({r.series_id for r in history}) == 1
        assert {r.machine for r in history} == {fingerprint(GPU_BOX)}
        envs = [run_environment(store.run(r.run_id).extra) for r in history]
        assert environment_events(envs) == {
            3: "driver 550.54.15 -> 560.28.03, kernel 5.15.0-91-generic -> 5.15.0-94-generic, "
            "Python 3.11.4 -> 3.11.7"
        }
        # a new run of the upgraded machine lands in the same series
        run_id = store.begin_run(
            MachineDescription.of({**UPGRADED, "fingerprint": fingerprint(UPGRADED)}),
            RunDescription.of({"started_at": "2025-02-01"}),
        )
        store.add_result(run_id, make_result("op.add", config_hash="h1"))
        (base,) = store.baselines(run_id).values()
        assert len(base.run_ids) == 6
    engine = make_engine(parse_url(sqlite_url))
    with engine.connect() as conn:
        fps = dict(conn.execute(sa.text("SELECT id, fingerprint FROM machine")).all())
    engine.dispose()
    assert fps[other] == "set-by-hand" and len(fps) == 2  # a hand-set key is left alone


def test_plots_and_the_dashboard_show_the_upgrade_and_blame_the_change_on_it(sqlite_url, make_result):
    """A series whose level moves by 6% at the run where the driver was upgraded, the run before
    it a little slow: the alert's change is placed at the upgrade and attributed to it; the trend
    plot draws the event and the dashboard's change table lists it."""
    import numpy as np

    from benchmark.report.htmlkit import Entry
    from benchmark.report.pages import change_table
    from benchmark.report.run_rows import analyse
    from benchmark.report.trend import trend_plot

    rng = np.random.default_rng(3)
    levels = np.exp(rng.normal(0, 0.01, 40)) * 1e-3
    levels[30:] *= 1.06
    levels[29] *= 1.02
    record_daily_runs(sqlite_url, levels, make_result, rng)
    with open_store(sqlite_url) as store:
        (series,) = store.series(["op.add"])
    label = "driver 550.54.15 -> 560.28.03, kernel 5.15.0-91-generic -> 5.15.0-94-generic, Python 3.11.4 -> 3.11.7"
    assert series.events == {30: label}
    analysis = analyse(series, min_effect=0.03)
    (alert,) = [a for a in analysis.alerts if a.index >= 29]
    assert alert.change_index == 30 and alert.event == label
    fig = trend_plot(series, analysis)
    gids = {a.get_gid() for ax in fig.axes for a in [*ax.lines, *ax.texts]}
    assert {"environment-event", "environment-event-label"} <= gids
    html = change_table(Entry(series=series, analysis=analysis, slug="x"))
    assert "environment change" in html and "after driver 550.54.15 -&gt; 560.28.03" in html


def test_the_gate_and_the_markdown_report_attribute_a_step_to_the_upgrade(db_url, make_result, capsys):
    """A series whose level moves by 12% at the run where the driver was upgraded: `benchmark gate`
    on the second run of the new level fails it "after driver ...", lists the change among the
    environment changes (text and JSON), and the Markdown report lists it too."""
    import json

    import numpy as np

    from benchmark.cli import main

    rng = np.random.default_rng(5)
    levels = np.exp(rng.normal(0, 0.01, 32)) * 1e-3
    levels[30:] *= 1.12
    run_ids = record_daily_runs(db_url, levels, make_result, rng)
    label = "driver 550.54.15 -> 560.28.03, kernel 5.15.0-91-generic -> 5.15.0-94-generic, Python 3.11.4 -> 3.11.7"
    upgraded, last = run_ids[30], run_ids[-1]

    assert main(["gate", "--db", db_url, "--run", str(last)]) == 1
    out = capsys.readouterr().out
    (failing,) = [line for line in gate_rows(out) if line.startswith("REGRESSION")]
    assert f"level changed at run {upgraded} (after {label})" in failing
    assert f"environment: run {upgraded}: after {label} (1 series: op.add [gpu dynamic])" in out.splitlines()

    assert main(["gate", "--db", db_url, "--run", str(last), "--format", "json"]) == 1
    (d,) = json.loads(capsys.readouterr().out)["decisions"]
    assert d["change_run_id"] == upgraded and d["events"] == [[upgraded, label]]

    assert main(["report", "--format", "md", "--db", db_url, "--run", str(last)]) == 0
    md = capsys.readouterr().out
    section = md.split("### Environment changes and levels that came back")[1].split("###")[0]
    assert f"- run {upgraded}: after driver 550.54.15 -&gt; 560.28.03" in section
    assert "(1 series: `op.add` (gpu, dynamic))" in section
