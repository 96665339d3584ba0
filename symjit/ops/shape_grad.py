"""Gradient rules and index facts of the shape-manipulation ops (records in :mod:`.shape`).

Gradients: reshape-like ops reshape the head gradient back; transpose/SwapAxis/reverse apply
their inverse; tile and repeat sum the copies; Concat/stack/SliceChannel/slice use each other
(slices of the head gradient, or the heads joined); slice, take and pick scatter into zeros through
the internal ``_backward_slice``/``_backward_take``/``_backward_pick``. The targets' lowerings are
in :mod:`symjit.lower` (``cpu/shape.py``).
"""
from __future__ import annotations

import ast

import numpy as np

from .rules import norm_axis, norm_insert_axis

__all__ = ["GRAD", "slice_bounds", "transpose_perm", "swap_perm", "clip_index"]


# --- gradients ------------------------------------------------------------------------------------


def _shape(b, vid: int) -> tuple[int, ...]:
    return b.g.values[vid].shape


def _reshape_to(b, vid: int, shape: tuple[int, ...]) -> int:
    return vid if _shape(b, vid) == tuple(shape) else b.add1("Reshape", vid, shape=tuple(shape))


def _reshape_grad(b, node, ograds):
    """Reshape-like ops: the head gradient reshaped to the input shape."""
    return [_reshape_to(b, ograds[0], _shape(b, node.inputs[0]))]


def _transpose_grad(b, node, ograds):
    perm = transpose_perm(node.params["axes"], len(_shape(b, node.inputs[0])))
    inv = [0] * len(perm)
    for d, a in enumerate(perm):
        inv[a] = d
    return [b.add1("transpose", ograds[0], axes=tuple(inv))]


def _swap_grad(b, node, ograds):
    return [b.add1("SwapAxis", ograds[0], dim1=node.params["dim1"], dim2=node.params["dim2"])]


def _reverse_grad(b, node, ograds):
    return [b.add1("reverse", ograds[0], axis=node.params["axis"])]


def _tile_grad(b, node, ograds):
    """View the head gradient as (r0, d0, r1, d1, ...) and sum the repetition axes."""
    xs = _shape(b, node.inputs[0])
    n = len(_shape(b, ograds[0]))
    reps = (1,) * (n - len(node.params["reps"])) + tuple(node.params["reps"])
    base = (1,) * (n - len(xs)) + tuple(xs)
    split, axes = [], []
    for d, r in zip(base, reps):
        if r > 1:
            axes.append(len(split))
            split.append(r)
        split.append(d)
    if not axes:
        return [_reshape_to(b, ograds[0], xs)]
    g = b.add1("sum", _reshape_to(b, ograds[0], tuple(split)), axis=tuple(axes))
    return [_reshape_to(b, g, xs)]


def _repeat_grad(b, node, ograds):
    """Sum each element's ``repeats`` copies (adjacent along the axis)."""
    xs, r = _shape(b, node.inputs[0]), node.params["repeats"]
    if node.params["axis"] is None:
        split, ax = (int(np.prod(xs)), r), 1
    else:
        ax = norm_axis(node.params["axis"], len(xs))
        split, ax = (*xs[:ax], xs[ax], r, *xs[ax + 1:]), ax + 1
    g = b.add1("sum", _reshape_to(b, ograds[0], split), axis=(ax,))
    return [_reshape_to(b, g, xs)]


def _concat_grad(b, node, ograds):
    """One slice of the head gradient per input (one SliceChannel when the pieces are equal)."""
    shapes = [_shape(b, i) for i in node.inputs]
    ax = norm_axis(node.params["dim"], len(shapes[0]), "dim")
    sizes = [s[ax] for s in shapes]
    if len(set(sizes)) == 1:
        return b.add("SliceChannel", [ograds[0]], num_outputs=len(sizes), axis=ax)
    grads, off = [], 0
    for n in sizes:
        grads.append(b.add1("slice_axis", ograds[0], axis=ax, begin=off, end=off + n))
        off += n
    return grads


def _stack_grad(b, node, ograds):
    ax = norm_insert_axis(node.params["axis"], len(_shape(b, node.inputs[0])))
    return b.add("SliceChannel", [ograds[0]], num_outputs=len(node.inputs), axis=ax, squeeze_axis=True)


def _split_grad(b, node, ograds):
    """The head gradients joined again (zeros for an output that got none)."""
    heads = [g if g is not None else b.add1("zeros_like", o) for g, o in zip(ograds, node.outputs)]
    xs, p = _shape(b, node.inputs[0]), node.params
    ax = norm_axis(p["axis"], len(xs))
    if p["squeeze_axis"]:
        g = b.add1("stack", *heads, axis=ax, num_args=len(heads))
    else:
        g = b.add1("Concat", *heads, dim=ax, num_args=len(heads))
    return [_reshape_to(b, g, xs)]


def _fmt(v: tuple) -> str:
    return "(" + ",".join(str(x) for x in v) + ("," if len(v) == 1 else "") + ")"


def _slice_grad(b, node, ograds):
    p = node.params
    return [b.add1("_backward_slice", ograds[0], shape=_shape(b, node.inputs[0]),
                   begin=p["begin"], end=p["end"], step=p["step"])]


def _slice_axis_grad(b, node, ograds):
    xs, p = _shape(b, node.inputs[0]), node.params
    ax = norm_axis(p["axis"], len(xs))
    lead = (None,) * ax
    return [b.add1("_backward_slice", ograds[0], shape=xs, begin=_fmt((*lead, p["begin"])),
                   end=_fmt((*lead, p["end"])))]


def _take_grad(b, node, ograds):
    p = node.params
    return [b.add1("_backward_take", ograds[0], node.inputs[1], shape=_shape(b, node.inputs[0]),
                   axis=p["axis"], mode=p["mode"]), None]


def _pick_grad(b, node, ograds):
    p = node.params
    return [b.add1("_backward_pick", ograds[0], node.inputs[1], shape=_shape(b, node.inputs[0]),
                   axis=p["axis"], keepdims=p["keepdims"], mode=p["mode"]), None]


GRAD = {
    "reshape": _reshape_grad, "transpose": _transpose_grad, "SwapAxis": _swap_grad,
    "reverse": _reverse_grad, "tile": _tile_grad, "repeat": _repeat_grad, "Concat": _concat_grad,
    "stack": _stack_grad, "SliceChannel": _split_grad, "slice": _slice_grad,
    "slice_axis": _slice_axis_grad, "take": _take_grad, "pick": _pick_grad,
}


def clip_index(v, n):
    """The position an index value ``v`` reads from ``n`` (mode 'clip'): ``clip(trunc(v), 0, n-1)``,
    NaN reads 0. A plain scalar function: lowerings wrap it for each target.

    >>> clip_index(-0.5, 4), clip_index(2.9, 4), clip_index(7.0, 4), clip_index(float('nan'), 4)
    (0, 2, 3, 0)
    """
    if not (v >= 0):
        return 0
    if v >= n:
        return n - 1
    return int(v)


def transpose_perm(axes: tuple, ndim: int) -> tuple[int, ...]:
    """The permutation of ``transpose(axes=axes)`` on ``ndim`` axes (``()`` reverses them).

    >>> transpose_perm((), 3), transpose_perm((0, -1, 1), 3)
    ((2, 1, 0), (0, 2, 1))
    """
    if not axes:
        return tuple(range(ndim - 1, -1, -1))
    return tuple(norm_axis(a, ndim, "axes") for a in axes)


def swap_perm(p: dict, ndim: int) -> tuple[int, ...]:
    a, b = norm_axis(p["dim1"], ndim, "dim1"), norm_axis(p["dim2"], ndim, "dim2")
    perm = list(range(ndim))
    perm[a], perm[b] = b, a
    return tuple(perm)


def _opt_tuple(text: str) -> tuple:
    v = ast.literal_eval(text.strip()) if text.strip() else ()   # literals only
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


def slice_bounds(p: dict) -> list[tuple[int | None, int]]:
    """``(begin, step)`` per sliced axis of a ``slice`` node's (checked) params.

    >>> slice_bounds({'begin': '(1,None)', 'end': '(3,None)', 'step': '(1,-1)'})
    [(1, 1), (None, -1)]
    """
    b, s = _opt_tuple(p["begin"]), _opt_tuple(p["step"])
    return [(b[d], 1 if not s or s[d] is None else s[d]) for d in range(len(b))]
