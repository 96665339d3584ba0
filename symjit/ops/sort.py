"""Sorting operators of MXNet 1.9.1: ``sort``, ``argsort``, ``topk`` (and ``_backward_sort``, the
value gradient of sort and topk). Their lowering (:mod:`symjit.lower.sort`) is target-neutral: each
row along ``axis`` is sorted by one thread with a stable bottom-up merge sort of its indices in
planned int64 scratch (:func:`argsort_row`, a plain function wrapped per target), O(n log n) per
row, then the outputs are written from the sorted indices.

Conventions (MXNet's): ``axis=None`` sorts the flattened array; ties keep their input order
(stable), ascending or descending alike; indices are returned as numbers of ``dtype`` (float32 by
default); ``topk``'s ``k < 1`` means every element; ``ret_typ`` is ``'indices'`` (default),
``'value'``, ``'both'`` (values, then indices) or ``'mask'`` (1 at the top k, same shape as data).
sort and topk's values pass the head gradient back to the positions they came from; argsort,
indices and masks have none.

>>> import symjit as mx
>>> x = mx.nd.array([[3, 1, 2], [0, 5, 5]])
>>> mx.nd.sort(x).asnumpy().tolist(), mx.nd.argsort(x, is_ascend=False).asnumpy().tolist()
([[1.0, 2.0, 3.0], [0.0, 5.0, 5.0]], [[0.0, 2.0, 1.0], [1.0, 2.0, 0.0]])
>>> mx.nd.topk(x, k=2, ret_typ='value').asnumpy().tolist()
[[3.0, 2.0], [5.0, 5.0]]
"""
from __future__ import annotations

import numpy as np

from .registry import Kind, OpDef, Param, register
from .rules import norm_axis, prod

__all__ = ["argsort_row", "topk_row", "TOPK_INSERT_MAX", "sort_geometry", "topk_k"]

TOPK_INSERT_MAX = 32
"""The most entries :func:`topk_row` keeps by insertion (and only from rows at least 8 times as long):
its worst case (a row in the opposite order) moves every kept entry for every element, ``n * k``
steps, about the ``n log n`` of the whole merge sort at this size, and a random row inserts a few
dozen times at most."""


def argsort_row(x, a, b, n, ind, tmp, ascend):
    """Write into ``ind[a, :n, b]`` the stable ascending (or descending) order of ``x[a, :n, b]``:
    a bottom-up merge sort of indices through ``tmp`` (both int64 arrays shaped like ``x``)."""
    for q in range(n):
        ind[a, q, b] = q
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            for t in range(lo, hi):
                left = i < mid
                if left and j < hi:
                    xi = x[a, ind[a, i, b], b]
                    xj = x[a, ind[a, j, b], b]
                    left = xi <= xj if ascend else xi >= xj
                if left:
                    tmp[a, t, b] = ind[a, i, b]
                    i += 1
                else:
                    tmp[a, t, b] = ind[a, j, b]
                    j += 1
            lo = hi
        for q in range(n):
            ind[a, q, b] = tmp[a, q, b]
        width *= 2


def topk_row(x, a, b, n, keep, ind, ascend):
    """Write into ``ind[a, :keep, b]`` the first ``keep`` indices of :func:`argsort_row`'s order of
    ``x[a, :n, b]`` (by value, ties by position), keeping the best ``keep`` seen so far in order as
    the row is read: an element enters only if it comes strictly before the last kept one, after
    every kept entry not greater (ascending; not smaller descending), which is where the stable
    sort puts it. Returns False, leaving ``ind`` to the whole sort, at a NaN (whose comparisons
    order nothing, so only the merge sort's own sequence of them gives its result)."""
    m = 0
    for q in range(n):
        v = x[a, q, b]
        if v != v:
            return False
        if m == keep:
            w = x[a, ind[a, m - 1, b], b]
            if not (v < w if ascend else v > w):
                continue
            m -= 1
        p = m
        while p > 0:
            u = x[a, ind[a, p - 1, b], b]
            if not (u > v if ascend else u < v):
                break
            ind[a, p, b] = ind[a, p - 1, b]
            p -= 1
        ind[a, p, b] = q
        m += 1
    return True


def sort_geometry(p: dict, shape: tuple) -> tuple[int, int, int]:
    """(rows before, row length, rows after) of data ``shape`` sorted along ``p['axis']``."""
    if p["axis"] is None:
        return 1, prod(shape), 1
    ax = norm_axis(p["axis"], len(shape))
    return prod(shape[:ax]), shape[ax], prod(shape[ax + 1:])


def topk_k(p: dict, n: int) -> int:
    """How many elements topk keeps of a row of ``n``."""
    return n if p["k"] < 1 else min(p["k"], n)


def _out_shape(p: dict, data: tuple, length: int) -> tuple:
    if p["axis"] is None:
        return (length,)
    ax = norm_axis(p["axis"], len(data))
    return data[:ax] + (length,) + data[ax + 1:]


_AXIS = Param("axis", "int", -1, nullable=True, doc="the axis to sort along (None: the flattened array)")


def _sort_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    return [data], [_out_shape(p, data, sort_geometry(p, data)[1])], []


def _values_grad(b, node, ograds):
    dx = b.add("_backward_sort", [ograds[0], node.inputs[0]], params=dict(node.params), raw=True)[0]
    return [dx]


register(OpDef(
    name="sort", params=(_AXIS, Param("is_ascend", "bool", True, doc="ascending order")),
    shape=_sort_shape, kind=Kind.OPAQUE, grad=_values_grad,
    doc="The values sorted along ``axis`` (stable); the gradient goes back to where each value came from.",
))

_INDEX_DTYPE = Param("dtype", "dtype", "float32", doc="dtype of the returned indices")
register(OpDef(
    name="argsort", params=(_AXIS, Param("is_ascend", "bool", True, doc="ascending order"), _INDEX_DTYPE),
    shape=_sort_shape, dtype=lambda p, ins, aux: (list(ins), [np.dtype(p["dtype"])], []),
    kind=Kind.OPAQUE, extra={"no_grad": True},
    doc="The indices that sort ``axis`` (stable), as numbers of ``dtype``.",
))


def _topk_outputs(p: dict) -> list[str]:
    return ["output", "indices"] if p["ret_typ"] == "both" else ["output"]


def _topk_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None] * len(_topk_outputs(p)), []
    if p["ret_typ"] == "mask":
        return [data], [data], []
    out = _out_shape(p, data, topk_k(p, sort_geometry(p, data)[1]))
    return [data], [out] * len(_topk_outputs(p)), []


def _topk_dtype(p: dict, ins: list, aux: list):
    data = ins[0]
    idx = np.dtype(p["dtype"])
    outs = {"value": [data], "indices": [idx], "mask": [data], "both": [data, idx]}[p["ret_typ"]]
    return [data], outs, []


def _topk_grad(b, node, ograds):
    if node.params["ret_typ"] not in ("value", "both") or ograds[0] is None:
        return [None]
    return _values_grad(b, node, ograds)


register(OpDef(
    name="topk", outputs=_topk_outputs,
    params=(_AXIS, Param("k", "int", 1, doc="how many (< 1: all)"),
            Param("ret_typ", "str", "indices", choices=("value", "indices", "mask", "both"),
                  doc="what to return"),
            Param("is_ascend", "bool", False, doc="the k smallest instead of the largest"), _INDEX_DTYPE),
    shape=_topk_shape, dtype=_topk_dtype, kind=Kind.OPAQUE, grad=_topk_grad,
    doc="The k largest (or smallest) entries along ``axis`` in order: their values, indices (as "
        "``dtype``), both, or a mask of data's shape; values pass the gradient back to their positions.",
))


def _bw_sort_shape(p: dict, ins: list, aux: list):
    return list(ins), [ins[1]], []


register(OpDef(
    name="_backward_sort", arguments=("ograd", "data"),
    params=(_AXIS, Param("is_ascend", "bool", True), Param("k", "int", 0), Param("ret_typ", "str", "value"),
            _INDEX_DTYPE),
    shape=_bw_sort_shape, dtype=lambda p, ins, aux: (list(ins), [ins[1]], []), kind=Kind.OPAQUE,
    doc="The values gradient of sort/topk: the data's order is recomputed and each head gradient "
        "entry goes to the position its value came from (0 elsewhere).",
    extra={"backward_of": "sort"},
))
