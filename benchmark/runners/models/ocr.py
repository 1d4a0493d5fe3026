"""PP-OCR mobile text recognition (CRNN; PB's model CI trains PP-OCR mobile at batch 8): a
MobileNetV3-style backbone (depthwise separable blocks with hardswish and squeeze-excitation) that
collapses the image's height, a bidirectional LSTM over its width and a CTC loss (PP-OCR's
recognizer: 3x32x320 inputs, 6625 characters, LSTM hidden 48). Importing this module imports no
framework."""

from __future__ import annotations

import numpy as np

from benchmark.runners import paddle_common as pc
from benchmark.runners.models.registry import Built, Count, ModelArgs, ModelEntry


class CrnnArgs(ModelArgs):
    batch_size: Count = 4
    height: Count = 32
    image_width: Count = 64  # 320
    width: Count = 8  # backbone channels (16 in MobileNetV3-small x0.5)
    hidden_size: Count = 16  # 48
    num_chars: Count = 20  # 6625
    label_len: Count = 4  # characters a text (up to 25)


def _estimate(a: CrnnArgs) -> tuple[int, int]:
    w, h = a.width, a.hidden_size
    c = 8 * w
    params = 9 * 3 * w + 4 * (9 * 2 * w + 2 * w * 2 * w) * 4 + 2 * 4 * (c * h + h * h + 2 * h)
    params += 2 * h * (a.num_chars + 1)
    pixels = a.height * a.image_width
    return params, a.batch_size * pixels * w * 6 + a.batch_size * (a.image_width // 4) * (
        8 * h + 2 * a.num_chars
    )


def _build(a: CrnnArgs) -> Built:
    pd = pc.paddle()
    nn, F = pd.nn, pd.nn.functional
    w = a.width

    def conv_bn(cin, cout, k, stride=1, groups=1, act=True):
        layers = [
            nn.Conv2D(cin, cout, k, stride=stride, padding=k // 2, groups=groups, bias_attr=False),
            nn.BatchNorm2D(cout),
        ]
        return nn.Sequential(*layers, *([nn.Hardswish()] if act else []))

    class SqueezeExcite(nn.Layer):
        def __init__(self, c):
            super().__init__()
            self.pool = nn.AdaptiveAvgPool2D(1)
            self.fc = nn.Sequential(
                nn.Conv2D(c, c // 4, 1), nn.ReLU(), nn.Conv2D(c // 4, c, 1), nn.Hardsigmoid()
            )

        def forward(self, x):
            return x * self.fc(self.pool(x))

    def block(cin, cout, stride):
        return nn.Sequential(
            conv_bn(cin, cin, 3, stride=stride, groups=cin), SqueezeExcite(cin), conv_bn(cin, cout, 1)
        )

    class CRNN(nn.Layer):
        def __init__(self):
            super().__init__()
            # strides (2, 1) halve the height only, keeping the width as time steps
            self.backbone = nn.Sequential(
                conv_bn(3, w, 3, stride=2),
                block(w, 2 * w, (2, 1)),
                block(2 * w, 4 * w, (2, 1)),
                block(4 * w, 8 * w, (2, 1)),
                block(8 * w, 8 * w, 2),
                nn.AdaptiveAvgPool2D((1, None)),
            )
            self.rnn = nn.LSTM(8 * w, a.hidden_size, num_layers=2, direction="bidirect")
            self.head = nn.Linear(2 * a.hidden_size, a.num_chars + 1)

        def forward(self, x):
            f = self.backbone(x).squeeze(2).transpose([0, 2, 1])  # [batch, time, channels]
            out, _ = self.rnn(f)
            return self.head(out)

    def make_batch(rng: np.random.Generator):
        x = rng.standard_normal((a.batch_size, 3, a.height, a.image_width)).astype("float32")
        labels = rng.integers(1, a.num_chars + 1, size=(a.batch_size, a.label_len)).astype("int32")
        return (x,), (labels,)

    def loss(logits, labels):
        log_probs = F.log_softmax(logits, axis=-1).transpose([1, 0, 2])  # [time, batch, classes]
        steps, batch = log_probs.shape[0], log_probs.shape[1]
        input_lengths = pd.full([batch], steps, dtype="int64")
        label_lengths = pd.full([batch], a.label_len, dtype="int64")
        return F.ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=0, reduction="mean")

    return Built(CRNN(), make_batch, loss, a.batch_size)


ENTRIES = [
    ModelEntry(
        "ocr_rec",
        "ocr",
        CrnnArgs,
        _estimate,
        _build,
        "PP-OCR mobile recognizer (CRNN): MobileNetV3-style backbone, BiLSTM, CTC loss",
        frozenset({"conv2d", "batch_norm", "hardswish", "hardsigmoid", "relu", "lstm", "ctc_loss"}),
    )
]
