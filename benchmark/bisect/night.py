"""A night: one run of the selection on one build of paddle, judged against the earlier nights of
this machine, and, for each case the judge says regressed, an automatic bisection that names the
culprit range (`benchmark night`; backfill makes the nights of earlier builds).

The flow of one night (:func:`play_night`):

1. The build: the newest on the index (`index.newest_build`), a pinned version, or an interpreter
   given as it is. Its environment is made once and cached (`index.BuildEnvs`, uv).
2. The selection's CPU cases are counted under callgrind in that interpreter (as `benchmark
   bisect` counts a build) and stored as one complete run, trigger ``night``, run group
   ``night-<date>-<version>``, its machine fingerprint suffixed ``/night`` so that the nights form
   their own series (a night is never judged against an ad-hoc run of another paddle, nor becomes
   one's baseline). ``run.extra["night"]`` records the build: package, version as installed,
   ``paddle.version.commit``, the build's date (and where the date came from), the index, the
   wheel's file and sha256, and each case's value.
3. The judge (:func:`benchmark.gate.judge.judge`, the one behind `benchmark gate`) decides each
   case against the earlier nights; its verdicts go into ``run.extra["night"]["verdicts"]``.
4. Each case that regressed (never an improvement) is bisected over the builds the index holds
   between the last night that passed for that case and tonight (:func:`bisect_failures`); all
   failing cases share the builds they need, a budget bounds the whole bisection, and the values
   the two nights already measured are not measured again. With ``--repo``/``--build`` the step
   found between two builds is then bisected over the commits between their paddle commits.
   A case whose regression an earlier night already bisected (its record names the case and the
   range) is reported as standing, with that range, and not bisected again, unless tonight is
   worse again by the threshold than the night that found it. A night whose build is the same as
   the last night's (the same wheel, or the same paddle commit) is recorded so and not bisected.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from benchmark.bisect.builds import BuildError, CommitEnvs, WheelCache, repo_commits
from benchmark.bisect.counting import count_build
from benchmark.bisect.index import Build, BuildEnvs, builds_between, index_builds
from benchmark.bisect.search import INTERRUPTED, STEP, SearchResult, search
from benchmark.datamodel import environment
from benchmark.gate.judge import judge
from benchmark.gate.settings import load_gates
from benchmark.paths import GATES_PATH
from benchmark.store import open_store

if TYPE_CHECKING:
    from benchmark.datamodel.case import Case
    from benchmark.datamodel.result import CaseResult
    from benchmark.datamodel.verdict import Decision
    from benchmark.instructions.callgrind import Tooling

TRIGGER = "night"
FINGERPRINT_SUFFIX = "/night"
KEY = "night"  # the key of run.extra
DEFAULT_UPSTREAM = "https://github.com/PaddlePaddle/Paddle"
PASSING = ("pass", "new", "improvement", "inconclusive")


class BudgetSpent(KeyboardInterrupt):
    """The bisection's budget ran out: the search stops as on Ctrl-C, keeping what it measured."""


@dataclasses.dataclass
class NightSettings:
    """What every night of one invocation shares (the command's options)."""

    cases: Sequence[Case]
    db_url: str
    root: Path
    tooling: Tooling
    thresholds: Mapping[str, float]  # case id -> the bisection's threshold (min_effect + noise floor)
    gates_path: str | None = None
    jobs: int = 1
    budget_s: float = 1800.0
    bisect: bool = True
    repo: str | None = None
    build_cmd: str | None = None
    base: str | None = None
    upstream: str = DEFAULT_UPSTREAM
    selection: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    package: str | None = None  # recorded for a night of an interpreter given as it is
    index: str | None = None
    say: Callable[[str], None] = lambda line: None


def machine_description() -> environment.MachineDescription:
    machine = environment.collect_machine()
    fp = machine.get("fingerprint") or environment.fingerprint(machine)
    return environment.MachineDescription.of({**machine, "fingerprint": f"{fp}{FINGERPRINT_SUFFIX}"})


def earlier_nights(store, machine: str, before_run: int | None = None) -> list:
    """The complete nights of this machine (fingerprint with the suffix), oldest first."""
    runs = [
        r
        for r in store.runs(limit=None)
        if r.trigger == TRIGGER and r.machine == machine and r.status == "complete" and KEY in r.extra
    ]
    if before_run is not None:
        runs = [r for r in runs if r.id < before_run]
    return sorted(runs, key=lambda r: (r.started_at, r.id))


def compare_url(upstream: str, good: str | None, bad: str | None) -> str | None:
    """The upstream comparison of two commits (GitHub's compare view), None when one is unknown."""
    if not good or not bad or good == bad:
        return None
    return f"{upstream.rstrip('/')}/compare/{good}...{bad}"


def same_build(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two nights' builds are the same: the same wheel (version and sha256), or the same version and
    paddle commit when no hash is known (an interpreter given as it is)."""
    if a.get("sha256") and b.get("sha256"):
        return a["sha256"] == b["sha256"] and a.get("version") == b.get("version")
    return (a.get("version"), a.get("commit")) == (b.get("version"), b.get("commit")) and bool(
        a.get("commit")
    )


def play_night(s: NightSettings, *, build: Build | None = None, python: str | None = None,
               envs: BuildEnvs | None = None, index_list: Sequence[Build] | None = None,
               backfill: bool = False) -> dict[str, Any]:  # fmt: skip
    """One night (see the module): returns its record (``run.extra["night"]`` plus ``run_id``).
    Give `build` (with `envs`, which makes its interpreter) or `python` (taken as it is).
    `index_list`: the index's builds, for the bisection (default: read again from the index)."""
    say = s.say
    if build is not None:
        assert envs is not None
        python = envs.python_for(build.version)
        label = build.version
    else:
        assert python is not None
        label = "given"
    started = time.monotonic()
    results: dict[str, CaseResult] = {}
    sides: dict = {}
    values = count_build(label, python, list(s.cases), root=s.root, tooling=s.tooling, say=say,
                         results=results, sides=sides, jobs=s.jobs)  # fmt: skip
    if values is None:
        raise BuildError(f"build {label}: its interpreter cannot run the harness (said above)")
    side = sides["side"]
    framework = dict(side.info.get("framework") or {})
    record: dict[str, Any] = {
        "build": {
            **(build.to_dict() if build is not None else {"python": python}),
            "installed_version": framework.get("paddle_version"),
            "commit": framework.get("paddle_commit"),
        },
        "backfill": backfill,
        "metric": "instructions",
        "values": {k: v for k, v in values.items() if v is not None},
        "measure_s": round(time.monotonic() - started, 1),
    }
    if build is None:
        record["build"]["version"] = framework.get("paddle_version")
        record["build"]["date"] = dt.datetime.now(dt.timezone.utc).date().isoformat()
        record["build"]["date_source"] = "tonight"
        record["build"].update(package=s.package, index=s.index)
    version = record["build"]["version"]
    stands_for = record["build"].get("date") or dt.datetime.now(dt.timezone.utc).date().isoformat()
    record["stands_for"] = stands_for
    machine = machine_description()
    with open_store(s.db_url) as store:
        earlier = earlier_nights(store, machine.fingerprint)
        last = earlier[-1] if earlier else None
        if last is not None and same_build(last.extra[KEY].get("build", {}), record["build"]):
            record["same_build_as"] = last.id
        run = environment.collect_run(framework, trigger=TRIGGER, cwd=s.root)
        note = f"night {stands_for}: {record['build'].get('package') or 'paddle'} {version}" + (
            " (backfill)" if backfill else ""
        )
        run.update(run_group=f"night-{stands_for}-{version}", expected_results=len(results), note=note,
                   extra={KEY: record, "selection": dict(s.selection)})  # fmt: skip
        run_id = store.begin_run(machine, environment.RunDescription.of(run))
        store.add_results(run_id, list(results.values()))
        store.finish_run(run_id, "complete", note=note)
        say(f"night: stored run {run_id} ({note})")
        # the judge's decisions on the instruction series, by the id the night keys everything by
        ids = {(c.case_id, c.place, c.mode): c.id for c in s.cases}
        decisions = [d for d in _judge(store, run_id, s.gates_path)
                     if d.metric == "instructions" and (d.case_id, d.place, d.mode) in ids]  # fmt: skip
        record["verdicts"] = {ids[d.case_id, d.place, d.mode]: str(d.verdict) for d in decisions}
        record["effects"] = {
            ids[d.case_id, d.place, d.mode]: d.effect for d in decisions if d.effect == d.effect
        }
        store.set_run_extra(run_id, KEY, record)
        failing = to_bisect(decisions, ids)
        if failing and s.bisect and "same_build_as" not in record:
            record["bisections"] = bisect_failures(
                s, failing, record, earlier, envs, index_list, label_python=python
            )
        elif failing and "same_build_as" in record:
            record["bisections"] = [{"case": case, "status": "same-build",
                                     "message": f"the same build as night run {record['same_build_as']}: not bisected"}
                                    for case, _ in failing]  # fmt: skip
        elif failing:
            record["bisections"] = [{"case": case, "status": "not-bisected", "message": "bisection off"}
                                    for case, _ in failing]  # fmt: skip
        record["seconds"] = round(time.monotonic() - started, 1)
        store.set_run_extra(run_id, KEY, record)
    record["run_id"] = run_id
    return record


def to_bisect(
    decisions: Sequence[Decision], ids: Mapping[tuple[str, str, str], str]
) -> list[tuple[str, Decision]]:
    """The decisions a night bisects, by the night's case id: regressions only (an improvement is
    reported as one and never bisected; a case that errored or failed its check has no value to
    bisect on)."""
    return [(ids[d.case_id, d.place, d.mode], d) for d in decisions if d.verdict == "regression"]


def _judge(store, run_id: int, gates_path: str | None) -> list[Decision]:
    return judge(store, [run_id], load_gates(gates_path or GATES_PATH)).decisions


# ---- the automatic bisection -----------------------------------------------------------------


def last_passing_night(earlier: Sequence, case_id: str):
    """The newest earlier night whose verdict for `case_id` passed (with its value), else None."""
    for r in reversed(earlier):
        night = r.extra[KEY]
        if night.get("verdicts", {}).get(case_id) in PASSING and case_id in night.get("values", {}):
            return r
    return None


def known_bisection(earlier: Sequence, case_id: str) -> tuple[Any, dict[str, Any]] | None:
    """The newest earlier night's record of a bisection of `case_id` that found its range (a step,
    or a standing regression it carried on): (that night, the record)."""
    for r in reversed(earlier):
        for b in r.extra[KEY].get("bisections", []):
            if b.get("case") == case_id and b.get("status") in (STEP, "standing") and b.get("first_bad"):
                return r, b
    return None


def bisect_failures(s: NightSettings, failing: Sequence[tuple[str, Decision]], tonight: dict[str, Any], earlier: Sequence,
                    envs: BuildEnvs | None, index_list: Sequence[Build] | None, *, label_python: str) -> list[dict]:  # fmt: skip
    """One record per failing case (its id, the judge's decision): its culprit range from a bisection over the index's builds
    (then over commits with --repo/--build), or why it was not bisected. See the module."""
    say = s.say
    out: list[dict[str, Any]] = []
    version = tonight["build"]["version"]
    ranges: dict[str, tuple[Any, float]] = {}  # case -> (the night it starts from, its value there)
    for case, d in failing:
        value = tonight["values"].get(case)
        threshold = s.thresholds.get(case, d.min_effect)
        known = known_bisection(earlier, case)
        if known is not None:
            night, b = known
            level = night.extra[KEY]["values"].get(case)
            if level and value is not None and value < level * (1 + threshold):
                standing = {k: b.get(k) for k in ("last_good", "first_bad", "good_commit", "bad_commit", "compare",
                                                  "effect", "commits")}  # fmt: skip
                out.append({"case": case, "status": "standing", **standing, "bisected_in": b.get("bisected_in") or night.id,
                            "night_effect": d.effect,
                            "message": f"standing regression, bisected in night run {b.get('bisected_in') or night.id}: "
                                       f"{b.get('last_good')} -> {b.get('first_bad')}; not bisected again"})  # fmt: skip
                continue
            start = night  # worse again: bisect from the night that held the known level
        else:
            start = last_passing_night(earlier, case)
        if start is None:
            out.append(
                {"case": case, "status": "no-good-night", "message": "no earlier night passed for this case"}
            )
            continue
        ranges[case] = (start, start.extra[KEY]["values"][case])
    if not ranges:
        return out
    good_versions = {case: night.extra[KEY]["build"]["version"] for case, (night, _) in ranges.items()}
    try:
        listing = list(index_list) if index_list is not None else None
        labels, commits = _range_labels(listing, good_versions, version, envs)
    except BuildError as e:
        for case in ranges:
            out.append({"case": case, "status": "no-builds", "message": str(e)})
        return out
    n = len(labels)
    seeds: dict[int, dict[str, float]] = {n - 1: dict(tonight["values"])}
    commits[n - 1] = tonight["build"].get("commit")
    start_of: dict[str, int] = {}
    for case, (night, level) in ranges.items():
        i = labels.index(night.extra[KEY]["build"]["version"])
        start_of[case] = i
        seeds.setdefault(i, {})[case] = level
        commits.setdefault(i, night.extra[KEY]["build"].get("commit"))
    deadline = time.monotonic() + s.budget_s
    measured: dict[int, dict[str, float | None]] = {i: dict(v) for i, v in seeds.items()}
    counted: list[str] = []
    cases_by_id = {c.id: c for c in s.cases}

    def measure(i: int, case: str) -> float | None:
        if case in measured.get(i, {}):
            return measured[i][case]
        if time.monotonic() >= deadline:
            raise BudgetSpent
        wanted = [c for c, first in start_of.items() if first <= i and c not in measured.get(i, {})]
        python = label_python if i == n - 1 else None
        try:
            python = python or (envs.python_for(labels[i]) if envs is not None else None)
        except BuildError as e:
            say(f"night: skipping build {labels[i]}: {e}")
            measured.setdefault(i, {}).update(dict.fromkeys(wanted))
            return None
        if python is None:
            measured.setdefault(i, {}).update(dict.fromkeys(wanted))
            return None
        sides: dict = {}
        got = count_build(labels[i], python, [cases_by_id[c] for c in wanted], root=s.root, tooling=s.tooling,
                          say=say, sides=sides, jobs=s.jobs)  # fmt: skip
        counted.append(labels[i])
        if sides.get("side") is not None:
            commits[i] = (sides["side"].info.get("framework") or {}).get("paddle_commit")
        measured.setdefault(i, {}).update(got or dict.fromkeys(wanted))
        return measured[i].get(case)

    started = time.monotonic()
    for case, first in start_of.items():
        threshold = s.thresholds.get(case, 0.012)
        if n - first < 2:
            out.append(
                {
                    "case": case,
                    "status": "no-builds",
                    "message": f"no build between {labels[first]} and tonight",
                }
            )
            continue
        r = search(n - first, lambda j, case=case, first=first: measure(first + j, case), threshold)
        out.append(_record(case, r, labels[first:], {j - first: c for j, c in commits.items() if j >= first},
                           s, tonight))  # fmt: skip
        if r.status == INTERRUPTED:
            out[-1]["status"] = "budget-spent"
            out[-1]["message"] = _budget_message(r, labels[first:])
    spent = round(time.monotonic() - started, 1)
    for b in out:
        b.setdefault("bisected_in", None)
        if b.get("status") in (STEP, "budget-spent"):
            b["builds_counted"] = list(counted)
            b["seconds"] = spent
    if s.repo and s.build_cmd:
        for b in out:
            if b.get("status") == STEP and b.get("good_commit") and b.get("bad_commit"):
                b["commits"] = _bisect_commits(s, b, deadline)
    return out


def _range_labels(listing: list[Build] | None, good_versions: Mapping[str, str], version: str,
                  envs: BuildEnvs | None) -> tuple[list[str], dict[int, str | None]]:  # fmt: skip
    """The versions from the oldest last-good build to tonight's, oldest first; without an index
    (an interpreter given as it is) only the two nights themselves."""
    oldest = min(good_versions.values(), key=Version)
    if listing is None or envs is None:
        ends = sorted({*good_versions.values(), version}, key=Version)
        return ends, {}
    between = builds_between(listing, oldest, version)
    for b in between:
        envs.builds.setdefault(b.version, b)
    return [b.version for b in between], {}


def _record(case: str, r: SearchResult, labels: Sequence[str], commits: Mapping[int, str | None], s: NightSettings,
            tonight: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    doc: dict[str, Any] = {"case": case, "status": r.status, "message": r.message, "threshold": r.threshold,
                           "builds": list(labels), "values": {labels[i]: v for i, v in sorted(r.values.items())},
                           "skipped": [labels[i] for i in sorted(r.skipped)]}  # fmt: skip
    if r.good is not None and r.bad is not None:
        doc["last_good"], doc["first_bad"] = labels[r.good], labels[r.bad]
        doc["good_commit"], doc["bad_commit"] = commits.get(r.good), commits.get(r.bad)
        doc["effect"] = r.effect
        doc["compare"] = compare_url(s.upstream, doc["good_commit"], doc["bad_commit"])
        doc["left"] = [labels[i] for i in r.left()]
    if r.status == STEP:
        doc["message"] = f"{labels[r.good]} -> {labels[r.bad]} ({r.effect:+.2%})"
    return doc


def _budget_message(r: SearchResult, labels: Sequence[str]) -> str:
    if r.good is None or r.bad is None:
        return "the budget ran out before the two ends were measured"
    left = r.left()
    return (
        f"the budget ran out: the step is between {labels[r.good]} and {labels[r.bad]} "
        f"({len(left)} build(s) between them not measured: {', '.join(labels[i] for i in left) or '-'})"
    )


def _bisect_commits(s: NightSettings, b: dict[str, Any], deadline: float) -> dict[str, Any]:
    """The step between two builds, narrowed over the commits between their paddle commits (each
    commit built by --build once and cached, as `benchmark bisect --repo` does)."""
    assert s.repo and s.build_cmd
    try:
        commits = repo_commits(Path(s.repo), b["good_commit"], b["bad_commit"])
    except BuildError as e:
        return {"status": "no-commits", "message": str(e)}
    wheels = WheelCache(Path(s.repo), s.build_cmd, say=s.say)
    envs = CommitEnvs(wheels, base=s.base, say=s.say)
    case = next(c for c in s.cases if c.id == b["case"])
    memo: dict[int, float | None] = {}

    def measure(i: int) -> float | None:
        if i in memo:
            return memo[i]
        if time.monotonic() >= deadline:
            raise BudgetSpent
        try:
            python = envs.python_for(commits[i])
        except BuildError as e:
            s.say(f"night: skipping commit {commits[i][:12]}: {e}")
            memo[i] = None
            return None
        got = count_build(commits[i][:12], python, [case], root=s.root, tooling=s.tooling, say=s.say, jobs=1)
        memo[i] = (got or {}).get(case.id)
        return memo[i]

    r = search(len(commits), measure, b["threshold"])
    doc: dict[str, Any] = {"status": "budget-spent" if r.status == INTERRUPTED else r.status, "message": r.message,
                           "commits": len(commits), "counted": len(r.values)}  # fmt: skip
    if r.good is not None and r.bad is not None:
        doc["last_good"], doc["first_bad"] = commits[r.good], commits[r.bad]
        doc["effect"] = r.effect
        doc["compare"] = compare_url(s.upstream, commits[r.good], commits[r.bad])
    return doc


# ---- backfill --------------------------------------------------------------------------------


def nights_done(db_url: str) -> set[str]:
    """The build keys of this machine's complete nights (a backfill skips them: it resumes)."""
    machine = machine_description()
    with open_store(db_url) as store:
        return {_key(r.extra[KEY].get("build", {})) for r in earlier_nights(store, machine.fingerprint)}


def _key(build: Mapping[str, Any]) -> str:
    return (
        f"{build.get('version')}#{build.get('sha256')}" if build.get("sha256") else str(build.get("version"))
    )


def backfill(s: NightSettings, package: str, index: str, count: int, *, newest: str | None = None,
             envs: BuildEnvs | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The nights of the last `count` builds on the index (up to version `newest`), oldest first,
    each recorded as the night it stands for; builds already played are skipped, so an interrupted
    backfill resumes where it stopped."""
    builds = index_builds(package, index)
    if newest is not None:
        builds = [b for b in builds if Version(b.version) <= Version(newest)]
        if not builds:
            raise BuildError(f"{index}: no build of {package} up to {newest}")
    chosen = builds[-count:]
    envs = envs or BuildEnvs(builds, say=s.say)
    done = nights_done(s.db_url)
    out = []
    for i, b in enumerate(chosen, 1):
        if b.key in done:
            s.say(f"night: backfill {i}/{len(chosen)}: {b.version} already played, skipped")
            continue
        s.say(f"night: backfill {i}/{len(chosen)}: {b.version} (stands for {b.date})")
        out.append(play_night(s, build=b, envs=envs, index_list=builds, backfill=True))
    return out
