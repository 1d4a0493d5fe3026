"""The GitHub Actions workflows parse, and every command they call exists.

`benchmark <subcommand> --options` are checked against the real parser (`benchmark.cli.build_parser`),
and `pytest ... --bench-*` options against what `pytest benchmark/ --help` lists, so a renamed
command or option fails here rather than in the nightly job.
"""

from __future__ import annotations

import argparse
import functools
import re
import shlex
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


SEPARATORS = {";", "&&", "||", "|", "&"}
REDIRECTS = {">", ">>", "<"}
KEYWORDS = {"if", "then", "elif", "else", "fi", "while", "do", "done", "!", "{", "}"}
FD_REDIRECT = re.compile(r"(?<=\s)\d*>&\d+")
FD_NUMBER = re.compile(r"(?<=\s)\d+(>)")


def _steps(where: dict) -> list[dict]:
    return where.get("steps", [where])


def shell_commands(where: dict) -> list[list[str]]:
    """argv of every simple command in the `run:` scripts of a job (or of one step), in order:
    continuation lines joined, comments dropped, split at ; && || |, redirections removed. A line
    shlex cannot split (a quote that spans lines) is left out."""
    out: list[list[str]] = []
    for step in _steps(where):
        for line in step.get("run", "").replace("\\\n", " ").splitlines():
            line = FD_REDIRECT.sub(" ", line)  # 2>&1
            line = FD_NUMBER.sub(r"\1", line)  # 2> file: a redirection like > file
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            try:
                tokens = list(lexer)
            except ValueError:
                continue
            command: list[str] = []
            skip = False
            for token in [*tokens, ";"]:
                if skip:
                    skip = False
                elif token in KEYWORDS and not command:
                    continue  # `if grep ...; then` holds the command `grep ...`
                elif token in SEPARATORS:
                    if command:
                        out.append(command)
                    command = []
                elif token in REDIRECTS:
                    skip = True
                else:
                    command.append(token)
    return out


def pytest_calls(where: dict) -> list[tuple[list[str], dict[str, str | bool]]]:
    """(paths, {--option: value, or True for a flag}) of every `pytest` command."""
    calls = []
    for argv in shell_commands(where):
        if argv[0] != "pytest":
            continue
        targets: list[str] = []
        options: dict[str, str | bool] = {}
        rest = argv[1:]
        while rest:
            token = rest.pop(0)
            if token.startswith("--"):
                name, eq, value = token.partition("=")
                if eq:
                    options[name] = value
                elif rest and not rest[0].startswith("-"):
                    options[name] = rest.pop(0)
                else:
                    options[name] = True
            else:
                targets.append(token)
        calls.append((targets, options))
    return calls


def parse_benchmark(argv: list[str]) -> argparse.Namespace:
    """`benchmark ...` parsed by the real parser (a wrong command or value fails the test)."""
    from benchmark.cli import build_parser

    assert argv[0] == "benchmark"
    try:
        return build_parser().parse_args(argv[1:])
    except SystemExit:
        raise AssertionError(f"`{' '.join(argv)}` is not a valid benchmark command line") from None


def step_named(job: dict, prefix: str) -> dict:
    return next(step for step in job["steps"] if step.get("name", "").startswith(prefix))


def step_using(job: dict, action: str, **with_) -> dict:
    return next(
        step
        for step in job["steps"]
        if step.get("uses", "").startswith(action)
        and all(step.get("with", {}).get(k) == v for k, v in with_.items())
    )


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
                assert re.search(r"@[0-9a-f]{40}$", step["uses"]), f"{step['uses']}: pin an action by commit"


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


def test_nightly_gpu_job_graph():
    workflow = load(ROOT / ".github/workflows/nightly-gpu.yml")
    assert {"schedule", "workflow_dispatch"} <= set(workflow[True])
    inputs = workflow[True]["workflow_dispatch"]["inputs"]
    assert {"paddle_version", "paddle_index", "paddle_nightly_index"} <= set(inputs)
    suite, gate, build = workflow["jobs"]["suite"], workflow["jobs"]["gate"], workflow["jobs"]["build"]
    assert {"self-hosted", "gpu", "nightly"} <= set(suite["runs-on"]) and gate["runs-on"] == suite["runs-on"]
    # the gate runs after every shard, also when one failed, and judges them as one run group
    assert "suite" in gate["needs"] and "!cancelled()" in gate["if"]

    # tonight's build is named once (the newest develop build unless a release is pinned), and every
    # job installs that one
    assert (
        inputs["paddle_version"]["default"] == "" and "nightly" in inputs["paddle_nightly_index"]["default"]
    )
    assert workflow["env"]["PADDLE_VERSION"].endswith("|| '' }}")
    resolve = shell_commands(step_named(build, "Name the build"))
    resolving = [c for c in resolve if c[:3] == ["benchmark", "night", "--resolve"] or "--resolve" in c]
    assert len(resolving) == 2 and any("$PADDLE_NIGHTLY_INDEX" in " ".join(c) for c in resolve)
    assert suite["needs"] == "build" and "build" in gate["needs"]
    shards = suite["strategy"]["matrix"]["shard"]
    assert len(shards) > 1 and suite["env"]["SHARDS"] == str(len(shards))
    assert not suite["strategy"]["fail-fast"]
    group = workflow["env"]["BENCHMARK_RUN_GROUP"]
    assert "github.run_id" in group and "github.run_attempt" in group

    # paddle from Paddle's index first, then the harness, whose gpu extra names no paddle
    for job, extra in ((suite, ".[gpu,test]"), (gate, ".[gpu,postgres]")):
        step = step_named(job, "Install")
        assert step["env"]["BUILD_VERSION"] == "${{ needs.build.outputs.version }}"
        install = shell_commands(step)
        paddle_at = next(i for i, c in enumerate(install) if "paddlepaddle-gpu==$BUILD_VERSION" in c)
        harness_at = next(i for i, c in enumerate(install) if c[:3] == ["pip", "install", "-e"])
        assert paddle_at < harness_at and install[harness_at][3] == extra
        assert install[paddle_at][install[paddle_at].index("-i") + 1] == "$BUILD_INDEX"
    # the night follows the gate: tonight's build, its CPU cases judged against the earlier nights
    night = " ".join(" ".join(c) for c in shell_commands(step_named(gate, "The night")))
    assert "benchmark night --python" in night and "--index-url $BUILD_INDEX" in night

    (run,) = pytest_calls(suite)
    targets, options = run
    assert targets == ["benchmark/"]
    assert options["--bench-place"] == options["--bench-require-place"] == "gpu"
    assert options["--bench-shard"] == "$SHARD/$SHARDS" and suite["env"]["SHARD"] == "${{ matrix.shard }}"
    assert options["--bench-run-group"] == "$BENCHMARK_RUN_GROUP"

    # the history: the secret's server, else an artifact the shards and the gate hand on
    for job in (suite, gate):
        assert step_named(job, "Choose the history database")["env"]["SECRET_DB_URL"] == (
            "${{ secrets.BENCHMARK_DB_URL }}"
        )
    # the upload is a single-file copy (`benchmark db backup`, the write-ahead log included), made
    # from the SQLite history the suite wrote, and restored under the name the suite opens
    uploaded = step_using(suite, "actions/upload-artifact@", name="${{ env.HISTORY_ARTIFACT }}")
    backup = step_named(suite, "A single-file copy of the history")
    assert shell_commands(backup) == [["benchmark", "db", "backup", uploaded["with"]["path"]]]
    assert backup["env"]["BENCHMARK_DB_URL"] == "${{ env.HISTORY_SQLITE_URL }}"
    assert suite["env"]["HISTORY_SQLITE_URL"].endswith("/results/history/history.sqlite")
    steps = suite["steps"]
    assert steps.index(backup) < steps.index(uploaded) and backup["if"] == uploaded["if"]
    for job in (suite, gate):
        downloaded = step_using(job, "actions/download-artifact@", name="${{ env.HISTORY_ARTIFACT }}")
        restored = f"{downloaded['with']['path'].replace('${{ runner.temp }}', '$RUNNER_TEMP')}/history-backup.sqlite"
        assert ["mv", restored, "results/history/history.sqlite"] in shell_commands(job)
    assert step_using(suite, "actions/github-script@")  # the previous night's artifact, found

    # the gate's exit status is the job's, its run group is the suite's, its notice is surfaced
    gate_step = shell_commands(step_named(gate, "Gate"))
    (gate_args,) = [parse_benchmark(c) for c in gate_step if c[0] == "benchmark"]
    assert gate_args.command == "gate" and gate_args.run_group == options["--bench-run-group"]
    assert gate_step[-1] == ["exit", "$status"]
    assert ["grep", "-q", "^notice: ", "results/gate.txt"] in gate_step
    commands = {parse_benchmark(c).command for c in shell_commands(gate) if c[0] == "benchmark"}
    assert {"gate", "report", "plot"} <= commands


def test_gpu_extra_does_not_pin_paddle():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert not any(dep.lower().startswith("paddlepaddle") for dep in extras["gpu"])


def test_pr_checks_job_order_and_database():
    workflow = load(ROOT / ".github/workflows/pr.yml")
    checks = workflow["jobs"]["checks"]
    commands = shell_commands(checks)

    def at(prefix: list[str]) -> int:
        return next(i for i, c in enumerate(commands) if c[: len(prefix)] == prefix)

    install = at(["pip", "install", "-e"])
    assert commands[install][3] == ".[cpu,test]"
    assert install < at(["pre-commit", "run", "--all-files"]) < at(["pytest", "tests/"])
    smoke = [(targets, options) for targets, options in pytest_calls(checks) if targets == ["benchmark/"]]
    assert len(smoke) == 1 and smoke[0][1]["--bench-tags"] == "smoke" and smoke[0][1]["--bench-quick"] is True
    assert at(["pytest", "tests/"]) < at(["pytest", "benchmark/"])
    # the PostgreSQL half of the tests reaches the service the job starts
    pg = checks["services"]["postgres"]
    url = checks["env"]["BENCHMARK_TEST_PG_URL"]
    assert f":{pg['env']['POSTGRES_PASSWORD']}@" in url and url.endswith(f"/{pg['env']['POSTGRES_DB']}")
    assert any(port.startswith(url.rsplit(":", 1)[1].split("/")[0] + ":") for port in pg["ports"])


def test_pr_gpu_smoke_runs_only_after_the_scope_job_and_without_secrets():
    workflow = load(ROOT / ".github/workflows/pr-gpu.yml")
    scope = workflow["jobs"]["scope"]
    assert scope["outputs"]["scope"] == "${{ steps.scope.outputs.scope }}"
    scope_step = next(step for step in scope["steps"] if step.get("id") == "scope")
    assert 'scope=$(benchmark pr-scope --base "$BASE_SHA" --head "$HEAD_SHA")' in scope_step["run"]
    # data only: the configs from git blobs, validated by the base code, handed on as an artifact
    take = step_named(scope, "Take the changed case configs")
    commands = shell_commands(take)
    extract = next(c for c in commands if c[:2] == ["benchmark", "pr-configs"])
    args = parse_benchmark(extract)
    assert (args.base, args.head) == ("$BASE_SHA", "$HEAD_SHA")
    # validated with the data-only budget (issue 44): the smoke subset's estimated cost
    validate = ["benchmark", "validate", "configs/", "--budget", "600", "--budget-tag", "smoke"]
    assert commands.index(extract) < commands.index(validate)
    handed = step_using(scope, "actions/upload-artifact@")
    assert handed["with"]["path"] == "${{ runner.temp }}/pr-configs/" and handed["if"] == take["if"]
    for name in ("gpu-smoke-data", "gpu-smoke-code"):
        gpu = workflow["jobs"][name]
        assert gpu["needs"] in ("scope", ["scope"]) and "needs.scope.outputs.scope" in gpu["if"]
        assert "secrets." not in yaml.safe_dump(gpu)
        ((targets, options),) = pytest_calls(gpu)
        assert (
            targets == ["benchmark/"]
            and options["--bench-place"] == "gpu"
            and options["--bench-no-store"] is True
        )
        validate = shell_commands(gpu).index(["benchmark", "validate", "configs/"])
        assert validate < len(shell_commands(gpu)) - 1  # validated before the suite runs
    data = workflow["jobs"]["gpu-smoke-data"]
    got = step_using(data, "actions/download-artifact@")
    assert got["with"]["name"] == handed["with"]["name"]
    # one data-only pull request on the GPU runners at a time, across all of them
    assert data["concurrency"] == {"group": "pr-gpu-data-only", "cancel-in-progress": False}


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


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_benchmark_command_line_parses(path):
    for argv in shell_commands({"steps": [s for j in load(path)["jobs"].values() for s in j["steps"]]}):
        if argv[0] == "benchmark":
            parse_benchmark(argv)


def test_shell_command_splitting():
    step = {
        "run": 'mkdir -p x && benchmark gate --run-group "$G" > out.txt 2>&1\n# note\nexit "$s"; echo a | b\n'
    }
    assert shell_commands(step) == [
        ["mkdir", "-p", "x"],
        ["benchmark", "gate", "--run-group", "$G"],
        ["exit", "$s"],
        ["echo", "a"],
        ["b"],
    ]
    call = {"run": "pytest benchmark/ --bench-quick --bench-tags smoke --x=1 \\\n  --bench-no-store"}
    assert pytest_calls(call) == [
        (
            ["benchmark/"],
            {"--bench-quick": True, "--bench-tags": "smoke", "--x": "1", "--bench-no-store": True},
        )
    ]


def test_package_data_lists_files_that_exist():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for package, patterns in config["tool"]["setuptools"]["package-data"].items():
        for pattern in patterns:
            assert list((ROOT / package).glob(pattern)), f"package-data {package}/{pattern} matches no file"


def test_the_license_is_the_one_pyproject_names():
    import tomllib

    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
