"""A numerical perturbation for eval/model_perturbation.py and tests/test_model_numerics.py: with
`BENCHMARK_PERTURB=relu` in the environment and this directory on PYTHONPATH, every Python process
(the suite's workers included) imports paddle at start-up and multiplies the output of
`paddle.nn.functional.relu` (which `paddle.nn.ReLU` calls) by 1 + 1e-3. Without the variable it does
nothing, so the directory can stay on the path."""

import os

if os.environ.get("BENCHMARK_PERTURB") == "relu":
    import paddle.nn.functional as _functional
    import paddle.nn.functional.activation as _activation

    _relu = _functional.relu

    def relu(x, name=None):
        return _relu(x, name) * (1 + 1e-3)

    _functional.relu = relu
    _activation.relu = relu
