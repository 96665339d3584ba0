"""Matrix products: dot and batch_dot.

MXNet 1.x's ``dot`` on N-D inputs contracts one axis of each: the last axis of ``lhs`` with the
first axis of ``rhs``, giving ``lhs.shape[:-1] + rhs.shape[1:]``. ``transpose_a`` treats ``lhs`` as
the matrix ``(lhs.shape[0], prod(lhs.shape[1:]))`` transposed, so its *first* axis is contracted and
``lhs.shape[1:]`` is kept in order (likewise ``transpose_b`` contracts the *last* axis of ``rhs`` and
keeps ``rhs.shape[:-1]``); for 2-D inputs this is the ordinary matrix transpose. Two 1-D inputs give
their inner product with shape ``(1,)``.

``batch_dot`` takes inputs of the same rank N >= 3 whose leading N-2 (batch) dims agree, and
multiplies the trailing matrices (MXNet >= 1.6 documents N-D; 1.x before that required 3-D).
"""
from __future__ import annotations

from ..base import ParamError, shape_str
from . import partial_shape
from .registry import FLOAT_DTYPES, Kind, OpDef, Param, RuleError, Shape, register

__all__ = ["dot_shape", "batch_dot_shape"]


def _dot_error(lhs: Shape, rhs: Shape, ta: bool, tb: bool, a: int, b: int) -> RuleError:
    return RuleError(f"dot shape error: lhs {shape_str(lhs)} (transpose_a={ta}) X rhs {shape_str(rhs)} "
                     f"(transpose_b={tb}): contracted dims {a} and {b} differ")


def dot_shape(lhs: Shape, rhs: Shape, transpose_a: bool = False, transpose_b: bool = False) -> Shape:
    """The output shape of MXNet 1.x's ``dot``.

    >>> dot_shape((2, 3, 4), (4, 5, 6)), dot_shape((3, 2), (3, 4), transpose_a=True), dot_shape((3,), (3,))
    ((2, 3, 5, 6), (2, 4), (1,))
    """
    lhs, rhs = tuple(lhs), tuple(rhs)
    if len(lhs) == 1 and len(rhs) == 1:
        if transpose_a or transpose_b:
            raise RuleError(f"dot of two vectors {shape_str(lhs)} and {shape_str(rhs)} cannot transpose them")
        if lhs[0] != rhs[0]:
            raise _dot_error(lhs, rhs, False, False, lhs[0], rhs[0])
        return (1,)
    a, keep_l = (lhs[0], lhs[1:]) if transpose_a else (lhs[-1], lhs[:-1])
    b, keep_r = (rhs[-1], rhs[:-1]) if transpose_b else (rhs[0], rhs[1:])
    if a != b:
        raise _dot_error(lhs, rhs, transpose_a, transpose_b, a, b)
    return (*keep_l, *keep_r) or (1,)


def _need_nonscalar(shape: Shape, arg: str) -> None:
    if len(shape) < 1:
        raise RuleError(f"argument '{arg}' must have at least 1 dimension, got {shape_str(shape)}")


def _dot_rule(p: dict, ins: list, aux: list):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return list(ins), [None], []
    _need_nonscalar(lhs, "lhs")
    _need_nonscalar(rhs, "rhs")
    return [lhs, rhs], [dot_shape(lhs, rhs, p["transpose_a"], p["transpose_b"])], []


_PARAMS = (
    Param("transpose_a", "bool", False, doc="transpose the first input before the product"),
    Param("transpose_b", "bool", False, doc="transpose the second input before the product"),
    Param("forward_stype", "str", None, nullable=True, choices=("default", "csr", "row_sparse"),
          doc="storage type of the output (only 'default'/None is supported)"),
)


def _dense_only(p: dict) -> None:
    if p["forward_stype"] not in (None, "default"):
        raise ParamError(f"dot/batch_dot: parameter 'forward_stype'={p['forward_stype']!r}: sparse "
                         "storage is not supported (only dense 'default')")


def _dot_grad(b, node, ograds):
    """2-D rule: dA = dC . B^T, dB = A^T . dC (with the transposes folded in); N-D via 2-D views."""
    lhs, rhs = node.inputs
    dc = ograds[0]
    ta, tb = node.params["transpose_a"], node.params["transpose_b"]
    ls, rs = b.g.values[lhs].shape, b.g.values[rhs].shape
    if len(ls) == 1 and len(rs) == 1:
        return [b.add1("broadcast_mul", rhs, dc), b.add1("broadcast_mul", lhs, dc)]
    a2 = (ls[0], -1) if ta else (-1, ls[-1])
    b2 = (-1, rs[-1]) if tb else (rs[0], -1)
    a = lhs if len(ls) == 2 else b.add1("Reshape", lhs, shape=a2)
    bm = rhs if len(rs) == 2 else b.add1("Reshape", rhs, shape=b2)
    m = b.g.values[a].shape[1 if ta else 0]
    c = dc if len(b.g.values[dc].shape) == 2 else b.add1("Reshape", dc, shape=(m, -1))
    da = b.add1("dot", bm, c, transpose_a=tb, transpose_b=True) if ta else \
        b.add1("dot", c, bm, transpose_b=not tb)
    db = b.add1("dot", c, a, transpose_a=True, transpose_b=ta) if tb else \
        b.add1("dot", a, c, transpose_a=not ta)
    if b.g.values[da].shape != ls:
        da = b.add1("Reshape", da, shape=ls)
    if b.g.values[db].shape != rs:
        db = b.add1("Reshape", db, shape=rs)
    return [da, db]


dot = register(OpDef(
    name="dot",
    params=_PARAMS,
    arguments=("lhs", "rhs"),
    check=_dense_only,
    shape=_dot_rule,
    shape_partial=partial_shape.dot,
    dtypes=FLOAT_DTYPES,
    kind=Kind.OUT_ELEMWISE_FUSABLE,
    grad=_dot_grad,
    doc="Dot product: matrix product for 2-D inputs; for N-D, the last axis of ``lhs`` is contracted "
        "with the first axis of ``rhs`` (``transpose_a``/``transpose_b`` contract the first axis of "
        "``lhs``/the last axis of ``rhs`` instead); two vectors give shape (1,).",
))


def batch_dot_shape(lhs: Shape, rhs: Shape, transpose_a: bool = False, transpose_b: bool = False) -> Shape:
    """The output shape of ``batch_dot``: (B..., M, K) x (B..., K, N) -> (B..., M, N).

    >>> batch_dot_shape((4, 2, 3), (4, 3, 5)), batch_dot_shape((4, 3, 2), (4, 5, 3), True, True)
    ((4, 2, 5), (4, 2, 5))
    """
    lhs, rhs = tuple(lhs), tuple(rhs)
    where = f"lhs {shape_str(lhs)} X rhs {shape_str(rhs)}"
    if len(lhs) < 3 or len(lhs) != len(rhs):
        raise RuleError(f"batch_dot needs inputs of the same rank >= 3, got {where}")
    if lhs[:-2] != rhs[:-2]:
        raise RuleError(f"batch_dot batch dims differ: {where} ({shape_str(lhs[:-2])} vs "
                        f"{shape_str(rhs[:-2])})")
    m, k1 = (lhs[-1], lhs[-2]) if transpose_a else (lhs[-2], lhs[-1])
    k2, n = (rhs[-1], rhs[-2]) if transpose_b else (rhs[-2], rhs[-1])
    if k1 != k2:
        raise RuleError(f"batch_dot shape error: {where} (transpose_a={transpose_a}, "
                        f"transpose_b={transpose_b}): contracted dims {k1} and {k2} differ")
    return (*lhs[:-2], m, n)


def _batch_dot_rule(p: dict, ins: list, aux: list):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return list(ins), [None], []
    return [lhs, rhs], [batch_dot_shape(lhs, rhs, p["transpose_a"], p["transpose_b"])], []


def _batch_dot_grad(b, node, ograds):
    """With op(X) the optional transpose: C = op(A) op(B) gives dA and dB as batch_dots of dC
    with A or B (for ta=False: dA = dC op(B)^T; for ta=True: dA = op(B) dC^T; likewise dB)."""
    lhs, rhs = node.inputs
    dc = ograds[0]
    ta, tb = node.params["transpose_a"], node.params["transpose_b"]
    if ta:
        da = b.add1("batch_dot", rhs, dc, transpose_a=tb, transpose_b=True)
    else:
        da = b.add1("batch_dot", dc, rhs, transpose_b=not tb)
    if tb:
        db = b.add1("batch_dot", dc, lhs, transpose_a=True, transpose_b=ta)
    else:
        db = b.add1("batch_dot", lhs, dc, transpose_a=not ta)
    return [da, db]


batch_dot = register(OpDef(
    name="batch_dot",
    params=_PARAMS,
    arguments=("lhs", "rhs"),
    check=_dense_only,
    shape=_batch_dot_rule,
    shape_partial=partial_shape.batch_dot,
    dtypes=FLOAT_DTYPES,
    kind=Kind.OUT_ELEMWISE_FUSABLE,
    grad=_batch_dot_grad,
    doc="Batched matrix product: (B..., M, K) x (B..., K, N) -> (B..., M, N) for inputs of the same "
        "rank >= 3 with equal batch dims; ``transpose_a``/``transpose_b`` transpose the last two axes.",
))
