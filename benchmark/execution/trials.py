"""Randomized interleaved trials: each case measured in several fresh worker processes.

A *trial* is one worker process measuring one case once (`benchmark.runners.worker`'s `time`
task). A case with P processes gets P trials. The trials run in rounds (Randomized Multiple
Interleaved Trials, Abedi & Brecht 2017): round r is served by a fresh worker process and holds
one trial of every case that still needs an r-th one, in a random permutation drawn from the
run's seed. A slow stretch of the machine then spreads over all cases instead of landing on one,
and what ran before a case in its process changes from round to round.

A worker that dies or times out yields an error for the trial it was on; a fresh worker serves the
rest of the round. A case whose trial failed (or was skipped) gets no further trials.

This module only schedules and collects: the caller supplies the worker factory, the request
parameters of a trial and what to do with each record (`run_trials`).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmark.execution.replies import TrialRecord
from benchmark.execution.workers import Workers
from benchmark.sandbox.limits import TRIAL_BASE_S, TRIAL_BUDGET_FACTOR, trial_timeout_s

# The fixed limit of a request whose settings are not known here (benchmark compare's job); a
# trial of the suite gets `trial_timeout_s` of its own settings.
TRIAL_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Trial:
    """Trial `index` (0-based) of `processes` of case `case` (any object; the caller's), in round
    `round` (0-based), at position `order` of the run's whole trial sequence."""

    case: Any
    key: str
    index: int
    processes: int
    round: int
    order: int


def schedule(keys: Sequence[str], processes: Sequence[int], seed: int) -> list[list[tuple[str, int]]]:
    """The rounds of a run: round r is a random permutation (from `seed`) of the keys whose
    process count exceeds r, as (key, trial index) pairs. Pure: the same input, the same order."""
    if len(keys) != len(processes):
        raise ValueError(f"{len(keys)} keys but {len(processes)} process counts")
    if any(p < 1 for p in processes):
        raise ValueError(f"every case needs at least one process, got {min(processes)}")
    rng = random.Random(seed)
    rounds = []
    for r in range(max(processes, default=0)):
        members = [k for k, p in zip(keys, processes, strict=True) if p > r]
        rng.shuffle(members)
        rounds.append([(k, r) for k in members])
    return rounds


def plan_trials(cases: Sequence[tuple[str, Any, int]], seed: int) -> list[list[Trial]]:
    """`cases`: (key, case, processes) per case, keys unique. The rounds of `Trial`s to run."""
    by_key = {key: (case, p) for key, case, p in cases}
    if len(by_key) != len(cases):
        raise ValueError("case keys must be unique")
    rounds, order = [], 0
    for members in schedule([k for k, _, _ in cases], [p for _, _, p in cases], seed):
        trials = []
        for key, index in members:
            case, p = by_key[key]
            trials.append(Trial(case=case, key=key, index=index, processes=p, round=len(rounds), order=order))
            order += 1
        rounds.append(trials)
    return rounds


def failure_message(record: TrialRecord, trial: Trial, exit_status: int | None) -> str:
    """A trial's error as one line: a dead worker says how it died and during which trial."""
    message = record.message or "no record"
    where = f"trial {trial.index + 1} of {trial.processes}"
    if message.startswith("worker process:"):
        why = message.removeprefix("worker process:").strip()
        if why.startswith("died") and exit_status is not None:
            return f"worker process died (exit status {exit_status}) during {where}"
        if why.startswith("no answer within"):
            return (
                f"trial time limit: {why} during {where} (the limit is {TRIAL_BASE_S:g} s + "
                f"{TRIAL_BUDGET_FACTOR:g} x the time the case's measure settings allow)"
            )
        return f"worker process: {why}, during {where}"
    return f"{message} (in {where})"


def run_trials(
    rounds: list[list[Trial]],
    new_worker: Callable[[], Any],
    params: Callable[[Trial], dict[str, Any]],
    on_record: Callable[[Trial, TrialRecord], None],
    *,
    should_run: Callable[[Trial], bool] = lambda trial: True,
    on_start: Callable[[Trial, Any], Any] | None = None,
    on_round: Callable[[int, list[Trial]], None] | None = None,
    timeout_s: float | None = None,
) -> None:
    """Run the rounds: a fresh worker (`new_worker()`, a `benchmark.execution.workers.Worker`) per round,
    another one whenever the current one died. Each trial sends the `time` task with `params(trial)`;
    its record (with `message` made readable for a dead worker) goes to `on_record(trial, record)`.
    `should_run(trial)` False skips a trial (e.g. its case already failed); `on_start(trial, worker)`
    runs just before the request and may return a callable run right after it (e.g. to stop a
    telemetry sampler); `on_round(r, trials)` after each round. The workers (`Workers`) are closed
    on the way out, killed if the run is interrupted. `timeout_s`: each trial's wall-clock limit;
    None (the default) derives it from the trial's own measure settings (`benchmark.sandbox.limits.trial_timeout_s`)."""
    with Workers(lambda _: new_worker()) as workers:
        for r, trials in enumerate(rounds):
            for trial in trials:
                if not should_run(trial):
                    continue
                worker = workers.get()
                after = on_start(trial, worker) if on_start is not None else None
                request = params(trial)
                limit = timeout_s if timeout_s is not None else trial_timeout_s(request.get("settings") or {})
                try:
                    record = worker.trial(trial.case, request, timeout_s=limit)
                finally:
                    if callable(after):
                        after()
                if record.status == "error" and not worker.alive():
                    message = failure_message(record, trial, worker.proc.returncode)
                    record = dataclasses.replace(record, message=message, pid=record.pid or worker.proc.pid)
                on_record(trial, record)
            workers.retire()
            if on_round is not None:
                on_round(r, trials)
