"""Deformable convolution (Dai et al. 2017) and its modulated form (DCN v2, Zhu et al. 2019):
``contrib.DeformableConvolution(data, offset, weight[, bias])`` and
``contrib.ModulatedDeformableConvolution(data, offset, mask, weight[, bias])`` with MXNet 1.9.1's
parameters (2-D, NCHW). Each kernel tap samples the data at its regular position plus a learned
offset (bilinear interpolation), scaled by a learned mask in the modulated form; channels split
into ``num_deformable_group`` groups with offsets of their own. Both are composites: an internal
column op (``_deformable_im2col``, :mod:`symjit.ops.deform_kernels`) gathers the samples into a
``(C*K, N*OH*OW)`` matrix, then one ``dot`` per channel group with the weight, a transpose to NCHW
and the bias. Gradients reach data, offset, mask (the column op's backward), weight and bias.

>>> import numpy as np, symjit as mx
>>> x = mx.nd.array(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
>>> off = mx.nd.zeros((1, 2, 4, 4))             # no offsets: a plain 1x1 convolution
>>> y = mx.nd.contrib.DeformableConvolution(x, off, mx.nd.ones((1, 1, 1, 1)), mx.nd.zeros((1,)),
...                                          kernel=(1, 1), num_filter=1)
>>> y.asnumpy().ravel()[:4].tolist()
[0.0, 1.0, 2.0, 3.0]
"""
from __future__ import annotations

from .nn import _all_nonneg, _all_positive
from .registry import Kind, OpDef, Param, ParamError, RuleError, register
from .rules import need_rank, shape_str, window_out_len, window_params

__all__: list[str] = []


def _geometry(p: dict) -> tuple:
    k = tuple(p["kernel"])
    if len(k) != 2:
        raise ParamError(f"kernel must have 2 entries (a 2-D deformable convolution), got {shape_str(k)}")
    stride, dilate, pad = window_params(p, 2)
    return k, stride, dilate, pad


def _out_hw(data: tuple, p: dict) -> tuple[int, int]:
    k, stride, dilate, pad = _geometry(p)
    return tuple(window_out_len(data[2 + d], k[d], stride[d], dilate[d], pad[d]) for d in range(2))


def _window_params(extra: tuple = ()) -> tuple:
    pos, nonneg = {"check": _all_positive, "check_msg": "entries > 0"}, {"check": _all_nonneg,
                                                                          "check_msg": "entries >= 0"}
    return (Param("kernel", "shape", **pos, doc="window (h, w)"),
            Param("stride", "shape", (), **pos, doc="stride (default 1)"),
            Param("dilate", "shape", (), **pos, doc="dilation (default 1)"),
            Param("pad", "shape", (), **nonneg, doc="zero padding (default 0)"),
            *extra)


_NDG = Param("num_deformable_group", "int", 1, check=lambda v: v > 0, check_msg="> 0",
             doc="channel groups with offsets (and masks) of their own")


# --- the column op and its gradient ---------------------------------------------------------------
def _col_args(p: dict) -> list[str]:
    return ["data", "offset", "mask"] if p["modulated"] else ["data", "offset"]


def _col_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return list(ins), [None], []
    need_rank(data, "data", (4,), " (N, C, H, W)")
    k, *_ = _geometry(p)
    kk, ndg = k[0] * k[1], p["num_deformable_group"]
    if data[1] % ndg:
        raise RuleError(f"data {shape_str(data)} has {data[1]} channels, not divisible by "
                        f"num_deformable_group={ndg}")
    oh, ow = _out_hw(data, p)
    mask = [(data[0], kk * ndg, oh, ow)] if p["modulated"] else []
    shapes = [data, (data[0], 2 * kk * ndg, oh, ow)] + mask
    return shapes, [(data[1] * kk, data[0] * oh * ow)], []


def _col_grad(b, node, ograds):
    outs = b.add("_backward_deformable_im2col", [ograds[0], *node.inputs], params=node.params)
    return list(outs)


_COL_PARAMS = _window_params((_NDG, Param("modulated", "bool", False, doc="a mask input scales the samples")))

register(OpDef(
    name="_deformable_im2col", params=_COL_PARAMS, arguments=_col_args, shape=_col_shape, kind=Kind.OPAQUE,
    grad=_col_grad, extra={"rewrite_of": "_contrib_DeformableConvolution", "family": "deform"},
    doc="Deformable convolution's columns: (C*K, N*OH*OW), each the data sampled (bilinear) at its tap's "
        "position plus its offset (times its mask when modulated).",
))

register(OpDef(
    name="_backward_deformable_im2col", params=_COL_PARAMS,
    arguments=lambda p: ["ograd"] + _col_args(p),
    outputs=lambda p: ["data_grad", "offset_grad"] + (["mask_grad"] if p["modulated"] else []),
    shape=lambda p, ins, aux: (list(ins), list(ins[1:]), []),
    dtype=lambda p, ins, aux: (list(ins), list(ins[1:]), []),
    kind=Kind.OPAQUE, extra={"backward_of": "_contrib_DeformableConvolution", "family": "deform"},
    doc="The gradients of _deformable_im2col's data, offset (and mask) for a column gradient.",
))


# --- the public ops: columns, one dot per group, NCHW, bias ----------------------------------------
def _check(name: str):
    def check(p: dict) -> None:
        _geometry(p)
        if p["num_filter"] % p["num_group"]:
            raise ParamError(f"{name}: num_filter={p['num_filter']} must be divisible by "
                             f"num_group={p['num_group']}")
        if p["layout"] not in (None, "NCHW"):
            raise ParamError(f"{name}: layout {p['layout']!r} is not supported (NCHW only)")
    return check


def _args(modulated: bool):
    def args(p: dict) -> list[str]:
        head = ["data", "offset"] + (["mask"] if modulated else []) + ["weight"]
        return head if p["no_bias"] else head + ["bias"]
    return args


def _shape(modulated: bool):
    def shape(p: dict, ins: list, aux: list):
        data = ins[0]
        if data is None:
            return list(ins), [None], []
        cp = dict(p, modulated=modulated)
        col_ins, _, _ = _col_shape(cp, ins[:3 if modulated else 2], [])
        k, *_ = _geometry(p)
        g, nf = p["num_group"], p["num_filter"]
        if data[1] % g:
            raise RuleError(f"data {shape_str(data)} has {data[1]} channels, not divisible by num_group={g}")
        oh, ow = _out_hw(data, p)
        weight = (nf, data[1] // g, *k)
        return col_ins + [weight] + ([] if p["no_bias"] else [(nf,)]), [(data[0], nf, oh, ow)], []
    return shape


def _expand(modulated: bool):
    def expand(b, ins: list[int], p: dict) -> list[int]:
        n_col = 3 if modulated else 2
        data, weight = ins[0], ins[n_col]
        n, c, _, _ = b.g.values[data].shape
        k, stride, dilate, pad = _geometry(p)
        kk, g, nf = k[0] * k[1], p["num_group"], p["num_filter"]
        oh, ow = _out_hw(b.g.values[data].shape, p)
        cols = b.add("_deformable_im2col", list(ins[:n_col]), kernel=k, stride=stride, dilate=dilate, pad=pad,
                     num_deformable_group=p["num_deformable_group"], modulated=modulated)[0]
        w2 = b.add1("Reshape", weight, shape=(nf, c // g * kk))
        if g == 1:
            out = b.add1("dot", w2, cols)
        else:
            rows, fpg = c // g * kk, nf // g
            parts = [b.add1("dot", b.add1("slice_axis", w2, axis=0, begin=i * fpg, end=(i + 1) * fpg),
                            b.add1("slice_axis", cols, axis=0, begin=i * rows, end=(i + 1) * rows))
                     for i in range(g)]
            out = b.add1("Concat", *parts, dim=0, num_args=g)
        out = b.add1("transpose", b.add1("Reshape", out, shape=(nf, n, oh, ow)), axes=(1, 0, 2, 3))
        if not p["no_bias"]:
            out = b.add1("broadcast_add", out, b.add1("Reshape", ins[n_col + 1], shape=(1, nf, 1, 1)))
        return [out]
    return expand


def _public(name: str, modulated: bool, extra: tuple, doc: str) -> None:
    params = _window_params((
        Param("num_filter", "int", check=lambda v: v > 0, check_msg="> 0", doc="output channels"),
        Param("num_group", "int", 1, check=lambda v: v > 0, check_msg="> 0", doc="channel groups"),
        _NDG,
        Param("workspace", "int", 1024, check=lambda v: v >= 0, check_msg=">= 0", doc="accepted, unused"),
        Param("no_bias", "bool", False, doc="no bias input"),
        *extra,
        Param("layout", "str", None, nullable=True, choices=("NCDHW", "NCHW", "NCW"), doc="NCHW only")))
    register(OpDef(name=name, params=params, arguments=_args(modulated), shape=_shape(modulated),
                   check=_check(name), kind=Kind.OPAQUE, expand=_expand(modulated), doc=doc,
                   hint=name.split("_")[-1].lower()))


_public("_contrib_DeformableConvolution", False, (),
        "Deformable convolution: each kernel tap reads the data at its position plus a learned offset "
        "(offset: (N, 2*K*num_deformable_group, OH, OW), dy then dx per tap), bilinearly interpolated.")
_public("_contrib_ModulatedDeformableConvolution", True,
        (Param("im2col_step", "int", 64, check=lambda v: v >= 0, check_msg=">= 0", doc="accepted, unused"),),
        "Modulated deformable convolution (DCN v2): the deformable samples scaled by a learned mask "
        "(N, K*num_deformable_group, OH, OW).")
