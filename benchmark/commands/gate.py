"""`benchmark gate`: pass or fail a run against its history or another run (exit 0, 1 or 2).

The decisions come from the one judge (:func:`benchmark.gate.judge`), as in the reports and the
--bench-gate items. A run with nothing to compare yet (the first run of its series on this
machine) passes with a notice, exit 0. Only complete runs are judged, and history baselines come
only from complete runs: a run that is still running, was interrupted or is incomplete is refused
(exit 2) with the cases it has no result of, unless `--allow-incomplete` / `--baseline-any-run` say
otherwise. The runs of one run group (the shards of one nightly) are judged as one run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import textwrap

from benchmark.commands._common import (
    add_db,
    add_format,
    add_min_effect,
    command,
    deprecated_alias,
    open_history,
    resolve_run,
)
from benchmark.datamodel.metrics import CONFIDENCE, intervals_line
from benchmark.paths import GATES_PATH, RUN_GROUP_ENV
from benchmark.report.words import (
    event_lines,
    format_decision,
    format_decision_brief,
    machine_line,
    regime_line,
    revert_lines,
    skipped_lines,
)
from benchmark.text import safe_line


def register(sub) -> None:
    p = sub.add_parser(
        "gate",
        help="pass or fail a run: exit 0 when it passes (or has nothing to compare yet), 1 when a case "
        "regressed, 2 on an error",
        description="Decide whether a run regressed. With --baseline history (default) each series' "
        "per-run values go through the online detector (a short history: an A/B against the previous "
        "run); with --baseline RUN_ID each case is compared with that run's (A/B). An A/B takes worker "
        "processes as the unit (Welch on log per-process values), never raw rounds. Prints one row per "
        "failing case and lists improvements, the environment changes (driver, kernel, Python) in the "
        "judged histories and the recent alerts whose level came back. A run with no baseline at all passes with a notice. "
        "Only complete runs are judged (a run with missing results exits 2, naming them), and history "
        "baselines come only from complete runs. The runs of a run group are judged as one run; "
        "'latest' is the latest run's whole group.",
    )
    p.add_argument(
        "--run", default="latest", metavar="ID", help="the run to judge: an id or 'latest' (default)"
    )
    p.add_argument(
        "--run-group",
        default=None,
        metavar="NAME",
        help=f"the run group: judge every run of it as one (the shards of one nightly; default ${RUN_GROUP_ENV} "
        "when --run is latest)",
    )
    p.add_argument(
        "--baseline",
        default="history",
        metavar="history|RUN_ID",
        help="compare with each series' history (default) or with this run (an A/B)",
    )
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="judge the stored results of a run that is not complete (its missing cases are still listed)",
    )
    p.add_argument(
        "--baseline-any-run",
        action="store_true",
        help="take baselines also from runs that are not complete (interrupted, incomplete, running)",
    )
    p.add_argument(
        "--gates", default=str(GATES_PATH), metavar="FILE", help="gate settings (configs/gates.yaml)"
    )
    p.add_argument(
        "--probe-adjust",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="judge time series on values adjusted by the reference probe (the machine's speed beside "
        "each trial), where a series' own history shows it lowers its noise; --no-probe-adjust judges "
        "the raw values (default: probe_adjust in --gates, true)",
    )
    add_format(p, help="the format of the decisions on stdout: text (default) or json")
    deprecated_alias(p, "--json", "--format json", const="json")
    add_min_effect(p, source="the --gates file", also="; its overrides still apply")
    p.add_argument("--all", action="store_true", help="list every case, not only failing and improved ones")
    add_db(p)
    p.set_defaults(func=cmd_gate)


def target_runs(store, run: str, run_group: str | None) -> tuple[list[int], str]:
    """The runs to judge and how to name them: --run-group (or $BENCHMARK_RUN_GROUP with --run
    latest) is every run of that group; 'latest' is the latest run, with the rest of its group."""
    if run_group and run != "latest":
        raise ValueError("give --run ID or --run-group NAME, not both")
    group = run_group or (os.environ.get(RUN_GROUP_ENV) or None if run == "latest" else None)
    if group is None:
        run_id = resolve_run(store, run)
        info = store.run(run_id) if run == "latest" else None
        group = info.run_group if info else None
        if group is None:
            return [run_id], f"run {run_id}"
    run_ids = store.group_runs(group)
    if not run_ids:
        from benchmark.gate.judge import GateInputError

        raise GateInputError(f"there are no runs of group {group!r} in {store.display_url}")
    return run_ids, f"run group {group} (run{'s' if len(run_ids) > 1 else ''} {', '.join(map(str, run_ids))})"


def selection_text(selection) -> str:
    """How a run was narrowed (`-k EXPR`, `-m EXPR`), from its stored `selection`; '' for none."""
    if not isinstance(selection, dict):
        return ""
    flags = {"keyword": "-k", "markexpr": "-m"}
    return ", ".join(f"{flags[k]} {selection[k]!r}" for k in flags if selection.get(k))


USUAL_RUNS = 20  # earlier runs of a machine whose median probe is its usual speed


def machine_speeds(store, runs) -> dict:
    """Each judged run's probe against the median of its machine's `USUAL_RUNS` latest earlier
    complete runs that may serve as a baseline (benchmark.analysis.adjust.machine_speed)."""
    from benchmark.analysis.adjust import machine_speed

    recent = store.runs(limit=max(200, 10 * USUAL_RUNS))
    speeds = {}
    for run in runs:
        earlier = [
            r.probe_s
            for r in recent
            if r.machine == run.machine
            and r.started_at < run.started_at
            and r.baseline
            and r.status == "complete"
        ]
        speeds[run.id] = machine_speed(run.probe_s, earlier[:USUAL_RUNS])
    return speeds


@command("gate")
def cmd_gate(args: argparse.Namespace) -> int:
    from benchmark.gate.judge import BASELINE_RUN_STATUSES, GateInputError, incomplete_runs, judge
    from benchmark.gate.settings import load_gates, with_min_effect, with_probe_adjust

    gates = with_min_effect(with_probe_adjust(load_gates(args.gates), args.probe_adjust), args.min_effect)
    with open_history(args.db) as store:
        run_ids, label = target_runs(store, args.run, args.run_group)
        baseline = None if args.baseline == "history" else resolve_run(store, args.baseline)
        problems = incomplete_runs(store, run_ids)
        if problems and not args.allow_incomplete:
            raise GateInputError(
                "; ".join(problems) + ": the gate judges complete runs only (--allow-incomplete judges "
                "the results that are there)"
            )
        if baseline is not None and not args.baseline_any_run:
            for line in incomplete_runs(store, [baseline]):
                raise GateInputError(f"baseline {line} (take it anyway with --baseline-any-run)")
        statuses = None if args.baseline_any_run else BASELINE_RUN_STATUSES
        judgement = judge(store, run_ids, gates, baseline, baseline_statuses=statuses)
        decisions = judgement.decisions
        runs = [run for r in run_ids if (run := store.run(r)) is not None]
        notes = [f"run {run.id}: {run.note}" for run in runs if run.note]
        notes += [f"run {run.id} measured a partial selection ({partial}): only its cases are judged"
                  for run in runs if (partial := selection_text(run.extra.get("selection")))]  # fmt: skip
        speeds = machine_speeds(store, runs)
    ok = judgement.passed
    if args.format == "json":
        doc = {"run": run_ids[0] if len(run_ids) == 1 else run_ids, "passed": ok, "incomplete": problems}
        doc["notice"] = judgement.notice
        doc["machine"] = {
            str(i): {
                "probe_s": m.probe_s,
                "usual_s": m.usual_s,
                "ratio": m.ratio,
                "runs": m.runs,
                "unusual": m.unusual,
            }
            for i, m in speeds.items()
            if m is not None
        }
        doc["decisions"] = [d.to_dict() for d in decisions]
        print(json.dumps(doc, indent=1))
        return 0 if ok else 1
    failing = [d for d in decisions if d.failing]
    # regressions that do not fail (configs/gates.yaml `blocking`) and those measured again that
    # did not reproduce: shown in full after the failing ones, each saying why it did not fail
    held = [d for d in decisions if not d.failing and d.verdict in ("regression", "not reproduced")]
    improved = [d for d in decisions if d.verdict == "improvement"]
    skipped = [d for d in decisions if d.verdict == "skipped"]
    others = [
        d
        for d in decisions
        if not d.failing and d not in held and d.verdict not in ("improvement", "skipped")
    ]
    counts = {v: sum(d.verdict == v for d in decisions) for v in dict.fromkeys(d.verdict for d in decisions)}
    out = [f"{label} vs {args.baseline}: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))]
    regimes = regime_line(decisions)
    out += [regimes] if regimes else []
    out += [f"INCOMPLETE   {line}" for line in problems]  # only with --allow-incomplete
    out += [f"note: {note}" for note in notes]
    out += [f"notice: {judgement.notice}"] if judgement.notice else []
    out += [line for i, m in speeds.items() if (line := machine_line(i, m))]
    # What fails first, in full; then improvements; with --all the rest in one short line each,
    # and the skipped ones last, one line per reason.
    out += [
        line
        for d in [*failing, *held]
        for line in textwrap.wrap(format_decision(d), 120, subsequent_indent=" " * 13)
    ]
    out += [line for d in improved for line in format_decision_brief(d)]
    if args.all:
        out += [line for d in others for line in format_decision_brief(d)]
        out += skipped_lines(skipped)
    out += [f"environment: {line}" for line in event_lines(decisions)]
    out += [f"came back: {line}" for line in revert_lines(decisions)]
    out.append(
        intervals_line(next((d.confidence for d in decisions if math.isfinite(d.confidence)), CONFIDENCE))
    )
    out.append(
        f"gate: {'PASS' if ok else 'FAIL'} ({len(failing)} failing case(s), {len(improved)} improvement(s)"
        + (f", {len(held)} regression(s) that do not block" if held else "")
        + ")"
    )
    for line in out:  # imported strings stay on their line, escaped; no line is a CI command
        print(safe_line(line))
    return 0 if ok else 1
