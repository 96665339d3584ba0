"""Deformable convolution layers over ``contrib.DeformableConvolution`` and
``contrib.ModulatedDeformableConvolution``: a plain convolution of the input learns the sampling
offsets (and, in the modulated form, the masks: ``2 * sigmoid`` of its last channels), then the
deformable operator convolves the input at the offset positions.

Parameters (MXNet's names): ``offset_weight`` ``(offset_channels, in_channels // groups, kh, kw)``,
``offset_bias``, ``deformable_conv_weight`` ``(channels, in_channels // groups, kh, kw)`` and
``deformable_conv_bias``; ``offset_channels`` is ``2 * kh * kw * num_deformable_group`` (``3 *``
in the modulated form). The offsets' convolution is initialized with zeros by default, so that a
fresh layer is a plain convolution. 2-D, ``NCHW`` only (the operators' layout).

>>> import symjit as mx
>>> layer = DeformableConvolution(4, kernel_size=3, padding=1)
>>> layer.initialize()
>>> layer(mx.nd.ones((1, 2, 5, 5))).shape, layer.offset_weight.shape
((1, 4, 5, 5), (18, 2, 3, 3))
"""
from __future__ import annotations

from typing import Any

from ...block import HybridBlock
from ...nn import Activation

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]


def _pair(value: Any, what: str, who: str) -> tuple[int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return (int(value[0]), int(value[1]))
    raise ValueError(f"{who}: {what} must be an int or a tuple of 2 ints (a 2-D convolution), got {value!r}")


class _DeformableBase(HybridBlock):
    """The layers' shared construction: parameters, the two convolutions' keywords, activation."""

    _MODULATED = False

    def __init__(self, channels: int, kernel_size: Any = (1, 1), strides: Any = (1, 1), padding: Any = (0, 0),
                 dilation: Any = (1, 1), groups: int = 1, num_deformable_group: int = 1, layout: str = "NCHW",
                 use_bias: bool = True, in_channels: int = 0, activation: str | None = None,  # noqa: FBT001, FBT002
                 weight_initializer: Any = None, bias_initializer: Any = "zeros",
                 offset_weight_initializer: Any = "zeros", offset_bias_initializer: Any = "zeros",
                 offset_use_bias: bool = True, op_name: str | None = None, adj: Any = None,  # noqa: FBT001, FBT002
                 prefix: str | None = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)
        who = type(self).__name__
        if layout != "NCHW":
            raise ValueError(f"{who}: layout {layout!r} is not supported (the deformable convolution "
                             "operators take NCHW data only)")
        if adj is not None:
            raise ValueError(f"{who}: adj (an output padding) does not apply to a convolution")
        kernel = _pair(kernel_size, "kernel_size", who)
        geometry = {"kernel": kernel, "stride": _pair(strides, "strides", who),
                    "dilate": _pair(dilation, "dilation", who), "pad": _pair(padding, "padding", who),
                    "num_group": groups, "layout": layout}
        taps = kernel[0] * kernel[1] * num_deformable_group
        offset_channels = (3 if self._MODULATED else 2) * taps
        self._offset_split = 2 * taps
        self._channels, self._in_channels = channels, in_channels
        self._kwargs_offset = dict(geometry, num_filter=offset_channels, no_bias=not offset_use_bias)
        self._kwargs_deformable_conv = dict(geometry, num_filter=channels, no_bias=not use_bias,
                                            num_deformable_group=num_deformable_group)
        per_group = in_channels // groups
        with self.name_scope():
            self.offset_weight = self.params.get("offset_weight", shape=(offset_channels, per_group, *kernel),
                                                 init=offset_weight_initializer, allow_deferred_init=True)
            self.offset_bias = self.params.get("offset_bias", shape=(offset_channels,),
                                               init=offset_bias_initializer,
                                               allow_deferred_init=True) if offset_use_bias else None
            self.deformable_conv_weight = self.params.get("deformable_conv_weight",
                                                          shape=(channels, per_group, *kernel),
                                                          init=weight_initializer, allow_deferred_init=True)
            self.deformable_conv_bias = self.params.get("deformable_conv_bias", shape=(channels,),
                                                        init=bias_initializer,
                                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _offsets(self, F: Any, x: Any, offset_weight: Any, offset_bias: Any) -> Any:  # noqa: N803
        args = [x, offset_weight] if offset_bias is None else [x, offset_weight, offset_bias]
        return F.Convolution(*args, **self._kwargs_offset)

    def _finish(self, out: Any) -> Any:
        return self.act(out) if self.act is not None else out

    def __repr__(self) -> str:
        k = self._kwargs_deformable_conv
        shape = self.deformable_conv_weight.shape
        text = f"{type(self).__name__}({shape[1] or None} -> {shape[0]}, kernel_size={k['kernel']}, " \
               f"stride={k['stride']}"
        if k["pad"] != (0, 0):
            text += f", padding={k['pad']}"
        if k["dilate"] != (1, 1):
            text += f", dilation={k['dilate']}"
        if k["num_group"] != 1:
            text += f", groups={k['num_group']}"
        if self.deformable_conv_bias is None:
            text += ", bias=False"
        if self.act is not None:
            text += f", {self.act}"
        return text + ")"


class DeformableConvolution(_DeformableBase):
    """2-D deformable convolution (v1, Dai et al. 2017): the offsets are a learned convolution
    of the input (see the module's description for the parameters).

    >>> import symjit as mx
    >>> layer = DeformableConvolution(2, kernel_size=(1, 1), use_bias=False, in_channels=1)
    >>> layer.initialize(mx.init.One())     # zero offsets (the default): a plain 1x1 convolution
    >>> layer(mx.nd.array([[[[1.0, 2.0]]]])).asnumpy().tolist()
    [[[[1.0, 2.0]], [[1.0, 2.0]]]]
    """

    def hybrid_forward(self, F: Any, x: Any, offset_weight: Any, deformable_conv_weight: Any,  # noqa: N803
                       offset_bias: Any = None, deformable_conv_bias: Any = None) -> Any:
        offset = self._offsets(F, x, offset_weight, offset_bias)
        args = [x, offset, deformable_conv_weight]
        if deformable_conv_bias is not None:
            args.append(deformable_conv_bias)
        out = F.contrib.DeformableConvolution(*args, name="fwd", **self._kwargs_deformable_conv)
        return self._finish(out)

    def _alias(self) -> str:
        return "deformable_conv"


class ModulatedDeformableConvolution(_DeformableBase):
    """2-D modulated deformable convolution (v2, Zhu et al. 2019): the learned convolution of the
    input gives the offsets (its first ``2 * kh * kw * num_deformable_group`` channels) and the
    masks (the rest, as ``2 * sigmoid``: 1 for a fresh layer).

    >>> import symjit as mx
    >>> layer = ModulatedDeformableConvolution(1, kernel_size=1, use_bias=False, in_channels=1)
    >>> layer.initialize(mx.init.One())
    >>> layer(mx.nd.array([[[[1.0, 2.0]]]])).asnumpy().tolist()
    [[[[1.0, 2.0]]]]
    """

    _MODULATED = True

    def hybrid_forward(self, F: Any, x: Any, offset_weight: Any, deformable_conv_weight: Any,  # noqa: N803
                       offset_bias: Any = None, deformable_conv_bias: Any = None) -> Any:
        learned = self._offsets(F, x, offset_weight, offset_bias)
        offset = F.slice_axis(learned, axis=1, begin=0, end=self._offset_split)
        mask = F.sigmoid(F.slice_axis(learned, axis=1, begin=self._offset_split, end=None)) * 2
        args = [x, offset, mask, deformable_conv_weight]
        if deformable_conv_bias is not None:
            args.append(deformable_conv_bias)
        return self._finish(F.contrib.ModulatedDeformableConvolution(*args, name="fwd",
                                                                     **self._kwargs_deformable_conv))

    def _alias(self) -> str:
        return "modulated_deformable_conv"
