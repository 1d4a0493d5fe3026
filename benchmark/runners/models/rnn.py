"""Recurrent models: LSTM and GRU sequence classifiers, and an LSTM language model like
PaddlePaddle/benchmark's PaddingRNN (PTB word LM: embedding, stacked LSTM, softmax over the
vocabulary). Importing this module imports no framework; each builder does, when called."""

from __future__ import annotations

import numpy as np

from benchmark.runners import paddle_common as pc
from benchmark.runners.models.registry import Built, Count, ModelArgs, ModelEntry


class RecurrentArgs(ModelArgs):
    batch_size: Count = 32
    seq_len: Count = 50
    input_size: Count = 128
    hidden_size: Count = 256
    num_layers: Count = 1
    num_classes: Count = 10


def _rnn_estimate(gates: int):
    def estimate(a: RecurrentArgs) -> tuple[int, int]:
        i, h, n = a.input_size, a.hidden_size, a.num_layers
        params = gates * (i * h + h * h + 2 * h) + (n - 1) * gates * (2 * h * h + 2 * h) + h * a.num_classes
        return params, a.batch_size * a.seq_len * (i + 2 * gates * h * n)

    return estimate


def _classifier(cell: str):
    def build(a: RecurrentArgs) -> Built:
        pd = pc.paddle()
        nn = pd.nn

        class RecurrentClassifier(nn.Layer):
            def __init__(self):
                super().__init__()
                rnn_cls = nn.LSTM if cell == "lstm" else nn.GRU
                self.rnn = rnn_cls(a.input_size, a.hidden_size, num_layers=a.num_layers)
                self.head = nn.Linear(a.hidden_size, a.num_classes)

            def forward(self, x):
                out, _ = self.rnn(x)
                return self.head(out[:, -1, :])

        def make_batch(rng: np.random.Generator):
            x = rng.standard_normal((a.batch_size, a.seq_len, a.input_size)).astype("float32")
            y = rng.integers(0, a.num_classes, size=(a.batch_size, 1)).astype("int64")
            return (x,), (y,)

        return Built(RecurrentClassifier(), make_batch, pd.nn.functional.cross_entropy, a.batch_size)

    return build


class LanguageModelArgs(ModelArgs):
    # PaddingRNN's "small" config: batch 20, 20 steps, hidden 200, 2 layers, vocabulary 10000
    batch_size: Count = 4
    num_steps: Count = 10
    hidden_size: Count = 32
    num_layers: Count = 2
    vocab_size: Count = 200


def _lm_estimate(a: LanguageModelArgs) -> tuple[int, int]:
    h, v = a.hidden_size, a.vocab_size
    params = v * h + a.num_layers * 4 * (2 * h * h + 2 * h) + h * v + v
    tokens = a.batch_size * a.num_steps
    return params, tokens * (h + 8 * h * a.num_layers + 2 * v)


def _lm(a: LanguageModelArgs) -> Built:
    pd = pc.paddle()
    nn = pd.nn

    class LSTMLanguageModel(nn.Layer):
        def __init__(self):
            super().__init__()
            init = nn.initializer.Uniform(-0.1, 0.1)  # PaddingRNN's init_scale
            self.embedding = nn.Embedding(a.vocab_size, a.hidden_size, weight_attr=init)
            self.lstm = nn.LSTM(a.hidden_size, a.hidden_size, num_layers=a.num_layers)
            self.head = nn.Linear(a.hidden_size, a.vocab_size, weight_attr=init)

        def forward(self, tokens):
            out, _ = self.lstm(self.embedding(tokens))
            return self.head(out)

    def make_batch(rng: np.random.Generator):
        text = rng.integers(0, a.vocab_size, size=(a.batch_size, a.num_steps + 1)).astype("int64")
        return (text[:, :-1],), (text[:, 1:, None],)

    def loss(logits, labels):
        return pd.nn.functional.cross_entropy(logits, labels)

    return Built(LSTMLanguageModel(), make_batch, loss, a.batch_size * a.num_steps, "tokens")


def _entry(name: str, gates: int, description: str) -> ModelEntry:
    return ModelEntry(
        name, "rnn", RecurrentArgs, _rnn_estimate(gates), _classifier(name), description, frozenset({name})
    )


ENTRIES: list[ModelEntry] = [
    _entry("lstm", 4, "an LSTM over a sequence, its last state classified"),
    _entry("gru", 3, "a GRU over a sequence, its last state classified"),
    ModelEntry(
        "lstm_lm",
        "rnn",
        LanguageModelArgs,
        _lm_estimate,
        _lm,
        "an LSTM word language model like PaddlePaddle/benchmark's PaddingRNN (tokens/step)",
        frozenset({"lstm", "embedding"}),
    ),
]
