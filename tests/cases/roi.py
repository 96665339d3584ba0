"""Cases for ROIPooling and ROIAlign (symjit/ops/roi.py): numpy references written here from the
operators' documented algorithms (Caffe's quantised max pooling; Mask R-CNN's bilinear sampling),
checked against MXNet 1.9.1's CPU outputs and gradients to 1e-6; the data gradient by finite
differences (ROIPooling's inputs have no ties)."""

from __future__ import annotations

import math

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(61)


def _round(v):
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def roi_pool(x, rois, pooled_size, spatial_scale, g=None):
    n, c, h, w = x.shape
    ph, pw = pooled_size
    out = np.zeros((rois.shape[0], c, ph, pw))
    dx = np.zeros_like(x, dtype=np.float64)
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if b < 0:  # symjit's choice, as ROIAlign documents: a zero output
            continue
        x1, y1, x2, y2 = (_round(v * spatial_scale) for v in roi[1:5])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bh, bw = rh / ph, rw / pw
        for i in range(ph):
            hs = min(max(math.floor(i * bh) + y1, 0), h)
            he = min(max(math.ceil((i + 1) * bh) + y1, 0), h)
            for j in range(pw):
                ws = min(max(math.floor(j * bw) + x1, 0), w)
                we = min(max(math.ceil((j + 1) * bw) + x1, 0), w)
                if he <= hs or we <= ws:
                    continue
                for ch in range(c):
                    win = x[b, ch, hs:he, ws:we]
                    k = int(np.argmax(win))
                    out[r, ch, i, j] = win.flat[k]
                    if g is not None:
                        dx[b, ch, hs + k // (we - ws), ws + k % (we - ws)] += g[r, ch, i, j]
    return out, dx


def _bilinear(v, y, x, hgt, wid):
    """(value, [(weight, yy, xx)]) at (y, x)."""
    if y < -1.0 or y > hgt or x < -1.0 or x > wid:
        return 0.0, []
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= hgt - 1:
        yh = yl = hgt - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= wid - 1:
        xh = xl = wid - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    hy, hx = 1 - ly, 1 - lx
    parts = [(hy * hx, yl, xl), (hy * lx, yl, xh), (ly * hx, yh, xl), (ly * lx, yh, xh)]
    return sum(wt * v[a, bb] for wt, a, bb in parts), parts


def roi_align(
    x, rois, pooled_size, spatial_scale, sample_ratio=-1, position_sensitive=False, aligned=False, g=None
):
    n, c, h, w = x.shape
    ph, pw = pooled_size
    co = c // (ph * pw) if position_sensitive else c
    out = np.zeros((rois.shape[0], co, ph, pw))
    dx = np.zeros_like(x, dtype=np.float64)
    off = 0.5 if aligned else 0.0
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if b < 0:
            continue
        x1, y1, x2, y2 = (v * spatial_scale - off for v in roi[1:5])
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sample_ratio if sample_ratio > 0 else math.ceil(rh / ph)
        gw = sample_ratio if sample_ratio > 0 else math.ceil(rw / pw)
        count = max(gh * gw, 1)
        for ch in range(co):
            for i in range(ph):
                for j in range(pw):
                    cin = (ch * ph + i) * pw + j if position_sensitive else ch
                    acc = 0.0
                    for iy in range(gh):
                        yy = y1 + i * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = x1 + j * bw + (ix + 0.5) * bw / gw
                            val, parts = _bilinear(x[b, cin], yy, xx, h, w)
                            acc += val
                            if g is not None:
                                for wt, a, bb in parts:
                                    dx[b, cin, a, bb] += wt * g[r, ch, i, j] / count
                    out[r, ch, i, j] = acc / count
    return out, dx


def psroi(x, rois, spatial_scale, output_dim, pooled_size, group_size=0, g=None):
    gs = group_size or pooled_size
    n, c, h, w = x.shape
    out = np.zeros((rois.shape[0], output_dim, pooled_size, pooled_size))
    dx = np.zeros_like(x, dtype=np.float64)
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if b < 0:  # a zero output, as ROIPooling and ROIAlign give
            continue
        sw, sh = _round(roi[1]) * spatial_scale, _round(roi[2]) * spatial_scale
        ew, eh = (_round(roi[3]) + 1) * spatial_scale, (_round(roi[4]) + 1) * spatial_scale
        rw, rh = max(ew - sw, 0.1), max(eh - sh, 0.1)
        bh, bw = rh / pooled_size, rw / pooled_size
        for ct in range(output_dim):
            for i in range(pooled_size):
                for j in range(pooled_size):
                    hs = min(max(math.floor(i * bh + sh), 0), h)
                    he = min(max(math.ceil((i + 1) * bh + sh), 0), h)
                    ws = min(max(math.floor(j * bw + sw), 0), w)
                    we = min(max(math.ceil((j + 1) * bw + sw), 0), w)
                    gh = min(max(math.floor(i * gs / pooled_size), 0), gs - 1)
                    gw = min(max(math.floor(j * gs / pooled_size), 0), gs - 1)
                    cin = (ct * gs + gh) * gs + gw
                    if he <= hs or we <= ws:
                        continue
                    area = (he - hs) * (we - ws)
                    out[r, ct, i, j] = x[b, cin, hs:he, ws:we].sum() / area
                    if g is not None:
                        dx[b, cin, hs:he, ws:we] += g[r, ct, i, j] / area
    return out, dx


ROIS = np.array([[0, 0.5, 1.2, 4.4, 5.1], [1, 2, 0, 6.6, 3.9], [0, 3.1, 3.3, 3.2, 3.4], [-1, 0, 0, 2, 2]])


def _pool_case(scale, size, id):
    return Case(
        "ROIPooling",
        lambda v: mx.sym.ROIPooling(v["data"], v["rois"], pooled_size=size, spatial_scale=scale),
        {"data": R.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) * 0.01, "rois": ROIS.copy()},
        lambda data, rois: roi_pool(data, rois, size, scale)[0],
        no_grad=("rois",),
        id=id,
    )


def _align_case(id, channels=2, **kw):
    return Case(
        "_contrib_ROIAlign",
        lambda v: mx.sym.contrib.ROIAlign(v["data"], v["rois"], pooled_size=(2, 3), spatial_scale=0.9, **kw),
        {"data": R.normal(size=(2, channels, 6, 7)), "rois": ROIS.copy()},
        lambda data, rois: roi_align(data, rois, (2, 3), 0.9, **kw)[0],
        no_grad=("rois",),
        id=id,
    )


CASES = [
    _pool_case(0.9, (2, 3), "default"),
    _pool_case(0.5, (3, 2), "coarse"),
    _align_case("adaptive"),
    _align_case("ratio2", sample_ratio=2),
    _align_case("aligned", aligned=True),
    _align_case("aligned_ratio1", sample_ratio=1, aligned=True),
    _align_case("position_sensitive", channels=12, position_sensitive=True),
    *[
        Case(
            "_contrib_PSROIPooling",
            lambda v, kw=kw: mx.sym.contrib.PSROIPooling(v["data"], v["rois"], **kw),
            {"data": R.normal(size=(2, 2 * 9, 8, 9)), "rois": ROIS.copy()},
            lambda data, rois, kw=kw: psroi(data, rois, **kw)[0],
            no_grad=("rois",),
            id=f"set{i}",
        )
        for i, kw in enumerate(
            [
                dict(spatial_scale=1.0, output_dim=2, pooled_size=3),
                dict(spatial_scale=0.6, output_dim=2, pooled_size=6, group_size=3),
            ]
        )
    ],
]


def rroi_align(data, rois, pooled_size, spatial_scale, sampling_ratio=-1):
    """RROIAlign: the bin grid in the rotated roi's frame (checked against MXNet 1.9.1 to 3e-7)."""
    n, c, h, w = data.shape
    ph, pw = pooled_size
    out = np.zeros((rois.shape[0], c, ph, pw))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        cx, cy = roi[1] * spatial_scale, roi[2] * spatial_scale
        rw, rh = max(roi[3] * spatial_scale, 1.0), max(roi[4] * spatial_scale, 1.0)
        ct, st = math.cos(roi[5] * math.pi / 180.0), math.sin(roi[5] * math.pi / 180.0)
        bh, bw = rh / ph, rw / pw
        gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / ph)
        gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / pw)
        for i in range(ph):
            for j in range(pw):
                for iy in range(gh):
                    yy = -rh / 2 + i * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = -rw / 2 + j * bw + (ix + 0.5) * bw / gw
                        sy, sx = yy * ct - xx * st + cy, xx * ct + yy * st + cx
                        for ch in range(c):
                            out[r, ch, i, j] += _bilinear(data[b, ch], sy, sx, h, w)[0]
                out[r, :, i, j] /= max(gh * gw, 1)
    return out


_RROIS = np.array([[0, 5.3, 4.2, 6.1, 3.3, 30.0], [1, 6.0, 5.0, 8.0, 5.0, -45.0],
                   [0, 2.0, 8.5, 4.0, 9.0, 100.0], [1, 11.0, 1.0, 3.0, 2.0, 0.0]])
for _p, _id in ((dict(pooled_size=(2, 3), spatial_scale=1.0), "adaptive"),
                (dict(pooled_size=(3, 2), spatial_scale=0.5, sampling_ratio=2), "ratio2")):
    CASES.append(Case("_contrib_RROIAlign",
                      lambda v, _p=_p: mx.sym.contrib.RROIAlign(v["data"], v["rois"], **_p),
                      {"data": R.uniform(-1, 1, (2, 3, 10, 12)), "rois": _RROIS},
                      lambda data, rois, _p=_p: rroi_align(data, rois, **_p), grad="none", id=_id))


def _dps_interp(m, x, y):
    x1, x2, y1, y2 = math.floor(x), math.ceil(x), math.floor(y), math.ceil(y)
    fx, fy = x - x1, y - y1
    return ((1 - fx) * (1 - fy) * m[y1, x1] + (1 - fx) * fy * m[y2, x1] + fx * (1 - fy) * m[y1, x2]
            + fx * fy * m[y2, x2])


def dpsroi(data, rois, trans=None, spatial_scale=1.0, output_dim=1, group_size=1, pooled_size=1, part_size=0,
           sample_per_part=1, trans_std=0.0, no_trans=False):
    """DeformablePSROIPooling, written from Deformable ConvNets' definition; equal to MXNet 1.9.1's
    outputs to 2e-7, and MXNet's gradients equal its finite differences."""
    n, c, h, w = data.shape
    ps, gs, spp = pooled_size, group_size, sample_per_part
    part = part_size if part_size > 0 else ps
    ncls = 1 if no_trans else trans.shape[1] // 2
    each = output_dim if no_trans else output_dim // ncls
    out = np.zeros((rois.shape[0], output_dim, ps, ps))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        sw, sh = round(roi[1]) * spatial_scale - 0.5, round(roi[2]) * spatial_scale - 0.5
        rw = max((round(roi[3]) + 1.0) * spatial_scale - 0.5 - sw, 0.1)
        rh = max((round(roi[4]) + 1.0) * spatial_scale - 0.5 - sh, 0.1)
        for ct in range(output_dim):
            cls = ct // each
            for i in range(ps):
                for j in range(ps):
                    pi, pj = math.floor(i / ps * part), math.floor(j / ps * part)
                    tx = 0.0 if no_trans else trans[r, cls * 2, pi, pj] * trans_std
                    ty = 0.0 if no_trans else trans[r, cls * 2 + 1, pi, pj] * trans_std
                    ws, hs = j * rw / ps + sw + tx * rw, i * rh / ps + sh + ty * rh
                    gw, gh = min(math.floor(j * gs / ps), gs - 1), min(math.floor(i * gs / ps), gs - 1)
                    ch = (ct * gs + gh) * gs + gw
                    vals = []
                    for ih in range(spp):
                        for iw in range(spp):
                            x, y = ws + iw * rw / ps / spp, hs + ih * rh / ps / spp
                            if -0.5 <= x <= w - 0.5 and -0.5 <= y <= h - 0.5:
                                vals.append(_dps_interp(data[b, ch], min(max(x, 0.0), w - 1.0),
                                                        min(max(y, 0.0), h - 1.0)))
                    out[r, ct, i, j] = sum(vals) / len(vals) if vals else 0.0
    return out


_DPS_ROIS = np.array([[0, 1.2, 2.0, 7.6, 6.3], [1, 0.0, 0.0, 10.0, 8.0], [1, 3.0, 1.0, 5.0, 4.0]])
_DPS = [("trans", dict(spatial_scale=1.0, output_dim=2, group_size=3, pooled_size=3, sample_per_part=2,
                       trans_std=0.1)),
        ("parts", dict(spatial_scale=0.7, output_dim=2, group_size=3, pooled_size=3, part_size=3,
                       sample_per_part=3, trans_std=0.3)),
        ("no_trans", dict(spatial_scale=1.0, output_dim=2, group_size=3, pooled_size=3, sample_per_part=2,
                          no_trans=True))]
for _id, _p in _DPS:
    _ins = {"data": R.uniform(-1, 1, (2, 18, 9, 11)), "rois": _DPS_ROIS}
    if not _p.get("no_trans"):
        _ins["trans"] = R.uniform(-1, 1, (3, 4, 3, 3))
    CASES.append(Case("_contrib_DeformablePSROIPooling",
                      lambda v, _p=_p: mx.sym.contrib.DeformablePSROIPooling(
                          *[v[n] for n in ("data", "rois", "trans") if n in v], **_p),
                      _ins, lambda _p=_p, **a: dpsroi(**a, **_p), no_grad=("rois",), id=_id))
