"""`benchmark gate`: pass or fail a run against its history or another run (exit 0, 1 or 2)."""

from __future__ import annotations

import argparse
import json
import math
import sys

from benchmark.commands.store import _add_db, _run_id
from benchmark.gate import GateInputError, check_has_baseline, evaluate, passed
from benchmark.gates import DEFAULT_GATES_PATH, GateError, load_gates
from benchmark.store import StoreError, open_store


def register(sub) -> None:
    p = sub.add_parser(
        "gate",
        help="pass or fail a run: exit 0 when it passes, 1 when a case regressed, 2 on an error",
        description="Decide whether a run regressed. With --baseline history (default) each series' "
        "per-run values go through the online detector; with --baseline RUN_ID each case's raw samples "
        "are compared with that run's (A/B). Prints one row per failing case and lists improvements.",
    )
    p.add_argument("--run", default="latest", metavar="ID", help="run to judge: an id or 'latest' (default)")
    p.add_argument("--baseline", default="history", metavar="history|RUN_ID", help="what to compare with")
    p.add_argument(
        "--gates", default=str(DEFAULT_GATES_PATH), metavar="FILE", help="gate settings (configs/gates.yaml)"
    )
    p.add_argument("--json", action="store_true", help="print the decisions as JSON")
    p.add_argument("--all", action="store_true", help="list every case, not only failing and improved ones")
    _add_db(p)
    p.set_defaults(func=cmd_gate)


def _pct(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:+.1%}"


def format_decision(d) -> str:
    interval = f"[{_pct(d.ci_low)}, {_pct(d.ci_high)}]" if math.isfinite(d.ci_low) else ""
    head = f"{d.verdict.upper():<12} {d.case_id} [{d.place} {d.mode}] {d.metric}"
    detail = f"effect {_pct(d.effect)} {interval}".strip() if math.isfinite(d.effect) else ""
    parts = [head, detail, d.evidence, f"baseline: {d.baseline}" if d.baseline else "", d.reason]
    return "  ".join(p for p in parts if p)


def cmd_gate(args: argparse.Namespace) -> int:
    try:
        gates = load_gates(args.gates)
        store = open_store(args.db)
        run_id = _run_id(store, args.run)
        baseline = None if args.baseline == "history" else _run_id(store, args.baseline)
        decisions = evaluate(store, run_id, gates, baseline)
        check_has_baseline(decisions, run_id)
    except (GateError, StoreError, GateInputError, ValueError) as e:
        print(f"benchmark gate: error: {e}", file=sys.stderr)
        return 2
    ok = passed(decisions)
    if args.json:
        print(
            json.dumps({"run": run_id, "passed": ok, "decisions": [d.to_dict() for d in decisions]}, indent=1)
        )
        return 0 if ok else 1
    failing = [d for d in decisions if d.failing]
    improved = [d for d in decisions if d.verdict == "improvement"]
    shown = decisions if args.all else failing + improved
    counts = {v: sum(d.verdict == v for d in decisions) for v in dict.fromkeys(d.verdict for d in decisions)}
    print(f"run {run_id} vs {args.baseline}: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    for d in shown:
        print(format_decision(d))
    print(
        f"gate: {'PASS' if ok else 'FAIL'} ({len(failing)} failing case(s), {len(improved)} improvement(s))"
    )
    return 0 if ok else 1
