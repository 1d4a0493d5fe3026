"""YOLOv3 (PB's CI: DarkNet-53 backbone, 608x608, batch 8): the DarkNet backbone (conv, batch
norm, leaky relu, residual blocks), three detection heads joined by upsampling and concatenation,
and a YOLO-style loss (objectness and class logits by binary cross entropy, box offsets by L1)
against synthetic targets. The loss is a stand-in for YOLOv3's (no anchor matching, which is data
dependent host work), so the step exercises the network's operators, not the target assignment.

PP-YOLOv2 and Mask R-CNN are not registered: PP-YOLOv2 is this network with a ResNet50-vd backbone,
a PAN neck and Mish, and Mask R-CNN needs region proposals, RoIAlign and a mask head whose cost is
in data dependent host work (docs/models.md). Importing this module imports no
framework."""

from __future__ import annotations

from typing import Literal

import numpy as np

from benchmark.runners import paddle_common as pc
from benchmark.runners.models.registry import Built, Count, ModelArgs, ModelEntry

# residual blocks per stage: DarkNet-53, or one per stage for the small size
_STAGES = {"darknet53": (1, 2, 8, 8, 4), "tiny": (1, 1, 1, 1, 1)}


class YoloArgs(ModelArgs):
    batch_size: Count = 2
    image_size: Count = 64  # a multiple of 32
    width: Count = 8  # channels of the stem (32 in DarkNet-53)
    backbone: Literal["darknet53", "tiny"] = "tiny"
    num_classes: Count = 4  # 80 (COCO)


def _estimate(a: YoloArgs) -> tuple[int, int]:
    w, stages = a.width, _STAGES[a.backbone]
    params = 9 * 3 * w
    for i, n in enumerate(stages):
        c = w * 2 ** (i + 1)
        params += 9 * c * c // 2 + n * (c * c // 2 + 9 * c * c // 2)
    params += 3 * 10 * (w * 32) ** 2  # heads
    # saved tensors (conv, norm, activation) per stage: channels x pixels halve with each stage
    saved = 3 + sum((3 + 6 * n) / 2 ** (i + 1) for i, n in enumerate(stages)) + 4
    return params, int(a.batch_size * a.image_size**2 * w * saved)


def _build(a: YoloArgs) -> Built:
    pd = pc.paddle()
    nn, F = pd.nn, pd.nn.functional
    outputs = 3 * (5 + a.num_classes)

    def conv(cin, cout, k=3, stride=1):
        return nn.Sequential(
            nn.Conv2D(cin, cout, k, stride=stride, padding=k // 2, bias_attr=False),
            nn.BatchNorm2D(cout),
            nn.LeakyReLU(0.1),
        )

    class Residual(nn.Layer):
        def __init__(self, c):
            super().__init__()
            self.body = nn.Sequential(conv(c, c // 2, 1), conv(c // 2, c))

        def forward(self, x):
            return x + self.body(x)

    class Yolo(nn.Layer):
        def __init__(self):
            super().__init__()
            w = a.width
            self.stem = conv(3, w)
            stages, c = [], w
            for n in _STAGES[a.backbone]:
                stages.append(nn.Sequential(conv(c, 2 * c, stride=2), *[Residual(2 * c) for _ in range(n)]))
                c *= 2
            self.stages = nn.LayerList(stages)
            # heads at strides 32, 16 and 8; each joins the upsampled head above it
            self.neck32 = nn.Sequential(conv(c, c // 2, 1), conv(c // 2, c), conv(c, c // 2, 1))
            self.out32 = nn.Sequential(conv(c // 2, c), nn.Conv2D(c, outputs, 1))
            self.lat16 = conv(c // 2, c // 4, 1)
            self.neck16 = nn.Sequential(
                conv(c // 2 + c // 4, c // 4, 1), conv(c // 4, c // 2), conv(c // 2, c // 4, 1)
            )
            self.out16 = nn.Sequential(conv(c // 4, c // 2), nn.Conv2D(c // 2, outputs, 1))
            self.lat8 = conv(c // 4, c // 8, 1)
            self.neck8 = nn.Sequential(
                conv(c // 4 + c // 8, c // 8, 1), conv(c // 8, c // 4), conv(c // 4, c // 8, 1)
            )
            self.out8 = nn.Sequential(conv(c // 8, c // 4), nn.Conv2D(c // 4, outputs, 1))

        def forward(self, x):
            feats = []
            x = self.stem(x)
            for stage in self.stages:
                x = stage(x)
                feats.append(x)
            c8, c16, c32 = feats[-3:]
            p32 = self.neck32(c32)
            up = F.interpolate(self.lat16(p32), scale_factor=2, mode="nearest")
            p16 = self.neck16(pd.concat([up, c16], axis=1))
            up = F.interpolate(self.lat8(p16), scale_factor=2, mode="nearest")
            p8 = self.neck8(pd.concat([up, c8], axis=1))
            return self.out32(p32), self.out16(p16), self.out8(p8)

    def make_batch(rng: np.random.Generator):
        x = rng.standard_normal((a.batch_size, 3, a.image_size, a.image_size)).astype("float32")
        targets = []
        for stride in (32, 16, 8):
            g = a.image_size // stride
            t = (rng.random((a.batch_size, outputs, g, g)) < 0.05).astype("float32")
            targets.append(t)
        return (x,), tuple(targets)

    def loss(out, *targets):
        total = 0.0
        for pred, t in zip(out, targets, strict=True):
            p = pred.reshape([pred.shape[0], 3, 5 + a.num_classes, pred.shape[2], pred.shape[3]])
            tt = t.reshape(p.shape)
            box = F.l1_loss(F.sigmoid(p[:, :, :4]), tt[:, :, :4])
            logits = F.binary_cross_entropy_with_logits(p[:, :, 4:], tt[:, :, 4:])
            total = total + box + logits
        return total

    return Built(Yolo(), make_batch, loss, a.batch_size)


ENTRIES = [
    ModelEntry(
        "yolov3",
        "detection",
        YoloArgs,
        _estimate,
        _build,
        "YOLOv3: DarkNet backbone, three heads, YOLO-style loss on synthetic targets (leaky relu)",
        frozenset({"conv2d", "batch_norm", "leaky_relu", "interpolate", "sigmoid"}),
    )
]
