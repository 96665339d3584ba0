"""2-D pooling kernels (NCHW): max, avg and sum, forward and backward.

Shape contract (validate with :func:`check_pool2d` first; Numba does no bounds checks):
``x``/``dx`` ``(N, C, H, W)``, ``out``/``dout`` ``(N, C, OH, OW)``; ``kernel``, ``stride``, ``pad``
tuples of two ints ``(y, x)`` (kernel, stride >= 1, pad >= 0, symmetric as MXNet's ``pad``);
all arrays C-contiguous, one dtype (float32 or float64). Kernels overwrite their outputs.

The output size encodes MXNet's ``pooling_convention`` (see :func:`pool_output_size`): output
``(oh, ow)`` reads the window rows ``[oh*sh - ph, oh*sh - ph + kh)`` clipped to ``[-ph, H + ph)``
(the padded input) and then to the real rows ``[0, H)``; the same for columns. So with
``'full'`` (ceil) a last window may stick out past the padding and is simply cut short.

* max: padding never wins (it is not a value). A window with no real element (possible only
  with ``'full'`` and a large stride) gives the lowest finite value of the dtype, as MXNet's CPU
  kernel does. A NaN in a window makes the result NaN.
* avg: the divisor is the window area clipped to the padded input when ``count_include_pad``
  (MXNet's default), else the number of real elements; a window with no real element gives 0.
* sum: the sum of the real elements.
* max backward *recomputes* the argmax from ``x`` (no saved index array): the gradient goes to the
  first maximum in row-major window order (the first NaN if any); ``dx`` is 0 elsewhere.

For global pooling, pass ``kernel=(H, W)``, ``stride=(1, 1)``, ``pad=(0, 0)``
(:func:`pool2d_params` resolves them).

>>> import numpy as np
>>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
>>> k, s, p = (2, 2), (2, 2), (0, 0)
>>> out = np.empty((1, 1) + pool_output_size((4, 4), k, s, p, "valid"), np.float32)
>>> check_pool2d("max", x, out, k, s, p, "valid")
>>> max_pool2d_forward(x, out, k, s, p)
>>> out[0, 0]
array([[ 5.,  7.],
       [13., 15.]], dtype=float32)
"""
from __future__ import annotations

import math

import numba
import numpy as np

from symjit.base import shape_str

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from ._parallel import part_range
from .gemm import KernelArgError, check_arrays, need_ndim, need_shape

__all__ = [
    "POOL_TYPES", "CONVENTIONS", "pool_output_size", "pool2d_params", "check_pool2d",
    "max_pool2d_forward", "avg_pool2d_forward", "sum_pool2d_forward",
    "max_pool2d_backward", "avg_pool2d_backward", "sum_pool2d_backward",
    "max_pool2d_forward_parts", "max_pool2d_backward_parts", "avg_pool2d_forward_parts",
    "avg_pool2d_backward_parts",
]

POOL_TYPES = ("max", "avg", "sum")
CONVENTIONS = ("valid", "full")

_jit = njit(cache=True, nogil=True)


# ---------------------------------------------------------------------------------------------
# Python-side helpers.


def pool_output_size(hw: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int],
                     pad: tuple[int, int], convention: str = "valid",
                     global_pool: bool = False) -> tuple[int, int]:
    """Output ``(OH, OW)``: ``'valid'`` floor((x+2p-k)/s)+1, ``'full'`` ceil((x+2p-k)/s)+1; global (1, 1).

    >>> pool_output_size((24, 24), (2, 2), (2, 2), (0, 0))
    (12, 12)
    >>> pool_output_size((5, 5), (2, 2), (2, 2), (0, 0), "full")
    (3, 3)
    """
    if convention not in CONVENTIONS:
        raise KernelArgError(f"pool_output_size: pooling_convention must be one of {CONVENTIONS}, "
                             f"got {convention!r}")
    if global_pool:
        return 1, 1
    out = []
    for axis, (x, k, s, p) in enumerate(zip(hw, kernel, stride, pad)):
        if k < 1 or s < 1 or p < 0:
            raise KernelArgError(f"pool_output_size: need kernel >= 1, stride >= 1, pad >= 0, got "
                                 f"kernel={tuple(kernel)}, stride={tuple(stride)}, pad={tuple(pad)}")
        if x + 2 * p < k:
            raise KernelArgError(f"pool_output_size: kernel {tuple(kernel)} exceeds the input "
                                 f"{tuple(hw)} padded by {tuple(pad)} (axis {axis})")
        span = x + 2 * p - k
        out.append(span // s + 1 if convention == "valid" else math.ceil(span / s) + 1)
    return out[0], out[1]


def pool2d_params(hw: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int],
                  pad: tuple[int, int], global_pool: bool = False):
    """The ``(kernel, stride, pad)`` to pass to a kernel; global pooling resets them to the input size.

    >>> pool2d_params((7, 5), (2, 2), (2, 2), (1, 1), global_pool=True)
    ((7, 5), (1, 1), (0, 0))
    """
    if global_pool:
        return (int(hw[0]), int(hw[1])), (1, 1), (0, 0)
    return tuple(kernel), tuple(stride), tuple(pad)


def _check_params(name: str, kernel, stride, pad) -> None:
    for arg, val, low in (("kernel", kernel, 1), ("stride", stride, 1), ("pad", pad, 0)):
        if (not isinstance(val, tuple) or len(val) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) and v >= low for v in val)):
            raise KernelArgError(f"{name}: argument '{arg}' must be a tuple of two ints >= {low}, "
                                 f"got {val!r}")


def check_pool2d(pool_type: str, data: np.ndarray, out: np.ndarray, kernel: tuple[int, int],
                 stride: tuple[int, int], pad: tuple[int, int], convention: str = "valid",
                 x: np.ndarray | None = None) -> None:
    """Validate a pooling kernel's arguments: ``data`` is ``x`` (forward) or ``dx`` (backward),
    ``out`` is ``out``/``dout``; pass ``x`` too for ``max_pool2d_backward``.

    Raises :class:`~symjit.kernels.cpu.gemm.KernelArgError` (a ``ValueError``) naming the argument.

    >>> try:
    ...     check_pool2d("avg", np.zeros((1, 2, 4, 4)), np.zeros((1, 2, 3, 3)), (2, 2), (2, 2), (0, 0))
    ... except ValueError as err:
    ...     print(str(err)[:66])
    pool2d_avg: argument 'out' has shape (1,2,3,3), expected (1,2,2,2)
    """
    if pool_type not in POOL_TYPES:
        raise KernelArgError(f"check_pool2d: pool_type must be one of {POOL_TYPES}, got {pool_type!r}")
    name = f"pool2d_{pool_type}"
    arrays = {"data": data, "out": out} if x is None else {"data": data, "out": out, "x": x}
    check_arrays(name, **arrays)
    _check_params(name, kernel, stride, pad)
    need_ndim(name, "data", data, 4)
    if x is not None:
        need_shape(name, "x", x, data.shape, " (the forward input, same shape as dx)")
    n, c, h, w = data.shape
    if h < 1 or w < 1:
        raise KernelArgError(f"{name}: argument 'data' has an empty spatial size, "
                             f"shape {shape_str(data.shape)}")
    oh, ow = pool_output_size((h, w), kernel, stride, pad, convention)
    need_shape(name, "out", out, (n, c, oh, ow), f" for kernel={kernel}, stride={stride}, pad={pad}, "
               f"pooling_convention={convention!r}")


# ---------------------------------------------------------------------------------------------
# Kernels.


@_jit
def _window(o, s, p, k, size):
    """Window ``[lo, hi)`` of output index ``o`` on an axis of ``size``, and its extent in the
    padded input (for ``count_include_pad``)."""
    start = o * s - p
    end = min(start + k, size + p)
    padded = end - start
    return max(start, 0), min(end, size), padded


@_jit
def _ranges(o_, s, p, k, size):
    """Clipped windows ``[lo[o], hi[o])`` of every output index ``o < o_`` on one axis."""
    lo = np.empty(o_, np.int64)
    hi = np.empty(o_, np.int64)
    for o in range(o_):
        lo[o], hi[o], _ = _window(o, s, p, k, size)
    return lo, hi


@_jit
def _tiles_2x2(x, out, kernel, stride, pad):
    """Whether every window is a whole 2x2 tile of the input (kernel = stride = 2, no padding,
    no window cut short): the case the unrolled forward kernel serves."""
    return (kernel[0] == 2 and kernel[1] == 2 and stride[0] == 2 and stride[1] == 2
            and pad[0] == 0 and pad[1] == 0
            and 2 * out.shape[2] <= x.shape[2] and 2 * out.shape[3] <= x.shape[3])


@_jit
def _max_pool_2x2_forward(x, out):
    """:func:`max_pool2d_forward` of whole 2x2 tiles, unrolled (7x faster at LeNet's pool1)."""
    n_, c_, h_, w_ = x.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    xf, of = x.reshape(-1), out.reshape(-1)
    one, wu = np.uint64(1), np.uint64(w_)
    for q in range(n_ * c_):
        for oh in range(oh_):
            r0 = np.uint64(q * h_ * w_ + 2 * oh * w_)
            ob = np.uint64((q * oh_ + oh) * ow_)
            for ow in range(ow_):
                k = r0 + np.uint64(2 * ow)
                a, b, c, d = xf[k], xf[k + one], xf[k + wu], xf[k + wu + one]
                m = a
                m = b if b > m else m
                m = c if c > m else m
                m = d if d > m else m
                nan = (a != a) | (b != b) | (c != c) | (d != d)
                of[ob + np.uint64(ow)] = np.nan if nan else m


@numba.njit(inline="always")
def _nan_max(v, m):
    """``max(v, m)`` that keeps a NaN of either (a select LLVM vectorises)."""
    return v if (v > m) | (v != v) else m


@numba.njit(inline="always")
def _row_maxima(xf, r, w_, rows, inner):
    """``inner[w] = max(x[r + i * w_ + w] for i < rows)`` (the column maxima of ``rows`` input
    rows from offset ``r``), the first row first. Windows of two and three rows (every 2x2 and
    3x3 pool) take one pass over their rows; a running maximum kept in ``inner`` and read back
    from each row ran ~2.5x slower."""
    wn = inner.size
    a = xf[r:r + wn]
    if rows == 3:
        b, c = xf[r + w_:r + w_ + wn], xf[r + 2 * w_:r + 2 * w_ + wn]
        for w in range(wn):
            inner[w] = _nan_max(c[w], _nan_max(b[w], a[w]))
    elif rows == 2:
        b = xf[r + w_:r + w_ + wn]
        for w in range(wn):
            inner[w] = _nan_max(b[w], a[w])
    else:
        for w in range(wn):
            inner[w] = a[w]
        for i in range(1, rows):
            src = xf[r + i * w_:r + i * w_ + wn]
            for w in range(wn):
                inner[w] = _nan_max(src[w], inner[w])


@numba.njit(inline="always")
def _column_maxima(cm, dst, kw, sw):
    """``dst[ow] = max(cm[ow * sw + j] for j < kw)``, ``j = 0`` first; the 3x3 pools' windows
    (stride 1 or 2) in one pass."""
    if kw == 3 and sw == 2:      # constant strides: LLVM vectorises the reads (shuffles)
        for ow in range(dst.size):
            dst[ow] = _nan_max(cm[2 * ow + 2], _nan_max(cm[2 * ow + 1], cm[2 * ow]))
        return
    if kw == 3 and sw == 1:
        for ow in range(dst.size):
            dst[ow] = _nan_max(cm[ow + 2], _nan_max(cm[ow + 1], cm[ow]))
        return
    for ow in range(dst.size):
        dst[ow] = cm[ow * sw]
    for j in range(1, kw):
        for ow in range(dst.size):
            dst[ow] = _nan_max(cm[ow * sw + j], dst[ow])


@_jit
def _max_pool_separable(x, out, kernel, stride, pad, hlo, hhi):
    """:func:`max_pool2d_forward` when no window is empty: per output row, the column maxima
    over its input rows first (contiguous rows, vectorised), then the maxima over each window's
    columns, read tap by tap from a row padded with -inf (ResNet's stem pool at batch 2: 0.32 ms,
    against 1.8 ms for a running maximum over the rows and 5 ms for one loop per window)."""
    n_, c_, h_, w_ = x.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    kw, sw, pw = kernel[1], stride[1], pad[1]
    cm = np.full((ow_ - 1) * sw + kw, -np.inf, x.dtype)   # padded column maxima of one output row
    wn = min(w_, cm.shape[0] - pw)                          # the input columns some window reads
    inner = cm[pw:pw + wn]
    xf, of = x.reshape(-1), out.reshape(-1)
    for q in range(n_ * c_):
        xb, ob = q * h_ * w_, q * oh_ * ow_
        for oh in range(oh_):
            _row_maxima(xf, xb + hlo[oh] * w_, w_, hhi[oh] - hlo[oh], inner)
            _column_maxima(cm, of[ob + oh * ow_:ob + (oh + 1) * ow_], kw, sw)


@_jit
def max_pool2d_forward(x, out, kernel, stride, pad):
    """Max pooling: ``out[n, c, oh, ow]`` = max over the clipped window (module contract).

    Whole 2x2 tiles (kernel = stride = 2, no padding) take an unrolled loop, other shapes whose
    windows all hold an input element a separable one (:func:`_max_pool_separable`). Otherwise a
    branch-free loop per window (a running max by select, NaN recorded in a flag), flat
    ``uint64`` offsets, so Numba adds no negative-index wraparound checks.
    """
    if _tiles_2x2(x, out, kernel, stride, pad):
        _max_pool_2x2_forward(x, out)
        return
    hlo, hhi = _ranges(out.shape[2], stride[0], pad[0], kernel[0], x.shape[2])
    wlo, whi = _ranges(out.shape[3], stride[1], pad[1], kernel[1], x.shape[3])
    if np.all(hhi > hlo) and np.all(whi > wlo):
        _max_pool_separable(x, out, kernel, stride, pad, hlo, hhi)
        return
    n_, c_, h_, w_ = x.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    lowest = np.finfo(x.dtype).min
    xf, of = x.reshape(-1), out.reshape(-1)
    for q in range(n_ * c_):
        xb, ob = np.uint64(q * h_ * w_), np.uint64(q * oh_ * ow_)
        for oh in range(oh_):
            h0, h1 = hlo[oh], hhi[oh]
            for ow in range(ow_):
                w0, w1 = wlo[ow], whi[ow]
                best, nan = -np.inf, False
                for i in range(h0, h1):
                    rb = xb + np.uint64(i * w_)
                    for j in range(w0, w1):
                        v = xf[rb + np.uint64(j)]
                        nan |= v != v
                        best = v if v > best else best
                if h1 <= h0 or w1 <= w0:
                    best = lowest
                elif nan:
                    best = np.nan
                of[ob + np.uint64(oh * ow_ + ow)] = best


@_jit
def _window_sum(plane, h0, h1, w0, w1):
    """Sum of ``plane[h0:h1, w0:w1]`` (accumulated in float64)."""
    s = 0.0  # accumulate in float64
    for i in range(h0, h1):
        for j in range(w0, w1):
            s += plane[i, j]
    return s


@_jit
def _divisor(h0, h1, w0, w1, ph, pw, count_include_pad):
    """The avg divisor of a window; 0 when the window holds no real element."""
    real = (h1 - h0) * (w1 - w0)
    if real <= 0:
        return 0
    return ph * pw if count_include_pad else real


@numba.njit(inline="always")
def _row_sums(xf, r, w_, rows, inner):
    """``inner[w] = sum(x[r + i * w_ + w] for i < rows)`` added from 0 in row order, as
    :func:`_row_maxima` (windows of three rows in one pass)."""
    wn = inner.size
    zero = inner.dtype.type(0)
    if rows == 3:
        a, b, c = xf[r:r + wn], xf[r + w_:r + w_ + wn], xf[r + 2 * w_:r + 2 * w_ + wn]
        for w in range(wn):
            inner[w] = ((zero + a[w]) + b[w]) + c[w]
        return
    inner[:] = 0
    for i in range(rows):
        src = xf[r + i * w_:r + i * w_ + wn]
        for w in range(wn):
            inner[w] += src[w]


@numba.njit(inline="always")
def _column_sums(cs, acc, kw, sw):
    """``acc[ow] = sum(cs[ow * sw + j] for j < kw)`` in ``j`` order, as :func:`_column_maxima`."""
    if kw == 3 and sw == 1:
        for ow in range(acc.size):
            acc[ow] = (cs[ow] + cs[ow + 1]) + cs[ow + 2]
        return
    if kw == 3 and sw == 2:
        for ow in range(acc.size):
            acc[ow] = (cs[2 * ow] + cs[2 * ow + 1]) + cs[2 * ow + 2]
        return
    for ow in range(acc.size):
        acc[ow] = cs[ow * sw]
    for j in range(1, kw):
        for ow in range(acc.size):
            acc[ow] += cs[ow * sw + j]


@_jit
def _separable_sum(x, out, kernel, stride, pad, scale):
    """``out = scale * (window sum)``, the sum taken separably in ``x``'s dtype (as MXNet sums a
    float32 pool): per output row, the column sums over its window rows first (contiguous rows,
    vectorised), then each window's sum over its columns, read tap by tap from that row padded
    with zeros. ~2x faster than the float64 form it replaced on Inception's 3x3 stride-1 pools,
    ~6x faster than a loop per window. ``scale``: ``(OH, OW)`` float64."""
    n_, c_, h_, w_ = x.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    hlo, hhi = _ranges(oh_, stride[0], pad[0], kernel[0], h_)
    kw, sw, pw = kernel[1], stride[1], pad[1]
    cs = np.zeros((ow_ - 1) * sw + kw, x.dtype)   # padded column sums of one output row
    wn = max(0, min(w_, cs.shape[0] - pw))        # the input columns some window reads
    inner = cs[pw:pw + wn]
    acc = np.empty(ow_, x.dtype)
    sc = scale.astype(x.dtype)
    xf, of = x.reshape(-1), out.reshape(-1)
    for q in range(n_ * c_):
        xb, ob = q * h_ * w_, q * oh_ * ow_
        for oh in range(oh_):
            _row_sums(xf, xb + hlo[oh] * w_, w_, hhi[oh] - hlo[oh], inner)
            _column_sums(cs, acc, kw, sw)
            dst, so = of[ob + oh * ow_:ob + (oh + 1) * ow_], sc[oh]
            for ow in range(ow_):
                dst[ow] = acc[ow] * so[ow]


@_jit
def _avg_scale(h_, w_, oh_, ow_, kernel, stride, pad, count_include_pad):
    """``1 / divisor`` of every output window (0 for a window with no real element)."""
    scale = np.empty((oh_, ow_), np.float64)
    for oh in range(oh_):
        h0, h1, ph = _window(oh, stride[0], pad[0], kernel[0], h_)
        for ow in range(ow_):
            w0, w1, pw = _window(ow, stride[1], pad[1], kernel[1], w_)
            d = _divisor(h0, h1, w0, w1, ph, pw, count_include_pad)
            scale[oh, ow] = 1.0 / d if d > 0 else 0.0
    return scale


@_jit
def avg_pool2d_forward(x, out, kernel, stride, pad, count_include_pad):
    """Average pooling (module contract); divisor per ``count_include_pad`` (MXNet default True).
    Windows over a map of more than one output sum separably; one output per plane (global
    pooling) sums each window in one loop."""
    n_, c_, h_, w_ = x.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    if oh_ * ow_ > 1:
        _separable_sum(x, out, kernel, stride, pad,
                       _avg_scale(h_, w_, oh_, ow_, kernel, stride, pad, count_include_pad))
        return
    for n in range(n_):
        for c in range(c_):
            plane = x[n, c]
            for oh in range(oh_):
                h0, h1, ph = _window(oh, stride[0], pad[0], kernel[0], h_)
                for ow in range(ow_):
                    w0, w1, pw = _window(ow, stride[1], pad[1], kernel[1], w_)
                    d = _divisor(h0, h1, w0, w1, ph, pw, count_include_pad)
                    s = _window_sum(plane, h0, h1, w0, w1)
                    out[n, c, oh, ow] = s / d if d > 0 else 0.0


@_jit
def sum_pool2d_forward(x, out, kernel, stride, pad):
    """Sum pooling: the sum of the real elements of each window (module contract); separable as
    :func:`avg_pool2d_forward`."""
    n_, c_, h_, w_ = x.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    if oh_ * ow_ > 1:
        _separable_sum(x, out, kernel, stride, pad, np.ones((oh_, ow_), np.float64))
        return
    for n in range(n_):
        for c in range(c_):
            plane = x[n, c]
            for oh in range(oh_):
                h0, h1, _ = _window(oh, stride[0], pad[0], kernel[0], h_)
                for ow in range(ow_):
                    w0, w1, _ = _window(ow, stride[1], pad[1], kernel[1], w_)
                    out[n, c, oh, ow] = _window_sum(plane, h0, h1, w0, w1)


@_jit
def _first_nan(xf, xb, h0, h1, w0, w1, w_):
    """Flat index of the first NaN of a window (row-major), else of its first element."""
    for i in range(h0, h1):
        for j in range(w0, w1):
            k = xb + i * w_ + j
            v = xf[np.uint64(k)]
            if v != v:
                return k
    return xb + h0 * w_ + w0


@_jit
def _max_pool_2x2_backward(x, dout, dx):
    """:func:`max_pool2d_backward` of whole 2x2 tiles: each tile's four ``dx`` written at once
    (``dout`` at the first maximum, or the first NaN, and 0 elsewhere), so no zeroing pass and no
    scatter; rows and columns no window covers are zeroed first. LeNet's pool1 at batch 64:
    0.8 ms against 1.03 ms for the general loop."""
    n_, c_, h_, w_ = x.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    xf, df, dxf = x.reshape(-1), dout.reshape(-1), dx.reshape(-1)
    if 2 * oh_ < h_ or 2 * ow_ < w_:
        dxf[:] = 0
    one, wu = np.uint64(1), np.uint64(w_)
    z = np.zeros(1, dxf.dtype)[0]
    for q in range(n_ * c_):
        for oh in range(oh_):
            r0 = np.uint64(q * h_ * w_ + 2 * oh * w_)
            ob = np.uint64((q * oh_ + oh) * ow_)
            for ow in range(ow_):
                k = r0 + np.uint64(2 * ow)
                a, b, c, d = xf[k], xf[k + one], xf[k + wu], xf[k + wu + one]
                m = max(max(a, b), max(c, d))
                # branch-free, so the loop vectorizes: the first NaN if any, else the first maximum
                na, nb, nc, nd = a != a, b != b, c != c, d != d
                ok = ~(na | nb | nc | nd)
                ea, eb, ec = ok & (a == m), ok & (b == m), ok & (c == m)
                ia = na | ea
                ib = (nb & ~na) | (eb & ~ea)
                ic = (nc & ~(na | nb)) | (ec & ~(ea | eb))
                id_ = ~(ia | ib | ic)
                g = df[ob + np.uint64(ow)]
                dxf[k] = g if ia else z
                dxf[k + one] = g if ib else z
                dxf[k + wu] = g if ic else z
                dxf[k + wu + one] = g if id_ else z


@numba.njit(inline="always")
def _window_argmax(xf, xb, h0, h1, w0, w1, w_):
    """Flat index of a window's first maximum (strict ``>`` in row-major order: the first element
    when all are -inf), or of its first NaN."""
    best, bi, nan = -np.inf, xb + h0 * w_ + w0, False
    for i in range(h0, h1):
        rb = xb + i * w_
        for j in range(w0, w1):
            v = xf[np.uint64(rb + j)]
            take = v > best
            best = v if take else best
            bi = rb + j if take else bi
            nan |= v != v
    return _first_nan(xf, xb, h0, h1, w0, w1, w_) if nan else bi


@numba.njit(inline="always")
def _sel_max(v, m):
    """``max(v, m)`` as one select (NaNs are caught apart, see :func:`_first_of_9`)."""
    return v if v > m else m


@numba.njit(inline="always")
def _first_of_9(a0, a1, a2, b0, b1, b2, c0, c1, c2):
    """Of a 3 x 3 window in row-major order: the index of its first maximum (0 .. 8), or -1 when it
    holds a NaN; branch-free selects, so a loop of windows vectorises."""
    m = _sel_max(_sel_max(_sel_max(a0, a1), _sel_max(a2, b0)),
                 _sel_max(_sel_max(b1, b2), _sel_max(_sel_max(c0, c1), c2)))
    t = np.int32(8)
    t = np.int32(7) if c1 == m else t
    t = np.int32(6) if c0 == m else t
    t = np.int32(5) if b2 == m else t
    t = np.int32(4) if b1 == m else t
    t = np.int32(3) if b0 == m else t
    t = np.int32(2) if a2 == m else t
    t = np.int32(1) if a1 == m else t
    t = np.int32(0) if a0 == m else t
    nan = ((a0 != a0) | (a1 != a1) | (a2 != a2) | (b0 != b0) | (b1 != b1) | (b2 != b2)
           | (c0 != c0) | (c1 != c1) | (c2 != c2))
    return np.int32(-1) if nan else t


@_jit
def _taps_3x3s2(xf, r0, w_, lo, hi, pw, tap):
    """``tap[ow]`` for the whole 3 x 3 windows at stride 2 of output columns ``lo .. hi`` whose rows
    start at flat ``r0``, ``r0 + w_``, ``r0 + 2*w_``: :func:`_first_of_9` of the window (its
    columns ``2*ow - pw ..``). Unsigned offsets: no negative-index wraparound in the loop."""
    one, two, w = np.uint64(1), np.uint64(2), np.uint64(w_)
    base = np.uint64(r0 + 2 * lo - pw)
    for ow in range(lo, hi):
        a = base + np.uint64(2 * (ow - lo))
        b, c = a + w, a + w + w
        tap[ow] = _first_of_9(xf[a], xf[a + one], xf[a + two], xf[b], xf[b + one], xf[b + two],
                              xf[c], xf[c + one], xf[c + two])


@_jit
def _max_pool_backward_3x3s2(x, dout, dx, pad, hlo, hhi, wlo, whi):
    """:func:`max_pool2d_backward` of 3 x 3 windows at stride 2 (ResNet's stem, Inception's and
    SqueezeNet's pools): per output row, the windows whole across and down take
    :func:`_taps_3x3s2` (vectorised), the others and those holding a NaN :func:`_window_argmax`;
    then one scalar ``dx += dout`` per window. ``dx`` is zeroed plane by plane, so those adds find
    it in cache. ResNet's stem pool at batch 32: 18 ms against 45 ms for the loop per window."""
    n_, c_, h_, w_ = x.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    pw = pad[1]
    lo, hi = (pw + 1) // 2, min(ow_, (w_ - 3 + pw) // 2 + 1)   # the columns of whole windows
    tap = np.full(ow_, -1, np.int32)
    xf, df, dxf = x.reshape(-1), dout.reshape(-1), dx.reshape(-1)
    for q in range(n_ * c_):
        xb, ob = q * h_ * w_, q * oh_ * ow_
        dxf[xb:xb + h_ * w_] = 0
        for oh in range(oh_):
            h0, h1 = hlo[oh], hhi[oh]
            r0 = xb + h0 * w_
            whole = h1 - h0 == 3 and lo < hi
            if whole:
                _taps_3x3s2(xf, r0, w_, lo, hi, pw, tap)
            for ow in range(ow_):
                t = tap[ow] if whole and lo <= ow < hi else -1
                if t < 0:   # cut short by the padding or the edge, or holds a NaN
                    k = _window_argmax(xf, xb, h0, h1, wlo[ow], whi[ow], w_)
                else:
                    k = r0 + 2 * ow - pw + (t // 3) * w_ + t % 3
                dxf[np.uint64(k)] += df[np.uint64(ob + oh * ow_ + ow)]


@_jit
def max_pool2d_backward(x, dout, dx, kernel, stride, pad):
    """Max pooling gradient: ``dx`` (overwritten) gets ``dout`` at each window's recomputed argmax.

    The argmax is a branch-free running select (strict ``>``: the first maximum; the first element
    when all are -inf); a window holding a NaN is searched again for its first NaN. Whole 2x2
    tiles take :func:`_max_pool_2x2_backward`.
    """
    if _tiles_2x2(x, dout, kernel, stride, pad):
        _max_pool_2x2_backward(x, dout, dx)
        return
    n_, c_, h_, w_ = x.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    hlo, hhi = _ranges(oh_, stride[0], pad[0], kernel[0], h_)
    wlo, whi = _ranges(ow_, stride[1], pad[1], kernel[1], w_)
    if (kernel[0] == 3 and kernel[1] == 3 and stride[0] == 2 and stride[1] == 2
            and np.all(hhi > hlo) and np.all(whi > wlo)):
        _max_pool_backward_3x3s2(x, dout, dx, pad, hlo, hhi, wlo, whi)
        return
    xf, df, dxf = x.reshape(-1), dout.reshape(-1), dx.reshape(-1)
    dxf[:] = 0
    for q in range(n_ * c_):
        xb, ob = q * h_ * w_, q * oh_ * ow_
        for oh in range(oh_):
            h0, h1 = hlo[oh], hhi[oh]
            for ow in range(ow_):
                w0, w1 = wlo[ow], whi[ow]
                if h1 <= h0 or w1 <= w0:
                    continue
                bi = _window_argmax(xf, xb, h0, h1, w0, w1, w_)
                dxf[np.uint64(bi)] += df[np.uint64(ob + oh * ow_ + ow)]


@_jit
def max_pool2d_forward_parts(x, out, kernel, stride, pad, part, parts, sync):
    """:func:`max_pool2d_forward` of part ``part`` of ``parts`` even runs of the planes (``N * C``;
    the host runs the parts on its threads, :mod:`symjit.parts`)."""
    n_, c_, h_, w_ = x.shape
    q_ = n_ * c_
    xr, orr = x.reshape(q_, 1, h_, w_), out.reshape(q_, 1, out.shape[2], out.shape[3])
    q0, q1 = part_range(part, parts, q_)
    max_pool2d_forward(xr[q0:q1], orr[q0:q1], kernel, stride, pad)


@_jit
def max_pool2d_backward_parts(x, dout, dx, kernel, stride, pad, part, parts, sync):
    """:func:`max_pool2d_backward` of a part of the planes (as the forward)."""
    n_, c_, h_, w_ = x.shape
    q_ = n_ * c_
    oh_, ow_ = dout.shape[2], dout.shape[3]
    xr, dr, dxr = x.reshape(q_, 1, h_, w_), dout.reshape(q_, 1, oh_, ow_), dx.reshape(q_, 1, h_, w_)
    q0, q1 = part_range(part, parts, q_)
    max_pool2d_backward(xr[q0:q1], dr[q0:q1], dxr[q0:q1], kernel, stride, pad)


@_jit
def _spread(dplane, h0, h1, w0, w1, g):
    for i in range(h0, h1):
        for j in range(w0, w1):
            dplane[i, j] += g


@_jit
def avg_pool2d_backward(dout, dx, kernel, stride, pad, count_include_pad):
    """Average pooling gradient: each window's real elements get ``dout / divisor``; ``dx`` overwritten."""
    n_, c_, h_, w_ = dx.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    dx[:] = 0
    for n in range(n_):
        for c in range(c_):
            dplane = dx[n, c]
            for oh in range(oh_):
                h0, h1, ph = _window(oh, stride[0], pad[0], kernel[0], h_)
                for ow in range(ow_):
                    w0, w1, pw = _window(ow, stride[1], pad[1], kernel[1], w_)
                    d = _divisor(h0, h1, w0, w1, ph, pw, count_include_pad)
                    if d > 0:
                        _spread(dplane, h0, h1, w0, w1, dout[n, c, oh, ow] / d)


@_jit
def sum_pool2d_backward(dout, dx, kernel, stride, pad):
    """Sum pooling gradient: each window's real elements get ``dout``; ``dx`` overwritten."""
    n_, c_, h_, w_ = dx.shape
    oh_, ow_ = dout.shape[2], dout.shape[3]
    dx[:] = 0
    for n in range(n_):
        for c in range(c_):
            dplane = dx[n, c]
            for oh in range(oh_):
                h0, h1, _ = _window(oh, stride[0], pad[0], kernel[0], h_)
                for ow in range(ow_):
                    w0, w1, _ = _window(ow, stride[1], pad[1], kernel[1], w_)
                    _spread(dplane, h0, h1, w0, w1, dout[n, c, oh, ow])


@_jit
def avg_pool2d_forward_parts(x, out, kernel, stride, pad, count_include_pad, part, parts, sync):
    """:func:`avg_pool2d_forward` of a part of the planes (as the max pool's)."""
    n_, c_, h_, w_ = x.shape
    q_ = n_ * c_
    xr, orr = x.reshape(q_, 1, h_, w_), out.reshape(q_, 1, out.shape[2], out.shape[3])
    q0, q1 = part_range(part, parts, q_)
    avg_pool2d_forward(xr[q0:q1], orr[q0:q1], kernel, stride, pad, count_include_pad)


@_jit
def avg_pool2d_backward_parts(dout, dx, kernel, stride, pad, count_include_pad, part, parts, sync):
    """:func:`avg_pool2d_backward` of a part of the planes."""
    n_, c_, h_, w_ = dx.shape
    q_ = n_ * c_
    oh_, ow_ = dout.shape[2], dout.shape[3]
    dr, dxr = dout.reshape(q_, 1, oh_, ow_), dx.reshape(q_, 1, h_, w_)
    q0, q1 = part_range(part, parts, q_)
    avg_pool2d_backward(dr[q0:q1], dxr[q0:q1], kernel, stride, pad, count_include_pad)
