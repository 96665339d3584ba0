"""Reductions: sum, mean, prod, max, min, nansum, nanprod, norm, argmax, argmin, softmax_cross_entropy.

MXNet 1.x conventions kept here: ``axis=None`` or ``axis=()`` reduces every axis; ``exclude=True``
reduces every axis *except* the listed ones; a result with no axis left has shape ``(1,)``
(MXNet 1.x has no 0-d arrays), unless ``keepdims`` keeps every reduced axis as size 1.
argmax/argmin return indices in the input's dtype (float32 in, float32 indices out), as MXNet does.
"""
from __future__ import annotations

import numpy as np

from ..base import ParamError, shape_str
from .registry import Kind, OpDef, Param, RuleError, Shape, register
from .rules import norm_axes, norm_axis

__all__ = ["reduce_shape", "REDUCE_OPS"]

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
    """The axes a reduction removes, sorted."""
    ndim = len(shape)
    if axis is None or axis == _NO_AXES:
        return tuple(range(ndim))
    listed = set(norm_axes(axis, ndim))
    return tuple(sorted(set(range(ndim)) - listed if exclude else listed))


_REDUCE_INIT = {"sum": "0", "mean": "0", "nansum": "0", "prod": "1", "nanprod": "1",
                "max": "-np.inf", "min": "np.inf"}
_REDUCE_STEP = {
    "sum": "{o} += {x}", "mean": "{o} += {x}", "prod": "{o} *= {x}",
    "nansum": "{o} += 0 if {x} != {x} else {x}", "nanprod": "{o} *= 1 if {x} != {x} else {x}",
    "max": "{o} = {x} if ({x} > {o} or {x} != {x}) else {o}",
    "min": "{o} = {x} if ({x} < {o} or {x} != {x}) else {o}",
}


def _reduce_lower(name: str):
    """A loop over the input accumulating into the keepdims-shaped view of the output."""
    def lower(k, node, ins, outs):
        x, out = ins[0], outs[0]
        shape = k.info[x].shape
        axes = reduced_axes(shape, node.params["axis"], node.params["exclude"])
        o = k.tmp("o")
        kept = ", ".join("1" if d in axes else f"{x}.shape[{d}]" for d in range(len(shape)))
        k.line(f"{o} = {out}.reshape(({kept},))")
        k.line(f"{out}.reshape(-1)[:] = {_REDUCE_INIT[name]}")
        idx = [f"i{d}" for d in range(len(shape))]
        for d, i in enumerate(idx):
            k.line(f"for {i} in range({x}.shape[{d}]):")
            k.indent += 1
        oi = ", ".join("0" if d in axes else i for d, i in enumerate(idx))
        xv = k.tmp("x")
        k.line(f"{xv} = {x}[{', '.join(idx)}]")
        k.line(_REDUCE_STEP[name].format(o=f"{o}[{oi}]", x=xv))
        k.indent -= len(idx)
        if name == "mean":
            count = " * ".join(f"{x}.shape[{d}]" for d in axes) or "1"
            k.line(f"{out}.reshape(-1)[:] /= {count}")
    return lower


def _sum_grad(b, node, ograds):
    """Broadcast the head gradient back over the reduced axes (divided by the count for mean)."""
    x = node.inputs[0]
    shape = b.g.values[x].shape
    axes = reduced_axes(shape, node.params["axis"], node.params["exclude"])
    kept = tuple(1 if d in axes else n for d, n in enumerate(shape))
    g = b.add1("Reshape", ograds[0], shape=kept)
    g = b.add1("broadcast_to", g, shape=shape)
    if node.op.name == "mean":
        count = 1
        for d in axes:
            count *= shape[d]
        g = b.add1("_div_scalar", g, scalar=float(count))
    return [g]


def _extreme_grad(b, node, ograds):
    """max/min: the gradient goes to every position equal to the result (MXNet's rule)."""
    x, y = node.inputs[0], node.outputs[0]
    shape = b.g.values[x].shape
    axes = reduced_axes(shape, node.params["axis"], node.params["exclude"])
    kept = tuple(1 if d in axes else n for d, n in enumerate(shape))
    yk = b.add1("Reshape", y, shape=kept)
    gk = b.add1("Reshape", ograds[0], shape=kept)
    mask = b.add1("broadcast_equal", x, yk)
    return [b.add1("broadcast_mul", mask, gk)]


_REDUCE_GRADS = {"sum": _sum_grad, "mean": _sum_grad, "max": _extreme_grad, "min": _extreme_grad}


def _make_reduce(name: str, what: str, aliases: tuple[str, ...]) -> OpDef:
    return register(OpDef(
        name=name,
        params=_REDUCE_PARAMS,
        shape=_reduce_rule,
        kind=Kind.REDUCTION,
        aliases=aliases,
        grad=_REDUCE_GRADS.get(name),
        lower={"cpu": _reduce_lower(name)},
        doc=f"The {what}. ``axis=None`` (or ``()``) reduces every axis; a result without axes "
            "has shape (1,) unless ``keepdims``; ``exclude=True`` reduces the axes *not* listed.",
    ))


REDUCE_OPS = {name: _make_reduce(name, what, al) for name, (what, al) in _REDUCE_DOCS.items()}


# ---------------------------------------------------------------------------------------------
# norm: L1 or L2 norm over all elements, one axis (vector norm) or two axes (Frobenius).

_NORM_DTYPES = ("float16", "float32", "float64", "int32", "int64", "int8")


def _norm_check(p: dict) -> None:
    axis = p["axis"]
    if axis is not None and len(axis) > 2:
        raise ParamError(f"norm: parameter 'axis'={axis} must name one or two axes")
    if axis is not None and len(axis) == 2 and p["ord"] != 2:
        raise ParamError(f"norm: ord={p['ord']} over two axes is not supported (only ord=2, Frobenius)")
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


norm = register(OpDef(
    name="norm",
    params=(
        Param("ord", "int", 2, check=lambda v: v in (1, 2), check_msg="1 or 2", doc="order of the norm"),
        Param("axis", "shape", None, nullable=True, doc="one axis (vector norm) or two (matrix norm)"),
        Param("out_dtype", "dtype", None, nullable=True, doc="dtype of the result (default: input's)"),
        Param("keepdims", "bool", False, doc="keep reduced axes as size-1 dimensions"),
    ),
    check=_norm_check,
    shape=_norm_shape,
    dtype=_norm_dtype,
    kind=Kind.REDUCTION,
    doc="The L1 (``ord=1``) or L2 (``ord=2``) norm over all elements (result shape (1,)) or over "
        "the given axes.",
))


# ---------------------------------------------------------------------------------------------
# argmax / argmin: indices along one axis (or of the flattened array), in the input's dtype.


def _arg_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    axis = p["axis"]
    if axis is None:
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
    doc="Indices of the maximum along ``axis`` (first occurrence), as numbers of the input's dtype.",
))

argmin = register(OpDef(
    name="argmin",
    params=_ARG_PARAMS,
    shape=_arg_shape,
    kind=Kind.REDUCTION,
    doc="Indices of the minimum along ``axis`` (first occurrence), as numbers of the input's dtype.",
))


# ---------------------------------------------------------------------------------------------
# softmax_cross_entropy: sum over the batch of -log(softmax(data)[i, label[i]]); shape (1,).


def _sce_shape(p: dict, ins: list, aux: list):
    data, label = ins
    if data is None:
        return [None, label], [(1,)], []
    if len(data) != 2:
        raise RuleError(f"argument 'data' must have 2 dimensions (batch, classes), got {shape_str(data)}")
    if label is not None and label != (data[0],):
        raise RuleError(f"argument 'label' must have shape ({data[0]},) for data {shape_str(data)}, "
                        f"got {shape_str(label)}")
    return [data, (data[0],)], [(1,)], []


def _sce_dtype(p: dict, ins: list, aux: list):
    data, label = ins
    return [data, label if label is not None else data], [data], []


softmax_cross_entropy = register(OpDef(
    name="softmax_cross_entropy",
    arguments=("data", "label"),
    shape=_sce_shape,
    dtype=_sce_dtype,
    kind=Kind.REDUCTION,
    doc="Softmax cross-entropy summed over the batch: ``-sum_i log(softmax(data[i])[label[i]])``; "
        "data (batch, classes), label (batch,), result shape (1,).",
))
