"""AlexNet (Krizhevsky, "One weird trick for parallelizing convolutional neural networks", 2014),
with MXNet 1.9.1's model-zoo layers and names (``alexnet0_conv0_weight``).

>>> net = alexnet(classes=10)
>>> net.output.weight.shape
(10, 0)
"""
from __future__ import annotations

from typing import Any

from ... import nn
from ...block import HybridBlock
from ._common import constructor

__all__ = ["AlexNet", "alexnet"]

# the convolutions: (channels, kernel, stride, padding, max-pooling after it)
_CONVS = ((64, 11, 4, 2, True), (192, 5, 1, 2, True), (384, 3, 1, 1, False), (256, 3, 1, 1, False),
          (256, 3, 1, 1, True))


class AlexNet(HybridBlock):
    """Five ReLU convolutions (three followed by 3x3 max pooling), two 4096-unit ReLU Dense layers
    with dropout 0.5, and the ``classes``-unit ``output``.

    >>> net = AlexNet(classes=3)
    >>> [b.weight.shape for b in net.features if type(b).__name__ == 'Dense']
    [(4096, 0), (4096, 0)]
    """

    def __init__(self, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                for channels, kernel, stride, pad, pool in _CONVS:
                    self.features.add(nn.Conv2D(channels, kernel_size=kernel, strides=stride, padding=pad,
                                                activation="relu"))
                    if pool:
                        self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Flatten())
                for _ in range(2):
                    self.features.add(nn.Dense(4096, activation="relu"), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return self.output(self.features(x))


alexnet = constructor("alexnet", "AlexNet (\"One weird trick for parallelizing convolutional neural "
                      "networks\").", AlexNet, "alexnet")
