"""The GitHub Actions workflows parse, and every command they call exists.

`benchmark <subcommand> --options` are checked against the real parser (`benchmark.cli.build_parser`),
and `pytest ... --bench-*` options against what `pytest benchmark/ --help` lists, so a renamed
command or option fails here rather than in the nightly job.
"""

from __future__ import annotations

import argparse
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
SHELL_SEPARATORS = re.compile(r"\|\||&&|[|;]|>>?|\$\(|\)")
BENCHMARK_CALL = re.compile(r"(?:^|(?<=[\s;&|(]))benchmark\s+([a-z][a-z-]*)(.*)$")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def run_scripts(workflow: dict) -> list[str]:
    """Every `run:` script, with backslash-continued lines joined."""
    scripts = []
    for job in workflow["jobs"].values():
        for step in job.get("steps", []):
            if "run" in step:
                scripts.append(step["run"].replace("\\\n", " "))
    return scripts


def command_lines(workflow: dict) -> list[str]:
    lines = (line.strip() for script in run_scripts(workflow) for line in script.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def benchmark_calls(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(subcommand, [--options]) of every `benchmark SUB ...` call, up to the next shell separator."""
    calls = []
    for line in lines:
        for m in BENCHMARK_CALL.finditer(line):
            rest = SHELL_SEPARATORS.split(m.group(2), maxsplit=1)[0]
            calls.append((m.group(1), OPTION.findall(rest)))
    return calls


def pytest_bench_options(lines: list[str]) -> set[str]:
    return {
        opt
        for line in lines
        if re.search(r"\bpytest\b", line)
        for opt in re.findall(r"--bench-[a-z-]+", line)
    }


@functools.lru_cache(maxsize=1)
def cli_subcommands() -> dict[str, set[str]]:
    """{subcommand: its option strings} from the real `benchmark` parser."""
    from benchmark.cli import build_parser

    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: _options_of(sub) for name, sub in subs.choices.items()}


def _options_of(parser: argparse.ArgumentParser) -> set[str]:
    options = {opt for action in parser._actions for opt in action.option_strings}
    for action in parser._actions:  # nested actions such as `benchmark db upgrade`
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                options |= _options_of(sub)
    return options


@functools.lru_cache(maxsize=1)
def suite_options() -> set[str]:
    """The --bench-* options `pytest benchmark/ --help` lists (the plugin the suite loads)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmark/", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return set(re.findall(r"--bench-[a-z-]+", proc.stdout))


def test_there_are_workflows():
    names = {p.name for p in WORKFLOWS}
    assert {"nightly-gpu.yml", "pr.yml", "cla.yml"} <= names


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_parses_and_every_job_has_steps(path):
    workflow = load(path)
    assert isinstance(workflow, dict) and workflow.get("name")
    assert workflow.get(True), "no triggers (`on:` loads as the key True)"
    assert workflow.get("jobs"), "no jobs"
    for job_id, job in workflow["jobs"].items():
        assert job.get("runs-on"), f"job {job_id}: no runs-on"
        steps = job.get("steps")
        assert isinstance(steps, list) and steps, f"job {job_id}: no steps"
        for step in steps:
            assert ("uses" in step) != ("run" in step), f"job {job_id}: a step needs exactly one of uses/run"
            if "uses" in step:
                assert re.search(r"@v?\d", step["uses"]), f"{step['uses']}: pin an action version"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_benchmark_subcommands_and_options_exist(path):
    known = cli_subcommands()
    problems = []
    for sub, options in benchmark_calls(command_lines(load(path))):
        if sub not in known:
            problems.append(f"`benchmark {sub}` is not a command")
        elif set(options) - known[sub]:
            problems.append(f"`benchmark {sub}` has no option(s) {sorted(set(options) - known[sub])}")
    assert not problems, f"{path.name}: " + "; ".join(problems) + f" (commands: {sorted(known)})"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_pytest_bench_options_exist(path):
    used = pytest_bench_options(command_lines(load(path)))
    if not used:
        pytest.skip(f"{path.name} runs no suite")
    missing = used - suite_options()
    assert not missing, f"{path.name}: pytest benchmark/ has no option(s) {sorted(missing)}"


def test_nightly_gpu_job():
    workflow = load(ROOT / ".github/workflows/nightly-gpu.yml")
    assert {"schedule", "workflow_dispatch"} <= set(workflow[True])
    job = workflow["jobs"]["suite"]
    assert {"self-hosted", "gpu"} <= set(job["runs-on"])
    text = "\n".join(command_lines(workflow))
    assert 'pip install -e ".[gpu,test]"' in text
    assert "--bench-place gpu" in text and "--bench-shard" in text
    assert "secrets.BENCHMARK_DB_URL" in (ROOT / ".github/workflows/nightly-gpu.yml").read_text()
    subs = [sub for sub, _ in benchmark_calls(command_lines(workflow))]
    assert {"gate", "report", "plot"} <= set(subs)
    assert "GITHUB_STEP_SUMMARY" in text
    assert any(step.get("uses", "").startswith("actions/upload-artifact@") for step in job["steps"])
    # Paddle comes from Paddle's own index, version and index are inputs; the harness's extra has no paddle.
    inputs = workflow[True]["workflow_dispatch"]["inputs"]
    assert {"paddle_version", "paddle_index"} <= set(inputs)
    assert 'pip install "paddlepaddle-gpu==$PADDLE_VERSION" -i "$PADDLE_INDEX"' in text
    assert "paddlepaddle.org.cn/packages/stable/cu126" in inputs["paddle_index"]["default"]
    # A job without a usable GPU fails; several shards, judged as one run group.
    assert "--bench-require-place gpu" in text and "--bench-run-group" in text
    assert len(job["strategy"]["matrix"]["shard"]) > 1
    assert "--run-group" in "\n".join(command_lines({"jobs": {"gate": workflow["jobs"]["gate"]}}))
    # The history persists: the previous artifact is restored before the run, a first run passes.
    uses = [step.get("uses", "") for j in workflow["jobs"].values() for step in j["steps"]]
    assert any(u.startswith("actions/github-script@") for u in uses)
    # ... and the gate's first-night notice (exit 0) is surfaced, not special-cased as an exit 2
    assert "nothing to compare yet" in text and "no baseline for any case" not in text


def test_gpu_extra_does_not_pin_paddle():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert not any(dep.lower().startswith("paddlepaddle") for dep in extras["gpu"])


def test_pr_job_runs_precommit_tests_and_smoke():
    text = "\n".join(command_lines(load(ROOT / ".github/workflows/pr.yml")))
    assert "pre-commit run --all-files" in text
    assert re.search(r"^pytest tests/", text, re.M)
    assert re.search(r"^pytest benchmark/ .*--bench-tags smoke.*--bench-quick", text, re.M)


def test_cla_check_points_at_the_cla_and_a_signatures_branch():
    workflow = load(ROOT / ".github/workflows/cla.yml")
    assert "pull_request_target" in workflow[True]
    step = workflow["jobs"]["cla"]["steps"][0]
    assert step["uses"].startswith("contributor-assistant/github-action@")
    assert step["with"]["path-to-document"].endswith("/CLA.md") and (ROOT / "CLA.md").is_file()
    assert step["with"]["branch"]


def test_command_extraction():
    lines = [
        'benchmark report --format md >> "$GITHUB_STEP_SUMMARY"',
        "pytest benchmark/ --bench-tags smoke --bench-quick && benchmark gate --run latest",
        "echo BENCHMARK_DB_URL=x; benchmark db upgrade",
    ]
    assert benchmark_calls(lines) == [("report", ["--format"]), ("gate", ["--run"]), ("db", [])]
    assert pytest_bench_options(lines) == {"--bench-tags", "--bench-quick"}
