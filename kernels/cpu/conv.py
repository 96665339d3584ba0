"""2-D convolution kernels (NCHW, weights ``(F, C/groups, KH, KW)``): forward, data/weight/bias grads.

Shape contract shared by every kernel here (validate with :func:`check_conv2d` first; Numba does no
bounds checks):

* ``x``/``dx``: ``(N, C, H, W)``; ``w``/``dw``: ``(F, C // groups, KH, KW)``; ``out``/``dout``:
  ``(N, F, OH, OW)`` with ``OH, OW = conv2d_output_size((H, W), (KH, KW), stride, pad, dilate)``;
  ``bias``/``db``: ``(F,)``; ``C`` and ``F`` divisible by ``groups``.
* ``stride``, ``pad``, ``dilate``: tuples of two ints ``(y, x)``, stride and dilate >= 1, pad >= 0
  (pad is symmetric, as MXNet's ``pad``).
* ``cols``: float scratch of shape ``conv2d_cols_shape(kind, ...)`` (or any ``(1, L)`` with ``L`` at
  least the ``max_elems=0`` size), same dtype as the data; its contents on entry do not matter and
  are garbage on exit.
* all arrays C-contiguous and of one dtype (float32 or float64).

How they compute (whole-batch im2col, one GEMM per pass and group): with ``K = C*KH*KW`` and
``P = OH*OW``, a block of ``B`` images is unrolled into ``cols (K, B*P)``; the forward pass is
``y (F, B*P) = W (F, K/groups) @ cols`` per group, the data gradient ``dcols = W.T @ dy`` followed by
col2im, the weight gradient ``dW.T = cols @ dy.T`` (in GEMMs over blocks of positions, 64 where
the weight is large, their products summed as :mod:`.sum_blocks` says, transposed into ``dW`` once),
where ``y``/``dy`` are in filter-major ("CNHW") order, so a transpose copy moves them from/to
NCHW; a block of one image needs none (its filter-major order is NCHW): the GEMMs read ``dout``
and write ``out`` in place (:func:`~symjit.kernels.cpu.blas.xgemm`). ``B`` is the whole batch
unless the scratch would exceed ``max_elems`` elements (the compiler picks it per shape with
:func:`conv2d_block_elems`; the default is :data:`CONV_SCRATCH_MAX`, 8 Mi elements = 32 MiB in
float32); then the batch is cut into blocks of as many images as fit (a kernel reads ``B`` back from
the length of ``cols``). When one image alone does not fit, :func:`conv2d_forward` takes blocks of
output rows of one image instead (:func:`conv2d_forward_rows`; its scratch then holds ``(K + F) * R *
OW`` elements for ``R`` rows), so im2col's block is still in the cache when the GEMM reads it.
Scratch size, in elements: ``(K + F) * B * P``, plus ``F * K/groups`` for the weight gradient's
transposed product (3x that over many positions: its compensated sum, :func:`sum_length`), plus
``F * N * P`` for :func:`conv2d_forward_cnhw`'s full output when ``B < N`` (the compiler then
calls :func:`conv2d_forward` instead, which writes NCHW block by block, see
:func:`conv2d_images_per_block`). LeNet at batch 64 (float32), as compiled:
conv1 0.21 MB (two images per block), conv2 2.4 MB (17 images).

:func:`conv2d_forward_cnhw` stops before the transpose and returns the filter-major result, so the
caller can fuse the transpose with the bias and an elementwise epilogue (the compiler's lowering
does). :func:`conv2d_forward_direct` is a plain loop nest kept for comparison (``benchmarks/bench_conv.py``
measures them all).

Flat arrays are indexed with ``uint64`` offsets in the copy loops: Numba then skips its
negative-index wraparound, which makes these short loops 3-8x faster.

>>> import numpy as np
>>> x = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
>>> w = np.ones((1, 1, 2, 2))
>>> s, p, d, g = (2, 2), (0, 0), (1, 1), 1
>>> out = np.empty((1, 1) + conv2d_output_size((4, 4), (2, 2), s, p, d))
>>> cols = np.empty(conv2d_cols_shape("forward", x.shape, w.shape, out.shape, g))
>>> check_conv2d("forward", x, w, out, cols, s, p, d, g)
>>> conv2d_forward(x, w, out, cols, s, p, d, g)
>>> out[0, 0]
array([[10., 18.],
       [42., 50.]])
"""
from __future__ import annotations

import numpy as np
from numba import uint64 as _u

from symjit.base import shape_str
from symjit.jitext import install

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from .blas import xgemm
from .conv_bias import check_conv_bias_grad, conv_bias_grad, conv_bias_grad_parts  # noqa: F401
from .conv_shapes import (  # noqa: F401  (re-exported: the sizes are part of this module's API)
    CONV_BLOCK_CACHE,
    CONV_BLOCK_PER_FILTER,
    CONV_BLOCK_WIDE,
    CONV_SCRATCH_MAX,
    KINDS,
    _block_images,
    conv2d_block_elems,
    conv2d_cols_length,
    conv2d_cols_shape,
    conv2d_forward_rows,
    conv2d_images_per_block,
    conv2d_output_size,
    conv2d_scratch_length,
    is_vec,
    is_winograd,
    sum_length,
    vec_tile,
)
from .conv_small_rules import is_small
from .gemm import KernelArgError, check_arrays, need_ndim, need_shape
from .im2col import (  # noqa: F401  (im2col, col2im re-exported)
    _col2im_block,
    _col2im_plane,
    _im2col_block,
    _im2col_row,
    _im2col_rows,
    _im2col_stride2,
    _split_columns,
    _tap_ranges,
    _valid_range,
    col2im,
    im2col,
)
from .sum_blocks import blocks_of, finish, fold, rows_of

__all__ = [
    "conv2d_output_size", "conv2d_cols_shape", "conv2d_images_per_block", "conv2d_block_elems",
    "conv2d_cols_length", "conv2d_scratch_length", "conv2d_forward_rows", "check_conv2d",
    "check_conv_bias_grad",
    "CONV_SCRATCH_MAX", "CONV_BLOCK_CACHE", "CONV_BLOCK_WIDE", "CONV_BLOCK_PER_FILTER",
    "conv2d_forward", "conv2d_forward_bias", "conv2d_forward_direct",
    "conv2d_forward_cnhw",
    "conv2d_backward_data", "conv2d_backward_weight", "conv_bias_grad", "conv_bias_grad_parts",
    "im2col", "col2im", "add_channel_bias",
]

_jit = njit(cache=True, nogil=True)
install()   # the scratch-length helpers (conv_shapes) are called by the kernels below

# ---------------------------------------------------------------------------------------------
# Validation.


def _check_conv_params(name: str, stride, pad, dilate, groups) -> None:
    for arg, val, low in (("stride", stride, 1), ("pad", pad, 0), ("dilate", dilate, 1)):
        if (not isinstance(val, tuple) or len(val) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) and v >= low for v in val)):
            raise KernelArgError(f"{name}: argument '{arg}' must be a tuple of two ints >= {low}, "
                                 f"got {val!r}")
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise KernelArgError(f"{name}: argument 'groups' must be an int >= 1, got {groups!r}")


def _check_cols(name: str, kind: str, cols: np.ndarray, data: np.ndarray, w: np.ndarray,
                out: np.ndarray, groups: int) -> None:
    """``cols`` must be one row at least as long as the smallest block's scratch: one image, or
    one output row for the ``'forward'`` kernel."""
    need_ndim(name, "cols", cols, 2)
    shape = conv2d_cols_shape(kind, data.shape, w.shape, out.shape, groups)
    least = conv2d_cols_shape(kind, data.shape, w.shape, out.shape, groups, max_elems=0)
    if cols.shape[0] != 1 or cols.shape[1] < least[1]:
        block = "one output row" if kind == "forward" else "one image"
        raise KernelArgError(f"{name}: argument 'cols' has shape {shape_str(cols.shape)}, expected "
                             f"{shape_str(shape)} (at least {shape_str(least)}: {block} per block)")


def check_conv2d(kind: str, data: np.ndarray, w: np.ndarray, out: np.ndarray, cols: np.ndarray,
                 stride: tuple[int, int], pad: tuple[int, int], dilate: tuple[int, int], groups: int,
                 bias: np.ndarray | None = None) -> None:
    """Validate the arguments of a convolution kernel (see the module docstring's contract).

    ``kind`` is ``'forward'``, ``'forward_cnhw'``, ``'forward_winograd'`` or ``'forward_vec'``
    (``data=x, w, out``), ``'backward_data'``, ``'backward_data_winograd'`` (see
    :mod:`~symjit.kernels.cpu.conv_winograd`) or ``'backward_data_vec'`` (see
    :mod:`~symjit.kernels.cpu.conv_vec`) (``data=dx, w, out=dout``), ``'backward_weight'`` or
    ``'backward_weight_winograd'`` (``data=x, w=dw, out=dout``); ``bias`` is checked when given.
    Raises :class:`~symjit.kernels.cpu.gemm.KernelArgError` (a ``ValueError``) naming the argument.
    """
    if kind not in KINDS:
        raise KernelArgError(f"check_conv2d: kind must be one of {KINDS}, got {kind!r}")
    name = f"conv2d_{kind}"
    dname, wname, oname = {"backward_data": ("dx", "w", "dout"),
                           "backward_data_winograd": ("dx", "w", "dout"),
                           "backward_data_vec": ("dx", "w", "dout"),
                           "backward_weight_vec": ("x", "dw", "dout"),
                           "backward_weight": ("x", "dw", "dout"),
                           "backward_weight_winograd": ("x", "dw", "dout"),
                           "backward_data_small": ("dx", "w", "dout"),
                           "backward_weight_small": ("x", "dw", "dout"),
                           "backward_weight_rows_small": ("x", "dw", "dout")}.get(kind, ("x", "w", "out"))
    arrays = {dname: data, wname: w, oname: out, "cols": cols}
    if bias is not None:
        arrays["bias"] = bias
    check_arrays(name, **arrays)
    _check_conv_params(name, stride, pad, dilate, groups)
    for arg, arr in ((dname, data), (wname, w), (oname, out)):
        need_ndim(name, arg, arr, 4)
    n, c, h, wd = data.shape
    f, cg, kh, kw = w.shape
    if c % groups or f % groups:
        raise KernelArgError(f"{name}: channels C={c} of '{dname}' {shape_str(data.shape)} and filters "
                             f"F={f} of '{wname}' {shape_str(w.shape)} must be divisible by groups={groups}")
    need_shape(name, wname, w, (f, c // groups, kh, kw),
               f" (C/groups = {c}/{groups} input channels per filter)")
    if kh < 1 or kw < 1 or f < 1:
        raise KernelArgError(f"{name}: argument '{wname}' has an empty kernel, shape {shape_str(w.shape)}")
    oh, ow = conv2d_output_size((h, wd), (kh, kw), stride, pad, dilate)
    if oh < 1 or ow < 1:
        raise KernelArgError(f"{name}: kernel {(kh, kw)} with dilate {dilate} does not fit '{dname}' "
                             f"{shape_str(data.shape)} padded by {pad}")
    need_shape(name, oname, out, (n, f, oh, ow), f" for stride={stride}, pad={pad}, dilate={dilate}")
    if kind.endswith("_winograd") and not is_winograd(w.shape, stride, pad, dilate, groups):
        raise KernelArgError(f"{name}: takes a 3x3 window at stride 1, dilate 1, one group and pad <= 2; "
                             f"got '{wname}' {shape_str(w.shape)}, stride={stride}, dilate={dilate}, "
                             f"groups={groups}, pad={pad}")
    if kind.endswith("_vec") and not is_vec(data.shape, w.shape, stride, pad, dilate, groups, data.dtype):
        raise KernelArgError(f"{name}: takes float32 at stride 1, dilate 1, one group and pad <= kernel - 1 "
                             f"on a host with AVX2 or AVX-512; got '{dname}' {shape_str(data.shape)} "
                             f"{data.dtype}, '{wname}' {shape_str(w.shape)}, stride={stride}, "
                             f"dilate={dilate}, groups={groups}, pad={pad}")
    if kind == "forward_rows_small" and (out.shape[3] < 16 or f < vec_tile()[0]):
        raise KernelArgError(f"{name}: takes output rows of at least 16 positions and at least "
                             f"{vec_tile()[0]} filters (a tile's rows); got '{oname}' {shape_str(out.shape)}")
    if kind.endswith("_small") and not is_small(data.shape, w.shape, out.shape, groups, data.dtype):
        raise KernelArgError(f"{name}: takes float32, one group and output planes of at least 16 "
                             f"positions on a host with AVX2 or AVX-512; got '{dname}' "
                             f"{shape_str(data.shape)} {data.dtype}, '{oname}' {shape_str(out.shape)}, "
                             f"groups={groups}")
    _check_cols(name, kind, cols, data, w, out, groups)
    if bias is not None:
        need_shape(name, "bias", bias, (f,), " (one value per filter)")


# ---------------------------------------------------------------------------------------------
# NCHW <-> filter-major (CNHW) copies of a block of images.


@_jit
def _from_cnhw_filter(yf, outf, bias, f, n0, nb, f_, p):
    """``out[n0 + m, f, :] = y[f, m*P : (m+1)*P] (+ bias[f] when bias is not empty)``."""
    bv = bias[f] if bias.shape[0] > 0 else yf[0] * 0
    for m in range(nb):
        s = f * nb * p + m * p
        d = ((n0 + m) * f_ + f) * p
        for q in range(p):
            outf[_u(d + q)] = yf[_u(s + q)] + bv


@_jit
def _from_cnhw(y2, out, bias, n0):
    """Copy ``y2`` ``(F, B*P)`` into ``out[n0 : n0 + B]`` (NCHW), adding ``bias`` unless empty."""
    yf, outf = y2.reshape(-1), out.reshape(-1)
    f_, p = out.shape[1], out.shape[2] * out.shape[3]
    for f in range(f_):
        _from_cnhw_filter(yf, outf, bias, f, n0, y2.shape[1] // p, f_, p)


@_jit
def _to_cnhw_filter(df, yf, f, n0, nb, f_, p):
    for m in range(nb):
        s = ((n0 + m) * f_ + f) * p
        d = f * nb * p + m * p
        for q in range(p):
            yf[_u(d + q)] = df[_u(s + q)]


@_jit
def _to_cnhw(dout, y2, n0):
    """Copy ``dout[n0 : n0 + B]`` (NCHW) into ``y2`` ``(F, B*P)`` (filter-major)."""
    df, yf = dout.reshape(-1), y2.reshape(-1)
    f_, p = dout.shape[1], dout.shape[2] * dout.shape[3]
    for f in range(f_):
        _to_cnhw_filter(df, yf, f, n0, y2.shape[1] // p, f_, p)


@_jit
def _add_bias_image(out, bias, n, oh0, nr):
    """``out[n, f, oh0 : oh0 + nr, :] += bias[f]`` for every filter (nothing when bias is empty)."""
    if bias.shape[0] == 0:
        return
    f_, p, ow_ = out.shape[1], out.shape[2] * out.shape[3], out.shape[3]
    of = out.reshape(-1)
    for f in range(f_):
        bv = bias[f]
        d = (n * f_ + f) * p + oh0 * ow_
        for q in range(nr * ow_):
            of[_u(d + q)] += bv


@_jit
def add_channel_bias(out, bias):
    """``out[n, f, :, :] += bias[f]`` in place; ``out`` is ``(N, F, OH, OW)``."""
    for n in range(out.shape[0]):
        _add_bias_image(out, bias, n, 0, out.shape[2])


# ---------------------------------------------------------------------------------------------
# Blocks and GEMMs.


@_jit
def _images_per_block(length, n, k, f, p, fixed, blocked):
    """Images per block that a scratch row of ``length`` holds (the inverse of ``conv2d_cols_length``)."""
    if length - fixed >= (k + f) * n * p:
        return n
    return max(1, min(n, (length - fixed - blocked) // ((k + f) * p)))


@_jit
def _block_views(cf, base, nbb, k, f, p):
    """``y (F, nbb*P)`` then ``cols (K, nbb*P)`` laid out from ``cf[base]``."""
    y2 = cf[base:base + f * nbb * p].reshape(f, nbb * p)
    start = base + f * nbb * p
    return y2, cf[start:start + k * nbb * p].reshape(k, nbb * p)


@_jit
def _forward_gemm(w, cols2, y, iy, ldy, groups):
    """``y[group g] = w[group g] @ cols2[group g rows]`` (one BLAS call per group): ``y`` flat, the
    result's rows ``ldy`` apart from ``y[iy]`` (a filter-major block, or one image of the output)."""
    f_ = w.shape[0]
    kg = w.shape[1] * w.shape[2] * w.shape[3]
    fg = f_ // groups
    q = cols2.shape[1]
    wf, cf = w.reshape(-1), cols2.reshape(-1)
    for g in range(groups):
        xgemm(0, 0, fg, q, kg, 1.0, wf, g * fg * kg, kg, cf, g * kg * q, q, 0.0, y, iy + g * fg * ldy, ldy)


@_jit
def _forward_rows(x, w, bias, out, cols, stride, pad, dilate, groups):
    """:func:`_forward` in blocks of output rows of one image, as many as ``cols`` holds
    (:func:`conv2d_forward_rows`): im2col ``(K, R*OW)``, the GEMM, the rows copied into ``out``."""
    f_, _, kh_, kw_ = w.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    k, p = x.shape[1] * kh_ * kw_, oh_ * ow_
    cf = cols[0]
    rows = max(1, cf.shape[0] // ((k + f_) * ow_))
    xf, of = x.reshape(-1), out.reshape(-1)
    split = _split_columns(stride, dilate, kw_)
    buf = np.empty(2 * (ow_ + kw_), x.dtype)
    for n in range(x.shape[0]):
        for oh0 in range(0, oh_, rows):
            nr = min(rows, oh_ - oh0)
            cols2 = cf[:k * nr * ow_].reshape(k, nr * ow_)
            c2f = cols2.reshape(-1)
            if split:
                _im2col_stride2(xf, c2f, n, x.shape, kh_, kw_, oh0, nr, ow_, pad, 0, nr * ow_, buf)
            else:
                for r in range(k):
                    _im2col_rows(xf, c2f, r * nr * ow_, r, n, oh0, nr, x.shape, kh_, kw_, oh_, ow_,
                                 stride, pad, dilate)
            _forward_gemm(w, cols2, of, n * f_ * p + oh0 * ow_, p, groups)
            _add_bias_image(out, bias, n, oh0, nr)


@_jit
def _forward(x, w, bias, out, cols, stride, pad, dilate, groups):
    n_ = x.shape[0]
    f_, _, kh_, kw_ = w.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    k, p = x.shape[1] * kh_ * kw_, oh_ * ow_
    cf = cols[0]
    if cf.shape[0] < (k + f_) * p:   # one image does not fit: blocks of output rows
        _forward_rows(x, w, bias, out, cols, stride, pad, dilate, groups)
        return
    nb = _images_per_block(cf.shape[0], n_, k, f_, p, 0, 0)
    for n0 in range(0, n_, nb):
        nbb = min(nb, n_ - n0)
        y2, cols2 = _block_views(cf, 0, nbb, k, f_, p)
        _im2col_block(x, cols2, n0, kh_, kw_, oh_, ow_, stride, pad, dilate)
        if nbb == 1:   # one image: filter-major is NCHW, the GEMM writes the output
            _forward_gemm(w, cols2, out.reshape(-1), n0 * f_ * p, p, groups)
            _add_bias_image(out, bias, n0, 0, oh_)
        else:
            _forward_gemm(w, cols2, y2.reshape(-1), 0, nbb * p, groups)
            _from_cnhw(y2, out, bias, n0)


@_jit
def conv2d_forward(x, w, out, cols, stride, pad, dilate, groups):
    """Convolution forward, ``out = conv(x, w)``: whole-batch im2col, one GEMM, transpose copy."""
    _forward(x, w, np.empty(0, out.dtype), out, cols, stride, pad, dilate, groups)


@_jit
def conv2d_forward_bias(x, w, bias, out, cols, stride, pad, dilate, groups):
    """``out = conv(x, w) + bias[None, :, None, None]`` (bias ``(F,)``), added in the transpose copy."""
    _forward(x, w, bias, out, cols, stride, pad, dilate, groups)


@_jit
def conv2d_forward_cnhw(x, w, out, cols, stride, pad, dilate, groups):
    """``conv(x, w)`` in filter-major order: returns ``y`` ``(F, N, OH, OW)``, a view into ``cols``.

    ``out`` only gives the output shape and is not written: ``out[n, f] = y[f, n]`` is left to the
    caller, which can fuse it with the bias and an elementwise epilogue.
    """
    n_ = x.shape[0]
    f_, _, kh_, kw_ = w.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    k, p = x.shape[1] * kh_ * kw_, oh_ * ow_
    cf = cols[0]
    full = f_ * n_ * p
    nb = _images_per_block(cf.shape[0], n_, k, f_, p, 0, full)
    yf = cf[:full]
    base = 0 if nb == n_ else full   # the blocks' im2col after the whole y
    for n0 in range(0, n_, nb):
        nbb = min(nb, n_ - n0)
        cols2 = _block_views(cf, base, nbb, k, f_, p)[1]
        _im2col_block(x, cols2, n0, kh_, kw_, oh_, ow_, stride, pad, dilate)
        _forward_gemm(w, cols2, yf, n0 * p, n_ * p, groups)   # the block's columns of y
    return yf.reshape(f_, n_, oh_, ow_)


@_jit
def conv2d_forward_direct(x, w, out, cols, stride, pad, dilate, groups):
    """Convolution forward by a direct loop nest (no BLAS; ``cols`` is unused but kept for symmetry)."""
    n_, c_, h_, w_ = x.shape
    f_, cg, kh_, kw_ = w.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    sh, sw = stride
    ph, pw = pad
    dh, dw = dilate
    fg = f_ // groups
    for n in range(n_):
        for f in range(f_):
            o = out[n, f]
            o[:] = 0
            c0 = (f // fg) * cg
            for cc in range(cg):
                xc = x[n, c0 + cc]
                for i in range(kh_):
                    for j in range(kw_):
                        wv = w[f, cc, i, j]
                        lo, hi = _valid_range(pw, j * dw, sw, w_, ow_)
                        off = j * dw - pw
                        for oh in range(oh_):
                            ih = oh * sh - ph + i * dh
                            if ih < 0 or ih >= h_:
                                continue
                            xr = xc[ih]
                            orow = o[oh]
                            if sw == 1:  # unit stride: contiguous, vectorisable
                                for q in range(lo, hi):
                                    orow[q] += wv * xr[q + off]
                            else:
                                for q in range(lo, hi):
                                    orow[q] += wv * xr[q * sw + off]


# ---------------------------------------------------------------------------------------------
# Backward.


@_jit
def _backward_data_gemm(w, dy, iy, ldy, dcols2, groups):
    """``dcols2[group g rows] = w[group g].T @ dy[group g]`` (one BLAS call per group): ``dy`` flat,
    its rows ``ldy`` apart from ``dy[iy]`` (a filter-major block, or one image of ``dout``)."""
    f_ = w.shape[0]
    kg = w.shape[1] * w.shape[2] * w.shape[3]
    fg = f_ // groups
    q = dcols2.shape[1]
    wf, df = w.reshape(-1), dcols2.reshape(-1)
    for g in range(groups):
        xgemm(1, 0, kg, q, fg, 1.0, wf, g * fg * kg, kg, dy, iy + g * fg * ldy, ldy, 0.0, df, g * kg * q, q)


@_jit
def _filter_major(dout, dy2, n0):
    """``dout[n0 : n0 + B]`` as filter-major rows: ``(flat array, offset, row stride)``. One image
    is that already (``dout``'s own memory); a block of images is copied into ``dy2`` ``(F, B*P)``."""
    f_, p = dout.shape[1], dout.shape[2] * dout.shape[3]
    if dy2.shape[1] == p:
        return dout.reshape(-1), n0 * f_ * p, p
    _to_cnhw(dout, dy2, n0)
    return dy2.reshape(-1), 0, dy2.shape[1]


@_jit
def conv2d_backward_data(dout, w, dx, cols, stride, pad, dilate, groups):
    """Data gradient ``dx`` (overwritten): ``dcols = w.T @ dout`` (filter-major, whole batch), col2im."""
    n_ = dx.shape[0]
    f_, _, kh_, kw_ = w.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    k, p = dx.shape[1] * kh_ * kw_, oh_ * ow_
    cf = cols[0]
    nb = _images_per_block(cf.shape[0], n_, k, f_, p, 0, 0)
    for n0 in range(0, n_, nb):
        dy2, dcols2 = _block_views(cf, 0, min(nb, n_ - n0), k, f_, p)
        dy, iy, ldy = _filter_major(dout, dy2, n0)
        _backward_data_gemm(w, dy, iy, ldy, dcols2, groups)
        _col2im_block(dcols2, dx, n0, kh_, kw_, oh_, ow_, stride, pad, dilate)


@_jit
def _weight_sums(dy, iy, ldy, cols2, sums, m, since, folded, groups):
    """A block of images' products added into the weight gradient's sum (:mod:`.sum_blocks`): per
    group, ``dwt[group g] (+)= cols2[group g rows] @ dy[group g].T`` into ``sums[:m]``, in blocks
    of rows (:func:`~.sum_blocks.rows_of`) each through the columns' blocks of positions, one BLAS
    call per block; returns ``(since, folded)`` for the next block of images. The transposed
    product, ``K/groups x F/groups`` per group from ``sums[g * K/groups * F/groups]``, runs 1.2-1.5x
    faster in OpenBLAS than ``dy @ cols2.T`` for these long, thin operands. ``dy`` flat, its rows
    ``ldy`` apart from ``dy[iy]``."""
    q = cols2.shape[1]
    kg = cols2.shape[0] // groups
    fg = m // (kg * groups)
    nb = blocks_of(q, kg * fg, cols2.itemsize)
    step = rows_of(kg, fg)
    cf = cols2.reshape(-1)
    s, f = since, folded
    for g in range(groups):
        for r0 in range(0, kg, step):
            r1 = min(kg, r0 + step)
            lo, hi = (g * kg + r0) * fg, (g * kg + r1) * fg
            s, f = since, folded
            for i in range(nb):
                q0, q1 = i * q // nb, (i + 1) * q // nb
                xgemm(0, 1, r1 - r0, fg, q1 - q0, 1.0, cf, (g * kg + r0) * q + q0, q, dy,
                      iy + g * fg * ldy + q0, ldy, 0.0 if s == 0 else 1.0, sums, lo, fg)
                s, f = fold(sums, m, lo, hi, s, f)
    return s, f


@_jit
def _weight_scratch(cf, n, k, f, kg, p):
    """Images per block and the weight gradient's ``sums`` (after the blocks' part of ``cf``,
    :func:`~symjit.kernels.cpu.conv_shapes.sum_length` elements)."""
    fixed = sum_length(f * kg, f * kg * kg // k, n * p)
    nb = _images_per_block(cf.shape[0], n, k, f, p, fixed, 0)
    start = (k + f) * nb * p
    return nb, cf[start:start + fixed]


@_jit
def _untranspose(dwt, dw2, groups):
    """``dw2[g*F/groups + a, b] = dwt[group g][b, a]`` (see :func:`_weight_sums`), in 32 x 32 tiles."""
    f_, kg = dw2.shape
    fg = f_ // groups
    for g in range(groups):
        t = dwt[g * fg * kg:(g + 1) * fg * kg].reshape(kg, fg)
        for a0 in range(0, fg, 32):
            for b0 in range(0, kg, 32):
                for a in range(a0, min(a0 + 32, fg)):
                    row = dw2[g * fg + a]
                    for b in range(b0, min(b0 + 32, kg)):
                        row[b] = t[b, a]


@_jit
def conv2d_backward_weight(dout, x, dw, cols, stride, pad, dilate, groups):
    """Weight gradient ``dw`` (overwritten): ``dout (F, N*P) @ im2col(x).T`` per group, over blocks
    of images, each block's positions in blocks of GEMMs whose products are summed as
    :mod:`.sum_blocks` says (float32: 64 positions per GEMM where the weight is large).
    """
    n_ = x.shape[0]
    f_, _, kh_, kw_ = dw.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    k, p = x.shape[1] * kh_ * kw_, oh_ * ow_
    dw2 = dw.reshape(f_, dw.size // f_)
    m = dw2.size
    cf = cols[0]
    nb, sums = _weight_scratch(cf, n_, k, f_, dw2.shape[1], p)
    since, folded = 0, 0
    for n0 in range(0, n_, nb):
        dy2, cols2 = _block_views(cf, 0, min(nb, n_ - n0), k, f_, p)
        _im2col_block(x, cols2, n0, kh_, kw_, oh_, ow_, stride, pad, dilate)
        dy, iy, ldy = _filter_major(dout, dy2, n0)
        since, folded = _weight_sums(dy, iy, ldy, cols2, sums, m, since, folded, groups)
    finish(sums, m, since, folded)
    _untranspose(sums[:m], dw2, groups)
