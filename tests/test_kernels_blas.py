"""``symjit.kernels.cpu.blas.xgemm`` against numpy: every transpose pair, offsets and leading
dimensions of sub-blocks, alpha/beta, and the empty and ``k == 0`` edges, in both float dtypes."""
from __future__ import annotations

import numba
import numpy as np
import pytest
from symjit.kernels.cpu.blas import xgemm


@numba.njit
def _call(ta, tb, m, n, k, alpha, a, ia, lda, b, ib, ldb, beta, c, ic, ldc):
    xgemm(ta, tb, m, n, k, alpha, a, ia, lda, b, ib, ldb, beta, c, ic, ldc)


def _embed(rng, mat, dtype, offset, ld):
    """``mat`` (r, q) inside a flat random array: row ``i`` at ``offset + i * ld`` (``ld >= q``)."""
    r, q = mat.shape
    flat = rng.standard_normal(offset + max(r - 1, 0) * ld + q + 3).astype(dtype)
    for i in range(r):
        flat[offset + i * ld:offset + i * ld + q] = mat[i]
    return flat


def _extract(flat, offset, ld, r, q):
    return np.stack([flat[offset + i * ld:offset + i * ld + q] for i in range(r)]) if r else np.zeros((0, q))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta", [0, 1])
@pytest.mark.parametrize("tb", [0, 1])
@pytest.mark.parametrize("beta", [0.0, 1.0, -0.5])
def test_xgemm_blocks_of_wider_matrices(dtype, ta, tb, beta):
    rng = np.random.default_rng(ta * 4 + tb * 2 + int(beta * 2) + 8)
    m, n, k, alpha = 5, 7, 4, 1.5
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    c0 = rng.standard_normal((m, n)).astype(dtype)
    if beta == 0.0:
        c0[:] = np.nan   # BLAS must not read C when beta is 0
    af = _embed(rng, a, dtype, 3, a.shape[1] + 2)
    bf = _embed(rng, b, dtype, 5, b.shape[1] + 1)
    cf = _embed(rng, c0, dtype, 2, n + 4)
    before = cf.copy()
    _call(ta, tb, m, n, k, alpha, af, 3, a.shape[1] + 2, bf, 5, b.shape[1] + 1, beta, cf, 2, n + 4)
    opa, opb = (a.T if ta else a).astype(np.float64), (b.T if tb else b).astype(np.float64)
    expect = alpha * opa @ opb + (beta * c0.astype(np.float64) if beta else 0)
    got = _extract(cf, 2, n + 4, m, n)
    np.testing.assert_allclose(got, expect, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
    untouched = np.ones(cf.shape, bool)   # C's padding columns and the rest of the array stay as they were
    for i in range(m):
        untouched[2 + i * (n + 4):2 + i * (n + 4) + n] = False
    np.testing.assert_array_equal(cf[untouched], before[untouched])


def test_xgemm_empty_and_zero_depth():
    a = np.ones(4, np.float32)
    c = np.full(6, 7.0, np.float32)
    _call(0, 0, 0, 3, 2, 1.0, a, 0, 2, a, 0, 3, 0.0, c, 0, 3)   # m == 0: nothing written
    _call(0, 0, 2, 0, 2, 1.0, a, 0, 2, a, 0, 0, 0.0, c, 0, 0)   # n == 0
    np.testing.assert_array_equal(c, 7.0)
    _call(0, 0, 2, 3, 0, 1.0, a, 0, 0, a, 0, 3, 0.5, c, 0, 3)   # k == 0: C = beta * C
    np.testing.assert_array_equal(c, 3.5)
    _call(0, 0, 2, 3, 0, 1.0, a, 0, 0, a, 0, 3, 0.0, c, 0, 3)
    np.testing.assert_array_equal(c, 0.0)
