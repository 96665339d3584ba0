"""Per-element routines of deformable convolution's column op (:mod:`symjit.ops.deform`), wrapped
per target (:mod:`symjit.lower.deform`). A sampling point of kernel tap ``t`` at output position
``(oh, ow)`` of deformable group ``dg`` is ``(oh*sh - ph + i*dh + offset[n, dg*2K + 2t, oh, ow],
ow*sw - pw + j*dw + offset[n, dg*2K + 2t + 1, oh, ow])`` with ``(i, j)`` the tap's row and column;
its value is the bilinear interpolation of the data there, times ``mask[n, dg*K + t, oh, ow]`` for
the modulated form. The two forms interpolate as MXNet's kernels do (:func:`corners`): the modulated
one (DCN v2) reads points in ``(-1, H) x (-1, W)`` with corners outside the map counting 0; the
plain one (DCN v1) reads points in ``[0, H) x [0, W)`` and clamps points past the last row or
column onto it.
Columns are laid out ``(C*K, N*OH*OW)`` so the convolution is one GEMM per group.

The backward routines each own what they write: one (image, channel) map of the data gradient
(going over every sampling point of that channel), one element of the offset or mask gradient
(summing over the channels of its deformable group): no two iterations write one element.
"""
from __future__ import annotations

import math

from ..jitext import jitable

__all__ = ["sample_point", "corners", "pixel", "bilinear", "bilinear_grad", "scatter", "deform_col_element",
           "deform_data_backward", "deform_offset_backward", "deform_mask_backward"]


@jitable
def sample_point(offset, n, dg, t, oh, ow, kw, k, sh, sw, ph, pw, dh, dw):
    """(y, x) of tap ``t`` of group ``dg`` at output (oh, ow)."""
    i = t // kw
    j = t - i * kw
    y = oh * sh - ph + i * dh + offset[n, dg * 2 * k + 2 * t, oh, ow]
    x = ow * sw - pw + j * dw + offset[n, dg * 2 * k + 2 * t + 1, oh, ow]
    return y, x


@jitable
def corners(y, x, h, w, v1):
    """The interpolation cell of (y, x): ``(y0, x0, y1, x1, ly, lx, ok)``. DCN v2 (``v1`` false)
    reads points in (-1, h) x (-1, w), its corners outside the map counting 0; MXNet's DCN v1 reads
    points in [0, h) x [0, w) and clamps a point past the last row (column) onto it."""
    if v1:
        if y < 0.0 or x < 0.0 or y >= h or x >= w:
            return 0, 0, 0, 0, 0.0, 0.0, False
    elif y <= -1.0 or x <= -1.0 or y >= h or x >= w:
        return 0, 0, 0, 0, 0.0, 0.0, False
    y0 = int(math.floor(y))
    x0 = int(math.floor(x))
    ly = y - y0
    lx = x - x0
    y1 = y0 + 1
    x1 = x0 + 1
    if v1 and y0 >= h - 1:
        y0 = h - 1
        y1 = h - 1
        ly = 0.0
    if v1 and x0 >= w - 1:
        x0 = w - 1
        x1 = w - 1
        lx = 0.0
    return y0, x0, y1, x1, ly, lx, True


@jitable
def pixel(data, n, c, yy, xx, h, w):
    """data[n, c, yy, xx], 0 outside the map."""
    if yy < 0 or xx < 0 or yy > h - 1 or xx > w - 1:
        return 0.0
    return data[n, c, yy, xx]


@jitable
def bilinear(data, n, c, y, x, h, w, v1):
    """The data of map (n, c) interpolated at (y, x)."""
    y0, x0, y1, x1, ly, lx, ok = corners(y, x, h, w, v1)
    if not ok:
        return 0.0
    top = (1.0 - lx) * pixel(data, n, c, y0, x0, h, w) + lx * pixel(data, n, c, y0, x1, h, w)
    bottom = (1.0 - lx) * pixel(data, n, c, y1, x0, h, w) + lx * pixel(data, n, c, y1, x1, h, w)
    return (1.0 - ly) * top + ly * bottom


@jitable
def bilinear_grad(data, n, c, y, x, h, w, v1):
    """(d value / dy, d value / dx) of :func:`bilinear` at (y, x)."""
    y0, x0, y1, x1, ly, lx, ok = corners(y, x, h, w, v1)
    if not ok:
        return 0.0, 0.0
    v00 = pixel(data, n, c, y0, x0, h, w)
    v01 = pixel(data, n, c, y0, x1, h, w)
    v10 = pixel(data, n, c, y1, x0, h, w)
    v11 = pixel(data, n, c, y1, x1, h, w)
    return (1.0 - lx) * (v10 - v00) + lx * (v11 - v01), (1.0 - ly) * (v01 - v00) + ly * (v11 - v10)


@jitable
def scatter(dx, n, c, yy, xx, h, w, g):
    if yy >= 0 and xx >= 0 and yy <= h - 1 and xx <= w - 1:
        dx[n, c, yy, xx] += g


def deform_col_element(data, offset, mask, cols, row, q, kh, kw, sh, sw, ph, pw, dh, dw, oh_n, ow_n,
                       group_c, modulated):
    """``cols[row, q]`` with ``row = c*K + t`` and ``q = (n*OH + oh)*OW + ow``."""
    k = kh * kw
    c = row // k
    t = row - c * k
    n = q // (oh_n * ow_n)
    rest = q - n * oh_n * ow_n
    oh = rest // ow_n
    ow = rest - oh * ow_n
    dg = c // group_c
    y, x = sample_point(offset, n, dg, t, oh, ow, kw, k, sh, sw, ph, pw, dh, dw)
    v = bilinear(data, n, c, y, x, data.shape[2], data.shape[3], not modulated)
    if modulated:
        v *= mask[n, dg * k + t, oh, ow]
    cols[row, q] = v


def deform_data_backward(gcols, offset, mask, dx, n, c, kh, kw, sh, sw, ph, pw, dh, dw, oh_n, ow_n,
                         group_c, modulated):
    """``dx[n, c]``: every sampling point of channel c of image n sends its column gradient to the
    (up to four) pixels it interpolated, with their bilinear weights."""
    h = dx.shape[2]
    w = dx.shape[3]
    for yy in range(h):
        for xx in range(w):
            dx[n, c, yy, xx] = 0.0
    k = kh * kw
    dg = c // group_c
    for t in range(k):
        for oh in range(oh_n):
            for ow in range(ow_n):
                g = gcols[c * k + t, (n * oh_n + oh) * ow_n + ow]
                if modulated:
                    g *= mask[n, dg * k + t, oh, ow]
                y, x = sample_point(offset, n, dg, t, oh, ow, kw, k, sh, sw, ph, pw, dh, dw)
                y0, x0, y1, x1, ly, lx, ok = corners(y, x, h, w, not modulated)
                if ok:
                    scatter(dx, n, c, y0, x0, h, w, g * (1.0 - ly) * (1.0 - lx))
                    scatter(dx, n, c, y0, x1, h, w, g * (1.0 - ly) * lx)
                    scatter(dx, n, c, y1, x0, h, w, g * ly * (1.0 - lx))
                    scatter(dx, n, c, y1, x1, h, w, g * ly * lx)


def deform_offset_backward(gcols, data, offset, mask, doff, n, oc, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw,
                           oh_n, ow_n, group_c, modulated):
    """``doff[n, oc, oh, ow]``: over the channels of the offset's deformable group, the column
    gradient times the interpolation's derivative along the offset's coordinate."""
    k = kh * kw
    dg = oc // (2 * k)
    t = (oc - dg * 2 * k) // 2
    coord = oc - dg * 2 * k - 2 * t
    y, x = sample_point(offset, n, dg, t, oh, ow, kw, k, sh, sw, ph, pw, dh, dw)
    m = mask[n, dg * k + t, oh, ow] if modulated else 1.0
    acc = 0.0
    for c in range(dg * group_c, (dg + 1) * group_c):
        gy, gx = bilinear_grad(data, n, c, y, x, data.shape[2], data.shape[3], not modulated)
        g = gcols[c * k + t, (n * oh_n + oh) * ow_n + ow] * m
        acc += g * (gy if coord == 0 else gx)
    doff[n, oc, oh, ow] = acc


def deform_mask_backward(gcols, data, offset, dmask, n, mc, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw,
                         oh_n, ow_n, group_c):
    """``dmask[n, mc, oh, ow]``: over the channels of the mask's deformable group, the column
    gradient times the interpolated value."""
    k = kh * kw
    dg = mc // k
    t = mc - dg * k
    y, x = sample_point(offset, n, dg, t, oh, ow, kw, k, sh, sw, ph, pw, dh, dw)
    acc = 0.0
    for c in range(dg * group_c, (dg + 1) * group_c):
        acc += gcols[c * k + t, (n * oh_n + oh) * ow_n + ow] * bilinear(data, n, c, y, x, data.shape[2],
                                                                        data.shape[3], False)
    dmask[n, mc, oh, ow] = acc
