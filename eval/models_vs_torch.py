"""Paddle against PyTorch on two models on CPU: how long does paddle's training step take against the
same step in torch, with its interval? (issue 48)

The paddle side is the registered model (benchmark/runners/models/) as the suite prepares it; the
torch side is its twin written with torch.nn here (torchvision does not import beside torch 2.13 on
this machine): the same layers, sizes, loss and optimizer (Adam), random weights on both sides.
One thread each. In each of `--rounds` rounds both steps are timed back to back (`--steps` steps
each, the order alternating from round to round); a round's ratio is paddle's time over torch's,
and the interval is the 95% t-interval of the mean log ratio over the rounds (the geometric mean).

    python eval/models_vs_torch.py [--rounds 20] [--steps 10]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import math  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

# (model, its args as in a config): PaddingRNN's "small" config, and MobileNetV1 at the small size
MODELS = {
    "lstm_lm": {"batch_size": 20, "num_steps": 20, "hidden_size": 200, "num_layers": 2, "vocab_size": 10000},
    "mobilenet_v1": {"batch_size": 8, "image_size": 64, "scale_percent": 25, "num_classes": 100},
}


def paddle_step(name: str, args: dict):
    from benchmark.config import load_file
    from benchmark.runners import models

    path = Path(tempfile.mkdtemp()) / f"{name}.yaml"
    text = ", ".join(f"{k}: {v}" for k, v in args.items())
    path.write_text(
        f"cases:\n  - {{name: {name}, kind: model, model: {name}, args: {{{text}}}, step: train, places: [cpu]}}\n"
    )
    (case,) = load_file(path, models=models.model_names()).cases
    prepared = models.prepare(case)
    return prepared.step, prepared.info["parameters"]


def torch_step(name: str, args: dict):
    import torch
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if name == "lstm_lm":
        a = args

        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.embedding = nn.Embedding(a["vocab_size"], a["hidden_size"])
                self.lstm = nn.LSTM(
                    a["hidden_size"], a["hidden_size"], num_layers=a["num_layers"], batch_first=True
                )
                self.head = nn.Linear(a["hidden_size"], a["vocab_size"])

            def forward(self, tokens):
                out, _ = self.lstm(self.embedding(tokens))
                return self.head(out)

        net = LM()
        text = torch.from_numpy(rng.integers(0, a["vocab_size"], (a["batch_size"], a["num_steps"] + 1)))
        x, y = text[:, :-1], text[:, 1:]

        def loss_fn(out):
            return nn.functional.cross_entropy(out.reshape(-1, a["vocab_size"]), y.reshape(-1))
    else:
        a, s = args, args["scale_percent"] / 100

        def conv_bn(cin, cout, k, stride, groups=1):
            return nn.Sequential(
                nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU(),
            )

        def separable(cin, c1, c2, groups, stride):
            return nn.Sequential(
                conv_bn(int(cin * s), int(c1 * s), 3, stride, int(groups * s)),
                conv_bn(int(c1 * s), int(c2 * s), 1, 1),
            )

        # MobileNetV1 as paddle.vision builds it: (in, out1, out2, groups, stride) per block
        blocks = [
            (32, 32, 64, 32, 1),
            (64, 64, 128, 64, 2),
            (128, 128, 128, 128, 1),
            (128, 128, 256, 128, 2),
            (256, 256, 256, 256, 1),
            (256, 256, 512, 256, 2),
        ] + [(512, 512, 512, 512, 1)] * 5
        blocks += [(512, 512, 1024, 512, 2), (1024, 1024, 1024, 1024, 1)]  # fmt: skip
        net = nn.Sequential(
            conv_bn(3, int(32 * s), 3, 2),
            *[separable(*b) for b in blocks],
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(int(1024 * s), a["num_classes"]),
        )
        size = a["image_size"]
        x = torch.from_numpy(rng.standard_normal((a["batch_size"], 3, size, size)).astype("float32"))
        y = torch.from_numpy(rng.integers(0, a["num_classes"], a["batch_size"]))

        def loss_fn(out):
            return nn.functional.cross_entropy(out, y)

    net.train()
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)

    def step():
        loss = loss_fn(net(x))
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step, sum(p.numel() for p in net.parameters())


def _time(step, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - t0) / n


def compare(name: str, rounds: int, steps: int) -> dict:
    (p, p_params), (t, t_params) = paddle_step(name, MODELS[name]), torch_step(name, MODELS[name])
    for _ in range(3):  # warm both up
        p(), t()
    ratios, ps, ts = [], [], []
    for r in range(rounds):
        if r % 2:
            tt, pp = _time(t, steps), _time(p, steps)
        else:
            pp, tt = _time(p, steps), _time(t, steps)
        ps.append(pp)
        ts.append(tt)
        ratios.append(pp / tt)
    logs = np.log(ratios)
    half = stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
    return {
        "model": name,
        "parameters": (p_params, t_params),
        "paddle_s": float(np.median(ps)),
        "torch_s": float(np.median(ts)),
        "ratio": float(np.exp(logs.mean())),
        "low": float(np.exp(logs.mean() - half)),
        "high": float(np.exp(logs.mean() + half)),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=20, help="paired rounds per model (default 20)")
    p.add_argument("--steps", type=int, default=10, help="training steps per side in a round (default 10)")
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    args = p.parse_args(argv)
    import paddle
    import torch

    print(f"paddle {paddle.__version__}, torch {torch.__version__}, 1 thread each")
    print(
        f"{'model':14s} {'paddle/step':>12s} {'torch/step':>12s} {'paddle/torch':>13s}  95% interval    parameters"
    )
    for name in args.models.split(","):
        c = compare(name, args.rounds, args.steps)
        print(
            f"{name:14s} {c['paddle_s'] * 1e3:9.2f} ms {c['torch_s'] * 1e3:9.2f} ms {c['ratio']:13.3f}"
            f"  {c['low']:.3f} .. {c['high']:.3f}  {c['parameters'][0]:,} / {c['parameters'][1]:,}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
