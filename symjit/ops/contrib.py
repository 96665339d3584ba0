"""MXNet 1.9.1 ``contrib`` operators (registered as ``_contrib_<name>``; ``mx.sym.contrib.<name>``
and ``mx.nd.contrib.<name>`` call them), written as composites of other ops where they are exactly
that, else as records with a scalar body or an index map.

* ``div_sqrt_dim``: ``data / sqrt(data.shape[-1])``.
* ``quadratic`` and ``backward_quadratic``: ``a * x**2 + b * x + c`` and its gradient ``ograd *
  (2 * a * x + b)``.
* ``gradientmultiplier`` and ``backward_gradientmultiplier``: identity forward, head gradient times
  ``scalar`` backward (``scalar=-1`` makes a gradient reversal layer).
* ``round_ste`` / ``sign_ste``: round / sign forward, the head gradient passed straight through.
* ``arange_like``: ``start + (i // repeat) * step`` over data's shape (or its ``axis``).
* ``index_array``: each element's own index (over ``axes``) as a trailing axis.
* ``allclose``: 1 (float32, shape (1,)) when ``|a - b| <= atol + rtol * |b|`` everywhere.
* ``BatchNormWithReLU`` and ``SyncBatchNorm``: BatchNorm (then relu); one device, so
  SyncBatchNorm's statistics are the device's batch statistics, and its third output (with
  ``output_mean_var``) is the variance where BatchNorm's is ``1 / sqrt(var + eps)``.
* ``index_copy``: ``old_tensor`` with the rows ``index_vector`` replaced by ``new_tensor``'s rows.
* ``interleaved_matmul_selfatt_qk`` / ``_valatt`` and ``interleaved_matmul_encdec_qk`` /
  ``_valatt``: the attention products on MXNet's interleaved (seq, batch, heads * (3 or 2) * dim)
  projections, as reshapes, slices and ``batch_dot``.

>>> import symjit as mx
>>> mx.nd.contrib.quadratic(mx.nd.array([1, 2]), a=1, b=2, c=3).asnumpy().tolist()
[6.0, 11.0]
"""
from __future__ import annotations

import math

import numpy as np

from ..jitext import jitable
from .elementwise import _identity, _round, _sign, _unary_shape, const_body, fixed_body
from .norm import BatchNorm
from .registry import Kind, OpDef, Param, ParamError, RuleError, register
from .rules import need_rank, norm_axes, norm_axis, shape_str

__all__ = ["OPS"]

OPS: list[str] = []


def _contrib(op: OpDef) -> OpDef:
    op.extra.setdefault("family", "contrib")
    OPS.append(op.name)
    return register(op)


def _shape_of(b, vid: int) -> tuple:
    return b.g.values[vid].shape


# ---------------------------------------------------------------------------------------------
# elementwise: div_sqrt_dim, quadratic, gradientmultiplier, round_ste, sign_ste

_contrib(OpDef(
    name="_contrib_div_sqrt_dim", shape=_unary_shape,
    expand=lambda b, ins, p: [b.add1("_mul_scalar", ins[0], scalar=1.0 / math.sqrt(_shape_of(b,
                                                                                             ins[0])[-1]))],
    doc="``data / sqrt(data.shape[-1])`` (the scaling of dot-product attention).",
))


def _quadratic(x, a, b, c):
    return a * x * x + b * x + c


def _backward_quadratic(g, x, a, b):
    return g * (2.0 * a * x + b)


_ABC = (Param("a", "float", 0.0, doc="coefficient of x**2"), Param("b", "float", 0.0, doc="coefficient of x"),
        Param("c", "float", 0.0, doc="constant"))
_contrib(OpDef(
    name="_contrib_quadratic", params=_ABC, shape=_unary_shape, kind=Kind.ELEMWISE,
    body=const_body(_quadratic, "a", "b", "c"),
    grad=lambda b, node, ograds: [b.add("_contrib_backward_quadratic", [ograds[0], node.inputs[0]],
                                        params=dict(node.params), raw=True)[0]],
    doc="Elementwise ``a * x**2 + b * x + c``.",
))
_contrib(OpDef(
    name="_contrib_backward_quadratic", arguments=("ograd", "data"), params=_ABC,
    shape=lambda p, ins, aux: ([ins[0] or ins[1]] * 2, [ins[0] or ins[1]], []), kind=Kind.ELEMWISE,
    body=const_body(_backward_quadratic, "a", "b"), extra={"no_grad": True},
    doc="quadratic's gradient: ``ograd * (2 * a * data + b)``.",
))


def _pass_through(b, node, ograds):
    return [ograds[0]]


_SCALAR = (Param("scalar", "float", 1.0, doc="the gradient's factor"),)
_contrib(OpDef(
    name="_contrib_gradientmultiplier", params=_SCALAR, shape=_unary_shape, kind=Kind.ELEMWISE,
    body=fixed_body(_identity),
    grad=lambda b, node, ograds: [b.add1("_mul_scalar", ograds[0], scalar=node.params["scalar"])],
    doc="Identity forward; the gradient is the head gradient times ``scalar``.",
))
_contrib(OpDef(
    name="_contrib_backward_gradientmultiplier", params=_SCALAR, shape=_unary_shape,
    expand=lambda b, ins, p: [b.add1("_mul_scalar", ins[0], scalar=p["scalar"])], extra={"no_grad": True},
    doc="gradientmultiplier's gradient: ``data * scalar``.",
))
for _name, _fn, _what in (("_contrib_round_ste", _round, "round (halves away from zero)"),
                          ("_contrib_sign_ste", _sign, "sign")):
    _contrib(OpDef(
        name=_name, shape=_unary_shape, kind=Kind.ELEMWISE, body=fixed_body(_fn), grad=_pass_through,
        doc=f"Elementwise {_what}; the head gradient passes straight through (straight-through estimator).",
    ))


# ---------------------------------------------------------------------------------------------
# arange_like, index_array (index maps: symjit.lower.indexing)

def _arange_like_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    if p["axis"] is None:
        return [data], [data], []
    return [data], [(data[norm_axis(p["axis"], len(data))],)], []


_contrib(OpDef(
    name="_contrib_arange_like",
    params=(Param("start", "float", 0.0, doc="the first value"), Param("step", "float", 1.0,
                                                                       doc="the spacing"),
            Param("repeat", "int", 1, check=lambda v: v >= 1, check_msg=">= 1", doc="copies of each value"),
            Param("ctx", "str", "", doc="ignored"),
            Param("axis", "int", None, nullable=True,
                  doc="take the length of this axis (None: data's shape)")),
    shape=_arange_like_shape, kind=Kind.INJECTIVE, extra={"no_grad": True},
    doc="``start + (i // repeat) * step`` for the flat position i of an array shaped like data (or "
        "like data's ``axis``); data lends only its shape.",
))


def _index_array_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    axes = tuple(range(len(data))) if p["axes"] is None else norm_axes(p["axes"], len(data), "axes")
    return [data], [tuple(data) + (len(axes),)], []


_contrib(OpDef(
    name="_contrib_index_array", params=(Param("axes", "shape", None, nullable=True,
                                               doc="axes (default all)"),),
    shape=_index_array_shape, dtype=lambda p, ins, aux: (list(ins), [np.dtype(np.int64)], []),
    kind=Kind.INJECTIVE, extra={"no_grad": True},
    doc="For each element of data, its index over ``axes`` as int64 (a trailing axis of len(axes)).",
))


# ---------------------------------------------------------------------------------------------
# allclose

def _allclose_expand(b, ins: list[int], p: dict) -> list[int]:
    a, c = ins
    diff = b.add1("abs", b.add1("broadcast_sub", a, c))
    tol = b.add1("_plus_scalar", b.add1("_mul_scalar", b.add1("abs", c), scalar=p["rtol"]), scalar=p["atol"])
    close = b.add1("broadcast_lesser_equal", diff, tol)
    if p["equal_nan"]:
        nans = b.add1("broadcast_logical_and", b.add1("_contrib_isnan", a), b.add1("_contrib_isnan", c))
        close = b.add1("broadcast_logical_or", close, nans)
    flag = b.add1("min", close)
    return [b.add1("Cast", flag, dtype="float32") if b.g.values[flag].dtype != np.float32 else flag]


def _allclose_shape(p: dict, ins: list, aux: list):
    return list(ins), [(1,)], []


_contrib(OpDef(
    name="_contrib_allclose", arguments=("a", "b"),
    params=(Param("rtol", "float", 1e-5, doc="relative tolerance"), Param("atol", "float", 1e-8,
                                                                          doc="absolute"),
            Param("equal_nan", "bool", True, doc="NaNs at the same place count as equal")),
    shape=_allclose_shape, dtype=lambda p, ins, aux: (list(ins), [np.dtype(np.float32)], []),
    expand=_allclose_expand, extra={"no_grad": True},
    doc="1.0 (float32, shape (1,)) when ``|a - b| <= atol + rtol * |b|`` for every element (numpy's "
        "broadcasting), else 0.0.",
))


# ---------------------------------------------------------------------------------------------
# BatchNormWithReLU, SyncBatchNorm

def _bn_expand(relu: bool, variance: bool):
    """BatchNorm's outputs (its data output through relu when ``relu``); the third is
    BatchNorm's inverse standard deviation ``1 / sqrt(var + eps)``, or with ``variance`` the
    variance itself (SyncBatchNorm's ``output_mean_var``)."""
    def expand(b, ins: list[int], p: dict) -> list[int]:
        bn = {k: p[k] for k in ("eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var",
                                "axis")}
        out, mean, inv_std = b.add("BatchNorm", ins, **bn)
        if variance:
            var_eps = b.add1("reciprocal", b.add1("square", inv_std))
            inv_std = b.add1("_minus_scalar", var_eps, scalar=p["eps"])
        return [b.add1("relu", out) if relu else out, mean, inv_std]
    return expand


_SYNC = (Param("ndev", "int", 1, doc="devices (one here)"), Param("key", "str", "", doc="ignored"))
for _name, _relu, _extra_params, _doc in (
    ("_contrib_BatchNormWithReLU", True, (), "BatchNorm followed by relu (fused in MXNet's oneDNN build)."),
    ("_contrib_SyncBatchNorm", False, _SYNC,
     "BatchNorm whose statistics MXNet synchronises across devices; symjit runs an executor on one "
     "device, so they are that device's batch statistics (ndev and key are accepted). With "
     "``output_mean_var`` its outputs are the mean and the variance (BatchNorm's: the mean and "
     "``1 / sqrt(var + eps)``)."),
):
    _contrib(OpDef(
        name=_name, params=tuple(BatchNorm.params) + _extra_params, arguments=BatchNorm.arguments,
        aux=BatchNorm.aux, outputs=BatchNorm.outputs, visible_outputs=BatchNorm.visible_outputs,
        shape=BatchNorm.shape, dtype=BatchNorm.dtype,
        expand=_bn_expand(_relu, variance=_name == "_contrib_SyncBatchNorm"),
        extra=dict(BatchNorm.extra), doc=_doc,
    ))


# ---------------------------------------------------------------------------------------------
# index_copy

def _index_copy_shape(p: dict, ins: list, aux: list):
    old, ind, new = ins
    if old is None:
        return list(ins), [None], []
    if ind is not None and len(ind) != 1:
        raise RuleError(f"index_vector must be 1-D, got {shape_str(ind)}")
    if new is not None and ind is not None and (new[0] != ind[0] or tuple(new[1:]) != tuple(old[1:])):
        raise RuleError(f"new_tensor {shape_str(new)} must be ({ind[0]}, {', '.join(map(str, old[1:]))}) "
                        f"for index_vector {shape_str(ind)} and old_tensor {shape_str(old)}")
    return [old, ind, new], [old], []


def _index_copy_grad(b, node, ograds):
    old, ind, new = node.inputs
    d_old = b.add1("_contrib_index_copy", ograds[0], ind, b.add1("zeros_like", new))
    d_new = b.add1("take", ograds[0], ind, axis=0, mode="clip")
    return [d_old, None, d_new]


_contrib(OpDef(
    name="_contrib_index_copy", arguments=("old_tensor", "index_vector", "new_tensor"),
    shape=_index_copy_shape,
    dtype=lambda p, ins, aux: ([ins[0], ins[1] if ins[1] is not None else ins[0], ins[0]], [ins[0]], []),
    kind=Kind.INJECTIVE, grad=_index_copy_grad,
    doc="old_tensor with row ``index_vector[i]`` (axis 0) replaced by ``new_tensor[i]``; of repeated "
        "indices the last wins. index_vector gets no gradient.",
))


# ---------------------------------------------------------------------------------------------
# interleaved attention products

def _heads_check(shape: tuple, parts: int, heads: int, arg: str) -> int:
    need_rank(shape, arg, (3,))
    if shape[2] % (parts * heads):
        raise RuleError(f"{arg} {shape_str(shape)}: the last axis must be heads ({heads}) x {parts} x dim")
    return shape[2] // (parts * heads)


def _split_heads(b, x: int, heads: int, parts: int, which: int) -> int:
    """Part ``which`` of an interleaved (S, B, heads * parts * D) projection as (B * heads, S, D)."""
    s, bt, e = _shape_of(b, x)
    d = e // (heads * parts)
    t = b.add1("Reshape", x, shape=(s, bt, heads, parts, d))
    t = b.add1("slice_axis", t, axis=3, begin=which, end=which + 1)
    t = b.add1("transpose", b.add1("Reshape", t, shape=(s, bt, heads, d)), axes=(1, 2, 0, 3))
    return b.add1("Reshape", t, shape=(bt * heads, s, d))


def _merge_heads(b, x: int, heads: int) -> int:
    """(B * heads, S, D) back to (S, B, heads * D)."""
    bh, s, d = _shape_of(b, x)
    t = b.add1("transpose", b.add1("Reshape", x, shape=(bh // heads, heads, s, d)), axes=(2, 0, 1, 3))
    return b.add1("Reshape", t, shape=(s, bh // heads, heads * d))


def _qk(b, q: int, k: int) -> int:
    d = _shape_of(b, q)[-1]
    return b.add1("batch_dot", b.add1("_mul_scalar", q, scalar=1.0 / math.sqrt(d)), k, transpose_b=True)


_HEADS = (Param("heads", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="attention heads"),)


def _selfatt_qk_shape(p: dict, ins: list, aux: list):
    qkv = ins[0]
    if qkv is None:
        return [None], [None], []
    _heads_check(qkv, 3, p["heads"], "queries_keys_values")
    return [qkv], [(qkv[1] * p["heads"], qkv[0], qkv[0])], []


_contrib(OpDef(
    name="_contrib_interleaved_matmul_selfatt_qk", arguments=("queries_keys_values",), params=_HEADS,
    shape=_selfatt_qk_shape,
    expand=lambda b, ins, p: [_qk(b, _split_heads(b, ins[0], p["heads"], 3, 0),
                                  _split_heads(b, ins[0], p["heads"], 3, 1))],
    doc="Self-attention scores from interleaved (seq, batch, heads * 3 * dim) projections (per head: "
        "query, key, value): ``q @ k^T / sqrt(dim)`` as (batch * heads, seq, seq).",
))


def _valatt_shape(parts: int, arg: str):
    def shape(p: dict, ins: list, aux: list):
        x, att = ins
        if x is None:
            return list(ins), [None], []
        d = _heads_check(x, parts, p["heads"], arg)
        want = (x[1] * p["heads"], att[1] if att is not None else None, x[0])
        if att is not None and (att[0] != want[0] or att[2] != x[0]):
            raise RuleError(f"attention {shape_str(att)} does not fit {arg} {shape_str(x)} with "
                            f"{p['heads']} heads")
        rows = att[1] if att is not None else x[0]
        return [x, (want[0], rows, x[0])], [(rows, x[1], p["heads"] * d)], []
    return shape


_contrib(OpDef(
    name="_contrib_interleaved_matmul_selfatt_valatt", arguments=("queries_keys_values", "attention"),
    params=_HEADS, shape=_valatt_shape(3, "queries_keys_values"),
    expand=lambda b, ins, p: [_merge_heads(b, b.add1("batch_dot", ins[1], _split_heads(b, ins[0],
                                                                                       p["heads"], 3, 2)),
                                           p["heads"])],
    doc="``attention @ v`` for interleaved (seq, batch, heads * 3 * dim) projections and (batch * heads, "
        "seq, seq) attention, as (seq, batch, heads * dim).",
))


def _encdec_qk_shape(p: dict, ins: list, aux: list):
    q, kv = ins
    if q is None or kv is None:
        return list(ins), [None], []
    d = _heads_check(q, 1, p["heads"], "queries")
    if _heads_check(kv, 2, p["heads"], "keys_values") != d or kv[1] != q[1]:
        raise RuleError(f"keys_values {shape_str(kv)} does not fit queries {shape_str(q)}")
    return [q, kv], [(q[1] * p["heads"], q[0], kv[0])], []


_contrib(OpDef(
    name="_contrib_interleaved_matmul_encdec_qk", arguments=("queries", "keys_values"), params=_HEADS,
    shape=_encdec_qk_shape,
    expand=lambda b, ins, p: [_qk(b, _split_heads(b, ins[0], p["heads"], 1, 0),
                                  _split_heads(b, ins[1], p["heads"], 2, 0))],
    doc="Encoder-decoder attention scores: queries (seq_q, batch, heads * dim), interleaved keys_values "
        "(seq_k, batch, heads * 2 * dim): ``q @ k^T / sqrt(dim)`` as (batch * heads, seq_q, seq_k).",
))
_contrib(OpDef(
    name="_contrib_interleaved_matmul_encdec_valatt", arguments=("keys_values", "attention"), params=_HEADS,
    shape=_valatt_shape(2, "keys_values"),
    expand=lambda b, ins, p: [_merge_heads(b, b.add1("batch_dot", ins[1], _split_heads(b, ins[0],
                                                                                       p["heads"], 2, 1)),
                                           p["heads"])],
    doc="``attention @ v`` for interleaved keys_values (seq_k, batch, heads * 2 * dim) and attention "
        "(batch * heads, seq_q, seq_k), as (seq_q, batch, heads * dim).",
))


# ---------------------------------------------------------------------------------------------
# AdaptiveAvgPooling2D, BilinearResize2D (index maps with gather gradients: symjit.lower.resize)

def adaptive_size(p: dict) -> tuple[int, int] | None:
    """The (height, width) of AdaptiveAvgPooling2D's output (None: 1 x 1)."""
    size = tuple(p["output_size"] or ())
    if not size:
        return 1, 1
    return (size[0], size[0]) if len(size) == 1 else (size[0], size[1])


def _adaptive_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    need_rank(data, "data", (4,))
    return [data], [tuple(data[:2]) + adaptive_size(p)], []


_contrib(OpDef(
    name="_contrib_AdaptiveAvgPooling2D",
    params=(Param("output_size", "shape", (), doc="(height, width), one int for a square, () for 1 x 1"),),
    shape=_adaptive_shape, kind=Kind.INJECTIVE,
    grad=lambda b, node, ograds: [b.add("_backward_AdaptiveAvgPooling2D", [ograds[0], node.inputs[0]],
                                        params=node.params)[0]],
    doc="Average pooling of (N, C, H, W) data to ``output_size``: output (i, j) averages rows "
        "floor(i*H/OH) to ceil((i+1)*H/OH) - 1 and the columns likewise.",
))
register(OpDef(
    name="_backward_AdaptiveAvgPooling2D", arguments=("ograd", "data"), params=(Param("output_size",
                                                                                      "shape", ()),),
    shape=lambda p, ins, aux: (list(ins), [ins[1]], []), dtype=lambda p, ins, aux: (list(ins), [ins[0]], []),
    kind=Kind.INJECTIVE, extra={"backward_of": "_contrib_AdaptiveAvgPooling2D"},
    doc="AdaptiveAvgPooling2D's gradient: each input pixel sums dout / window size over the windows "
        "that hold it (data lends only its shape).",
))

def _odd_scaled(n: int, scale: float) -> int:
    """odd_scale's size along one axis: an even ``n`` scaled; an odd one keeps its end pixel."""
    return int(n * scale) if n % 2 == 0 else int((n - 1) * scale) + 1


def _to_parity(n: int, mode: str) -> int:
    """to_{even,odd}_{down,up}'s size along one axis: ``n`` or its neighbour of the wanted parity."""
    want = 0 if "even" in mode else 1
    if n % 2 == want:
        return n
    return n - 1 if mode.endswith("down") else n + 1


def resize_size(p: dict, data: tuple, like: tuple | None) -> tuple[int, int]:
    """BilinearResize2D's output (height, width)."""
    mode = p["mode"]
    if mode == "like":
        if like is None:
            raise RuleError("mode='like' needs the second input 'like'")
        return like[2], like[3]
    if mode == "odd_scale":
        return _odd_scaled(data[2], p["scale_height"]), _odd_scaled(data[3], p["scale_width"])
    if mode.startswith("to_"):
        return _to_parity(data[2], mode), _to_parity(data[3], mode)
    if p["scale_height"] is not None or p["scale_width"] is not None:
        sh = p["scale_height"] if p["scale_height"] is not None else p["scale_width"]
        sw = p["scale_width"] if p["scale_width"] is not None else sh
        return int(data[2] * sh), int(data[3] * sw)
    return p["height"], p["width"]


def _resize_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None or (p["mode"] == "like" and ins[1] is None):
        return list(ins), [None], []
    need_rank(data, "data", (4,))
    h, w = resize_size(p, data, ins[1] if len(ins) > 1 else None)
    if h < 1 or w < 1:
        raise RuleError(f"the output size {h}x{w} must be at least 1x1")
    return list(ins), [tuple(data[:2]) + (h, w)], []


def _resize_check(p: dict) -> None:
    if p["mode"] == "odd_scale" and (p["scale_height"] is None or p["scale_width"] is None):
        raise ParamError(f"BilinearResize2D: mode='odd_scale' needs both 'scale_height' and 'scale_width' "
                         f"(got scale_height={p['scale_height']}, scale_width={p['scale_width']})")


def _resize_grad(b, node, ograds):
    dx = b.add("_backward_BilinearResize2D", [ograds[0], node.inputs[0]], params=node.params)[0]
    return [dx] + [None] * (len(node.inputs) - 1)


_RESIZE_PARAMS = (
    Param("height", "int", 1, doc="output height (mode 'size')"), Param("width", "int", 1,
                                                                        doc="output width"),
    Param("scale_height", "float", None, nullable=True, doc="output height = height * this"),
    Param("scale_width", "float", None, nullable=True, doc="output width = width * this"),
    Param("mode", "str", "size", choices=("size", "odd_scale", "like", "to_even_down", "to_even_up",
                                          "to_odd_down", "to_odd_up"), doc="how the size is given"),
    Param("align_corners", "bool", True, doc="corner pixels map onto corner pixels"))
_contrib(OpDef(
    name="_contrib_BilinearResize2D", params=_RESIZE_PARAMS, check=_resize_check,
    arguments=lambda p: ["data", "like"] if p["mode"] == "like" else ["data"],
    shape=_resize_shape, dtype=lambda p, ins, aux: ([ins[0]] * len(ins), [ins[0]], []), kind=Kind.INJECTIVE,
    grad=_resize_grad, extra={"signature_inputs": 2},
    doc="Bilinear resize of (N, C, H, W) data to height x width (or scaled, or like the second input; "
        "odd_scale: an even side scaled, an odd one (side - 1) * scale + 1; to_even_down/_up, "
        "to_odd_down/_up: each side or its neighbour of that parity). With align_corners the corners "
        "map onto each other (source row i * (H-1)/(OH-1)); without, source row (i + 0.5) * H/OH - 0.5, "
        "clamped.",
))
register(OpDef(
    name="_backward_BilinearResize2D", arguments=("ograd", "data"), params=_RESIZE_PARAMS,
    shape=lambda p, ins, aux: (list(ins), [ins[1]], []), dtype=lambda p, ins, aux: (list(ins), [ins[0]], []),
    kind=Kind.INJECTIVE, extra={"backward_of": "_contrib_BilinearResize2D"},
    doc="BilinearResize2D's data gradient: each input pixel sums the interpolation weights it had in "
        "every output pixel times that pixel's dout (data lends only its shape).",
))


@jitable
def resize_source(i, n_in, n_out, align):
    """The (fractional) source row of output row ``i`` when ``n_in`` rows are resized to ``n_out``
    (a scalar helper the lowerings wrap per target)."""
    if align:
        return i * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    s = (i + 0.5) * n_in / n_out - 0.5
    return s if s > 0.0 else 0.0


def resize_weight(i, h, n_in, n_out, align):
    """The weight input row ``h`` has in output row ``i`` (0 when it is not one of the two rows
    output row i interpolates).

    >>> resize_weight(1, 0, 2, 3, True), resize_weight(1, 1, 2, 3, True), resize_weight(0, 1, 2, 3, True)
    (0.5, 0.5, 0.0)
    """
    s = resize_source(i, n_in, n_out, align)
    y0 = int(s)
    y1 = y0 + 1 if y0 + 1 < n_in else n_in - 1
    d = s - y0
    w = 0.0
    if y0 == h:
        w += 1.0 - d
    if y1 == h:
        w += d
    return w


# ---------------------------------------------------------------------------------------------
# GridGenerator, BilinearSampler, SpatialTransformer (public names without the contrib prefix)

def _grid_check(p: dict) -> None:
    if len(tuple(p["target_shape"])) != 2 and p["transform_type"] == "affine":
        raise ParamError(f"GridGenerator: target_shape {tuple(p['target_shape'])} must be (height, width)")


def _grid_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    if p["transform_type"] == "affine":
        need_rank(data, "data", (2,))
        if data[1] != 6:
            raise RuleError(f"data {shape_str(data)} must be (batch, 6): an affine matrix per sample")
        return [data], [(data[0], 2, *tuple(p["target_shape"]))], []
    need_rank(data, "data", (4,))
    if data[1] != 2:
        raise RuleError(f"data {shape_str(data)} must be (batch, 2, height, width): a flow field")
    return [data], [data], []


def _base_grid(b, h: int, w: int, dtype: str) -> int:
    """(3, h * w): the normalised target coordinates x, y and 1 of every pixel, row-major."""
    xs = b.add1("_linspace", start=-1.0, stop=1.0, num=w, dtype=dtype) if w > 1 else \
        b.add1("_full", shape=(w,), value=-1.0, dtype=dtype)
    ys = b.add1("_linspace", start=-1.0, stop=1.0, num=h, dtype=dtype) if h > 1 else \
        b.add1("_full", shape=(h,), value=-1.0, dtype=dtype)
    gx = b.add1("broadcast_to", b.add1("Reshape", xs, shape=(1, w)), shape=(h, w))
    gy = b.add1("broadcast_to", b.add1("Reshape", ys, shape=(h, 1)), shape=(h, w))
    ones = b.add1("_ones", shape=(h * w,), dtype=dtype)
    rows = [b.add1("Reshape", gx, shape=(1, h * w)), b.add1("Reshape", gy, shape=(1, h * w)),
            b.add1("Reshape", ones, shape=(1, h * w))]
    return b.add("Concat", rows, num_args=3, dim=0)[0]


def _grid_expand(b, ins: list[int], p: dict) -> list[int]:
    data = ins[0]
    dtype = b.g.values[data].dtype.name
    if p["transform_type"] == "affine":
        n = _shape_of(b, data)[0]
        h, w = tuple(p["target_shape"])
        theta = b.add1("Reshape", data, shape=(n, 2, 3))
        base = _base_grid(b, h, w, dtype)
        out = b.add1("dot", theta, base)   # (n, 2, 3) . (3, h*w)
        return [b.add1("Reshape", out, shape=(n, 2, h, w))]
    n, _, h, w = _shape_of(b, data)
    base = b.add1("Reshape", b.add("slice_axis", [_base_grid(b, h, w, dtype)], axis=0, begin=0, end=2)[0],
                  shape=(1, 2, h, w))
    scale = b.add1("Reshape", b.add("Concat", [b.add1("_full", shape=(1,), value=2.0 / max(w - 1, 1),
                                                      dtype=dtype),
                                                b.add1("_full", shape=(1,), value=2.0 / max(h - 1, 1),
                                                       dtype=dtype)],
                                    num_args=2, dim=0)[0], shape=(1, 2, 1, 1))
    return [b.add1("broadcast_add", b.add1("broadcast_mul", data, scale), base)]


register(OpDef(
    name="GridGenerator",
    params=(Param("transform_type", "str", choices=("affine", "warp"), doc="affine matrices or a flow field"),
            Param("target_shape", "shape", (0, 0), doc="(height, width) of the affine grid")),
    check=_grid_check, shape=_grid_shape, expand=_grid_expand, extra={"family": "contrib"},
    doc="A sampling grid (batch, 2, H, W) of normalised source coordinates (x then y, -1..1 across the "
        "image): 'affine' maps each target pixel's normalised (x, y, 1) by the sample's 2x3 matrix "
        "(data (batch, 6)); 'warp' adds a pixel flow field (data (batch, 2, H, W)) to the pixel grid.",
))


def _sampler_shape(p: dict, ins: list, aux: list):
    data, grid = ins
    if data is None or grid is None:
        return list(ins), [None], []
    need_rank(data, "data", (4,))
    need_rank(grid, "grid", (4,))
    if grid[0] != data[0] or grid[1] != 2:
        raise RuleError(f"grid {shape_str(grid)} must be ({data[0]}, 2, height, width) for data "
                        f"{shape_str(data)}")
    return [data, grid], [(data[0], data[1], grid[2], grid[3])], []


def _sampler_grad(b, node, ograds):
    data, grid = node.inputs
    return [b.add1("_backward_BilinearSampler_data", ograds[0], grid, data),
            b.add1("_backward_BilinearSampler_grid", ograds[0], grid, data)]


register(OpDef(
    name="BilinearSampler", arguments=("data", "grid"),
    params=(Param("cudnn_off", "bool", None, nullable=True, doc="ignored"),),
    shape=_sampler_shape, kind=Kind.INJECTIVE, grad=_sampler_grad, extra={"family": "contrib"},
    doc="Samples data at the grid's normalised coordinates (x = (gx + 1) * (W - 1) / 2, likewise y) "
        "by bilinear interpolation; points outside the image read 0.",
))
for _name, _out in (("_backward_BilinearSampler_data", 2), ("_backward_BilinearSampler_grid", 1)):
    register(OpDef(
        name=_name, arguments=("ograd", "grid", "data"),
        shape=(lambda o: lambda p, ins, aux: (list(ins), [ins[o]], []))(_out),
        dtype=lambda p, ins, aux: (list(ins), [ins[2]], []), kind=Kind.INJECTIVE,
        extra={"backward_of": "BilinearSampler"},
        doc="BilinearSampler's gradient wrt " + (
            "data: each pixel sums its interpolation weight times dout over every output position"
            if _out == 2 else "the grid: the interpolation's slope along x and y times dout"),
    ))


def _st_shape(p: dict, ins: list, aux: list):
    data, loc = ins
    if data is None:
        return list(ins), [None], []
    need_rank(data, "data", (4,))
    return [data, (data[0], 6)], [(data[0], data[1], *tuple(p["target_shape"]))], []


def _st_expand(b, ins: list[int], p: dict) -> list[int]:
    grid = b.add1("GridGenerator", ins[1], transform_type="affine", target_shape=tuple(p["target_shape"]))
    return [b.add1("BilinearSampler", ins[0], grid)]


register(OpDef(
    name="SpatialTransformer", arguments=("data", "loc"),
    params=(Param("target_shape", "shape", (0, 0), doc="(height, width) of the output"),
            Param("transform_type", "str", "affine", choices=("affine",), doc="only affine"),
            Param("sampler_type", "str", "bilinear", choices=("bilinear",), doc="only bilinear"),
            Param("cudnn_off", "bool", None, nullable=True, doc="ignored")),
    shape=_st_shape, expand=_st_expand, extra={"family": "contrib"},
    doc="``BilinearSampler(data, GridGenerator(loc, 'affine', target_shape))``: data resampled by each "
        "sample's affine matrix (loc, (batch, 6)).",
))
