"""Sequence to sequence with attention, like PaddlePaddle/benchmark's seq2seq (PaddleNLP's IWSLT15
en-vi model: a 2-layer LSTM encoder, a 2-layer LSTM decoder with Luong attention over the encoder's
outputs, teacher forcing, batch 128, hidden 512). The decoder is a Python loop over the target
steps: in `to_static` mode the loop is traced. Importing this module imports no framework."""

from __future__ import annotations

import numpy as np

from benchmark.runners import paddle_common as pc
from benchmark.runners.models.registry import Built, Count, ModelArgs, ModelEntry


class Seq2SeqArgs(ModelArgs):
    batch_size: Count = 4
    src_len: Count = 8
    tgt_len: Count = 8
    hidden_size: Count = 32
    num_layers: Count = 2
    src_vocab: Count = 100
    tgt_vocab: Count = 100


def _estimate(a: Seq2SeqArgs) -> tuple[int, int]:
    h, n = a.hidden_size, a.num_layers
    lstm = 4 * (2 * h * h + 2 * h) * n
    params = (a.src_vocab + a.tgt_vocab) * h + 2 * lstm + 2 * h * h + h * a.tgt_vocab
    steps = a.batch_size * (a.src_len + a.tgt_len)
    return params, steps * (10 * h * n + 2 * a.tgt_vocab) + a.batch_size * a.tgt_len * a.src_len


def _build(a: Seq2SeqArgs) -> Built:
    pd = pc.paddle()
    nn, F = pd.nn, pd.nn.functional
    h = a.hidden_size

    class AttentionSeq2Seq(nn.Layer):
        def __init__(self):
            super().__init__()
            init = nn.initializer.Uniform(-0.1, 0.1)
            self.src_embedding = nn.Embedding(a.src_vocab, h, weight_attr=init)
            self.tgt_embedding = nn.Embedding(a.tgt_vocab, h, weight_attr=init)
            self.encoder = nn.LSTM(h, h, num_layers=a.num_layers)
            # input feeding: the decoder step sees the previous step's attentional state
            self.cells = nn.LayerList([nn.LSTMCell(2 * h if i == 0 else h, h) for i in range(a.num_layers)])
            self.attention = nn.Linear(h, h, bias_attr=False)
            self.combine = nn.Linear(2 * h, h, bias_attr=False)
            self.output = nn.Linear(h, a.tgt_vocab, bias_attr=False)

        def forward(self, src, tgt):
            enc, (hs, cs) = self.encoder(self.src_embedding(src))
            states = [(hs[i], cs[i]) for i in range(a.num_layers)]
            keys = self.attention(enc)  # [batch, src_len, h]
            feed = pd.zeros([src.shape[0], h], dtype="float32")
            emb = self.tgt_embedding(tgt)
            logits = []
            for t in range(a.tgt_len):
                x = pd.concat([emb[:, t], feed], axis=-1)
                new_states = []
                for i, cell in enumerate(self.cells):
                    x, state = cell(x, states[i])
                    new_states.append(state)
                states = new_states
                scores = pd.matmul(keys, x.unsqueeze(-1)).squeeze(-1)  # [batch, src_len]
                context = pd.matmul(F.softmax(scores, axis=-1).unsqueeze(1), enc).squeeze(1)
                feed = pd.tanh(self.combine(pd.concat([context, x], axis=-1)))
                logits.append(self.output(feed))
            return pd.stack(logits, axis=1)

    def make_batch(rng: np.random.Generator):
        src = rng.integers(1, a.src_vocab, size=(a.batch_size, a.src_len)).astype("int64")
        tgt = rng.integers(1, a.tgt_vocab, size=(a.batch_size, a.tgt_len + 1)).astype("int64")
        return (src, tgt[:, :-1]), (tgt[:, 1:, None],)

    return Built(AttentionSeq2Seq(), make_batch, F.cross_entropy, a.batch_size * a.tgt_len, "tokens")


ENTRIES = [
    ModelEntry(
        "seq2seq",
        "seq2seq",
        Seq2SeqArgs,
        _estimate,
        _build,
        "LSTM encoder-decoder with Luong attention and input feeding (tokens/step)",
        frozenset({"lstm", "tanh", "softmax", "embedding"}),
    )
]
