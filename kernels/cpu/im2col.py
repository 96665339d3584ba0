"""im2col and col2im of 2-D convolutions (NCHW) on blocks of images or of output rows: the copies
around the convolution GEMMs of :mod:`symjit.kernels.cpu.conv` (which validates the arrays first;
Numba does no bounds checks).

The im2col matrix of images ``n0 .. n0+B-1`` is ``(C*KH*KW, B*OH*OW)``: row ``r = (c*KH + i)*KW + j``,
column ``(n - n0)*OH*OW + oh*OW + ow`` holds ``x[n, c, oh*sh - ph + i*dh, ow*sw - pw + j*dw]`` (0
outside the image); col2im is its adjoint.

>>> import numpy as np
>>> x = np.arange(16, dtype=np.float32).reshape(1, 4, 4)
>>> cols = np.empty((4, 9), np.float32)
>>> im2col(x, cols, 2, 2, 3, 3, (1, 1), (0, 0), (1, 1))
>>> cols[0].tolist()
[0.0, 1.0, 2.0, 4.0, 5.0, 6.0, 8.0, 9.0, 10.0]
"""
from __future__ import annotations

import numba
import numpy as np
from numba import uint64 as _u

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit

__all__ = ["im2col", "col2im"]

_jit = njit(cache=True, nogil=True)

# ---------------------------------------------------------------------------------------------
# im2col / col2im on a block of images, one row (or one input plane) per loop iteration.


@_jit
def _valid_range(pad, offset, stride, size, n_out):
    """Output indices ``o`` in ``[lo, hi)`` for which ``o*stride - pad + offset`` lies in ``[0, size)``."""
    start = pad - offset
    lo = min(-((-start) // stride), n_out) if start > 0 else 0
    hi = min((size + pad - offset - 1) // stride + 1, n_out)
    return lo, max(hi, lo)


@_jit
def _zero(a, start, stop):
    for q in range(start, stop):
        a[_u(q)] = 0


@_jit
def _im2col_row(xf, cf, r, n0, nb, x_shape, kh_, kw_, oh_, ow_, stride, pad, dilate):
    """Row ``r`` of the im2col matrix of images ``n0 .. n0+nb-1`` (flat ``xf``) into flat ``cf``.

    The matrix is ``(C*KH*KW, nb*OH*OW)``; row ``r = (c*KH + i)*KW + j``, column
    ``(n - n0)*OH*OW + oh*OW + ow`` holds ``x[n, c, oh*sh - ph + i*dh, ow*sw - pw + j*dw]`` (0 outside).
    """
    p = oh_ * ow_
    for n in range(n0, n0 + nb):
        _im2col_rows(xf, cf, (r * nb + n - n0) * p, r, n, 0, oh_, x_shape, kh_, kw_, oh_, ow_, stride,
                     pad, dilate)


@_jit
def _im2col_block(x, cols2, n0, kh_, kw_, oh_, ow_, stride, pad, dilate):
    """im2col of images ``n0 .. n0 + cols2.shape[1] // (OH*OW) - 1`` into ``cols2`` ``(K, B*P)``
    (rows as :func:`_im2col_row`). Each tap's ranges are found once, not per row and image: a
    5 x 5 layer over 8 x 8 outputs (LeNet's conv2) copies 64 values per row and image, and the
    divisions that find them took as long as the copies. A tap wholly inside the image at column
    stride 1 copies whole rows in this loop (:func:`_copy_rows`); the others call
    :func:`_im2col_copy`."""
    xf, cf = x.reshape(-1), cols2.reshape(-1)
    c_, h_, w_ = x.shape[1], x.shape[2], x.shape[3]
    p = oh_ * ow_
    nb = cols2.shape[1] // p
    if _split_columns(stride, dilate, kw_):
        buf = np.empty(2 * (ow_ + kw_), x.dtype)
        for n in range(n0, n0 + nb):
            _im2col_stride2(xf, cf, n, x.shape, kh_, kw_, 0, oh_, ow_, pad, (n - n0) * p, nb * p, buf)
        return
    sh, sw = stride
    rows, cols = _tap_ranges(h_, w_, kh_, kw_, oh_, ow_, stride, pad, dilate)
    r = 0
    for c in range(c_):
        for i in range(kh_):
            a, e = rows[i, 0], rows[i, 1]
            for j in range(kw_):
                s0 = (c * h_ + a * sh - pad[0] + i * dilate[0]) * w_ + j * dilate[1] - pad[1]
                if sw == 1 and a == 0 and e == oh_ and cols[j, 0] == 0 and cols[j, 1] == ow_:
                    for n in range(n0, n0 + nb):   # the whole tap inside the image
                        _copy_rows(xf, cf, (r * nb + n - n0) * p, n * c_ * h_ * w_ + s0, oh_, ow_, sh * w_)
                else:
                    for n in range(n0, n0 + nb):
                        _im2col_copy(xf, cf, (r * nb + n - n0) * p, n * c_ * h_ * w_ + s0,
                                     a, e - a, oh_ - e, cols[j, 0], cols[j, 1], ow_, sh * w_, sw)
                r += 1


@_jit
def _split_columns(stride, dilate, kw_):
    """Whether im2col reads its input through :func:`_im2col_stride2`: stride 2 on both axes, no
    dilation, at least 4 taps per row (each input value then read by >= 2 of them). Measured
    (``bench_conv_ab.py``): ResNet's 7 x 7 stem 1.13-1.15x forward, 1.19-1.35x weight gradient; its
    3 x 3 stride-2 layers 0.95-1.20x, so they keep the direct loop."""
    return stride[0] == 2 and stride[1] == 2 and dilate[0] == 1 and dilate[1] == 1 and kw_ >= 4


@_jit
def _im2col_stride2(xf, cf, n, x_shape, kh_, kw_, oh0, nr, ow_, pad, base, rstride, buf):
    """im2col of a stride-2 convolution (no dilation): output rows ``oh0 .. oh0+nr-1`` of image
    ``n`` in every row of the matrix, row ``r = (c*KH + i)*KW + j`` at ``cf[base + r*rstride]``
    (column ``(oh - oh0)*OW + ow``). Each input row a tap row reads is split once into its even and
    odd columns (of the padded row, zeros outside, in ``buf``); each of its ``KW`` taps is then a
    contiguous copy from one half (tap ``j`` reads padded column ``2*ow + j``). The direct loop
    gathers every value at stride 2 (~0.7-0.9 ns a value on ResNet's 7 x 7 stem, against 0.3 for a
    stride-1 copy): this one gathers each input value once instead of ``KW / 2`` times."""
    c_, h_, w_ = x_shape[1], x_shape[2], x_shape[3]
    ph, pw = pad
    half = buf.shape[0] // 2
    ev, od = buf[:half], buf[half:]
    for c in range(c_):
        for i in range(kh_):
            r0 = (c * kh_ + i) * kw_
            for oh in range(oh0, oh0 + nr):
                o = base + r0 * rstride + (oh - oh0) * ow_
                hin = 2 * oh - ph + i
                if hin < 0 or hin >= h_:
                    for j in range(kw_):
                        _zero(cf, o + j * rstride, o + j * rstride + ow_)
                    continue
                s = ((n * c_ + c) * h_ + hin) * w_ - pw
                for u in range(half):
                    t = 2 * u
                    ev[u] = xf[_u(s + t)] if 0 <= t - pw < w_ else 0
                    od[u] = xf[_u(s + t + 1)] if 0 <= t + 1 - pw < w_ else 0
                for j in range(kw_):
                    src = ev if j % 2 == 0 else od
                    d, b = j // 2, o + j * rstride
                    for ow in range(ow_):
                        cf[_u(b + ow)] = src[d + ow]


@_jit
def _tap_ranges(h_, w_, kh_, kw_, oh_, ow_, stride, pad, dilate):
    """Per tap row ``i``, the output rows ``[a, e)`` whose input row lies inside the image
    (``rows[i]``); per tap column ``j``, the output columns ``[lo, hi)`` likewise (``cols[j]``)."""
    rows = np.empty((kh_, 2), np.int64)
    cols = np.empty((kw_, 2), np.int64)
    for i in range(kh_):
        rows[i, 0], rows[i, 1] = _valid_range(pad[0], i * dilate[0], stride[0], h_, oh_)
    for j in range(kw_):
        cols[j, 0], cols[j, 1] = _valid_range(pad[1], j * dilate[1], stride[1], w_, ow_)
    return rows, cols


@numba.njit(inline="always")
def _copy_rows(xf, cf, b, s, rows, ow_, step):
    """``rows`` rows of ``ow_`` values from ``xf[s]`` (rows ``step`` apart) to ``cf[b]`` (packed),
    inlined in :func:`_im2col_block`'s loop over images (a call per image and tap cost as much as
    LeNet's 8 x 8 copies). :func:`_im2col_copy` keeps its own copy of this loop: calling this one
    there (inlined or not) made its strided branch 1.15x slower (ResNet's stride-2 layers)."""
    for _ in range(rows):
        for o in range(ow_):
            cf[_u(b + o)] = xf[_u(s + o)]
        b += ow_
        s += step


@_jit
def _im2col_copy(xf, cf, b, s, before, rows, after, lo, hi, ow_, step, sw):
    """``before`` zero output rows, then ``rows`` rows read from ``xf[s]`` on (``step`` apart;
    columns ``[lo, hi)`` inside the image, the rest zero), then ``after`` zero rows, written to
    flat ``cf`` from offset ``b``: one tap of one image in one im2col row."""
    _zero(cf, b, b + before * ow_)
    b += before * ow_
    if sw == 1 and lo == 0 and hi == ow_:   # whole output rows inside the image
        for _ in range(rows):
            for o in range(ow_):
                cf[_u(b + o)] = xf[_u(s + o)]
            b += ow_
            s += step
    else:
        for _ in range(rows):
            _zero(cf, b, b + lo)
            for o in range(lo, hi):
                cf[_u(b + o)] = xf[_u(s + o * sw)]
            _zero(cf, b + hi, b + ow_)
            b += ow_
            s += step
    _zero(cf, b, b + after * ow_)


@_jit
def _im2col_rows(xf, cf, b, r, n, oh0, nr, x_shape, kh_, kw_, oh_, ow_, stride, pad, dilate):
    """Output rows ``oh0 .. oh0+nr-1`` of image ``n`` in row ``r`` of an im2col matrix (see
    :func:`_im2col_row`), written to flat ``cf`` from offset ``b``: ``nr*OW`` values, column
    ``(oh - oh0)*OW + ow``. Output rows ``[a, e)`` read inside the image, columns ``[lo, hi)``
    inside a row."""
    c_, h_, w_ = x_shape[1], x_shape[2], x_shape[3]
    sh, sw = stride
    ph, pw = pad
    dh, dw = dilate
    c, i, j = r // (kh_ * kw_), (r // kw_) % kh_, r % kw_
    lo, hi = _valid_range(pw, j * dw, sw, w_, ow_)
    hlo, hhi = _valid_range(ph, i * dh, sh, h_, oh_)
    a = min(max(hlo, oh0), oh0 + nr)
    e = max(min(hhi, oh0 + nr), a)
    s = (n * c_ + c) * h_ * w_ + (a * sh - ph + i * dh) * w_ + j * dw - pw
    _im2col_copy(xf, cf, b, s, a - oh0, e - a, oh0 + nr - e, lo, hi, ow_, sh * w_, sw)


@_jit
def _col2im_plane(cf, dxf, t, n0, nb, dx_shape, kh_, kw_, oh_, ow_, stride, pad, dilate, rows, cols):
    """Input plane ``t = (n - n0)*C + c`` of ``dx``: zeroed, then the sum of its taps' ``cols``
    entries (``rows``, ``cols``: :func:`_tap_ranges`)."""
    c_, h_, w_ = dx_shape[1], dx_shape[2], dx_shape[3]
    sh, sw = stride
    ph, pw = pad
    dh, dw = dilate
    nl, c = t // c_, t % c_
    plane = ((n0 + nl) * c_ + c) * h_ * w_
    _zero(dxf, plane, plane + h_ * w_)
    p = oh_ * ow_
    step = sh * w_
    for i in range(kh_):
        hlo, hhi = rows[i, 0], rows[i, 1]
        for j in range(kw_):
            r = (c * kh_ + i) * kw_ + j
            lo, hi = cols[j, 0], cols[j, 1]
            d = plane + (hlo * sh - ph + i * dh) * w_ + j * dw - pw
            s = r * nb * p + nl * p + hlo * ow_
            for _ in range(hlo, hhi):
                if sw == 1:
                    for o in range(lo, hi):
                        dxf[_u(d + o)] += cf[_u(s + o)]
                else:
                    for o in range(lo, hi):
                        dxf[_u(d + o * sw)] += cf[_u(s + o)]
                d += step
                s += ow_


@_jit
def _col2im_block(cols2, dx, n0, kh_, kw_, oh_, ow_, stride, pad, dilate):
    """The adjoint of :func:`_im2col_block`: overwrite ``dx[n0 : n0 + B]`` from ``cols2`` ``(K, B*P)``."""
    cf, dxf = cols2.reshape(-1), dx.reshape(-1)
    nb = cols2.shape[1] // (oh_ * ow_)
    rows, cols = _tap_ranges(dx.shape[2], dx.shape[3], kh_, kw_, oh_, ow_, stride, pad, dilate)
    for t in range(nb * dx.shape[1]):
        _col2im_plane(cf, dxf, t, n0, nb, dx.shape, kh_, kw_, oh_, ow_, stride, pad, dilate, rows, cols)


@_jit
def im2col(x, cols, kh_, kw_, oh_, ow_, stride, pad, dilate):
    """``cols[(c*KH + i)*KW + j, oh*OW + ow] = x[c, oh*sh - ph + i*dh, ow*sw - pw + j*dw]`` (0 outside).

    ``x``: one image ``(C, H, W)``; ``cols``: ``(C*KH*KW, OH*OW)``.
    """
    x4 = x.reshape(1, x.shape[0], x.shape[1], x.shape[2])
    _im2col_block(x4, cols, 0, kh_, kw_, oh_, ow_, stride, pad, dilate)


@_jit
def col2im(cols, dx, kh_, kw_, oh_, ow_, stride, pad, dilate):
    """The adjoint of :func:`im2col`: ``dx[c, ih, iw] = sum`` of the ``cols`` entries that read it.

    ``cols``: ``(C*KH*KW, OH*OW)``; ``dx``: one image ``(C, H, W)``, overwritten.
    """
    dx4 = dx.reshape(1, dx.shape[0], dx.shape[1], dx.shape[2])
    _col2im_block(cols, dx4, 0, kh_, kw_, oh_, ow_, stride, pad, dilate)
