"""MobileNet (Howard et al., "MobileNets: Efficient Convolutional Neural Networks for Mobile
Vision Applications", 2017) and MobileNetV2 (Sandler et al., "Inverted Residuals and Linear
Bottlenecks", 2018) at width multipliers 1.0, 0.75, 0.5 and 0.25, with MXNet 1.9.1's model-zoo
layers and names (``mobilenet0_conv0_weight``, ``mobilenetv20_features_linearbottleneck0_conv0_weight``).

>>> import symjit as mx
>>> with mx.name.NameManager():   # block names counted from 0
...     net = mobilenet0_25(classes=3)
>>> net.features[3].weight.name, net.features[3].weight.shape   # the first depthwise convolution
('mobilenet0_conv1_weight', (8, 0, 3, 3))
"""
from __future__ import annotations

from typing import Any

from ... import nn
from ...block import HybridBlock
from ._common import constructor, finish

__all__ = ["MobileNet", "MobileNetV2", "RELU6", "LinearBottleneck", "get_mobilenet", "get_mobilenet_v2",
           "mobilenet1_0", "mobilenet0_75", "mobilenet0_5", "mobilenet0_25",
           "mobilenet_v2_1_0", "mobilenet_v2_0_75", "mobilenet_v2_0_5", "mobilenet_v2_0_25"]


class RELU6(HybridBlock):
    """``min(max(x, 0), 6)`` (MobileNetV2's activation).

    >>> import symjit as mx
    >>> RELU6()(mx.nd.array([-1.0, 3.0, 8.0])).asnumpy().tolist()
    [0.0, 3.0, 6.0]
    """

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return F.clip(x, 0, 6, name="relu6")


def _conv_bn(seq: nn.HybridSequential, channels: int = 1, kernel: int = 1, stride: int = 1, pad: int = 0,
             groups: int = 1, active: bool = True, relu6: bool = False) -> None:  # noqa: FBT001, FBT002
    """Append a bias-free convolution, batch norm and (when ``active``) ReLU or ReLU6 to ``seq``."""
    seq.add(nn.Conv2D(channels, kernel, stride, pad, groups=groups, use_bias=False), nn.BatchNorm(scale=True))
    if active:
        seq.add(RELU6() if relu6 else nn.Activation("relu"))


class LinearBottleneck(HybridBlock):
    """MobileNetV2's inverted residual: 1x1 expansion to ``in_channels * t`` channels, 3x3
    depthwise convolution with ``stride``, linear 1x1 projection to ``channels``; the input is
    added when the stride is 1 and the channels match.

    >>> import symjit as mx
    >>> b = LinearBottleneck(4, 4, 6, 1); b.initialize()
    >>> b(mx.nd.ones((1, 4, 5, 5))).shape
    (1, 4, 5, 5)
    """

    def __init__(self, in_channels: int, channels: int, t: int, stride: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        wide = in_channels * t
        with self.name_scope():
            self.out = nn.HybridSequential()
            _conv_bn(self.out, wide, relu6=True)
            _conv_bn(self.out, wide, kernel=3, stride=stride, pad=1, groups=wide, relu6=True)
            _conv_bn(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        out = self.out(x)
        return F.elemwise_add(out, x) if self.use_shortcut else out


# MobileNet v1's depthwise-separable layers at width 1: (depthwise channels, output channels, stride)
_V1_LAYERS = ((32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2),
              *((512, 512, 1),) * 5, (512, 1024, 2), (1024, 1024, 1))
# MobileNetV2's bottlenecks at width 1: (input channels, output channels, expansion, stride)
_V2_LAYERS = ((32, 16, 1, 1), (16, 24, 6, 2), (24, 24, 6, 1), (24, 32, 6, 2), (32, 32, 6, 1), (32, 32, 6, 1),
              (32, 64, 6, 2), *((64, 64, 6, 1),) * 3, (64, 96, 6, 1), (96, 96, 6, 1), (96, 96, 6, 1),
              (96, 160, 6, 2), (160, 160, 6, 1), (160, 160, 6, 1), (160, 320, 6, 1))


class MobileNet(HybridBlock):
    """MobileNet v1 with every width scaled by ``multiplier``: a 3x3 stride-2 convolution, 13
    depthwise-separable layers (3x3 depthwise + 1x1 pointwise convolution, each with batch norm
    and ReLU), global average pooling, the ``classes``-unit ``output``.

    >>> MobileNet(0.5, classes=7).output.weight.shape
    (7, 0)
    """

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                _conv_bn(self.features, channels=int(32 * multiplier), kernel=3, pad=1, stride=2)
                for dw, out, stride in _V1_LAYERS:
                    dw = int(dw * multiplier)
                    _conv_bn(self.features, channels=dw, kernel=3, stride=stride, pad=1, groups=dw)
                    _conv_bn(self.features, channels=int(out * multiplier))
                self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return self.output(self.features(x))


class MobileNetV2(HybridBlock):
    """MobileNetV2 with every width scaled by ``multiplier``: a 3x3 stride-2 convolution with
    ReLU6, 17 :class:`LinearBottleneck` blocks, a 1x1 convolution to 1280 channels (more when
    ``multiplier > 1``), global average pooling; ``output`` is a bias-free 1x1 convolution to
    ``classes`` channels (``output_pred_weight``) and a flatten.

    >>> import symjit as mx
    >>> with mx.name.NameManager():
    ...     net = MobileNetV2(0.25, classes=7)
    >>> net.output[0].weight.name
    'mobilenetv20_output_pred_weight'
    """

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs: Any):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="features_")
            with self.features.name_scope():
                _conv_bn(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1, relu6=True)
                for cin, cout, t, stride in _V2_LAYERS:
                    self.features.add(LinearBottleneck(in_channels=int(cin * multiplier),
                                                       channels=int(cout * multiplier), t=t, stride=stride))
                _conv_bn(self.features, int(1280 * multiplier) if multiplier > 1.0 else 1280, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix="output_")
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix="pred_"), nn.Flatten())

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return self.output(self.features(x))


def _store_suffix(multiplier: float) -> str:
    """'1.0', '0.75', '0.5', '0.25': the multiplier as the published file names spell it."""
    text = f"{multiplier:.2f}"
    return text[:-1] if text in ("1.00", "0.50") else text


def get_mobilenet(multiplier: float, pretrained: bool = False, ctx: Any = None, root: str | None = None,  # noqa: FBT001, FBT002
                  **kwargs: Any) -> MobileNet:
    """MobileNet at width ``multiplier``; ``pretrained`` loads ``mobilenet<multiplier>``'s
    published parameters from ``root`` (nothing is downloaded).

    >>> get_mobilenet(0.75).features[0].weight.shape
    (24, 0, 3, 3)
    """
    return finish(MobileNet(multiplier, **kwargs), f"mobilenet{_store_suffix(multiplier)}", pretrained,
                  ctx, root)


def get_mobilenet_v2(multiplier: float, pretrained: bool = False, ctx: Any = None, root: str | None = None,  # noqa: FBT001, FBT002
                     **kwargs: Any) -> MobileNetV2:
    """MobileNetV2 at width ``multiplier``, as :func:`get_mobilenet` (the file ``mobilenetv2_<multiplier>``).

    >>> get_mobilenet_v2(0.5).features[0].weight.shape
    (16, 0, 3, 3)
    """
    net = MobileNetV2(multiplier, **kwargs)
    return finish(net, f"mobilenetv2_{_store_suffix(multiplier)}", pretrained, ctx, root)


def _mobilenet(multiplier: float, v2: bool) -> Any:  # noqa: FBT001
    tag = _store_suffix(multiplier)
    if v2:
        return constructor(f"mobilenet_v2_{tag.replace('.', '_')}", f"MobileNetV2 at width {tag}.",
                           lambda **kw: get_mobilenet_v2(multiplier, **kw), f"mobilenetv2_{tag}",
                           "(10, 0, 1, 1)")
    return constructor(f"mobilenet{tag.replace('.', '_')}", f"MobileNet at width {tag}.",
                       lambda **kw: get_mobilenet(multiplier, **kw), f"mobilenet{tag}")


mobilenet1_0, mobilenet0_75, mobilenet0_5, mobilenet0_25 = (
    _mobilenet(m, False) for m in (1.0, 0.75, 0.5, 0.25))
mobilenet_v2_1_0, mobilenet_v2_0_75, mobilenet_v2_0_5, mobilenet_v2_0_25 = (
    _mobilenet(m, True) for m in (1.0, 0.75, 0.5, 0.25))
