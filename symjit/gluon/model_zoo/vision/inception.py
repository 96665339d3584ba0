"""Inception v3 (Szegedy et al., "Rethinking the Inception Architecture for Computer Vision",
2015), with MXNet 1.9.1's model-zoo layers and names (``inception30_A1_conv0_weight``); it
expects 299x299 images.

Each mixed block (``A1_`` .. ``E2_``) runs branches of convolutions (each a bias-free convolution,
batch norm with epsilon 0.001 and ReLU) side by side and concatenates their channels.

>>> import symjit as mx
>>> with mx.name.NameManager():   # block names counted from 0
...     net = inception_v3(classes=10)
>>> net.features[7].prefix, net.output.weight.shape
('inception30_A1_', (10, 0))
"""
from __future__ import annotations

from typing import Any

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ._common import constructor

__all__ = ["Inception3", "inception_v3"]


def _conv_unit(**conv: Any) -> nn.HybridSequential:
    """Convolution (no bias), batch norm (epsilon 0.001), ReLU."""
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(use_bias=False, **conv), nn.BatchNorm(epsilon=0.001), nn.Activation("relu"))
    return seq


def _branch(pool: str | None, *convs: tuple) -> nn.HybridSequential:
    """An optional pooling ('avg': 3x3 stride 1 padded; 'max': 3x3 stride 2), then a conv unit per
    ``(channels, kernel, strides, padding)``, None meaning the default."""
    seq = nn.HybridSequential(prefix="")
    if pool == "avg":
        seq.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        seq.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in convs:
        names = ("channels", "kernel_size", "strides", "padding")
        seq.add(_conv_unit(**{k: v for k, v in zip(names, setting) if v is not None}))
    return seq


def _mixed(prefix: str, *branches: Any) -> HybridConcurrent:
    """A concatenation named ``prefix`` of ``branches``: each a ``(pool, *convs)`` tuple for
    :func:`_branch`, or a callable making a block (called inside the mixed block's scope)."""
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for b in branches:
            out.add(b() if callable(b) else _branch(*b))
    return out


def _split(head: tuple, width: int) -> Any:
    """E's widening branch: ``head`` convolutions, then 1x3 and 3x1 convolutions of ``width``
    channels side by side."""

    def make() -> nn.HybridSequential:
        seq = nn.HybridSequential(prefix="")
        seq.add(_branch(None, *head))
        pair = HybridConcurrent(axis=1, prefix="")
        pair.add(_branch(None, (width, (1, 3), None, (0, 1))), _branch(None, (width, (3, 1), None, (1, 0))))
        seq.add(pair)
        return seq
    return make


def _block_a(pool_features: int, prefix: str) -> HybridConcurrent:
    return _mixed(prefix, (None, (64, 1, None, None)),
                  (None, (48, 1, None, None), (64, 5, None, 2)),
                  (None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
                  ("avg", (pool_features, 1, None, None)))


def _block_b(prefix: str) -> HybridConcurrent:
    return _mixed(prefix, (None, (384, 3, 2, None)),
                  (None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
                  ("max",))


def _block_c(c7: int, prefix: str) -> HybridConcurrent:
    row, col = ((1, 7), (0, 3)), ((7, 1), (3, 0))   # (kernel, padding) of a 1x7 and a 7x1 conv
    return _mixed(prefix, (None, (192, 1, None, None)),
                  (None, (c7, 1, None, None), (c7, row[0], None, row[1]), (192, col[0], None, col[1])),
                  (None, (c7, 1, None, None), (c7, col[0], None, col[1]), (c7, row[0], None, row[1]),
                   (c7, col[0], None, col[1]), (192, row[0], None, row[1])),
                  ("avg", (192, 1, None, None)))


def _block_d(prefix: str) -> HybridConcurrent:
    return _mixed(prefix, (None, (192, 1, None, None), (320, 3, 2, None)),
                  (None, (192, 1, None, None), (192, (1, 7), None, (0, 3)), (192, (7, 1), None, (3, 0)),
                   (192, 3, 2, None)),
                  ("max",))


def _block_e(prefix: str) -> HybridConcurrent:
    return _mixed(prefix, (None, (320, 1, None, None)),
                  _split(((384, 1, None, None),), 384),
                  _split(((448, 1, None, None), (384, 3, None, 1)), 384),
                  ("avg", (192, 1, None, None)))


class Inception3(HybridBlock):
    """Inception v3 with ``classes`` outputs (no auxiliary classifier, as in MXNet's zoo).

    >>> Inception3(classes=5).features[0][0].weight.shape
    (32, 0, 3, 3)
    """

    def __init__(self, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            f = self.features
            f.add(_conv_unit(channels=32, kernel_size=3, strides=2), _conv_unit(channels=32, kernel_size=3),
                  _conv_unit(channels=64, kernel_size=3, padding=1), nn.MaxPool2D(pool_size=3, strides=2),
                  _conv_unit(channels=80, kernel_size=1), _conv_unit(channels=192, kernel_size=3),
                  nn.MaxPool2D(pool_size=3, strides=2))
            f.add(_block_a(32, "A1_"), _block_a(64, "A2_"), _block_a(64, "A3_"), _block_b("B_"))
            f.add(_block_c(128, "C1_"), _block_c(160, "C2_"), _block_c(160, "C3_"), _block_c(192, "C4_"))
            f.add(_block_d("D_"), _block_e("E1_"), _block_e("E2_"))
            f.add(nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return self.output(self.features(x))


inception_v3 = constructor("inception_v3", "Inception v3 (\"Rethinking the Inception Architecture for "
                           "Computer Vision\").", Inception3, "inceptionv3")
