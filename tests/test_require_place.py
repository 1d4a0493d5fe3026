"""`--bench-require-place`: a CI job whose required place ran no case fails, in one line."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]

CASES = """
cases:
  - name: req_abs
    kind: op
    op: paddle.abs
    inputs: {x: {shape: [8, 8]}}
    places: [cpu, gpu]
    modes: [dynamic]
"""


def suite(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    cfg = tmp_path / "cases.yaml"
    cfg.write_text(textwrap.dedent(CASES))
    cmd = [sys.executable, "-m", "pytest", "benchmark/", "-p", "no:cacheprovider", "-q", "--bench-quick"]
    cmd += ["--bench-processes", "1"]  # which places executed is the question, not their spread
    cmd += ["--bench-config", str(cfg), "--bench-no-store", "--bench-json", str(tmp_path / "s.json"), *args]
    return subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=300)


RUNS = {  # name: suite arguments; every suite run of this file
    "gpu_required": ["--bench-place", "gpu", "--bench-require-place", "gpu"],
    "gpu_only": ["--bench-place", "gpu"],
    "cpu_required": ["--bench-place", "cpu", "--bench-require-place", "cpu"],
    "cpu_run_gpu_required": ["--bench-place", "cpu", "--bench-require-place", "gpu"],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The suite runs of RUNS, started together (they are independent, and one run keeps about one
    core busy): name -> a Future of the finished process."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            name: pool.submit(suite, tmp_path_factory.mktemp(name), *args) for name, args in RUNS.items()
        }
        yield futures
        for future in futures.values():
            future.cancel()


@pytest.mark.slow
def test_no_gpu_case_executed_fails_the_session_with_one_line(runs):
    import paddle

    if paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0:
        pytest.skip("this machine can run the gpu case")
    proc = runs["gpu_required"].result()
    assert proc.returncode == 1, proc.stdout[-2000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("--bench-require-place")]
    assert len(lines) == 1, proc.stdout[-2000:]
    assert "0 of 1 case(s) on place gpu executed" in lines[0] and "skipped" in lines[0]
    # Without the option the same session is green (all skipped): what the option exists for.
    assert runs["gpu_only"].result().returncode == 0


@pytest.mark.slow
def test_a_required_place_that_ran_passes(runs):
    proc = runs["cpu_required"].result()
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "--bench-require-place" not in proc.stdout


def test_a_required_place_with_no_selected_case_fails(runs):
    proc = runs["cpu_run_gpu_required"].result()
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "0 of 0 case(s) on place gpu executed (none was selected)" in proc.stdout
