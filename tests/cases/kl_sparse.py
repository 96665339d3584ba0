"""Case for IdentityAttachKLSparseReg (symjit/ops/kl_sparse.py): the output is the input; the gradient
adds the sparseness penalty of the running mean the training forward updated (the formula checked
against MXNet 1.9.1's gradient: it computes that mean but does not store it, see the op's
docstring)."""

from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

RNG = np.random.default_rng(89)


_KL = dict(sparseness_target=0.2, penalty=0.01, momentum=0.8)


def _kl_avg(data, moving_avg):
    return 0.8 * moving_avg + 0.2 * data.mean(axis=(0, 2))


def _kl_grad(inputs, outputs, heads):
    m = _kl_avg(inputs["data"], inputs["kl_moving_avg"]).reshape(1, -1, 1)
    return {"data": heads[0] + 0.01 * (-0.2 / m + 0.8 / (1 - m))}


CASES = [Case("IdentityAttachKLSparseReg",
              lambda v: mx.sym.IdentityAttachKLSparseReg(v["data"], name="kl", **_KL),
              {"data": RNG.uniform(0.1, 0.9, (4, 3, 2)), "kl_moving_avg": RNG.uniform(0.1, 0.9, (3,))},
              lambda data, kl_moving_avg: data, grad=_kl_grad, is_train=True,
              after=lambda data, kl_moving_avg: {"kl_moving_avg": _kl_avg(data, kl_moving_avg)})]
