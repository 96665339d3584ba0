"""Per-sample routines of ``hawkesll`` (:mod:`symjit.ops.hawkes`), wrapped per target by
:mod:`symjit.lower.hawkes`. Each runs one sample's points in order (a process's memory decays by
``exp(-beta * elapsed)`` and grows by one at each of its points); the backward carries, per process,
the derivatives of the memory with respect to ``beta`` and to the initial memory along (forward
mode: a handful of numbers per process), so one sample's gradients need no second pass.
``scratch`` is a (N, 4K) float64 workspace: last point time, memory, and its two derivatives.
"""
from __future__ import annotations

import math

__all__ = ["hawkes_forward", "hawkes_backward"]


def hawkes_forward(lda, alpha, beta, state, lags, marks, valid_length, max_time, ll, out_state, scratch, i,
                   k):
    for c in range(k):
        scratch[i, c] = 0.0
        scratch[i, k + c] = state[i, c]
    t = 0.0
    acc = 0.0
    for j in range(int(valid_length[i])):
        c = int(marks[i, j])
        t += lags[i, j]
        d = t - scratch[i, c]
        s = scratch[i, k + c]
        ed = math.exp(-beta[c] * d)
        acc += math.log(lda[i, c] + alpha[c] * beta[c] * s * ed) - (lda[i, c] * d + alpha[c] * s * (1.0 - ed))
        scratch[i, k + c] = 1.0 + s * ed
        scratch[i, c] = t
    for c in range(k):
        d = max_time[i] - scratch[i, c]
        s = scratch[i, k + c]
        ed = math.exp(-beta[c] * d)
        acc -= lda[i, c] * d + alpha[c] * s * (1.0 - ed)
        out_state[i, c] = s * ed
    ll[i] = acc


def hawkes_backward(g_ll, g_state, lda, alpha, beta, state, lags, marks, valid_length, max_time, d_lda,
                    d_alpha, d_beta, d_state, scratch, i, k):
    """Row i of the gradients: ``d_lda``/``d_state`` (N, K) and the per-sample terms of ``d_alpha``
    and ``d_beta`` (N, K)."""
    h = g_ll[i]
    for c in range(k):
        scratch[i, c] = 0.0                      # last point time
        scratch[i, k + c] = state[i, c]          # memory s
        scratch[i, 2 * k + c] = 0.0              # ds / dbeta
        scratch[i, 3 * k + c] = 1.0              # ds / d state
        d_lda[i, c] = 0.0
        d_alpha[i, c] = 0.0
        d_beta[i, c] = 0.0
        d_state[i, c] = 0.0
    t = 0.0
    for j in range(int(valid_length[i])):
        c = int(marks[i, j])
        t += lags[i, j]
        d = t - scratch[i, c]
        s = scratch[i, k + c]
        sb = scratch[i, 2 * k + c]
        s0 = scratch[i, 3 * k + c]
        a = alpha[c]
        b = beta[c]
        ed = math.exp(-b * d)
        lam = lda[i, c] + a * b * s * ed
        # log(lam) - comp, comp = lda d + a s (1 - ed)
        d_lda[i, c] += h * (1.0 / lam - d)
        d_alpha[i, c] += h * (b * s * ed / lam - s * (1.0 - ed))
        d_beta[i, c] += h * ((a * s * ed + a * b * ed * sb - a * b * s * ed * d) / lam
                             - (a * sb * (1.0 - ed) + a * s * d * ed))
        d_state[i, c] += h * (a * b * ed * s0 / lam - a * (1.0 - ed) * s0)
        scratch[i, k + c] = 1.0 + s * ed
        scratch[i, 2 * k + c] = sb * ed - s * d * ed
        scratch[i, 3 * k + c] = s0 * ed
        scratch[i, c] = t
    for c in range(k):
        d = max_time[i] - scratch[i, c]
        s = scratch[i, k + c]
        sb = scratch[i, 2 * k + c]
        s0 = scratch[i, 3 * k + c]
        a = alpha[c]
        ed = math.exp(-beta[c] * d)
        gs = g_state[i, c]
        d_lda[i, c] -= h * d
        d_alpha[i, c] -= h * s * (1.0 - ed)
        d_beta[i, c] += -h * (a * sb * (1.0 - ed) + a * s * d * ed) + gs * (sb * ed - s * d * ed)
        d_state[i, c] += -h * a * (1.0 - ed) * s0 + gs * s0 * ed
