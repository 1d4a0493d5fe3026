"""`benchmark compare`: two environments (e.g. the develop build and a PR build of paddle) measured
in one job, on one machine, with sequential stopping.

Each side is an interpreter (VENV/bin/python) with its own paddle; the harness's code comes from
this checkout (its root goes first on the workers' PYTHONPATH), so only the framework differs.
The job runs in *steps*. A step starts a fresh worker process of side A and one of side B, in a
random order; each serves one timing trial (`time` task: prepare, warm up, calibrated rounds) of
every case still open, in a random permutation of its own. The two trials of a case in one step
form a *pair*; after the step every open case gets the sequential verdict of
`benchmark.analysis.sequential` (paired log ratios, alpha spent over cases and looks). A case
stays open while it is inconclusive; the job ends when no case is open, when the next step would
overrun the budget, or at `max_pairs`.

Both sides are stored in the history as two runs of one run group ("compare-<UTC timestamp>"),
each with a note naming its side, interpreter and paddle version, and with per-process entries.
They live in series of their own: the machine fingerprint gets a "/compare-A" or "/compare-B"
suffix, so a PR build never becomes a baseline of the suite's history on this machine.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the heavy modules are imported where they are used, so `--help` stays light
    from benchmark import measure
    from benchmark.analysis.sequential import Decision
    from benchmark.config import Case
    from benchmark.results import CaseResult

SIDES = ("A", "B")
CHECK_TIMEOUT_S = 300.0
DEFAULT_BUDGET_MIN = 10.0
DEFAULT_ALPHA = 0.01  # a job's error budget for slower/faster verdicts, over all cases and looks
DEFAULT_MIN_EFFECT = 0.02  # differences below 2% are "same"
DEFAULT_MAX_PAIRS = 200
DEFAULT_TRIAL_PROCESSES = 3  # each trial gets the settings of one of 3 suite processes (per_process)
VENV_NEEDS = "paddlepaddle, numpy, scipy, pyyaml and pydantic (Python >= 3.10)"

# Run in each side's interpreter: can it import paddle and the harness's worker? One JSON line.
_CHECK = r"""
import json, sys
out = {"python_version": sys.version.split()[0], "executable": sys.executable}
try:
    import paddle
except Exception as e:
    out["error"] = "cannot import paddle (%s: %s)" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
else:
    try:
        import benchmark.runners.worker, benchmark.config, benchmark.measure
        from benchmark import runners
        out["framework"] = runners.framework_info("paddle")
    except Exception as e:
        out["error"] = "cannot import the harness's worker (%s: %s)" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
print("BENCHMARK-CHECK " + json.dumps(out, default=str))
"""


class CompareError(Exception):
    """The comparison cannot run (a side's interpreter is missing or lacks paddle, bad input)."""


@dataclasses.dataclass
class Side:
    """One environment: its label (A or B), interpreter and what it reported about itself."""

    label: str
    python: str
    env: dict[str, str]
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def paddle_version(self) -> str:
        return str((self.info.get("framework") or {}).get("paddle_version") or "?")

    def describe(self) -> str:
        commit = (self.info.get("framework") or {}).get("paddle_commit")
        commit = f" ({str(commit)[:10]})" if commit else ""
        return (
            f"side {self.label}: {self.python} (Python {self.info.get('python_version', '?')}, "
            f"paddle {self.paddle_version}{commit})"
        )


def worker_env(root: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The workers' environment: `base` (default: this process's, with thread counts and allocator
    settings already exported) with the project root first on PYTHONPATH, so `benchmark` comes
    from this checkout and paddle from the side's environment."""
    env = dict(os.environ if base is None else base)
    parts = [str(root), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    return env


def check_side(label: str, python: str, root: Path, env: dict[str, str] | None = None) -> Side:
    """Run `python` once: it must exist, import paddle and the harness's worker; raises
    CompareError with one line saying what is wrong."""
    env = worker_env(root, env)
    where = f"side {label} ({python})"
    path = Path(python)
    if os.sep in python and not path.exists():
        raise CompareError(f"{where}: no such interpreter")
    if path.is_dir():
        raise CompareError(f"{where}: is a directory, expected an interpreter such as VENV/bin/python")
    try:
        proc = subprocess.run(
            [python, "-c", _CHECK],
            env=env,
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise CompareError(f"{where}: no such interpreter") from None
    except PermissionError:
        raise CompareError(f"{where}: not executable") from None
    except OSError as e:
        raise CompareError(f"{where}: cannot run it ({e.strerror or e})") from None
    except subprocess.TimeoutExpired:
        raise CompareError(f"{where}: did not answer within {CHECK_TIMEOUT_S:.0f} s") from None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("BENCHMARK-CHECK ")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise CompareError(
            f"{where}: not a working Python interpreter (exit status {proc.returncode}: {tail})"
        )
    info = json.loads(lines[-1].removeprefix("BENCHMARK-CHECK "))
    if info.get("error"):
        raise CompareError(f"{where}: {info['error']}; the environment needs {VENV_NEEDS}")
    return Side(label=label, python=python, env=env, info=info)


def check_sides(
    pythons: dict[str, str], root: Path, say: Callable[[str], None] = lambda line: None
) -> dict[str, Side]:
    """`check_side` of both sides at once (each check imports paddle); the first side's problem
    is raised when both have one."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(pythons)) as pool:
        futures = {label: pool.submit(check_side, label, python, root) for label, python in pythons.items()}
        sides = {label: f.result() for label, f in futures.items()}
    for side in sides.values():
        say(f"compare: {side.describe()}")
    return sides


@dataclasses.dataclass
class CaseState:
    """One case during the job: its per-process entries per side, pairs and current decision."""

    case: Case
    min_effect: float
    entries: dict[str, list[dict[str, Any]]] = dataclasses.field(
        default_factory=lambda: {s: [] for s in SIDES}
    )
    pairs: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    decision: Decision | None = None
    error: str | None = None
    skipped: str | None = None

    @property
    def key(self) -> str:
        return self.case.id

    @property
    def open(self) -> bool:
        return self.error is None and self.skipped is None and not (self.decision and self.decision.decided)

    @property
    def verdict(self) -> str:
        from benchmark.analysis import sequential as seq

        if self.error is not None:
            return seq.ERROR
        if self.skipped is not None:
            return "skipped"
        return self.decision.verdict if self.decision else seq.INCONCLUSIVE


@dataclasses.dataclass
class Job:
    """What a comparison measured and decided."""

    sides: dict[str, Side]
    states: list[CaseState]
    steps: int = 0
    elapsed_s: float = 0.0
    budget_s: float = 0.0
    alpha: float = DEFAULT_ALPHA
    stopped: str = ""  # why the job ended
    seed: int = 0
    run_ids: dict[str, int] = dataclasses.field(default_factory=dict)
    run_group: str | None = None

    def verdicts(self) -> list[str]:
        return [s.verdict for s in self.states]

    def exit_code(self) -> int:
        from benchmark.analysis import sequential as seq

        return seq.exit_code(self.verdicts())


def start_worker(side: Side, output=None):
    """A fresh worker process of `side` (benchmark.workers.Worker with its interpreter and env)."""
    from benchmark.workers import Worker

    return Worker(python=side.python, env=side.env, stderr=output)


def close_quietly(worker) -> None:
    """End a worker: close its stdin (it exits) and reap it."""
    worker.close()


def serve_trials(
    worker, side: Side, members: Sequence[CaseState], params: Sequence[dict], order: int, output=None
):
    """One timing trial of each of `members` (in that order) in `worker`, a fresh worker taking
    over when one dies. Returns ({case key: record with its "_order"}, the workers used)."""
    from benchmark import trials

    records: dict[str, dict[str, Any]] = {}
    used = [worker]
    for k, (state, p) in enumerate(zip(members, params, strict=True)):
        if not worker.alive():
            worker = start_worker(side, output)
            used.append(worker)
        record = worker.request("time", state.case, p, timeout_s=trials.TRIAL_TIMEOUT_S)
        if record.get("status") == "error" and not worker.alive():
            code = worker.proc.returncode
            record = {**record, "message": f"{record.get('message')} (exit status {code}, side {side.label})"}
        records[state.key] = {**record, "_order": order + k}
    return records, used


def trial_settings(case: Case, base: measure.MeasureSettings, processes: int) -> dict[str, Any]:
    """The `time` request's settings of one trial of `case`: `base` with the case's own `measure`
    overrides, per process as in a suite run of `processes` worker processes."""
    from benchmark import measure

    return measure.asdict(base.override(case.measure).per_process(processes))


def measured(states: Sequence[CaseState]) -> int:
    """The cases alpha is split over: all but those skipped (e.g. a GPU case on a CPU machine),
    which never get a verdict (skips are known after the first step, before any look)."""
    return max(1, sum(1 for s in states if s.skipped is None))


def _decide(state: CaseState, alpha: float, cases: int, *, final: bool = False) -> None:
    """Look at a case when its pair count is on the look schedule (or, `final`, once more at the
    end of the job when it is not, as one further look)."""
    from benchmark.analysis import sequential as seq

    n = len(state.pairs)
    if n < seq.MIN_PAIRS:
        return
    points = seq.look_points(n)
    look = seq.look_number(n)
    if n != points[look - 1]:
        if not final:
            return
        look += 1
    a, b = zip(*state.pairs, strict=True)
    state.decision = seq.decide(a, b, min_effect=state.min_effect, alpha=alpha, cases=cases, look=look)


def run_job(
    cases: Sequence[Case],
    sides: dict[str, Side],
    *,
    min_effect: Callable[[Case], float],
    settings: measure.MeasureSettings,
    budget_s: float = DEFAULT_BUDGET_MIN * 60,
    alpha: float = DEFAULT_ALPHA,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    processes: int = DEFAULT_TRIAL_PROCESSES,
    seed: int | None = None,
    progress: Callable[[str], None] = lambda line: None,
    on_step: Callable[[Job], None] | None = None,
    worker_output=None,
    allocator_control: bool = True,
) -> Job:
    """Measure `cases` on both sides in alternating randomized steps until each is decided, the
    budget would be overrun or `max_pairs` is reached (see the module docstring). `min_effect(case)`
    is the smallest relative difference that counts. Returns the job (not stored)."""
    from benchmark.results import process_entry

    if set(sides) != set(SIDES):
        raise ValueError(f"sides must be {SIDES}, got {sorted(sides)}")
    if not cases:
        raise CompareError("no case selected")
    seed = random.SystemRandom().randrange(2**31) if seed is None else seed
    rng = random.Random(seed)
    states = [CaseState(case=c, min_effect=float(min_effect(c))) for c in cases]
    job = Job(sides=sides, states=states, budget_s=budget_s, alpha=alpha, seed=seed)
    start = time.monotonic()
    order = 0
    step_times: list[float] = []
    finished: list = []  # the previous step's workers, closed while the next ones start
    while True:
        open_states = [s for s in states if s.open and len(s.pairs) < max_pairs]
        if not open_states:
            job.stopped = "every case decided" if all(not s.open for s in states) else f"{max_pairs} pairs"
            break
        elapsed = time.monotonic() - start
        if step_times and elapsed + max(step_times[-3:]) > budget_s:
            job.stopped = f"budget of {budget_s / 60:.1f} min"
            break
        t_step = time.monotonic()
        labels = list(SIDES)
        rng.shuffle(labels)
        # Both workers of the step start at once and import paddle side by side (while the previous
        # step's workers exit); nothing is timed until both are ready (an idle worker waits on its
        # stdin and costs no CPU).
        workers = {label: start_worker(sides[label], worker_output) for label in labels}
        for w in finished:
            close_quietly(w)
        finished = []
        try:
            for w in workers.values():
                w.wait_ready()
            got: dict[str, dict[str, dict[str, Any]]] = {}
            for label in labels:
                members = list(open_states)
                rng.shuffle(members)
                params = [
                    {
                        "settings": trial_settings(m.case, settings, processes),
                        "allocator_control": allocator_control,
                    }
                    for m in members
                ]
                got[label], used = serve_trials(
                    workers.pop(label), sides[label], members, params, order, worker_output
                )
                order += len(members)
                finished += used
        finally:
            for w in [*workers.values(), *(finished if sys.exc_info()[0] else [])]:
                w.proc.kill()
                w.close()
        job.steps += 1
        for s in open_states:
            for label in SIDES:
                rec = got[label].get(s.key) or {"status": "error", "message": "no record"}
                status = rec.get("status")
                if status == "skipped":
                    s.skipped = f"side {label}: {rec.get('message') or 'skipped'}"
                    continue
                ok = status == "ok" and bool(rec.get("samples"))
                message = None if ok else str(rec.get("message") or f"trial status {status!r}")
                s.entries[label].append(
                    process_entry(
                        len(s.entries[label]),
                        rec.get("pid"),
                        rec.get("_order", order),
                        "ok" if ok else "error",
                        rec.get("samples") if ok else None,
                        int(rec.get("iterations") or 1),
                        message,
                    )
                )
                if not ok and s.error is None:
                    s.error = f"side {label}: {message}"
            if s.error is None and s.skipped is None:
                s.pairs.append((s.entries["A"][-1]["value"], s.entries["B"][-1]["value"]))
                _decide(s, alpha, measured(states))
        step_times.append(time.monotonic() - t_step)
        job.elapsed_s = time.monotonic() - start
        progress(step_line(job))
        if on_step is not None:
            on_step(job)
    for w in finished:
        close_quietly(w)
    for s in states:
        if s.open:
            _decide(s, alpha, measured(states), final=True)
    job.elapsed_s = time.monotonic() - start
    return job


def step_line(job: Job) -> str:
    """One progress line after a step: how many cases are open and what is decided."""
    counts: dict[str, int] = {}
    for s in job.states:
        counts[s.verdict] = counts.get(s.verdict, 0) + 1
    open_ = sum(1 for s in job.states if s.open)
    what = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    return (
        f"compare: step {job.steps} done after {job.elapsed_s:.0f} s of {job.budget_s:.0f} s: "
        f"{open_} case(s) still open; {what}"
    )


def pct(x: float) -> str:
    """A ratio as a change in percent (+4.8%); from 2x on as a factor (x12.5)."""
    if not math.isfinite(x):
        return "-"
    return f"x{x:,.1f}" if x >= 2 else f"{x - 1:+.1%}"


def case_line(s: CaseState) -> str:
    """One printed row: verdict, case, B/A ratio, interval, pairs (and what an inconclusive one needs)."""
    from benchmark.analysis import sequential as seq

    head = f"{s.verdict.upper():<13} {s.case.id} [{s.case.place} {s.case.mode}]"
    d = s.decision
    if s.error is not None:
        return f"{head}  {s.error}"
    if s.skipped is not None:
        return f"{head}  {s.skipped}"
    if d is None or not math.isfinite(d.ci_low):
        n = len(s.pairs)
        return f"{head}  {n} pair(s): too few for an interval (at least {seq.MIN_PAIRS})"
    text = (
        f"{head}  B/A {d.ratio:.3f} ({pct(d.ratio)}), {d.confidence:.2%} interval "
        f"[{pct(d.ci_low)}, {pct(d.ci_high)}], {len(s.pairs)} pairs, min effect {d.min_effect:.0%}"
    )
    if d.verdict == seq.INCONCLUSIVE and d.pairs_needed:
        text += f"; would need about {d.pairs_needed} pairs"
    return text


def job_dict(job: Job) -> dict[str, Any]:
    """The job as plain data (`benchmark compare --json`): sides, one entry per case, how it ended."""

    def num(x):
        return x if x is not None and math.isfinite(x) else None

    cases = []
    for s in job.states:
        d = s.decision
        cases.append(
            {
                "case": s.case.id,
                "case_id": s.case.case_id,
                "place": s.case.place,
                "mode": s.case.mode,
                "verdict": s.verdict,
                "ratio": num(d.ratio) if d else None,
                "ci_low": num(d.ci_low) if d else None,
                "ci_high": num(d.ci_high) if d else None,
                "confidence": num(d.confidence) if d else None,
                "look": d.look if d else 0,
                "pairs": len(s.pairs),
                "pairs_needed": d.pairs_needed if d else None,
                "spread": num(d.spread) if d else None,
                "min_effect": s.min_effect,
                "message": s.error or s.skipped,
                "values": {k: [e["value"] for e in s.entries[k]] for k in SIDES},
            }
        )
    return {
        "exit_code": job.exit_code(),
        "sides": {k: {"python": v.python, **v.info} for k, v in job.sides.items()},
        "cases": cases,
        "steps": job.steps,
        "elapsed_s": job.elapsed_s,
        "budget_s": job.budget_s,
        "alpha": job.alpha,
        "stopped": job.stopped,
        "seed": job.seed,
        "run_group": job.run_group,
        "run_ids": job.run_ids,
    }


# ------------------------------------------------------------------------------------------ storing


def side_result(state: CaseState, label: str) -> CaseResult:
    """The case's result on one side: per-process entries, pooled samples, run value."""
    from benchmark.results import CaseResult, summarize_processes

    r = CaseResult.for_case(state.case)
    r.processes = list(state.entries[label])
    r.finished_at = time.time()
    pooled, stats = summarize_processes(r.processes)
    if state.skipped is not None:
        r.status, r.message = "skipped", state.skipped
    elif stats["processes"] == 0 or (state.error and state.error.startswith(f"side {label}:")):
        r.status, r.message = "error", state.error or "no trial measured"
        r.samples, r.stats = [], {"rounds": 0, "processes": stats["processes"]}
    else:
        r.samples, r.stats = pooled, stats
        r.iterations = int(next((e["iterations"] for e in r.processes if e["status"] == "ok"), 1))
    d = state.decision
    r.extra["compare"] = {
        "side": label,
        "verdict": state.verdict,
        "ratio_b_over_a": d.ratio if d else None,
        "ci_low": d.ci_low if d else None,
        "ci_high": d.ci_high if d else None,
        "confidence": d.confidence if d else None,
        "pairs": len(state.pairs),
        "min_effect": state.min_effect,
    }
    return r


def store_job(store, job: Job, *, root: Path, run_group: str | None = None) -> dict[str, int]:
    """Store both sides as two runs of one run group (default "compare-<UTC timestamp>"), each with
    a note naming its side, interpreter and paddle version; returns the run ids by side."""
    from benchmark import environment

    group = run_group or "compare-" + dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    machine = environment.collect_machine()
    fp = machine.get("fingerprint") or environment.fingerprint(machine)
    ids = {}
    for label in SIDES:
        side = job.sides[label]
        run_info = environment.collect_run(side.info.get("framework") or {}, trigger="compare", cwd=root)
        run_info.update(
            run_group=group,
            expected_results=len(job.states),
            note=f"compare side {label}: {side.python}, paddle {side.paddle_version}",
            compare={
                "side": label,
                "python": side.python,
                "python_version": side.info.get("python_version"),
                "seed": job.seed,
                "steps": job.steps,
                "alpha": job.alpha,
                "stopped": job.stopped,
            },
        )
        run_id = store.begin_run({**machine, "fingerprint": f"{fp}/compare-{label}"}, run_info)
        store.add_results(run_id, [side_result(s, label).to_dict() for s in job.states])
        store.finish_run(run_id, "complete", note=run_info["note"])
        ids[label] = run_id
    job.run_ids, job.run_group = ids, group
    return ids
