"""CycleGAN (PB's CI: batch 1, 256x256, ResNet generators with 9 residual blocks, 70x70 PatchGAN
discriminators): two generators (A->B, B->A) and two discriminators. One training step is one
backward of the generators' loss (least-squares GAN loss plus cycle consistency, weight 10) and the
discriminators' loss on detached fakes, with one Adam over all four networks (the original
alternates two optimizers: the same operators, a different schedule). Importing this module
imports no framework."""

from __future__ import annotations

import numpy as np

from benchmark.runners import paddle_common as pc
from benchmark.runners.models.registry import Built, Count, ModelArgs, ModelEntry


class CycleGanArgs(ModelArgs):
    batch_size: Count = 1
    image_size: Count = 32  # 256
    width: Count = 8  # 64
    res_blocks: Count = 2  # 9


def _estimate(a: CycleGanArgs) -> tuple[int, int]:
    w = a.width
    generator = 49 * 3 * w * 2 + 9 * (w * 2 * w + 2 * w * 4 * w) * 2 + a.res_blocks * 2 * 9 * (4 * w) ** 2
    discriminator = 16 * (3 * w + w * 2 * w + 2 * w * 4 * w + 4 * w * 8 * w + 8 * w)
    pixels = a.image_size**2
    return 2 * (generator + discriminator), a.batch_size * pixels * w * (40 + 4 * a.res_blocks)


def _build(a: CycleGanArgs) -> Built:
    pd = pc.paddle()
    nn, F = pd.nn, pd.nn.functional
    w = a.width

    def conv_norm(cin, cout, k, stride=1, pad=0, act=None, transpose=False):
        conv_cls = nn.Conv2DTranspose if transpose else nn.Conv2D
        extra = {"output_padding": 1} if transpose else {}
        layers = [conv_cls(cin, cout, k, stride=stride, padding=pad, **extra), nn.InstanceNorm2D(cout)]
        return nn.Sequential(*layers, act or nn.ReLU())

    class ResBlock(nn.Layer):
        def __init__(self, c):
            super().__init__()
            self.body = nn.Sequential(
                nn.Pad2D(1, mode="reflect"),
                conv_norm(c, c, 3),
                nn.Pad2D(1, mode="reflect"),
                nn.Conv2D(c, c, 3),
                nn.InstanceNorm2D(c),
            )

        def forward(self, x):
            return x + self.body(x)

    def generator():
        return nn.Sequential(
            nn.Pad2D(3, mode="reflect"),
            conv_norm(3, w, 7),
            conv_norm(w, 2 * w, 3, stride=2, pad=1),
            conv_norm(2 * w, 4 * w, 3, stride=2, pad=1),
            *[ResBlock(4 * w) for _ in range(a.res_blocks)],
            conv_norm(4 * w, 2 * w, 3, stride=2, pad=1, transpose=True),
            conv_norm(2 * w, w, 3, stride=2, pad=1, transpose=True),
            nn.Pad2D(3, mode="reflect"),
            nn.Conv2D(w, 3, 7),
            nn.Tanh(),
        )

    def discriminator():
        def leaky():
            return nn.LeakyReLU(0.2)

        return nn.Sequential(
            nn.Conv2D(3, w, 4, stride=2, padding=1),
            leaky(),
            conv_norm(w, 2 * w, 4, stride=2, pad=1, act=leaky()),
            conv_norm(2 * w, 4 * w, 4, stride=2, pad=1, act=leaky()),
            conv_norm(4 * w, 8 * w, 4, stride=1, pad=1, act=leaky()),
            nn.Conv2D(8 * w, 1, 4, stride=1, padding=1),
        )

    class CycleGAN(nn.Layer):
        def __init__(self):
            super().__init__()
            self.g_ab, self.g_ba = generator(), generator()
            self.d_a, self.d_b = discriminator(), discriminator()

        def forward(self, real_a, real_b):
            fake_b, fake_a = self.g_ab(real_a), self.g_ba(real_b)
            cycle = F.l1_loss(self.g_ba(fake_b), real_a) + F.l1_loss(self.g_ab(fake_a), real_b)
            pred_b, pred_a = self.d_b(fake_b), self.d_a(fake_a)
            g_loss = (
                F.mse_loss(pred_b, pd.ones_like(pred_b))
                + F.mse_loss(pred_a, pd.ones_like(pred_a))
                + 10 * cycle
            )
            d_loss = 0.0
            for d, real, fake in ((self.d_a, real_a, fake_a), (self.d_b, real_b, fake_b)):
                p_real, p_fake = d(real), d(fake.detach())
                d_loss = d_loss + 0.5 * (
                    F.mse_loss(p_real, pd.ones_like(p_real)) + F.mse_loss(p_fake, pd.zeros_like(p_fake))
                )
            return g_loss + d_loss

    def make_batch(rng: np.random.Generator):
        shape = (a.batch_size, 3, a.image_size, a.image_size)
        return (
            rng.uniform(-1, 1, shape).astype("float32"),
            rng.uniform(-1, 1, shape).astype("float32"),
        ), ()

    def loss(out):
        return out

    return Built(CycleGAN(), make_batch, loss, a.batch_size)


ENTRIES = [
    ModelEntry(
        "cyclegan",
        "gan",
        CycleGanArgs,
        _estimate,
        _build,
        "CycleGAN: two ResNet generators, two PatchGAN discriminators, LSGAN + cycle loss",
        frozenset({"conv2d", "conv2d_transpose", "instance_norm", "relu", "leaky_relu", "tanh", "pad"}),
    )
]
