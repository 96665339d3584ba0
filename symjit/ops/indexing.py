"""Index-map operators of MXNet 1.9.1: each output element read from a computed position (their
lowerings are target-neutral element expressions in :mod:`symjit.lower.indexing`), with gradients
that are index maps too (a gather over the positions that read an element: no atomics).

* ``SequenceMask``, ``SequenceReverse``, ``SequenceLast``: per-sequence lengths along the time
  axis (``sequence_length`` of shape (batch,), read as integers; without
  ``use_sequence_length`` every sequence is full length).
* ``Pad``: ``constant``, ``edge`` or ``reflect`` padding (``pad_width`` = before/after per axis).
* ``diag``: a 1-D input becomes a matrix with it on diagonal ``k``; an N-D input gives the
  diagonal of axes ``axis1``/``axis2`` as its last axis.
* ``gather_nd`` / ``scatter_nd``: ``indices`` of shape (M, Y...) address the first M axes
  (negative indices count from the end; values outside are clipped, so nothing is read out of
  bounds); scatter_nd writes zeros elsewhere, and the last of duplicate positions wins.
* ``cumsum``: the running sum along ``axis`` (the flattened array when None).
* ``shape_array`` / ``size_array``: the input's shape and size as int64 arrays.

>>> import symjit as mx
>>> x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
>>> mx.nd.SequenceMask(x, mx.nd.array([1, 2, 2]), use_sequence_length=True, value=-1).asnumpy().tolist()
[[1.0, 2.0, 3.0], [-1.0, 5.0, 6.0]]
>>> mx.nd.cumsum(x, axis=1).asnumpy().tolist()
[[1.0, 3.0, 6.0], [4.0, 9.0, 15.0]]
"""
from __future__ import annotations

import math

import numpy as np

from .registry import Kind, OpDef, Param, ParamError, RuleError, register
from .rules import need_rank, norm_axis, prod, shape_str, window_params

__all__ = ["pad_widths", "diag_geometry", "seq_axes", "nd_index", "OPS"]


def _like_data(p: dict, ins: list, aux: list):
    """dtype rule: outputs like input 0; index inputs (sequence_length, indices) keep their own
    dtype, and take data's when unknown (as an MXNet variable without a type)."""
    data = ins[0]
    return [data] + [t if t is not None else data for t in ins[1:]], [data], []


# ---------------------------------------------------------------------------------------------
# Sequence ops

def _seq_args(p: dict) -> list[str]:
    return ["data", "sequence_length"] if p["use_sequence_length"] else ["data"]


def _seq_params(value: bool = False, axis_choices: tuple[int, ...] = (0, 1)) -> tuple[Param, ...]:
    ps = [Param("use_sequence_length", "bool", False, doc="take per-sequence lengths"),
          Param("axis", "int", 0, check=lambda v: v in axis_choices,
                check_msg=" or ".join(map(str,
                                          axis_choices)), doc="the time axis (batch is the other of 0/1)")]
    if value:
        ps.insert(1, Param("value", "float", 0.0, doc="written past each sequence's end"))
    return tuple(ps)


def seq_axes(p: dict) -> tuple[int, int]:
    """(time axis, batch axis)."""
    return (0, 1) if p["axis"] == 0 else (1, 0)


def _seq_in_shapes(p: dict, data) -> list:
    need_rank(data, "data", 2)
    _, b = seq_axes(p)
    return [data, (data[b],)] if p["use_sequence_length"] else [data]


def _seq_shape(p: dict, ins: list, aux: list):
    if ins[0] is None:
        return list(ins), [None], []
    return _seq_in_shapes(p, ins[0]), [ins[0]], []


def _seq_grad_same(b, node, ograds):
    """SequenceMask (value 0) / SequenceReverse of the head gradient; no gradient for lengths."""
    params = dict(node.params, **({"value": 0.0} if "value" in node.params else {}))
    dx = b.add(node.op, [ograds[0], *node.inputs[1:]], params=params)[0]
    return [dx] + [None] * (len(node.inputs) - 1)


register(OpDef(
    name="SequenceMask", params=_seq_params(value=True), arguments=_seq_args, shape=_seq_shape,
    dtype=_like_data, kind=Kind.INJECTIVE, grad=_seq_grad_same,
    doc="Sets the entries past each sequence's length (along ``axis``) to ``value``; data is "
        "(T, B, ...) for axis 0 or (B, T, ...) for axis 1.",
))
register(OpDef(
    name="SequenceReverse", params=_seq_params(axis_choices=(0,)), arguments=_seq_args,
    shape=_seq_shape, dtype=_like_data, kind=Kind.INJECTIVE, grad=_seq_grad_same,
    doc="Reverses the first ``sequence_length[b]`` steps of each sequence of (T, B, ...) data "
        "along axis 0; the steps past the length stay where they are.",
))


def _seq_last_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return list(ins), [None], []
    t, _ = seq_axes(p)
    return _seq_in_shapes(p, data), [data[:t] + data[t + 1:]], []


def _seq_last_grad(b, node, ograds):
    dx = b.add("_backward_SequenceLast", [ograds[0], node.inputs[0], *node.inputs[1:]],
               params=node.params)[0]
    return [dx] + [None] * (len(node.inputs) - 1)


register(OpDef(
    name="SequenceLast", params=_seq_params(), arguments=_seq_args, shape=_seq_last_shape,
    dtype=_like_data, kind=Kind.INJECTIVE, grad=_seq_last_grad,
    doc="The last step of each sequence: ``data[sequence_length[b] - 1]`` along ``axis`` (the "
        "last step when not using lengths).",
))


def _bw_seq_last_shape(p: dict, ins: list, aux: list):
    data = ins[1]
    rest = [(data[seq_axes(p)[1]],)] if p["use_sequence_length"] and data is not None else list(ins[2:])
    return [ins[0], data, *rest], [data], []


register(OpDef(
    name="_backward_SequenceLast", params=_seq_params(),
    arguments=lambda p: ["ograd", "data", "sequence_length"] if p["use_sequence_length"] else ["ograd",
                                                                                               "data"],
    shape=_bw_seq_last_shape, dtype=lambda p, ins, aux: (list(ins), [ins[0]], []), kind=Kind.INJECTIVE,
    doc="SequenceLast's data gradient: the head gradient at each sequence's last step, else 0 "
        "(data lends only its shape).", extra={"backward_of": "SequenceLast"},
))


# ---------------------------------------------------------------------------------------------
# Pad

def pad_widths(p: dict, ndim: int) -> list[tuple[int, int]]:
    """(before, after) per axis from ``pad_width`` (2 * ndim entries).

    >>> pad_widths({'pad_width': (0, 0, 1, 2)}, 2)
    [(0, 0), (1, 2)]
    """
    w = tuple(p["pad_width"])
    if len(w) != 2 * ndim:
        raise RuleError(f"pad_width has {len(w)} entries, expected 2 * {ndim} (before and after per axis)")
    if any(v < 0 for v in w):
        raise RuleError(f"pad_width {w} has a negative entry")
    return [(w[2 * d], w[2 * d + 1]) for d in range(ndim)]


def _pad_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    widths = pad_widths(p, len(data))
    if p["mode"] == "reflect" and any(max(bw) >= n for n, bw in zip(data, widths) if max(bw)):
        raise RuleError(f"mode='reflect' needs each pad smaller than its axis: data {shape_str(data)}, "
                        f"pad_width {tuple(p['pad_width'])}")
    return [data], [tuple(n + b + a for n, (b, a) in zip(data, widths))], []


def _pad_grad(b, node, ograds):
    if node.params["mode"] != "constant":
        return [b.add("_backward_Pad", [ograds[0], node.inputs[0]], params=node.params)[0]]
    shape = b.g.values[node.inputs[0]].shape
    widths = pad_widths(node.params, len(shape))
    begin = tuple(bw for bw, _ in widths)
    end = tuple(bw + n for (bw, _), n in zip(widths, shape))
    return [b.add1("slice", ograds[0], begin=str(begin), end=str(end))]


_PAD_PARAMS = (Param("mode", "str", "constant", choices=("constant", "edge", "reflect"), doc="padding kind"),
               Param("pad_width", "shape", doc="(before, after) per axis, flattened"),
               Param("constant_value", "float", 0.0, doc="the value of mode='constant'"))

register(OpDef(
    name="Pad", aliases=("pad",), params=_PAD_PARAMS, shape=_pad_shape, kind=Kind.INJECTIVE, grad=_pad_grad,
    doc="Pads every axis by ``pad_width`` (before, after per axis): with ``constant_value``, with the "
        "edge values, or with the reflection (without repeating the edge).",
))
register(OpDef(
    name="_backward_Pad", arguments=("ograd", "data"), params=_PAD_PARAMS,
    shape=lambda p, ins, aux: (list(ins), [ins[1]], []),
    dtype=lambda p, ins, aux: (list(ins), [ins[0]], []), kind=Kind.INJECTIVE,
    doc="Pad's data gradient for edge/reflect: each element sums the head gradient of the output "
        "positions that read it (data lends only its shape).", extra={"backward_of": "Pad"},
))


# ---------------------------------------------------------------------------------------------
# diag

def diag_geometry(p: dict, shape: tuple) -> tuple[int, int, int]:
    """(axis1, axis2, diagonal length) of an N-D ``diag``."""
    a1, a2 = norm_axis(p["axis1"], len(shape), "axis1"), norm_axis(p["axis2"], len(shape), "axis2")
    if a1 == a2:
        raise RuleError(f"axis1 and axis2 name the same axis ({a1})")
    k = p["k"]
    n = min(shape[a1], shape[a2] - k) if k >= 0 else min(shape[a1] + k, shape[a2])
    if n < 0:
        raise RuleError(f"diagonal k={k} lies outside the {shape[a1]}x{shape[a2]} matrices of axes "
                        f"{a1} and {a2} of {shape_str(shape)}")
    return a1, a2, n


def _diag_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    need_rank(data, "data", 1)
    if len(data) == 1:
        n = data[0] + abs(p["k"])
        return [data], [(n, n)], []
    a1, a2, n = diag_geometry(p, data)
    return [data], [tuple(d for i, d in enumerate(data) if i not in (a1, a2)) + (n,)], []


def _diag_grad(b, node, ograds):
    if len(b.g.values[node.inputs[0]].shape) == 1:
        return [b.add1("diag", ograds[0], k=node.params["k"])]
    return [b.add("_backward_diag", [ograds[0], node.inputs[0]], params=node.params)[0]]


_DIAG_PARAMS = (Param("k", "int", 0, doc="the diagonal: 0 the main one, > 0 above, < 0 below"),
                Param("axis1", "int", 0, doc="the diagonal's first axis (N-D input)"),
                Param("axis2", "int", 1, doc="the diagonal's second axis (N-D input)"))

register(OpDef(
    name="diag", params=_DIAG_PARAMS, shape=_diag_shape, kind=Kind.INJECTIVE, grad=_diag_grad,
    doc="A 1-D input becomes the square matrix with it on diagonal ``k``; an N-D input gives its "
        "diagonal ``k`` of axes ``axis1``/``axis2`` as the last axis of the result.",
))
register(OpDef(
    name="_backward_diag", arguments=("ograd", "data"), params=_DIAG_PARAMS,
    grad=lambda b, node, ograds: [b.add("diag", [ograds[0]], params=node.params)[0], None],
    shape=lambda p, ins, aux: (list(ins), [ins[1]], []),
    dtype=lambda p, ins, aux: (list(ins), [ins[0]], []), kind=Kind.INJECTIVE,
    doc="diag's gradient for N-D data: the head gradient on the diagonal, 0 elsewhere (data lends "
        "only its shape).", extra={"backward_of": "diag"},
))


# ---------------------------------------------------------------------------------------------
# gather_nd / scatter_nd

def _nd_index_check(indices, data_rank: int | None, what: str) -> None:
    need_rank(indices, "indices", 1)
    if data_rank is not None and indices[0] > data_rank:
        raise RuleError(f"indices {shape_str(indices)} address {indices[0]} axes, {what} has {data_rank}")


def _gather_nd_shape(p: dict, ins: list, aux: list):
    data, ind = ins
    if data is None or ind is None:
        return list(ins), [None], []
    _nd_index_check(ind, len(data), "data")
    return [data, ind], [tuple(ind[1:]) + tuple(data[ind[0]:])], []


def _gather_nd_grad(b, node, ograds):
    return [b.add1("_backward_gather_nd", ograds[0], node.inputs[1], node.inputs[0]), None]


register(OpDef(
    name="gather_nd", arguments=("data", "indices"), shape=_gather_nd_shape, dtype=_like_data,
    kind=Kind.INJECTIVE, grad=_gather_nd_grad,
    doc="``output[y..., rest...] = data[indices[0, y...], ..., indices[M-1, y...], rest...]`` for "
        "indices of shape (M, Y...); indices gets no gradient.",
))


def _scatter_nd_shape(p: dict, ins: list, aux: list):
    data, ind = ins
    shape = tuple(p["shape"])
    if ind is not None:
        _nd_index_check(ind, len(shape), "shape")
        want = tuple(ind[1:]) + shape[ind[0]:]
        if data is not None and data != want:
            raise RuleError(f"data {shape_str(data)} must be {shape_str(want)} for indices "
                            f"{shape_str(ind)} and shape {shape_str(shape)}")
        data = want
    return [data, ind], [shape], []


def _scatter_nd_grad(b, node, ograds):
    return [b.add1("gather_nd", ograds[0], node.inputs[1]), None]


register(OpDef(
    name="scatter_nd", arguments=("data", "indices"), params=(Param("shape", "shape", doc="output shape"),),
    shape=_scatter_nd_shape, dtype=_like_data, kind=Kind.INJECTIVE, grad=_scatter_nd_grad,
    doc="Zeros of ``shape`` with ``output[indices[:, y...], rest...] = data[y..., rest...]``; of "
        "duplicate positions the last one wins. indices gets no gradient.",
))


def _bw_gather_nd_shape(p: dict, ins: list, aux: list):
    return list(ins), [ins[2]], []


register(OpDef(
    name="_backward_gather_nd", arguments=("ograd", "indices", "data"), shape=_bw_gather_nd_shape,
    dtype=lambda p, ins, aux: (list(ins), [ins[0]], []), kind=Kind.INJECTIVE,
    doc="gather_nd's data gradient: each element sums the head gradient of every position y whose "
        "index reads it (data lends only its shape).", extra={"backward_of": "gather_nd"},
))


# ---------------------------------------------------------------------------------------------
# cumsum

def _cumsum_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    if p["axis"] is None:
        return [data], [(prod(data),)], []
    norm_axis(p["axis"], len(data))
    return [data], [data], []


def _cumsum_dtype(p: dict, ins: list, aux: list):
    out = np.dtype(p["dtype"]) if p["dtype"] is not None else ins[0]
    return list(ins), [out], []


def _cumsum_grad(b, node, ograds):
    shape = b.g.values[node.inputs[0]].shape
    ax = 0 if node.params["axis"] is None else norm_axis(node.params["axis"], len(shape))
    rev = b.add1("reverse", ograds[0], axis=(ax,))
    dx = b.add1("reverse", b.add1("cumsum", rev, axis=ax), axis=(ax,))
    if node.params["axis"] is None:
        dx = b.add1("Reshape", dx, shape=shape)
    if b.g.values[dx].dtype != b.g.values[node.inputs[0]].dtype:
        dx = b.add1("Cast", dx, dtype=b.g.values[node.inputs[0]].dtype.name)
    return [dx]


register(OpDef(
    name="cumsum", arguments=("a",),
    params=(Param("axis", "int", None, nullable=True, doc="the axis (None: the flattened array)"),
            Param("dtype", "dtype", None, nullable=True, doc="the output dtype (default: the input's)")),
    shape=_cumsum_shape, dtype=_cumsum_dtype, kind=Kind.INJECTIVE, grad=_cumsum_grad,
    doc="The cumulative sum along ``axis``: ``out[..., i, ...] = sum(a[..., :i + 1, ...])`` (one "
        "loop per element over the preceding ones).",
))


# ---------------------------------------------------------------------------------------------
# shape_array / size_array

for _name, _out, _what in (("shape_array", lambda d: (len(d),), "the shape"),
                           ("size_array", lambda d: (1,), "the number of elements")):
    register(OpDef(
        name=_name,
        shape=(lambda out: lambda p, ins, aux: ([ins[0]], [None if ins[0] is None else out(ins[0])],
                                                []))(_out),
        dtype=lambda p, ins, aux: (list(ins), [np.dtype(np.int64)], []), kind=Kind.INJECTIVE,
        doc=f"{_what[0].upper() + _what[1:]} of the input as an int64 array.",
        extra={"no_grad": True},
    ))


def nd_index(v, n):
    """The position an index value ``v`` selects on an axis of length ``n``: truncated toward
    zero, negative values counted from the end, then clipped to ``[0, n - 1]`` (a scalar body,
    wrapped per target by the lowerings).

    >>> nd_index(-1.0, 4), nd_index(-1.5, 4), nd_index(7.0, 4), nd_index(2.9, 4), nd_index(-0.5, 4)
    (3, 3, 3, 2, 0)
    """
    if not (v == v):
        return 0
    if v <= -1:
        v = math.ceil(v) + n
    if not (v >= 0):
        return 0
    if v >= n:
        return n - 1
    return int(v)


OPS = ("SequenceMask", "SequenceReverse", "SequenceLast", "Pad", "diag", "gather_nd", "scatter_nd",
       "cumsum", "shape_array", "size_array")


# ---------------------------------------------------------------------------------------------
# ravel_multi_index / unravel_index / fill_element_0index

def _ravel_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    shape = tuple(p["shape"])
    if data is None:
        return [None], [None], []
    need_rank(data, "data", 1)
    if data[0] != len(shape):
        raise RuleError(f"data {shape_str(data)} must hold {len(shape)} index rows for shape "
                        f"{shape_str(shape)}")
    return [data], [tuple(data[1:]) or (1,)], []


def _unravel_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    return [data], [(len(tuple(p["shape"])),) + tuple(data)], []


_SHAPE = (Param("shape", "shape", doc="the array shape the indices address"),)
register(OpDef(
    name="_ravel_multi_index", aliases=("ravel_multi_index",), params=_SHAPE, shape=_ravel_shape,
    kind=Kind.INJECTIVE, extra={"no_grad": True},
    doc="Flat (row-major) positions of the index columns of data (shape (len(shape), ...)) in an "
        "array of ``shape``; as numbers of data's dtype.",
))
register(OpDef(
    name="_unravel_index", aliases=("unravel_index",), params=_SHAPE, shape=_unravel_shape,
    kind=Kind.INJECTIVE, extra={"no_grad": True},
    doc="The index rows (shape (len(shape), ...)) of the flat positions in data for an array of "
        "``shape``; as numbers of data's dtype.",
))


def _fill_shape(p: dict, ins: list, aux: list):
    lhs, mhs, rhs = ins
    if lhs is None:
        return list(ins), [None], []
    need_rank(lhs, "lhs", (2,))
    return [lhs, (lhs[0],), (lhs[0],)], [lhs], []


def _fill_grad(b, node, ograds):
    lhs, mhs, rhs = node.inputs
    zero = b.add1("zeros_like", mhs)
    return [b.add1("fill_element_0index", ograds[0], zero, rhs), b.add1("pick", ograds[0], rhs, axis=1), None]


register(OpDef(
    name="fill_element_0index", arguments=("lhs", "mhs", "rhs"), shape=_fill_shape,
    dtype=lambda p, ins, aux: ([ins[0], ins[0], ins[2] if ins[2] is not None else ins[0]], [ins[0]], []),
    kind=Kind.INJECTIVE, grad=_fill_grad,
    doc="lhs (n, m) with ``out[i, rhs[i]] = mhs[i]`` (MXNet's legacy op; indices clipped); rhs gets "
        "no gradient.",
))


# ---------------------------------------------------------------------------------------------
# im2col / col2im (2-D)

def window_geometry(p: dict) -> tuple[tuple, tuple, tuple, tuple]:
    """(kernel, stride, dilate, pad) of a 2-D im2col/col2im, MXNet's defaults filled in."""
    k = tuple(p["kernel"])
    if len(k) != 2:
        raise RuleError(f"kernel {k} must be 2-D (kh, kw)")
    return (k, *window_params(p, 2))


def cols_size(p: dict, spatial: tuple) -> tuple[int, int]:
    """The output (height, width) positions an im2col window visits over ``spatial``."""
    k, s, d, pad = window_geometry(p)
    out = tuple((spatial[i] + 2 * pad[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))
    if min(out) < 1:
        raise RuleError(f"the window {k} (dilate {d}, pad {pad}) does not fit {spatial}")
    return out


def _im2col_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    need_rank(data, "data", (4,))
    oh, ow = cols_size(p, tuple(data[2:]))
    k = tuple(p["kernel"])
    return [data], [(data[0], data[1] * k[0] * k[1], oh * ow)], []


def _col2im_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    size = tuple(p["output_size"])
    if len(size) != 2:
        raise RuleError(f"output_size {size} must be (height, width)")
    if data is None:
        return [None], [None], []
    need_rank(data, "data", (3,))
    k = tuple(p["kernel"])
    oh, ow = cols_size(p, size)
    if data[1] % (k[0] * k[1]) or data[2] != oh * ow:
        raise RuleError(f"data {shape_str(data)} must be (N, C * {k[0] * k[1]}, {oh * ow}) for output_size "
                        f"{size} and kernel {k}")
    return [data], [(data[0], data[1] // (k[0] * k[1]), *size)], []


_WINDOW = (Param("kernel", "shape", doc="window (kh, kw)"), Param("stride", "shape", (), doc="default 1"),
           Param("dilate", "shape", (), doc="default 1"), Param("pad", "shape", (), doc="default 0"))


def _im2col_grad(b, node, ograds):
    size = tuple(b.g.values[node.inputs[0]].shape[2:])
    return [b.add1("col2im", ograds[0], output_size=size, **node.params)]


register(OpDef(
    name="im2col", params=_WINDOW, shape=_im2col_shape, kind=Kind.INJECTIVE, grad=_im2col_grad,
    doc="The sliding windows of (N, C, H, W) data as columns: (N, C * kh * kw, L), row "
        "``c * kh * kw + i * kw + j`` holding offset (i, j) of channel c, L the output positions "
        "row-major; zeros where a window reaches into the padding.",
))
register(OpDef(
    name="col2im", params=(Param("output_size", "shape", doc="(height, width) of the image"),) + _WINDOW,
    shape=_col2im_shape, kind=Kind.INJECTIVE,
    grad=lambda b, node, ograds: [b.add1("im2col", ograds[0], **{k: v for k, v in node.params.items()
                                                                 if k != "output_size"})],
    doc="The adjoint of im2col: each image pixel sums the column entries of every window position "
        "that covers it.",
))


# ---------------------------------------------------------------------------------------------
# histogram: counts per bin (an index map looping over the data) and the bin edges

def _hist_counts_shape(p: dict, ins: list, aux: list):
    data, edges = ins
    if edges is None:
        return list(ins), [None], []
    need_rank(edges, "bins", (1,))
    if edges[0] < 2:
        raise RuleError(f"bins {shape_str(edges)} needs at least two edges")
    return list(ins), [(edges[0] - 1,)], []


register(OpDef(
    name="_histogram_counts", arguments=("data", "bins"), shape=_hist_counts_shape,
    dtype=lambda p, ins, aux: ([ins[0], ins[1] if ins[1] is not None else ins[0]], [np.dtype(np.int64)], []),
    kind=Kind.INJECTIVE, extra={"no_grad": True, "rewrite_of": "_histogram"},
    doc="Internal: how many elements of data fall in each bin [edge_b, edge_b+1) (the last bin "
        "includes its right edge; elements outside every bin are not counted).",
))


def _histogram_args(p: dict) -> list[str]:
    return ["data"] if p["bin_cnt"] is not None else ["data", "bins"]


def _histogram_shape(p: dict, ins: list, aux: list):
    if p["bin_cnt"] is not None:
        return [ins[0]], [(p["bin_cnt"],), (p["bin_cnt"] + 1,)], []
    bins = ins[1]
    if bins is None:
        return list(ins), [None, None], []
    need_rank(bins, "bins", (1,))
    return list(ins), [(bins[0] - 1,), bins], []


def histogram_range(value) -> tuple[float, float]:
    """``range`` as (low, high) from a pair or MXNet's string form ``'(0, 1)'``.

    >>> histogram_range('(0, 1.5)'), histogram_range((2, 3))
    ((0.0, 1.5), (2.0, 3.0))
    """
    if isinstance(value, str):
        value = [v for v in value.strip().strip("()[]").split(",") if v.strip()]
    pair = tuple(float(v) for v in value)
    if len(pair) != 2 or not pair[0] < pair[1]:
        raise ValueError(f"range {value!r} must be (low, high) with low < high")
    return pair


def _histogram_check(p: dict) -> None:
    if p["bin_cnt"] is not None:
        if p["bin_cnt"] < 1:
            raise ParamError(f"_histogram: bin_cnt={p['bin_cnt']} must be >= 1")
        try:
            histogram_range(p["range"] if p["range"] is not None else ())
        except ValueError as exc:
            raise ParamError(f"_histogram: parameter 'range': {exc} (needed with bin_cnt)") from None


def _histogram_expand(b, ins: list[int], p: dict) -> list[int]:
    dtype = b.g.values[ins[0]].dtype.name
    if p["bin_cnt"] is not None:
        lo, hi = histogram_range(p["range"])
        edges = b.add1("_linspace", start=lo, stop=hi, num=p["bin_cnt"] + 1, dtype=dtype)
    else:
        edges = b.add1("_copy", ins[1])
    return [b.add1("_histogram_counts", ins[0], edges), edges]


register(OpDef(
    name="_histogram", outputs=("hist", "bin_edges"), arguments=_histogram_args,
    params=(Param("bin_cnt", "int", None, nullable=True, doc="number of equal bins over range"),
            Param("range", "str", None, nullable=True, doc="(low, high) of the equal bins")),
    check=_histogram_check, shape=_histogram_shape,
    dtype=lambda p, ins, aux: (list(ins), [np.dtype(np.int64), ins[-1]], []),
    expand=_histogram_expand, extra={"no_grad": True, "family": "indexing"},
    doc="Counts (int64) of data's elements in each bin, and the bin edges: ``bin_cnt`` equal bins over "
        "``range``, or the bins given as an array of edges (numpy's histogram).",
))
