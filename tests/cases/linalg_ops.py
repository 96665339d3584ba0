"""Cases for the linalg composites (symjit/ops/linalg_ops.py) through mx.sym.linalg, against numpy's
matmul, tril/triu and diagonal; gradients by finite differences."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(19)


def rnd(*shape):
    return R.uniform(-1.0, 1.0, shape)


def _t(x, yes):
    return np.swapaxes(x, -1, -2) if yes else x


def _makediag(a, k):
    n = a.shape[-1] + abs(k)
    out = np.zeros(a.shape[:-1] + (n, n))
    for idx in np.ndindex(a.shape[:-1]):
        out[idx] = np.diag(a[idx], k)
    return out


_spd = rnd(2, 3, 3) @ np.swapaxes(rnd(2, 3, 3), -1, -2) + 3 * np.eye(3)   # positive diagonals

CASES = [
    Case("_linalg_gemm", lambda v: mx.sym.linalg.gemm(v["A"], v["B"], v["C"], transpose_a=True, alpha=0.5,
                                                      beta=-2.0),
         {"A": rnd(3, 2), "B": rnd(3, 4), "C": rnd(2, 4)}, lambda A, B, C: 0.5 * A.T @ B - 2.0 * C),
    Case("_linalg_gemm", lambda v: mx.sym.linalg_gemm(v["A"], v["B"], v["C"], transpose_b=True),
         {"A": rnd(2, 2, 3), "B": rnd(2, 4, 3), "C": rnd(2, 2, 4)}, lambda A, B, C: A @ _t(B, True) + C,
         id="batch"),
    Case("_linalg_gemm2", lambda v: mx.sym.linalg.gemm2(v["A"], v["B"], alpha=2.0), {"A": rnd(2, 3),
                                                                                     "B": rnd(3, 2)},
         lambda A, B: 2.0 * A @ B),
    Case("_linalg_gemm2", lambda v: mx.sym.linalg.gemm2(v["A"], v["B"], transpose_a=True, transpose_b=True),
         {"A": rnd(2, 3, 2), "B": rnd(2, 4, 3)}, lambda A, B: _t(A, True) @ _t(B, True), id="batch_tt"),
    # axis names the rows' axis (columns stay last): the other axes are the batch
    Case("_linalg_gemm", lambda v: mx.sym.linalg.gemm(v["A"], v["B"], v["C"], axis=0, beta=0.5),
         {"A": rnd(2, 3, 4), "B": rnd(4, 3, 5), "C": rnd(2, 3, 5)},
         lambda A, B, C: np.einsum("ibk,kbj->ibj", A, B) + 0.5 * C, id="rows_axis0"),
    Case("_linalg_gemm2", lambda v: mx.sym.linalg.gemm2(v["A"], v["B"], axis=-3, transpose_b=True),
         {"A": rnd(2, 3, 1, 4), "B": rnd(2, 2, 1, 4)},
         lambda A, B: np.einsum("aick,ajck->aicj", A, B), id="rows_axis-3"),
    Case("_linalg_syrk", lambda v: mx.sym.linalg.syrk(v["A"], alpha=1.5), {"A": rnd(2, 3)},
         lambda A: 1.5 * A @ A.T),
    Case("_linalg_syrk", lambda v: mx.sym.linalg.syrk(v["A"], transpose=True), {"A": rnd(2, 3, 2)},
         lambda A: _t(A, True) @ A, id="batch_t"),
    Case("_linalg_trmm", lambda v: mx.sym.linalg.trmm(v["A"], v["B"], alpha=2.0), {"A": rnd(3, 3),
                                                                                   "B": rnd(3, 2)},
         lambda A, B: 2.0 * np.tril(A) @ B),
    Case("_linalg_trmm", lambda v: mx.sym.linalg.trmm(v["A"], v["B"], rightside=True, lower=False,
                                                      transpose=True),
         {"A": rnd(2, 3, 3), "B": rnd(2, 2, 3)}, lambda A, B: B @ _t(np.triu(A), True), id="right_upper_t"),
    Case("_linalg_extractdiag", lambda v: mx.sym.linalg.extractdiag(v["A"], offset=1), {"A": rnd(2, 3, 4)},
         lambda A: np.diagonal(A, 1, -2, -1).copy()),
    Case("_linalg_makediag", lambda v: mx.sym.linalg.makediag(v["A"], offset=-1), {"A": rnd(2, 3)},
         lambda A: _makediag(A, -1)),
    Case("_linalg_makediag", lambda v: mx.sym.linalg.makediag(v["A"]), {"A": rnd(3)}, lambda A: np.diag(A),
         id="vector"),
    Case("_linalg_sumlogdiag", lambda v: mx.sym.linalg.sumlogdiag(v["A"]), {"A": _spd},
         lambda A: np.log(np.diagonal(A, 0, -2, -1)).sum(axis=-1)),
]
