"""DenseNet-121, -161, -169 and -201 (Huang et al., "Densely Connected Convolutional Networks",
2016), with MXNet 1.9.1's model-zoo layers and names (``densenet0_stage1_conv0_weight``).

Each layer of a dense block appends ``growth_rate`` channels to its input (batch norm, ReLU, 1x1
convolution to ``bn_size * growth_rate``, batch norm, ReLU, 3x3 convolution, optional dropout);
a transition between blocks halves the channels (1x1 convolution) and the resolution (2x2
average pooling).

>>> net = densenet121(classes=10)
>>> net.features[4][0][1][2].weight.shape
(128, 0, 1, 1)
"""
from __future__ import annotations

from typing import Any

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent, Identity
from ._common import constructor, finish

__all__ = ["DenseNet", "get_densenet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _bn_relu_conv(seq: nn.HybridSequential, channels: int, kernel: int, padding: int = 0) -> None:
    seq.add(nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(channels, kernel_size=kernel, padding=padding, use_bias=False))


def _dense_layer(growth_rate: int, bn_size: int, dropout: float) -> HybridConcurrent:
    new = nn.HybridSequential(prefix="")
    _bn_relu_conv(new, bn_size * growth_rate, 1)
    _bn_relu_conv(new, growth_rate, 3, 1)
    if dropout:
        new.add(nn.Dropout(dropout))
    joined = HybridConcurrent(axis=1, prefix="")
    joined.add(Identity(), new)
    return joined


def _dense_block(count: int, bn_size: int, growth_rate: int, dropout: float,
                 index: int) -> nn.HybridSequential:
    block = nn.HybridSequential(prefix=f"stage{index}_")
    with block.name_scope():
        for _ in range(count):
            block.add(_dense_layer(growth_rate, bn_size, dropout))
    return block


def _transition(channels: int) -> nn.HybridSequential:
    seq = nn.HybridSequential(prefix="")
    _bn_relu_conv(seq, channels, 1)
    seq.add(nn.AvgPool2D(pool_size=2, strides=2))
    return seq


class DenseNet(HybridBlock):
    """A 7x7 convolution of ``num_init_features`` channels with batch norm, ReLU and max pooling;
    dense blocks of ``block_config[i]`` layers adding ``growth_rate`` channels each, with
    transitions between them; batch norm, ReLU, 7x7 average pooling; the ``classes``-unit
    ``output`` (``bn_size``: the bottleneck width factor, ``dropout``: the rate after each layer).

    >>> net = DenseNet(4, 2, [1, 1], classes=3)
    >>> [type(b).__name__ for b in net.features][6:]
    ['HybridSequential', 'BatchNorm', 'Activation', 'AvgPool2D', 'Flatten']
    """

    def __init__(self, num_init_features: int, growth_rate: int, block_config: list[int], bn_size: int = 4,
                 dropout: float = 0, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3,
                                        use_bias=False),
                              nn.BatchNorm(), nn.Activation("relu"),
                              nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            width = num_init_features
            for i, count in enumerate(block_config):
                self.features.add(_dense_block(count, bn_size, growth_rate, dropout, i + 1))
                width += count * growth_rate
                if i < len(block_config) - 1:
                    width //= 2
                    self.features.add(_transition(width))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return self.output(self.features(x))


# depth -> (channels of the first convolution, growth rate, layers of each dense block)
_SPEC = {121: (64, 32, [6, 12, 24, 16]), 161: (96, 48, [6, 12, 36, 24]),
         169: (64, 32, [6, 12, 32, 32]), 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers: int, pretrained: bool = False, ctx: Any = None, root: str | None = None,  # noqa: FBT001, FBT002
                 **kwargs: Any) -> DenseNet:
    """DenseNet with ``num_layers`` (121, 161, 169 or 201) layers; ``pretrained`` loads
    ``densenet<n>``'s published parameters from ``root`` (nothing is downloaded).

    >>> len(get_densenet(169).features[8])   # the third dense block
    32
    """
    if num_layers not in _SPEC:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are {sorted(_SPEC)}")
    init, growth, blocks = _SPEC[num_layers]
    return finish(DenseNet(init, growth, blocks, **kwargs), f"densenet{num_layers}", pretrained, ctx, root)


def _densenet(depth: int) -> Any:
    return constructor(f"densenet{depth}", f"DenseNet-{depth} (\"Densely Connected Convolutional "
                       "Networks\").", lambda **kw: get_densenet(depth, **kw), f"densenet{depth}")


densenet121, densenet161, densenet169, densenet201 = (_densenet(d) for d in _SPEC)
