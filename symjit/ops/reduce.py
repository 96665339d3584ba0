"""Reductions: sum, mean, prod, max, min, nansum, nanprod, norm, argmax, argmin, softmax_cross_entropy.

MXNet 1.x conventions kept here: ``axis=None`` or ``axis=()`` reduces every axis; ``exclude=True``
reduces every axis *except* the listed ones; a result with no axis left has shape ``(1,)``
(MXNet 1.x has no 0-d arrays), unless ``keepdims`` keeps every reduced axis as size 1.
argmax/argmin return indices in the input's dtype (float32 in, float32 indices out), as MXNet does.

Execution: sum/mean/max/min over one contiguous block of axes run the ``(A, R, B)`` kernels of
:mod:`symjit.kernels.cpu.reduce`; other axis sets (and prod, nansum, nanprod, norm) one generated
loop over the input. Gradients: sum/mean/nansum broadcast the head gradient back (nansum: not to
NaN positions); max/min route it to every position equal to the result (ties each get it all);
prod/nanprod give the exact product of the other elements, also at zeros (MXNet's ``y / x`` gives
NaN there); norm gives ``g * sign(x)`` (ord 1) or ``g * x / norm`` (ord 2, 0 where the norm is 0).
"""
from __future__ import annotations

import numpy as np

from ..base import ParamError, shape_str
from .registry import Kind, OpDef, Param, RuleError, Shape, register
from .rules import norm_axes, norm_axis

__all__ = ["reduce_shape", "reduced_axes", "kept_shape", "contiguous_block", "REDUCE_OPS"]

_NO_AXES: tuple = ()


def reduce_shape(shape: Shape, axis: tuple[int, ...] | None, keepdims: bool, exclude: bool) -> Shape:
    """The shape left after reducing ``shape`` over ``axis`` with MXNet 1.x's conventions.

    >>> reduce_shape((2, 3, 4), (1,), False, False), reduce_shape((2, 3), None, False, False)
    ((2, 4), (1,))
    >>> reduce_shape((2, 3, 4), (1,), True, True)
    (1, 3, 1)
    """
    ndim = len(shape)
    if axis is None or axis == _NO_AXES:
        reduced = set(range(ndim))
    else:
        listed = set(norm_axes(axis, ndim))
        reduced = set(range(ndim)) - listed if exclude else listed
    if keepdims:
        return tuple(1 if i in reduced else d for i, d in enumerate(shape))
    out = tuple(d for i, d in enumerate(shape) if i not in reduced)
    return out or (1,)


def _reduce_rule(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    return [data], [reduce_shape(data, p["axis"], p["keepdims"], p["exclude"])], []


def _extreme_rule(p: dict, ins: list, aux: list):
    """max/min: a reduced axis of size 0 is an error (no identity to start from), as in MXNet."""
    data = ins[0]
    empty = [] if data is None else [a for a in reduced_axes(data, p["axis"], p["exclude"]) if data[a] == 0]
    if empty:
        raise RuleError(f"argument 'data' of shape {shape_str(data)} has size 0 on reduced axis {empty[0]}: "
                        "max/min of no elements is undefined")
    return _reduce_rule(p, ins, aux)


_REDUCE_PARAMS = (
    Param("axis", "shape", None, nullable=True,
          doc="axes to reduce; None or () reduces all (negative values count from the end)"),
    Param("keepdims", "bool", False, doc="keep reduced axes as size-1 dimensions"),
    Param("exclude", "bool", False, doc="reduce over every axis except those in `axis`"),
)

_REDUCE_DOCS = {
    "sum": ("sum over the given axes", ("sum_axis",)),
    "mean": ("mean over the given axes", ()),
    "prod": ("product over the given axes", ()),
    "max": ("maximum over the given axes", ("max_axis",)),
    "min": ("minimum over the given axes", ("min_axis",)),
    "nansum": ("sum over the given axes, treating NaN as zero", ()),
    "nanprod": ("product over the given axes, treating NaN as one", ()),
}


def reduced_axes(shape: Shape, axis, exclude: bool) -> tuple[int, ...]:
    """The axes a reduction removes, sorted.

    >>> reduced_axes((2, 3, 4), (-1,), False), reduced_axes((2, 3, 4), (1,), True)
    ((2,), (0, 2))
    """
    ndim = len(shape)
    if axis is None or axis == _NO_AXES:
        return tuple(range(ndim))
    listed = set(norm_axes(axis, ndim))
    return tuple(sorted(set(range(ndim)) - listed if exclude else listed))


def kept_shape(shape: Shape, axes: tuple[int, ...]) -> Shape:
    """``shape`` with the reduced ``axes`` set to 1 (the keepdims shape).

    >>> kept_shape((2, 3, 4), (0, 2))
    (1, 3, 1)
    """
    return tuple(1 if d in axes else n for d, n in enumerate(shape))


def contiguous_block(shape: Shape, axes: tuple[int, ...]) -> tuple[int, int] | None:
    """``(lo, hi)`` when the reduced ``axes`` are exactly ``shape[lo:hi]`` (ignoring axes of size 1,
    which may sit on either side), so that the input is an ``(A, R, B)`` view; else None.

    >>> contiguous_block((2, 3, 4), (1, 2)), contiguous_block((2, 3, 4), (0, 2))
    ((1, 3), None)
    >>> contiguous_block((2, 1, 4), (0, 2)), contiguous_block((5, 1), (1,))
    ((0, 3), (0, 0))
    """
    big = [d for d in axes if shape[d] != 1]
    if not big:
        return (0, 0)
    lo, hi = min(big), max(big) + 1
    if any(d not in axes and shape[d] != 1 for d in range(lo, hi)):
        return None
    return lo, hi


# reductions with a hand-written (A, R, B) kernel in symjit.kernels.cpu.reduce


# --- gradients ------------------------------------------------------------------------------------


def _as_kept(b, vid: int, kept: Shape) -> int:
    """``vid`` reshaped to the keepdims shape (no node when it already has it)."""
    return vid if b.g.values[vid].shape == kept else b.add1("Reshape", vid, shape=kept)


def _node_axes(b, node) -> tuple[Shape, tuple[int, ...], Shape]:
    """(input shape, reduced axes, keepdims shape) of a reduction node."""
    shape = b.g.values[node.inputs[0]].shape
    axes = reduced_axes(shape, node.params["axis"], node.params.get("exclude", False))
    return shape, axes, kept_shape(shape, axes)


def _sum_grad(b, node, ograds):
    """Broadcast the head gradient back over the reduced axes (divided by the count for mean)."""
    shape, axes, kept = _node_axes(b, node)
    g = b.add1("broadcast_to", _as_kept(b, ograds[0], kept), shape=shape)
    if node.op.name == "mean":
        count = 1
        for d in axes:
            count *= shape[d]
        g = b.add1("_div_scalar", g, scalar=float(count))
    return [g]


def _nansum_grad(b, node, ograds):
    """The head gradient broadcast back, zero where the input is NaN (``x == x`` is the mask)."""
    x = node.inputs[0]
    _, _, kept = _node_axes(b, node)
    gk = _as_kept(b, ograds[0], kept)   # first, so that the mask and the product fuse
    return [b.add1("broadcast_mul", b.add1("_equal", x, x), gk)]


def _extreme_grad(b, node, ograds):
    """max/min: the gradient goes to every position equal to the result (MXNet's rule)."""
    x, y = node.inputs[0], node.outputs[0]
    _, _, kept = _node_axes(b, node)
    yk, gk = _as_kept(b, y, kept), _as_kept(b, ograds[0], kept)   # first: mask and product fuse
    return [b.add1("broadcast_mul", b.add1("broadcast_equal", x, yk), gk)]


def _prod_grad(b, node, ograds):
    """The product of the other elements, exact at zeros (an internal ``_backward_(nan)prod``)."""
    name = "_backward_nanprod" if node.op.name == "nanprod" else "_backward_prod"
    return [b.add(name, [node.inputs[0], ograds[0]], params=node.params)[0]]


_REDUCE_GRADS = {"sum": _sum_grad, "mean": _sum_grad, "max": _extreme_grad, "min": _extreme_grad,
                 "nansum": _nansum_grad, "prod": _prod_grad, "nanprod": _prod_grad}


def _make_reduce(name: str, what: str, aliases: tuple[str, ...]) -> OpDef:
    return register(OpDef(
        name=name,
        params=_REDUCE_PARAMS,
        shape=_extreme_rule if name in ("max", "min") else _reduce_rule,
        kind=Kind.REDUCTION,
        aliases=aliases,
        grad=_REDUCE_GRADS.get(name),
        doc=f"The {what}. ``axis=None`` (or ``()``) reduces every axis; a result without axes "
            "has shape (1,) unless ``keepdims``; ``exclude=True`` reduces the axes *not* listed.",
    ))


REDUCE_OPS = {name: _make_reduce(name, what, al) for name, (what, al) in _REDUCE_DOCS.items()}


# _backward_prod / _backward_nanprod: d prod / d x_i = product of the other elements. Pass one counts
# the zeros and multiplies the non-zeros per output position; pass two gives each element
# (no zero: prod / x_i; one zero: the product of the rest at the zero, 0 elsewhere; more: 0).
# nanprod treats NaN as 1 and gives NaN positions no gradient.


def _prod_backward_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return list(ins), [None], []
    return [data, reduce_shape(data, p["axis"], p["keepdims"], p["exclude"])], [data], []


for _name in ("prod", "nanprod"):
    register(OpDef(
        name=f"_backward_{_name}",
        params=_REDUCE_PARAMS,
        arguments=("data", "ograd"),
        shape=_prod_backward_shape,
        kind=Kind.OPAQUE,
        extra={"backward_of": _name},
        doc=f"Gradient of {_name}: the head gradient times the product of the other elements.",
    ))
del _name


# ---------------------------------------------------------------------------------------------
# norm: L1 or L2 norm over all elements or over any axes (ord=2: the square root of the sum of
# squares, Frobenius over two axes; ord=1: the sum of absolute values, as MXNet computes it, not
# the induced matrix 1-norm).

_NORM_DTYPES = ("float16", "float32", "float64", "int32", "int64", "int8")


def _norm_check(p: dict) -> None:
    if p["out_dtype"] is not None and p["out_dtype"] not in _NORM_DTYPES:
        raise ParamError(f"norm: parameter 'out_dtype'={p['out_dtype']!r} is not one of {list(_NORM_DTYPES)}")


def _norm_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    return [data], [reduce_shape(data, p["axis"], p["keepdims"], False)], []


def _norm_dtype(p: dict, ins: list, aux: list):
    out = np.dtype(p["out_dtype"]) if p["out_dtype"] is not None else ins[0]
    return [ins[0]], [out], []


def _norm_grad(b, node, ograds):
    """One fused loop: ``g * sign(x)`` (ord 1) or ``g * x / y`` (ord 2; 0 where y == 0)."""
    _, _, kept = _node_axes(b, node)
    x, y = node.inputs[0], node.outputs[0]
    yk, gk = _as_kept(b, y, kept), _as_kept(b, ograds[0], kept)
    return [b.add1("_backward_norm", x, yk, gk, ord=node.params["ord"])]


norm = register(OpDef(
    name="norm",
    params=(
        Param("ord", "int", 2, check=lambda v: v in (1, 2), check_msg="1 or 2", doc="order of the norm"),
        Param("axis", "shape", None, nullable=True, doc="the axes reduced (any number; default all)"),
        Param("out_dtype", "dtype", None, nullable=True, doc="dtype of the result (default: input's)"),
        Param("keepdims", "bool", False, doc="keep reduced axes as size-1 dimensions"),
    ),
    check=_norm_check,
    shape=_norm_shape,
    dtype=_norm_dtype,
    kind=Kind.REDUCTION,
    grad=_norm_grad,
    doc="The L1 (``ord=1``) or L2 (``ord=2``) norm over all elements (result shape (1,)) or over "
        "the given axes.",
))


def norm_l1_grad(x, y, g):
    """d|x|: g * sign(x) (0 at x == 0)."""
    return g if x > 0.0 else (-g if x < 0.0 else 0.0 * g)


def norm_l2_grad(x, y, g):
    """d||x||: g * x / y, 0 where the norm is 0 (a subgradient; MXNet gives NaN there)."""
    return g * x / y if y != 0.0 else 0.0 * g


def _norm_backward_body(p: dict):
    return (norm_l1_grad if p["ord"] == 1 else norm_l2_grad), ()


def _norm_backward_shape(p: dict, ins: list, aux: list):
    return list(ins), [ins[0]], []


register(OpDef(
    name="_backward_norm",
    params=(Param("ord", "int", 2, check=lambda v: v in (1, 2), check_msg="1 or 2"),),
    arguments=("data", "out", "ograd"),
    shape=_norm_backward_shape,
    dtype=lambda p, ins, aux: (list(ins), [ins[0]], []),
    kind=Kind.BROADCAST,
    body=_norm_backward_body,
    extra={"backward_of": "norm"},
    doc="norm's gradient from data, the keepdims-shaped norm and head gradient (broadcast).",
))


# ---------------------------------------------------------------------------------------------
# argmax / argmin: indices along one axis (or of the flattened array), in the input's dtype.


def _arg_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    axis = p["axis"]
    if axis is None:
        if 0 in data:
            raise RuleError(f"cannot take the index of an extremum of empty data {shape_str(data)}")
        out = (1,) * len(data) if p["keepdims"] else (1,)
        return [data], [out], []
    ax = norm_axis(axis, len(data))
    if data[ax] == 0:
        raise RuleError(f"cannot take the index of an extremum over empty axis {axis} of {shape_str(data)}")
    return [data], [reduce_shape(data, (ax,), p["keepdims"], False)], []


_ARG_PARAMS = (
    Param("axis", "int", None, nullable=True, doc="axis to search; None searches the flattened array"),
    Param("keepdims", "bool", False, doc="keep the searched axis as a size-1 dimension"),
)

argmax = register(OpDef(
    name="argmax",
    params=_ARG_PARAMS,
    shape=_arg_shape,
    kind=Kind.REDUCTION,
    extra={"no_grad": True},
    doc="Indices of the maximum along ``axis`` (first occurrence), as numbers of the input's dtype.",
))

argmin = register(OpDef(
    name="argmin",
    params=_ARG_PARAMS,
    shape=_arg_shape,
    kind=Kind.REDUCTION,
    extra={"no_grad": True},
    doc="Indices of the minimum along ``axis`` (first occurrence), as numbers of the input's dtype.",
))


# ---------------------------------------------------------------------------------------------
# softmax_cross_entropy: sum over the batch of -log(softmax(data)[i, label[i]]); shape (1,).
# A label is truncated to an integer class (as MXNet casts it); a label outside [0, classes)
# (or NaN) makes the loss NaN and its row's gradient NaN rather than reading out of bounds.


def _sce_shape(p: dict, ins: list, aux: list):
    data, label = ins
    if data is None:
        return [None, label], [(1,)], []
    if len(data) != 2:
        raise RuleError(f"argument 'data' must have 2 dimensions (batch, classes), got {shape_str(data)}")
    if data[1] == 0:
        raise RuleError(f"argument 'data' {shape_str(data)} has no classes")
    if label is not None and label != (data[0],):
        raise RuleError(f"argument 'label' must have shape ({data[0]},) for data {shape_str(data)}, "
                        f"got {shape_str(label)}")
    return [data, (data[0],)], [(1,)], []


def _sce_dtype(p: dict, ins: list, aux: list):
    data, label = ins
    return [data, label if label is not None else data], [data], []


def _sce_grad(b, node, ograds):
    data, label = node.inputs
    return [b.add1("_backward_softmax_cross_entropy", data, label, ograds[0]), None]


softmax_cross_entropy = register(OpDef(
    name="softmax_cross_entropy",
    arguments=("data", "label"),
    shape=_sce_shape,
    dtype=_sce_dtype,
    kind=Kind.REDUCTION,
    grad=_sce_grad,
    doc="Softmax cross-entropy summed over the batch: ``-sum_i log(softmax(data[i])[label[i]])``; "
        "data (batch, classes), label (batch,), result shape (1,). The label gets no gradient.",
))


def _sce_backward_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    return [data, None if data is None else (data[0],), (1,)], [data], []


register(OpDef(
    name="_backward_softmax_cross_entropy",
    arguments=("data", "label", "ograd"),
    shape=_sce_backward_shape,
    dtype=lambda p, ins, aux: (list(ins), [ins[0]], []),
    kind=Kind.OPAQUE,
    extra={"backward_of": "softmax_cross_entropy"},
    doc="softmax_cross_entropy's data gradient: (softmax(data) - one_hot(label)) * ograd.",
))
