"""Target-neutral lowering of hawkesll (:mod:`symjit.ops.hawkes`): one loop iteration (CUDA thread)
per sample, running :mod:`symjit.ops.hawkes_kernels`' routines with a float64 scratch of the plan.

>>> import symjit as mx
>>> ll, _ = mx.nd.contrib.hawkesll(mx.nd.array([[2.0]]), mx.nd.array([0.0]), mx.nd.array([1.0]),
...                               mx.nd.zeros((1, 1)), mx.nd.array([[1.0]]), mx.nd.zeros((1, 1)),
...                               mx.nd.array([1.0]), mx.nd.array([3.0]))
>>> round(float(ll.asnumpy()[0]), 6)          # a Poisson process: log 2 - 2 * 3
-5.306853
"""
from __future__ import annotations

import numpy as np

from ..ops import hawkes_kernels as hk
from .rules import ANY, rule

__all__: list[str] = []


def _scratch(lda_slot: int):
    def workspace(node, ins, outs):
        n, k = ins[lda_slot].shape
        return [((n, 4 * k), np.dtype(np.float64))]
    return workspace


def _forward(k, node, ins, outs) -> None:
    n, kk = k.info[ins[0]].shape
    target = k.target
    idx = target.open_loop(k, [str(n)])
    k.line(f"{k.module.body(hk.hawkes_forward)}({', '.join(ins)}, {outs[0]}, {outs[1]}, {k.workspace[0]}, "
           f"{idx[0]}, {kk})")
    target.close_loop(k, idx)


def _backward(k, node, ins, outs) -> None:
    n, kk = k.info[ins[2]].shape
    target = k.target
    idx = target.open_loop(k, [str(n)])
    k.line(f"{k.module.body(hk.hawkes_backward)}({', '.join(ins)}, {', '.join(outs)}, {k.workspace[0]}, "
           f"{idx[0]}, {kk})")
    target.close_loop(k, idx)


rule("_contrib_hawkesll", ANY, _forward, workspace=_scratch(0))
rule("_backward_hawkesll", ANY, _backward, workspace=_scratch(2))
