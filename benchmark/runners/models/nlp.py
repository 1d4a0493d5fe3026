"""Transformer models built from `paddle.nn`: BERT pre-training (masked LM on every position plus
next-sentence classification; PB's CI: BERT-base, sequence 128, batch 32) and the Transformer
encoder-decoder of machine translation (PB's CI: Transformer-base with AMP, 4096 tokens a batch).
Importing this module imports no framework."""

from __future__ import annotations

import numpy as np

from benchmark.runners import paddle_common as pc
from benchmark.runners.models.registry import Built, Count, ModelArgs, ModelEntry


class BertArgs(ModelArgs):
    batch_size: Count = 4
    seq_len: Count = 32
    hidden_size: Count = 64  # BERT-base: 768
    num_layers: Count = 2  # 12
    num_heads: Count = 2  # 12
    vocab_size: Count = 500  # 30522


def _bert_estimate(a: BertArgs) -> tuple[int, int]:
    h, v = a.hidden_size, a.vocab_size
    params = (v + 512 + 2) * h + a.num_layers * 12 * h * h + h * h + h * v + 2 * h
    tokens = a.batch_size * a.seq_len
    return params, tokens * (a.num_layers * (20 * h + 2 * a.num_heads * a.seq_len) + 2 * v)


def _bert(a: BertArgs) -> Built:
    pd = pc.paddle()
    nn, F = pd.nn, pd.nn.functional
    h = a.hidden_size

    class Bert(nn.Layer):
        def __init__(self):
            super().__init__()
            self.words = nn.Embedding(a.vocab_size, h)
            self.positions = nn.Embedding(max(512, a.seq_len), h)
            self.segments = nn.Embedding(2, h)
            self.norm = nn.LayerNorm(h)
            self.dropout = nn.Dropout(0.1)
            layer = nn.TransformerEncoderLayer(h, a.num_heads, 4 * h, dropout=0.1, activation="gelu")
            self.encoder = nn.TransformerEncoder(layer, a.num_layers)
            self.pooler = nn.Linear(h, h)
            self.mlm = nn.Linear(h, a.vocab_size)
            self.nsp = nn.Linear(h, 2)

        def forward(self, tokens, segments):
            positions = pd.arange(tokens.shape[1], dtype="int64").unsqueeze(0)
            x = self.words(tokens) + self.positions(positions) + self.segments(segments)
            x = self.encoder(self.dropout(self.norm(x)))
            return self.mlm(x), self.nsp(pd.tanh(self.pooler(x[:, 0])))

    def make_batch(rng: np.random.Generator):
        tokens = rng.integers(0, a.vocab_size, size=(a.batch_size, a.seq_len)).astype("int64")
        segments = (np.arange(a.seq_len)[None, :] >= a.seq_len // 2).astype("int64").repeat(a.batch_size, 0)
        masked = rng.integers(0, a.vocab_size, size=(a.batch_size, a.seq_len, 1)).astype("int64")
        nsp = rng.integers(0, 2, size=(a.batch_size, 1)).astype("int64")
        return (tokens, segments), (masked, nsp)

    def loss(out, masked, nsp):
        mlm_logits, nsp_logits = out
        return F.cross_entropy(mlm_logits, masked) + F.cross_entropy(nsp_logits, nsp)

    return Built(Bert(), make_batch, loss, a.batch_size)


class TransformerArgs(ModelArgs):
    batch_size: Count = 4  # sentences; PB: 4096 tokens a batch (about 128 sentences of 32 tokens)
    seq_len: Count = 16
    d_model: Count = 64  # base: 512
    num_heads: Count = 2  # 8
    num_layers: Count = 2  # 6 encoder and 6 decoder layers
    ffn_size: Count = 128  # 2048
    vocab_size: Count = 500  # 37000 (WMT16 en-de, shared BPE)


def _transformer_estimate(a: TransformerArgs) -> tuple[int, int]:
    d, v = a.d_model, a.vocab_size
    params = (
        2 * v * d
        + a.num_layers * (4 * d * d + 2 * d * a.ffn_size)
        + a.num_layers * (8 * d * d + 2 * d * a.ffn_size)
    )
    tokens = a.batch_size * a.seq_len
    return params, tokens * (a.num_layers * (30 * d + 3 * a.ffn_size + 6 * a.num_heads * a.seq_len) + 2 * v)


def _transformer(a: TransformerArgs) -> Built:
    pd = pc.paddle()
    nn, F = pd.nn, pd.nn.functional
    d = a.d_model

    class Translator(nn.Layer):
        def __init__(self):
            super().__init__()
            self.src_embedding = nn.Embedding(a.vocab_size, d)
            self.tgt_embedding = nn.Embedding(a.vocab_size, d)
            self.positions = nn.Embedding(max(256, a.seq_len), d)
            self.transformer = nn.Transformer(
                d, a.num_heads, a.num_layers, a.num_layers, a.ffn_size, dropout=0.1, activation="relu"
            )
            self.output = nn.Linear(d, a.vocab_size)

        def forward(self, src, tgt):
            pos = self.positions(pd.arange(src.shape[1], dtype="int64").unsqueeze(0))
            mask = self.transformer.generate_square_subsequent_mask(tgt.shape[1])
            out = self.transformer(
                self.src_embedding(src) * d**0.5 + pos, self.tgt_embedding(tgt) * d**0.5 + pos, tgt_mask=mask
            )
            return self.output(out)

    def make_batch(rng: np.random.Generator):
        src = rng.integers(1, a.vocab_size, size=(a.batch_size, a.seq_len)).astype("int64")
        tgt = rng.integers(1, a.vocab_size, size=(a.batch_size, a.seq_len + 1)).astype("int64")
        return (src, tgt[:, :-1]), (tgt[:, 1:, None],)

    def loss(logits, labels):
        # label smoothing 0.1, as PB's Transformer trains
        soft = F.label_smooth(F.one_hot(labels.squeeze(-1), a.vocab_size), epsilon=0.1)
        return F.cross_entropy(logits, soft, soft_label=True)

    return Built(Translator(), make_batch, loss, a.batch_size * a.seq_len, "tokens")


ENTRIES = [
    ModelEntry(
        "bert",
        "nlp",
        BertArgs,
        _bert_estimate,
        _bert,
        "BERT pre-training: masked LM on every position and next-sentence prediction (gelu)",
        frozenset({"gelu", "layer_norm", "softmax", "tanh", "dropout", "embedding"}),
    ),
    ModelEntry(
        "transformer",
        "nlp",
        TransformerArgs,
        _transformer_estimate,
        _transformer,
        "Transformer encoder-decoder for translation, label smoothing 0.1 (tokens/step)",
        frozenset({"relu", "layer_norm", "softmax", "dropout", "embedding"}),
    ),
]
