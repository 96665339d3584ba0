"""Convolutions over small planes as per-image im2col and register-tile GEMMs (float32).

im2col + one BLAS GEMM per block of images left LeNet's conv2 (50 filters 5 x 5 over 20 x 12 x 12
images, 8 x 8 outputs) with serial copies around a two-thread GEMM: the filter-major transposes and
col2im took as long as the product. The direct tiles of :mod:`~symjit.kernels.cpu.conv_vec`
compute every position of a padded row, and at 12 x 12 inputs only 64 of 144 are outputs. Here
each image is a work item: its columns ``(K, P)`` (``K = C*KH*KW``, ``P = OH*OW``, at least
16) are written by :func:`~symjit.kernels.cpu.im2col._im2col_block` into a
slice of the scratch that stays in L2, and :mod:`~symjit.kernels.cpu.conv_vec`'s ``MR x NR`` tile
(a GEMM when its window is one tap, :func:`~symjit.kernels.cpu.conv_vec.tile_gemm`) multiplies
them:

* forward: ``y (F, P) = w (F, K) @ cols``, ``MR`` filters by ``NR`` positions, the image's
  output written NCHW (one image's filter-major order);
* data gradient: ``dcols (K, P) = w.T @ dout[n]`` (``dout`` read in place, ``w`` through its
  strides), then col2im into ``dx[n]``;
* weight gradient: ``dw.T (K, F) += cols @ dout[n].T``, ``MR`` rows of ``cols`` by ``NR`` filters
  (the image's output gradient transposed into ``(P, F16)``, ``F16`` the filters rounded up to 16),
  a partial sum per part, the parts added into ``dw`` at the end.

The batch is cut into :data:`~symjit.kernels.cpu.conv_shapes.SMALL_CHUNKS` parts (fewer for a
smaller batch), each with its own slice of the scratch
(:func:`~symjit.kernels.cpu.conv_shapes.small_layout` elements). The compiler picks these kernels
per shape (:func:`~symjit.kernels.cpu.conv_small_rules.prefers_small`; figures in
``docs/performance.md``, "Register tiles as GEMMs: small planes, strided and 1x1 layers").

>>> import numpy as np
>>> from symjit.kernels.cpu.conv import check_conv2d, conv2d_cols_shape
>>> x = np.arange(2 * 36, dtype=np.float32).reshape(2, 1, 6, 6)
>>> w = np.ones((3, 1, 3, 3), np.float32)
>>> out = np.empty((2, 3, 4, 4), np.float32)
>>> geometry = ((1, 1), (0, 0), (1, 1), 1)
>>> cols = np.empty(conv2d_cols_shape("forward_small", x.shape, w.shape, out.shape, 1), np.float32)
>>> check_conv2d("forward_small", x, w, out, cols, *geometry)
>>> from symjit.parts import whole_call
>>> conv2d_forward_small_parts(x, w, out, cols, *geometry, *whole_call())
>>> out[0, 2, 0].tolist()
[63.0, 72.0, 81.0, 90.0]
"""
from __future__ import annotations

import numpy as np

from symjit.jitext import install

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from ._parallel import part_range
from .conv_shapes import SMALL_CHUNKS, small_layout, small_rows_layout, small_rows_plan
from .conv_vec import MR, tile_gemm
from .im2col import _col2im_block, _im2col_block, _im2col_rows, _im2col_stride2, _split_columns
from .spin import barrier

__all__ = ["conv2d_forward_small_parts", "conv2d_backward_data_small_parts",
           "conv2d_backward_weight_small_parts", "conv2d_forward_rows_small_parts",
           "conv2d_backward_weight_rows_small_parts"]

_jit = njit(cache=True, nogil=True, error_model="numpy")
install()   # the layout helper (conv_shapes) is called by the kernels below


@_jit
def _parts(n):
    """The parts a batch of ``n`` images is cut into."""
    return min(n, SMALL_CHUNKS)


@_jit
def _columns(x, cf, n, k, p, kh_, kw_, oh_, ow_, stride, pad, dilate):
    """Image ``n``'s im2col ``(K, P)`` at the start of ``cf``; returns it."""
    cols2 = cf[:k * p].reshape(k, p)
    _im2col_block(x, cols2, n, kh_, kw_, oh_, ow_, stride, pad, dilate)
    return cols2


@_jit
def conv2d_forward_small_parts(x, w, out, cols, stride, pad, dilate, groups, part, nparts, sync):
    """``out = conv(x, w)`` (float32, one group, ``OH*OW >= 16``), image by image:
    im2col, then ``w (F, K) @ cols (K, P)`` in register tiles, written NCHW (through the scratch
    when there are fewer filters than a tile's rows); the slices of part ``part`` of ``nparts``."""
    n_ = x.shape[0]
    f_, _, kh_, kw_ = w.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    k, p = x.shape[1] * kh_ * kw_, oh_ * ow_
    per = small_layout(0, x.shape[1], f_, kh_, kw_, p)
    wf, of = w.ravel(), out.reshape(-1)
    parts = _parts(n_)
    t0, t1 = part_range(part, nparts, parts)
    for t in range(t0, t1):
        cf = cols[0, t * per:(t + 1) * per]
        y = cf[k * p:]
        n0, n1 = part_range(t, parts, n_)
        for n in range(n0, n1):
            c2 = _columns(x, cf, n, k, p, kh_, kw_, oh_, ow_, stride, pad, dilate).reshape(-1)
            if f_ >= MR:   # the tiles fit the image's output (tile_gemm): written in place
                tile_gemm(wf, 0, k, 1, c2, 0, p, f_, p, k, of, n * f_ * p, p, True)
            else:          # fewer filters than a tile's rows: through the scratch's padded rows
                tile_gemm(wf, 0, k, 1, c2, 0, p, f_, p, k, y, 0, p, True)
                of[n * f_ * p:(n + 1) * f_ * p] = y[:f_ * p]


@_jit
def conv2d_forward_rows_small_parts(x, w, out, cols, stride, pad, dilate, groups, part, nparts, sync):
    """``out = conv(x, w)`` (float32, one group, ``OW >= 16``, at least ``MR`` filters) for images
    whose columns do not fit L2 (a strided stem): each work item is a chunk of
    :func:`~symjit.kernels.cpu.conv_shapes.small_rows` output rows of one image, its im2col ``(K,
    rows*OW)`` written into the part's slice of ``cols`` (stride 2: each input row split into even
    and odd columns once, ``im2col._im2col_stride2``), then ``w (F, K) @ cols`` in register tiles
    straight into those rows of the NCHW output. The items are cut into at most
    :data:`~symjit.kernels.cpu.conv_shapes.SMALL_CHUNKS` slices, those of part ``part`` of ``nparts``
    run here."""
    n_ = x.shape[0]
    f_, _, kh_, kw_ = w.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    k, p = x.shape[1] * kh_ * kw_, oh_ * ow_
    rows, chunks, parts = small_rows_plan(n_, k, oh_, ow_)
    items = n_ * chunks
    per = small_rows_layout(True, k, f_, rows, ow_)
    wf, of, xf = w.ravel(), out.reshape(-1), x.reshape(-1)
    split = _split_columns(stride, dilate, kw_)
    t0, t1 = part_range(part, nparts, parts)
    for t in range(t0, t1):
        cf = cols[0, t * per:(t + 1) * per]
        buf = np.empty(2 * (ow_ + kw_), x.dtype)
        i0, i1 = part_range(t, parts, items)
        for it in range(i0, i1):
            n, oh0 = it // chunks, (it % chunks) * rows
            pc = min(rows, oh_ - oh0) * ow_
            _chunk_columns(xf, cf, x.shape, n, oh0, pc // ow_, kh_, kw_, oh_, ow_, stride, pad, dilate,
                           split, buf)
            tile_gemm(wf, 0, k, 1, cf, 0, pc, f_, pc, k, of, n * f_ * p + oh0 * ow_, p, True)


@_jit
def _chunk_columns(xf, cf, x_shape, n, oh0, nr, kh_, kw_, oh_, ow_, stride, pad, dilate, split, buf):
    """im2col ``(K, nr*OW)`` of output rows ``oh0 .. oh0+nr-1`` of image ``n`` at the start of ``cf``."""
    pc = nr * ow_
    if split:
        _im2col_stride2(xf, cf, n, x_shape, kh_, kw_, oh0, nr, ow_, pad, 0, pc, buf)
    else:
        for r in range(x_shape[1] * kh_ * kw_):
            _im2col_rows(xf, cf, r * pc, r, n, oh0, nr, x_shape, kh_, kw_, oh_, ow_, stride, pad, dilate)


@_jit
def _weight_rows_slices(dout, x, cols, kh_, kw_, stride, pad, dilate, parts, per, f16, rows, chunks, t0, t1):
    """Each of slices ``t0 .. t1``'s ``dw.T`` sum over its chunks of output rows, at ``K*PC + PC*F16``
    in its slice of ``cols`` (``PC = rows * OW``)."""
    n_ = x.shape[0]
    f_, oh_, ow_ = dout.shape[1], dout.shape[2], dout.shape[3]
    k, p = x.shape[1] * kh_ * kw_, oh_ * ow_
    items = n_ * chunks
    pcmax = rows * ow_
    df, xf = dout.reshape(-1), x.reshape(-1)
    split = _split_columns(stride, dilate, kw_)
    for t in range(t0, t1):
        cf = cols[0, t * per:(t + 1) * per]
        dt = cf[k * pcmax:k * pcmax + pcmax * f16]
        acc = cf[k * pcmax + pcmax * f16:]
        buf = np.empty(2 * (ow_ + kw_), x.dtype)
        i0, i1 = part_range(t, parts, items)
        for it in range(i0, i1):
            n, oh0 = it // chunks, (it % chunks) * rows
            pc = min(rows, oh_ - oh0) * ow_
            _transpose_positions(df, n * f_ * p + oh0 * ow_, f_, p, pc, f16, dt)
            _chunk_columns(xf, cf, x.shape, n, oh0, pc // ow_, kh_, kw_, oh_, ow_, stride, pad, dilate,
                           split, buf)
            tile_gemm(cf, 0, pc, 1, dt, 0, f16, k, f16, pc, acc, 0, f16, it == i0)


@_jit
def conv2d_backward_weight_rows_small_parts(dout, x, dw, cols, stride, pad, dilate, groups, part, nparts,
                                            sync):
    """Weight gradient ``dw`` (overwritten) of :func:`conv2d_forward_rows_small_parts`'s
    convolution: per slice of the chunks of output rows, ``dw.T (K, F16) += cols (K, PC) @
    dout chunk.T (PC, F16)`` in register tiles; then, once every part has its slices' sums
    (:func:`~symjit.kernels.cpu.spin.barrier`), the slices' sums added into ``dw``, each part a
    run of its rows."""
    f_, _, kh_, kw_ = dw.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    k = x.shape[1] * kh_ * kw_
    f16 = (f_ + 15) // 16 * 16
    rows, chunks, parts = small_rows_plan(x.shape[0], k, oh_, ow_)
    per = small_rows_layout(False, k, f_, rows, ow_)
    t0, t1 = part_range(part, nparts, parts)
    _weight_rows_slices(dout, x, cols, kh_, kw_, stride, pad, dilate, parts, per, f16, rows, chunks, t0, t1)
    if not barrier(sync, nparts):
        return
    pc = rows * ow_
    _add_parts(cols[0], per, k * pc + pc * f16, parts, f16, dw.reshape(f_, k), part, nparts)


@_jit
def conv2d_backward_data_small_parts(dout, w, dx, cols, stride, pad, dilate, groups, part, nparts, sync):
    """Data gradient ``dx`` (overwritten) of :func:`conv2d_forward_small_parts`'s convolution,
    image by image: ``dcols = w.T @ dout[n]`` in register tiles (``dout`` read in place), col2im;
    the slices of part ``part`` of ``nparts``."""
    n_ = dx.shape[0]
    f_, _, kh_, kw_ = w.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    k, p = dx.shape[1] * kh_ * kw_, oh_ * ow_
    per = small_layout(1, dx.shape[1], f_, kh_, kw_, p)
    wf, df = w.ravel(), dout.reshape(-1)
    parts = _parts(n_)
    t0, t1 = part_range(part, nparts, parts)
    for t in range(t0, t1):
        dc = cols[0, t * per:(t + 1) * per]
        dcols2 = dc[:k * p].reshape(k, p)
        n0, n1 = part_range(t, parts, n_)
        for n in range(n0, n1):
            tile_gemm(wf, 0, 1, k, df, n * f_ * p, p, k, p, f_, dc, 0, p, True)
            _col2im_block(dcols2, dx, n, kh_, kw_, oh_, ow_, stride, pad, dilate)


@_jit
def _transpose_positions(df, base, f_, p, pc, f16, dt):
    """``dt[q*F16 + f] = df[base + f*p + q]`` for ``q < pc`` (one image's output gradient, or a
    chunk of it; filters ``p`` apart), zero for ``F <= f < F16``."""
    for q in range(pc):
        row = q * f16
        for f in range(f_):
            dt[row + f] = df[base + f * p + q]
        for f in range(f_, f16):
            dt[row + f] = 0.0


@_jit
def _weight_slices(dout, x, cols, kh_, kw_, stride, pad, dilate, parts, per, f16, t0, t1):
    """Each of slices ``t0 .. t1``'s ``dw.T`` partial sum, at ``K*P + P*F16`` in its slice of ``cols``."""
    n_ = x.shape[0]
    f_, oh_, ow_ = dout.shape[1], dout.shape[2], dout.shape[3]
    k, p = x.shape[1] * kh_ * kw_, oh_ * ow_
    df = dout.reshape(-1)
    for t in range(t0, t1):
        cf = cols[0, t * per:(t + 1) * per]
        dt = cf[k * p:k * p + p * f16]
        acc = cf[k * p + p * f16:]
        n0, n1 = part_range(t, parts, n_)
        for n in range(n0, n1):
            _transpose_positions(df, n * f_ * p, f_, p, p, f16, dt)
            c2 = _columns(x, cf, n, k, p, kh_, kw_, oh_, ow_, stride, pad, dilate).reshape(-1)
            tile_gemm(c2, 0, p, 1, dt, 0, f16, k, f16, p, acc, 0, f16, n == n0)


@_jit
def _add_parts(cf, per, at, parts, f16, dw2, part, nparts):
    """``dw2[f, k] = sum over slices t of cf[t*per + at + k*F16 + f]`` (the slices' ``dw.T``), for
    the rows ``k`` of part ``part`` of ``nparts``."""
    f_, k_ = dw2.shape
    k0, k1 = part_range(part, nparts, k_)
    for kk in range(k0, k1):
        row = at + kk * f16
        for f in range(f_):
            dw2[f, kk] = cf[row + f]
        for t in range(1, parts):
            for f in range(f_):
                dw2[f, kk] += cf[t * per + row + f]


@_jit
def conv2d_backward_weight_small_parts(dout, x, dw, cols, stride, pad, dilate, groups, part, nparts, sync):
    """Weight gradient ``dw`` (overwritten) of :func:`conv2d_forward_small_parts`'s
    convolution: per slice of the batch, ``dw.T (K, F16) += cols (K, P) @ dout[n].T (P, F16)`` in
    register tiles, image by image; then, once every part has its slices' sums, those added into
    ``dw``."""
    n_ = x.shape[0]
    f_, _, kh_, kw_ = dw.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    k, p = x.shape[1] * kh_ * kw_, oh_ * ow_
    f16 = (f_ + 15) // 16 * 16
    per = small_layout(2, x.shape[1], f_, kh_, kw_, p)
    parts = _parts(n_)
    t0, t1 = part_range(part, nparts, parts)
    _weight_slices(dout, x, cols, kh_, kw_, stride, pad, dilate, parts, per, f16, t0, t1)
    if not barrier(sync, nparts):
        return
    _add_parts(cols[0], per, k * p + p * f16, parts, f16, dw.reshape(f_, k), part, nparts)
