"""Cases for hawkesll (symjit/ops/hawkes.py): a numpy reference written from the documented
likelihood, equal to MXNet 1.9.1's outputs (to float32 precision); gradients of lda, alpha, beta
and state by finite differences (MXNet's gradients of lda, alpha and beta for the log likelihood's
head agree with them)."""

from __future__ import annotations

import math

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(79)


def hawkesll(lda, alpha, beta, state, lags, marks, valid_length, max_time):
    n, k = lda.shape
    ll, out_state = np.zeros(n), np.zeros((n, k))
    for i in range(n):
        s, last, t, acc = state[i].astype(np.float64).copy(), np.zeros(k), 0.0, 0.0
        for j in range(int(valid_length[i])):
            c = int(marks[i, j])
            t += lags[i, j]
            d = t - last[c]
            ed = math.exp(-beta[c] * d)
            lam = lda[i, c] + alpha[c] * beta[c] * s[c] * ed
            acc += math.log(lam) - (lda[i, c] * d + alpha[c] * s[c] * (1 - ed))
            s[c], last[c] = 1 + s[c] * ed, t
        for c in range(k):
            d = max_time[i] - last[c]
            ed = math.exp(-beta[c] * d)
            acc -= lda[i, c] * d + alpha[c] * s[c] * (1 - ed)
            out_state[i, c] = s[c] * ed
        ll[i] = acc
    return [ll, out_state]


_N, _T, _K = 4, 5, 3
_LAGS = R.uniform(0.1, 1.0, (_N, _T))
CASES = [Case("_contrib_hawkesll", lambda v: mx.sym.Group(list(mx.sym.contrib.hawkesll(*[v[n] for n in (
    "lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")]))),
    {"lda": R.uniform(0.5, 2.0, (_N, _K)), "alpha": R.uniform(0.1, 0.5, (_K,)),
     "beta": R.uniform(0.5, 2.0, (_K,)), "state": R.uniform(0.0, 1.0, (_N, _K)),
     "lags": _LAGS, "marks": R.integers(0, _K, (_N, _T)).astype(np.int32),
     "valid_length": np.array([1.0, 2.0, 5.0, 0.0]), "max_time": _LAGS.sum(axis=1) + 0.5},
    hawkesll, no_grad=("lags", "valid_length", "max_time"))]
