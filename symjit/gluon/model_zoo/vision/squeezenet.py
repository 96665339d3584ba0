"""SqueezeNet 1.0 and 1.1 (Iandola et al., "SqueezeNet: AlexNet-level accuracy with 50x fewer
parameters and <0.5MB model size", 2016), with MXNet 1.9.1's model-zoo layers and names.

A fire module squeezes with a 1x1 convolution and expands with 1x1 and 3x3 convolutions side by
side (concatenated channels); 1.1 has a smaller first convolution and pools earlier.

>>> net = squeezenet1_1(classes=4)
>>> [net.features[3][1][i][0].weight.shape for i in (0, 1)]
[(64, 0, 1, 1), (64, 0, 3, 3)]
"""
from __future__ import annotations

from typing import Any

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ._common import constructor

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


def _relu_conv(channels: int, kernel: int, padding: int = 0) -> nn.HybridSequential:
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(channels, kernel, padding=padding), nn.Activation("relu"))
    return seq


def _fire(squeeze: int, expand1: int, expand3: int) -> nn.HybridSequential:
    fire = nn.HybridSequential(prefix="")
    fire.add(_relu_conv(squeeze, 1))
    expand = HybridConcurrent(axis=1, prefix="")
    expand.add(_relu_conv(expand1, 1), _relu_conv(expand3, 3, 1))
    fire.add(expand)
    return fire


def _pool() -> nn.MaxPool2D:
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


# after the first convolution and its pooling: 'pool' or a fire module's squeeze width
# (expanding to 4x that on each path)
_BODIES = {"1.0": ((96, 7), (16, 16, 32, "pool", 32, 48, 48, 64, "pool", 64)),
           "1.1": ((64, 3), (16, 16, "pool", 32, 32, "pool", 48, 48, 64, 64))}


class SqueezeNet(HybridBlock):
    """SqueezeNet ``version`` ('1.0' or '1.1') with ``classes`` outputs: ``features`` ends with
    dropout 0.5; ``output`` is a 1x1 convolution to ``classes`` channels, ReLU, 13x13 average
    pooling and a flatten (so the input must be large enough to leave a 13x13 map: 224x224 images;
    smaller inputs are the pooling's error, as in MXNet).

    >>> SqueezeNet('1.0', classes=10).output[0].weight.shape
    (10, 0, 1, 1)
    """

    def __init__(self, version: str, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        if version not in _BODIES:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1.0 or 1.1 expected")
        (first, kernel), body = _BODIES[version]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(first, kernel_size=kernel, strides=2), nn.Activation("relu"), _pool())
            for item in body:
                self.features.add(_pool() if item == "pool" else _fire(item, 4 * item, 4 * item))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"), nn.AvgPool2D(13),
                            nn.Flatten())

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return self.output(self.features(x))


def _squeezenet(version: str) -> Any:
    return constructor(f"squeezenet{version.replace('.', '_')}", f"SqueezeNet {version}.",
                       lambda **kw: SqueezeNet(version, **kw), f"squeezenet{version}", "(10,)")


squeezenet1_0, squeezenet1_1 = _squeezenet("1.0"), _squeezenet("1.1")
