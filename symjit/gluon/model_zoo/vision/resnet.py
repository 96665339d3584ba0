"""ResNet v1 (He et al., "Deep Residual Learning for Image Recognition", 2015) and v2 ("Identity
Mappings in Deep Residual Networks", 2016) with 18, 34, 50, 101 or 152 layers, built as MXNet
1.9.1's model zoo builds them: the same layers in the same order, hence the same parameter names
(``resnetv10_stage1_conv0_weight``) and structural names (``features.4.0.body.0.weight``), so
parameter files and exported symbols pass between the two.

v1 adds the shortcut after the last batch norm of a block and applies ReLU to the sum; v2
normalizes and activates before each convolution (pre-activation) and adds plainly.

>>> import symjit as mx
>>> with mx.name.NameManager():   # block names counted from 0
...     net = resnet18_v1(classes=4)
>>> net.features[0].weight.name, net.features[4][0].body[0].weight.name
('resnetv10_conv0_weight', 'resnetv10_stage1_conv0_weight')
"""
from __future__ import annotations

from typing import Any

from ... import nn
from ...block import HybridBlock
from ._common import constructor, finish

__all__ = ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1", "BottleneckV2",
           "get_resnet", "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
           "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2"]


def _conv3x3(channels: int, stride: int, in_channels: int) -> nn.Conv2D:
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


def _projection(channels: int, stride: int, in_channels: int) -> nn.Conv2D:
    """The 1x1 convolution that brings the shortcut to a block's output shape."""
    return nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False, in_channels=in_channels)


def _bare_sequence(*layers: HybridBlock) -> nn.HybridSequential:
    """A HybridSequential that adds nothing to its children's names (prefix '')."""
    seq = nn.HybridSequential(prefix="")
    seq.add(*layers)
    return seq


class _V1Block(HybridBlock):
    """A v1 residual block: ``relu(body(x) + shortcut(x))``, the shortcut a projection followed by
    batch norm when ``downsample``, else ``x``."""

    def _shortcut(self, channels: int, stride: int, downsample: bool, in_channels: int) -> None:  # noqa: FBT001
        self.downsample = (_bare_sequence(_projection(channels, stride, in_channels), nn.BatchNorm())
                           if downsample else None)

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        out = self.body(x)
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.Activation(self._join(out, shortcut), act_type="relu")

    def _join(self, out: Any, shortcut: Any) -> Any:
        return out + shortcut


class BasicBlockV1(_V1Block):
    """Two 3x3 convolutions with batch norm (the block of ResNet-18 and -34 v1).

    Parameters: ``channels`` (output channels), ``stride``, ``downsample`` (project the
    shortcut), ``in_channels`` (0: inferred at the first call).

    >>> import symjit as mx
    >>> b = BasicBlockV1(8, 2, downsample=True, in_channels=4); b.initialize()
    >>> b(mx.nd.ones((1, 4, 6, 6))).shape
    (1, 8, 3, 3)
    """

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0,  # noqa: FBT001, FBT002
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.body = _bare_sequence(_conv3x3(channels, stride, in_channels), nn.BatchNorm(),
                                   nn.Activation("relu"), _conv3x3(channels, 1, channels), nn.BatchNorm())
        self._shortcut(channels, stride, downsample, in_channels)

    def _join(self, out: Any, shortcut: Any) -> Any:
        return shortcut + out


class BottleneckV1(_V1Block):
    """1x1 (to ``channels // 4``), 3x3 and 1x1 (back to ``channels``) convolutions with batch norm
    (the block of ResNet-50, -101 and -152 v1); the 1x1 convolutions have biases, as MXNet's.

    >>> import symjit as mx
    >>> b = BottleneckV1(16, 1, downsample=True, in_channels=4); b.initialize()
    >>> b(mx.nd.ones((1, 4, 5, 5))).shape
    (1, 16, 5, 5)
    """

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0,  # noqa: FBT001, FBT002
                 **kwargs: Any):
        super().__init__(**kwargs)
        narrow = channels // 4
        self.body = _bare_sequence(nn.Conv2D(narrow, kernel_size=1, strides=stride), nn.BatchNorm(),
                                   nn.Activation("relu"), _conv3x3(narrow, 1, narrow), nn.BatchNorm(),
                                   nn.Activation("relu"), nn.Conv2D(channels, kernel_size=1, strides=1),
                                   nn.BatchNorm())
        self._shortcut(channels, stride, downsample, in_channels)


class _V2Block(HybridBlock):
    """A v2 (pre-activation) block: ``convs(x) + shortcut``, where each convolution follows a batch
    norm and ReLU, and the shortcut is the projection of the first activation when
    ``downsample``, else ``x``. Children ``bn1, conv1, bn2, conv2[, bn3, conv3], downsample``."""

    def _units(self) -> list[tuple[HybridBlock, HybridBlock]]:
        pairs = [(self.bn1, self.conv1), (self.bn2, self.conv2)]
        return pairs + ([(self.bn3, self.conv3)] if hasattr(self, "bn3") else [])

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        shortcut = x
        for i, (bn, conv) in enumerate(self._units()):
            x = F.Activation(bn(x), act_type="relu")
            if i == 0 and self.downsample is not None:
                shortcut = self.downsample(x)
            x = conv(x)
        return x + shortcut


class BasicBlockV2(_V2Block):
    """Two pre-activated 3x3 convolutions (the block of ResNet-18 and -34 v2).

    >>> import symjit as mx
    >>> b = BasicBlockV2(8, 2, downsample=True, in_channels=4); b.initialize()
    >>> b(mx.nd.ones((1, 4, 6, 6))).shape
    (1, 8, 3, 3)
    """

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0,  # noqa: FBT001, FBT002
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = _projection(channels, stride, in_channels) if downsample else None


class BottleneckV2(_V2Block):
    """Pre-activated 1x1, 3x3 (with the stride) and 1x1 convolutions, no biases (the block of
    ResNet-50, -101 and -152 v2).

    >>> import symjit as mx
    >>> b = BottleneckV2(16, 2, downsample=True, in_channels=4); b.initialize()
    >>> b(mx.nd.ones((1, 4, 6, 6))).shape
    (1, 16, 3, 3)
    """

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0,  # noqa: FBT001, FBT002
                 **kwargs: Any):
        super().__init__(**kwargs)
        narrow = channels // 4
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(narrow, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(narrow, stride, narrow)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = _projection(channels, stride, in_channels) if downsample else None


class _ResNet(HybridBlock):
    """``features`` (stem, stages ``stage1_``.., pooling) then the ``output`` Dense layer; v2
    (``_PRE_ACTIVATED``) normalizes the input first and the last stage's output before pooling."""

    _PRE_ACTIVATED = False

    def __init__(self, block: type, layers: list[int], channels: list[int], classes: int = 1000,
                 thumbnail: bool = False, **kwargs: Any):  # noqa: FBT001, FBT002
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError(f"{type(self).__name__}: channels must have one entry more than layers, "
                             f"got layers={layers}, channels={channels}")
        with self.name_scope():
            self.features = f = nn.HybridSequential(prefix="")
            if self._PRE_ACTIVATED:
                f.add(nn.BatchNorm(scale=False, center=False))
            if thumbnail:   # for small images: one 3x3 convolution, no pooling
                f.add(_conv3x3(channels[0], 1, 0))
            else:
                f.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                      nn.MaxPool2D(3, 2, 1))
            for i, count in enumerate(layers):
                stage = nn.HybridSequential(prefix=f"stage{i + 1}_")
                width, before = channels[i + 1], channels[i]
                with stage.name_scope():
                    stage.add(block(width, 2 if i else 1, width != before, in_channels=before, prefix=""))
                    for _ in range(count - 1):
                        stage.add(block(width, 1, False, in_channels=width, prefix=""))
                f.add(stage)
            if self._PRE_ACTIVATED:
                f.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten())
            else:
                f.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return self.output(self.features(x))


class ResNetV1(_ResNet):
    """ResNet v1: ``block`` (:class:`BasicBlockV1` or :class:`BottleneckV1`) repeated ``layers[i]``
    times in stage ``i``, with ``channels[0]`` after the stem and ``channels[i + 1]`` in stage
    ``i``; ``classes`` outputs; ``thumbnail`` replaces the 7x7 stem by a 3x3 convolution.

    >>> import symjit as mx
    >>> net = ResNetV1(BasicBlockV1, [1, 1], [4, 4, 8], classes=3, thumbnail=True)
    >>> net.initialize(); net(mx.nd.ones((2, 3, 8, 8))).shape
    (2, 3)
    """


class ResNetV2(_ResNet):
    """ResNet v2: as :class:`ResNetV1` with :class:`BasicBlockV2` or :class:`BottleneckV2`, the
    input batch-normalized first (no scale or shift) and a batch norm and ReLU after the last
    stage.

    >>> import symjit as mx
    >>> net = ResNetV2(BasicBlockV2, [1, 1], [4, 4, 8], classes=3, thumbnail=True)
    >>> net.initialize(); net(mx.nd.ones((2, 3, 8, 8))).shape
    (2, 3)
    """

    _PRE_ACTIVATED = True


# depth -> (bottleneck blocks?, blocks per stage, channels after the stem and of each stage)
_SPEC = {18: (False, [2, 2, 2, 2], [64, 64, 128, 256, 512]),
         34: (False, [3, 4, 6, 3], [64, 64, 128, 256, 512]),
         50: (True, [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
         101: (True, [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
         152: (True, [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
_VERSIONS = {1: (ResNetV1, BasicBlockV1, BottleneckV1), 2: (ResNetV2, BasicBlockV2, BottleneckV2)}


def get_resnet(version: int, num_layers: int, pretrained: bool = False, ctx: Any = None,  # noqa: FBT001, FBT002
               root: str | None = None, **kwargs: Any) -> _ResNet:
    """ResNet ``version`` (1 or 2) with ``num_layers`` (18, 34, 50, 101 or 152) layers;
    ``pretrained`` loads ``resnet<num_layers>_v<version>``'s published parameters from ``root``
    (default ``$MXNET_HOME/models``; nothing is downloaded) onto ``ctx``; ``kwargs`` go to the
    network class (``classes``, ``thumbnail``).

    >>> get_resnet(2, 50, classes=10).output.weight.shape
    (10, 2048)
    """
    if num_layers not in _SPEC:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are {sorted(_SPEC)}")
    if version not in _VERSIONS:
        raise ValueError(f"Invalid resnet version: {version}. Options are 1 and 2.")
    bottleneck, layers, channels = _SPEC[num_layers]
    net_class, basic, bottle = _VERSIONS[version]
    net = net_class(bottle if bottleneck else basic, layers, channels, **kwargs)
    return finish(net, f"resnet{num_layers}_v{version}", pretrained, ctx, root)


def _resnet(version: int, depth: int) -> Any:
    paper = "Deep Residual Learning for Image Recognition" if version == 1 else \
        "Identity Mappings in Deep Residual Networks"
    name = f"resnet{depth}_v{version}"
    return constructor(name, f"ResNet-{depth} v{version} (\"{paper}\").",
                       lambda **kw: get_resnet(version, depth, **kw), name)


resnet18_v1, resnet34_v1, resnet50_v1, resnet101_v1, resnet152_v1 = (_resnet(1, d) for d in _SPEC)
resnet18_v2, resnet34_v2, resnet50_v2, resnet101_v2, resnet152_v2 = (_resnet(2, d) for d in _SPEC)
