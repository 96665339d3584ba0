"""``CTCLoss`` (``ctc_loss``, ``contrib.CTCLoss``): connectionist temporal classification
(Graves et al.) over (T, N, alphabet) activations and (N, L) label sequences, with MXNet 1.9.1's
parameters; losses and gradients were checked against its CPU build.

The softmax is taken inside. ``blank_label='first'`` reserves channel 0 for the blank and pads
labels with 0; ``'last'`` reserves the last channel and pads with -1. A label sequence ends at its
first padding value, or at ``label_lengths`` with ``use_label_lengths``; ``data_lengths`` (with
``use_data_lengths``) cut each sequence's frames. The loss is ``-log p(label | data)``; the
gradient with respect to data (softmax minus the label posteriors, frames past a sequence's length
0) is computed with the forward pass, kept as a hidden output and scaled by the head gradient, as
in MXNet. A sequence whose labels cannot fit its frames gets an infinite loss and a zero gradient;
a label outside the alphabet or a length past the data stops the program with an error.
Lowering: :mod:`symjit.lower.ctc`, one sequence per loop iteration or CUDA thread.

>>> import numpy as np, symjit as mx
>>> data = mx.nd.zeros((2, 1, 3))                      # uniform over {blank, a, b} for 2 frames
>>> round(float(mx.nd.CTCLoss(data, mx.nd.array([[1, 0]])).asnumpy()[0]), 4), round(float(-np.log(3 / 9)), 4)
(1.0986, 1.0986)
"""
from __future__ import annotations

import math

from ..jitext import jitable
from .registry import Kind, OpDef, Param, RuleError, register
from .rules import need_float, shape_str

__all__ = ["ctc_sequence"]


@jitable
def _lse(a, b):
    m = max(a, b)
    if m == -math.inf:
        return -math.inf
    return m + math.log(math.exp(a - m) + math.exp(b - m))


def ctc_sequence(data, label, dlen, llen, loss, grad, lp, alpha, beta, n, T, K, L, blank, pad, use_dl,
                 use_ll):
    """Sequence ``n``: its loss and gradient (``grad[:, n]``) by the forward-backward recursions in
    log space (scratch ``lp``, ``alpha``, ``beta``). Returns 0, or 1 for a label outside the
    alphabet, 2 for a length past the data or the label row."""
    tn = T
    if use_dl:
        tn = int(dlen[n])
        if tn < 0 or tn > T:
            return 2
    ln = L
    if use_ll:
        ln = int(llen[n])
        if ln < 0 or ln > L:
            return 2
    else:
        for i in range(L):
            if int(label[n, i]) == pad:
                ln = i
                break
    for i in range(ln):
        c = int(label[n, i])
        if c < 0 or c >= K or c == blank:
            return 1
    for t in range(T):
        for k in range(K):
            grad[t, n, k] = 0.0
    s_len = 2 * ln + 1
    if tn == 0:
        loss[n] = math.inf if ln > 0 else 0.0
        return 0
    for t in range(tn):                       # log-softmax of each frame
        top = data[t, n, 0]
        for k in range(1, K):
            top = max(top, data[t, n, k])
        total = 0.0
        for k in range(K):
            total += math.exp(data[t, n, k] - top)
        for k in range(K):
            lp[n, t, k] = data[t, n, k] - top - math.log(total)
    for t in range(tn):
        for s in range(s_len):
            alpha[n, t, s] = -math.inf
            beta[n, t, s] = -math.inf
    alpha[n, 0, 0] = lp[n, 0, blank]
    if s_len > 1:
        alpha[n, 0, 1] = lp[n, 0, int(label[n, 0])]
    for t in range(1, tn):
        for s in range(s_len):
            ch = blank if s % 2 == 0 else int(label[n, s // 2])
            acc = alpha[n, t - 1, s]
            if s >= 1:
                acc = _lse(acc, alpha[n, t - 1, s - 1])
            if s >= 2 and ch != blank and ch != int(label[n, s // 2 - 1]):
                acc = _lse(acc, alpha[n, t - 1, s - 2])
            alpha[n, t, s] = acc + lp[n, t, ch] if acc != -math.inf else -math.inf
    last = tn - 1
    beta[n, last, s_len - 1] = lp[n, last, blank]
    if s_len > 1:
        beta[n, last, s_len - 2] = lp[n, last, int(label[n, ln - 1])]
    for step in range(1, tn):
        t = last - step
        for s in range(s_len):
            ch = blank if s % 2 == 0 else int(label[n, s // 2])
            acc = beta[n, t + 1, s]
            if s + 1 < s_len:
                acc = _lse(acc, beta[n, t + 1, s + 1])
            if s + 2 < s_len and ch != blank and ch != int(label[n, s // 2 + 1]):
                acc = _lse(acc, beta[n, t + 1, s + 2])
            beta[n, t, s] = acc + lp[n, t, ch] if acc != -math.inf else -math.inf
    logp = alpha[n, last, s_len - 1]
    if s_len > 1:
        logp = _lse(logp, alpha[n, last, s_len - 2])
    loss[n] = -logp
    if logp == -math.inf:
        return 0
    for t in range(tn):
        for k in range(K):
            grad[t, n, k] = math.exp(lp[n, t, k])
        for s in range(s_len):
            ch = blank if s % 2 == 0 else int(label[n, s // 2])
            both = alpha[n, t, s] + beta[n, t, s]
            if both != -math.inf:
                grad[t, n, ch] -= math.exp(both - lp[n, t, ch] - logp)
    return 0


def _arguments(p: dict) -> list[str]:
    names = ["data", "label"]
    if p["use_data_lengths"]:
        names.append("data_lengths")
    if p["use_label_lengths"]:
        names.append("label_lengths")
    return names


def _shape(p: dict, ins: list, aux: list):
    data, label = ins[0], ins[1]
    if data is None or label is None:
        return list(ins), [None, None], []
    if len(data) != 3:
        raise RuleError(f"data must be (sequence length, batch, alphabet), got {shape_str(data)}")
    if len(label) != 2 or label[0] != data[1]:
        raise RuleError(f"label must be (batch={data[1]}, label length), got {shape_str(label)}")
    if label[1] > data[0]:
        raise RuleError(f"labels of length {label[1]} cannot fit sequences of {data[0]} frames")
    want = [data, label] + [(data[1],)] * (len(ins) - 2)
    return want, [(data[1],), data], []


def _dtype(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is not None:
        need_float(data, "data")
    return list(ins), [data, data], []


def _grad(b, node, ograds):
    data = node.inputs[0]
    n = b.g.values[data].shape[1]
    scale = b.add1("Reshape", ograds[0], shape=(1, n, 1))
    return [b.add1("broadcast_mul", node.outputs[1], scale)] + [None] * (len(node.inputs) - 1)


register(OpDef(
    name="CTCLoss", aliases=("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"), hint="ctcloss",
    arguments=_arguments, outputs=("output0", "output1"), visible_outputs=1,
    params=(Param("use_data_lengths", "bool", False, doc="take each sequence's frames from data_lengths"),
            Param("use_label_lengths", "bool", False, doc="take each label's length from label_lengths"),
            Param("blank_label", "str", "first", choices=("first", "last"), doc="the blank's channel")),
    shape=_shape, dtype=_dtype, kind=Kind.OPAQUE, grad=_grad, extra={"family": "ctc"},
    doc="Connectionist temporal classification loss per sequence (softmax taken inside).",
))
