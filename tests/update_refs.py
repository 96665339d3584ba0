"""numpy references of MXNet 1.9.1's optimizer update operators, written from their documented
formulas and checked against MXNet 1.9.1's outputs (weights and mutated states) on random inputs.

Each reference takes the op's inputs as float64 numpy arrays (mutated states are changed in place,
as the operator changes them) and its params, and returns the op's outputs as a list.

>>> import numpy as np
>>> w, m = np.ones(2), np.zeros(2)
>>> sgd_mom(w, np.ones(2), m, lr=0.5, momentum=0.9)[0].tolist(), m.tolist()
([0.5, 0.5], [-0.5, -0.5])
"""
from __future__ import annotations

import numpy as np


def _clip(g, clip):
    return np.clip(g, -clip, clip) if clip >= 0 else g


def _g(grad, rescale_grad, clip_gradient):
    return _clip(grad * rescale_grad, clip_gradient)


def sgd(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True):
    return [weight - lr * (_g(grad, rescale_grad, clip_gradient) + wd * weight)]


def sgd_mom(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
            lazy_update=True):
    mom[...] = momentum * mom - lr * (_g(grad, rescale_grad, clip_gradient) + wd * weight)
    return [weight + mom]


def nag_mom(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    g = _g(grad, rescale_grad, clip_gradient) + wd * weight
    mom[...] = momentum * mom - lr * g
    return [weight + momentum * mom - lr * g]


def adam(weight, grad, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
         clip_gradient=-1.0, lazy_update=True):
    g = _clip(grad * rescale_grad + wd * weight, clip_gradient)
    mean[...] = beta1 * mean + (1 - beta1) * g
    var[...] = beta2 * var + (1 - beta2) * g * g
    return [weight - lr * mean / (np.sqrt(var) + epsilon)]


def rmsprop(weight, grad, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
            clip_weights=-1.0):
    g = _clip(grad * rescale_grad + wd * weight, clip_gradient)
    n[...] = (1 - gamma1) * g * g + gamma1 * n
    return [_clip(weight - lr * g / np.sqrt(n + epsilon), clip_weights)]


def rmspropalex(weight, grad, n, g_avg, delta, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8, wd=0.0,
                rescale_grad=1.0, clip_gradient=-1.0, clip_weights=-1.0):
    g = _clip(grad * rescale_grad + wd * weight, clip_gradient)
    n[...] = (1 - gamma1) * g * g + gamma1 * n
    g_avg[...] = (1 - gamma1) * g + gamma1 * g_avg
    delta[...] = gamma2 * delta - lr * g / np.sqrt(n - g_avg * g_avg + epsilon)
    return [_clip(weight + delta, clip_weights)]


def ftml(weight, grad, d, v, z, lr, t, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
         clip_grad=-1.0):
    g = _clip(grad * rescale_grad + wd * weight, clip_grad)
    v[...] = beta2 * v + (1 - beta2) * g * g
    d_t = (1 - beta1 ** t) / lr * (np.sqrt(v / (1 - beta2 ** t)) + epsilon)
    z[...] = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight
    d[...] = d_t
    return [-z / d_t]


def ftrl(weight, grad, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    g = _g(grad, rescale_grad, clip_gradient)
    z[...] = z + g - (np.sqrt(n + g * g) - np.sqrt(n)) * weight / lr
    n[...] = n + g * g
    return [np.where(np.abs(z) > lamda1, (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd), 0.0)]


def signsgd(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    return [(1 - lr * wd) * weight - lr * np.sign(_g(grad, rescale_grad, clip_gradient))]


def signum(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, wd_lh=0.0):
    g = _g(grad, rescale_grad, clip_gradient)
    mom[...] = momentum * mom - (1 - momentum) * (wd * weight + g)
    return [(1 - lr * wd_lh) * weight + lr * np.sign(mom)]


def mp(fn):
    """The multi-precision form of ``fn``: the update runs on ``weight32`` (changed in place) and the
    output is it in the weight's dtype."""
    def ref(weight, grad, *rest, **params):
        *states, weight32 = rest
        new = fn(weight32.copy(), grad, *states, **params)[0]
        weight32[...] = new
        return [new.astype(weight.dtype)]
    return ref


def adamw(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0,
          clip_gradient=-1.0):
    """``rescale_grad`` is an array of one element; nan, inf or 0 skips the update."""
    scale = float(np.asarray(rescale_grad).reshape(-1)[0])
    if not np.isfinite(scale) or scale == 0:
        return [weight.copy()]
    g = _clip(grad * scale, clip_gradient)
    mean[...] = beta1 * mean + (1 - beta1) * g
    var[...] = beta2 * var + (1 - beta2) * g * g
    return [weight - eta * (lr * mean / (np.sqrt(var) + epsilon) + wd * weight)]


def mp_adamw(weight, grad, mean, var, weight32, rescale_grad, **params):
    new = adamw(weight32.copy(), grad, mean, var, rescale_grad, **params)[0]
    weight32[...] = new
    return [new.astype(weight.dtype)]


def group_adagrad(weight, grad, history, lr, rescale_grad=1.0, clip_gradient=-1.0, epsilon=1e-5):
    g = _g(grad, rescale_grad, clip_gradient)
    rows = g.reshape(g.shape[0], -1)
    history[...] = history + np.mean(rows * rows, axis=1).reshape(history.shape)
    h = history.reshape(-1, *([1] * (g.ndim - 1)))
    return [weight - lr * g / np.sqrt(h + epsilon)]


def lamb_phase1(weight, grad, mean, var, t, wd, beta1=0.9, beta2=0.999, epsilon=1e-6, bias_correction=True,
                rescale_grad=1.0, clip_gradient=-1.0):
    g = _g(grad, rescale_grad, clip_gradient)
    mean[...] = beta1 * mean + (1 - beta1) * g
    var[...] = beta2 * var + (1 - beta2) * g * g
    m, v = (mean / (1 - beta1 ** t), var / (1 - beta2 ** t)) if bias_correction else (mean, var)
    return [m / (np.sqrt(v) + epsilon) + wd * weight]


def lamb_phase2(weight, g, r1, r2, lr, lower_bound=-1.0, upper_bound=-1.0):
    a, b = float(r1.reshape(-1)[0]), float(r2.reshape(-1)[0])
    if lower_bound >= 0:
        a = max(a, lower_bound)
    if upper_bound >= 0:
        a = min(a, upper_bound)
    ratio = a / b if a > 0 and b > 0 else 1.0
    return [weight - lr * ratio * g]


def mp_lamb_phase1(weight, grad, mean, var, weight32, **params):
    return lamb_phase1(weight32, grad, mean, var, **params)


def mp_lamb_phase2(weight, g, r1, r2, weight32, **params):
    new = lamb_phase2(weight32, g, r1, r2, **params)[0]
    weight32[...] = new
    return [new.astype(weight.dtype)]


def multi_lars(lrs, weights_sum_sq, grads_sum_sq, wds, eta, eps, rescale_grad=1.0):
    w = np.sqrt(weights_sum_sq)
    g = np.sqrt(grads_sum_sq) * rescale_grad
    ok = (w > 0) & (g > 0)
    return [np.where(ok, lrs * eta * w / np.where(ok, g + wds * w + eps, 1.0), lrs)]
