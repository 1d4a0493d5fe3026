"""TSM, the temporal shift module (PB's CI: ResNet-50 backbone, 8 segments a clip, batch 16
clips, 224x224, Kinetics-400): paddle.vision's ResNet with `paddle.nn.functional.temporal_shift`
before the first convolution of every bottleneck block; the clip's frames are classified one by
one and their logits averaged. Importing this module imports no framework."""

from __future__ import annotations

import numpy as np

from benchmark.runners import paddle_common as pc
from benchmark.runners.models.registry import Built, Count, ModelArgs, ModelEntry
from benchmark.runners.models.vision import ResNetArgs, resnet_estimate


class TsmArgs(ModelArgs):
    batch_size: Count = 2  # clips
    segments: Count = 2  # frames a clip (8)
    image_size: Count = 32
    width: Count = 16
    num_classes: Count = 20  # 400


def _as_resnet(a: TsmArgs) -> ResNetArgs:
    return ResNetArgs(
        batch_size=a.batch_size * a.segments,
        image_size=a.image_size,
        width=a.width,
        num_classes=a.num_classes,
    )


def _estimate(a: TsmArgs) -> tuple[int, int]:
    params, activations = resnet_estimate(_as_resnet(a))
    return params, activations * 5 // 4  # the shifted copies


def _build(a: TsmArgs) -> Built:
    pd = pc.paddle()
    nn, F = pd.nn, pd.nn.functional
    from benchmark.runners.models.vision import resnet

    class TemporalShift(nn.Layer):
        def forward(self, x):
            return F.temporal_shift(x, seg_num=a.segments, shift_ratio=0.125)

    class TSM(nn.Layer):
        def __init__(self):
            super().__init__()
            self.backbone = resnet(_as_resnet(a))
            for stage in (
                self.backbone.layer1,
                self.backbone.layer2,
                self.backbone.layer3,
                self.backbone.layer4,
            ):
                for block in stage:
                    block.conv1 = nn.Sequential(TemporalShift(), block.conv1)

        def forward(self, clips):
            frames = clips.reshape([-1, 3, a.image_size, a.image_size])
            logits = self.backbone(frames).reshape([-1, a.segments, a.num_classes])
            return logits.mean(axis=1)

    def make_batch(rng: np.random.Generator):
        shape = (a.batch_size, a.segments, 3, a.image_size, a.image_size)
        x = rng.standard_normal(shape).astype("float32")
        y = rng.integers(0, a.num_classes, size=(a.batch_size, 1)).astype("int64")
        return (x,), (y,)

    return Built(TSM(), make_batch, F.cross_entropy, a.batch_size)


ENTRIES = [
    ModelEntry(
        "tsm",
        "video",
        TsmArgs,
        _estimate,
        _build,
        "TSM: ResNet with a temporal shift in every bottleneck block, logits averaged over a clip",
        frozenset({"conv2d", "batch_norm", "relu", "temporal_shift"}),
    )
]
