"""MXNet's ``linalg`` factorisations and solves (``_linalg_<name>``, alias ``linalg_<name>``;
``mx.sym.linalg.<name>`` / ``mx.nd.linalg.<name>``). Matrices are the last two axes; leading axes
are a batch. The primitives run one matrix per loop iteration or CUDA thread with the routines of
:mod:`symjit.ops.linalg_kernels` (lowered by :mod:`symjit.lower.linalg`); their gradients are
graphs of ``trsm``, ``inverse``, batched products and masks (formulas as MXNet documents them).

* ``potrf``: Cholesky factor L (A = L L^T) from the lower triangle, or U (A = U^T U) with
  ``lower=False``; the gradient is symmetric, as MXNet's.
* ``potri``: A^-1 from A's Cholesky factor (composite: ``trsm`` against the identity, product).
* ``trsm``: ``alpha * op(T)^-1 B`` (``alpha * B op(T)^-1`` with ``rightside``).
* ``inverse``, ``det``, ``slogdet`` (sign and log|det|; the sign has no gradient).
* ``extracttrian`` / ``maketrian``: a triangle (diagonal ``offset``) as a packed vector and back
  (the lower triangle row by row, the upper column by column, as MXNet).
* ``gelqf``: A = L Q (rows <= columns) with Householder reflections, L's signs as LAPACK's.
* ``syevd``: A = U^T diag(lambda) U of a symmetric A, eigenvalues ascending; symjit makes each
  eigenvector's largest-magnitude entry positive (LAPACK leaves the signs unspecified).

>>> import symjit as mx
>>> a = mx.nd.array([[4, 2], [2, 5]])
>>> mx.nd.linalg.potrf(a).asnumpy().tolist()
[[2.0, 0.0], [1.0, 2.0]]
>>> [round(float(v), 4) for v in mx.nd.linalg.inverse(a).asnumpy().ravel()]
[0.3125, -0.125, -0.125, 0.25]
"""
from __future__ import annotations

import numpy as np

from .linalg_ops import _linalg, _matmul
from .registry import Kind, OpDef, Param, RuleError
from .rules import need_float, need_rank, shape_str

__all__: list[str] = []

_LOWER = Param("lower", "bool", True, doc="the lower triangle (else the upper)")


def _square(shape, arg: str = "A") -> tuple:
    need_rank(shape, arg, 2)
    if shape[-1] != shape[-2]:
        raise RuleError(f"{arg} {shape_str(shape)} must be (a batch of) square matrices")
    return tuple(shape)


def _float_dtype(p: dict, ins: list, aux: list, n_out: int = 1):
    known = next((t for t in ins if t is not None), None)
    if known is not None:
        need_float(known, "A")
    return [known] * len(ins), [known] * n_out, []


def _same_square(p: dict, ins: list, aux: list):
    a = ins[0]
    if a is None:
        return [None], [None], []
    a = _square(a)
    return [a], [a], []


# --- graph helpers of the gradients -------------------------------------------------------------
def _t(b, x: int) -> int:
    nd = len(b.g.values[x].shape)
    return b.add1("SwapAxis", x, dim1=nd - 2, dim2=nd - 1)


def _tri_mask(b, x: int, lower: bool, strict: bool = False) -> int:
    """x masked to its lower (upper) triangle, diagonal included unless ``strict``."""
    n, dt = b.g.values[x].shape[-1], b.g.values[x].dtype.name
    mask = b.add1("_eye_tri", N=n, lower=lower, dtype=dt)
    if strict:
        mask = b.add1("elemwise_sub", mask, b.add1("_eye", N=n, dtype=dt))
    return b.add1("broadcast_mul", x, mask)


def _sym(b, x: int) -> int:
    return b.add1("_mul_scalar", b.add1("elemwise_add", x, _t(b, x)), scalar=0.5)


def _copyltu(b, x: int) -> int:
    """The symmetric matrix with x's lower triangle."""
    return b.add1("elemwise_add", _tri_mask(b, x, True), _t(b, _tri_mask(b, x, True, strict=True)))


def _per_matrix(b, scalars: int, like: int) -> int:
    """A per-matrix value (batch shape, or (1,) for one matrix) broadcast over ``like``'s matrices."""
    shape = b.g.values[like].shape
    col = b.add1("Reshape", scalars, shape=shape[:-2] + (1, 1))
    return b.add1("broadcast_like", col, like)


# --- potrf ---------------------------------------------------------------------------------------
def _potrf_grad(b, node, ograds):
    """Ā = sym(L^-T Φ(L^T L̄) L^-1), Φ the lower triangle with the diagonal halved (for U: L = U^T)."""
    lower = node.params["lower"]
    fac, g = node.outputs[0], ograds[0]
    if not lower:
        fac, g = _t(b, fac), _t(b, g)
    n, dt = b.g.values[fac].shape[-1], b.g.values[fac].dtype.name
    p = _tri_mask(b, _matmul(b, fac, g, ta=True), True)
    p = b.add1("elemwise_sub", p, b.add1("broadcast_mul", p,
                                         b.add1("_mul_scalar", b.add1("_eye", N=n, dtype=dt), scalar=0.5)))
    x = b.add1("_linalg_trsm", fac, p, transpose=True)                  # L^-T P
    x = b.add1("_linalg_trsm", fac, x, rightside=True)                  # ... L^-1
    return [_sym(b, x)]


_linalg(OpDef(
    name="_linalg_potrf", aliases=("linalg_potrf",), arguments=("A",), params=(_LOWER,),
    shape=_same_square, dtype=_float_dtype, kind=Kind.OPAQUE, grad=_potrf_grad,
    doc="The Cholesky factor of each symmetric positive definite matrix (read from its lower, or "
        "upper, triangle).",
))


# --- potri (composite) ---------------------------------------------------------------------------
def _potri_expand(b, ins: list[int], p: dict) -> list[int]:
    fac = ins[0]
    shape, dt = b.g.values[fac].shape, b.g.values[fac].dtype.name
    eye = b.add1("broadcast_like", b.add1("Reshape", b.add1("_eye", N=shape[-1], dtype=dt),
                                          shape=(1,) * (len(shape) - 2) + shape[-2:]), fac)
    inv = b.add1("_linalg_trsm", fac, eye, lower=p["lower"])
    # lower: A^-1 = L^-T L^-1;  upper: A^-1 = U^-1 U^-T
    return [_matmul(b, inv, inv, ta=True) if p["lower"] else _matmul(b, inv, inv, tb=True)]


_linalg(OpDef(
    name="_linalg_potri", aliases=("linalg_potri",), arguments=("A",), params=(_LOWER,),
    shape=_same_square, dtype=_float_dtype, expand=_potri_expand,
    doc="The inverse of L L^T (U^T U with lower=False) from its Cholesky factor.",
))


# --- trsm ----------------------------------------------------------------------------------------
def _trsm_shape(p: dict, ins: list, aux: list):
    a, bm = ins
    if a is None or bm is None:
        return list(ins), [None], []
    a, bm = _square(a), tuple(bm)
    need_rank(bm, "B", 2)
    n = bm[-1] if p["rightside"] else bm[-2]
    if a[:-2] != bm[:-2] or a[-1] != n:
        raise RuleError(f"triangular A {shape_str(a)} does not fit B {shape_str(bm)} "
                        f"(rightside={p['rightside']})")
    return [a, bm], [bm], []


def _trsm_grad(b, node, ograds):
    p = node.params
    a, x, g = node.inputs[0], node.outputs[0], ograds[0]
    tr, right, lower, alpha = p["transpose"], p["rightside"], p["lower"], p["alpha"]
    # Y = op(T)^-T Ḡ (left) or Ḡ op(T)^-T (right); B̄ = alpha Y
    y = b.add1("_linalg_trsm", a, g, transpose=not tr, rightside=right, lower=lower)
    db = b.add1("_mul_scalar", y, scalar=alpha) if alpha != 1.0 else y
    if not right:
        da = _matmul(b, x, y, tb=True) if tr else _matmul(b, y, x, tb=True)      # -X Yᵀ or -Y Xᵀ
    else:
        da = _matmul(b, y, x, ta=True) if tr else _matmul(b, x, y, ta=True)      # -Yᵀ X or -Xᵀ Y
    da = b.add1("negative", _tri_mask(b, da, lower))
    return [da, db]


_linalg(OpDef(
    name="_linalg_trsm", aliases=("linalg_trsm",), arguments=("A", "B"),
    params=(Param("transpose", "bool", False, doc="use the triangle's transpose"),
            Param("rightside", "bool", False, doc="solve X op(T) = alpha B"), _LOWER,
            Param("alpha", "float", 1.0, doc="scale of B")),
    shape=_trsm_shape, dtype=_float_dtype, kind=Kind.OPAQUE, grad=_trsm_grad,
    doc="``alpha * op(T)^-1 @ B`` (``alpha * B @ op(T)^-1`` with rightside), T the lower (upper) "
        "triangle of A.",
))


# --- inverse, det, slogdet -----------------------------------------------------------------------
def _inverse_grad(b, node, ograds):
    y = node.outputs[0]
    return [b.add1("negative", _matmul(b, _matmul(b, y, ograds[0], ta=True), y, tb=True))]


_linalg(OpDef(
    name="_linalg_inverse", aliases=("linalg_inverse",), arguments=("A",), shape=_same_square,
    dtype=_float_dtype, kind=Kind.OPAQUE, grad=_inverse_grad,
    doc="The inverse of each square matrix (Gauss-Jordan with partial pivoting).",
))


def _det_shape(p: dict, ins: list, aux: list):
    a = ins[0]
    if a is None:
        return [None], [None], []
    a = _square(a)
    return [a], [a[:-2] or (1,)], []


def _det_grad(b, node, ograds):
    a = node.inputs[0]
    scale = b.add1("elemwise_mul", ograds[0], node.outputs[0])
    return [b.add1("elemwise_mul", _per_matrix(b, scale, a), _t(b, b.add1("_linalg_inverse", a)))]


_linalg(OpDef(
    name="_linalg_det", aliases=("linalg_det",), arguments=("A",), shape=_det_shape, dtype=_float_dtype,
    kind=Kind.OPAQUE, grad=_det_grad,
    doc="The determinant of each square matrix (LU with partial pivoting).",
))


def _slogdet_shape(p: dict, ins: list, aux: list):
    new_ins, outs, _ = _det_shape(p, ins, aux)
    return new_ins, outs * 2, []


def _slogdet_grad(b, node, ograds):
    a, g = node.inputs[0], ograds[1]
    if g is None:
        return [None]
    return [b.add1("elemwise_mul", _per_matrix(b, g, a), _t(b, b.add1("_linalg_inverse", a)))]


_linalg(OpDef(
    name="_linalg_slogdet", aliases=("linalg_slogdet",), arguments=("A",), outputs=("sign", "logdet"),
    shape=_slogdet_shape, dtype=lambda p, ins, aux: _float_dtype(p, ins, aux, 2), kind=Kind.OPAQUE,
    grad=_slogdet_grad,
    doc="The sign and the log of the absolute value of each square matrix's determinant.",
))


# --- extracttrian / maketrian --------------------------------------------------------------------
_OFFSET = Param("offset", "int", 0, doc="the diagonal: 0 the main one, > 0 above, < 0 below")


def trian_len(n: int, offset: int) -> int:
    m = n - abs(offset)
    return m * (m + 1) // 2 if m > 0 else 0


def _extracttrian_shape(p: dict, ins: list, aux: list):
    a = ins[0]
    if a is None:
        return [None], [None], []
    a = _square(a)
    if abs(p["offset"]) >= a[-1]:
        raise RuleError(f"offset {p['offset']} leaves no triangle in {shape_str(a)}")
    return [a], [a[:-2] + (trian_len(a[-1], p["offset"]),)], []


def _maketrian_shape(p: dict, ins: list, aux: list):
    v = ins[0]
    if v is None:
        return [None], [None], []
    need_rank(v, "A", 1)
    m = int(round((np.sqrt(8 * v[-1] + 1) - 1) / 2))
    if m * (m + 1) // 2 != v[-1] or m == 0:
        raise RuleError(f"A's last axis ({v[-1]}) is not a triangle's size m(m+1)/2")
    n = m + abs(p["offset"])
    return [tuple(v)], [tuple(v[:-1]) + (n, n)], []


_linalg(OpDef(
    name="_linalg_extracttrian", aliases=("linalg_extracttrian",), arguments=("A",),
    params=(_OFFSET, _LOWER), shape=_extracttrian_shape, kind=Kind.OPAQUE,
    grad=lambda b, node, og: [b.add1("_linalg_maketrian", og[0], **node.params)],
    doc="The triangle at diagonal ``offset`` of each square matrix as a vector (lower: row by row; "
        "upper: column by column).",
))
_linalg(OpDef(
    name="_linalg_maketrian", aliases=("linalg_maketrian",), arguments=("A",),
    params=(_OFFSET, _LOWER), shape=_maketrian_shape, kind=Kind.OPAQUE,
    grad=lambda b, node, og: [b.add1("_linalg_extracttrian", og[0], **node.params)],
    doc="Square matrices with each packed vector of A as the triangle at diagonal ``offset``, zeros "
        "elsewhere (the inverse of extracttrian).",
))


# --- gelqf, syevd --------------------------------------------------------------------------------
def _gelqf_shape(p: dict, ins: list, aux: list):
    a = ins[0]
    if a is None:
        return [None], [None, None], []
    need_rank(a, "A", 2)
    if a[-2] > a[-1]:
        raise RuleError(f"A {shape_str(a)} has more rows than columns (gelqf needs rows <= columns)")
    return [tuple(a)], [tuple(a), a[:-2] + (a[-2], a[-2])], []


def _gelqf_grad(b, node, ograds):
    """Ā = L^-T (Q̄ + copyltu(M) Q), M = L^T L̄ - Q̄ Q^T."""
    q, lo = node.outputs
    gq = ograds[0] if ograds[0] is not None else b.add1("zeros_like", q)
    gl = ograds[1] if ograds[1] is not None else b.add1("zeros_like", lo)
    m = b.add1("elemwise_sub", _matmul(b, lo, gl, ta=True), _matmul(b, gq, q, tb=True))
    inner = b.add1("elemwise_add", gq, _matmul(b, _copyltu(b, m), q))
    return [b.add1("_linalg_trsm", lo, inner, transpose=True)]


_linalg(OpDef(
    name="_linalg_gelqf", aliases=("linalg_gelqf",), arguments=("A",), outputs=("Q", "L"),
    shape=_gelqf_shape, dtype=lambda p, ins, aux: _float_dtype(p, ins, aux, 2), kind=Kind.OPAQUE,
    grad=_gelqf_grad,
    doc="The LQ factorisation A = L Q of each matrix with rows <= columns: Q with orthonormal rows, "
        "L lower triangular.",
))


def _syevd_shape(p: dict, ins: list, aux: list):
    a = ins[0]
    if a is None:
        return [None], [None, None], []
    a = _square(a)
    return [a], [a, a[:-1]], []


def _syevd_grad(b, node, ograds):
    """Ā = sym(U^T (diag(λ̄) + F ∘ (U Ū^T)) U), F[i, j] = 1 / (λ_j - λ_i) off the diagonal."""
    u, lam = node.outputs
    n, dt = b.g.values[u].shape[-1], b.g.values[u].dtype.name
    eye = b.add1("_eye", N=n, dtype=dt)
    inner = b.add1("zeros_like", u)
    if ograds[0] is not None:
        nd = len(b.g.values[lam].shape)
        diff = b.add1("broadcast_sub", b.add1("expand_dims", lam, axis=nd - 1),
                      b.add1("expand_dims", lam, axis=nd))                 # [i, j] = λ_j - λ_i
        f = b.add1("broadcast_div", b.add1("_rminus_scalar", eye, scalar=1.0),
                   b.add1("broadcast_add", diff, eye))
        inner = b.add1("elemwise_mul", f, _matmul(b, u, ograds[0], tb=True))
    if ograds[1] is not None:
        diag = b.add1("broadcast_mul", b.add1("expand_dims", ograds[1], axis=len(b.g.values[lam].shape) - 1),
                      eye)
        inner = b.add1("elemwise_add", inner, diag)
    return [_sym(b, _matmul(b, _matmul(b, u, inner, ta=True), u))]


_linalg(OpDef(
    name="_linalg_syevd", aliases=("linalg_syevd",), arguments=("A",), outputs=("U", "L"),
    shape=_syevd_shape, dtype=lambda p, ins, aux: _float_dtype(p, ins, aux, 2), kind=Kind.OPAQUE,
    grad=_syevd_grad,
    doc="Eigenvalues (ascending) and eigenvectors (rows of U) of each symmetric matrix.",
))
