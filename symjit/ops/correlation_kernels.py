"""Per-element routines of ``Correlation`` (:mod:`symjit.ops.correlation`), wrapped per target by
:mod:`symjit.lower.correlation`: the forward computes one output element; each backward routine
computes one element of an input's gradient by gathering every output it took part in (no two
iterations write one element). Coordinates are the unpadded inputs'; reads outside are zeros.
"""
from __future__ import annotations

from ..jitext import jitable

__all__ = ["at", "corr_element", "corr_backward1", "corr_backward2"]


@jitable
def at(x, n, c, y, xx):
    if y < 0 or xx < 0 or y >= x.shape[2] or xx >= x.shape[3]:
        return 0.0
    return x[n, c, y, xx]


def corr_element(d1, d2, out, n, tc, i, j, k, md, s1, s2, pad, r, gw, mult):
    so = (tc % gw - r) * s2
    sp = (tc // gw - r) * s2
    y1 = i * s1 + md - pad
    x1 = j * s1 + md - pad
    acc = 0.0
    for c in range(d1.shape[1]):
        for h in range(k):
            for w in range(k):
                a = at(d1, n, c, y1 + h, x1 + w)
                b = at(d2, n, c, y1 + h + sp, x1 + w + so)
                acc += a * b if mult else abs(a - b)
    out[n, tc, i, j] = acc / (k * k * d1.shape[1])


def corr_backward1(g, d1, d2, dx, n, c, y, x, k, md, s1, s2, pad, r, gw, mult):
    """``dx[n, c, y, x]`` of data1."""
    th = g.shape[2]
    tw = g.shape[3]
    acc = 0.0
    a = d1[n, c, y, x]
    for h in range(k):
        qy = y + pad - md - h
        if qy < 0 or qy % s1 != 0 or qy // s1 >= th:
            continue
        for w in range(k):
            qx = x + pad - md - w
            if qx < 0 or qx % s1 != 0 or qx // s1 >= tw:
                continue
            for tc in range(gw * gw):
                so = (tc % gw - r) * s2
                sp = (tc // gw - r) * s2
                b = at(d2, n, c, y + sp, x + so)
                gv = g[n, tc, qy // s1, qx // s1]
                if mult:
                    acc += gv * b
                elif a >= b:            # |a - b|'s slope, +1 at a tie (as MXNet)
                    acc += gv
                else:
                    acc -= gv
    dx[n, c, y, x] = acc / (k * k * d1.shape[1])


def corr_backward2(g, d1, d2, dx, n, c, y, x, k, md, s1, s2, pad, r, gw, mult):
    """``dx[n, c, y, x]`` of data2."""
    th = g.shape[2]
    tw = g.shape[3]
    acc = 0.0
    b = d2[n, c, y, x]
    for tc in range(gw * gw):
        so = (tc % gw - r) * s2
        sp = (tc // gw - r) * s2
        for h in range(k):
            qy = y - sp + pad - md - h
            if qy < 0 or qy % s1 != 0 or qy // s1 >= th:
                continue
            for w in range(k):
                qx = x - so + pad - md - w
                if qx < 0 or qx % s1 != 0 or qx // s1 >= tw:
                    continue
                a = at(d1, n, c, y - sp, x - so)
                gv = g[n, tc, qy // s1, qx // s1]
                if mult:
                    acc += gv * a
                elif b > a:             # a tie gives data1 the +1, so data2 the -1
                    acc += gv
                else:
                    acc -= gv
    dx[n, c, y, x] = acc / (k * k * d1.shape[1])
