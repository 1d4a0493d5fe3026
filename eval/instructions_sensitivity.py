"""Sensitivity of the instructions gate (issue 12): 20 unchanged runs never fail; a ~1% change in the
work of one op fails that case, on the first run after the change, and no other case.

    python eval/instructions_sensitivity.py --spread FILE [--target CASE] [--elements N]
                                               [--neighbours K] [--unchanged 20]

`--spread` is the JSON written by eval/instructions_spread.py (recorded counts of R real runs
of every CPU case). Into a fresh SQLite history (system temp dir):

1. `--unchanged` runs replay the recorded runs in turn (run j is recorded run j mod R, its raw
   chunk samples as measured); after each, the gate (benchmark.gate.judge.evaluate with
   configs/gates.yaml) judges it. Reported: how many decisions failed (target: none).
2. One changed run, measured for real: a worker under callgrind whose entry point
   (eval/instructions_inject_worker.py) adds `paddle.abs` on `--elements` float32 elements to
   every step of `--target` only (the config, hence the series, unchanged). The target and
   `--neighbours` other cases (the next ones in suite order) are measured by that worker; the
   remaining cases are replayed from recorded run 0 (counts are deterministic; said in the output).
   Reported: the measured change of every measured case and which decisions fail (target: only
   `--target`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark.config import load_paths  # noqa: E402
from benchmark.datamodel.environment import MachineDescription, RunDescription  # noqa: E402
from benchmark.datamodel.result import CaseResult  # noqa: E402
from benchmark.execution import measure  # noqa: E402
from benchmark.execution.replies import CountRecord  # noqa: E402
from benchmark.gate.judge import evaluate  # noqa: E402
from benchmark.gate.settings import load_gates  # noqa: E402
from benchmark.instructions import callgrind as instructions  # noqa: E402
from benchmark.instructions import counting_pass as instruction_pass  # noqa: E402
from benchmark.store import open_store  # noqa: E402

MACHINE = MachineDescription.of({"fingerprint": "instructions-sensitivity", "hostname": "replay"})


def recorded_result(case, rec: dict) -> dict:
    r = instructions.instruction_result_base(case)
    reply = {"status": "ok", "samples": rec["samples"], "iterations": rec.get("iterations") or 1}
    instructions.fill_result(r, CountRecord.from_reply(reply))
    return r.to_dict()


def store_run(store, results: list[dict]) -> int:
    run_id = store.begin_run(MACHINE, RunDescription(trigger="local"))
    for r in results:
        store.add_result(run_id, CaseResult.from_dict(r))
    store.finish_run(run_id, "complete")
    return run_id


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spread", required=True, help="JSON of eval/instructions_spread.py")
    p.add_argument("--target", default=None, help="case (pytest id) whose work changes (default: see --help)")
    p.add_argument("--change", type=float, default=0.012, help="aimed relative change (default 0.012)")
    p.add_argument(
        "--elements", type=int, default=None, help="elements of the injected abs (default: sized to --change)"
    )
    p.add_argument("--neighbours", type=int, default=3, help="other cases measured for real (default 3)")
    p.add_argument("--unchanged", type=int, default=20, help="unchanged replayed runs (default 20)")
    args = p.parse_args(argv)
    spread = json.loads(Path(args.spread).read_text())
    order = spread["case_order"]
    runs = spread["runs"]
    cases_all, issues = load_paths([str(ROOT / "configs")])
    by_id = {c.id: c for c in cases_all}
    cases = [by_id[i] for i in order if i in by_id]
    ok_ids = [c.id for c in cases if all(r["cases"].get(c.id, {}).get("status") == "ok" for r in runs)]
    gates = load_gates(ROOT / "configs" / "gates.yaml")
    db = Path(tempfile.mkdtemp(prefix="instr-sens-")) / "history.sqlite"
    print(f"history: {db}; {len(ok_ids)} case(s) with a count in all {len(runs)} recorded run(s)")

    with open_store(f"sqlite:///{db}") as store:
        failing = []
        for j in range(args.unchanged):
            rec = runs[j % len(runs)]["cases"]
            run_id = store_run(store, [recorded_result(by_id[i], rec[i]) for i in ok_ids])
            bad = [d for d in evaluate(store, run_id, gates) if d.failing]
            failing += [(j + 1, d.case_id, d.verdict, d.effect) for d in bad]
        print(
            f"unchanged: {args.unchanged} replayed runs x {len(ok_ids)} cases: {len(failing)} failing decision(s)"
        )
        for f in failing:
            print(f"    run {f[0]}: {f[1]} {f[2]} {f[3]:+.3%}")

        target = args.target or max(
            (i for i in ok_ids if by_id[i].kind == "op"), key=lambda i: runs[0]["cases"][i]["count"]
        )
        base = runs[0]["cases"][target]["count"]
        elements = args.elements or max(1, int((args.change * base - 12_000) / 0.63))
        start = ok_ids.index(target)
        measured = [target, *[ok_ids[(start + k) % len(ok_ids)] for k in range(1, args.neighbours + 1)]]
        measure.pin_threads(1)
        measure.control_allocator(True)
        counter = instruction_pass.InstructionPass(
            instructions.find_tooling(),
            entry=(str(ROOT / "eval" / "instructions_inject_worker.py"), f"--inject={target}:{elements}"),
        )
        t0 = time.perf_counter()
        real = {}
        try:
            for i in sorted(measured, key=ok_ids.index):  # suite order
                real[i] = counter.measure(by_id[i]).to_dict()
        finally:
            counter.close()
        print(
            f"changed run: paddle.abs on {elements} elements injected into every step of {target}; "
            f"measured for real ({time.perf_counter() - t0:.0f} s): {', '.join(measured)}; "
            f"the other {len(ok_ids) - len(measured)} cases replayed from recorded run 1"
        )
        results = []
        for i in ok_ids:
            if i in real:
                results.append(real[i])
                r = real[i]
                rec = runs[0]["cases"][i]["count"]
                got = r["stats"].get("median") if r["status"] == "ok" else None
                change = f"{got / rec - 1:+.3%}" if got else r["message"]
                print(f"    {i}: {rec:,.0f} -> {got or 0:,.0f} instructions/iteration ({change})")
            else:
                results.append(recorded_result(by_id[i], runs[0]["cases"][i]))
        run_id = store_run(store, results)
        decisions = evaluate(store, run_id, gates)
        bad = [d for d in decisions if d.failing]
        print(f"gate on the changed run: {len(bad)} failing of {len(decisions)}")
        for d in bad:
            print(
                f"    {d.case_id} [{d.place}, {d.mode}, {d.series_metric}]: {d.verdict} {d.effect:+.3%}: {d.evidence}"
            )
        only_target = [f"{d.case_id}-{d.place}-{d.mode}" for d in bad] == [target]
        print(f"fails the target only, on the first run after the change: {only_target}")
    return 0 if only_target and not failing else 1


if __name__ == "__main__":
    sys.exit(main())
