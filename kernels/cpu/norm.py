"""BatchNorm and LayerNorm kernels.

BatchNorm works on an ``(N, C, S)`` view of the data (``C`` = the channel axis, ``S`` = the product
of the axes after it, ``N`` = the product of those before it); its per-channel arrays (``gamma``,
``beta``, moving and saved statistics, ``dgamma``, ``dbeta``) are ``(C,)``. LayerNorm works on an
``(M, K)`` view normalised over the last axis, with ``gamma``/``beta`` ``(K,)`` and saved
statistics ``(M,)``. The caller moves a non-trailing LayerNorm axis to the end.

MXNet 1.x semantics followed here:

* Training BatchNorm uses the batch mean and the *biased* variance (sum of squares / ``N*S``),
  normalises with ``invstd = 1 / sqrt(var + eps)`` (0 when ``var + eps == 0``), and saves the
  mean and the inverse std for backward (MXNet's CPU ``var`` output holds the inverse std too).
* The moving statistics are updated with the biased batch variance:
  ``moving = moving * momentum + batch * (1 - momentum)``. MXNet's plain CPU operator applies this
  update in its backward pass (its MKL-DNN one in forward); :func:`batchnorm_forward_train` applies
  it in forward when ``update_moving`` is true, and :func:`batchnorm_update_moving` is there for a
  caller that wants it elsewhere. After a forward+backward step the result is the same.
* ``fix_gamma`` treats gamma as 1 and makes ``dgamma`` 0. (MXNet also overwrites the gamma array
  with ones in forward; these kernels never write their inputs: the caller does that if wanted.)
* ``use_global_stats`` (or inference): normalise with the moving statistics; the backward then
  treats mean and variance as constants (``dx = dout * gamma * invstd``).

All kernels are ``numba.njit(cache=True, nogil=True)``, write into preallocated C-contiguous float32
or float64 arrays, sum in float64 (BatchNorm's statistics in one pass per channel, about the
channel's first element, :func:`_channel_mean_var`; LayerNorm's in two passes per row, mean first,
then the centred sum of squares; both stay accurate when the mean is large), and trust their caller
for shapes: call :func:`check_batchnorm` / :func:`check_layernorm` first.

>>> import numpy as np
>>> x = np.array([[[1.0, 3.0]], [[5.0, 7.0]]])            # (N=2, C=1, S=2)
>>> one, zero = np.ones(1), np.zeros(1)
>>> mm, mv = np.zeros(1), np.ones(1)
>>> out, mean, invstd = np.empty_like(x), np.empty(1), np.empty(1)
>>> check_batchnorm("batchnorm_forward_train", x, one, zero, mm, mv, out, mean, invstd)
>>> batchnorm_forward_train(x, one, zero, mm, mv, out, mean, invstd, 0.0, 0.9, False, True)
>>> out.ravel(), mean, 1 / invstd ** 2
(array([-1.34164079, -0.4472136 ,  0.4472136 ,  1.34164079]), array([4.]), array([5.]))
>>> mm, mv                                   # 0.9 * old + 0.1 * batch
(array([0.4]), array([1.4]))
"""
from __future__ import annotations

import math

import numba
import numpy as np

from symjit.base import shape_str

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from ._parallel import part_range
from .gemm import KernelArgError, check_arrays, need_ndim, need_shape
from .norm_rows import backward_rows, inference_rows, invstd, relu_backward_rows, train_rows

__all__ = [
    "batchnorm_forward_train", "batchnorm_forward_inference", "batchnorm_update_moving",
    "batchnorm_backward", "batchnorm_relu_backward", "batchnorm_forward_train_parts",
    "batchnorm_forward_inference_parts", "batchnorm_backward_parts",
    "batchnorm_relu_backward_parts", "layernorm_forward", "layernorm_backward",
    "check_batchnorm", "check_batchnorm_backward", "check_layernorm", "check_layernorm_backward",
]

_jit = njit(cache=True, nogil=True)


# ---------------------------------------------------------------------------------------------
# BatchNorm on (N, C, S)


# The per-channel sums run over contiguous rows ``x[i, c]`` with eight float64 accumulators in a
# fixed order (lane k takes elements 8q + k, then the lanes are added pairwise, then the tail):
# one accumulator's chain of dependent adds bounds the loop at one add per add latency, eight
# independent ones let LLVM vectorise them (2x on ResNet's (32, 64, 112*112) statistics).


@_jit
def _sum_row(r, shift):
    """``sum(r - shift)`` in float64."""
    n = r.size
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    for q in range(n // 8):
        j = 8 * q
        a0 += r[j] - shift
        a1 += r[j + 1] - shift
        a2 += r[j + 2] - shift
        a3 += r[j + 3] - shift
        a4 += r[j + 4] - shift
        a5 += r[j + 5] - shift
        a6 += r[j + 6] - shift
        a7 += r[j + 7] - shift
    t = 0.0
    for j in range(n - n % 8, n):
        t += r[j] - shift
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + t


@_jit
def _sumsq_row(r, shift):
    """``sum((r - shift)^2)`` in float64."""
    n = r.size
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    for q in range(n // 8):
        j = 8 * q
        d0, d1, d2, d3 = r[j] - shift, r[j + 1] - shift, r[j + 2] - shift, r[j + 3] - shift
        d4, d5, d6, d7 = r[j + 4] - shift, r[j + 5] - shift, r[j + 6] - shift, r[j + 7] - shift
        a0 += d0 * d0
        a1 += d1 * d1
        a2 += d2 * d2
        a3 += d3 * d3
        a4 += d4 * d4
        a5 += d5 * d5
        a6 += d6 * d6
        a7 += d7 * d7
    t = 0.0
    for j in range(n - n % 8, n):
        d = r[j] - shift
        t += d * d
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + t


@_jit
def _grad_sums_row(r, g, mean):
    """``(sum(g), sum(g * (r - mean)))`` in float64 (four lanes each)."""
    n = r.size
    s0 = s1 = s2 = s3 = 0.0
    p0 = p1 = p2 = p3 = 0.0
    for q in range(n // 4):
        j = 4 * q
        g0, g1, g2, g3 = g[j] * 1.0, g[j + 1] * 1.0, g[j + 2] * 1.0, g[j + 3] * 1.0
        s0 += g0
        s1 += g1
        s2 += g2
        s3 += g3
        p0 += g0 * (r[j] - mean)
        p1 += g1 * (r[j + 1] - mean)
        p2 += g2 * (r[j + 2] - mean)
        p3 += g3 * (r[j + 3] - mean)
    ts = 0.0
    tp = 0.0
    for j in range(n - n % 4, n):
        gj = g[j] * 1.0
        ts += gj
        tp += gj * (r[j] - mean)
    return (s0 + s1) + (s2 + s3) + ts, (p0 + p1) + (p2 + p3) + tp


@_jit
def _relu_sums_row(r, g, mean, scale, b):
    """:func:`_grad_sums_row` of ``g * (y > 0)`` with ``y = (r - mean) * scale + b``."""
    n = r.size
    s0 = s1 = s2 = s3 = 0.0
    p0 = p1 = p2 = p3 = 0.0
    for q in range(n // 4):
        j = 4 * q
        d0, d1, d2, d3 = r[j] - mean, r[j + 1] - mean, r[j + 2] - mean, r[j + 3] - mean
        g0, g1, g2, g3 = g[j] * 1.0, g[j + 1] * 1.0, g[j + 2] * 1.0, g[j + 3] * 1.0   # loaded first:
        g0 = g0 if d0 * scale + b > 0 else 0.0    # a select, not a branch (random signs mispredict)
        g1 = g1 if d1 * scale + b > 0 else 0.0
        g2 = g2 if d2 * scale + b > 0 else 0.0
        g3 = g3 if d3 * scale + b > 0 else 0.0
        s0 += g0
        s1 += g1
        s2 += g2
        s3 += g3
        p0 += g0 * d0
        p1 += g1 * d1
        p2 += g2 * d2
        p3 += g3 * d3
    ts = 0.0
    tp = 0.0
    for j in range(n - n % 4, n):
        d = r[j] - mean
        gj = g[j] * 1.0
        gj = gj if d * scale + b > 0 else 0.0
        ts += gj
        tp += gj * d
    return (s0 + s1) + (s2 + s3) + ts, (p0 + p1) + (p2 + p3) + tp


@_jit
def _sums_row(r, shift):
    """``(sum(r - shift), sum((r - shift)^2))`` in float64, in one pass (eight lanes each)."""
    n = r.size
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    q0 = q1 = q2 = q3 = q4 = q5 = q6 = q7 = 0.0
    for q in range(n // 8):
        j = 8 * q
        d0, d1, d2, d3 = r[j] - shift, r[j + 1] - shift, r[j + 2] - shift, r[j + 3] - shift
        d4, d5, d6, d7 = r[j + 4] - shift, r[j + 5] - shift, r[j + 6] - shift, r[j + 7] - shift
        a0 += d0
        a1 += d1
        a2 += d2
        a3 += d3
        a4 += d4
        a5 += d5
        a6 += d6
        a7 += d7
        q0 += d0 * d0
        q1 += d1 * d1
        q2 += d2 * d2
        q3 += d3 * d3
        q4 += d4 * d4
        q5 += d5 * d5
        q6 += d6 * d6
        q7 += d7 * d7
    t = tq = 0.0
    for j in range(n - n % 8, n):
        d = r[j] - shift
        t += d
        tq += d * d
    return (((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + t,
            ((q0 + q1) + (q2 + q3)) + ((q4 + q5) + (q6 + q7)) + tq)


@_jit
def _channel_mean_var(x, c):
    """Batch mean and biased variance of channel ``c`` in float64, in one pass over the channel:
    the sums of ``x - shift`` and of its squares, ``shift`` the channel's first element, so that
    ``var = E[(x - shift)^2] - E[x - shift]^2`` subtracts numbers near the variance, not near the
    squared mean (float64 keeps ~1e-7 of the variance unless that element lies ~10^4 standard
    deviations from the mean). Two passes (the mean, then the squares about it) had read
    ResNet's stem activations from memory twice: 24 ms against 18 at batch 32."""
    n, _, s = x.shape
    shift = x[0, c, 0] * 1.0 if n * s > 0 else 0.0
    total = sq = 0.0
    for i in range(n):
        a, b = _sums_row(x[i, c], shift)
        total += a
        sq += b
    m = total / (n * s)
    return shift + m, max(0.0, sq / (n * s) - m * m)


_invstd = invstd


@_jit
def _rows(a):
    """An ``(N, C, 1)`` view as ``(N, C)`` (BatchNorm after FullyConnected: :mod:`.norm_rows`)."""
    return a.reshape(a.shape[0], a.shape[1])


@_jit
def _normalize_channel(x, out, c, mean, invstd, g, b):
    scale = g * invstd
    for i in range(x.shape[0]):
        for j in range(x.shape[2]):
            out[i, c, j] = (x[i, c, j] - mean) * scale + b


@_jit
def batchnorm_update_moving(moving_mean, moving_var, mean, var, momentum):
    """``moving = moving * momentum + batch * (1 - momentum)`` for mean and variance, in place."""
    for c in range(moving_mean.shape[0]):
        moving_mean[c] = moving_mean[c] * momentum + mean[c] * (1.0 - momentum)
        moving_var[c] = moving_var[c] * momentum + var[c] * (1.0 - momentum)


@_jit
def _train_channel(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd, eps,
                   momentum, fix_gamma, update_moving, c):
    mean, var = _channel_mean_var(x, c)
    save_mean[c] = mean
    save_invstd[c] = _invstd(var, eps)
    g = 1.0 if fix_gamma else gamma[c] * 1.0
    # normalised with the saved (data-dtype) statistics, which the gradients read: a fused relu's
    # mask recomputed there then has the forward's signs exactly
    _normalize_channel(x, out, c, save_mean[c] * 1.0, save_invstd[c] * 1.0, g, beta[c])
    if update_moving:
        moving_mean[c] = moving_mean[c] * momentum + mean * (1.0 - momentum)
        moving_var[c] = moving_var[c] * momentum + var * (1.0 - momentum)


@_jit
def batchnorm_forward_train(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd,
                            eps, momentum, fix_gamma, update_moving):
    """Training BatchNorm forward on ``x (N, C, S)`` with batch statistics (``N * S > 0``).

    Writes ``out (N, C, S)``, ``save_mean (C,)`` and ``save_invstd (C,)``; when ``update_moving``,
    updates ``moving_mean``/``moving_var`` in place with the biased batch variance.
    """
    if x.shape[2] == 1:
        train_rows(_rows(x), gamma, beta, moving_mean, moving_var, _rows(out), save_mean, save_invstd,
                   eps, momentum, fix_gamma, update_moving, 0, x.shape[1])
        return
    for c in range(x.shape[1]):
        _train_channel(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd, eps,
                       momentum, fix_gamma, update_moving, c)


@_jit
def batchnorm_forward_train_parts(x, gamma, beta, moving_mean, moving_var, out, save_mean,
                                  save_invstd, eps, momentum, fix_gamma, update_moving, part, parts, sync):
    """:func:`batchnorm_forward_train` of part ``part`` of ``parts`` even runs of the channels
    (the host runs the parts on its threads, :mod:`symjit.parts`)."""
    c0, c1 = part_range(part, parts, x.shape[1])
    if x.shape[2] == 1:
        train_rows(_rows(x), gamma, beta, moving_mean, moving_var, _rows(out), save_mean, save_invstd,
                   eps, momentum, fix_gamma, update_moving, c0, c1)
        return
    for c in range(c0, c1):
        _train_channel(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd, eps,
                       momentum, fix_gamma, update_moving, c)


@_jit
def _inference_channel(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd, eps,
                       fix_gamma, c):
    mean = moving_mean[c] * 1.0
    inv = _invstd(moving_var[c] * 1.0, eps)
    g = 1.0 if fix_gamma else gamma[c] * 1.0
    _normalize_channel(x, out, c, mean, inv, g, beta[c])
    save_mean[c] = mean
    save_invstd[c] = inv


@_jit
def batchnorm_forward_inference(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd,
                                eps, fix_gamma):
    """BatchNorm forward with the moving statistics (inference or ``use_global_stats``).

    Also writes ``save_mean = moving_mean`` and ``save_invstd = 1/sqrt(moving_var + eps)`` for a
    backward with ``use_batch_stats=False``.
    """
    if x.shape[2] == 1:
        inference_rows(_rows(x), gamma, beta, moving_mean, moving_var, _rows(out), save_mean,
                       save_invstd, eps, fix_gamma, 0, x.shape[1])
        return
    for c in range(x.shape[1]):
        _inference_channel(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd, eps,
                           fix_gamma, c)


@_jit
def batchnorm_forward_inference_parts(x, gamma, beta, moving_mean, moving_var, out, save_mean,
                                      save_invstd, eps, fix_gamma, part, parts, sync):
    """:func:`batchnorm_forward_inference` of a part of the channels."""
    c0, c1 = part_range(part, parts, x.shape[1])
    if x.shape[2] == 1:
        inference_rows(_rows(x), gamma, beta, moving_mean, moving_var, _rows(out), save_mean,
                       save_invstd, eps, fix_gamma, c0, c1)
        return
    for c in range(c0, c1):
        _inference_channel(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd, eps,
                           fix_gamma, c)


@_jit
def _channel_grad_sums(x, dout, c, mean):
    """(sum(dout), sum(dout * (x - mean))) over channel ``c``, in float64."""
    sg = 0.0
    dotp = 0.0
    for i in range(x.shape[0]):
        a, b = _grad_sums_row(x[i, c], dout[i, c], mean)
        sg += a
        dotp += b
    return sg, dotp


# dx rows. The compiler may plan dx in place over dout or x; passed under two names, one buffer
# fails LLVM's runtime alias check and the loop runs its scalar fallback (7x slower on ResNet's
# stem: 254 ms against 35 ms at (32, 64, 112*112)). So each row loop exists in three forms, dx a
# third array, dx written into dout's row, dx written into x's row (``_alias``: 0, 1, 2).


@_jit
def _alias(dx, dout, x):
    """0 when ``dx`` is a buffer of its own, 1 when it is ``dout``'s, 2 when it is ``x``'s."""
    if dx.ctypes.data == dout.ctypes.data:
        return 1
    return 2 if dx.ctypes.data == x.ctypes.data else 0


@numba.njit(inline="always")
def _bn_dx(xv, gv, mean, gm, k, iw):
    return (gv - gm - (xv - mean) * k) * iw


@_jit
def _bn_dx_row(xr, gr, dr, mean, gm, k, iw):
    for j in range(xr.size):
        dr[j] = _bn_dx(xr[j], gr[j], mean, gm, k, iw)


@_jit
def _bn_dx_row_on_g(xr, gr, mean, gm, k, iw):
    for j in range(xr.size):
        gr[j] = _bn_dx(xr[j], gr[j], mean, gm, k, iw)


@_jit
def _bn_dx_row_on_x(xr, gr, mean, gm, k, iw):
    for j in range(xr.size):
        xr[j] = _bn_dx(xr[j], gr[j], mean, gm, k, iw)


@_jit
def _bn_dx_rows(x, dout, dx, c, mean, gm, k, iw, alias):
    """``dx[:, c] = (dout - gm - (x - mean) * k) * iw`` row by row, in the form ``alias`` says."""
    for i in range(x.shape[0]):
        if alias == 1:
            _bn_dx_row_on_g(x[i, c], dout[i, c], mean, gm, k, iw)
        elif alias == 2:
            _bn_dx_row_on_x(x[i, c], dout[i, c], mean, gm, k, iw)
        else:
            _bn_dx_row(x[i, c], dout[i, c], dx[i, c], mean, gm, k, iw)


@_jit
def _scale_rows(dout, dx, c, iw, alias):
    """``dx[:, c] = dout[:, c] * iw`` (the global-statistics gradient; ``x`` is not read)."""
    for i in range(dout.shape[0]):
        gr = dout[i, c]
        if alias == 1:
            for j in range(gr.size):
                gr[j] = gr[j] * iw
        else:
            dr = dx[i, c]
            for j in range(gr.size):
                dr[j] = gr[j] * iw


@numba.njit(inline="always")
def _relu_dx(xv, gv, mean, scale, b, gm, k):
    """dx of BatchNorm + relu at one element: ``dout`` masked where the recomputed output is <= 0
    (a select, not a branch)."""
    d = xv - mean
    g = gv * 1.0
    g = g if d * scale + b > 0 else 0.0
    return (g - gm - d * k) * scale


@_jit
def _relu_dx_row(xr, gr, dr, mean, scale, b, gm, k):
    for j in range(xr.size):
        dr[j] = _relu_dx(xr[j], gr[j], mean, scale, b, gm, k)


@_jit
def _relu_dx_row_on_g(xr, gr, mean, scale, b, gm, k):
    for j in range(xr.size):
        gr[j] = _relu_dx(xr[j], gr[j], mean, scale, b, gm, k)


@_jit
def _relu_dx_row_on_x(xr, gr, mean, scale, b, gm, k):
    for j in range(xr.size):
        xr[j] = _relu_dx(xr[j], gr[j], mean, scale, b, gm, k)


@_jit
def _relu_dx_rows(x, dout, dx, c, mean, scale, b, gm, k, alias):
    """``dx[:, c]`` of :func:`batchnorm_relu_backward` row by row, in the form ``alias`` says."""
    for i in range(x.shape[0]):
        if alias == 1:
            _relu_dx_row_on_g(x[i, c], dout[i, c], mean, scale, b, gm, k)
        elif alias == 2:
            _relu_dx_row_on_x(x[i, c], dout[i, c], mean, scale, b, gm, k)
        else:
            _relu_dx_row(x[i, c], dout[i, c], dx[i, c], mean, scale, b, gm, k)


@_jit
def _backward_channel(x, dout, gamma, save_mean, save_invstd, dx, dgamma, dbeta, fix_gamma,
                      use_batch_stats, alias, c):
    m = x.shape[0] * x.shape[2]
    mean = save_mean[c] * 1.0
    inv = save_invstd[c] * 1.0
    sg, dotp = _channel_grad_sums(x, dout, c, mean)
    g = 1.0 if fix_gamma else gamma[c] * 1.0
    iw = inv * g
    if use_batch_stats and m > 0:
        _bn_dx_rows(x, dout, dx, c, mean, sg / m, dotp * inv * inv / m, iw, alias)
    else:
        _scale_rows(dout, dx, c, iw, alias)
    dgamma[c] = 0.0 if fix_gamma else dotp * inv
    dbeta[c] = sg


@_jit
def batchnorm_backward(x, dout, gamma, save_mean, save_invstd, dx, dgamma, dbeta, fix_gamma,
                       use_batch_stats):
    """BatchNorm backward on ``(N, C, S)``: writes ``dx``, ``dgamma (C,)`` and ``dbeta (C,)``.

    ``save_mean``/``save_invstd`` come from the forward. With ``use_batch_stats`` (training without
    ``use_global_stats``) ``dx = g*invstd * (dout - mean(dout) - xhat * mean(dout * xhat))`` with
    ``xhat = (x - mean) * invstd``; otherwise ``dx = g * invstd * dout``. ``dgamma = sum(dout*xhat)``
    (0 when ``fix_gamma``), ``dbeta = sum(dout)``.
    """
    alias = _alias(dx, dout, x)
    if x.shape[2] == 1:
        backward_rows(_rows(x), _rows(dout), gamma, save_mean, save_invstd, _rows(dx), dgamma, dbeta,
                      fix_gamma, use_batch_stats, alias, 0, x.shape[1])
        return
    for c in range(x.shape[1]):
        _backward_channel(x, dout, gamma, save_mean, save_invstd, dx, dgamma, dbeta, fix_gamma,
                          use_batch_stats, alias, c)


@_jit
def batchnorm_backward_parts(x, dout, gamma, save_mean, save_invstd, dx, dgamma, dbeta, fix_gamma,
                             use_batch_stats, part, parts, sync):
    """:func:`batchnorm_backward` of a part of the channels."""
    alias = _alias(dx, dout, x)
    c0, c1 = part_range(part, parts, x.shape[1])
    if x.shape[2] == 1:
        backward_rows(_rows(x), _rows(dout), gamma, save_mean, save_invstd, _rows(dx), dgamma, dbeta,
                      fix_gamma, use_batch_stats, alias, c0, c1)
        return
    for c in range(c0, c1):
        _backward_channel(x, dout, gamma, save_mean, save_invstd, dx, dgamma, dbeta, fix_gamma,
                          use_batch_stats, alias, c)


@_jit
def _relu_masked_sums(x, dout, c, mean, scale, b):
    """(sum(dr), sum(dr * (x - mean))) over channel ``c`` with ``dr = dout * (y > 0)`` and
    ``y = (x - mean) * scale + b`` recomputed as the forward computed it."""
    sg = 0.0
    dotp = 0.0
    for i in range(x.shape[0]):
        s_, p_ = _relu_sums_row(x[i, c], dout[i, c], mean, scale, b)
        sg += s_
        dotp += p_
    return sg, dotp


@_jit
def _relu_backward_channel(x, dout, gamma, beta, save_mean, save_invstd, dx, dgamma, dbeta, fix_gamma,
                           use_batch_stats, alias, c):
    m = x.shape[0] * x.shape[2]
    mean = save_mean[c] * 1.0
    inv = save_invstd[c] * 1.0
    g = 1.0 if fix_gamma else gamma[c] * 1.0
    scale, b = g * inv, beta[c] * 1.0
    sg, dotp = _relu_masked_sums(x, dout, c, mean, scale, b)
    k = dotp * inv * inv / m if use_batch_stats and m > 0 else 0.0
    gm = sg / m if use_batch_stats and m > 0 else 0.0
    _relu_dx_rows(x, dout, dx, c, mean, scale, b, gm, k, alias)
    dgamma[c] = 0.0 if fix_gamma else dotp * inv
    dbeta[c] = sg


@_jit
def batchnorm_relu_backward(x, dout, gamma, beta, save_mean, save_invstd, dx, dgamma, dbeta,
                            fix_gamma, use_batch_stats):
    """The gradient of ``relu(BatchNorm(x))`` from the gradient ``dout`` of the relu's output.

    As :func:`batchnorm_backward` applied to ``dout * (y > 0)``, where the BatchNorm output ``y``
    is recomputed from ``x`` and the saved statistics instead of being read from the relu's
    output, so that output need not stay alive until this kernel runs. Channel ``c`` of ``dout``
    and ``x`` is read completely before channel ``c`` of ``dx`` is written (``dx`` may alias
    either).
    """
    alias = _alias(dx, dout, x)
    if x.shape[2] == 1:
        relu_backward_rows(_rows(x), _rows(dout), gamma, beta, save_mean, save_invstd, _rows(dx), dgamma,
                           dbeta, fix_gamma, use_batch_stats, alias, 0, x.shape[1])
        return
    for c in range(x.shape[1]):
        _relu_backward_channel(x, dout, gamma, beta, save_mean, save_invstd, dx, dgamma, dbeta,
                               fix_gamma, use_batch_stats, alias, c)


@_jit
def batchnorm_relu_backward_parts(x, dout, gamma, beta, save_mean, save_invstd, dx, dgamma, dbeta,
                                  fix_gamma, use_batch_stats, part, parts, sync):
    """:func:`batchnorm_relu_backward` of a part of the channels."""
    alias = _alias(dx, dout, x)
    c0, c1 = part_range(part, parts, x.shape[1])
    if x.shape[2] == 1:
        relu_backward_rows(_rows(x), _rows(dout), gamma, beta, save_mean, save_invstd, _rows(dx), dgamma,
                           dbeta, fix_gamma, use_batch_stats, alias, c0, c1)
        return
    for c in range(c0, c1):
        _relu_backward_channel(x, dout, gamma, beta, save_mean, save_invstd, dx, dgamma, dbeta,
                               fix_gamma, use_batch_stats, alias, c)


# ---------------------------------------------------------------------------------------------
# LayerNorm on (M, K), normalised over the last axis


@_jit
def layernorm_forward(x, gamma, beta, out, save_mean, save_std, eps):
    """LayerNorm forward: ``out = (x - mean) / std * gamma + beta`` per row of ``x (M, K)``.

    ``std = sqrt(var + eps)`` with the biased variance; writes ``save_mean (M,)`` and
    ``save_std (M,)`` (MXNet's ``mean`` and ``std`` outputs).
    """
    k = x.shape[1]
    for i in range(x.shape[0]):
        mean = _sum_row(x[i], 0.0) / k
        std = math.sqrt(_sumsq_row(x[i], mean) / k + eps)
        inv = 0.0 if std == 0.0 else 1.0 / std
        for j in range(k):
            out[i, j] = (x[i, j] - mean) * inv * gamma[j] + beta[j]
        save_mean[i] = mean
        save_std[i] = std


@_jit
def layernorm_backward(x, dout, gamma, save_mean, save_std, dx, dgamma, dbeta):
    """LayerNorm backward on ``(M, K)``: writes ``dx``, ``dgamma (K,)`` and ``dbeta (K,)``.

    With ``xhat = (x - mean) / std`` and ``g = dout * gamma``:
    ``dx = (g - mean_K(g) - xhat * mean_K(g * xhat)) / std``, ``dgamma = sum_M(dout * xhat)``,
    ``dbeta = sum_M(dout)``.
    """
    m, k = x.shape
    dg = np.zeros(k, np.float64)
    db = np.zeros(k, np.float64)
    for i in range(m):
        mean = save_mean[i] * 1.0
        inv = 0.0 if save_std[i] == 0.0 else 1.0 / save_std[i]
        sg = 0.0
        sgx = 0.0
        for j in range(k):
            xh = (x[i, j] - mean) * inv
            g = dout[i, j] * gamma[j] * 1.0
            sg += g
            sgx += g * xh
            dg[j] += dout[i, j] * xh
            db[j] += dout[i, j]
        sg /= k
        sgx /= k
        for j in range(k):
            xh = (x[i, j] - mean) * inv
            dx[i, j] = (dout[i, j] * gamma[j] - sg - xh * sgx) * inv
    for j in range(k):
        dgamma[j] = dg[j]
        dbeta[j] = db[j]


# ---------------------------------------------------------------------------------------------
# validation (pure Python: call before the kernels)


def _need_vectors(kernel: str, length: int, what: str, **vectors: np.ndarray) -> None:
    for name, v in vectors.items():
        need_shape(kernel, name, v, (length,), f" ({what})")


def check_batchnorm(kernel: str, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                    moving_mean: np.ndarray, moving_var: np.ndarray, out: np.ndarray,
                    save_mean: np.ndarray, save_invstd: np.ndarray, training: bool = True) -> None:
    """Validate a BatchNorm forward call on an ``(N, C, S)`` view (``N * S > 0`` when training).

    >>> try:
    ...     check_batchnorm("batchnorm_forward_train", np.zeros((2, 3, 4)), *[np.zeros(2)] * 4,
    ...                     np.zeros((2, 3, 4)), np.zeros(3), np.zeros(3))
    ... except ValueError as e:
    ...     print(e)
    batchnorm_forward_train: argument 'gamma' has shape (2,), expected (3,) (one per channel of x (2,3,4))
    """
    check_arrays(kernel, x=x, gamma=gamma, beta=beta, moving_mean=moving_mean, moving_var=moving_var,
                 out=out, save_mean=save_mean, save_invstd=save_invstd)
    need_ndim(kernel, "x", x, 3)
    need_shape(kernel, "out", out, x.shape)
    what = f"one per channel of x {_shape(x)}"
    _need_vectors(kernel, x.shape[1], what, gamma=gamma, beta=beta, moving_mean=moving_mean,
                  moving_var=moving_var, save_mean=save_mean, save_invstd=save_invstd)
    if training and x.shape[1] > 0 and x.shape[0] * x.shape[2] == 0:
        raise KernelArgError(f"{kernel}: batch statistics need at least one value per channel, "
                             f"got x of shape {_shape(x)}")


def check_batchnorm_backward(kernel: str, x: np.ndarray, dout: np.ndarray, gamma: np.ndarray,
                             save_mean: np.ndarray, save_invstd: np.ndarray, dx: np.ndarray,
                             dgamma: np.ndarray, dbeta: np.ndarray) -> None:
    """Validate a :func:`batchnorm_backward` call on an ``(N, C, S)`` view."""
    check_arrays(kernel, x=x, dout=dout, gamma=gamma, save_mean=save_mean, save_invstd=save_invstd,
                 dx=dx, dgamma=dgamma, dbeta=dbeta)
    need_ndim(kernel, "x", x, 3)
    need_shape(kernel, "dout", dout, x.shape)
    need_shape(kernel, "dx", dx, x.shape)
    _need_vectors(kernel, x.shape[1], f"one per channel of x {_shape(x)}", gamma=gamma,
                  save_mean=save_mean, save_invstd=save_invstd, dgamma=dgamma, dbeta=dbeta)


def check_layernorm(kernel: str, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, out: np.ndarray,
                    save_mean: np.ndarray, save_std: np.ndarray) -> None:
    """Validate a :func:`layernorm_forward` call on an ``(M, K)`` view with ``K > 0``."""
    check_arrays(kernel, x=x, gamma=gamma, beta=beta, out=out, save_mean=save_mean, save_std=save_std)
    need_ndim(kernel, "x", x, 2)
    if x.shape[1] == 0:
        raise KernelArgError(f"{kernel}: cannot normalise over an empty axis, x has shape {_shape(x)}")
    need_shape(kernel, "out", out, x.shape)
    _need_vectors(kernel, x.shape[1], f"one per column of x {_shape(x)}", gamma=gamma, beta=beta)
    _need_vectors(kernel, x.shape[0], f"one per row of x {_shape(x)}", save_mean=save_mean, save_std=save_std)


def check_layernorm_backward(kernel: str, x: np.ndarray, dout: np.ndarray, gamma: np.ndarray,
                             save_mean: np.ndarray, save_std: np.ndarray, dx: np.ndarray,
                             dgamma: np.ndarray, dbeta: np.ndarray) -> None:
    """Validate a :func:`layernorm_backward` call on an ``(M, K)`` view with ``K > 0``."""
    check_arrays(kernel, x=x, dout=dout, gamma=gamma, save_mean=save_mean, save_std=save_std, dx=dx,
                 dgamma=dgamma, dbeta=dbeta)
    need_ndim(kernel, "x", x, 2)
    need_shape(kernel, "dout", dout, x.shape)
    need_shape(kernel, "dx", dx, x.shape)
    _need_vectors(kernel, x.shape[1], f"one per column of x {_shape(x)}", gamma=gamma, dgamma=dgamma,
                  dbeta=dbeta)
    _need_vectors(kernel, x.shape[0], f"one per row of x {_shape(x)}", save_mean=save_mean, save_std=save_std)


def _shape(a: np.ndarray) -> str:
    return shape_str(a.shape)
