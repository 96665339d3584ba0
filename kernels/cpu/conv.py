"""2-D convolution kernels (NCHW, weights ``(F, C/groups, KH, KW)``): forward, data/weight/bias grads.

Shape contract shared by every kernel here (validate with :func:`check_conv2d` first; Numba does no
bounds checks):

* ``x``/``dx``: ``(N, C, H, W)``; ``w``/``dw``: ``(F, C // groups, KH, KW)``; ``out``/``dout``:
  ``(N, F, OH, OW)`` with ``OH, OW = conv2d_output_size((H, W), (KH, KW), stride, pad, dilate)``;
  ``bias``/``db``: ``(F,)``; ``C`` and ``F`` divisible by ``groups``.
* ``stride``, ``pad``, ``dilate``: tuples of two ints ``(y, x)``, stride and dilate >= 1, pad >= 0
  (pad is symmetric, as MXNet's ``pad``).
* ``cols``: float scratch of shape ``conv2d_cols_shape(kind, ...)``, same dtype as the data;
  its contents on entry do not matter and are garbage on exit.
* all arrays C-contiguous and of one dtype (float32 or float64).

Kernels overwrite their outputs. The GEMM path (im2col, one BLAS call per image and group) is the
default; :func:`conv2d_forward_direct` is a plain loop nest kept for comparison
(``benchmarks/bench_conv.py`` measures both). The ``*_parallel`` kernels spread the batch over
``cols.shape[0]`` chunks with ``prange`` (each chunk owns one row of ``cols``); they pay only for
tiny per-image GEMMs, which :func:`conv2d_use_parallel` tells.

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

import numba
import numpy as np
from numba import prange

from symjit.base import shape_str

from .gemm import KernelArgError, check_arrays, need_ndim, need_shape

__all__ = [
    "conv2d_output_size", "conv2d_cols_shape", "conv2d_use_parallel", "check_conv2d", "check_conv_bias_grad",
    "conv2d_forward", "conv2d_forward_bias", "conv2d_forward_parallel", "conv2d_forward_direct",
    "conv2d_backward_data", "conv2d_backward_data_parallel",
    "conv2d_backward_weight", "conv2d_backward_weight_parallel", "conv_bias_grad",
    "im2col", "col2im", "add_channel_bias",
]

_jit = numba.njit(cache=True, nogil=True)
_pjit = numba.njit(cache=True, nogil=True, parallel=True)

KINDS = ("forward", "backward_data", "backward_weight")


# ---------------------------------------------------------------------------------------------
# Python-side helpers: sizes and validation.


def conv2d_output_size(hw: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int],
                       pad: tuple[int, int], dilate: tuple[int, int]) -> tuple[int, int]:
    """Output height and width of a convolution: ``(H + 2p - d(k-1) - 1) // s + 1`` per axis.

    >>> conv2d_output_size((28, 28), (5, 5), (1, 1), (0, 0), (1, 1))
    (24, 24)
    """
    out = []
    for x, k, s, p, d in zip(hw, kernel, stride, pad, dilate):
        span = d * (k - 1) + 1
        out.append((x + 2 * p - span) // s + 1 if x + 2 * p >= span else 0)
    return out[0], out[1]


def conv2d_cols_shape(kind: str, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                      out_shape: tuple[int, ...], groups: int, nchunks: int = 1) -> tuple[int, int]:
    """Shape ``(nchunks, length)`` of the ``cols`` scratch of a ``kind`` kernel.

    ``kind`` is ``'forward'``, ``'backward_data'`` or ``'backward_weight'``; ``nchunks`` is 1 for
    the serial kernels and the number of batch chunks (e.g. ``numba.get_num_threads()``) for the
    ``*_parallel`` ones. Each row holds an im2col matrix ``(C*KH*KW, OH*OW)``; for
    ``backward_weight`` it also holds a weight-gradient product and, when parallel, a partial sum.

    >>> conv2d_cols_shape("forward", (64, 1, 28, 28), (20, 1, 5, 5), (64, 20, 24, 24), 1)
    (1, 14400)
    """
    if kind not in KINDS:
        raise KernelArgError(f"conv2d_cols_shape: kind must be one of {KINDS}, got {kind!r}")
    c, (f, cg, kh, kw), (oh, ow) = x_shape[1], w_shape, out_shape[2:]
    length = c * kh * kw * oh * ow
    if kind == "backward_weight":
        length += f * cg * kh * kw * (1 if nchunks == 1 else 2)
    return int(nchunks), int(length)


PARALLEL_MAX_GEMM = 4096


def conv2d_use_parallel(x_shape: tuple[int, ...], w_shape: tuple[int, ...], groups: int,
                        nthreads: int | None = None) -> bool:
    """Whether the ``*_parallel`` kernels are expected to beat the serial (BLAS-threaded) ones.

    They pay when each per-image GEMM is tiny (``F/groups * C/groups*KH*KW <= PARALLEL_MAX_GEMM``),
    so im2col/col2im dominate and BLAS cannot use the cores; for bigger GEMMs BLAS already runs on
    every core and a ``prange`` over the batch only oversubscribes them (measured on 2 cores with
    ``benchmarks/bench_conv.py``: LeNet conv1 ~2x faster in parallel, conv2 and a 64-channel 3x3
    layer 1.2-3x slower).

    >>> conv2d_use_parallel((64, 1, 28, 28), (20, 1, 5, 5), 1, nthreads=2)
    True
    >>> conv2d_use_parallel((64, 20, 12, 12), (50, 20, 5, 5), 1, nthreads=2)
    False
    """
    if nthreads is None:
        nthreads = numba.get_num_threads()
    f, cg, kh, kw = w_shape
    return nthreads > 1 and x_shape[0] > 1 and (f // groups) * cg * kh * kw <= PARALLEL_MAX_GEMM


def _check_conv_params(name: str, stride, pad, dilate, groups) -> None:
    for arg, val, low in (("stride", stride, 1), ("pad", pad, 0), ("dilate", dilate, 1)):
        if (not isinstance(val, tuple) or len(val) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) and v >= low for v in val)):
            raise KernelArgError(f"{name}: argument '{arg}' must be a tuple of two ints >= {low}, "
                                 f"got {val!r}")
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise KernelArgError(f"{name}: argument 'groups' must be an int >= 1, got {groups!r}")


def check_conv2d(kind: str, data: np.ndarray, w: np.ndarray, out: np.ndarray, cols: np.ndarray,
                 stride: tuple[int, int], pad: tuple[int, int], dilate: tuple[int, int], groups: int,
                 bias: np.ndarray | None = None) -> None:
    """Validate the arguments of a convolution kernel (see the module docstring's contract).

    ``kind`` is ``'forward'`` (``data=x, w, out``), ``'backward_data'`` (``data=dx, w, out=dout``)
    or ``'backward_weight'`` (``data=x, w=dw, out=dout``); ``bias`` is checked when given.
    Raises :class:`~symjit.kernels.cpu.gemm.KernelArgError` (a ``ValueError``) naming the argument.
    """
    if kind not in KINDS:
        raise KernelArgError(f"check_conv2d: kind must be one of {KINDS}, got {kind!r}")
    name = f"conv2d_{kind}"
    dname, wname, oname = {"forward": ("x", "w", "out"), "backward_data": ("dx", "w", "dout"),
                           "backward_weight": ("x", "dw", "dout")}[kind]
    arrays = {dname: data, wname: w, oname: out, "cols": cols}
    if bias is not None:
        arrays["bias"] = bias
    check_arrays(name, **arrays)
    _check_conv_params(name, stride, pad, dilate, groups)
    for arg, arr in ((dname, data), (wname, w), (oname, out)):
        need_ndim(name, arg, arr, 4)
    need_ndim(name, "cols", cols, 2)
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
    nchunks = cols.shape[0]
    need_shape(name, "cols", cols, conv2d_cols_shape(kind, data.shape, w.shape, out.shape, groups, nchunks))
    if nchunks < 1:
        raise KernelArgError(f"{name}: argument 'cols' needs at least one row, "
                             f"got shape {shape_str(cols.shape)}")
    if bias is not None:
        need_shape(name, "bias", bias, (f,), " (one value per filter)")


def check_conv_bias_grad(dout: np.ndarray, db: np.ndarray) -> None:
    """Validate :func:`conv_bias_grad`: ``dout`` 4-D ``(N, F, OH, OW)``, ``db`` ``(F,)``."""
    check_arrays("conv_bias_grad", dout=dout, db=db)
    need_ndim("conv_bias_grad", "dout", dout, 4)
    need_shape("conv_bias_grad", "db", db, (dout.shape[1],),
               f" (one value per channel of dout {shape_str(dout.shape)})")


# ---------------------------------------------------------------------------------------------
# im2col / col2im on one image.


@_jit
def _valid_range(pad, offset, stride, size, n_out):
    """Output indices ``o`` in ``[lo, hi)`` for which ``o*stride - pad + offset`` lies in ``[0, size)``."""
    start = pad - offset
    lo = min(-((-start) // stride), n_out) if start > 0 else 0
    hi = min((size + pad - offset - 1) // stride + 1, n_out)
    return lo, max(hi, lo)


@_jit
def im2col(x, cols, kh_, kw_, oh_, ow_, stride, pad, dilate):
    """``cols[(c*KH + i)*KW + j, oh*OW + ow] = x[c, oh*sh - ph + i*dh, ow*sw - pw + j*dw]`` (0 outside).

    ``x``: one image ``(C, H, W)``; ``cols``: ``(C*KH*KW, OH*OW)``.
    """
    c_, h_, w_ = x.shape
    sh, sw = stride
    ph, pw = pad
    dh, dw = dilate
    for c in range(c_):
        for i in range(kh_):
            for j in range(kw_):
                row = cols[(c * kh_ + i) * kw_ + j]
                lo, hi = _valid_range(pw, j * dw, sw, w_, ow_)
                for oh in range(oh_):
                    ih = oh * sh - ph + i * dh
                    base = oh * ow_
                    if ih < 0 or ih >= h_:
                        row[base:base + ow_] = 0
                        continue
                    row[base:base + lo] = 0
                    xr = x[c, ih]
                    off = j * dw - pw
                    for o in range(lo, hi):
                        row[base + o] = xr[o * sw + off]
                    row[base + hi:base + ow_] = 0


@_jit
def col2im(cols, dx, kh_, kw_, oh_, ow_, stride, pad, dilate):
    """The adjoint of :func:`im2col`: ``dx[c, ih, iw] = sum`` of the ``cols`` entries that read it.

    ``cols``: ``(C*KH*KW, OH*OW)``; ``dx``: one image ``(C, H, W)``, overwritten.
    """
    c_, h_, w_ = dx.shape
    sh, sw = stride
    ph, pw = pad
    dh, dw = dilate
    dx[:] = 0
    for c in range(c_):
        for i in range(kh_):
            for j in range(kw_):
                row = cols[(c * kh_ + i) * kw_ + j]
                lo, hi = _valid_range(pw, j * dw, sw, w_, ow_)
                off = j * dw - pw
                for oh in range(oh_):
                    ih = oh * sh - ph + i * dh
                    if ih < 0 or ih >= h_:
                        continue
                    base = oh * ow_
                    dr = dx[c, ih]
                    for o in range(lo, hi):
                        dr[o * sw + off] += row[base + o]


# ---------------------------------------------------------------------------------------------
# Per-image building blocks.


@_jit
def add_channel_bias(out, bias):
    """``out[n, f, :, :] += bias[f]`` in place; ``out`` is ``(N, F, OH, OW)``."""
    n_, f_ = out.shape[0], out.shape[1]
    for n in range(n_):
        for f in range(f_):
            out[n, f] += bias[f]


@_jit
def _fwd_one(x, w, out, cols2, n, stride, pad, dilate, groups):
    """Forward for image ``n`` using ``cols2`` ``(K, P)`` as scratch."""
    f_, cg, kh_, kw_ = w.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    im2col(x[n], cols2, kh_, kw_, oh_, ow_, stride, pad, dilate)
    fg = f_ // groups
    kg = cg * kh_ * kw_
    w2 = w.reshape(f_, kg)
    o2 = out[n].reshape(f_, oh_ * ow_)
    for g in range(groups):
        np.dot(w2[g * fg:(g + 1) * fg], cols2[g * kg:(g + 1) * kg], o2[g * fg:(g + 1) * fg])


@_jit
def _cols2(cols, t, k, p):
    return cols[t, :k * p].reshape(k, p)


@_jit
def conv2d_forward(x, w, out, cols, stride, pad, dilate, groups):
    """Convolution forward, ``out = conv(x, w)``, by im2col + GEMM (module contract; ``cols`` (1, L))."""
    c_ = x.shape[1]
    k = c_ * w.shape[2] * w.shape[3]
    cols2 = _cols2(cols, 0, k, out.shape[2] * out.shape[3])
    for n in range(x.shape[0]):
        _fwd_one(x, w, out, cols2, n, stride, pad, dilate, groups)


@_jit
def conv2d_forward_bias(x, w, bias, out, cols, stride, pad, dilate, groups):
    """``out = conv(x, w) + bias[None, :, None, None]`` (bias ``(F,)``), bias added per image."""
    c_ = x.shape[1]
    k = c_ * w.shape[2] * w.shape[3]
    cols2 = _cols2(cols, 0, k, out.shape[2] * out.shape[3])
    for n in range(x.shape[0]):
        _fwd_one(x, w, out, cols2, n, stride, pad, dilate, groups)
        for f in range(w.shape[0]):
            out[n, f] += bias[f]


@_pjit
def conv2d_forward_parallel(x, w, out, cols, stride, pad, dilate, groups):
    """:func:`conv2d_forward` with the batch split over ``cols.shape[0]`` chunks (``prange``)."""
    n_ = x.shape[0]
    nch = cols.shape[0]
    k = x.shape[1] * w.shape[2] * w.shape[3]
    p = out.shape[2] * out.shape[3]
    for t in prange(nch):
        cols2 = _cols2(cols, t, k, p)
        for n in range(t, n_, nch):
            _fwd_one(x, w, out, cols2, n, stride, pad, dilate, groups)


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
def _bwd_data_one(dout, w, dx, cols2, n, stride, pad, dilate, groups):
    f_, cg, kh_, kw_ = w.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    fg = f_ // groups
    kg = cg * kh_ * kw_
    w2 = w.reshape(f_, kg)
    d2 = dout[n].reshape(f_, oh_ * ow_)
    for g in range(groups):
        np.dot(w2[g * fg:(g + 1) * fg].T, d2[g * fg:(g + 1) * fg], cols2[g * kg:(g + 1) * kg])
    col2im(cols2, dx[n], kh_, kw_, oh_, ow_, stride, pad, dilate)


@_jit
def conv2d_backward_data(dout, w, dx, cols, stride, pad, dilate, groups):
    """Data gradient ``dx`` (overwritten) from ``dout``: GEMM ``w.T @ dout`` then col2im."""
    k = dx.shape[1] * w.shape[2] * w.shape[3]
    cols2 = _cols2(cols, 0, k, dout.shape[2] * dout.shape[3])
    for n in range(dx.shape[0]):
        _bwd_data_one(dout, w, dx, cols2, n, stride, pad, dilate, groups)


@_pjit
def conv2d_backward_data_parallel(dout, w, dx, cols, stride, pad, dilate, groups):
    """:func:`conv2d_backward_data` with the batch split over ``cols.shape[0]`` chunks."""
    n_ = dx.shape[0]
    nch = cols.shape[0]
    k = dx.shape[1] * w.shape[2] * w.shape[3]
    p = dout.shape[2] * dout.shape[3]
    for t in prange(nch):
        cols2 = _cols2(cols, t, k, p)
        for n in range(t, n_, nch):
            _bwd_data_one(dout, w, dx, cols2, n, stride, pad, dilate, groups)


@_jit
def _weight_grad_images(dout, x, acc, tmp, cols2, kh_, kw_, n0, step, stride, pad, dilate, groups):
    """``acc (F, Kg) = sum over n in range(n0, N, step)`` of ``dout[n] @ im2col(x[n]).T`` per group."""
    f_, kg = acc.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    fg = f_ // groups
    acc[:] = 0
    for n in range(n0, x.shape[0], step):
        im2col(x[n], cols2, kh_, kw_, oh_, ow_, stride, pad, dilate)
        d2 = dout[n].reshape(f_, oh_ * ow_)
        for g in range(groups):
            np.dot(d2[g * fg:(g + 1) * fg], cols2[g * kg:(g + 1) * kg].T, tmp[g * fg:(g + 1) * fg])
        acc += tmp


@_jit
def conv2d_backward_weight(dout, x, dw, cols, stride, pad, dilate, groups):
    """Weight gradient ``dw`` (overwritten): ``sum_n dout[n] @ im2col(x[n]).T`` per group."""
    f_, cg, kh_, kw_ = dw.shape
    kg = cg * kh_ * kw_
    k = x.shape[1] * kh_ * kw_
    p = dout.shape[2] * dout.shape[3]
    cols2 = _cols2(cols, 0, k, p)
    tmp = cols[0, k * p:k * p + f_ * kg].reshape(f_, kg)
    _weight_grad_images(dout, x, dw.reshape(f_, kg), tmp, cols2, kh_, kw_, 0, 1, stride, pad, dilate, groups)


@_pjit
def conv2d_backward_weight_parallel(dout, x, dw, cols, stride, pad, dilate, groups):
    """:func:`conv2d_backward_weight` with the batch split over ``cols.shape[0]`` chunks.

    Each chunk sums its images into its own partial; the partials are added in chunk order, so the
    result is deterministic for a given ``cols.shape[0]``.
    """
    f_, cg, kh_, kw_ = dw.shape
    kg = cg * kh_ * kw_
    k = x.shape[1] * kh_ * kw_
    p = dout.shape[2] * dout.shape[3]
    nch = cols.shape[0]
    m = f_ * kg
    for t in prange(nch):
        cols2 = _cols2(cols, t, k, p)
        tmp = cols[t, k * p:k * p + m].reshape(f_, kg)
        acc = cols[t, k * p + m:k * p + 2 * m].reshape(f_, kg)
        _weight_grad_images(dout, x, acc, tmp, cols2, kh_, kw_, t, nch, stride, pad, dilate, groups)
    dw2 = dw.reshape(f_, kg)
    dw2[:] = 0
    for t in range(nch):
        dw2 += cols[t, k * p + m:k * p + 2 * m].reshape(f_, kg)


@_jit
def conv_bias_grad(dout, db):
    """Bias gradient ``db[f] = dout[:, f].sum()`` (over N, OH, OW); ``db`` overwritten."""
    n_, f_ = dout.shape[0], dout.shape[1]
    for f in range(f_):
        db[f] = 0
    for n in range(n_):
        for f in range(f_):
            s = db[f] * 0
            d = dout[n, f]
            for i in range(d.shape[0]):
                for j in range(d.shape[1]):
                    s += d[i, j]
            db[f] += s
