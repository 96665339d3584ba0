"""Cases for DeformableConvolution and ModulatedDeformableConvolution (symjit/ops/deform.py): a numpy
reference written from the documented sampling rule (each tap at its position plus its offset,
bilinear, zero outside; times the mask), checked against MXNet 1.9.1's CPU outputs; gradients of
data, offset, mask, weight and bias by finite differences (offsets kept away from integer
positions, where the interpolation has kinks)."""

from __future__ import annotations

import math

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(71)


def _bilinear(x, y, xx, v1):
    """DCN v2 reads (-1, h) x (-1, w), corners outside count 0; MXNet's v1 reads [0, h) x [0, w) and
    clamps a point past the last row/column onto it."""
    h, w = x.shape
    if (y < 0 or xx < 0) if v1 else (y <= -1 or xx <= -1):
        return 0.0
    if y >= h or xx >= w:
        return 0.0
    y0, x0 = math.floor(y), math.floor(xx)
    ly, lx = y - y0, xx - x0
    y1, x1 = y0 + 1, x0 + 1
    if v1 and y0 >= h - 1:
        y0 = y1 = h - 1
        ly = 0.0
    if v1 and x0 >= w - 1:
        x0 = x1 = w - 1
        lx = 0.0
    v = 0.0
    for yy, xw, wy in ((y0, x0, (1 - ly) * (1 - lx)), (y0, x1, (1 - ly) * lx),
                       (y1, x0, ly * (1 - lx)), (y1, x1, ly * lx)):
        if 0 <= yy < h and 0 <= xw < w:
            v += wy * x[yy, xw]
    return v


def deform_conv(data, offset, weight, bias=None, mask=None, kernel=(3, 3), stride=(1, 1), pad=(0, 0),
                dilate=(1, 1), num_group=1, num_deformable_group=1):
    n, c, _, _ = data.shape
    nf = weight.shape[0]
    kh, kw = kernel
    oh, ow = offset.shape[2:]
    k = kh * kw
    gc = c // num_deformable_group
    cols = np.zeros((n, c, k, oh, ow))
    for b in range(n):
        for ch in range(c):
            dg = ch // gc
            for t in range(k):
                i, j = divmod(t, kw)
                for y in range(oh):
                    for x in range(ow):
                        py = y * stride[0] - pad[0] + i * dilate[0] + offset[b, dg * 2 * k + 2 * t, y, x]
                        px = x * stride[1] - pad[1] + j * dilate[1] + offset[b, dg * 2 * k + 2 * t + 1, y, x]
                        v = _bilinear(data[b, ch], py, px, mask is None)
                        if mask is not None:
                            v *= mask[b, dg * k + t, y, x]
                        cols[b, ch, t, y, x] = v
    out = np.zeros((n, nf, oh, ow))
    cg, fg = c // num_group, nf // num_group
    for g in range(num_group):
        w = weight[g * fg:(g + 1) * fg].reshape(fg, cg * k)
        col = cols[:, g * cg:(g + 1) * cg].reshape(n, cg * k, oh * ow)
        out[:, g * fg:(g + 1) * fg] = np.einsum("fk,nkp->nfp", w, col).reshape(n, fg, oh, ow)
    if bias is not None:
        out += bias.reshape(1, -1, 1, 1)
    return out


def _offsets(shape):
    """Offsets whose samples stay off the grid lines (fractions 0.05 .. 0.95 away from them)."""
    return R.integers(-2, 2, shape) + R.uniform(0.1, 0.9, shape)


_P1 = dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1), num_filter=4)
_P2 = dict(kernel=(2, 2), stride=(2, 1), pad=(0, 1), dilate=(1, 2), num_filter=4, num_group=2,
           num_deformable_group=2)


def _ref(p, modulated):
    q = {k: v for k, v in p.items() if k != "num_filter"}

    def ref(data, offset, weight, bias, mask=None):
        return deform_conv(data, offset, weight, bias, mask if modulated else None, **q)
    return ref


def out_hw(p, h, w):
    kh, kw = p["kernel"]
    stride, pad, dil = p.get("stride", (1, 1)), p.get("pad", (0, 0)), p.get("dilate", (1, 1))
    return ((h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1,
            (w + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1)


def inputs(p, modulated, n=2, c=4, h=5, w=5):
    kh, kw = p["kernel"]
    oh, ow = out_hw(p, h, w)
    ndg, g = p.get("num_deformable_group", 1), p.get("num_group", 1)
    ins = {"data": R.uniform(-1, 1, (n, c, h, w)), "offset": _offsets((n, 2 * kh * kw * ndg, oh, ow))}
    if modulated:
        ins["mask"] = R.uniform(0.1, 1, (n, kh * kw * ndg, oh, ow))
    ins["weight"] = R.uniform(-1, 1, (p["num_filter"], c // g, kh, kw))
    ins["bias"] = R.uniform(-1, 1, (p["num_filter"],))
    return ins


CASES = []
for _p, _id in ((_P1, "3x3"), (_P2, "groups")):
    CASES.append(Case("_contrib_DeformableConvolution",
                      lambda v, _p=_p: mx.sym.contrib.DeformableConvolution(
                          v["data"], v["offset"], v["weight"], v["bias"], **_p),
                      inputs(_p, False), _ref(_p, False), id=_id, grad_rtol=1e-4, grad_atol=1e-5))
    CASES.append(Case("_contrib_ModulatedDeformableConvolution",
                      lambda v, _p=_p: mx.sym.contrib.ModulatedDeformableConvolution(
                          v["data"], v["offset"], v["mask"], v["weight"], v["bias"], **_p),
                      inputs(_p, True), _ref(_p, True), id=_id, grad_rtol=1e-4, grad_atol=1e-5))
