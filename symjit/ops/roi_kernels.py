"""Per-element routines of the region-of-interest operators (:mod:`symjit.ops.roi`), wrapped per
target like the scalar bodies (:mod:`symjit.lower.roi`): a forward routine computes one output
element (roi, channel, bin row, bin column); a backward routine computes the whole gradient of one
(image, channel) map by going over the rois of that image, so no two loop iterations (CUDA
threads) write the same element. A roi whose batch index is negative reads nothing (output 0).
"""
from __future__ import annotations

import math

from ..jitext import jitable

__all__ = ["dps_box", "dps_bin", "dps_count", "dps_element", "dps_data_backward", "dps_trans_backward",
           "rroi_align_element", "pool_window", "roi_pool_element", "roi_pool_backward", "align_geometry",
           "bilinear_corners", "roi_align_element", "roi_align_backward", "psroi_window", "psroi_element",
           "psroi_backward"]


@jitable
def pool_window(rois, r, i, j, ph, pw, scale, h, w):
    """ROIPooling's bin (i, j) of roi r: (batch, hstart, hend, wstart, wend), clipped to the map
    (Caffe's quantisation: corners rounded to the feature grid, bins floor/ceil)."""
    b = int(rois[r, 0])
    x1 = int(math.floor(rois[r, 1] * scale + 0.5))
    y1 = int(math.floor(rois[r, 2] * scale + 0.5))
    x2 = int(math.floor(rois[r, 3] * scale + 0.5))
    y2 = int(math.floor(rois[r, 4] * scale + 0.5))
    rh = max(y2 - y1 + 1, 1)
    rw = max(x2 - x1 + 1, 1)
    bh = rh / ph
    bw = rw / pw
    hs = min(max(int(math.floor(i * bh)) + y1, 0), h)
    he = min(max(int(math.ceil((i + 1) * bh)) + y1, 0), h)
    ws = min(max(int(math.floor(j * bw)) + x1, 0), w)
    we = min(max(int(math.ceil((j + 1) * bw)) + x1, 0), w)
    return b, hs, he, ws, we


def roi_pool_element(x, rois, out, r, c, i, j, ph, pw, scale, n, h, w):
    """``out[r, c, i, j]``: the maximum of the bin (0 for an empty bin or a batch index outside
    [0, n))."""
    b, hs, he, ws, we = pool_window(rois, r, i, j, ph, pw, scale, h, w)
    best = 0.0
    if b >= 0 and b < n and he > hs and we > ws:
        best = x[b, c, hs, ws]
        for yy in range(hs, he):
            for xx in range(ws, we):
                if x[b, c, yy, xx] > best:
                    best = x[b, c, yy, xx]
    out[r, c, i, j] = best


def roi_pool_backward(x, rois, g, dx, b, c, nrois, ph, pw, scale, h, w):
    """``dx[b, c]``: each bin's head gradient added at its maximum (the first one on ties)."""
    for yy in range(h):
        for xx in range(w):
            dx[b, c, yy, xx] = 0.0
    for r in range(nrois):
        if int(rois[r, 0]) != b:
            continue
        for i in range(ph):
            for j in range(pw):
                bb, hs, he, ws, we = pool_window(rois, r, i, j, ph, pw, scale, h, w)
                if he <= hs or we <= ws:
                    continue
                ay = hs
                ax = ws
                for yy in range(hs, he):
                    for xx in range(ws, we):
                        if x[b, c, yy, xx] > x[b, c, ay, ax]:
                            ay = yy
                            ax = xx
                dx[b, c, ay, ax] += g[r, c, i, j]


@jitable
def align_geometry(rois, r, ph, pw, scale, ratio, aligned):
    """ROIAlign's roi r: (batch, y1, x1, bin height, bin width, samples per bin row, per column)."""
    off = 0.5 if aligned else 0.0
    x1 = rois[r, 1] * scale - off
    y1 = rois[r, 2] * scale - off
    rw = rois[r, 3] * scale - off - x1
    rh = rois[r, 4] * scale - off - y1
    if not aligned:
        rw = max(rw, 1.0)
        rh = max(rh, 1.0)
    gh = ratio if ratio > 0 else int(math.ceil(rh / ph))
    gw = ratio if ratio > 0 else int(math.ceil(rw / pw))
    return int(rois[r, 0]), y1, x1, rh / ph, rw / pw, gh, gw


@jitable
def bilinear_corners(y, x, h, w):
    """(inside, y_low, y_high, x_low, x_high, frac_y, frac_x) of a sample at (y, x)."""
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return False, 0, 0, 0, 0, 0.0, 0.0
    y = max(y, 0.0)
    x = max(x, 0.0)
    yl = int(y)
    xl = int(x)
    if yl >= h - 1:
        yl = h - 1
        yh = h - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= w - 1:
        xl = w - 1
        xh = w - 1
        x = float(xl)
    else:
        xh = xl + 1
    return True, yl, yh, xl, xh, y - yl, x - xl


def roi_align_element(x, rois, out, r, c, i, j, ph, pw, scale, ratio, aligned, sensitive, n, h, w):
    """``out[r, c, i, j]``: the mean of the bin's bilinear samples (channel ``(c * ph + i) * pw + j``
    of the input when position-sensitive)."""
    b, y1, x1, bh, bw, gh, gw = align_geometry(rois, r, ph, pw, scale, ratio, aligned)
    cin = (c * ph + i) * pw + j if sensitive else c
    acc = 0.0
    if b >= 0 and b < n:
        for iy in range(gh):
            yy = y1 + i * bh + (iy + 0.5) * bh / gh
            for ix in range(gw):
                xx = x1 + j * bw + (ix + 0.5) * bw / gw
                ok, yl, yh, xl, xh, ly, lx = bilinear_corners(yy, xx, h, w)
                if ok:
                    acc += ((1.0 - ly) * (1.0 - lx) * x[b, cin, yl, xl] + (1.0 - ly) * lx * x[b, cin, yl, xh]
                            + ly * (1.0 - lx) * x[b, cin, yh, xl] + ly * lx * x[b, cin, yh, xh])
    out[r, c, i, j] = acc / max(gh * gw, 1)


def roi_align_backward(rois, g, dx, b, cin, nrois, ph, pw, scale, ratio, aligned, sensitive, h, w):
    """``dx[b, cin]``: every sample's bilinear weights times its bin's head gradient / samples."""
    for yy in range(h):
        for xx in range(w):
            dx[b, cin, yy, xx] = 0.0
    for r in range(nrois):
        bb, y1, x1, bh, bw, gh, gw = align_geometry(rois, r, ph, pw, scale, ratio, aligned)
        if bb != b:
            continue
        for i in range(ph):
            for j in range(pw):
                if sensitive and (cin // pw) % ph != i:
                    continue
                if sensitive and cin % pw != j:
                    continue
                c = cin // (ph * pw) if sensitive else cin
                share = g[r, c, i, j] / max(gh * gw, 1)
                for iy in range(gh):
                    yy = y1 + i * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = x1 + j * bw + (ix + 0.5) * bw / gw
                        ok, yl, yh, xl, xh, ly, lx = bilinear_corners(yy, xx, h, w)
                        if ok:
                            dx[b, cin, yl, xl] += (1.0 - ly) * (1.0 - lx) * share
                            dx[b, cin, yl, xh] += (1.0 - ly) * lx * share
                            dx[b, cin, yh, xl] += ly * (1.0 - lx) * share
                            dx[b, cin, yh, xh] += ly * lx * share


@jitable
def psroi_window(rois, r, i, j, ps, scale, h, w):
    """PSROIPooling's bin (i, j) of roi r (R-FCN's geometry): (batch, hstart, hend, wstart, wend)."""
    b = int(rois[r, 0])
    sw = math.floor(rois[r, 1] + 0.5) * scale
    sh = math.floor(rois[r, 2] + 0.5) * scale
    ew = (math.floor(rois[r, 3] + 0.5) + 1.0) * scale
    eh = (math.floor(rois[r, 4] + 0.5) + 1.0) * scale
    bh = max(eh - sh, 0.1) / ps
    bw = max(ew - sw, 0.1) / ps
    hs = min(max(int(math.floor(i * bh + sh)), 0), h)
    he = min(max(int(math.ceil((i + 1) * bh + sh)), 0), h)
    ws = min(max(int(math.floor(j * bw + sw)), 0), w)
    we = min(max(int(math.ceil((j + 1) * bw + sw)), 0), w)
    return b, hs, he, ws, we


def psroi_element(x, rois, out, r, c, i, j, ps, gs, scale, n, h, w):
    """``out[r, c, i, j]``: the mean of the bin in channel ``(c * gs + gi) * gs + gj`` (gi, gj the
    bin's group), 0 for an empty bin or a batch index outside [0, n)."""
    b, hs, he, ws, we = psroi_window(rois, r, i, j, ps, scale, h, w)
    gi = min(max(i * gs // ps, 0), gs - 1)
    gj = min(max(j * gs // ps, 0), gs - 1)
    cin = (c * gs + gi) * gs + gj
    acc = 0.0
    if b >= 0 and b < n and he > hs and we > ws:
        for yy in range(hs, he):
            for xx in range(ws, we):
                acc += x[b, cin, yy, xx]
        acc /= (he - hs) * (we - ws)
    out[r, c, i, j] = acc


def psroi_backward(rois, g, dx, b, cin, nrois, ps, gs, scale, h, w):
    """``dx[b, cin]``: each bin reading channel ``cin`` spreads its head gradient evenly over its
    pixels."""
    for yy in range(h):
        for xx in range(w):
            dx[b, cin, yy, xx] = 0.0
    c = cin // (gs * gs)
    gi = (cin // gs) % gs
    gj = cin % gs
    for r in range(nrois):
        if int(rois[r, 0]) != b:
            continue
        for i in range(ps):
            if min(max(i * gs // ps, 0), gs - 1) != gi:
                continue
            for j in range(ps):
                if min(max(j * gs // ps, 0), gs - 1) != gj:
                    continue
                bb, hs, he, ws, we = psroi_window(rois, r, i, j, ps, scale, h, w)
                if he <= hs or we <= ws:
                    continue
                share = g[r, c, i, j] / ((he - hs) * (we - ws))
                for yy in range(hs, he):
                    for xx in range(ws, we):
                        dx[b, cin, yy, xx] += share


def rroi_align_element(x, rois, out, r, c, i, j, ph, pw, scale, ratio, n, h, w):
    """``out[r, c, i, j]`` of RROIAlign: the mean of the bin's bilinear samples, the bin grid laid
    out in the roi's frame (centred, rotated by its angle)."""
    b = int(rois[r, 0])
    cx = rois[r, 1] * scale
    cy = rois[r, 2] * scale
    rw = max(rois[r, 3] * scale, 1.0)
    rh = max(rois[r, 4] * scale, 1.0)
    theta = rois[r, 5] * math.pi / 180.0
    ct = math.cos(theta)
    st = math.sin(theta)
    bh = rh / ph
    bw = rw / pw
    gh = ratio if ratio > 0 else int(math.ceil(rh / ph))
    gw = ratio if ratio > 0 else int(math.ceil(rw / pw))
    acc = 0.0
    if b >= 0 and b < n:
        for iy in range(gh):
            yy = -rh / 2.0 + i * bh + (iy + 0.5) * bh / gh
            for ix in range(gw):
                xx = -rw / 2.0 + j * bw + (ix + 0.5) * bw / gw
                sy = yy * ct - xx * st + cy
                sx = xx * ct + yy * st + cx
                ok, yl, yh, xl, xh, ly, lx = bilinear_corners(sy, sx, h, w)
                if ok:
                    acc += ((1.0 - ly) * (1.0 - lx) * x[b, c, yl, xl] + (1.0 - ly) * lx * x[b, c, yl, xh]
                            + ly * (1.0 - lx) * x[b, c, yh, xl] + ly * lx * x[b, c, yh, xh])
    out[r, c, i, j] = acc / max(gh * gw, 1)


# --- DeformablePSROIPooling (Dai et al. 2017) ----------------------------------------------------------
@jitable
def dps_box(rois, r, scale):
    """(batch, x start, y start, width, height) of roi r: corners rounded, scaled, half-pixel shift."""
    sw = round(rois[r, 1]) * scale - 0.5
    sh = round(rois[r, 2]) * scale - 0.5
    ew = (round(rois[r, 3]) + 1.0) * scale - 0.5
    eh = (round(rois[r, 4]) + 1.0) * scale - 0.5
    return int(rois[r, 0]), sw, sh, max(ew - sw, 0.1), max(eh - sh, 0.1)


@jitable
def dps_bin(rois, trans, r, ct, i, j, ps, gs, part, scale, trans_std, no_trans, each):
    """Bin (i, j) of output channel ct of roi r: (batch, x start, y start, roi width, roi height,
    input channel, trans class, part row, part column)."""
    b, sw, sh, rw, rh = dps_box(rois, r, scale)
    cls = ct // each
    pi = int(math.floor(i / ps * part))
    pj = int(math.floor(j / ps * part))
    tx = 0.0
    ty = 0.0
    if not no_trans:
        tx = trans[r, cls * 2, pi, pj] * trans_std
        ty = trans[r, cls * 2 + 1, pi, pj] * trans_std
    gw = min(max(int(math.floor(j * gs / ps)), 0), gs - 1)
    gh = min(max(int(math.floor(i * gs / ps)), 0), gs - 1)
    return (b, j * (rw / ps) + sw + tx * rw, i * (rh / ps) + sh + ty * rh, rw, rh, (ct * gs + gh) * gs + gw,
            cls, pi, pj)


@jitable
def dps_count(x0, y0, sbw, sbh, spp, h, w):
    cnt = 0
    for ih in range(spp):
        for iw in range(spp):
            xx = x0 + iw * sbw
            yy = y0 + ih * sbh
            if xx >= -0.5 and xx <= w - 0.5 and yy >= -0.5 and yy <= h - 0.5:
                cnt += 1
    return cnt


def dps_element(x, rois, trans, out, r, ct, i, j, ps, gs, part, spp, scale, trans_std, no_trans, each, n, h,
                w):
    """``out[r, ct, i, j]``: the mean of the bin's samples, the bin moved by its part's offset times
    trans_std and the roi's size (samples outside the map are left out)."""
    b, x0, y0, rw, rh, cin, _, _, _ = dps_bin(rois, trans, r, ct, i, j, ps, gs, part, scale, trans_std,
                                             no_trans, each)
    sbw = rw / ps / spp
    sbh = rh / ps / spp
    acc = 0.0
    cnt = 0
    if b >= 0 and b < n:
        for ih in range(spp):
            for iw in range(spp):
                xx = x0 + iw * sbw
                yy = y0 + ih * sbh
                if xx < -0.5 or xx > w - 0.5 or yy < -0.5 or yy > h - 0.5:
                    continue
                xx = min(max(xx, 0.0), w - 1.0)
                yy = min(max(yy, 0.0), h - 1.0)
                xl = int(math.floor(xx))
                xh = int(math.ceil(xx))
                yl = int(math.floor(yy))
                yh = int(math.ceil(yy))
                dx = xx - xl
                dy = yy - yl
                acc += ((1.0 - dx) * (1.0 - dy) * x[b, cin, yl, xl] + (1.0 - dx) * dy * x[b, cin, yh, xl]
                        + dx * (1.0 - dy) * x[b, cin, yl, xh] + dx * dy * x[b, cin, yh, xh])
                cnt += 1
    out[r, ct, i, j] = acc / cnt if cnt > 0 else 0.0


def dps_data_backward(rois, trans, g, dx, b, cin, nrois, ps, gs, part, spp, scale, trans_std, no_trans, each,
                      h, w):
    """``dx[b, cin]``: each bin that read input channel cin of image b sends its head gradient, over
    its sample count, to the samples' pixels."""
    for yy in range(h):
        for xx in range(w):
            dx[b, cin, yy, xx] = 0.0
    ct = cin // (gs * gs)
    if ct >= g.shape[1]:
        return
    for r in range(nrois):
        if int(rois[r, 0]) != b:
            continue
        for i in range(ps):
            for j in range(ps):
                _, x0, y0, rw, rh, c2, _, _, _ = dps_bin(rois, trans, r, ct, i, j, ps, gs, part, scale,
                                                        trans_std, no_trans, each)
                if c2 != cin:
                    continue
                sbw = rw / ps / spp
                sbh = rh / ps / spp
                cnt = dps_count(x0, y0, sbw, sbh, spp, h, w)
                if cnt == 0:
                    continue
                diff = g[r, ct, i, j] / cnt
                for ih in range(spp):
                    for iw in range(spp):
                        sx = x0 + iw * sbw
                        sy = y0 + ih * sbh
                        if sx < -0.5 or sx > w - 0.5 or sy < -0.5 or sy > h - 0.5:
                            continue
                        sx = min(max(sx, 0.0), w - 1.0)
                        sy = min(max(sy, 0.0), h - 1.0)
                        xl = int(math.floor(sx))
                        xh = int(math.ceil(sx))
                        yl = int(math.floor(sy))
                        yh = int(math.ceil(sy))
                        fx = sx - xl
                        fy = sy - yl
                        dx[b, cin, yl, xl] += diff * (1.0 - fx) * (1.0 - fy)
                        dx[b, cin, yh, xl] += diff * (1.0 - fx) * fy
                        dx[b, cin, yl, xh] += diff * fx * (1.0 - fy)
                        dx[b, cin, yh, xh] += diff * fx * fy


def dps_trans_backward(x, rois, trans, g, dt, r, tc, pi, pj, ps, gs, part, spp, scale, trans_std, each, n, h,
                       w):
    """``dt[r, tc, pi, pj]``: over the bins of trans class tc // 2 in part (pi, pj), the head gradient
    over the sample count times the interpolation's slope along x (tc even) or y, times trans_std and
    the roi's width (height)."""
    cls = tc // 2
    acc = 0.0
    b = int(rois[r, 0])
    if b >= 0 and b < n:
        for ct in range(cls * each, (cls + 1) * each):
            for i in range(ps):
                for j in range(ps):
                    _, x0, y0, rw, rh, cin, _, qi, qj = dps_bin(rois, trans, r, ct, i, j, ps, gs, part, scale,
                                                               trans_std, False, each)
                    if qi != pi or qj != pj:
                        continue
                    sbw = rw / ps / spp
                    sbh = rh / ps / spp
                    cnt = dps_count(x0, y0, sbw, sbh, spp, h, w)
                    if cnt == 0:
                        continue
                    diff = g[r, ct, i, j] / cnt * trans_std
                    for ih in range(spp):
                        for iw in range(spp):
                            sx = x0 + iw * sbw
                            sy = y0 + ih * sbh
                            if sx < -0.5 or sx > w - 0.5 or sy < -0.5 or sy > h - 0.5:
                                continue
                            sx = min(max(sx, 0.0), w - 1.0)
                            sy = min(max(sy, 0.0), h - 1.0)
                            xl = int(math.floor(sx))
                            xh = int(math.ceil(sx))
                            yl = int(math.floor(sy))
                            yh = int(math.ceil(sy))
                            fx = sx - xl
                            fy = sy - yl
                            u11 = x[b, cin, yl, xl]
                            u12 = x[b, cin, yh, xl]
                            u21 = x[b, cin, yl, xh]
                            u22 = x[b, cin, yh, xh]
                            if tc % 2 == 0:
                                acc += (u22 * fy + u21 * (1.0 - fy) - u12 * fy - u11 * (1.0 - fy)) * diff * rw
                            else:
                                acc += (u22 * fx + u12 * (1.0 - fx) - u21 * fx - u11 * (1.0 - fx)) * diff * rh
    dt[r, tc, pi, pj] = acc
