"""Image classifiers from `paddle.vision.models` with random weights (nothing is downloaded):
ResNet-18, ResNet-50 (PaddlePaddle/benchmark's model CI: batch 32, and pure fp16 at batch 64) and
MobileNetV1 (batch 128 in PB's CI), each with a width argument so that the small size trains on a
CPU in seconds. Importing this module imports no framework."""

from __future__ import annotations

from typing import Literal

import numpy as np

from benchmark.runners import paddle_common as pc
from benchmark.runners.models.registry import Built, Count, ModelArgs, ModelEntry


class ResNet18Args(ModelArgs):
    batch_size: Count = 4
    image_size: Count = 224
    num_classes: Count = 1000


class ResNetArgs(ModelArgs):
    batch_size: Count = 4
    image_size: Count = 32
    width: Count = 16  # the bottleneck's inner width (paddle.vision's `width`; 64 in ResNet-50)
    depth: Literal[50, 101, 152] = 50
    num_classes: Count = 100


class MobileNetArgs(ModelArgs):
    batch_size: Count = 4
    image_size: Count = 64
    scale_percent: Count = 25  # MobileNetV1's width multiplier in percent (100 in PB's CI)
    num_classes: Count = 100


def classify_batch(a, image_size: int):
    def make_batch(rng: np.random.Generator):
        x = rng.standard_normal((a.batch_size, 3, image_size, image_size)).astype("float32")
        y = rng.integers(0, a.num_classes, size=(a.batch_size, 1)).astype("int64")
        return (x,), (y,)

    return make_batch


def _resnet18_estimate(a: ResNet18Args) -> tuple[int, int]:
    # 11.2M weights before the head; about 10M saved activations per 224x224 image
    return 11_200_000 + 513 * a.num_classes, a.batch_size * 10_000_000 * a.image_size**2 // 224**2


def _resnet18(a: ResNet18Args) -> Built:
    pd = pc.paddle()
    from paddle.vision.models import resnet18

    net = resnet18(pretrained=False, num_classes=a.num_classes)
    return Built(net, classify_batch(a, a.image_size), pd.nn.functional.cross_entropy, a.batch_size)


_RESNET_PARAMS = {50: 23_500_000, 101: 42_500_000, 152: 58_100_000}  # at width 64, before the head
_RESNET_ACTIVATIONS = {50: 23_000_000, 101: 35_000_000, 152: 49_000_000}  # per 224x224 image, width 64


def resnet_estimate(a: ResNetArgs) -> tuple[int, int]:
    # the stages' input and output channels do not depend on the width: the weights scale about
    # linearly with it (measured: 6.1M at width 16, 25.6M at 64)
    w = a.width / 64
    params = int(_RESNET_PARAMS[a.depth] * w) + 2049 * a.num_classes
    return params, int(a.batch_size * _RESNET_ACTIVATIONS[a.depth] * (0.5 + w / 2) * a.image_size**2 / 224**2)


def resnet(a: ResNetArgs):
    """paddle.vision's ResNet (bottleneck blocks) at `a.width` and `a.depth`, random weights."""
    from paddle.vision.models.resnet import BottleneckBlock, ResNet

    return ResNet(BottleneckBlock, depth=a.depth, width=a.width, num_classes=a.num_classes)


def _resnet(a: ResNetArgs) -> Built:
    pd = pc.paddle()
    return Built(resnet(a), classify_batch(a, a.image_size), pd.nn.functional.cross_entropy, a.batch_size)


def _mobilenet_estimate(a: MobileNetArgs) -> tuple[int, int]:
    s = a.scale_percent / 100
    params = int(3_200_000 * s * s) + (int(1024 * s) + 1) * a.num_classes
    return params, int(a.batch_size * 12_000_000 * s * a.image_size**2 / 224**2)


def _mobilenet(a: MobileNetArgs) -> Built:
    pd = pc.paddle()
    from paddle.vision.models import MobileNetV1

    net = MobileNetV1(scale=a.scale_percent / 100, num_classes=a.num_classes)
    return Built(net, classify_batch(a, a.image_size), pd.nn.functional.cross_entropy, a.batch_size)


_CONV = frozenset({"conv2d", "batch_norm", "relu"})

ENTRIES = [
    ModelEntry(
        "resnet18",
        "vision",
        ResNet18Args,
        _resnet18_estimate,
        _resnet18,
        "paddle.vision ResNet-18 at 224x224",
        _CONV,
    ),
    ModelEntry("resnet50", "vision", ResNetArgs, resnet_estimate, _resnet, "paddle.vision ResNet-50", _CONV),
    ModelEntry(
        "mobilenet_v1",
        "vision",
        MobileNetArgs,
        _mobilenet_estimate,
        _mobilenet,
        "paddle.vision MobileNetV1 (depthwise separable convolutions)",
        _CONV,
    ),
]
