"""BLAS's general matrix product with its whole interface, callable from numba-compiled kernels.

``np.dot(a, b, out)`` in a numba kernel always overwrites ``out`` and takes whole contiguous
matrices. :func:`xgemm` is the same BLAS routine numba's ``np.dot`` calls (through numba's
``numba_xxgemm`` helper, so a kernel that calls it caches like one that calls ``np.dot``) with the
rest of its arguments: ``alpha``/``beta`` (accumulate into ``c``), leading dimensions (a block of
columns of a wider matrix) and transposes. The matrices are flat 1-D arrays with element offsets,
in row-major terms: nothing is checked, so the caller computes offsets and leading dimensions
from shapes it has validated (numba does no bounds checks).

>>> import numba, numpy as np
>>> @numba.njit
... def acc(a, b, c):   # c += a @ b.T, a (2, 3), b (2, 3), c (2, 2)
...     xgemm(0, 1, 2, 2, 3, 1.0, a.reshape(-1), 0, 3, b.reshape(-1), 0, 3, 1.0, c.reshape(-1), 0, 2)
>>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> c = np.ones((2, 2), np.float32)
>>> acc(a, a, c)
>>> c
array([[ 6., 15.],
       [15., 51.]], dtype=float32)
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit

__all__ = ["xgemm"]

_CHAR = ir.IntType(8)
_VOIDP = _CHAR.as_pointer()


@njit(cache=True, nogil=True)
def xgemm(ta, tb, m, n, k, alpha, a, ia, lda, b, ib, ldb, beta, c, ic, ldc):
    """``C = alpha * op(A) @ op(B) + beta * C`` in row-major terms, on flat arrays of one float dtype.

    ``C`` is ``m x n`` starting at ``c[ic]`` with row stride ``ldc``; ``op(A)`` is ``m x k``: ``A``
    starts at ``a[ia]`` with row stride ``lda``, stored ``m x k`` (``ta == 0``) or ``k x m``
    (``ta != 0``); likewise ``op(B)`` ``k x n`` from ``b[ib]``. ``beta == 0`` overwrites ``C``
    (BLAS never reads it then); ``k == 0`` makes ``C = beta * C``; an empty ``C`` is left alone.
    """
    if m <= 0 or n <= 0:
        return
    # BLAS rejects a leading dimension below 1 even where no element is read (k == 0).
    _blas_gemm(ta, tb, m, n, k, alpha, a, ia, max(lda, 1), b, ib, max(ldb, 1), beta, c, ic, ldc)


@intrinsic
def _blas_gemm(typingctx, ta, tb, m, n, k, alpha, a, ia, lda, b, ib, ldb, beta, c, ic, ldc):
    """:func:`xgemm`'s call of ``numba_xxgemm``: numba's wrapper of scipy's BLAS ``?gemm``."""
    arrays = (a, b, c)
    if not all(isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" for t in arrays):
        return None
    dtype = c.dtype
    if dtype not in (types.float32, types.float64) or a.dtype != dtype or b.dtype != dtype:
        return None
    sig = types.void(ta, tb, m, n, k, alpha, a, ia, lda, b, ib, ldb, beta, c, ic, ldc)

    def codegen(context, builder, signature, args):
        from numba.np.linalg import check_blas_return, ensure_blas
        ensure_blas()
        intp = context.get_value_type(types.intp)
        tys = signature.args

        def integer(i):
            return context.cast(builder, args[i], tys[i], types.intp)

        def scalar(i):   # BLAS takes alpha and beta by pointer
            value = context.cast(builder, args[i], tys[i], dtype)
            return builder.bitcast(cgutils.alloca_once_value(builder, value), _VOIDP)

        def pointer(i):   # array i at offset i + 1
            data = context.make_array(tys[i])(context, builder, args[i]).data
            return builder.bitcast(builder.gep(data, [integer(i + 1)]), _VOIDP)

        def trans(i):
            flag = builder.icmp_signed("!=", integer(i), ir.Constant(intp, 0))
            return builder.select(flag, ir.Constant(_CHAR, ord("t")), ir.Constant(_CHAR, ord("n")))

        fnty = ir.FunctionType(ir.IntType(32), [_CHAR, _CHAR, _CHAR, intp, intp, intp, _VOIDP, _VOIDP,
                                                intp, _VOIDP, intp, _VOIDP, _VOIDP, intp])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxgemm")
        kind = ir.Constant(_CHAR, ord("s" if dtype == types.float32 else "d"))
        # BLAS is column-major: the row-major C = op(A) @ op(B) is its C.T = op(B).T @ op(A).T.
        res = builder.call(fn, (kind, trans(1), trans(0), integer(3), integer(2), integer(4), scalar(5),
                                pointer(9), integer(11), pointer(6), integer(8), scalar(12), pointer(13),
                                integer(15)))
        check_blas_return(context, builder, res)
        return context.get_dummy_value()
    return sig, codegen
