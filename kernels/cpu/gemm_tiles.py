"""float32 GEMMs as :mod:`~symjit.kernels.cpu.conv_vec`'s register tile in parts on the host's
threads (:mod:`symjit.parts`), for the FullyConnected layers and 2-D ``dot`` products of programs
whose convolutions already run there (the compiler's choice, ``lower/cpu/nn.py``): there a BLAS
GEMM woke OpenBLAS's own threads, which then spun on the core the next convolution or pooling
kernel needed, ``docs/performance.md``, "GEMMs on numba's threads in convolution nets".

* :func:`gemm_nn_tiles_parts` ``out = a @ b``, :func:`gemm_tn_tiles_parts` ``out = a.T @ b``:
  the tile reads ``a`` in place through its strides and ``b`` by rows.
* :func:`gemm_nt_tiles_parts` ``out = a @ b.T`` (a FullyConnected forward): the tile needs
  the output's columns contiguous in its second operand, so it computes ``out.T = b @ a.T`` from
  a transposed copy of ``a`` into ``scratch`` and transposes the result back (both copies split
  over the parts, which meet at a barrier between the three phases).

Each needs at least ``MR`` rows and 16 columns in the product the tile computes (the compiler
asks :func:`~symjit.kernels.cpu.gemm_shapes.prefers_gemm_tiles`): its last tiles then end at the
last row and column instead of running past them. The work is cut into row runs of whole tiles
(or column runs of whole vectors) shared among the parts, all in one part below
:data:`~symjit.threads.SPLIT_MIN` multiply-adds. Arrays are C-contiguous float32 of the shapes
given (the compiler's static shapes; nothing is checked here).

>>> import numpy as np
>>> a, b = np.ones((8, 3), np.float32), np.arange(48, dtype=np.float32).reshape(3, 16)
>>> out = np.empty((8, 16), np.float32)
>>> from symjit.parts import whole_call
>>> gemm_nn_tiles_parts(a, b, out, *whole_call())
>>> bool((out == a @ b).all())
True
"""
from __future__ import annotations

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from ._parallel import PARTS, SPLIT_MIN, part_range
from .conv_vec import MR, tile_gemm
from .spin import barrier

__all__ = ["gemm_nn_tiles_parts", "gemm_tn_tiles_parts", "gemm_nt_tiles_parts"]

_jit = njit(cache=True, nogil=True, error_model="numpy")


@_jit
def _split(a, ao, ars, acs, b, bo, bs, rows, cols, depth, out, oo, os, part, nparts):
    """``tile_gemm`` (``first``) of the whole product, cut into runs of rows (whole tiles, the last
    run the longest) or, when there are fewer row tiles than 16-column vectors over four, of
    columns (whole vectors): up to ``PARTS`` runs, one below ``SPLIT_MIN`` multiply-adds; this
    part's share of them (part ``part`` of ``nparts``)."""
    row_tiles, col_vecs = rows // MR, cols // 16
    parts = 1 if rows * cols * depth < SPLIT_MIN else PARTS
    if row_tiles >= col_vecs // 4:
        parts = min(parts, row_tiles)
        t0, t1 = part_range(part, nparts, parts)
        for t in range(t0, t1):
            r0 = t * row_tiles // parts * MR
            r1 = rows if t == parts - 1 else (t + 1) * row_tiles // parts * MR
            tile_gemm(a, ao + r0 * ars, ars, acs, b, bo, bs, r1 - r0, cols, depth, out, oo + r0 * os,
                      os, True)
    else:
        parts = min(parts, col_vecs)
        t0, t1 = part_range(part, nparts, parts)
        for t in range(t0, t1):
            c0 = t * col_vecs // parts * 16
            c1 = cols if t == parts - 1 else (t + 1) * col_vecs // parts * 16
            tile_gemm(a, ao, ars, acs, b, bo + c0, bs, rows, c1 - c0, depth, out, oo + c0, os, True)


@_jit
def _transpose(x, xt, part, nparts):
    """``xt = x.T`` of a 2-D ``x``, in 32-column strips, this part's share of them."""
    m, k = x.shape
    strips = (k + 31) // 32
    s0, s1 = part_range(part, nparts, strips)
    for s in range(s0, s1):
        k0 = s * 32
        k1 = min(k, k0 + 32)
        for i in range(m):
            for c in range(k0, k1):
                xt[c, i] = x[i, c]


@_jit
def gemm_nn_tiles_parts(a, b, out, part, nparts, sync):
    """``out (M, N) = a (M, K) @ b (K, N)``; part ``part`` of ``nparts``."""
    m, k = a.shape
    n = b.shape[1]
    _split(a.ravel(), 0, k, 1, b.ravel(), 0, n, m, n, k, out.ravel(), 0, n, part, nparts)


@_jit
def gemm_tn_tiles_parts(a, b, out, part, nparts, sync):
    """``out (K, N) = a (M, K).T @ b (M, N)`` (a FullyConnected weight gradient: ``dout.T @ x``)."""
    m, k = a.shape
    n = b.shape[1]
    _split(a.ravel(), 0, 1, k, b.ravel(), 0, n, k, n, m, out.ravel(), 0, n, part, nparts)


@_jit
def gemm_nt_tiles_parts(a, b, out, scratch, part, nparts, sync):
    """``out (M, N) = a (M, K) @ b (N, K).T`` through ``scratch``
    (:func:`~symjit.kernels.cpu.gemm_shapes.gemm_nt_scratch` elements)."""
    m, k = a.shape
    n = b.shape[0]
    at = scratch[:k * m].reshape(k, m)
    ot = scratch[k * m:k * m + n * m].reshape(n, m)
    _transpose(a, at, part, nparts)
    if not barrier(sync, nparts):
        return
    _split(b.ravel(), 0, k, 1, at.ravel(), 0, m, n, m, k, ot.ravel(), 0, m, part, nparts)
    if not barrier(sync, nparts):
        return
    _transpose(ot, out, part, nparts)
