"""Perturbations for eval/model_perturbation.py and tests/test_model_numerics.py, with this directory
on PYTHONPATH, in every Python process (the suite's workers included), which then imports paddle at
start-up:

- `BENCHMARK_PERTURB=relu`: the output of `paddle.nn.functional.relu` (which `paddle.nn.ReLU`
  calls) times 1 + 1e-3, a numerical change;
- `BENCHMARK_PERTURB=conv2d_slow`: every `paddle.nn.Conv2D` forward spins 1 ms more on the host, a
  slowdown of the convolution models only.

Without the variable it does nothing, so the directory can stay on the path."""

import os

if os.environ.get("BENCHMARK_PERTURB") == "relu":
    import paddle.nn.functional as _functional
    import paddle.nn.functional.activation as _activation

    _relu = _functional.relu

    def relu(x, name=None):
        return _relu(x, name) * (1 + 1e-3)

    _functional.relu = relu
    _activation.relu = relu

if os.environ.get("BENCHMARK_PERTURB") == "conv2d_slow":
    import time

    import paddle.nn as _nn

    _forward = _nn.Conv2D.forward

    def forward(self, x):
        end = time.perf_counter() + 1e-3
        while time.perf_counter() < end:
            pass
        return _forward(self, x)

    _nn.Conv2D.forward = forward
