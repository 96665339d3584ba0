"""Fused optimizer updates: one pass over the weight, in place, no temporaries (MXNet 1.x formulas).

``grad`` is rescaled (``rescale_grad``), clipped to ``[-clip, clip]`` when ``clip >= 0``, and weight
decay adds ``wd * weight``. All arrays are flat (``.reshape(-1)`` views) of one float dtype.
"""
from __future__ import annotations

import numba

__all__ = ["sgd_update", "sgd_mom_update", "nag_mom_update", "adam_update", "rmsprop_update",
           "adagrad_update", "adadelta_update"]

_jit = numba.njit(cache=True, nogil=True, fastmath=False)


@_jit
def _g(grad, i, rescale, clip):
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    return g


@_jit
def sgd_update(weight, grad, lr, wd, rescale, clip):
    """``w -= lr * (g + wd * w)``."""
    if clip < 0.0:   # branch-free loop: vectorizes
        for i in range(weight.size):
            weight[i] -= lr * (grad[i] * rescale + wd * weight[i])
        return
    for i in range(weight.size):
        weight[i] -= lr * (_g(grad, i, rescale, clip) + wd * weight[i])


@_jit
def sgd_mom_update(weight, grad, mom, lr, momentum, wd, rescale, clip):
    """``mom = momentum * mom - lr * (g + wd * w); w += mom``."""
    if clip < 0.0:   # branch-free loop: vectorizes
        for i in range(weight.size):
            m = momentum * mom[i] - lr * (grad[i] * rescale + wd * weight[i])
            mom[i] = m
            weight[i] += m
        return
    for i in range(weight.size):
        m = momentum * mom[i] - lr * (_g(grad, i, rescale, clip) + wd * weight[i])
        mom[i] = m
        weight[i] += m


@_jit
def nag_mom_update(weight, grad, mom, lr, momentum, wd, rescale, clip):
    """Nesterov: ``g' = g + wd*w; mom = momentum*mom + g'; w -= lr * (g' + momentum*mom)``."""
    for i in range(weight.size):
        g = _g(grad, i, rescale, clip) + wd * weight[i]
        m = momentum * mom[i] + g
        mom[i] = m
        weight[i] -= lr * (g + momentum * m)


@_jit
def adam_update(weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip):
    """``m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; w -= lr * m / (sqrt(v) + eps)`` with
    ``g = rescale*grad + wd*w`` (clipped before wd, as MXNet does); lr already bias-corrected."""
    for i in range(weight.size):
        g = _g(grad, i, rescale, clip) + wd * weight[i]
        m = beta1 * mean[i] + (1.0 - beta1) * g
        v = beta2 * var[i] + (1.0 - beta2) * g * g
        mean[i] = m
        var[i] = v
        weight[i] -= lr * m / (v ** 0.5 + eps)


@_jit
def rmsprop_update(weight, grad, n, lr, gamma1, eps, wd, rescale, clip, clip_weights):
    """Tieleman & Hinton: ``n = (1-g1)*g^2 + g1*n; w -= lr * g / sqrt(n + eps)``."""
    for i in range(weight.size):
        g = _g(grad, i, rescale, clip) + wd * weight[i]
        nn = (1.0 - gamma1) * g * g + gamma1 * n[i]
        n[i] = nn
        w = weight[i] - lr * g / (nn + eps) ** 0.5
        if clip_weights >= 0.0:
            w = min(max(w, -clip_weights), clip_weights)
        weight[i] = w


@_jit
def adagrad_update(weight, grad, history, lr, eps, wd, rescale, clip):
    """``h += g^2; w -= lr * (g / sqrt(h + eps) + wd * w)``."""
    for i in range(weight.size):
        g = _g(grad, i, rescale, clip)
        h = history[i] + g * g
        history[i] = h
        weight[i] -= lr * (g / (h + eps) ** 0.5 + wd * weight[i])


@_jit
def adadelta_update(weight, grad, acc_g, acc_delta, rho, eps, wd, rescale, clip):
    """Zeiler: running averages of g^2 and of delta^2; ``w -= delta + wd * w``."""
    for i in range(weight.size):
        g = _g(grad, i, rescale, clip)
        ag = rho * acc_g[i] + (1.0 - rho) * g * g
        acc_g[i] = ag
        d = ((acc_delta[i] + eps) ** 0.5 / (ag + eps) ** 0.5) * g
        acc_delta[i] = rho * acc_delta[i] + (1.0 - rho) * d * d
        weight[i] -= d + wd * weight[i]
