"""Cases for Correlation (symjit/ops/correlation.py): a numpy reference written from the FlowNet
definition, checked against MXNet 1.9.1's outputs (products and absolute differences, kernel 1 and 3,
both strides, padding) to 1e-7; gradients by finite differences (absolute differences away from
ties)."""

from __future__ import annotations

import math

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(73)


def correlation(d1, d2, kernel_size=1, max_displacement=1, stride1=1, stride2=1, pad_size=0,
                is_multiply=True):
    n, c, h, w = d1.shape
    k, md, s1, s2, pad = kernel_size, max_displacement, stride1, stride2, pad_size
    border = md + (k - 1) // 2
    th, tw = math.ceil((h + 2 * pad - 2 * border) / s1), math.ceil((w + 2 * pad - 2 * border) / s1)
    r = md // s2
    gw = 2 * r + 1
    p1 = np.pad(d1, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    p2 = np.pad(d2, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, gw * gw, th, tw))
    for i in range(th):
        for j in range(tw):
            y1, x1 = i * s1 + md, j * s1 + md
            a = p1[:, :, y1:y1 + k, x1:x1 + k]
            for tc in range(gw * gw):
                so, sp = (tc % gw - r) * s2, (tc // gw - r) * s2
                b = p2[:, :, y1 + sp:y1 + sp + k, x1 + so:x1 + so + k]
                v = a * b if is_multiply else np.abs(a - b)
                out[:, tc, i, j] = v.sum(axis=(1, 2, 3)) / (k * k * c)
    return out


_CONFIGS = [("k1", dict()), ("k3pad", dict(kernel_size=3, max_displacement=2, pad_size=2)),
            ("strides", dict(max_displacement=4, stride1=2, stride2=2, pad_size=4)),
            ("absdiff", dict(kernel_size=3, max_displacement=2, stride1=2, pad_size=1, is_multiply=False))]

CASES = [Case("Correlation", lambda v, p=p: mx.sym.Correlation(v["data1"], v["data2"], **p),
              {"data1": R.uniform(-1, 1, (2, 2, 5, 6)), "data2": R.uniform(-1, 1, (2, 2, 5, 6))},
              lambda data1, data2, p=p: correlation(data1, data2, **p), id=name)
         for name, p in _CONFIGS]
