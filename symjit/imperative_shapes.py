"""Imperative calls on fewer axes: the equivalent call an operator's kernels are shared by.

A compiled kernel is specialised to its arrays' ranks and, for broadcasts and reductions, to which
axes are stretched or reduced, so a stream of ``mx.nd`` calls on random shapes (what tests and
data-dependent code make) would compile a kernel form for nearly every call. Most of those calls
are the same computation on fewer axes: an elementwise op on any shape is the op on the flat
array; a broadcast only needs the runs of axes where the inputs agree merged into one axis, and
the axes of size 1 of the result dropped (and, for a call of three or more merged axes, size-1
axes put in front up to :data:`BROADCAST_RANK`, so those ranks share one kernel);
a reduction needs the runs of reduced and of kept axes
merged (axes of size 1 dropped). :func:`canonical` gives that call, and
:func:`symjit.imperative.invoke_now` runs it on views of the same memory, its outputs seen with
the original call's shapes: the same elements in the same order, so the same results, from a few
kernel forms per operator and dtype. An optimizer update that steps each element of the weight
on its own (``sgd_update``, ``adam_update``, ...) runs on the flat weight and states too, and
sort, argsort and topk run along the middle axis of a 3-D view; ``box_iou`` on (boxes, 4) views.

>>> c = canonical('broadcast_add', {}, [(2, 3, 1, 4), (3, 5, 4)])
>>> c.op, c.in_shapes, c.out_shapes
('broadcast_add', [(1, 2, 3, 1, 4), (1, 1, 3, 5, 4)], [(2, 3, 5, 4)])
>>> c = canonical('sum', {'axis': (1, 2)}, [(2, 3, 4, 5)])
>>> c.params, c.in_shapes, c.out_shapes
({'axis': (1,), 'keepdims': True}, [(2, 12, 5)], [(2, 5)])
"""
from __future__ import annotations

import collections
from typing import Any

from .base import MXNetError
from .ops.reduce import reduced_axes
from .ops.registry import Kind, get_op

__all__ = ["Canonical", "canonical", "canonical_cached"]

_REDUCE = frozenset({"sum", "mean", "prod", "max", "min", "nansum", "nanprod"})
_ARG = frozenset({"argmax", "argmin"})
_SORT = frozenset({"sort", "argsort", "topk"})
_BROADCAST_TO = frozenset({"broadcast_to", "broadcast_like", "broadcast_axis"})
BROADCAST_RANK = 5
"""The rank a two-input broadcast on three or more merged axes is seen with, size-1 axes first:
one kernel form per operator and dtypes for all of them (its loop, written for any extents, costs
~0.27 s to compile at this rank: :meth:`symjit.lower.cpu.CPUTarget.open_map_loop`). A call big
enough to run in parts (:data:`~symjit.threads.PARTS_MIN` elements) splits the same iterations
as on its merged axes: the parts run over the axes before the last two, whose product the
leading size-1 axes leave as it is. One or two merged axes (a row or a bias added to a matrix)
keep their rank: a call through views costs ~3 us more, and those kernels compile in ~0.2 s."""


class Canonical:
    """The call on fewer axes: operator ``op`` with ``params`` on the original inputs numbered
    ``picks``, seen with ``in_shapes``; ``out_shapes`` are the original call's output shapes."""

    __slots__ = ("op", "params", "picks", "in_shapes", "out_shapes")

    def __init__(self, op: str, params: dict, picks: list[int], in_shapes: list[tuple],
                 out_shapes: list[tuple]):
        self.op, self.params, self.picks = op, params, picks
        self.in_shapes, self.out_shapes = in_shapes, out_shapes


def _size(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _merge(out: tuple, flags: list[tuple]) -> tuple[list[int], list[tuple]]:
    """Axes of ``out`` of size 1 dropped and runs of axes with equal ``flags`` (per axis, a
    tuple) merged: the merged sizes and each merged axis's flags."""
    sizes: list[int] = []
    marks: list[tuple] = []
    for d, f in zip(out, flags):
        if d == 1:
            continue
        if marks and marks[-1] == f:
            sizes[-1] *= d
        else:
            sizes.append(d)
            marks.append(f)
    return sizes, marks


def _out_shapes(op: Any, params: dict, shapes: list[tuple]) -> list[tuple] | None:
    try:
        parsed = op.parse_params(dict(params))
        n = len(op.list_arguments(parsed))     # the arguments, then the aux states
        _, outs, _ = op.shape(parsed, [tuple(s) for s in shapes[:n]], [tuple(s) for s in shapes[n:]])
    except (MXNetError, TypeError, ValueError, IndexError, KeyError):
        return None     # the ordinary call reports what is wrong
    if any(o is None or 0 in o for o in outs):
        return None
    return [tuple(o) for o in outs]


def _broadcast_pair(op: str, shapes: list[tuple], out: tuple) -> Canonical:
    ndim = len(out)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    sizes, marks = _merge(out, [tuple(p[k] == out[k] for p in padded) for k in range(ndim)])
    if not sizes:
        return Canonical(op, {}, [0, 1], [(1,), (1,)], [out])
    ins = [tuple(n if m[i] else 1 for n, m in zip(sizes, marks)) for i in range(2)]
    if 3 <= len(sizes) < BROADCAST_RANK:
        ins = [(1,) * (BROADCAST_RANK - len(sizes)) + s for s in ins]
    return Canonical(op, {}, [0, 1], ins, [out])


def _broadcast_to(shape: tuple, out: tuple) -> Canonical:
    padded = (1,) * (len(out) - len(shape)) + tuple(shape)
    sizes, marks = _merge(out, [(padded[k] == out[k],) for k in range(len(out))])
    if not sizes:
        sizes, marks = [1], [(True,)]
    ins = tuple(n if m[0] else 1 for n, m in zip(sizes, marks))
    return Canonical("broadcast_to", {"shape": tuple(sizes)}, [0], [ins], [out])


def _reduce(op: str, params: dict, shape: tuple, out: tuple) -> Canonical | None:
    try:
        parsed = get_op(op).parse_params(dict(params))
        axes = set(reduced_axes(shape, parsed["axis"], bool(parsed["exclude"])))
    except (MXNetError, TypeError, ValueError):
        return None
    if not axes:
        return None
    sizes, marks = _merge(shape, [(k in axes,) for k in range(len(shape))])
    if not sizes:
        sizes, marks = [1], [(True,)]
    red = tuple(k for k, m in enumerate(marks) if m[0])
    if not red:      # every reduced axis has size 1: the values are the result
        sizes, marks, red = [*sizes, 1], [*marks, (True,)], (len(sizes),)
    return Canonical(op, {"axis": red, "keepdims": True}, [0], [tuple(sizes)], [out])


def _arg(op: str, params: dict, shape: tuple, out: tuple) -> Canonical | None:
    try:
        axis = get_op(op).parse_params(dict(params))["axis"]
        if axis is None:
            return Canonical(op, {"axis": 0, "keepdims": True}, [0], [(_size(shape),)], [out])
        k = int(axis)
    except (MXNetError, TypeError, ValueError):
        return None
    if not -len(shape) <= k < len(shape):
        return None
    k %= len(shape)
    before, after = _size(shape[:k]), _size(shape[k + 1:])
    sizes = [n for n in (before,) if n != 1] + [shape[k]] + [n for n in (after,) if n != 1]
    return Canonical(op, {"axis": int(before != 1), "keepdims": True}, [0], [tuple(sizes)], [out])


def _sorting(op: str, params: dict, shape: tuple, outs: list[tuple]) -> Canonical | None:
    """sort, argsort and topk along axis 1 of the (rows before, row, rows after) view (positions
    within a row are the same): one kernel form per operator, parameters and dtypes, whatever the
    rank and the axis."""
    from .ops.sort import sort_geometry
    try:
        parsed = get_op(op).parse_params(dict(params))
        geometry = sort_geometry(parsed, shape)
    except (MXNetError, TypeError, ValueError, IndexError):
        return None
    return Canonical(op, {**params, "axis": 1}, [0], [geometry], outs)


def _elementwise_update(op: Any) -> bool:
    """An optimizer update called with its scalars in a vector (``_rt_<op>``) whose step updates
    each element of the weight from the same element of the arrays shaped like it."""
    spec = op.extra.get("update")
    return spec is not None and bool(op.extra.get("runtime")) and not spec.group \
        and spec.style in ("inplace", "out", "mp")


def canonical(op_name: str, params: dict, shapes: list[tuple]) -> Canonical | None:
    """The equivalent call of ``op_name`` with ``params`` on arrays of ``shapes`` on fewer axes
    (see the module docstring), or None when there is none or it is the call itself. Calls the
    operator's rules reject, and zero-size arrays, are left as they are."""
    op = get_op(op_name)
    if not shapes or any(not s or 0 in s for s in shapes):
        return None
    name = op.name
    found: Canonical | None = None
    if op.kind == Kind.ELEMWISE and op.body is not None and not op.loss and op.variadic is None:
        outs = _out_shapes(op, params, shapes)
        first = tuple(shapes[0])
        if outs is None or any(tuple(s) != first for s in [*shapes, *outs]):
            return None
        n = _size(first)
        found = Canonical(op_name, dict(params), list(range(len(shapes))), [(n,)] * len(shapes),
                          outs)
    elif name.startswith("broadcast_") and name not in _BROADCAST_TO and op.kind == Kind.BROADCAST \
            and len(shapes) == 2 and not params:
        outs = _out_shapes(op, params, shapes)
        found = None if outs is None else _broadcast_pair(op_name, shapes, outs[0])
    elif name in _BROADCAST_TO and not (name == "broadcast_like" and (
            params.get("lhs_axes") is not None or params.get("rhs_axes") is not None)):
        outs = _out_shapes(op, params, shapes)
        found = None if outs is None else _broadcast_to(tuple(shapes[0]), outs[0])
    elif _elementwise_update(op):
        outs = _out_shapes(op, params, shapes)
        weight = tuple(shapes[0])
        if outs is None or any(o != weight for o in outs) or len(weight) == 1:
            return None
        flat = (_size(weight),)
        found = Canonical(op_name, dict(params), list(range(len(shapes))),
                          [flat if tuple(s) == weight else tuple(s) for s in shapes], outs)
    elif name in _REDUCE and len(shapes) == 1:
        outs = _out_shapes(op, params, shapes)
        found = None if outs is None else _reduce(op_name, params, tuple(shapes[0]), outs[0])
    elif name in _SORT and len(shapes) == 1:
        outs = _out_shapes(op, params, shapes)
        found = None if outs is None else _sorting(op_name, params, tuple(shapes[0]), outs)
    elif name == "_contrib_box_iou" and len(shapes) == 2:    # its kernel counts the boxes at run time
        outs = _out_shapes(op, params, shapes)
        found = None if outs is None else Canonical(
            op_name, dict(params), [0, 1], [(_size(tuple(s)[:-1]), 4) for s in shapes], outs)
    elif name in _ARG and len(shapes) == 1:
        outs = _out_shapes(op, params, shapes)
        found = None if outs is None else _arg(op_name, params, tuple(shapes[0]), outs[0])
    if found is None or (found.op == op_name and found.params == params
                         and found.in_shapes == [tuple(s) for s in shapes]):
        return None
    return found


_CACHE: collections.OrderedDict[tuple, Canonical | None] = collections.OrderedDict()
_CACHE_SIZE = 4096


def canonical_cached(op_name: str, params_key: tuple, params: dict, shapes: tuple) -> Canonical | None:
    """:func:`canonical`, remembered for the most recent distinct calls (``params_key``: a
    hashable form of ``params``)."""
    key = (op_name, params_key, shapes)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    found = _CACHE[key] = canonical(op_name, params, list(shapes))
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return found
