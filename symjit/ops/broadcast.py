"""Broadcasting operators: the ``broadcast_*`` binary ops, broadcast_to, broadcast_axis, broadcast_like.

The binary ops follow MXNet 1.x's rule, which is numpy's: the shapes are aligned at their last
axis, a missing leading axis counts as 1, and each pair of axes must be equal or contain a 1
(``(2, 3)`` with ``(3,)`` gives ``(2, 3)``). They share their scalar bodies with the same-shape
ops of :mod:`symjit.ops.elementwise`. Their shape rules infer nothing backward: an unknown input
stays unknown (a broadcast input's shape is not determined by the other one).

Gradients reduce the head gradient back to each input's shape (:func:`reduce_to`: a ``sum`` over
the leading axes the input lacks, a ``sum`` with ``keepdims`` over its size-1 axes that grew). The binary
ops share their gradient rules with the same-shape ops (:func:`~symjit.ops.elementwise.binary_grads`);
comparisons pass no gradient.
"""
from __future__ import annotations

from ..base import ParamError
from .elementwise import BINARY_FNS, _identity, binary_grads, fixed_body
from .registry import Kind, OpDef, Param, RuleError, Shape, register
from .rules import broadcast_shape, norm_axis, shape_str

__all__ = ["BROADCAST_BINARY", "OPS", "reduce_to", "broadcast_axes"]


def broadcast_axes(shape: Shape, out: Shape) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """How ``shape`` was broadcast to ``out`` (right-aligned): the leading axes it lacks, and
    its size-1 axes that grew (numbered as its own axes).

    >>> broadcast_axes((3, 1), (2, 3, 4)), broadcast_axes((2, 3), (2, 3))
    (((0,), (1,)), ((), ()))
    """
    lead = len(out) - len(shape)
    grown = tuple(d for d, n in enumerate(shape) if n == 1 and out[d + lead] != 1)
    return tuple(range(lead)), grown


def reduce_to(b, grad: int, shape: Shape) -> int:
    """Graph nodes summing the gradient value ``grad`` back to an input's ``shape`` (the shape it
    was broadcast from): a ``sum`` over the leading axes it lacks, then a ``sum`` with ``keepdims``
    over its grown size-1 axes; no node where nothing was broadcast (no Reshape needed)."""
    lead, grown = broadcast_axes(shape, b.g.values[grad].shape)
    if lead:
        grad = b.add1("sum", grad, axis=lead, keepdims=False)
    if grown:
        grad = b.add1("sum", grad, axis=grown, keepdims=True)
    return grad


def _in_shape(b, node, i: int) -> Shape:
    return b.g.values[node.inputs[i]].shape


def _binary_grad(b, node, ograds):
    """The same-shape op's gradients on the broadcast head gradient, reduced to each input."""
    same = _SAME[node.op.name]
    lhs, rhs = node.inputs
    grads = binary_grads(b, same, ograds[0], lhs, rhs, True)
    return [reduce_to(b, g, _in_shape(b, node, i)) for i, g in enumerate(grads)]


def _data_grad(b, node, ograds):
    """broadcast_to/broadcast_axis/broadcast_like: the head gradient summed back to the input
    (broadcast_like's rhs only lends its shape: no gradient)."""
    return [reduce_to(b, ograds[0], _in_shape(b, node, 0))] + [None] * (len(node.inputs) - 1)

# (name, same-shape op whose body it shares, aliases, formula)
BROADCAST_BINARY: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("broadcast_add", "elemwise_add", ("broadcast_plus",), "lhs + rhs"),
    ("broadcast_sub", "elemwise_sub", ("broadcast_minus",), "lhs - rhs"),
    ("broadcast_mul", "elemwise_mul", (), "lhs * rhs"),
    ("broadcast_div", "elemwise_div", (), "lhs / rhs"),
    ("broadcast_mod", "_mod", (), "lhs mod rhs (sign of rhs; 0 where rhs is 0)"),
    ("broadcast_power", "_power", (), "lhs ** rhs"),
    ("broadcast_maximum", "_maximum", (), "max(lhs, rhs)"),
    ("broadcast_minimum", "_minimum", (), "min(lhs, rhs)"),
    ("broadcast_hypot", "_hypot", (), "sqrt(lhs**2 + rhs**2)"),
    ("broadcast_equal", "_equal", (), "1 where lhs == rhs else 0"),
    ("broadcast_not_equal", "_not_equal", (), "1 where lhs != rhs else 0"),
    ("broadcast_greater", "_greater", (), "1 where lhs > rhs else 0"),
    ("broadcast_greater_equal", "_greater_equal", (), "1 where lhs >= rhs else 0"),
    ("broadcast_lesser", "_lesser", (), "1 where lhs < rhs else 0"),
    ("broadcast_lesser_equal", "_lesser_equal", (), "1 where lhs <= rhs else 0"),
)


_SAME = {name: same for name, same, _, _ in BROADCAST_BINARY}
_COMPARISONS = frozenset({"_equal", "_not_equal", "_greater", "_greater_equal", "_lesser", "_lesser_equal"})


def _binary_shape(p: dict, ins: list, aux: list):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return [lhs, rhs], [None], []
    return [lhs, rhs], [broadcast_shape(lhs, rhs)], []


for _name, _same, _aliases, _formula in BROADCAST_BINARY:
    register(OpDef(
        name=_name, arguments=("lhs", "rhs"), shape=_binary_shape, kind=Kind.BROADCAST,
        aliases=_aliases, body=fixed_body(BINARY_FNS[_same]),
        grad=None if _same in _COMPARISONS else _binary_grad,
        doc=(f"Elementwise {_formula} with broadcasting (numpy's rule: shapes aligned at the last "
             "axis, axes of size 1 stretched); both inputs have one dtype."),
        extra={"family": "broadcast", "ignores_unknown_params": True,
               **({"no_grad": True} if _same in _COMPARISONS else {})},
    ))
del _name, _same, _aliases, _formula

# ---------------------------------------------------------------------------------------------
# broadcast_to: data -> shape (0 keeps the input's dim).


def _to_shape(p: dict, ins: list, aux: list):
    data, target = ins[0], p["shape"]
    if data is None:
        return [None], [None if 0 in target else target], []
    if len(target) != len(data):
        raise RuleError(f"cannot broadcast data of shape {shape_str(data)} to shape={shape_str(target)}: "
                        f"the number of dimensions differs")
    out = tuple(d if t == 0 else t for d, t in zip(data, target))
    for d, t in zip(data, out):
        if d != t and d != 1:
            raise RuleError(f"cannot broadcast data of shape {shape_str(data)} to shape={shape_str(target)}: "
                            f"only axes of size 1 can grow")
    return [data], [out], []


register(OpDef(
    name="broadcast_to",
    params=(Param("shape", "shape", (), check=lambda s: all(d >= 0 for d in s), check_msg="dims >= 0",
                  doc="target shape; 0 keeps the input's dimension"),),
    shape=_to_shape, kind=Kind.BROADCAST, body=fixed_body(_identity), grad=_data_grad,
    doc="Broadcasts ``data`` to ``shape`` (same number of axes; only axes of size 1 grow; 0 keeps a dim).",
    extra={"family": "broadcast"},
))

# ---------------------------------------------------------------------------------------------
# broadcast_axis: grow the given size-1 axes to the given sizes.


def _axis_check(p: dict) -> None:
    if len(p["axis"]) != len(p["size"]):
        raise ParamError(f"broadcast_axis: parameters 'axis' {p['axis']} and 'size' {p['size']} "
                         f"must have the same length")
    if any(s <= 0 for s in p["size"]):
        raise ParamError(f"broadcast_axis: parameter 'size' {p['size']} must hold positive sizes")


def _axis_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    out = list(data)
    seen: set[int] = set()
    for a, size in zip(p["axis"], p["size"]):
        ax = norm_axis(a, len(data))
        if ax in seen:
            raise RuleError(f"axis={p['axis']} names axis {ax} twice")
        seen.add(ax)
        if data[ax] != 1 and data[ax] != size:
            raise RuleError(f"axis {a} of data {shape_str(data)} has size {data[ax]}; "
                            f"only an axis of size 1 can be broadcast (to size {size})")
        out[ax] = size
    return [data], [tuple(out)], []


register(OpDef(
    name="broadcast_axis", aliases=("broadcast_axes",),
    params=(Param("axis", "shape", (), doc="the axes to broadcast"),
            Param("size", "shape", (), doc="the target size of each axis")),
    check=_axis_check, shape=_axis_shape, kind=Kind.BROADCAST, body=fixed_body(_identity), grad=_data_grad,
    doc="Broadcasts ``data`` along ``axis`` (axes of size 1) to the sizes ``size``.",
    extra={"family": "broadcast"},
))

# ---------------------------------------------------------------------------------------------
# broadcast_like: lhs broadcast to rhs's shape (or to rhs's sizes on chosen axes).


def _like_check(p: dict) -> None:
    la, ra = p["lhs_axes"], p["rhs_axes"]
    if la == () or ra == ():
        raise ParamError(f"broadcast_like: an empty axes tuple is not allowed (lhs_axes={la}, "
                         f"rhs_axes={ra}); leave both out to broadcast to rhs's whole shape")
    if la is not None and ra is not None and len(la) != len(ra):
        raise ParamError(f"broadcast_like: parameters 'lhs_axes' {la} and 'rhs_axes' {ra} must have "
                         f"the same length")


def _like_axes(p: dict, lhs: tuple, rhs: tuple) -> tuple:
    out = list(lhs)
    for a, b in zip(p["lhs_axes"], p["rhs_axes"]):
        la, rb = norm_axis(a, len(lhs), "lhs_axes"), norm_axis(b, len(rhs), "rhs_axes")
        if lhs[la] != 1 and lhs[la] != rhs[rb]:
            raise RuleError(f"axis {a} of lhs {shape_str(lhs)} has size {lhs[la]} and cannot be "
                            f"broadcast to axis {b} of rhs {shape_str(rhs)}")
        out[la] = rhs[rb]
    return tuple(out)


def _like_shape(p: dict, ins: list, aux: list):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return [lhs, rhs], [None], []
    if p["lhs_axes"] is not None and p["rhs_axes"] is not None:
        return [lhs, rhs], [_like_axes(p, lhs, rhs)], []
    if len(lhs) != len(rhs) or any(a != b and a != 1 for a, b in zip(lhs, rhs)):
        raise RuleError(f"lhs of shape {shape_str(lhs)} cannot be broadcast to rhs's shape {shape_str(rhs)} "
                        f"(same number of axes needed; only axes of size 1 grow)")
    return [lhs, rhs], [rhs], []


def _like_dtype(p: dict, ins: list, aux: list):
    """rhs lends only its shape: its dtype is its own, the output has lhs's."""
    return list(ins), [ins[0]], []


register(OpDef(
    name="broadcast_like", arguments=("lhs", "rhs"),
    params=(Param("lhs_axes", "shape", None, nullable=True, doc="axes of lhs to broadcast"),
            Param("rhs_axes", "shape", None, nullable=True, doc="axes of rhs whose sizes to copy")),
    check=_like_check, shape=_like_shape, dtype=_like_dtype, kind=Kind.BROADCAST, body=fixed_body(_identity),
    grad=_data_grad,
    doc=("Broadcasts ``lhs`` to the shape of ``rhs`` (or, with ``lhs_axes``/``rhs_axes``, grows lhs's "
         "axes to rhs's sizes on those axes). Only rhs's shape is read (its lowering rule marks it "
         "shape-only: the body takes lhs alone), so rhs may have any dtype; the output has lhs's."),
    extra={"family": "broadcast"},
))

OPS: tuple[str, ...] = tuple([n for n, *_ in BROADCAST_BINARY] + ["broadcast_to", "broadcast_axis",
                                                                 "broadcast_like"])
