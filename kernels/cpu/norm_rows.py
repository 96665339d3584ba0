"""BatchNorm of ``(N, C)`` data (an ``(N, C, S)`` view with ``S == 1``: BatchNorm after
FullyConnected), its channels side by side.

:mod:`.norm` walks one channel at a time, which suits images (a channel is ``N`` contiguous runs
of ``S`` values). With ``S == 1`` a channel is ``N`` values ``C`` apart: the per-channel loops ran
one scalar step per element (137 us for the forward of a ``(100, 128)`` batch, 388 us for its
backward). Here each row of ``C`` values is one vectorised pass that adds into per-channel float64
accumulators, then each row is normalised in a second pass.

Each channel's sums are added in the order of :mod:`.norm`'s (row 0 first, one float64 chain), so
both give the same bits; the functions take a channel range ``[c0, c1)`` so that the ``_parts``
kernels split channels as :mod:`.norm` does.

>>> import numpy as np
>>> x = np.array([[1.0, 2.0], [3.0, 6.0]])            # (N=2, C=2)
>>> out, mean, invstd = np.empty_like(x), np.empty(2), np.empty(2)
>>> mm, mv = np.zeros(2), np.ones(2)
>>> train_rows(x, np.ones(2), np.zeros(2), mm, mv, out, mean, invstd, 0.0, 0.9, True, True, 0, 2)
>>> out, mean, 1 / invstd ** 2
(array([[-1., -1.],
       [ 1.,  1.]]), array([2., 4.]), array([1., 4.]))
"""
from __future__ import annotations

import math

import numba
import numpy as np

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit

__all__ = ["invstd", "train_rows", "inference_rows", "backward_rows", "relu_backward_rows"]

_jit = njit(cache=True, nogil=True, error_model="numpy")


@_jit
def invstd(var, eps):
    """``1 / sqrt(var + eps)``, 0 when ``var + eps == 0``."""
    v = var + eps
    return 0.0 if v == 0.0 else 1.0 / math.sqrt(v)


@_jit
def _normalize_rows(x, out, mean, scale, b, c0, c1):
    """``out[i, c] = (x[i, c] - mean[c]) * scale[c] + b[c]`` over channels ``[c0, c1)`` (the
    per-channel vectors start at ``c0``)."""
    for i in range(x.shape[0]):
        xr = x[i, c0:c1]
        orow = out[i, c0:c1]
        for j in range(xr.size):
            orow[j] = (xr[j] - mean[j]) * scale[j] + b[j]


@_jit
def _mean_var_rows(x, c0, c1):
    """Per channel of ``[c0, c1)``: (mean, biased variance) in float64, summed about the
    channel's first value as :func:`.norm._channel_mean_var` sums."""
    n, w = x.shape[0], c1 - c0
    shift = np.empty(w, np.float64)
    tot = np.zeros(w, np.float64)
    sq = np.zeros(w, np.float64)
    for j in range(w):
        shift[j] = x[0, c0 + j]
    for i in range(n):
        xr = x[i, c0:c1]
        for j in range(w):
            d = xr[j] - shift[j]
            tot[j] += d
            sq[j] += d * d
    for j in range(w):
        m = tot[j] / n
        sq[j] = max(0.0, sq[j] / n - m * m)
        tot[j] = shift[j] + m
    return tot, sq


@_jit
def train_rows(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd, eps, momentum,
               fix_gamma, update_moving, c0, c1):
    """:func:`.norm.batchnorm_forward_train` of channels ``[c0, c1)`` of ``x (N, C)`` (``N > 0``)."""
    mean, var = _mean_var_rows(x, c0, c1)
    w = c1 - c0
    m64, scale, b = np.empty(w), np.empty(w), np.empty(w)
    for j in range(w):
        c = c0 + j
        save_mean[c] = mean[j]
        save_invstd[c] = invstd(var[j], eps)
        g = 1.0 if fix_gamma else gamma[c] * 1.0
        # normalised with the saved (data-dtype) statistics, as the per-channel kernel does
        m64[j] = save_mean[c] * 1.0
        scale[j] = g * (save_invstd[c] * 1.0)
        b[j] = beta[c] * 1.0
        if update_moving:
            moving_mean[c] = moving_mean[c] * momentum + mean[j] * (1.0 - momentum)
            moving_var[c] = moving_var[c] * momentum + var[j] * (1.0 - momentum)
    _normalize_rows(x, out, m64, scale, b, c0, c1)


@_jit
def inference_rows(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd, eps,
                   fix_gamma, c0, c1):
    """:func:`.norm.batchnorm_forward_inference` of channels ``[c0, c1)`` of ``x (N, C)``."""
    w = c1 - c0
    m64, scale, b = np.empty(w), np.empty(w), np.empty(w)
    for j in range(w):
        c = c0 + j
        mean = moving_mean[c] * 1.0
        inv = invstd(moving_var[c] * 1.0, eps)
        g = 1.0 if fix_gamma else gamma[c] * 1.0
        m64[j], scale[j], b[j] = mean, g * inv, beta[c] * 1.0
        save_mean[c] = mean
        save_invstd[c] = inv
    _normalize_rows(x, out, m64, scale, b, c0, c1)


@_jit
def _grad_sums_rows(x, dout, mean, c0, c1):
    """Per channel: ``sum(dout)`` and ``sum(dout * (x - mean))`` in float64."""
    w = c1 - c0
    sg = np.zeros(w, np.float64)
    dotp = np.zeros(w, np.float64)
    for i in range(x.shape[0]):
        xr, gr = x[i, c0:c1], dout[i, c0:c1]
        for j in range(w):
            g = gr[j] * 1.0
            sg[j] += g
            dotp[j] += g * (xr[j] - mean[j])
    return sg, dotp


@_jit
def _relu_sums_rows(x, dout, mean, scale, b, c0, c1):
    """:func:`_grad_sums_rows` of ``dout * (y > 0)``, ``y = (x - mean) * scale + b``."""
    w = c1 - c0
    sg = np.zeros(w, np.float64)
    dotp = np.zeros(w, np.float64)
    for i in range(x.shape[0]):
        xr, gr = x[i, c0:c1], dout[i, c0:c1]
        for j in range(w):
            d = xr[j] - mean[j]
            g = gr[j] * 1.0
            g = g if d * scale[j] + b[j] > 0 else 0.0
            sg[j] += g
            dotp[j] += g * d
    return sg, dotp


# dx may be dout's or x's buffer (the compiler plans it in place); each element is read before it
# is written, so one loop serves, but LLVM's runtime alias check then takes its scalar loop:
# three forms as in :mod:`.norm` (``alias`` 0: a buffer of its own, 1: dout's, 2: x's).


@numba.njit(inline="always")
def _bn_dx(xv, gv, mean, gm, k, iw):
    return (gv - gm - (xv - mean) * k) * iw


@numba.njit(inline="always")
def _relu_dx(xv, gv, mean, scale, b, gm, k):
    d = xv - mean
    g = gv * 1.0
    g = g if d * scale + b > 0 else 0.0      # a select, not a branch
    return (g - gm - d * k) * scale


@_jit
def _dx_rows(x, dout, dx, mean, gm, k, iw, c0, c1, alias):
    """``dx = (dout - gm - (x - mean) * k) * iw`` per channel."""
    for i in range(x.shape[0]):
        xr, gr = x[i, c0:c1], dout[i, c0:c1]
        if alias == 1:
            for j in range(xr.size):
                gr[j] = _bn_dx(xr[j], gr[j], mean[j], gm[j], k[j], iw[j])
        elif alias == 2:
            for j in range(xr.size):
                xr[j] = _bn_dx(xr[j], gr[j], mean[j], gm[j], k[j], iw[j])
        else:
            dr = dx[i, c0:c1]
            for j in range(xr.size):
                dr[j] = _bn_dx(xr[j], gr[j], mean[j], gm[j], k[j], iw[j])


@_jit
def _scale_rows(dout, dx, iw, c0, c1, alias):
    """``dx = dout * iw`` per channel (the global-statistics gradient; ``x`` is not read)."""
    for i in range(dout.shape[0]):
        gr = dout[i, c0:c1]
        if alias == 1:
            for j in range(gr.size):
                gr[j] = gr[j] * iw[j]
        else:
            dr = dx[i, c0:c1]
            for j in range(gr.size):
                dr[j] = gr[j] * iw[j]


@_jit
def _relu_dx_rows(x, dout, dx, mean, scale, b, gm, k, c0, c1, alias):
    """dx of BatchNorm + relu per channel (``dout`` masked where the recomputed output is <= 0)."""
    for i in range(x.shape[0]):
        xr, gr = x[i, c0:c1], dout[i, c0:c1]
        if alias == 1:
            for j in range(xr.size):
                gr[j] = _relu_dx(xr[j], gr[j], mean[j], scale[j], b[j], gm[j], k[j])
        elif alias == 2:
            for j in range(xr.size):
                xr[j] = _relu_dx(xr[j], gr[j], mean[j], scale[j], b[j], gm[j], k[j])
        else:
            dr = dx[i, c0:c1]
            for j in range(xr.size):
                dr[j] = _relu_dx(xr[j], gr[j], mean[j], scale[j], b[j], gm[j], k[j])


@_jit
def _saved(save_mean, save_invstd, gamma, fix_gamma, c0, c1):
    """float64 (mean, invstd, gamma * invstd) of channels ``[c0, c1)``."""
    w = c1 - c0
    mean, inv, iw = np.empty(w), np.empty(w), np.empty(w)
    for j in range(w):
        c = c0 + j
        mean[j], inv[j] = save_mean[c] * 1.0, save_invstd[c] * 1.0
        iw[j] = inv[j] * (1.0 if fix_gamma else gamma[c] * 1.0)
    return mean, inv, iw


@_jit
def _param_grads(sg, dotp, inv, m, batch, fix_gamma, dgamma, dbeta, c0):
    """Writes ``dgamma``/``dbeta`` of channels ``c0...`` from the sums; returns the dx terms
    ``(mean(dout), mean(dout * (x - mean)) * invstd^2)`` per channel (zeros without batch
    statistics)."""
    w = sg.size
    gm, k = np.zeros(w), np.zeros(w)
    for j in range(w):
        c = c0 + j
        if batch:
            gm[j] = sg[j] / m
            k[j] = dotp[j] * inv[j] * inv[j] / m
        dgamma[c] = 0.0 if fix_gamma else dotp[j] * inv[j]
        dbeta[c] = sg[j]
    return gm, k


@_jit
def backward_rows(x, dout, gamma, save_mean, save_invstd, dx, dgamma, dbeta, fix_gamma,
                  use_batch_stats, alias, c0, c1):
    """:func:`.norm.batchnorm_backward` of channels ``[c0, c1)`` of ``(N, C)`` data."""
    m = x.shape[0]
    mean, inv, iw = _saved(save_mean, save_invstd, gamma, fix_gamma, c0, c1)
    sg, dotp = _grad_sums_rows(x, dout, mean, c0, c1)
    batch = use_batch_stats and m > 0
    gm, k = _param_grads(sg, dotp, inv, m, batch, fix_gamma, dgamma, dbeta, c0)
    if batch:
        _dx_rows(x, dout, dx, mean, gm, k, iw, c0, c1, alias)
    else:
        _scale_rows(dout, dx, iw, c0, c1, alias)


@_jit
def relu_backward_rows(x, dout, gamma, beta, save_mean, save_invstd, dx, dgamma, dbeta, fix_gamma,
                       use_batch_stats, alias, c0, c1):
    """:func:`.norm.batchnorm_relu_backward` of channels ``[c0, c1)`` of ``(N, C)`` data."""
    m = x.shape[0]
    mean, inv, scale = _saved(save_mean, save_invstd, gamma, fix_gamma, c0, c1)
    w = c1 - c0
    b = np.empty(w)
    for j in range(w):
        b[j] = beta[c0 + j] * 1.0
    sg, dotp = _relu_sums_rows(x, dout, mean, scale, b, c0, c1)
    batch = use_batch_stats and m > 0
    gm, k = _param_grads(sg, dotp, inv, m, batch, fix_gamma, dgamma, dbeta, c0)
    _relu_dx_rows(x, dout, dx, mean, scale, b, gm, k, c0, c1, alias)
