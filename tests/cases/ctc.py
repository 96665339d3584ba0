"""Cases for CTCLoss (symjit/ops/ctc.py): a numpy forward-backward reference written here from
Graves et al.'s recursions, checked against MXNet 1.9.1's losses and gradients (blank first and
last, data and label lengths); the gradient by finite differences of the loss."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(97)




def _lse(*xs):
    m = max(xs)
    if m == -np.inf:
        return -np.inf
    return m + np.log(sum(np.exp(x - m) for x in xs))


def ctc_ref(data, label, data_lengths=None, label_lengths=None, blank_label="first"):
    T, N, K = data.shape
    blank = 0 if blank_label == "first" else K - 1
    pad = 0 if blank_label == "first" else -1
    loss = np.zeros(N)
    grad = np.zeros_like(data, dtype=np.float64)
    for n in range(N):
        tn = int(data_lengths[n]) if data_lengths is not None else T
        row = label[n]
        if label_lengths is not None:
            ln = int(label_lengths[n])
        else:
            ln = next((i for i, v in enumerate(row) if v == pad), len(row))
        lab = [int(v) for v in row[:ln]]
        ext = [blank]
        for c in lab:
            ext += [c, blank]
        S = len(ext)
        x = data[:tn, n].astype(np.float64)
        lp = x - x.max(1, keepdims=True)
        lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
        a = np.full((tn, S), -np.inf)
        b = np.full((tn, S), -np.inf)
        a[0, 0] = lp[0, ext[0]]
        if S > 1:
            a[0, 1] = lp[0, ext[1]]
        for t in range(1, tn):
            for s in range(S):
                terms = [a[t - 1, s]]
                if s >= 1:
                    terms.append(a[t - 1, s - 1])
                if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                    terms.append(a[t - 1, s - 2])
                a[t, s] = _lse(*terms) + lp[t, ext[s]]
        b[tn - 1, S - 1] = lp[tn - 1, ext[S - 1]]
        if S > 1:
            b[tn - 1, S - 2] = lp[tn - 1, ext[S - 2]]
        for t in range(tn - 2, -1, -1):
            for s in range(S):
                terms = [b[t + 1, s]]
                if s + 1 < S:
                    terms.append(b[t + 1, s + 1])
                if s + 2 < S and ext[s] != blank and ext[s] != ext[s + 2]:
                    terms.append(b[t + 1, s + 2])
                b[t, s] = _lse(*terms) + lp[t, ext[s]]
        logp = _lse(a[tn - 1, S - 1], a[tn - 1, S - 2]) if S > 1 else a[tn - 1, S - 1]
        loss[n] = -logp
        prob = np.exp(lp)
        for t in range(tn):
            for k in range(K):
                ss = [a[t, s] + b[t, s] - lp[t, k] for s in range(S) if ext[s] == k]
                post = np.exp(_lse(*ss) - logp) if ss and logp > -np.inf else 0.0
                grad[t, n, k] = prob[t, k] - post
    return loss, grad


_labels = np.array([[2.0, 1, 0, 0], [3, 2, 2, 0], [1, 2, 1, 3]])

CASES = [
    Case(
        "CTCLoss",
        lambda v: mx.sym.CTCLoss(v["data"], v["label"]),
        {"data": R.normal(size=(6, 3, 5)), "label": _labels.copy()},
        lambda data, label: ctc_ref(data, label)[0],
        no_grad=("label",),
    ),
    Case(
        "CTCLoss",
        lambda v: mx.sym.contrib.ctc_loss(v["data"], v["label"], blank_label="last"),
        {"data": R.normal(size=(5, 3, 5)), "label": _labels - 1},
        lambda data, label: ctc_ref(data, label, blank_label="last")[0],
        no_grad=("label",),
        id="blank_last",
    ),
    Case(
        "CTCLoss",
        lambda v: mx.sym.CTCLoss(
            v["data"], v["label"], v["dl"], v["ll"], use_data_lengths=True, use_label_lengths=True
        ),
        {
            "data": R.normal(size=(6, 3, 5)),
            "label": _labels.copy(),
            "dl": np.array([6.0, 4, 5]),
            "ll": np.array([2.0, 1, 3]),
        },
        lambda data, label, dl, ll: ctc_ref(data, label, dl, ll)[0],
        no_grad=("label", "dl", "ll"),
        id="lengths",
    ),
]
