"""DeepLabV3 (PB's CI: ResNet-50 backbone, batch 4, 512x1024 crops of Cityscapes, 19 classes): the
first three stages of paddle.vision's ResNet as the backbone, atrous spatial pyramid pooling
(1x1, three dilated 3x3 branches at rates 6, 12, 18 and image pooling), a 1x1 classifier,
bilinear upsampling to the input size and a per-pixel cross entropy. Importing this module imports
no framework."""

from __future__ import annotations

import numpy as np

from benchmark.runners import paddle_common as pc
from benchmark.runners.models.registry import Built, Count, ModelArgs, ModelEntry


class DeepLabArgs(ModelArgs):
    batch_size: Count = 2
    height: Count = 64
    width_pixels: Count = 64
    width: Count = 16  # ResNet's bottleneck inner width (64)
    aspp_channels: Count = 32  # 256
    num_classes: Count = 5  # 19


def _estimate(a: DeepLabArgs) -> tuple[int, int]:
    w = a.width / 64
    backbone = int(8_500_000 * w)  # ResNet-50's first three stages
    c_in, c = 1024, a.aspp_channels
    params = backbone + c_in * c * (1 + 27 + 1) + 5 * c * c + c * a.num_classes
    pixels = a.height * a.width_pixels
    return params, int(a.batch_size * pixels * (20 * w * 64 + 4 * a.num_classes))


def _build(a: DeepLabArgs) -> Built:
    pd = pc.paddle()
    nn, F = pd.nn, pd.nn.functional
    from benchmark.runners.models.vision import ResNetArgs, resnet

    base = resnet(ResNetArgs(width=a.width, num_classes=1))
    c_in, c = 1024, a.aspp_channels  # layer3's output channels, whatever the width

    def branch(k, rate):
        return nn.Sequential(
            nn.Conv2D(c_in, c, k, padding=0 if k == 1 else rate, dilation=rate, bias_attr=False),
            nn.BatchNorm2D(c),
            nn.ReLU(),
        )

    class DeepLabV3(nn.Layer):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(base.conv1, base.bn1, base.relu, base.maxpool)
            self.backbone = nn.Sequential(base.layer1, base.layer2, base.layer3)
            self.branches = nn.LayerList([branch(1, 1), branch(3, 6), branch(3, 12), branch(3, 18)])
            self.image_pool = nn.Sequential(nn.AdaptiveAvgPool2D(1), nn.Conv2D(c_in, c, 1), nn.ReLU())
            self.project = nn.Sequential(
                nn.Conv2D(5 * c, c, 1, bias_attr=False), nn.BatchNorm2D(c), nn.ReLU()
            )
            self.classifier = nn.Conv2D(c, a.num_classes, 1)

        def forward(self, x):
            size = x.shape[2:]
            f = self.backbone(self.stem(x))
            pooled = F.interpolate(self.image_pool(f), size=f.shape[2:], mode="bilinear")
            y = self.project(pd.concat([b(f) for b in self.branches] + [pooled], axis=1))
            return F.interpolate(self.classifier(y), size=size, mode="bilinear", align_corners=False)

    def make_batch(rng: np.random.Generator):
        x = rng.standard_normal((a.batch_size, 3, a.height, a.width_pixels)).astype("float32")
        y = rng.integers(0, a.num_classes, size=(a.batch_size, a.height, a.width_pixels, 1)).astype("int64")
        return (x,), (y,)

    def loss(logits, labels):
        return F.cross_entropy(logits.transpose([0, 2, 3, 1]), labels)

    return Built(DeepLabV3(), make_batch, loss, a.batch_size)


ENTRIES = [
    ModelEntry(
        "deeplabv3",
        "segmentation",
        DeepLabArgs,
        _estimate,
        _build,
        "DeepLabV3: ResNet stages 1-3, ASPP with dilated convolutions, per-pixel cross entropy",
        frozenset({"conv2d", "batch_norm", "relu", "interpolate"}),
    )
]
