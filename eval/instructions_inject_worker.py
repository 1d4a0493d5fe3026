"""A test-only worker entry point: `benchmark.runners.worker` with extra work injected into one case.

Used by eval/instructions_sensitivity.py to change the work of one op without touching its
config (so the config hash, hence the series, stays the same): with a first argument
`--inject=CASE:ELEMENTS`, every step of the case whose id (pytest id) is CASE also runs
`paddle.abs` on a float32 tensor of ELEMENTS elements (a small elementwise op). Every other case
runs unchanged. (An argument, not an environment variable: the instruction worker's environment
keeps only the variables that count, see benchmark.instructions.callgrind.KEEP_ENV.)
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

# Like the suite's workers, import the harness as installed: a checkout on sys.path would be listed
# by the import system, and its listing would shift the counts of the cases measured here against
# the recorded ones (README, "Instruction counts"). Only without an installed harness, the checkout.
if importlib.util.find_spec("benchmark") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmark import runners  # noqa: E402
from benchmark.runners import worker  # noqa: E402

_prepare = runners.prepare
INJECT_CASE, INJECT_ELEMENTS = "", 0
if len(sys.argv) > 1 and sys.argv[1].startswith("--inject="):
    INJECT_CASE, _, _n = sys.argv.pop(1)[len("--inject=") :].rpartition(":")
    INJECT_ELEMENTS = int(_n)


def prepare(case):
    prepared = _prepare(case)
    if not INJECT_CASE or case.id != INJECT_CASE:
        return prepared
    import paddle

    extra = paddle.ones([INJECT_ELEMENTS], dtype="float32")
    step = prepared.step

    def injected():
        out = step()
        paddle.abs(extra)
        return out

    prepared.step = injected
    prepared.info["injected"] = f"paddle.abs on {extra.shape[0]} elements per step"
    return prepared


runners.prepare = prepare

if __name__ == "__main__":
    sys.exit(worker.main())
