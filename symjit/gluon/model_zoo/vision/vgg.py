"""VGG-11, -13, -16 and -19 (Simonyan and Zisserman, "Very Deep Convolutional Networks for
Large-Scale Image Recognition", 2014), with or without batch norm, with MXNet 1.9.1's model-zoo
layers, names and initializers (convolutions Xavier gaussian ``factor_type='out'``, magnitude 2;
Dense layers normal; biases zero).

>>> import symjit as mx
>>> with mx.name.NameManager():   # block names counted from 0
...     net = vgg11(classes=10)
>>> net.features[0].weight.name, net.output.weight.shape
('vgg0_conv0_weight', (10, 0))
"""
from __future__ import annotations

from typing import Any

from .... import initializer
from ... import nn
from ...block import HybridBlock
from ._common import constructor, finish

__all__ = ["VGG", "get_vgg", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn",
           "vgg19_bn"]


class VGG(HybridBlock):
    """``layers[i]`` 3x3 ReLU convolutions of ``filters[i]`` channels (each followed by batch norm
    when ``batch_norm``) then 2x2 max pooling, for each ``i``; two 4096-unit ReLU Dense layers with
    dropout 0.5; the ``classes``-unit ``output``.

    >>> net = VGG([1, 2], [4, 8], classes=3, batch_norm=True)
    >>> [b.weight.shape for b in net.features if type(b).__name__ == 'Conv2D']
    [(4, 0, 3, 3), (8, 0, 3, 3), (8, 0, 3, 3)]
    """

    def __init__(self, layers: list[int], filters: list[int], classes: int = 1000, batch_norm: bool = False,  # noqa: FBT001, FBT002
                 **kwargs: Any):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError(f"VGG: layers and filters must have the same length, got {layers}, {filters}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            for count, channels in zip(layers, filters):
                for _ in range(count):
                    init = initializer.Xavier(rnd_type="gaussian", factor_type="out", magnitude=2)
                    self.features.add(nn.Conv2D(channels, kernel_size=3, padding=1, weight_initializer=init,
                                                bias_initializer="zeros"))
                    if batch_norm:
                        self.features.add(nn.BatchNorm())
                    self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(strides=2))
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"), nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return self.output(self.features(x))


_SPEC = {11: [1, 1, 2, 2, 2], 13: [2, 2, 2, 2, 2], 16: [2, 2, 3, 3, 3], 19: [2, 2, 4, 4, 4]}
_FILTERS = [64, 128, 256, 512, 512]


def get_vgg(num_layers: int, pretrained: bool = False, ctx: Any = None, root: str | None = None,  # noqa: FBT001, FBT002
            **kwargs: Any) -> VGG:
    """VGG with ``num_layers`` (11, 13, 16 or 19) layers; ``batch_norm=True`` (in ``kwargs``) adds
    batch norm; ``pretrained`` loads ``vgg<n>[_bn]``'s published parameters from ``root``
    (nothing is downloaded).

    >>> len(get_vgg(16, batch_norm=True).features)   # 13 x (conv, norm, ReLU), 5 pools, 2 x (Dense, Dropout)
    48
    """
    if num_layers not in _SPEC:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are {sorted(_SPEC)}")
    net = VGG(_SPEC[num_layers], _FILTERS, **kwargs)
    suffix = "_bn" if kwargs.get("batch_norm") else ""
    return finish(net, f"vgg{num_layers}{suffix}", pretrained, ctx, root)


def _vgg(depth: int, bn: bool) -> Any:  # noqa: FBT001
    name = f"vgg{depth}{'_bn' if bn else ''}"
    with_bn = " with batch norm" if bn else ""
    extra = {"batch_norm": True} if bn else {}
    return constructor(name, f"VGG-{depth}{with_bn} (\"Very Deep Convolutional Networks for Large-Scale "
                       "Image Recognition\").", lambda **kw: get_vgg(depth, **{**kw, **extra}), name)


vgg11, vgg13, vgg16, vgg19 = (_vgg(d, False) for d in _SPEC)
vgg11_bn, vgg13_bn, vgg16_bn, vgg19_bn = (_vgg(d, True) for d in _SPEC)
