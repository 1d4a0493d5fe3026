"""The full scan behind docs/bisect.md: the instruction count of each selected case in every
released paddlepaddle CPU wheel from --good to --bad, one environment per version (the same cache
`benchmark bisect --package` uses), so that what the bisection names can be checked against every
step of the scan.

    python eval/bisect_scan.py --good 3.0.0 --bad 3.3.1 -k 'abs-1000x1000-fwd or ...' --json scan.json

Question: over the released CPU wheels 3.0.0 .. 3.3.1, which cases change by at least the 1%
instruction threshold, between which versions? Answer (this machine, the figures): docs/bisect.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark.bisect.builds import EnvCache, index_versions  # noqa: E402
from benchmark.bisect.counting import count_build  # noqa: E402
from benchmark.compare.run import Request, select_cases  # noqa: E402
from benchmark.instructions import callgrind  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--package", default="paddlepaddle")
    p.add_argument("--good", required=True)
    p.add_argument("--bad", required=True)
    p.add_argument("-k", dest="keyword", required=True)
    p.add_argument("--json", required=True)
    args = p.parse_args()
    versions = index_versions(args.package, args.good, args.bad)
    cases = [c for c in select_cases(Request(a="", b="", configs=[], keyword=args.keyword, place="cpu"))
             if callgrind.eligible(c)]  # fmt: skip
    tooling = callgrind.find_tooling()
    cache = EnvCache(args.package, say=print)
    scan: dict[str, dict[str, float | None]] = {}
    started = time.monotonic()
    for v in versions:
        python = cache.python_for(v)
        values = count_build(v, python, cases, root=ROOT, tooling=tooling, say=print)
        scan[v] = values or {}
        print(f"{v}: {json.dumps(scan[v])} ({time.monotonic() - started:.0f} s)", flush=True)
    Path(args.json).write_text(json.dumps({"versions": versions, "cases": [c.id for c in cases], "scan": scan,
                                           "seconds": time.monotonic() - started}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
