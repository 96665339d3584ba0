"""Weight gradients' long float32 sums through BLAS, in blocks of positions.

A weight gradient sums over every position of the batch (``N*OH*OW`` products per weight, or
Winograd's tiles): as one GEMM, BLAS would sum each output's products in one float32 chain, up to
its own block of a few hundred terms, whose rounding error grows with its length. The kernels
(:func:`~symjit.kernels.cpu.conv.conv2d_backward_weight`,
:func:`~symjit.kernels.cpu.conv_winograd.conv2d_backward_weight_winograd_parallel`) cut the
positions into even blocks of at most :func:`~symjit.kernels.cpu.conv_shapes.sum_block` columns
(64 where the GEMM is large), one GEMM per block; BLAS adds the blocks' products into the float32
product (``beta = 1``) for up to :data:`~symjit.kernels.cpu.conv_shapes.SUM_GROUP` blocks; then,
where the scratch holds it (:func:`~symjit.kernels.cpu.conv_shapes.sum_length`), the product is
added into a compensated float32 sum (Neumaier's variant of Kahan's) and the next block starts
from 0 (:func:`fold`). The scratch ``sums`` is ``[product (m), sum (m), compensation (m)]``, or
the product alone.

float64 kernels take one block per call (their chains are 2^29 times more precise).

>>> import numpy as np
>>> sums = np.zeros(3, np.float32)   # one output, with room for the compensated sum
>>> since, folded = 0, 0
>>> for part in [1e8] + [0] * 15 + [3] + [0] * 15 + [-1e8]:   # 33 blocks' products
...     sums[0] = part if since == 0 else sums[0] + np.float32(part)
...     since, folded = fold(sums, 1, 0, 1, since, folded)
>>> finish(sums, 1, since, folded)
>>> float(sums[0])   # a float32 running sum of the blocks gives 0.0
3.0
"""
from __future__ import annotations

from symjit.jitext import install

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from .conv_shapes import SUM_GROUP, SUM_ROWS, sum_block

__all__ = ["blocks_of", "rows_of", "fold", "finish"]

_jit = njit(cache=True, nogil=True)
install()   # sum_block (conv_shapes) is called by the kernels below


@_jit
def blocks_of(q, outputs, itemsize):
    """How many even blocks a GEMM of ``outputs`` elements cuts its ``q`` positions into (block
    ``i`` is ``[i * q // b, (i + 1) * q // b)``): one where the data is float64 (``itemsize``)."""
    if itemsize == 8:
        return 1
    block = sum_block(outputs)
    return max(1, (q + block - 1) // block)


@_jit
def _add(acc, comp, i, x):
    """``acc[i] += x`` with the rounding error kept in ``comp[i]`` (Neumaier)."""
    s = acc[i]
    t = s + x
    if abs(s) >= abs(x):
        comp[i] += (s - t) + x
    else:
        comp[i] += (x - t) + s
    acc[i] = t


@_jit
def rows_of(rows, cols):
    """Rows per GEMM of a ``rows x cols`` product: as many as keep their part of the product within
    :data:`~symjit.kernels.cpu.conv_shapes.SUM_ROWS` elements (at least 16, the whole product if it
    fits), which then stays in the cache while BLAS adds the blocks of positions into it."""
    if rows * cols <= SUM_ROWS:
        return rows
    return max(16, SUM_ROWS // cols // 16 * 16)


@_jit
def fold(sums, m, lo, hi, since, folded):
    """After one more block's GEMM into ``sums[lo:hi]`` (of the product ``sums[:m]``; ``beta = 0``
    when ``since == 0``, else 1): when :data:`SUM_GROUP` blocks have gone in and ``sums`` has room
    for the compensated sum, add the product's ``[lo, hi)`` into it. Returns the new ``(since,
    folded)``: blocks in the product since the last fold, folds so far (the same sequence for
    every part of the product that runs through the same blocks)."""
    since += 1
    if since < SUM_GROUP or sums.shape[0] < 3 * m:
        return since, folded
    part, acc, comp = sums[lo:hi], sums[m + lo:m + hi], sums[2 * m + lo:2 * m + hi]
    if folded == 0:
        acc[:] = part
        comp[:] = 0
    else:
        for i in range(hi - lo):
            _add(acc, comp, i, part[i])
    return 0, folded + 1


@_jit
def finish(sums, m, since, folded):
    """Leave the whole sum in ``sums[:m]``: the compensated sum plus the product's last blocks."""
    if folded == 0:
        return
    part, acc, comp = sums[:m], sums[m:2 * m], sums[2 * m:3 * m]
    for i in range(m):
        if since > 0:
            _add(acc, comp, i, part[i])
        part[i] = acc[i] + comp[i]
