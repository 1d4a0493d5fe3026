"""Shared fixtures of the harness's own tests.

`db_url` runs a test against SQLite (a fresh file) and against PostgreSQL (a fresh database on the
server named by $BENCHMARK_TEST_PG_URL, created with a random name and dropped afterwards). Without that
variable the PostgreSQL half is skipped; start a throwaway server with
`eval "$(bash tools/pg_throwaway.sh)"`.
"""

from __future__ import annotations

import os
import secrets
import warnings

import pytest

PG_URL_ENV = "BENCHMARK_TEST_PG_URL"


# Plugins the pytest processes tests start (`pytest benchmark/ ...`) never use: hypothesis' (only
# tests/test_security.py uses hypothesis, in this process; loading it costs about 1.5 s of CPU per
# process), anyio's and platformdirs' (which load anyio, asyncio and, where installed, trio), and
# pytest-xdist's (these tests may run in xdist workers; a suite run never does).
CHILD_PYTEST_ADDOPTS = "-p no:hypothesispytest -p no:anyio -p no:platformdirs -p no:xdist"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """In a pytest-xdist worker (`pytest tests/ -n 2`), drop the worker's $PYTEST_XDIST_* variables
    before pytest-benchmark reads them: it switches itself off where it sees them (its numbers
    beside another worker are not reliable; no test here judges them), in this worker and in the
    suite runs tests start, which inherit them, and those measure through it (`--bench-processes 0`)."""
    for name in [n for n in os.environ if n.startswith("PYTEST_XDIST_")]:
        del os.environ[name]
    # the xdist controller measures nothing: its pytest-benchmark switching off is not news
    warnings.filterwarnings("ignore", "Benchmarks are automatically disabled because xdist")


@pytest.fixture(scope="session", autouse=True)
def _child_pytest_without_unused_plugins():
    """Child pytest processes get CHILD_PYTEST_ADDOPTS through $PYTEST_ADDOPTS, which they inherit."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTEST_ADDOPTS", f"{os.environ.get('PYTEST_ADDOPTS', '')} {CHILD_PYTEST_ADDOPTS}".strip())
        yield


@pytest.fixture(scope="session")
def callgrind_tooling():
    """callgrind's tooling (valgrind, setarch, the hook built once); the test is skipped, with the
    reason, where this machine lacks it."""
    from benchmark.instructions import callgrind

    try:
        return callgrind.find_tooling()
    except callgrind.InstructionsUnavailable as e:
        pytest.skip(str(e))


def _pg_admin_url():
    import sqlalchemy as sa

    raw = os.environ.get(PG_URL_ENV)
    if not raw:
        pytest.skip(f'PostgreSQL tests need ${PG_URL_ENV} (eval "$(bash tools/pg_throwaway.sh)")')
    url = sa.make_url(raw)
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    return url


@pytest.fixture
def pg_url():
    """A URL to a new, empty PostgreSQL database (dropped after the test)."""
    import sqlalchemy as sa

    admin_url = _pg_admin_url()
    name = f"bench_test_{secrets.token_hex(6)}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    quoted = admin.dialect.identifier_preparer.quote(name)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {quoted}")
    except sa.exc.OperationalError as exc:
        pytest.skip(f"PostgreSQL at ${PG_URL_ENV} is not reachable: {exc.orig}")
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
        admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path):
    """A URL to a SQLite file that does not exist yet."""
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """A URL to a new, empty history database: SQLite, then PostgreSQL."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_url")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def machine():
    """A machine description with a fixed fingerprint."""
    return {"fingerprint": "machine-a", "hostname": "host-a", "cpu_model": "Test CPU", "cpu_count_logical": 8}


@pytest.fixture
def make_result():
    """Factory of CaseResults: make_result("op.add", samples=[...], place="cpu", ...) (fields as
    in `CaseResult.to_dict()`)."""
    from benchmark.analysis.summary import summarize
    from benchmark.datamodel.result import CaseResult

    def make(case_id: str = "op.add[float32]", samples=None, **fields):
        samples = [1e-3, 1.1e-3, 0.9e-3, 1.05e-3, 0.95e-3, 1e-3] if samples is None else list(samples)
        base = {
            "case_id": case_id,
            "name": case_id.split("[")[0],
            "kind": "op",
            "place": "cpu",
            "mode": "dynamic",
            "config": {"op": case_id, "shape": [64, 64]},
            "config_hash": "cfg1",
            "status": "ok",
            "unit": "s",
            "samples": samples,
            "iterations": 10,
            "warmup_rounds": 2,
            "stats": summarize(samples) if samples else {"rounds": 0},
        }
        base.update(fields)
        return CaseResult.from_dict(base)

    return make
