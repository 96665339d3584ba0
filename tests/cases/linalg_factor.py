"""Cases for the linalg factorisations and solves (symjit/ops/linalg_factor.py) against numpy's
LAPACK-backed routines; float64 finite-difference gradients. potrf reads one triangle but has
MXNet's symmetric gradient, so its gradient case factors the symmetric part of its input."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(41)


def spd(*batch, n=3):
    x = R.uniform(-1, 1, (*batch, n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def lower_tri(*batch, n=3):
    return np.tril(R.uniform(-1, 1, (*batch, n, n)), -1) + np.eye(n) * R.uniform(1.0, 2.0, (*batch, n, 1))


def _t(x):
    return np.swapaxes(x, -1, -2)


def _sym(v):
    return 0.5 * (v + mx.sym.SwapAxis(v, dim1=0, dim2=1))


def _trsm_ref(transpose, rightside, lower, alpha):
    def ref(A, B):
        t = np.tril(A) if lower else np.triu(A)
        t = _t(t) if transpose else t
        if rightside:
            return alpha * _t(np.linalg.solve(_t(t), _t(B)))
        return alpha * np.linalg.solve(t, B)
    return ref


def _packed(a, offset, lower):
    n = a.shape[-1]
    use_lower = offset < 0 or (offset == 0 and lower)
    if use_lower:
        return np.array([a[..., i, j] for i in range(n) for j in range(i + offset + 1)]).T
    return np.array([a[..., i, j] for j in range(n) for i in range(j - offset + 1)]).T


def _maketrian(v, offset, lower):
    m = int((np.sqrt(8 * v.shape[-1] + 1) - 1) / 2)
    n = m + abs(offset)
    out = np.zeros(v.shape[:-1] + (n, n))
    use_lower = offset < 0 or (offset == 0 and lower)
    cells = [(i, j) for i in range(n) for j in range(i + offset + 1)] if use_lower else \
        [(i, j) for j in range(n) for i in range(j - offset + 1)]
    for t, (i, j) in enumerate(cells):
        out[..., i, j] = v[..., t]
    return out


def _gelqf(a):
    q, r = np.linalg.qr(_t(a))           # LAPACK's Householder: A^T = QR  <=>  A = R^T Q^T
    return [_t(q), _t(r)]


def _syevd(a):
    lam, v = np.linalg.eigh(a)
    u = _t(v)
    big = np.argmax(np.abs(u), axis=-1)
    sign = np.sign(np.take_along_axis(u, big[..., None], axis=-1))
    return [u * sign, lam]


def _slogdet(a):
    s, l = np.linalg.slogdet(a)
    return [np.atleast_1d(s), np.atleast_1d(l)]


_sym_in = spd(n=3)
_eig_in = np.diag([1.0, 2.5, 4.0]) + 0.3 * (lambda x: x + x.T)(R.uniform(-1, 1, (3, 3)))

CASES = [
    Case("_linalg_potrf", lambda v: mx.sym.linalg.potrf(v["A"]), {"A": spd(2, n=3)},
         lambda A: np.linalg.cholesky(A),
         grad="none", id="batch"),
    Case("_linalg_potrf", lambda v: mx.sym.linalg.potrf(v["A"], lower=False), {"A": spd(n=3)},
         lambda A: _t(np.linalg.cholesky(A)), grad="none", id="upper"),
    Case("_linalg_potrf", lambda v: mx.sym.linalg.potrf(_sym(v["A"])), {"A": spd(n=3)},
         lambda A: np.linalg.cholesky(A), id="grad"),
    Case("_linalg_potrf", lambda v: mx.sym.linalg.potrf(_sym(v["A"]), lower=False), {"A": spd(n=2)},
         lambda A: _t(np.linalg.cholesky(A)), id="grad_upper"),
    Case("_linalg_potri", lambda v: mx.sym.linalg.potri(v["A"]), {"A": lower_tri(2, n=3)},
         lambda A: np.linalg.inv(np.tril(A) @ _t(np.tril(A)))),
    Case("_linalg_potri", lambda v: mx.sym.linalg.potri(v["A"], lower=False), {"A": _t(lower_tri(n=3))},
         lambda A: np.linalg.inv(_t(np.triu(A)) @ np.triu(A)), id="upper"),
    *[Case("_linalg_trsm", lambda v, kw=kw: mx.sym.linalg.trsm(v["A"], v["B"], **kw),
           {"A": lower_tri(2, n=3) if kw["lower"] else _t(lower_tri(2, n=3)),
            "B": R.uniform(-1, 1, (2, 3, 2) if not kw["rightside"] else (2, 2, 3))},
           _trsm_ref(kw["transpose"], kw["rightside"], kw["lower"], kw["alpha"]),
           id="_".join(f"{k}{int(v) if isinstance(v, bool) else v}" for k, v in kw.items()))
      for kw in [dict(transpose=t, rightside=r, lower=lo, alpha=al)
                 for t, r, lo, al in [(False, False, True, 1.0), (True, False, True, 0.5),
                                      (False, True, True, 1.0), (True, True, True, 2.0),
                                      (False, False, False, 1.0), (True, True, False, 1.0)]]],
    Case("_linalg_inverse", lambda v: mx.sym.linalg.inverse(v["A"]), {"A": spd(2, n=3) - 2.0 * np.eye(3)},
         lambda A: np.linalg.inv(A)),
    Case("_linalg_det", lambda v: mx.sym.linalg.det(v["A"]), {"A": R.uniform(-1, 1, (3, 3)) + np.eye(3)},
         lambda A: np.atleast_1d(np.linalg.det(A))),
    Case("_linalg_det", lambda v: mx.sym.linalg.det(v["A"]), {"A": R.uniform(-1, 1, (2, 2, 2, 2))},
         lambda A: np.linalg.det(A), id="batch"),
    Case("_linalg_det", lambda v: mx.sym.linalg.det(v["A"]), {"A": np.array([[1.0, 2.0], [2.0, 4.0]])},
         lambda A: np.array([0.0]), grad="none", id="singular"),
    Case("_linalg_slogdet", lambda v: mx.sym.linalg.slogdet(v["A"]),
         {"A": R.uniform(-1, 1, (3, 3)) - np.eye(3)}, lambda A: _slogdet(A)),
    *[Case("_linalg_extracttrian",
           lambda v, o=o, lo=lo: mx.sym.linalg.extracttrian(v["A"], offset=o, lower=lo),
           {"A": R.uniform(-1, 1, (2, 4, 4))}, lambda A, o=o, lo=lo: _packed(A, o, lo), id=f"o{o}_l{int(lo)}")
      for o, lo in [(0, True), (0, False), (1, True), (-2, True)]],
    *[Case("_linalg_maketrian", lambda v, o=o, lo=lo: mx.sym.linalg.maketrian(v["A"], offset=o, lower=lo),
           {"A": R.uniform(-1, 1, (2, 6))}, lambda A, o=o, lo=lo: _maketrian(A, o, lo), id=f"o{o}_l{int(lo)}")
      for o, lo in [(0, True), (0, False), (1, True), (-1, False)]],
    Case("_linalg_gelqf", lambda v: mx.sym.linalg.gelqf(v["A"]), {"A": R.uniform(-1, 1, (2, 4))},
         lambda A: _gelqf(A)),
    Case("_linalg_gelqf", lambda v: mx.sym.linalg.gelqf(v["A"]), {"A": R.uniform(-1, 1, (2, 3, 3))},
         lambda A: _gelqf(A),
         id="batch_square"),
    Case("_linalg_syevd", lambda v: mx.sym.linalg.syevd(v["A"]), {"A": _eig_in}, lambda A: _syevd(A)),
    Case("_linalg_syevd", lambda v: mx.sym.linalg.syevd(v["A"]), {"A": spd(2, n=2) + np.diag([0.0, 1.5])},
         lambda A: _syevd(A), id="batch"),
]
