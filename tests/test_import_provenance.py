"""Imports cannot impersonate (issue 26, part 5). The attack: an exported run with every timing
x0.01, claiming this machine's fingerprint and dated just before the next run, imported; the next
real run was judged against it and failed with a regression per case. Now an imported run names
its file and digest, is never a baseline unless imported with --as-baseline, and its machine
fingerprint is kept apart unless the user keeps it."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from suite_process import run_suite

from benchmark import cli
from benchmark.datamodel.environment import MachineDescription, RunDescription
from benchmark.store import open_store
from benchmark.store.engine import make_engine, parse_url
from benchmark.store.export import export_run
from benchmark.store.migrate import upgrade
from benchmark.store.pytest_import import IMPORTED_SUFFIX, kept_apart

FACTOR = 0.01
TIME_STATS = ("min", "max", "mean", "stddev", "median", "iqr", "q1", "q3", "ld15iqr", "hd15iqr", "total",
              "ci_low", "ci_high", "mad")  # fmt: skip


def forge(doc: dict, started: dt.datetime, factor: float = FACTOR) -> dict:
    """The attacker's edit of a `benchmark export --pytest-benchmark` file: every timing times
    `factor`, consistently (the import checks stats against the raw samples), and a new date."""
    for bench in doc["benchmarks"]:
        stats = bench["stats"]
        for key in TIME_STATS:
            if isinstance(stats.get(key), (int, float)):
                stats[key] *= factor
        if stats.get("ops"):
            stats["ops"] /= factor
        stats["data"] = [x * factor for x in stats["data"]]
        case = bench["extra_info"]["benchmark_case"]
        for key in TIME_STATS:
            if isinstance(case["stats"].get(key), (int, float)):
                case["stats"][key] *= factor
        if case.get("throughput"):
            case["throughput"] /= factor
        for process in case.get("processes") or []:
            if process.get("value"):
                process["value"] *= factor
            process["samples"] = [x * factor for x in process.get("samples") or []]
    doc["datetime"] = doc["benchmark"]["run"]["started_at"] = started.isoformat()
    return doc


def aware(when: dt.datetime) -> dt.datetime:
    """A stored time (naive means UTC) as an aware UTC time."""
    return when.replace(tzinfo=dt.timezone.utc) if when.tzinfo is None else when.astimezone(dt.timezone.utc)


def suite(db: Path, summary: Path) -> None:
    run_suite("--bench-tags", "smoke", "--bench-quick", "--bench-db", f"sqlite:///{db}",
              "--bench-json", str(summary))  # fmt: skip


def gate_json(db: Path, run_id: int, capsys, *flags: str) -> dict:
    capsys.readouterr()
    cli.main(["gate", "--run", str(run_id), "--format", "json", "--all", "--db", f"sqlite:///{db}", *flags])
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_a_forged_import_is_not_the_baseline_of_the_next_real_run_unless_imported_as_baseline(
    tmp_path, capsys
):
    """The attack end to end with real suite runs (smoke subset, --bench-quick)."""
    first = tmp_path / "first.sqlite"
    suite(first, tmp_path / "s1.json")
    with open_store(f"sqlite:///{first}", create=False, readonly=True) as store:
        (real,) = store.runs()
        # Dated between the real run and the next one: just after the real run ended (a fixed
        # "5 s ago" fell before the real run's start when the smoke suite took under 5 s).
        forged = forge(json.loads(export_run(store, real.id, "json", pytest_benchmark=True)),
                       aware(real.finished_at) + dt.timedelta(milliseconds=100))  # fmt: skip
    assert forged["benchmark"]["machine"]["fingerprint"] == real.machine  # it claims this machine
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()

    outcomes = {}
    for how, flags in (("default", []), ("as-baseline", ["--as-baseline"])):
        db = tmp_path / f"{how}.sqlite"
        shutil.copyfile(first, db)
        assert cli.main(["import", str(path), *flags, "--db", f"sqlite:///{db}"]) == 0
        suite(db, tmp_path / f"{how}.json")
        with open_store(f"sqlite:///{db}", create=False, readonly=True) as store:
            runs = {r.trigger: r for r in store.runs()}
            assert set(runs) == {"local", "import"}
            latest = store.latest_run_id()
        imported = runs["import"]
        assert imported.import_source == "forged.json" and imported.import_sha256 == digest
        assert "imported" in imported.tags
        # every case of the forged import is 100x faster, together: with the run's common shift
        # removed (the default) that is one shift of the whole run, so it is judged without it here
        no_shift = tmp_path / "gates.yaml"
        no_shift.write_text("defaults: {common_shift: false}\n")
        outcomes[how] = (imported, gate_json(db, latest, capsys, "--gates", str(no_shift)), real.id)

    imported, judged, real_id = outcomes["default"]
    assert imported.baseline is False and imported.machine == real.machine + IMPORTED_SUFFIX
    timed = [d for d in judged["decisions"] if d["verdict"] != "skipped"]
    assert timed
    # Judged against the real history only: every baseline is the real first run.
    assert {d["baseline_run_id"] for d in timed} == {real_id}

    imported, judged, _ = outcomes["as-baseline"]
    assert imported.baseline is True and imported.machine == real.machine
    timed = [d for d in judged["decisions"] if d["verdict"] != "skipped"]
    assert {d["baseline_run_id"] for d in timed} == {imported.id}
    # The user said so: the x0.01 import counts, and every real case is ~100x slower than it.
    # Under load (seen at load 6) a case of 2 vs 2 processes can come out inconclusive; none may pass
    # or improve against a baseline 100x faster. (Their CPU wall time does not fail the gate until
    # a re-measurement reproduces it: configs/gates.yaml `blocking`.)
    assert {d["verdict"] for d in timed} <= {"regression", "inconclusive"}
    assert any(d["verdict"] == "regression" for d in timed)


@pytest.fixture
def exported(db_url, machine, make_result, tmp_path):
    """A history (SQLite, then PostgreSQL) with one complete run on `machine`, and that run exported (pytest-benchmark JSON)."""
    with open_store(db_url) as store:
        run_id = store.begin_run(
            MachineDescription.of(machine), RunDescription.of({"started_at": time.time() - 100})
        )
        for case in ("op.a", "op.b"):
            store.add_result(run_id, make_result(case, samples=[1e-3, 1.1e-3, 0.9e-3, 1.05e-3, 0.95e-3]))
        store.finish_run(run_id, "complete")
        doc = json.loads(export_run(store, run_id, "json", pytest_benchmark=True))
    return db_url, doc


def test_an_import_keeps_its_provenance_and_its_machine_apart(exported, tmp_path, machine, capsys):
    url, doc = exported
    path = tmp_path / "old run.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["import", str(path), "--db", url]) == 0
    assert "not a baseline" in capsys.readouterr().out
    with open_store(url, create=False, readonly=True) as store:
        imported = next(r for r in store.runs() if r.trigger == "import")
        assert imported.import_source == "old run.json"
        assert imported.import_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert imported.baseline is False and imported.machine == "machine-a+imported"
        # Its results are series of their own beside the live ones.
        machines = {(p.case_id, p.machine) for p in store.history("op.")}
    assert machines == {(c, m) for c in ("op.a", "op.b") for m in ("machine-a", "machine-a+imported")}
    # `runs` shows the mark, however short the column.
    assert cli.main(["runs", "--db", url]) == 0
    assert "+imported" in capsys.readouterr().out


def test_an_export_of_an_import_imports_again_without_a_second_suffix(exported, tmp_path):
    url, doc = exported
    first = tmp_path / "a.json"
    first.write_text(json.dumps(doc))
    assert cli.main(["import", str(first), "--db", url]) == 0
    with open_store(url) as store:
        imported = next(r for r in store.runs() if r.trigger == "import")
        again = json.loads(export_run(store, imported.id, "json", pytest_benchmark=True))
    assert again["benchmark"]["run"]["import_source"] == "a.json"
    assert again["benchmark"]["run"]["baseline"] is False
    second = tmp_path / "b.json"
    second.write_text(json.dumps(again))
    target = f"sqlite:///{tmp_path / 'other.sqlite'}"
    assert cli.main(["import", str(second), "--db", target]) == 0
    with open_store(target, create=False, readonly=True) as store:
        (run,) = store.runs()
    assert run.machine == "machine-a+imported"
    assert kept_apart("f" * 64).endswith(IMPORTED_SUFFIX) and len(kept_apart("f" * 64)) == 64


def test_a_kept_machine_import_joins_the_series_but_is_still_no_baseline(
    exported, tmp_path, machine, make_result
):
    url, doc = exported
    forged = forge(doc, dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=30))
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    assert cli.main(["import", str(path), "--keep-machine", "--db", url]) == 0
    with open_store(url) as store:
        run_id = store.begin_run(
            MachineDescription.of(machine), RunDescription.of({"started_at": time.time()})
        )
        store.add_result(run_id, make_result("op.a", samples=[1e-3, 1.02e-3, 0.98e-3, 1.01e-3, 0.99e-3]))
        store.finish_run(run_id, "complete")
        imported = next(r for r in store.runs() if r.trigger == "import")
        assert imported.machine == "machine-a" and imported.baseline is False
        (base,) = store.baselines(run_id).values()
        assert imported.id not in base.run_ids and len(base.run_ids) == 1
        # Asked for runs of any status, an import is still no baseline.
        (base_any,) = store.baselines(run_id, statuses=None).values()
        assert imported.id not in base_any.run_ids


def test_the_migration_marks_runs_imported_before_it_as_no_baseline(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = make_engine(parse_url(url))
    upgrade(engine, "0006")
    meta = sa.MetaData()
    meta.reflect(engine)
    t = meta.tables
    now = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    with engine.begin() as conn:
        machine_id = conn.execute(
            t["machine"].insert().values(fingerprint="m", hostname="h", info={}, created_at=now)
        ).inserted_primary_key[0]
        common = {"machine_id": machine_id, "started_at": now, "status": "complete", "framework": {}, "env": {},
                  "tags": []}  # fmt: skip
        conn.execute(t["run"].insert().values(**common, trigger="nightly", extra={}))
        conn.execute(
            t["run"]
            .insert()
            .values(**common, trigger="import", extra={"import_sha256": "ab" * 32, "import_file": "old.json"})
        )
    upgrade(engine)
    engine.dispose()
    with open_store(url, create=False, readonly=True) as store:
        runs = {r.trigger: r for r in store.runs()}
    assert (runs["nightly"].baseline, runs["nightly"].import_source) == (True, None)
    assert (runs["import"].baseline, runs["import"].import_source, runs["import"].import_sha256) == (
        False,
        "old.json",
        "ab" * 32,
    )


def test_import_help_names_the_flags(capsys):
    with pytest.raises(SystemExit):
        cli.main(["import", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--as-baseline" in text and "--keep-machine" in text and "+imported" in text
