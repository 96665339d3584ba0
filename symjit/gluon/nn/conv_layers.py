"""Convolution, transposed convolution, pooling and padding layers over ``Convolution``,
``Deconvolution``, ``Pooling`` and ``pad``.

A convolution's ``weight`` is ``(channels, in_channels // groups, *kernel)`` (channels-first
layouts) and a transposed convolution's ``(in_channels, channels // groups, *kernel)``, as in
MXNet; ``in_channels=0`` is inferred at the first forward pass.

>>> import symjit as mx
>>> c = mx.gluon.nn.Conv2D(4, 3, padding=1)
>>> c.initialize(); c(mx.nd.ones((1, 2, 5, 5))).shape, c.weight.shape
((1, 4, 5, 5), (4, 2, 3, 3))
"""
from __future__ import annotations

from typing import Any

from ..block import HybridBlock
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
           "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D",
           "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalAvgPool1D",
           "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D"]


def _tuple(v: Any, n: int) -> tuple:
    return (int(v),) * n if isinstance(v, int) else tuple(int(d) for d in v)


class _Conv(HybridBlock):
    """The convolutions (``op_name='Convolution'``) and transposed convolutions
    (``'Deconvolution'``) of 1 to 3 spatial dimensions."""

    def __init__(self, channels: int, kernel_size: Any, strides: Any, padding: Any, dilation: Any,
                 groups: int, layout: str, in_channels: int = 0, activation: str | None = None,
                 use_bias: bool = True, weight_initializer: Any = None, bias_initializer: Any = "zeros",  # noqa: FBT001, FBT002
                 op_name: str = "Convolution", adj: Any = None, prefix: str | None = None,
                 params: Any = None):
        super().__init__(prefix=prefix, params=params)
        n = len(layout) - 2
        with self.name_scope():
            self._channels, self._in_channels = channels, in_channels
            kernel = _tuple(kernel_size, n)
            self._op_name = op_name
            self._kwargs = {"kernel": kernel, "stride": _tuple(strides, n), "dilate": _tuple(dilation, n),
                            "pad": _tuple(padding, n), "num_filter": channels, "num_group": groups,
                            "no_bias": not use_bias, "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = _tuple(adj, n)
            if op_name == "Convolution":
                first, second = channels, in_channels // groups
            else:
                first, second = in_channels, channels // groups
            wshape = (first, second, *kernel) if layout.index("C") == 1 else (first, *kernel, second)
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer,
                                          allow_deferred_init=True)
            self.bias = (self.params.get("bias", shape=(channels,), init=bias_initializer,
                                         allow_deferred_init=True) if use_bias else None)
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def hybrid_forward(self, F: Any, x: Any, weight: Any, bias: Any = None) -> Any:  # noqa: N803
        op = getattr(F, self._op_name)
        if bias is None:
            out = op(x, weight, name="fwd", **self._kwargs)
        else:
            out = op(x, weight, bias, name="fwd", **self._kwargs)
        return self.act(out) if self.act is not None else out

    def _alias(self) -> str:
        return "conv"

    def __repr__(self) -> str:
        k = self._kwargs
        shape = self.weight.shape
        return (f"{self.__class__.__name__}({shape[1] if shape[1] else None} -> {self._channels}, "
                f"kernel_size={k['kernel']}, stride={k['stride']})")


def _conv_class(name: str, n: int, transpose: bool) -> type:
    layout0 = ("NCW", "NCHW", "NCDHW")[n - 1]
    one = 1 if n == 1 else (1,) * n
    zero = 0 if n == 1 else (0,) * n

    def __init__(self: _Conv, channels: int, kernel_size: Any, strides: Any = one, padding: Any = zero,
                 *args: Any, **kwargs: Any) -> None:
        names = (["output_padding"] if transpose else []) + ["dilation", "groups", "layout", "activation",
                                                             "use_bias", "weight_initializer",
                                                             "bias_initializer", "in_channels"]
        defaults = {"output_padding": zero, "dilation": one, "groups": 1, "layout": layout0,
                    "activation": None, "use_bias": True, "weight_initializer": None,
                    "bias_initializer": "zeros", "in_channels": 0}
        given = dict(zip(names, args))
        dup = set(given) & set(kwargs)
        if dup:
            raise TypeError(f"{name}: got multiple values for {sorted(dup)}")
        opts = {**defaults, **given, **{k: v for k, v in kwargs.items() if k in defaults}}
        rest = {k: v for k, v in kwargs.items() if k not in defaults}
        if not isinstance(kernel_size, (int, tuple, list)) or (
                not isinstance(kernel_size, int) and len(kernel_size) != n):
            raise ValueError(f"{name}: kernel_size must be a number or a list of {n} ints, "
                             f"got {kernel_size!r}")
        if len(opts["layout"]) != n + 2:
            raise ValueError(f"{name}: layout {opts['layout']!r} must have {n + 2} axes")
        _Conv.__init__(self, channels, kernel_size, strides, padding, opts["dilation"], opts["groups"],
                       opts["layout"], opts["in_channels"], opts["activation"], opts["use_bias"],
                       opts["weight_initializer"], opts["bias_initializer"],
                       op_name="Deconvolution" if transpose else "Convolution",
                       adj=opts["output_padding"] if transpose else None, **rest)
        if transpose:
            self.outpad = opts["output_padding"]
    kind = "transposed convolution" if transpose else "convolution"
    doc = f"{n}-D {kind} layer (layout ``{layout0}`` by default); see :class:`_Conv`."
    return type(name, (_Conv,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


Conv1D = _conv_class("Conv1D", 1, False)
Conv2D = _conv_class("Conv2D", 2, False)
Conv3D = _conv_class("Conv3D", 3, False)
Conv1DTranspose = _conv_class("Conv1DTranspose", 1, True)
Conv2DTranspose = _conv_class("Conv2DTranspose", 2, True)
Conv3DTranspose = _conv_class("Conv3DTranspose", 3, True)


class _Pooling(HybridBlock):
    """Max or average pooling (``pool_type``), global when ``global_pool``."""

    def __init__(self, pool_size: Any, strides: Any, padding: Any, ceil_mode: bool, global_pool: bool,  # noqa: FBT001
                 pool_type: str, layout: str, count_include_pad: bool | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        n = len(layout) - 2
        if strides is None:
            strides = pool_size
        self._kwargs = {"kernel": _tuple(pool_size, n), "stride": _tuple(strides, n),
                        "pad": _tuple(padding, n), "global_pool": global_pool, "pool_type": pool_type,
                        "layout": layout, "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self) -> str:
        return "pool"

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        k = dict(self._kwargs)
        layout = k.pop("layout")
        n = len(layout) - 2
        if layout.index("C") == 1:
            return _pool_channel_first(F, x, n, k, layout)
        # channel-last: pooled channel-first between two transposes
        first = F.transpose(x, axes=(0, n + 1, *range(1, n + 1)))
        out = _pool_channel_first(F, first, n, k, None)
        return F.transpose(out, axes=(0, *range(2, n + 2), 1))

    def __repr__(self) -> str:
        k = self._kwargs
        return (f"{self.__class__.__name__}(size={k['kernel']}, stride={k['stride']}, padding={k['pad']}, "
                f"ceil_mode={k['pooling_convention'] == 'full'}, global_pool={k['global_pool']}, "
                f"pool_type={k['pool_type']}, layout={k['layout']})")


def _pool_channel_first(F: Any, x: Any, n: int, k: dict, layout: str | None) -> Any:  # noqa: N803
    """``Pooling`` of a channel-first ``x``; a 3-D pooling as two 2-D ones. Every pool type is
    separable over a box window (max, sum, lp; avg, as its divisor is the product of the
    per-axis window sizes, with or without the padding), so the window over (H, W) is pooled
    for each depth slice first, then the window over D: the maximum found is the first in
    (D, H, W) order, the one a 3-D pooling's gradient goes to."""
    if n < 3:
        return F.Pooling(x, name="fwd", layout=layout, **k)
    if k["global_pool"]:
        flat = F.reshape(x, shape=(0, 0, 0, -3))                     # (N, C, D, H*W)
        flat = F.Pooling(flat, name="fwd", **{**k, "kernel": (1, 1), "stride": (1, 1), "pad": (0, 0)})
        return F.reshape(flat, shape=(0, 0, 1, 1, 1))
    (kd, *khw), (sd, *shw), (pd, *phw) = k["kernel"], k["stride"], k["pad"]
    slices = F.reshape(x, shape=(0, -3, 0, 0))                         # (N, C*D, H, W)
    plane = F.Pooling(slices, name="fwd_hw", **{**k, "kernel": tuple(khw), "stride": tuple(shw),
                                                  "pad": tuple(phw)})
    plane = F.reshape_like(plane, x, lhs_begin=0, lhs_end=2, rhs_begin=0, rhs_end=3)  # (N, C, D, H', W')
    depth = F.Pooling(F.reshape(plane, shape=(0, 0, 0, -3)), name="fwd",
                      **{**k, "kernel": (kd, 1), "stride": (sd, 1), "pad": (pd, 0)})  # (N, C, D', H'*W')
    return F.reshape_like(depth, plane, lhs_begin=3, lhs_end=4, rhs_begin=3, rhs_end=5)


def _pool_class(name: str, n: int, pool_type: str, layout_first: bool) -> type:
    layout0 = ("NCW", "NCHW", "NCDHW")[n - 1]
    size0 = 2 if n == 1 else (2,) * n
    # MXNet's positional order after ``padding`` differs between the classes
    order = ["layout", "ceil_mode"] if layout_first else ["ceil_mode", "layout"]
    if pool_type == "avg":
        order.append("count_include_pad")

    def __init__(self: _Pooling, pool_size: Any = size0, strides: Any = None, padding: Any = 0,
                 *args: Any, **kwargs: Any) -> None:
        opts = {"layout": layout0, "ceil_mode": False, "count_include_pad": True}
        if len(args) > len(order):
            raise TypeError(f"{name}: too many positional arguments")
        opts.update(zip(order, args))
        opts.update((k, kwargs.pop(k)) for k in list(kwargs) if k in opts)
        if len(opts["layout"]) != n + 2:
            raise ValueError(f"{name}: layout {opts['layout']!r} must have {n + 2} axes")
        _Pooling.__init__(self, pool_size, strides, padding, opts["ceil_mode"], False, pool_type,
                          opts["layout"], opts["count_include_pad"] if pool_type == "avg" else None,
                          **kwargs)
    doc = f"{n}-D {pool_type} pooling (layout ``{layout0}`` by default, ``strides`` default ``pool_size``)."
    return type(name, (_Pooling,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


def _global_class(name: str, n: int, pool_type: str) -> type:
    layout0 = ("NCW", "NCHW", "NCDHW")[n - 1]

    def __init__(self: _Pooling, layout: str = layout0, **kwargs: Any) -> None:
        _Pooling.__init__(self, (1,) * n, None, 0, True, True, pool_type, layout, **kwargs)
    doc = f"Global {n}-D {pool_type} pooling: one value per channel (layout ``{layout0}`` by default)."
    return type(name, (_Pooling,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


MaxPool1D = _pool_class("MaxPool1D", 1, "max", True)
MaxPool2D = _pool_class("MaxPool2D", 2, "max", True)
MaxPool3D = _pool_class("MaxPool3D", 3, "max", False)
AvgPool1D = _pool_class("AvgPool1D", 1, "avg", True)
AvgPool2D = _pool_class("AvgPool2D", 2, "avg", False)
AvgPool3D = _pool_class("AvgPool3D", 3, "avg", False)
GlobalMaxPool1D = _global_class("GlobalMaxPool1D", 1, "max")
GlobalMaxPool2D = _global_class("GlobalMaxPool2D", 2, "max")
GlobalMaxPool3D = _global_class("GlobalMaxPool3D", 3, "max")
GlobalAvgPool1D = _global_class("GlobalAvgPool1D", 1, "avg")
GlobalAvgPool2D = _global_class("GlobalAvgPool2D", 2, "avg")
GlobalAvgPool3D = _global_class("GlobalAvgPool3D", 3, "avg")


class ReflectionPad2D(HybridBlock):
    """Pad the two last axes of a 4-D input by ``padding`` (an int, or 8 pad widths as ``pad``
    takes them) with their reflection."""

    def __init__(self, padding: Any = 0, **kwargs: Any):
        super().__init__(**kwargs)
        if isinstance(padding, int):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if len(padding) != 8:
            raise ValueError(f"ReflectionPad2D: padding must be an int or 8 widths, got {padding!r}")
        self._padding = tuple(padding)

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        return F.pad(x, mode="reflect", pad_width=self._padding)
