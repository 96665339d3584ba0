"""The per-element bodies of the fused optimizer updates, written once as plain Python functions.

Each ``*_step(i, ...)`` updates element ``i`` of a flat weight (and its state arrays) in place,
with MXNet 1.x's formulas: ``grad`` is rescaled by ``rescale``, clipped to ``[-clip, clip]`` when
``clip >= 0``, and weight decay adds ``wd * weight``. The targets wrap them: the CPU's
:mod:`symjit.kernels.cpu.optim` with ``numba.njit(inline='always')`` inside one loop, the GPU's
:mod:`symjit.kernels.cuda.optim` with ``cuda.jit(device=True)`` inside a grid-stride kernel. They
call nothing but ``math.sqrt`` (which both targets compile to the hardware square root; a ``** 0.5``
is a ``pow`` call, ten times slower in Adam's update), so that both wrappers compile them
unchanged. The centered RMSProp keeps ``** 0.5``: its argument ``n - a^2 + eps`` may round below
zero, where ``math.sqrt`` would raise on the simulator instead of giving nan.

>>> import numpy as np
>>> w, g, m = np.ones(2), np.ones(2), np.zeros(2)
>>> for i in range(2):
...     sgd_mom_step(i, w, g, m, 0.5, 0.9, 0.0, 1.0, -1.0)
>>> w.tolist(), m.tolist()
([0.5, 0.5], [-0.5, -0.5])
"""
from __future__ import annotations

import math

__all__ = ["sgd_step", "sgd_mom_step", "nag_mom_step", "adagrad_step", "adadelta_step",
           "adam_wdclip_step", "rmsprop_wdclip_step", "rmspropalex_step"]


def sgd_step(i, weight, grad, lr, wd, rescale, clip):
    """``w -= lr * (g + wd * w)``."""
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    weight[i] -= lr * (g + wd * weight[i])


def sgd_mom_step(i, weight, grad, mom, lr, momentum, wd, rescale, clip):
    """``mom = momentum * mom - lr * (g + wd * w); w += mom``."""
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    m = momentum * mom[i] - lr * (g + wd * weight[i])
    mom[i] = m
    weight[i] += m


def nag_mom_step(i, weight, grad, mom, lr, momentum, wd, rescale, clip):
    """Nesterov: ``g' = g + wd*w; mom = momentum*mom + g'; w -= lr * (g' + momentum*mom)``."""
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    g = g + wd * weight[i]
    m = momentum * mom[i] + g
    mom[i] = m
    weight[i] -= lr * (g + momentum * m)


def adagrad_step(i, weight, grad, history, lr, eps, wd, rescale, clip):
    """``h += g^2; w -= lr * (g / sqrt(h + eps) + wd * w)``."""
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    h = history[i] + g * g
    history[i] = h
    weight[i] -= lr * (g / math.sqrt(h + eps) + wd * weight[i])


def adadelta_step(i, weight, grad, acc_g, acc_delta, rho, eps, wd, rescale, clip):
    """Zeiler: running averages of g^2 and of delta^2; ``w -= delta + wd * w``."""
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    ag = rho * acc_g[i] + (1.0 - rho) * g * g
    acc_g[i] = ag
    d = (math.sqrt(acc_delta[i] + eps) / math.sqrt(ag + eps)) * g
    acc_delta[i] = rho * acc_delta[i] + (1.0 - rho) * d * d
    weight[i] -= d + wd * weight[i]


# MXNet's Adam/RMSProp order: weight decay is added first, then the sum is clipped

def adam_wdclip_step(i, weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip):
    """Adam with ``g = clip(rescale*grad + wd*w)``; ``lr`` already bias-corrected."""
    g = grad[i] * rescale + wd * weight[i]
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    m = beta1 * mean[i] + (1.0 - beta1) * g
    v = beta2 * var[i] + (1.0 - beta2) * g * g
    mean[i] = m
    var[i] = v
    weight[i] -= lr * m / (math.sqrt(v) + eps)


def rmsprop_wdclip_step(i, weight, grad, n, lr, gamma1, eps, wd, rescale, clip, clip_weights):
    """RMSProp with ``g = clip(rescale*grad + wd*w)``; ``n = (1-g1)*g^2 + g1*n; w -= lr*g/sqrt(n+eps)``."""
    g = grad[i] * rescale + wd * weight[i]
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    nn = (1.0 - gamma1) * g * g + gamma1 * n[i]
    n[i] = nn
    w = weight[i] - lr * g / math.sqrt(nn + eps)
    if clip_weights >= 0.0:
        if w > clip_weights:
            w = clip_weights
        elif w < -clip_weights:
            w = -clip_weights
    weight[i] = w


def rmspropalex_step(i, weight, grad, n, g_avg, delta, lr, gamma1, gamma2, eps, wd, rescale, clip,
                     clip_weights):
    """Centered RMSProp (Graves 2013): ``n = (1-g1)*g^2 + g1*n; a = (1-g1)*g + g1*a;
    delta = g2*delta - lr*g/sqrt(n - a^2 + eps); w += delta`` with ``g = clip(rescale*grad + wd*w)``."""
    g = grad[i] * rescale + wd * weight[i]
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    nn = (1.0 - gamma1) * g * g + gamma1 * n[i]
    a = (1.0 - gamma1) * g + gamma1 * g_avg[i]
    d = gamma2 * delta[i] - lr * g / (nn - a * a + eps) ** 0.5
    n[i] = nn
    g_avg[i] = a
    delta[i] = d
    w = weight[i] + d
    if clip_weights >= 0.0:
        if w > clip_weights:
            w = clip_weights
        elif w < -clip_weights:
            w = -clip_weights
    weight[i] = w
