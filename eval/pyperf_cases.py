"""The harness's op cases timed by pyperf, with pyperf's defaults (a pyperf script; pyperf starts it
again for each of its worker processes). Used by eval/pyperf_vs_harness.py.

    python eval/pyperf_cases.py --cases abs-1000x1000-fwd,matmul-fwd -o out.json [pyperf options]

Each case is built by the harness's own runner (`benchmark.runners.prepare`: the same inputs, the
same one-iteration callable the harness's workers time), on CPU in dynamic mode, and handed to
`pyperf.Runner.bench_func`. Needs pyperf (`pip install pyperf`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyperf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark import runners  # noqa: E402
from benchmark.config import load_paths  # noqa: E402


def main() -> None:
    runner = pyperf.Runner(add_cmdline_args=lambda cmd, args: cmd.extend(("--cases", args.cases)))
    runner.argparser.add_argument("--cases", required=True, help="comma-separated case ids (CPU, dynamic)")
    args = runner.parse_args()
    wanted = args.cases.split(",")
    cases, issues = load_paths([str(ROOT / "configs")])
    by_id = {c.case_id: c for c in cases if c.place == "cpu" and c.mode == "dynamic"}
    missing = [w for w in wanted if w not in by_id]
    if missing or issues:
        sys.exit(f"pyperf_cases: no CPU dynamic case {missing}" if missing else f"configs: {issues[:3]}")
    for case_id in wanted:
        prepared = runners.prepare(by_id[case_id])
        runner.bench_func(case_id, prepared.step)


if __name__ == "__main__":
    main()
