"""Cases for Deconvolution (symjit/ops/deconv.py): a numpy reference that scatters each input pixel's
``x * w`` over its window (MXNet's definition), 1-D and 2-D, strides, pads, dilation, adj,
target_shape, groups and bias; gradients by finite differences."""
from __future__ import annotations

import itertools

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(17)


def rnd(*shape):
    return R.uniform(-1.0, 1.0, shape)


def deconv_ref(x, w, b=None, kernel=(), stride=(), dilate=(), pad=(), adj=(), num_filter=1, num_group=1,
               target=()):
    nsp = len(kernel)
    stride, dilate = stride or (1,) * nsp, dilate or (1,) * nsp
    pad, adj = list(pad or (0,) * nsp), list(adj or (0,) * nsp)
    size = []
    for d in range(nsp):
        full = stride[d] * (x.shape[2 + d] - 1) + dilate[d] * (kernel[d] - 1) + 1
        if target:
            total = full - target[d]
            pad[d], adj[d] = (total + 1) // 2, total % 2
        size.append(full - 2 * pad[d] + adj[d])
    n, cin = x.shape[:2]
    cg = num_filter // num_group
    y = np.zeros((n, num_filter, *size))
    for f in range(cin):
        g = f // (cin // num_group)
        for o in itertools.product(*[range(s) for s in x.shape[2:]]):
            for kk in itertools.product(*[range(k) for k in kernel]):
                i = [o[d] * stride[d] - pad[d] + kk[d] * dilate[d] for d in range(nsp)]
                if all(0 <= i[d] < size[d] for d in range(nsp)):
                    for c in range(cg):
                        y[(slice(None), g * cg + c, *i)] += x[(slice(None), f, *o)] * w[(f, c, *kk)]
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nsp)
    return y


def _case(x, w, b=None, case_id="", **p):
    inputs = {"x": x, "w": w, **({"b": b} if b is not None else {})}
    ref_p = {k: v for k, v in p.items() if k != "target_shape"}
    ref_p["target"] = p.get("target_shape", ())

    def build(v):
        extra = {"bias": v["b"], "no_bias": False} if b is not None else {}
        return mx.sym.Deconvolution(v["x"], v["w"], name="dc", **extra, **p)
    return Case("Deconvolution", build, inputs,
                lambda x, w, b=None: deconv_ref(x, w, b, **ref_p), id=case_id, grad_rtol=2e-4)


CASES = [
    _case(rnd(2, 3, 3, 3), rnd(3, 2, 2, 2), kernel=(2, 2), stride=(2, 2), num_filter=2, case_id="stride2"),
    _case(rnd(1, 2, 4, 3), rnd(2, 3, 3, 3), rnd(3), kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 0),
          num_filter=3, case_id="pad_adj_bias"),
    _case(rnd(1, 4, 3, 3), rnd(4, 1, 3, 2), kernel=(3, 2), dilate=(2, 1), num_filter=2, num_group=2,
          case_id="groups_dilate"),
    _case(rnd(2, 2, 5), rnd(2, 3, 3), rnd(3), kernel=(3,), stride=(2,), pad=(1,), num_filter=3, case_id="1d"),
    _case(rnd(1, 1, 3, 3), rnd(1, 2, 4, 4), kernel=(4, 4), stride=(2, 2), target_shape=(6, 6), num_filter=2,
          case_id="target_shape"),
]
