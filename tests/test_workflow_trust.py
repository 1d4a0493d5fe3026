"""The CI trust boundary, asserted on the parsed workflow files (docs/ci.md).

`problems(...)` reads one workflow and lists every breach of the rules below; the real workflows must
have none, and each rule is shown to catch a hostile variant (so the checks can fail).

- A workflow that runs on `pull_request` (the pull request's own copy of the file) has no self-hosted
  job, no secret and no write permission.
- A privileged workflow (`pull_request_target`, `workflow_run`, `issue_comment`: the base branch's copy,
  with a token of the base repository) declares `permissions: {}` at the top, never checks out or runs
  the pull request's code, except in a job gated by the `run-gpu` label on the labelled event, which
  checks out exactly the labelled SHA after a step that refuses a moved head and asks for an
  approving review of exactly that SHA.
- A self-hosted job of a privileged workflow runs on the ephemeral label, never the nightly's, with
  no secret and no write permission.
- Every `uses:` is pinned to a 40-hex commit with the tag in a comment.
- No secret is written to GITHUB_ENV, or appears outside a step's `env:`.
- The nightly restores its history only from this run or its own scheduled runs on the default branch.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
PRIVILEGED = {"pull_request_target", "workflow_run", "issue_comment"}
EPHEMERAL, NIGHTLY = "ephemeral", "nightly"
LABEL_GATE = ("github.event.action == 'labeled'", "github.event.label.name == 'run-gpu'")
HEAD_REFS = re.compile(r"pull_request\.head|head_ref|workflow_run\.head|refs/pull/|FETCH_HEAD|HEAD_SHA")
RUNS_CODE = re.compile(r"\bgit\s+(checkout|switch|worktree|reset|restore|archive|stash)\b|\bxargs\b")
PINNED = re.compile(r"^\s*(?:-\s+)?uses:\s+[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*\b")


def triggers(workflow: dict) -> set[str]:
    on = workflow.get(True, workflow.get("on"))
    return {on} if isinstance(on, str) else set(on)


def labels(job: dict) -> set[str]:
    runs_on = job["runs-on"]
    return {runs_on} if isinstance(runs_on, str) else set(runs_on)


def writes(permissions) -> bool:
    if permissions is None:
        return True  # the repository default may be write-all
    if isinstance(permissions, str):
        return permissions != "read-all"
    return any(level == "write" for level in permissions.values())


def secrets_in(node) -> list[str]:
    return re.findall(r"secrets\.(\w+)", yaml.safe_dump(node))


def checks_out_head(step: dict) -> bool:
    ref = str(step.get("with", {}).get("ref", ""))
    return step.get("uses", "").startswith("actions/checkout@") and bool(HEAD_REFS.search(ref))


def problems(text: str) -> list[str]:
    """Every breach of the trust rules in one workflow file's text."""
    workflow = yaml.safe_load(text)
    on = triggers(workflow)
    out: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if re.match(r"^\s*(?:-\s+)?uses:", line) and not PINNED.match(line):
            out.append(f"line {n}: not pinned to a commit with its tag in a comment: {line.strip()}")
    privileged = bool(on & PRIVILEGED)
    if privileged and workflow.get("permissions") != {}:
        out.append("a privileged workflow must declare `permissions: {}` at the top")
    for job_id, job in workflow["jobs"].items():
        where = f"job {job_id}"
        steps = job.get("steps", [])
        self_hosted = "self-hosted" in labels(job)
        if "pull_request" in on:
            if self_hosted:
                out.append(f"{where}: a self-hosted runner under `pull_request`")
            if [s for s in secrets_in(job) if s != "GITHUB_TOKEN"]:
                out.append(f"{where}: a secret under `pull_request`")
            if writes(job.get("permissions", workflow.get("permissions"))):
                out.append(f"{where}: write permission under `pull_request`")
        if privileged:
            gated = all(cond in str(job.get("if", "")) for cond in LABEL_GATE)
            for i, step in enumerate(steps):
                if checks_out_head(step):
                    if not gated:
                        out.append(f"{where}: checks out the pull request's head without the run-gpu label")
                    elif step["with"]["ref"] != "${{ github.event.pull_request.head.sha }}":
                        out.append(f"{where}: checks out {step['with']['ref']}, not the labelled SHA")
                    elif not any("head.sha !== process.env.HEAD_SHA" in str(s) for s in steps[:i]):
                        out.append(f"{where}: no step before the checkout refuses a moved head")
                    elif not any(
                        "'APPROVED' && r.commit_id === process.env.HEAD_SHA" in str(s) for s in steps[:i]
                    ):
                        # the label does not bind a commit (issue 44): an approving review of it does
                        out.append(
                            f"{where}: no step before the checkout asks for an approving review of the SHA"
                        )
                    elif step["with"].get("persist-credentials") is not False:
                        out.append(f"{where}: the token stays in the checkout of pull-request code")
                if RUNS_CODE.search(step.get("run", "")):
                    out.append(f"{where}: a `run:` step checks out files or uses xargs")
            if self_hosted:
                if EPHEMERAL not in labels(job) or NIGHTLY in labels(job):
                    out.append(f"{where}: a privileged self-hosted job off the ephemeral label")
                if secrets_in(job):
                    out.append(f"{where}: a secret on the ephemeral GPU runner")
                if writes(job.get("permissions")):
                    out.append(f"{where}: write permission on the ephemeral GPU runner")
        for step in steps:
            run = step.get("run", "")
            if "GITHUB_ENV" in run and (secrets_in(step) or "SECRET" in run):
                out.append(f"{where}: a secret written to GITHUB_ENV")
            if secrets_in({k: v for k, v in step.items() if k not in ("env", "with")}):
                out.append(f"{where}: a secret outside a step's env")
            if [s for s in secrets_in(step.get("with", {})) if s != "GITHUB_TOKEN"]:
                out.append(f"{where}: a secret handed to an action")
        if secrets_in(job.get("env", {})):
            out.append(f"{where}: a secret in the job's env (every step sees it)")
    if secrets_in(workflow.get("env", {})):
        out.append("a secret in the workflow's env")
    return out


def workflow_text(name: str) -> str:
    return (WORKFLOWS / name).read_text()


def load(name: str) -> dict:
    return yaml.safe_load(workflow_text(name))


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.y*ml")), ids=lambda p: p.name)
def test_the_workflows_keep_the_trust_rules(path):
    assert problems(path.read_text()) == []


def test_pull_request_jobs_run_on_hosted_runners_only():
    for path in sorted(WORKFLOWS.glob("*.y*ml")):
        workflow = yaml.safe_load(path.read_text())
        if "pull_request" in triggers(workflow):
            for job_id, job in workflow["jobs"].items():
                assert labels(job) <= {"ubuntu-latest"}, f"{path.name}: job {job_id} runs on {labels(job)}"


def test_the_pr_gpu_jobs_and_the_nightly_never_share_a_runner():
    pr, nightly = load("pr-gpu.yml"), load("nightly-gpu.yml")
    pr_gpu = [job for job in pr["jobs"].values() if "self-hosted" in labels(job)]
    assert len(pr_gpu) == 2
    for job in pr_gpu:
        assert EPHEMERAL in labels(job) and job["permissions"].get("contents") == "read"
        for nightly_job in nightly["jobs"].values():
            # a runner takes a job when it carries every label the job names: a runner with the
            # nightly's labels lacks `ephemeral`, an ephemeral one lacks `nightly`
            assert not labels(job) <= labels(nightly_job) and not labels(nightly_job) <= labels(job)
    assert triggers(pr) == {"pull_request_target"} and pr["permissions"] == {}
    # a later push or another label does not cancel the run that the run-gpu label approved
    assert "github.event.label.name" in pr["concurrency"]["group"]


def test_only_the_labelled_commit_of_a_code_change_runs_and_only_on_the_label():
    job = load("pr-gpu.yml")["jobs"]["gpu-smoke-code"]
    assert (
        all(cond in job["if"] for cond in LABEL_GATE) and "needs.scope.outputs.scope == 'code'" in job["if"]
    )
    (checkout,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@")]
    guard = job["steps"][0]
    assert guard["uses"].startswith("actions/github-script@") and "core.setFailed" in guard["with"]["script"]
    assert job["steps"].index(guard) < job["steps"].index(checkout)
    assert checkout["with"]["ref"] == "${{ github.event.pull_request.head.sha }}"
    env = load("pr-gpu.yml")["env"]
    assert env["HEAD_SHA"] == "${{ github.event.pull_request.head.sha }}"
    # the data-only jobs run the base commit's code
    for name in ("scope", "gpu-smoke-data"):
        (base,) = [
            s
            for s in load("pr-gpu.yml")["jobs"][name]["steps"]
            if s.get("uses", "").startswith("actions/checkout@")
        ]
        assert base["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"


def test_the_scope_job_refuses_a_moved_head_and_fetches_objects_only():
    scope = load("pr-gpu.yml")["jobs"]["scope"]
    fetch = next(s for s in scope["steps"] if s.get("name", "").startswith("Fetch the pull request's head"))
    assert 'git fetch --no-tags origin "refs/pull/$PR_NUMBER/head"' in fetch["run"]
    assert '[ "$current" != "$HEAD_SHA" ]' in fetch["run"] and "exit 1" in fetch["run"]
    assert labels(scope) == {"ubuntu-latest"}


def test_the_nightly_restores_only_its_own_scheduled_runs_on_the_default_branch():
    suite = load("nightly-gpu.yml")["jobs"]["suite"]
    find = next(s for s in suite["steps"] if s.get("id") == "restore")
    script = find["with"]["script"]
    assert "listArtifactsForRepo" not in script
    assert "workflow_id: 'nightly-gpu.yml'" in script and "event: 'schedule'" in script
    assert "branch = (await github.rest.repos.get({ owner, repo })).data.default_branch" in script
    assert "r.event === 'schedule' && r.head_branch === branch" in script
    assert "r.head_repository.full_name === `${owner}/${repo}`" in script
    download = next(s for s in suite["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["run-id"] == "${{ steps.restore.outputs.run-id }}"
    assert download["if"] == "steps.restore.outputs.run-id != ''"
    for path in WORKFLOWS.glob("*.y*ml"):
        assert "listArtifactsForRepo" not in path.read_text()


def test_the_database_secret_reaches_only_the_steps_that_open_the_history():
    for job in load("nightly-gpu.yml")["jobs"].values():
        for step in job["steps"]:
            if "BENCHMARK_DB_URL" in secrets_in(step):
                assert "GITHUB_ENV" not in step.get("run", "")
                assert re.search(r"\bbenchmark\b|\bpytest\b", step.get("run", "")) or step.get("env", {}).get(
                    "SECRET_DB_URL"
                )


HOSTILE = {
    "self-hosted under pull_request": (
        "on: pull_request\njobs:\n  x:\n    runs-on: [self-hosted, gpu]\n    permissions: {}\n"
        "    steps:\n      - run: make\n",
        "a self-hosted runner under `pull_request`",
    ),
    "unpinned action": (
        "on: push\npermissions: {}\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n",
        "not pinned to a commit",
    ),
    "head checked out under pull_request_target": (
        "on: pull_request_target\npermissions: {}\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1\n"
        "        with:\n          ref: ${{ github.event.pull_request.head.sha }}\n",
        "checks out the pull request's head without the run-gpu label",
    ),
    "labelled checkout without the moved-head check": (
        "on: pull_request_target\npermissions: {}\njobs:\n  x:\n"
        "    if: github.event.action == 'labeled' && github.event.label.name == 'run-gpu'\n"
        "    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1\n"
        "        with:\n          ref: ${{ github.event.pull_request.head.sha }}\n",
        "no step before the checkout refuses a moved head",
    ),
    "labelled checkout bound by the label alone (the label race)": (
        "on: pull_request_target\npermissions: {}\njobs:\n  x:\n"
        "    if: github.event.action == 'labeled' && github.event.label.name == 'run-gpu'\n"
        "    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/github-script@ed597411d8f924073f98dfc5c65a23a2325f34cd # v8.0.0\n"
        "        with:\n          script: if (data.head.sha !== process.env.HEAD_SHA) { core.setFailed('moved'); }\n"
        "      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1\n"
        "        with:\n          ref: ${{ github.event.pull_request.head.sha }}\n",
        "no step before the checkout asks for an approving review of the SHA",
    ),
    "xargs checkout of pull-request files": (
        "on: workflow_run\npermissions: {}\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: git diff --name-only A...B | xargs git checkout B --\n",
        "checks out files or uses xargs",
    ),
    "privileged job on the nightly runner": (
        "on: pull_request_target\npermissions: {}\njobs:\n  x:\n    runs-on: [self-hosted, gpu, nightly]\n"
        "    permissions: {contents: read}\n    steps:\n      - run: make\n",
        "off the ephemeral label",
    ),
    "secret on the ephemeral runner": (
        "on: pull_request_target\npermissions: {}\njobs:\n  x:\n    runs-on: [self-hosted, gpu, ephemeral]\n"
        "    permissions: {contents: read}\n    steps:\n      - run: make\n"
        "        env:\n          T: ${{ secrets.TOKEN }}\n",
        "a secret on the ephemeral GPU runner",
    ),
    "write token on the ephemeral runner": (
        "on: pull_request_target\npermissions: {}\njobs:\n  x:\n    runs-on: [self-hosted, gpu, ephemeral]\n"
        "    permissions: {contents: write}\n    steps:\n      - run: make\n",
        "write permission on the ephemeral GPU runner",
    ),
    "privileged workflow with default permissions": (
        "on: pull_request_target\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make\n",
        "must declare `permissions: {}`",
    ),
    "secret into GITHUB_ENV": (
        "on: schedule\npermissions: {}\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        '      - run: echo "URL=$SECRET_DB_URL" >> "$GITHUB_ENV"\n'
        "        env:\n          SECRET_DB_URL: ${{ secrets.BENCHMARK_DB_URL }}\n",
        "a secret written to GITHUB_ENV",
    ),
    "secret in a job's env": (
        "on: schedule\npermissions: {}\njobs:\n  x:\n    runs-on: ubuntu-latest\n"
        "    env:\n      URL: ${{ secrets.BENCHMARK_DB_URL }}\n    steps:\n      - run: make\n",
        "a secret in the job's env",
    ),
}


@pytest.mark.parametrize("text, expected", HOSTILE.values(), ids=HOSTILE.keys())
def test_each_rule_catches_a_hostile_workflow(text, expected):
    found = problems(text)
    assert any(expected in p for p in found), found
