"""Makes `pytest benchmark/` run the YAML cases: the hooks live in benchmark.plugin."""

from benchmark.plugin import (  # noqa: F401 - pytest finds hooks and fixtures by name here
    bench_session,
    pytest_addoption,
    pytest_collection_finish,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_generate_tests,
    pytest_runtestloop,
    pytest_sessionfinish,
    pytest_sessionstart,
    pytest_terminal_summary,
)
