"""Registered model builders. A model case names one of MODELS; nothing else can be built.

Each builder returns (network, make_batch, loss_fn): the network is a `paddle.nn.Layer`,
`make_batch(rng)` gives (inputs, labels) as numpy arrays, and `loss_fn(out, labels)` a scalar. The
runner times a full training step (forward, loss, backward, optimizer step, clear gradients) or an
inference step (forward under `paddle.no_grad`), and reports samples/s from the batch size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmark.model import Case
from benchmark.runners import paddle_common as pc
from benchmark.runners.base import Prepared

# name -> (builder function name in this module, default args). Importing this module does not
# import paddle, so the config validator can list the names anywhere.
MODELS: dict[str, dict[str, Any]] = {
    "lstm": {
        "batch_size": 32,
        "seq_len": 50,
        "input_size": 128,
        "hidden_size": 256,
        "num_layers": 1,
        "num_classes": 10,
    },
    "gru": {
        "batch_size": 32,
        "seq_len": 50,
        "input_size": 128,
        "hidden_size": 256,
        "num_layers": 1,
        "num_classes": 10,
    },
    "resnet18": {"batch_size": 4, "image_size": 224, "num_classes": 1000},
}


def check_args(name: str, args: dict[str, Any], batch_size: Any = None) -> tuple[str | None, int]:
    """(reason or None, estimated bytes) for building `name` with `args`, without importing paddle.

    Every argument must be one the builder knows, a positive integer; the estimate (parameters,
    their gradients and two optimizer moments, plus the batch's saved activations, float32) is what
    `--bench-max-bytes` compares before anything is allocated.
    """
    defaults = MODELS.get(name)
    if defaults is None:
        return f"unknown model {name!r}: expected one of {', '.join(sorted(MODELS))}", 0
    unknown = sorted(set(args) - set(defaults))
    if unknown:
        return f"model {name!r}: unknown args {unknown}; expected some of {sorted(defaults)}", 0
    full = {**defaults, **args}
    if batch_size is not None:
        full["batch_size"] = batch_size
    for key, value in full.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**31:
            return f"model {name!r}: {key} = {value!r}: expected a positive integer", 0
    b = full["batch_size"]
    if name in ("lstm", "gru"):
        gates = 4 if name == "lstm" else 3
        i, h, n = full["input_size"], full["hidden_size"], full["num_layers"]
        params = (
            gates * (i * h + h * h + 2 * h) + (n - 1) * gates * (2 * h * h + 2 * h) + h * full["num_classes"]
        )
        activations = b * full["seq_len"] * (i + 2 * gates * h * n)
    else:  # resnet18: 11.2M weights before the head; about 10M saved activations per 224x224 image
        params = 11_200_000 + 513 * full["num_classes"]
        activations = b * 10_000_000 * full["image_size"] ** 2 // 224**2
    return None, 4 * (4 * params + 2 * activations)


def _rnn(cell: str, args: dict[str, Any]):
    pd = pc.paddle()
    nn = pd.nn

    class RecurrentClassifier(nn.Layer):
        def __init__(self):
            super().__init__()
            rnn_cls = nn.LSTM if cell == "lstm" else nn.GRU
            self.rnn = rnn_cls(args["input_size"], args["hidden_size"], num_layers=args["num_layers"])
            self.head = nn.Linear(args["hidden_size"], args["num_classes"])

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.head(out[:, -1, :])

    def make_batch(rng: np.random.Generator):
        x = rng.standard_normal((args["batch_size"], args["seq_len"], args["input_size"])).astype("float32")
        y = rng.integers(0, args["num_classes"], size=(args["batch_size"], 1)).astype("int64")
        return x, y

    return RecurrentClassifier(), make_batch, pd.nn.functional.cross_entropy


def _resnet18(args: dict[str, Any]):
    pd = pc.paddle()
    from paddle.vision.models import resnet18

    net = resnet18(pretrained=False, num_classes=args["num_classes"])  # random weights, nothing downloaded

    def make_batch(rng: np.random.Generator):
        s = args["image_size"]
        x = rng.standard_normal((args["batch_size"], 3, s, s)).astype("float32")
        y = rng.integers(0, args["num_classes"], size=(args["batch_size"], 1)).astype("int64")
        return x, y

    return net, make_batch, pd.nn.functional.cross_entropy


def build(name: str, args: dict[str, Any]):
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}: expected one of {', '.join(sorted(MODELS))}")
    unknown = set(args) - set(MODELS[name])
    if unknown:
        raise ValueError(f"model {name!r}: unknown args {sorted(unknown)}; expected {sorted(MODELS[name])}")
    full = {**MODELS[name], **args}
    if name in ("lstm", "gru"):
        return (*_rnn(name, full), full)
    return (*_resnet18(full), full)


def prepare(case: Case) -> Prepared:
    spec = case.spec
    place, mode, step_kind = case.place, case.mode, spec.step
    if spec.model is None:
        raise ValueError(f"{case.case_id}: not a model case (kind {spec.kind!r})")
    pc.set_place(place)
    pd = pc.paddle()
    pd.seed(spec.seed)
    net, make_batch, loss_fn, args = build(spec.model, dict(spec.args))
    if spec.batch_size is not None:
        args["batch_size"] = spec.batch_size
    if mode == "to_static":
        net = pd.jit.to_static(net)
    elif mode == "static":
        raise ValueError("model cases run in 'dynamic' or 'to_static' mode")
    xs, ys = make_batch(np.random.default_rng(spec.seed))
    x = pd.to_tensor(xs, place=pc.static_place(place))
    y = pd.to_tensor(ys, place=pc.static_place(place))
    if step_kind == "train":
        net.train()
        opt = pd.optimizer.Adam(learning_rate=1e-4, parameters=net.parameters())

        def step():
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
    else:
        net.eval()

        def step():
            with pd.no_grad():
                return net(x)

    def outputs() -> dict[str, np.ndarray]:
        return {"out": pc.to_numpy(step())}

    return Prepared(
        step=step,
        sync=pc.synchronizer(place),
        items_per_step=int(xs.shape[0]),
        outputs=outputs,
        peak_memory=pc.peak_memory_tracker(place),
        device_timer=pc.device_timer_factory(place),
        info={
            "model": spec.model,
            "args": args,
            "step": step_kind,
            "parameters": int(sum(int(np.prod(p.shape)) for p in net.parameters())),
        },
    )
