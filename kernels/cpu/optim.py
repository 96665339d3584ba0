"""Fused optimizer updates: one pass over the weight, in place, no temporaries (MXNet 1.x formulas).

``grad`` is rescaled (``rescale_grad``), clipped to ``[-clip, clip]`` when ``clip >= 0``, and weight
decay adds ``wd * weight``. All arrays are flat (``.reshape(-1)`` views) of one float dtype.
"""
from __future__ import annotations

import numba

__all__ = ["sgd_update", "sgd_mom_update", "nag_mom_update", "adagrad_update", "adadelta_update"]

_jit = numba.njit(cache=True, nogil=True, fastmath=False)


@_jit
def _clip(g, clip):
    """``g`` clipped to ``[-clip, clip]``; no clipping when ``clip < 0``."""
    if clip >= 0.0:
        if g > clip:
            return clip
        if g < -clip:
            return -clip
    return g


@_jit
def _g(grad, i, rescale, clip):
    return _clip(grad[i] * rescale, clip)


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


# -- MXNet's Adam/RMSProp order: weight decay is added first, then the sum is clipped ------------

__all__ += ["adam_wdclip_update", "rmsprop_wdclip_update", "rmspropalex_update"]


@_jit
def _gwd(grad, weight, i, rescale, wd, clip):
    """``clip(rescale * grad + wd * w)`` (MXNet 1.x's Adam and RMSProp gradient)."""
    return _clip(grad[i] * rescale + wd * weight[i], clip)


@_jit
def adam_wdclip_update(weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip):
    """Adam with ``g = clip(rescale*grad + wd*w)``; ``lr`` already bias-corrected."""
    for i in range(weight.size):
        g = _gwd(grad, weight, i, rescale, wd, clip)
        m = beta1 * mean[i] + (1.0 - beta1) * g
        v = beta2 * var[i] + (1.0 - beta2) * g * g
        mean[i] = m
        var[i] = v
        weight[i] -= lr * m / (v ** 0.5 + eps)


@_jit
def rmsprop_wdclip_update(weight, grad, n, lr, gamma1, eps, wd, rescale, clip, clip_weights):
    """RMSProp with ``g = clip(rescale*grad + wd*w)``; ``n = (1-g1)*g^2 + g1*n; w -= lr*g/sqrt(n+eps)``."""
    for i in range(weight.size):
        g = _gwd(grad, weight, i, rescale, wd, clip)
        nn = (1.0 - gamma1) * g * g + gamma1 * n[i]
        n[i] = nn
        w = weight[i] - lr * g / (nn + eps) ** 0.5
        if clip_weights >= 0.0:
            w = min(max(w, -clip_weights), clip_weights)
        weight[i] = w


@_jit
def rmspropalex_update(weight, grad, n, g_avg, delta, lr, gamma1, gamma2, eps, wd, rescale, clip,
                       clip_weights):
    """Centered RMSProp (Graves 2013): ``n = (1-g1)*g^2 + g1*n; a = (1-g1)*g + g1*a;
    delta = g2*delta - lr*g/sqrt(n - a^2 + eps); w += delta`` with ``g = clip(rescale*grad + wd*w)``."""
    for i in range(weight.size):
        g = _gwd(grad, weight, i, rescale, wd, clip)
        nn = (1.0 - gamma1) * g * g + gamma1 * n[i]
        a = (1.0 - gamma1) * g + gamma1 * g_avg[i]
        d = gamma2 * delta[i] - lr * g / (nn - a * a + eps) ** 0.5
        n[i] = nn
        g_avg[i] = a
        delta[i] = d
        w = weight[i] + d
        if clip_weights >= 0.0:
            w = min(max(w, -clip_weights), clip_weights)
        weight[i] = w
