"""The convolution bias gradient, ``db[f] = dout[:, f].sum()`` over ``(N, OH, OW)``, serial and
split over the filters in parts (:mod:`symjit.kernels.cpu._parallel`); both add each filter's image sums in
image order, so they give the same bits. Re-exported by :mod:`symjit.kernels.cpu.conv`.

>>> import numpy as np
>>> dout = np.arange(24, dtype=np.float64).reshape(2, 3, 2, 2)
>>> db = np.empty(3)
>>> check_conv_bias_grad(dout, db)
>>> conv_bias_grad(dout, db)
>>> db
array([ 60.,  92., 124.])
"""
from __future__ import annotations

import numpy as np
from numba import uint64 as _u

from symjit.base import shape_str

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from ._parallel import part_range
from .gemm import check_arrays, need_ndim, need_shape

__all__ = ["check_conv_bias_grad", "conv_bias_grad", "conv_bias_grad_parts"]

_jit = njit(cache=True, nogil=True)


def check_conv_bias_grad(dout: np.ndarray, db: np.ndarray) -> None:
    """Validate :func:`conv_bias_grad`: ``dout`` 4-D ``(N, F, OH, OW)``, ``db`` ``(F,)``."""
    check_arrays("conv_bias_grad", dout=dout, db=db)
    need_ndim("conv_bias_grad", "dout", dout, 4)
    need_shape("conv_bias_grad", "db", db, (dout.shape[1],),
               f" (one value per channel of dout {shape_str(dout.shape)})")


@_jit
def _sum8(af, start, stop):
    """``sum(af[start:stop])`` with eight interleaved partial sums (vectorisable, fixed order)."""
    z = af[_u(start)] * 0
    s0, s1, s2, s3, s4, s5, s6, s7 = z, z, z, z, z, z, z, z
    q = start
    while q + 8 <= stop:
        s0 += af[_u(q)]
        s1 += af[_u(q + 1)]
        s2 += af[_u(q + 2)]
        s3 += af[_u(q + 3)]
        s4 += af[_u(q + 4)]
        s5 += af[_u(q + 5)]
        s6 += af[_u(q + 6)]
        s7 += af[_u(q + 7)]
        q += 8
    while q < stop:
        s0 += af[_u(q)]
        q += 1
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@_jit
def conv_bias_grad(dout, db):
    """Bias gradient ``db[f] = dout[:, f].sum()`` (over N, OH, OW); ``db`` overwritten."""
    n_, f_ = dout.shape[0], dout.shape[1]
    p = dout.shape[2] * dout.shape[3]
    df = dout.reshape(-1)
    for f in range(f_):
        db[f] = 0
    for n in range(n_):
        for f in range(f_):
            db[f] += _sum8(df, (n * f_ + f) * p, (n * f_ + f + 1) * p)


@_jit
def conv_bias_grad_parts(dout, db, part, parts, sync):
    """:func:`conv_bias_grad` of part ``part`` of ``parts`` even runs of the filters."""
    n_, f_ = dout.shape[0], dout.shape[1]
    p = dout.shape[2] * dout.shape[3]
    df = dout.reshape(-1)
    f0, f1 = part_range(part, parts, f_)
    for f in range(f0, f1):
        db[f] = 0
        for n in range(n_):
            db[f] += _sum8(df, (n * f_ + f) * p, (n * f_ + f + 1) * p)
