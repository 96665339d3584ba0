"""Composite operators: MXNet ops that are exactly a small graph of other registered ops.

Each record has MXNet's params, argument names and shape/dtype rules (so symbols infer shapes and
save to MXNet's JSON as one node), and an ``expand`` that builds its forward from other ops when
the compiler builds the graph (:func:`symjit.compiler.passes.build.build_forward`). The gradient
and the lowerings on every target are those of the ops it expands to, and fusion sees through it
(``add_n``'s additions fuse into one loop, ``L2Normalization``'s division into its consumer).

* ``add_n`` / ``ElementWiseSum``: a chain of ``elemwise_add``.
* ``softmin``: ``softmax`` of ``-data``.
* ``SoftmaxActivation``: ``softmax`` over all but the batch axis (``mode='instance'``) or over
  the channel axis (``mode='channel'``).
* ``reshape_like``: ``Reshape`` of ``lhs`` to (part of) ``rhs``'s shape; ``rhs`` lends only its shape.
* ``L2Normalization``: ``data / sqrt(sum(data**2) + eps)`` over each instance, channel vector or
  spatial map.
* ``InstanceNorm`` and ``GroupNorm``: normalisation over each (instance, channel) map or group of
  channels with biased variance, then a per-channel affine ``gamma``, ``beta``.
* ``moments``: mean and (biased) variance over ``axes``.
* ``LRN``: local response normalisation across channels, the window sum as a sum ``Pooling``.
* ``UpSampling``: ``sample_type='nearest'`` is ``repeat`` along the spatial axes (several inputs
  are brought to the first one's size times ``scale`` and concatenated or summed);
  ``'bilinear'`` is a depthwise ``Deconvolution`` with the given weight.
* ``depth_to_space`` / ``space_to_depth``: ``Reshape``, ``transpose``, ``Reshape`` (DCR order, as
  MXNet).

More composites (picks and slices, casts and checks, the deprecated ``_v1`` forms) are in
:mod:`symjit.ops.composite_misc`.

>>> import numpy as np, symjit as mx
>>> mx.nd.add_n(mx.nd.ones((2,)), mx.nd.ones((2,)), mx.nd.ones((2,))).asnumpy().tolist()
[3.0, 3.0]
>>> x = mx.nd.array(np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2))
>>> mx.nd.depth_to_space(x, block_size=2).shape
(1, 1, 4, 4)
"""
from __future__ import annotations

from collections.abc import Callable

from .loss import _softmax_args, _softmax_dtype, _softmax_params, _softmax_shape
from .registry import Kind, OpDef, Param, ParamError, RuleError, register
from .rules import need_float, need_rank, norm_axes, prod, shape_str

__all__ = ["COMPOSITE"]

COMPOSITE: list[str] = []


def _composite(op: OpDef) -> OpDef:
    op.extra.setdefault("family", "composite")
    COMPOSITE.append(op.name)
    return register(op)


def _same(p: dict, ins: list, aux: list):
    known = next((s for s in ins if s is not None), None)
    return [known] * len(ins), [known], []


def _shape_of(b, vid: int) -> tuple:
    return b.g.values[vid].shape


# ---------------------------------------------------------------------------------------------
# add_n / ElementWiseSum

def _add_n_expand(b, ins: list[int], p: dict) -> list[int]:
    acc = ins[0]
    for other in ins[1:]:
        acc = b.add1("elemwise_add", acc, other)
    return [acc if len(ins) > 1 else b.add1("_copy", acc)]


def _add_n_shape(p: dict, ins: list, aux: list):
    known = [s for s in ins if s is not None]
    if any(s != known[0] for s in known):
        raise RuleError("every input must have one shape, got " + ", ".join(shape_str(s) for s in known))
    return _same(p, ins, aux)


_composite(OpDef(
    name="add_n", aliases=("ElementWiseSum",),
    params=(Param("num_args", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="number of inputs"),),
    arguments=lambda p: [f"arg{i}" for i in range(p["num_args"])], variadic="num_args",
    shape=_add_n_shape, kind=Kind.ELEMWISE, expand=_add_n_expand,
    doc="Adds all inputs elementwise (given positionally; one shape and one dtype).",
))


# ---------------------------------------------------------------------------------------------
# softmin, SoftmaxActivation

def _softmin_expand(b, ins: list[int], p: dict) -> list[int]:
    return b.add("softmax", [b.add1("negative", ins[0]), *ins[1:]], params=p)


_composite(OpDef(
    name="softmin", params=_softmax_params(), arguments=_softmax_args, shape=_softmax_shape,
    dtype=_softmax_dtype, expand=_softmin_expand,
    doc="``softmax(-data)`` along ``axis`` (same parameters as softmax).",
))


def _softmax_activation_expand(b, ins: list[int], p: dict) -> list[int]:
    x = ins[0]
    shape = _shape_of(b, x)
    if p["mode"] == "channel":
        return [b.add1("softmax", x, axis=1)]
    flat = b.add1("Reshape", x, shape=(shape[0], prod(shape[1:])))
    return [b.add1("Reshape", b.add1("softmax", flat, axis=-1), shape=shape)]


def _softmax_activation_shape(p: dict, ins: list, aux: list):
    if ins[0] is not None:
        need_rank(ins[0], "data", 2 if p["mode"] == "channel" else 1)
    return [ins[0]], [ins[0]], []


_composite(OpDef(
    name="SoftmaxActivation",
    params=(Param("mode", "str", "instance", choices=("instance", "channel"),
                  doc="'instance': over all but the first axis; 'channel': over axis 1"),),
    shape=_softmax_activation_shape, expand=_softmax_activation_expand,
    doc="Softmax over each instance (every axis but the first) or each position's channels (axis 1).",
))


# ---------------------------------------------------------------------------------------------
# reshape_like

def _span(begin, end, ndim: int, arg: str) -> tuple[int, int]:
    lo = 0 if begin is None else (begin + ndim if begin < 0 else begin)
    hi = ndim if end is None else (end + ndim if end < 0 else end)
    if not 0 <= lo <= hi <= ndim:
        raise RuleError(f"{arg}_begin={begin}, {arg}_end={end} is not a range of {ndim} axes")
    return lo, hi


def _reshape_like_target(p: dict, lhs: tuple, rhs: tuple) -> tuple:
    lo, hi = _span(p["lhs_begin"], p["lhs_end"], len(lhs), "lhs")
    rlo, rhi = _span(p["rhs_begin"], p["rhs_end"], len(rhs), "rhs")
    out = tuple(lhs[:lo]) + tuple(rhs[rlo:rhi]) + tuple(lhs[hi:])
    if prod(out) != prod(lhs):
        raise RuleError(f"cannot reshape lhs {shape_str(lhs)} to {shape_str(out)} (rhs {shape_str(rhs)})")
    return out


def _reshape_like_shape(p: dict, ins: list, aux: list):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return [lhs, rhs], [None], []
    return [lhs, rhs], [_reshape_like_target(p, lhs, rhs)], []


def _reshape_like_dtype(p: dict, ins: list, aux: list):
    return list(ins), [ins[0]], []


def _reshape_like_expand(b, ins: list[int], p: dict) -> list[int]:
    lhs, rhs = ins
    return [b.add1("Reshape", lhs, shape=_reshape_like_target(p, _shape_of(b, lhs), _shape_of(b, rhs)))]


_composite(OpDef(
    name="reshape_like", arguments=("lhs", "rhs"),
    params=tuple(Param(n, "int", None, nullable=True, doc=doc) for n, doc in (
        ("lhs_begin", "first axis of lhs replaced (default 0)"),
        ("lhs_end", "end of the replaced axes of lhs (default: all)"),
        ("rhs_begin", "first axis of rhs taken (default 0)"),
        ("rhs_end", "end of the axes of rhs taken (default: all)"))),
    shape=_reshape_like_shape, dtype=_reshape_like_dtype, expand=_reshape_like_expand,
    doc="Reshapes ``lhs`` so that its axes ``lhs_begin:lhs_end`` become rhs's axes "
        "``rhs_begin:rhs_end`` (by default: to rhs's shape). rhs gets no gradient.",
))


# ---------------------------------------------------------------------------------------------
# L2Normalization, InstanceNorm, GroupNorm, moments

_L2_AXES: dict[str, Callable[[int], tuple[int, ...]]] = {
    "instance": lambda nd: tuple(range(1, nd)), "channel": lambda nd: (1,),
    "spatial": lambda nd: tuple(range(2, nd)),
}


def _l2_shape(p: dict, ins: list, aux: list):
    if ins[0] is not None:
        need_rank(ins[0], "data", 3 if p["mode"] == "spatial" else 2)
    return [ins[0]], [ins[0]], []


def _l2_expand(b, ins: list[int], p: dict) -> list[int]:
    x = ins[0]
    axes = _L2_AXES[p["mode"]](len(_shape_of(b, x)))
    ss = b.add1("sum", b.add1("square", x), axis=axes, keepdims=True)
    return [b.add1("broadcast_mul", x, b.add1("rsqrt", b.add1("_plus_scalar", ss, scalar=p["eps"])))]


_composite(OpDef(
    name="L2Normalization",
    params=(Param("eps", "float", 1e-10, doc="added to the sum of squares"),
            Param("mode", "str", "instance", choices=tuple(_L2_AXES),
                  doc="normalise each instance (all but axis 0), each channel vector (axis 1) or "
                      "each spatial map (axes 2..)")),
    shape=_l2_shape, expand=_l2_expand,
    doc="``data / sqrt(sum(data**2) + eps)``, the sum over the axes ``mode`` names.",
))


def _normalize(b, x: int, axes: tuple[int, ...], eps: float) -> tuple[int, int, int]:
    """(normalised x, mean, variance) over ``axes`` (kept as size-1 axes), biased variance."""
    mean = b.add1("mean", x, axis=axes, keepdims=True)
    centred = b.add1("broadcast_sub", x, mean)
    var = b.add1("mean", b.add1("square", centred), axis=axes, keepdims=True)
    inv = b.add1("rsqrt", b.add1("_plus_scalar", var, scalar=eps))
    return b.add1("broadcast_mul", centred, inv), mean, var


def _affine(b, y: int, gamma: int, beta: int, ndim: int) -> int:
    per_channel = (1, -1) + (1,) * (ndim - 2)
    g = b.add1("Reshape", gamma, shape=per_channel)
    return b.add1("broadcast_add", b.add1("broadcast_mul", y, g), b.add1("Reshape", beta, shape=per_channel))


def _channel_affine_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return list(ins), [None], []
    need_rank(data, "data", 3)
    if p.get("num_groups") and data[1] % p["num_groups"]:
        raise RuleError(f"data {shape_str(data)} has {data[1]} channels, not divisible by "
                        f"num_groups={p['num_groups']}")
    if "num_groups" in p:   # GroupNorm: one gamma and beta per group, as in MXNet 1.x
        groups = p["num_groups"]
        return [data, (groups,), (groups,)], [data, (data[0], groups), (data[0], groups)], []
    return [data, (data[1],), (data[1],)], [data], []


def _float_dtype(p: dict, ins: list, aux: list):
    data = next((t for t in ins if t is not None), None)
    if data is not None:
        need_float(data, "data")
    return [data] * len(ins), [data] * (3 if "num_groups" in p else 1), []


def _instance_norm_expand(b, ins: list[int], p: dict) -> list[int]:
    x, gamma, beta = ins
    nd = len(_shape_of(b, x))
    y, _, _ = _normalize(b, x, tuple(range(2, nd)), p["eps"])
    return [_affine(b, y, gamma, beta, nd)]


_composite(OpDef(
    name="InstanceNorm", arguments=("data", "gamma", "beta"),
    params=(Param("eps", "float", 1e-3, doc="added to the variance"),),
    shape=_channel_affine_shape, dtype=_float_dtype, expand=_instance_norm_expand,
    doc="Normalises each (instance, channel) map over its spatial axes (biased variance), then "
        "``* gamma[c] + beta[c]``.",
))


def _group_norm_expand(b, ins: list[int], p: dict) -> list[int]:
    x, gamma, beta = ins
    shape = _shape_of(b, x)
    grouped = b.add1("Reshape", x, shape=(shape[0], p["num_groups"], -1))
    y, mean, var = _normalize(b, grouped, (2,), p["eps"])
    out = b.add1("Reshape", _affine(b, y, gamma, beta, 3), shape=shape)   # gamma[g], beta[g] per group
    rows = (shape[0], p["num_groups"])
    std = b.add1("sqrt", b.add1("_plus_scalar", var, scalar=p["eps"]))
    return [out, b.add1("Reshape", mean, shape=rows), b.add1("Reshape", std, shape=rows)]


_composite(OpDef(
    name="GroupNorm", arguments=("data", "gamma", "beta"), outputs=("output", "mean", "std"),
    visible_outputs=lambda p: 3 if p["output_mean_var"] else 1,
    params=(Param("num_groups", "int", 1, check=lambda v: v >= 1, check_msg=">= 1", doc="channel groups"),
            Param("eps", "float", 1e-5, doc="added to the variance"),
            Param("output_mean_var", "bool", False, doc="also output each group's mean and std")),
    shape=_channel_affine_shape, dtype=_float_dtype, expand=_group_norm_expand,
    doc="Normalises each group of ``C / num_groups`` channels of an instance (biased variance), then "
        "``* gamma[g] + beta[g]`` with one ``gamma``/``beta`` of shape ``(num_groups,)`` per group (as "
        "MXNet 1.x); the hidden outputs are each group's mean and ``sqrt(var + eps)``.",
))


def _moments_axes(p: dict, nd: int) -> tuple[int, ...]:
    return tuple(range(nd)) if p["axes"] is None else norm_axes(p["axes"], nd, "axes")


def _moments_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None, None], []
    axes = _moments_axes(p, len(data))
    out = tuple(1 if i in axes else d for i, d in enumerate(data)) if p["keepdims"] else \
        tuple(d for i, d in enumerate(data) if i not in axes)
    out = out or (1,)   # every axis reduced: shape (1,), as the reductions'
    return [data], [out, out], []


def _moments_expand(b, ins: list[int], p: dict) -> list[int]:
    x = ins[0]
    axes = _moments_axes(p, len(_shape_of(b, x)))
    mean = b.add1("mean", x, axis=axes, keepdims=True)
    var = b.add1("mean", b.add1("square", b.add1("broadcast_sub", x, mean)), axis=axes,
                 keepdims=p["keepdims"])
    return [mean if p["keepdims"] else b.add1("mean", x, axis=axes), var]


_composite(OpDef(
    name="moments", outputs=("mean", "var"),
    params=(Param("axes", "shape", None, nullable=True, doc="axes to reduce (default: all)"),
            Param("keepdims", "bool", False, doc="keep reduced axes as size-1 dimensions")),
    shape=_moments_shape, dtype=lambda p, ins, aux: (list(ins), [ins[0], ins[0]], []),
    expand=_moments_expand,
    doc="The mean and the (biased) variance of ``data`` over ``axes`` (shape (1,) when every axis is "
        "reduced without ``keepdims``).",
))


# ---------------------------------------------------------------------------------------------
# LRN

def _lrn_expand(b, ins: list[int], p: dict) -> list[int]:
    x = ins[0]
    n, c = _shape_of(b, x)[:2]
    shape = _shape_of(b, x)
    rows = b.add1("Reshape", b.add1("square", x), shape=(n, 1, c, prod(shape[2:])))
    window = b.add1("Pooling", rows, kernel=(p["nsize"], 1), stride=(1, 1), pad=(p["nsize"] // 2, 0),
                    pool_type="sum")
    scale = b.add1("_plus_scalar", b.add1("_mul_scalar", window, scalar=p["alpha"] / p["nsize"]),
                   scalar=p["knorm"])
    denom = b.add1("_power_scalar", b.add1("Reshape", scale, shape=shape), scalar=p["beta"])
    return [b.add1("elemwise_div", x, denom)]


def _lrn_shape(p: dict, ins: list, aux: list):
    if ins[0] is not None:
        need_rank(ins[0], "data", 3)
    return [ins[0]], [ins[0]], []


_composite(OpDef(
    name="LRN",
    params=(Param("alpha", "float", 1e-4, doc="scale of the window sum"),
            Param("beta", "float", 0.75, doc="exponent"),
            Param("knorm", "float", 2.0, doc="offset"),
            Param("nsize", "int", check=lambda v: v >= 1 and v % 2 == 1, check_msg="odd and >= 1",
                  doc="channels in the window (odd)")),
    shape=_lrn_shape, expand=_lrn_expand,
    doc="Local response normalisation across channels: ``x / (knorm + alpha / nsize * "
        "sum(x[c']**2 for the nsize channels c' centred on c))**beta``.",
))


# ---------------------------------------------------------------------------------------------
# UpSampling (nearest)

def _upsampling_args(p: dict) -> list[str]:
    if p["sample_type"] == "bilinear":
        return ["data", "weight"]
    return [f"arg{i}" for i in range(p["num_args"])]


def _upsampling_check(p: dict) -> None:
    if p["sample_type"] == "bilinear" and p["num_filter"] <= 0:
        raise ParamError("UpSampling: sample_type='bilinear' needs num_filter (the channels)")


def _bilinear_geometry(scale: int) -> dict:
    """The Deconvolution of MXNet's bilinear UpSampling: a depthwise transposed convolution."""
    k = 2 * scale - scale % 2
    pad = scale // 2
    return {"kernel": (k, k), "stride": (scale, scale), "pad": (pad, pad)}


def _upsampling_shape(p: dict, ins: list, aux: list):
    first = ins[0]
    if first is None:
        return list(ins), [None], []
    need_rank(first, "arg0" if p["sample_type"] == "nearest" else "data", (4,))
    if p["sample_type"] == "bilinear":
        k = _bilinear_geometry(p["scale"])["kernel"]
        c = p["num_filter"]
        if first[1] != c:
            raise RuleError(f"data {shape_str(first)} must have num_filter={c} channels")
        return [first, (c, 1, *k)], [(first[0], c, first[2] * p["scale"], first[3] * p["scale"])], []
    h, w = first[2] * p["scale"], first[3] * p["scale"]
    for i, s in enumerate(ins[1:], 1):
        if s is not None and (len(s) != 4 or h % s[2] or w % s[3] or h // s[2] != w // s[3]):
            raise RuleError(f"input arg{i} {shape_str(s)} cannot be scaled to {h}x{w} (arg0 "
                            f"{shape_str(first)} times scale {p['scale']})")
    if p["multi_input_mode"] == "sum" or len(ins) == 1:
        return list(ins), [(first[0], first[1], h, w)], []
    return list(ins), [(first[0], sum(s[1] for s in ins if s is not None), h, w)], []


def _upsampling_expand(b, ins: list[int], p: dict) -> list[int]:
    if p["sample_type"] == "bilinear":
        c = p["num_filter"]
        return [b.add1("Deconvolution", ins[0], ins[1], num_filter=c, num_group=c, no_bias=True,
                       **_bilinear_geometry(p["scale"]))]
    h = _shape_of(b, ins[0])[2] * p["scale"]
    ups = []
    for x in ins:
        k = h // _shape_of(b, x)[2]
        rows = b.add1("repeat", x, repeats=k, axis=2) if k > 1 else x
        ups.append(b.add1("repeat", rows, repeats=k, axis=3) if k > 1 else x)
    if len(ups) == 1:
        return [ups[0]]
    if p["multi_input_mode"] == "sum":
        acc = ups[0]
        for u in ups[1:]:
            acc = b.add1("elemwise_add", acc, u)
        return [acc]
    return [b.add("Concat", ups, num_args=len(ups), dim=1)[0]]


_composite(OpDef(
    name="UpSampling",
    params=(Param("scale", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="the upsampling factor"),
            Param("num_filter", "int", 0, doc="channels (bilinear only)"),
            Param("sample_type", "str", choices=("nearest", "bilinear"), doc="the interpolation"),
            Param("multi_input_mode", "str", "concat", choices=("concat", "sum"),
                  doc="how several inputs are combined"),
            Param("num_args", "int", 1, check=lambda v: v >= 1, check_msg=">= 1", doc="number of inputs"),
            Param("workspace", "int", 512, doc="ignored (MXNet's scratch limit)")),
    arguments=_upsampling_args, variadic="num_args", check=_upsampling_check,
    shape=_upsampling_shape, dtype=lambda p, ins, aux: ([ins[0]] * len(ins), [ins[0]], []),
    expand=_upsampling_expand,
    doc="Upsampling of (N, C, H, W) inputs by ``scale``. 'nearest': each pixel repeated scale x scale "
        "times; further inputs are scaled to the first one's output size and concatenated along "
        "channels or summed (``multi_input_mode``). 'bilinear': a depthwise Deconvolution of data "
        "(num_filter = C channels) with ``weight`` of shape (C, 1, 2*scale - scale%2, same), stride "
        "scale and pad ceil((scale-1)/2), as MXNet (initialise the weight with ``mx.init.Bilinear``).",
))


# ---------------------------------------------------------------------------------------------
# depth_to_space / space_to_depth

def _d2s_shape(p: dict, ins: list, aux: list):
    data, k = ins[0], p["block_size"]
    if data is None:
        return [None], [None], []
    need_rank(data, "data", (4,))
    if data[1] % (k * k):
        raise RuleError(f"data {shape_str(data)}: channels not divisible by block_size**2 = {k * k}")
    return [data], [(data[0], data[1] // (k * k), data[2] * k, data[3] * k)], []


def _s2d_shape(p: dict, ins: list, aux: list):
    data, k = ins[0], p["block_size"]
    if data is None:
        return [None], [None], []
    need_rank(data, "data", (4,))
    if data[2] % k or data[3] % k:
        raise RuleError(f"data {shape_str(data)}: height and width must be divisible by block_size={k}")
    return [data], [(data[0], data[1] * k * k, data[2] // k, data[3] // k)], []


def _d2s_expand(b, ins: list[int], p: dict) -> list[int]:
    n, c, h, w = _shape_of(b, ins[0])
    k = p["block_size"]
    t = b.add1("Reshape", ins[0], shape=(n, k, k, c // (k * k), h, w))
    t = b.add1("transpose", t, axes=(0, 3, 4, 1, 5, 2))
    return [b.add1("Reshape", t, shape=(n, c // (k * k), h * k, w * k))]


def _s2d_expand(b, ins: list[int], p: dict) -> list[int]:
    n, c, h, w = _shape_of(b, ins[0])
    k = p["block_size"]
    t = b.add1("Reshape", ins[0], shape=(n, c, h // k, k, w // k, k))
    t = b.add1("transpose", t, axes=(0, 3, 5, 1, 2, 4))
    return [b.add1("Reshape", t, shape=(n, c * k * k, h // k, w // k))]


_BLOCK = (Param("block_size", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="the block edge"),)
_composite(OpDef(
    name="depth_to_space", params=_BLOCK, shape=_d2s_shape, kind=Kind.INJECTIVE, expand=_d2s_expand,
    doc="Moves blocks of channels into space: (N, C, H, W) -> (N, C/b**2, H*b, W*b), "
        "output[n, c, h*b + i, w*b + j] = data[n, (i*b + j) * C/b**2 + c, h, w].",
))
_composite(OpDef(
    name="space_to_depth", params=_BLOCK, shape=_s2d_shape, kind=Kind.INJECTIVE, expand=_s2d_expand,
    doc="The inverse of depth_to_space: (N, C, H, W) -> (N, C*b**2, H/b, W/b).",
))
