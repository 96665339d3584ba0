"""Per-matrix routines of the linalg factorisations (:mod:`symjit.ops.linalg_factor`): plain
functions over 3-D (batch, rows, columns) arrays and a batch index ``z``, wrapped per target like
the scalar bodies (``njit(inline='always')`` on the CPU, ``cuda.jit(device=True)`` on CUDA), so
the target's loop runs one matrix per iteration or thread (:mod:`symjit.lower.linalg`). They
allocate nothing: scratch comes from planned workspace buffers.

Singular or non-positive-definite inputs give inf/NaN in the results (no exception can leave a
GPU thread); see docs/architecture.md.
"""
from __future__ import annotations

import math

__all__ = ["cholesky", "triangular_solve", "gauss_jordan_inverse", "lu_slogdet", "triangle_copy",
           "householder_lq", "jacobi_eigh"]


def cholesky(a, out, z, n, lower):
    """``out[z]``: the Cholesky factor of ``a[z]`` read from its lower (upper) triangle:
    L with A = L L^T (lower) or U = L^T with A = U^T U, the other triangle zero."""
    for i in range(n):
        for j in range(n):
            out[z, i, j] = 0.0
    for j in range(n):
        s = a[z, j, j]
        for q in range(j):
            f = out[z, j, q] if lower else out[z, q, j]
            s -= f * f
        d = math.sqrt(s)
        out[z, j, j] = d
        for i in range(j + 1, n):
            s = a[z, i, j] if lower else a[z, j, i]
            for q in range(j):
                s -= out[z, i, q] * out[z, j, q] if lower else out[z, q, i] * out[z, q, j]
            if lower:
                out[z, i, j] = s / d
            else:
                out[z, j, i] = s / d


def triangular_solve(a, b, out, z, m, n, transpose, rightside, lower, alpha):
    """``out[z]`` (m x n) solves ``op(T) X = alpha B`` (or ``X op(T) = alpha B`` with
    ``rightside``), T the lower (upper) triangle of ``a[z]``, op a transpose or not."""
    down = lower != transpose        # op(T) is lower triangular
    if not rightside:
        for c in range(n):
            for step in range(m):
                r = step if down else m - 1 - step
                s = alpha * b[z, r, c]
                lo = 0 if down else r + 1
                hi = r if down else m
                for q in range(lo, hi):
                    s -= (a[z, q, r] if transpose else a[z, r, q]) * out[z, q, c]
                out[z, r, c] = s / (a[z, r, r] if transpose else a[z, r, r])
    else:
        # X op(T) = alpha B, row by row: op(T)^T x^T = alpha b^T, op(T)^T lower when op(T) is upper
        for r in range(m):
            for step in range(n):
                i = n - 1 - step if down else step
                s = alpha * b[z, r, i]
                lo = i + 1 if down else 0
                hi = n if down else i
                for q in range(lo, hi):
                    s -= (a[z, i, q] if transpose else a[z, q, i]) * out[z, r, q]
                out[z, r, i] = s / (a[z, i, i] if transpose else a[z, i, i])


def gauss_jordan_inverse(a, out, w, z, n):
    """``out[z]`` = inverse of ``a[z]`` by Gauss-Jordan elimination with partial pivoting in the
    scratch ``w[z]``."""
    for i in range(n):
        for j in range(n):
            w[z, i, j] = a[z, i, j]
            out[z, i, j] = 1.0 if i == j else 0.0
    for c in range(n):
        p = c
        best = abs(w[z, c, c])
        for r in range(c + 1, n):
            if abs(w[z, r, c]) > best:
                best = abs(w[z, r, c])
                p = r
        if p != c:
            for j in range(n):
                t = w[z, p, j]
                w[z, p, j] = w[z, c, j]
                w[z, c, j] = t
                t = out[z, p, j]
                out[z, p, j] = out[z, c, j]
                out[z, c, j] = t
        d = w[z, c, c]
        for j in range(n):
            w[z, c, j] = w[z, c, j] / d
            out[z, c, j] = out[z, c, j] / d
        for r in range(n):
            if r != c:
                f = w[z, r, c]
                if f != 0.0:
                    for j in range(n):
                        w[z, r, j] -= f * w[z, c, j]
                        out[z, r, j] -= f * out[z, c, j]


def lu_slogdet(a, w, z, n, sign, logabs, zi):
    """``sign[zi]`` and ``logabs[zi]`` of det(``a[z]``) from an LU factorisation with partial
    pivoting in the scratch ``w[z]`` (sign 0 and logabs -inf for a singular matrix)."""
    for i in range(n):
        for j in range(n):
            w[z, i, j] = a[z, i, j]
    sgn = 1.0
    acc = 0.0
    for c in range(n):
        p = c
        best = abs(w[z, c, c])
        for r in range(c + 1, n):
            if abs(w[z, r, c]) > best:
                best = abs(w[z, r, c])
                p = r
        if best == 0.0:
            sgn = 0.0
            acc = -math.inf
            break
        if p != c:
            sgn = -sgn
            for j in range(n):
                t = w[z, p, j]
                w[z, p, j] = w[z, c, j]
                w[z, c, j] = t
        d = w[z, c, c]
        if d < 0.0:
            sgn = -sgn
        acc += math.log(abs(d))
        for r in range(c + 1, n):
            f = w[z, r, c] / d
            for j in range(c + 1, n):
                w[z, r, j] -= f * w[z, c, j]
    sign[zi] = sgn
    logabs[zi] = acc


def triangle_copy(mat, vec, z, n, k, lower, to_vec):
    """Between the triangle of ``mat[z]`` (n x n) at diagonal offset ``k`` and ``vec[z]``: the
    lower triangle (k < 0, or k == 0 and ``lower``) row by row, else the upper one column by
    column (MXNet's packed order). ``to_vec`` reads the matrix; otherwise the matrix is written,
    zeros outside the triangle."""
    use_lower = k < 0 or (k == 0 and lower)
    off = -k if k < 0 else k
    if not to_vec:
        for i in range(n):
            for j in range(n):
                mat[z, i, j] = 0.0
    t = 0
    for outer in range(off, n):
        for inner in range(outer - off + 1):
            i = outer if use_lower else inner
            j = inner if use_lower else outer
            if to_vec:
                vec[z, t] = mat[z, i, j]
            else:
                mat[z, i, j] = vec[z, t]
            t += 1


def householder_lq(a, q, lo, w, v, z, m, n):
    """A = L Q for ``a[z]`` (m x n, m <= n) with Householder reflections as LAPACK's gelqf
    (L's diagonal is minus the sign of each pivot times the row norm): ``lo[z]`` (m x m) the
    lower triangular L, ``q[z]`` (m x n) with orthonormal rows; scratch ``w[z]``, ``v[z]``."""
    for i in range(m):
        for j in range(n):
            w[z, i, j] = a[z, i, j]
            v[z, i, j] = 0.0
    for i in range(m):
        rest = 0.0                  # LAPACK's dlarfg: no reflection when the row is done already
        for j in range(i + 1, n):
            rest += w[z, i, j] * w[z, i, j]
        alpha = w[z, i, i]
        vv = 0.0
        if rest > 0.0:
            norm = math.sqrt(alpha * alpha + rest)
            beta = -norm if alpha >= 0.0 else norm
            for j in range(i, n):
                v[z, i, j] = w[z, i, j]
            v[z, i, i] = alpha - beta
            for j in range(i, n):
                vv += v[z, i, j] * v[z, i, j]
            for r in range(i, m):
                d = 0.0
                for j in range(i, n):
                    d += w[z, r, j] * v[z, i, j]
                f = 2.0 * d / vv
                for j in range(i, n):
                    w[z, r, j] -= f * v[z, i, j]
    for i in range(m):
        for j in range(m):
            lo[z, i, j] = w[z, i, j] if j <= i else 0.0
        for j in range(n):
            q[z, i, j] = 1.0 if i == j else 0.0
    for step in range(m):           # Q = [I 0] H_{m-1} ... H_0
        i = m - 1 - step
        vv = 0.0
        for j in range(i, n):
            vv += v[z, i, j] * v[z, i, j]
        if vv > 0.0:
            for r in range(m):
                d = 0.0
                for j in range(i, n):
                    d += q[z, r, j] * v[z, i, j]
                f = 2.0 * d / vv
                for j in range(i, n):
                    q[z, r, j] -= f * v[z, i, j]


def jacobi_eigh(a, u, lam, w, vec, z, n):
    """Eigenvalues (ascending, ``lam[z]``) and eigenvectors (the rows of ``u[z]``, each with its
    largest-magnitude entry positive) of the symmetric ``a[z]`` by cyclic Jacobi rotations in the
    scratch ``w[z]`` and ``vec[z]``."""
    for i in range(n):
        for j in range(n):
            w[z, i, j] = 0.5 * (a[z, i, j] + a[z, j, i])
            vec[z, i, j] = 1.0 if i == j else 0.0
    for _sweep in range(60):
        off = 0.0
        total = 0.0
        for i in range(n):
            for j in range(n):
                total += w[z, i, j] * w[z, i, j]
                if i != j:
                    off += w[z, i, j] * w[z, i, j]
        if off <= 1e-30 * total or off == 0.0:
            break
        for p in range(n - 1):
            for r in range(p + 1, n):
                apq = w[z, p, r]
                if apq == 0.0:
                    continue
                theta = (w[z, r, r] - w[z, p, p]) / (2.0 * apq)
                t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
                if theta < 0.0:
                    t = -t
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(n):
                    x, y = w[z, k, p], w[z, k, r]
                    w[z, k, p] = c * x - s * y
                    w[z, k, r] = s * x + c * y
                for k in range(n):
                    x, y = w[z, p, k], w[z, r, k]
                    w[z, p, k] = c * x - s * y
                    w[z, r, k] = s * x + c * y
                for k in range(n):
                    x, y = vec[z, k, p], vec[z, k, r]
                    vec[z, k, p] = c * x - s * y
                    vec[z, k, r] = s * x + c * y
    for i in range(n):              # selection order by eigenvalue; rows of u are eigenvectors
        lam[z, i] = w[z, i, i]
    for i in range(n):
        best = i
        for j in range(i + 1, n):
            if lam[z, j] < lam[z, best]:
                best = j
        t = lam[z, i]
        lam[z, i] = lam[z, best]
        lam[z, best] = t
        for k in range(n):
            x = vec[z, k, i]
            vec[z, k, i] = vec[z, k, best]
            vec[z, k, best] = x
    for i in range(n):
        big = 0
        for k in range(n):
            if abs(vec[z, k, i]) > abs(vec[z, big, i]):
                big = k
        f = -1.0 if vec[z, big, i] < 0.0 else 1.0
        for k in range(n):
            u[z, i, k] = f * vec[z, k, i]
