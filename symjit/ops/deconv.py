"""Deconvolution (transposed convolution), MXNet 1.9.1's parameters and shapes.

``Deconvolution(data, weight, bias)`` is the adjoint of a ``Convolution`` with ``num_filter =
data.shape[1]``: its forward is that convolution's data gradient, so its lowerings are the
``_backward_Convolution_data`` emitters on every target (:func:`conv_view` gives them the
convolution's parameters), and its gradients are a ``Convolution`` (data), a convolution weight
gradient with data and head gradient swapped (weight) and the channel sum (bias).

Shapes: data (N, C, W) or (N, C, H, W); weight (C, num_filter / num_group, k...); bias
(num_filter,); output spatial size ``stride * (in - 1) + dilate * (kernel - 1) + 1 - 2 * pad +
adj``, or ``target_shape`` when given (pad and adj then follow from it, as in MXNet). ``no_bias``
defaults to True, as in MXNet.

>>> import numpy as np, symjit as mx
>>> y = mx.nd.Deconvolution(mx.nd.ones((1, 1, 2, 2)), mx.nd.ones((1, 1, 2, 2)), kernel=(2, 2),
...                         stride=(2, 2), num_filter=1)
>>> y.shape, float(y.asnumpy().sum())
((1, 1, 4, 4), 16.0)
"""
from __future__ import annotations

import types

from .nn import Convolution
from .registry import FLOAT_DTYPES, Kind, OpDef, Param, ParamError, RuleError, register
from .rules import need_rank, shape_str, window_params

__all__ = ["geometry", "conv_params", "conv_view"]


def _check(p: dict) -> None:
    k = tuple(p["kernel"])
    if len(k) not in (1, 2):
        raise ParamError(f"Deconvolution: kernel {k} must have 1 or 2 dimensions")
    for name in ("stride", "dilate", "pad", "adj", "target_shape"):
        if p[name] and len(p[name]) != len(k):
            raise ParamError(f"Deconvolution: parameter '{name}'={tuple(p[name])} must have {len(k)} "
                             f"entries like kernel")
    if p["num_filter"] % p["num_group"]:
        raise ParamError(f"Deconvolution: num_filter={p['num_filter']} is not divisible by "
                         f"num_group={p['num_group']}")


def geometry(p: dict, spatial: tuple) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(output spatial size, effective pad) for input spatial size ``spatial``."""
    k = tuple(p["kernel"])
    stride, dilate, pad = window_params(p, len(k))
    adj = tuple(p["adj"] or (0,) * len(k))
    out, pads = [], []
    for d, i in enumerate(spatial):
        full = stride[d] * (i - 1) + dilate[d] * (k[d] - 1) + 1
        if p["target_shape"]:
            total = full - p["target_shape"][d]
            if total < 0:
                raise RuleError(f"target_shape {tuple(p['target_shape'])} is larger than the largest "
                                f"output {full} on spatial axis {d}")
            pad_d, adj_d = (total + 1) // 2, total % 2
        else:
            pad_d, adj_d = pad[d], adj[d]
        if adj_d >= stride[d] and adj_d:
            raise RuleError(f"adj={adj_d} must be smaller than stride={stride[d]} on spatial axis {d}")
        size = full - 2 * pad_d + adj_d
        if size <= 0:
            raise RuleError(f"the output would have size {size} on spatial axis {d}")
        out.append(size)
        pads.append(pad_d)
    return tuple(out), tuple(pads)


def conv_params(p: dict, channels: int, spatial: tuple, num_filter: int | None = None) -> dict:
    """The parsed params of the Convolution this Deconvolution is the adjoint of (its data has
    ``channels`` channels); ``num_filter`` overrides the filter count (the bias gradient's)."""
    _, pad = geometry(p, spatial)
    return Convolution.parse_params({
        "kernel": tuple(p["kernel"]), "stride": tuple(p["stride"]), "dilate": tuple(p["dilate"]),
        "pad": pad, "num_filter": channels if num_filter is None else num_filter,
        "num_group": p["num_group"], "no_bias": True})


def conv_view(node, data_shape: tuple) -> types.SimpleNamespace:
    """A stand-in node carrying the convolution's params, for the conv data-gradient emitters."""
    return types.SimpleNamespace(name=node.name, op=node.op,
                                 params=conv_params(node.params, data_shape[1], tuple(data_shape[2:])))


def _args(p: dict) -> list[str]:
    return ["data", "weight"] if p["no_bias"] else ["data", "weight", "bias"]


def _shape(p: dict, ins: list, aux: list):
    data = ins[0]
    k = tuple(p["kernel"])
    if data is None:
        return list(ins), [None], []
    need_rank(data, "data", (len(k) + 2,), f" for a {len(k)}-D kernel")
    if data[1] % p["num_group"]:
        raise RuleError(f"data {shape_str(data)} has {data[1]} channels, not divisible by "
                        f"num_group={p['num_group']}")
    weight = (data[1], p["num_filter"] // p["num_group"], *k)
    out, _ = geometry(p, tuple(data[2:]))
    shapes = [data, weight] + ([] if p["no_bias"] else [(p["num_filter"],)])
    return shapes, [(data[0], p["num_filter"], *out)], []


def _grad(b, node, ograds):
    x, w = node.inputs[0], node.inputs[1]
    shape = b.g.values[x].shape
    dy = ograds[0]
    cp = conv_params(node.params, shape[1], tuple(shape[2:]))
    grads = [b.add("Convolution", [dy, w], params=cp)[0],
             b.add("_backward_Convolution_weight", [x, dy, w], params=cp)[0]]
    if not node.params["no_bias"]:
        bp = dict(cp, num_filter=node.params["num_filter"])
        grads.append(b.add("_backward_Convolution_bias", [dy], params=bp)[0])
    return grads


Deconvolution = register(OpDef(
    name="Deconvolution",
    params=(Param("kernel", "shape", doc="window size (1 or 2 dims)"),
            Param("stride", "shape", (), doc="stride (default 1)"),
            Param("dilate", "shape", (), doc="dilation (default 1)"),
            Param("pad", "shape", (), doc="padding removed from the full output (default 0)"),
            Param("adj", "shape", (), doc="extra output rows/columns at the end (each < stride)"),
            Param("target_shape", "shape", (), doc="the output's spatial size (pad and adj follow)"),
            Param("num_filter", "int", check=lambda v: v > 0, check_msg="> 0", doc="output channels"),
            Param("num_group", "int", 1, check=lambda v: v > 0, check_msg="> 0", doc="channel groups"),
            Param("workspace", "int", 512, doc="ignored (MXNet's scratch limit)"),
            Param("no_bias", "bool", True, doc="no bias input"),
            Param("cudnn_tune", "str", None, nullable=True, choices=("off", "limited_workspace", "fastest"),
                  doc="ignored"),
            Param("cudnn_off", "bool", False, doc="ignored"),
            Param("layout", "str", None, nullable=True, choices=("NCW", "NCHW"), doc="only NCW/NCHW")),
    arguments=_args, check=_check, shape=_shape, dtypes=FLOAT_DTYPES, kind=Kind.OPAQUE, grad=_grad,
    extra={"signature_inputs": 3},
    doc="Transposed convolution: each input pixel scatters ``x * w`` over its window in the output "
        "(the adjoint of Convolution with num_filter = data's channels); ``+ bias[c]`` unless no_bias.",
))
