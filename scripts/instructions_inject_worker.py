"""A test-only worker entry point: `benchmark.runners.worker` with extra work injected into one case.

Used by scripts/instructions_sensitivity.py to change the work of one op without touching its
config (so the config hash, hence the series, stays the same): when the case id (pytest id) equals
$BENCH_INJECT_CASE, every step of that case also runs `paddle.abs` on a float32 tensor of
$BENCH_INJECT_ELEMENTS elements (a small elementwise op). Every other case runs unchanged.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmark import runners  # noqa: E402
from benchmark.runners import worker  # noqa: E402

_prepare = runners.prepare


def prepare(case):
    prepared = _prepare(case)
    if case.id != os.environ.get("BENCH_INJECT_CASE"):
        return prepared
    import paddle

    extra = paddle.ones([int(os.environ.get("BENCH_INJECT_ELEMENTS", "1000"))], dtype="float32")
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
