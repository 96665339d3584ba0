"""Target-neutral lowering of Correlation (:mod:`symjit.ops.correlation`): a loop over output
elements, and for the gradient a loop over each input's elements, calling the routines of
:mod:`symjit.ops.correlation_kernels`.

>>> import numpy as np, symjit as mx
>>> a = mx.nd.array(np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2))
>>> mx.nd.Correlation(a, a, max_displacement=0).asnumpy().ravel().tolist()
[0.0, 1.0, 4.0, 9.0]
"""
from __future__ import annotations

from ..ops import correlation_kernels as ck
from ..ops.correlation import geometry
from .rules import ANY, rule

__all__: list[str] = []


def _consts(node, shape) -> str:
    p = node.params
    _, _, r, gw = geometry(p, shape[2], shape[3])
    values = (p["kernel_size"], p["max_displacement"], p["stride1"], p["stride2"], p["pad_size"], r, gw,
              bool(p["is_multiply"]))
    return ", ".join(str(v) for v in values)


def _forward(k, node, ins, outs) -> None:
    d1, d2 = ins
    target = k.target
    idx = target.open_loop(k, [str(d) for d in k.info[outs[0]].shape])
    k.line(f"{k.module.body(ck.corr_element)}({d1}, {d2}, {outs[0]}, {', '.join(idx)}, "
           f"{_consts(node, k.info[d1].shape)})")
    target.close_loop(k, idx)


def _backward(k, node, ins, outs) -> None:
    g, d1, d2 = ins
    target = k.target
    shape = k.info[d1].shape
    for fn, out in ((ck.corr_backward1, outs[0]), (ck.corr_backward2, outs[1])):
        idx = target.open_loop(k, [str(d) for d in shape])
        k.line(f"{k.module.body(fn)}({g}, {d1}, {d2}, {out}, {', '.join(idx)}, {_consts(node, shape)})")
        target.close_loop(k, idx)


rule("Correlation", ANY, _forward)
rule("_backward_Correlation", ANY, _backward)
