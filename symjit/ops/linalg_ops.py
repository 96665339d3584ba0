"""MXNet's ``linalg`` operators that are products and diagonals (registered as ``_linalg_<name>``
with the alias ``linalg_<name>``; ``mx.sym.linalg.<name>`` / ``mx.nd.linalg.<name>`` call them).
Each is a composite (``expand``) of ``dot``/``batch_dot``, ``diag`` and elementwise ops, so it
runs and differentiates on every target as those do. Matrices are the last two axes; leading axes
are a batch (gemm/gemm2's ``axis`` may name another axis for the rows: it trades places with -2).

* ``gemm``: ``alpha * op(A) @ op(B) + beta * C``; ``gemm2``: ``alpha * op(A) @ op(B)``.
* ``syrk``: ``alpha * A @ A^T`` (``A^T @ A`` with ``transpose``).
* ``trmm``: ``alpha * op(T) @ B`` (``B @ op(T)`` with ``rightside``), T the lower (or upper)
  triangle of A, diagonal included.
* ``extractdiag`` / ``makediag``: diagonal ``offset`` of each matrix as a vector, and back.
* ``sumlogdiag``: the sum of the logarithms of each matrix's diagonal.

>>> import symjit as mx
>>> a = mx.nd.array([[1, 2], [3, 4]])
>>> mx.nd.linalg.gemm2(a, a, transpose_b=True, alpha=0.5).asnumpy().tolist()
[[2.5, 5.5], [5.5, 12.5]]
"""
from __future__ import annotations

from .registry import OpDef, Param, RuleError, register
from .rules import need_rank, shape_str

__all__ = ["OPS"]

OPS: list[str] = []


def _linalg(op: OpDef) -> OpDef:
    op.extra.setdefault("family", "linalg")
    OPS.append(op.name)
    return register(op)


def _rows_axis(p: dict, shape: tuple) -> int:
    """gemm's ``axis`` (the matrices' rows; their columns are the last axis) as a non-negative axis
    of ``shape``; RuleError when it is the last axis or outside the shape."""
    nd, axis = len(shape), p["axis"]
    ax = axis + nd if axis < 0 else axis
    if not 0 <= ax < nd - 1:
        raise RuleError(f"axis={axis} must name an axis before the last (the columns') of {shape_str(shape)}")
    return ax


def _swap_rows(shape: tuple, ax: int) -> tuple:
    """``shape`` with axes ``ax`` and ``-2`` exchanged (its own inverse)."""
    s = list(shape)
    s[ax], s[-2] = s[-2], s[ax]
    return tuple(s)


def _matrix(shape, arg: str) -> tuple:
    need_rank(shape, arg, 2)
    return tuple(shape)


def _op_shape(shape: tuple, transpose: bool) -> tuple:
    return shape[:-2] + ((shape[-1], shape[-2]) if transpose else shape[-2:])


def _product_shape(p: dict, a: tuple, b: tuple, ta: str = "transpose_a", tb: str = "transpose_b") -> tuple:
    a, b = _matrix(a, "A"), _matrix(b, "B")
    oa, ob = _op_shape(a, p[ta]), _op_shape(b, p[tb])
    if a[:-2] != b[:-2] or oa[-1] != ob[-2]:
        raise RuleError(f"cannot multiply op(A) {shape_str(oa)} by op(B) {shape_str(ob)} "
                        f"(A {shape_str(a)}, B {shape_str(b)})")
    return a[:-2] + (oa[-2], ob[-1])


def _matmul(b, x: int, y: int, ta: bool = False, tb: bool = False) -> int:
    op = "dot" if len(b.g.values[x].shape) == 2 else "batch_dot"
    return b.add1(op, x, y, transpose_a=ta, transpose_b=tb)


def _scaled(b, v: int, alpha: float) -> int:
    return v if alpha == 1.0 else b.add1("_mul_scalar", v, scalar=alpha)


_ALPHA = Param("alpha", "float", 1.0, doc="scale of the product")
_AXIS = Param("axis", "int", -2, doc="the rows' axis (the columns are the last)")
_TA = Param("transpose_a", "bool", False, doc="use A^T")
_TB = Param("transpose_b", "bool", False, doc="use B^T")


def _gemm_shape(p: dict, ins: list, aux: list):
    a, b = ins[0], ins[1]
    if a is None or b is None:
        return list(ins), [None], []
    _matrix(a, "A")
    ax = _rows_axis(p, a)
    out = _swap_rows(_product_shape(p, _swap_rows(a, ax), _swap_rows(b, ax)), ax)
    return [a, b, out][:len(ins)], [out], []


def _gemm_expand(b, ins: list[int], p: dict) -> list[int]:
    """The batched product with the rows' axis moved to -2 and back (SwapAxis) when ``axis`` is
    not -2 already."""
    nd = len(b.g.values[ins[0]].shape)
    ax = _rows_axis(p, b.g.values[ins[0]].shape)

    def swap(v: int) -> int:
        return v if ax == nd - 2 else b.add1("SwapAxis", v, dim1=ax, dim2=nd - 2)
    prod_ = _scaled(b, _matmul(b, swap(ins[0]), swap(ins[1]), p["transpose_a"], p["transpose_b"]), p["alpha"])
    if len(ins) == 2:
        return [swap(prod_)]
    return [swap(b.add1("elemwise_add", prod_, _scaled(b, swap(ins[2]), p["beta"])))]


_linalg(OpDef(
    name="_linalg_gemm", aliases=("linalg_gemm",), arguments=("A", "B", "C"),
    params=(_TA, _TB, _ALPHA, Param("beta", "float", 1.0, doc="scale of C"), _AXIS),
    shape=_gemm_shape, expand=_gemm_expand,
    doc="``alpha * op(A) @ op(B) + beta * C`` for each matrix of a batch (op: transpose or not).",
))
_linalg(OpDef(
    name="_linalg_gemm2", aliases=("linalg_gemm2",), arguments=("A", "B"), params=(_TA, _TB, _ALPHA, _AXIS),
    shape=_gemm_shape, expand=_gemm_expand,
    doc="``alpha * op(A) @ op(B)`` for each matrix of a batch (op: transpose or not).",
))


def _syrk_shape(p: dict, ins: list, aux: list):
    a = ins[0]
    if a is None:
        return [None], [None], []
    a = _matrix(a, "A")
    n = a[-1] if p["transpose"] else a[-2]
    return [a], [a[:-2] + (n, n)], []


_linalg(OpDef(
    name="_linalg_syrk", aliases=("linalg_syrk",), arguments=("A",),
    params=(Param("transpose", "bool", False, doc="A^T @ A instead of A @ A^T"), _ALPHA),
    shape=_syrk_shape,
    expand=lambda b, ins, p: [_scaled(b, _matmul(b, ins[0], ins[0], p["transpose"], not p["transpose"]),
                                      p["alpha"])],
    doc="``alpha * A @ A^T`` (``alpha * A^T @ A`` with transpose) for each matrix of a batch.",
))


def _trmm_shape(p: dict, ins: list, aux: list):
    a, bm = ins
    if a is None or bm is None:
        return list(ins), [None], []
    a, bm = _matrix(a, "A"), _matrix(bm, "B")
    if a[-1] != a[-2]:
        raise RuleError(f"A {shape_str(a)} must be square")
    out = _product_shape({"x": False, "y": p["transpose"]}, bm, a, "x", "y") if p["rightside"] else \
        _product_shape({"x": p["transpose"], "y": False}, a, bm, "x", "y")
    return [a, bm], [out], []


def _trmm_expand(b, ins: list[int], p: dict) -> list[int]:
    a, bm = ins
    n = b.g.values[a].shape[-1]
    mask = b.add1("_eye_tri", N=n, lower=p["lower"], dtype=b.g.values[a].dtype.name)
    tri = b.add1("broadcast_mul", a, mask)
    prod_ = _matmul(b, bm, tri, False, p["transpose"]) if p["rightside"] else \
        _matmul(b, tri, bm, p["transpose"], False)
    return [_scaled(b, prod_, p["alpha"])]


_linalg(OpDef(
    name="_linalg_trmm", aliases=("linalg_trmm",), arguments=("A", "B"),
    params=(Param("transpose", "bool", False, doc="use the triangle's transpose"),
            Param("rightside", "bool", False, doc="B @ op(T) instead of op(T) @ B"),
            Param("lower", "bool", True, doc="the lower triangle of A (else the upper)"), _ALPHA),
    shape=_trmm_shape, expand=_trmm_expand,
    doc="``alpha * op(T) @ B`` (or ``alpha * B @ op(T)`` with rightside), T the lower (or upper) "
        "triangle of the square A, diagonal included.",
))


def _diag_len(shape: tuple, k: int) -> int:
    return max(min(shape[-2], shape[-1] - k) if k >= 0 else min(shape[-2] + k, shape[-1]), 0)


def _extractdiag_shape(p: dict, ins: list, aux: list):
    a = ins[0]
    if a is None:
        return [None], [None], []
    a = _matrix(a, "A")
    return [a], [a[:-2] + (_diag_len(a, p["offset"]),)], []


_OFFSET = Param("offset", "int", 0, doc="the diagonal: 0 the main one, > 0 above, < 0 below")
_linalg(OpDef(
    name="_linalg_extractdiag", aliases=("linalg_extractdiag",), arguments=("A",), params=(_OFFSET,),
    shape=_extractdiag_shape,
    expand=lambda b, ins, p: [b.add1("diag", ins[0], k=p["offset"], axis1=-2, axis2=-1)],
    doc="Diagonal ``offset`` of each matrix of a batch, as a vector.",
))


def _makediag_shape(p: dict, ins: list, aux: list):
    a = ins[0]
    if a is None:
        return [None], [None], []
    need_rank(a, "A", 1)
    n = a[-1] + abs(p["offset"])
    return [a], [tuple(a[:-1]) + (n, n)], []


def _makediag_expand(b, ins: list[int], p: dict) -> list[int]:
    a = ins[0]
    shape = b.g.values[a].shape
    if len(shape) == 1:
        return [b.add1("diag", a, k=p["offset"])]
    n = shape[-1] + abs(p["offset"])
    like = b.add1("_zeros", shape=tuple(shape[:-1]) + (n, n), dtype=b.g.values[a].dtype.name)
    return [b.add1("_backward_diag", a, like, k=p["offset"], axis1=-2, axis2=-1)]


_linalg(OpDef(
    name="_linalg_makediag", aliases=("linalg_makediag",), arguments=("A",), params=(_OFFSET,),
    shape=_makediag_shape, expand=_makediag_expand,
    doc="Square matrices with each vector of A (last axis) on diagonal ``offset``, zeros elsewhere.",
))


def _sumlogdiag_shape(p: dict, ins: list, aux: list):
    a = ins[0]
    if a is None:
        return [None], [None], []
    a = _matrix(a, "A")
    if a[-1] != a[-2]:
        raise RuleError(f"A {shape_str(a)} must be square")
    return [a], [a[:-2] or (1,)], []


_linalg(OpDef(
    name="_linalg_sumlogdiag", aliases=("linalg_sumlogdiag",), arguments=("A",), shape=_sumlogdiag_shape,
    expand=lambda b, ins, p: [b.add1("sum", b.add1("log", b.add1("diag", ins[0], axis1=-2, axis2=-1)),
                                     axis=(-1,))],
    doc="The sum of the logarithms of each square matrix's diagonal (a batch gives one per matrix).",
))
