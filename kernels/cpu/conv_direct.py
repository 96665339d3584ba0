"""2-D convolution forwards (NCHW) that need no im2col, chosen by the compiler per shape:

* **depthwise** (:func:`conv2d_forward_depthwise`): every filter reads one input channel
  (``num_group`` equal to the channel count, ``F = C * multiplier`` filters of shape ``(1, KH,
  KW)``), as MobileNet's 3x3 layers. No BLAS and no scratch: per output row, each tap adds
  ``w * x[row]`` over the columns it reaches inside the image, so the row stays in L1 across the
  taps and a unit-stride row is one vectorised loop; a 3x3 window sums its nine products per
  output and stores it once (:func:`_plane3x3`: 1.2-1.3x at stride 1, 1.4x at stride 2 on
  MobileNet v2's layers). The im2col + GEMM path of
  :mod:`symjit.kernels.cpu.conv` would make one tiny GEMM (one filter, ``KH*KW`` deep) per channel.
* **pointwise** (:func:`conv2d_forward_1x1`): a 1x1 window at stride 1 without padding, whose
  im2col would be a copy of the input: one GEMM per image and group, ``W (F, C) @ x[n] (C, H*W)``,
  straight into the NCHW output.

Figures in ``docs/performance.md``. Shape contract (validate with :func:`check_depthwise` first;
Numba does no bounds checks): ``x`` ``(N, C, H, W)``, ``w`` ``(F, C/groups, KH, KW)``, ``out``
``(N, F, OH, OW)`` with ``conv2d_output_size``'s ``OH, OW``; stride and dilate >= 1, pad >= 0;
C-contiguous arrays of one float dtype.

>>> import numpy as np
>>> x = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
>>> out = np.empty((1, 1, 2, 2))
>>> check_depthwise(x, np.ones((1, 1, 2, 2)), out, (2, 2), (0, 0), (1, 1))
>>> conv2d_forward_depthwise(x, np.ones((1, 1, 2, 2)), out, (2, 2), (0, 0), (1, 1))
>>> out[0, 0]
array([[10., 18.],
       [42., 50.]])
"""
from __future__ import annotations

import numpy as np
from numba import uint64 as _u

from symjit.base import shape_str

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from ._parallel import part_range
from .conv_shapes import (  # noqa: F401  (re-exported)
    POINTWISE_MIN_PIXELS,
    conv2d_output_size,
    is_depthwise,
    is_pointwise,
)
from .gemm import KernelArgError
from .im2col import _valid_range

__all__ = ["conv2d_forward_depthwise", "conv2d_forward_depthwise_parts", "conv2d_forward_1x1",
           "check_depthwise", "is_depthwise", "is_pointwise", "POINTWISE_MIN_PIXELS"]

_jit = njit(cache=True, nogil=True)


def check_depthwise(x: np.ndarray, w: np.ndarray, out: np.ndarray, stride, pad, dilate) -> None:
    """Raise :class:`KernelArgError` unless the arrays fit :func:`conv2d_forward_depthwise`."""
    if x.ndim != 4 or w.ndim != 4 or out.ndim != 4:
        raise KernelArgError("conv2d_forward_depthwise: x, w and out must be 4-D, got "
                             f"{shape_str(x.shape)}, {shape_str(w.shape)}, {shape_str(out.shape)}")
    if w.shape[1] != 1 or w.shape[0] % x.shape[1]:
        raise KernelArgError(f"conv2d_forward_depthwise: weight {shape_str(w.shape)} must be (F, 1, KH, KW) "
                             f"with F a multiple of the {x.shape[1]} channels")
    oh, ow = conv2d_output_size(x.shape[2:], w.shape[2:], stride, pad, dilate)
    if out.shape != (x.shape[0], w.shape[0], oh, ow):
        raise KernelArgError(f"conv2d_forward_depthwise: out {shape_str(out.shape)} must be "
                             f"{shape_str((x.shape[0], w.shape[0], oh, ow))}")
    if len({x.dtype, w.dtype, out.dtype}) != 1 or not all(a.flags.c_contiguous for a in (x, w, out)):
        raise KernelArgError("conv2d_forward_depthwise: x, w and out must be C-contiguous arrays of "
                             "one dtype")


@_jit
def _plane(xf, of, wf, xb, ob, wb, h_, w_, oh_, ow_, kh_, kw_, stride, pad, dilate, los, his):
    """Output plane at ``of[ob:]`` from the input plane at ``xf[xb:]`` and the taps at ``wf[wb:]``;
    ``los[j], his[j]``: the output columns tap column ``j`` reaches inside the image."""
    sh, sw = stride
    ph, pw = pad
    dh, dw = dilate
    for oh in range(oh_):
        orow = ob + oh * ow_
        for q in range(ow_):
            of[_u(orow + q)] = 0
        for i in range(kh_):
            ih = oh * sh - ph + i * dh
            if ih < 0 or ih >= h_:
                continue
            xrow = xb + ih * w_
            for j in range(kw_):
                wv = wf[_u(wb + i * kw_ + j)]
                lo, hi = los[j], his[j]
                s = xrow + j * dw - pw
                if sw == 1:
                    for o in range(lo, hi):
                        of[_u(orow + o)] += wv * xf[_u(s + o)]
                else:
                    for o in range(lo, hi):
                        of[_u(orow + o)] += wv * xf[_u(s + o * sw)]


@_jit
def _edge(xf, xb, h_, w_, wf, wb, ih0, iw0, zero):
    """One output of a 3x3 window at input ``(ih0, iw0)`` (its top left), taps outside the image 0
    (``zero``: 0 in the arrays' dtype)."""
    acc = zero
    for i in range(3):
        ih = ih0 + i
        if 0 <= ih < h_:
            for j in range(3):
                iw = iw0 + j
                if 0 <= iw < w_:
                    acc += wf[_u(wb + i * 3 + j)] * xf[_u(xb + ih * w_ + iw)]
    return acc


@_jit
def _plane3x3(xf, of, wf, xb, ob, wb, h_, w_, oh_, ow_, stride, pad, zrow, lo, hi):
    """:func:`_plane` of a 3x3 window without dilation (MobileNet's): each output of the columns
    ``lo .. hi`` (those whose three taps are inside the image) is its nine products summed and
    stored once, from three input rows (a row of zeros above or below the image), one vectorised
    loop per output row; the edge columns by :func:`_edge`."""
    sh, sw = stride
    ph, pw = pad
    w00, w01, w02 = wf[_u(wb)], wf[_u(wb + 1)], wf[_u(wb + 2)]
    w10, w11, w12 = wf[_u(wb + 3)], wf[_u(wb + 4)], wf[_u(wb + 5)]
    w20, w21, w22 = wf[_u(wb + 6)], wf[_u(wb + 7)], wf[_u(wb + 8)]
    for oh in range(oh_):
        ih0 = oh * sh - ph
        a, ao = (xf, xb + ih0 * w_) if 0 <= ih0 < h_ else (zrow, 0)
        b, bo = (xf, xb + (ih0 + 1) * w_) if 0 <= ih0 + 1 < h_ else (zrow, 0)
        c, co = (xf, xb + (ih0 + 2) * w_) if 0 <= ih0 + 2 < h_ else (zrow, 0)
        orow = ob + oh * ow_
        for ow in range(lo, hi):
            i = ow * sw - pw
            of[_u(orow + ow)] = (w00 * a[_u(ao + i)] + w01 * a[_u(ao + i + 1)] + w02 * a[_u(ao + i + 2)]
                                 + w10 * b[_u(bo + i)] + w11 * b[_u(bo + i + 1)] + w12 * b[_u(bo + i + 2)]
                                 + w20 * c[_u(co + i)] + w21 * c[_u(co + i + 1)] + w22 * c[_u(co + i + 2)])
        for ow in range(0, lo):
            of[_u(orow + ow)] = _edge(xf, xb, h_, w_, wf, wb, ih0, ow * sw - pw, zrow[0])
        for ow in range(max(lo, hi), ow_):
            of[_u(orow + ow)] = _edge(xf, xb, h_, w_, wf, wb, ih0, ow * sw - pw, zrow[0])


@_jit
def _column_ranges(w_, ow_, kw_, stride, pad, dilate):
    """Per tap column ``j``: the output columns ``[los[j], his[j])`` it reaches inside the image."""
    los, his = np.empty(kw_, np.int64), np.empty(kw_, np.int64)
    for j in range(kw_):
        los[j], his[j] = _valid_range(pad[1], j * dilate[1], stride[1], w_, ow_)
    return los, his


@_jit
def _planes(x, w, out, stride, pad, dilate, q0, q1, los, his):
    """Output planes ``q0 .. q1`` (``q = n * F + f``) of :func:`conv2d_forward_depthwise`: a 3x3
    window without dilation by :func:`_plane3x3`, others by :func:`_plane`."""
    c_, h_, w_ = x.shape[1], x.shape[2], x.shape[3]
    f_, _, kh_, kw_ = w.shape
    oh_, ow_ = out.shape[2], out.shape[3]
    mult = f_ // c_
    xf, of, wf = x.reshape(-1), out.reshape(-1), w.reshape(-1)
    three = kh_ == 3 and kw_ == 3 and dilate[0] == 1 and dilate[1] == 1
    zrow = np.zeros(w_ + 2 if three else 0, x.dtype)
    lo, hi = (los[0], his[2]) if three else (0, 0)
    for q in range(q0, q1):
        n, f = q // f_, q % f_
        if three:
            _plane3x3(xf, of, wf, (n * c_ + f // mult) * h_ * w_, q * oh_ * ow_, f * 9,
                      h_, w_, oh_, ow_, stride, pad, zrow, lo, hi)
        else:
            _plane(xf, of, wf, (n * c_ + f // mult) * h_ * w_, q * oh_ * ow_, f * kh_ * kw_,
                   h_, w_, oh_, ow_, kh_, kw_, stride, pad, dilate, los, his)


@_jit
def conv2d_forward_depthwise(x, w, out, stride, pad, dilate):
    """``out[n, f] = sum_ij w[f, 0, i, j] * x[n, f // (F/C), oh*sh - ph + i*dh, ow*sw - pw + j*dw]``
    (0 outside the image), direct: no BLAS, no scratch."""
    los, his = _column_ranges(x.shape[3], out.shape[3], w.shape[3], stride, pad, dilate)
    _planes(x, w, out, stride, pad, dilate, 0, x.shape[0] * w.shape[0], los, his)


@_jit
def conv2d_forward_depthwise_parts(x, w, out, stride, pad, dilate, part, parts, sync):
    """:func:`conv2d_forward_depthwise` of part ``part`` of ``parts`` even runs of the output planes
    (``N * F``; the compiler calls it for outputs of at least ``threads.SPLIT_MIN`` elements,
    MobileNet's layers, and the host runs the parts on its threads, :mod:`symjit.parts`)."""
    los, his = _column_ranges(x.shape[3], out.shape[3], w.shape[3], stride, pad, dilate)
    q0, q1 = part_range(part, parts, x.shape[0] * w.shape[0])
    _planes(x, w, out, stride, pad, dilate, q0, q1, los, his)


@_jit
def conv2d_forward_1x1(x, w, out, groups):
    """``out[n] = W @ x[n]`` per image and group for a 1x1 window at stride 1, pad 0 (``W`` the
    weight as ``(F, C/groups)``): one GEMM each, written NCHW."""
    n_, c_ = x.shape[0], x.shape[1]
    f_ = w.shape[0]
    p = x.shape[2] * x.shape[3]
    cg, fg = c_ // groups, f_ // groups
    w2 = w.reshape(f_, cg)
    for n in range(n_):
        xn, on = x[n].reshape(c_, p), out[n].reshape(f_, p)
        for g in range(groups):
            np.dot(w2[g * fg:(g + 1) * fg], xn[g * cg:(g + 1) * cg], on[g * fg:(g + 1) * fg])
