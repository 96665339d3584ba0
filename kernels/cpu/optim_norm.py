"""The optimizer updates scaled by norms over the whole parameter on the CPU (LAMB, LARS, LBSGD):
the hand-written passes that :mod:`symjit.kernels.cpu.optim` (generated from
:mod:`symjit.kernels.optim_table`) exports and runs per row of its ``multi_*`` forms.

Two passes over a parameter: the first updates moments / the summed gradient and accumulates
squared norms in float64, the second steps, with the per-element bodies and the scalar rules of
:mod:`symjit.kernels.optim_steps` (shared with the GPU's :mod:`symjit.kernels.cuda.optim_norm`).

>>> import numpy as np
>>> w, g = np.array([3.0, 4.0]), np.array([1.0, 0.0])
>>> lars_update(w, g, 0.1, 1.0, 0.0, 0.0, 1.0, -1.0, 1.0)   # rate 0.1 * ||w|| / ||g|| = 0.5
>>> w.tolist()
[2.5, 4.0]
"""

from __future__ import annotations

import numba

from .. import optim_steps as _s
from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit

__all__ = ["lamb_update", "lars_update", "lars_mom_update", "lbsgd_update", "lbsgd_mom_update"]

_jit = njit(cache=True, nogil=True, fastmath=False, error_model="numpy")   # as optim.py: x / 0 is inf or nan
_body = numba.njit(inline="always")

_sgd_step = _body(_s.sgd_step)
_sgd_mom_step = _body(_s.sgd_mom_step)
_lamb_moments_step = _body(_s.lamb_moments_step)
_lamb_direction = _body(_s.lamb_direction)
_lamb_ratio = _body(_s.lamb_ratio)
_lars_rate = _body(_s.lars_rate)
_lbsgd_mean_step = _body(_s.lbsgd_mean_step)
_lbsgd_trust = _body(_s.lbsgd_trust)


@_jit
def lamb_update(weight, grad, mean, var, direction, lr, beta1, beta2, eps, wd, rescale, clip, inv1, inv2,
                lower, upper):
    """LAMB, states ``(mean, var)`` and a scratch array for Adam's direction ``r``; then ``w -= lr
    (||w|| / ||r||) r``."""
    w_sq = 0.0
    r_sq = 0.0
    for i in range(weight.size):
        _lamb_moments_step(i, grad, mean, var, beta1, beta2, rescale, clip)
        r = _lamb_direction(i, weight, mean, var, eps, wd, inv1, inv2)
        direction[i] = r
        w = float(weight[i])
        w_sq += w * w
        r_sq += r * r
    rate = lr * _lamb_ratio(w_sq, r_sq, lower, upper)
    for i in range(weight.size):
        weight[i] -= rate * direction[i]


@_jit
def _lars_sums(weight, grad):
    w_sq = 0.0
    g_sq = 0.0
    for i in range(weight.size):
        w = float(weight[i])
        g = float(grad[i])
        w_sq += w * w
        g_sq += g * g
    return w_sq, g_sq


@_jit
def lars_update(weight, grad, lr, eta, eps, wd, rescale, clip, use_trust):
    """LARS without momentum: SGD at the layer's rate (:func:`optim_steps.lars_rate`)."""
    w_sq, g_sq = _lars_sums(weight, grad)
    rate = _lars_rate(lr, eta, eps, wd, w_sq, g_sq, rescale, use_trust)
    for i in range(weight.size):
        _sgd_step(i, weight, grad, rate, wd, rescale, clip)


@_jit
def lars_mom_update(weight, grad, mom, lr, momentum, eta, eps, wd, rescale, clip, use_trust):
    """LARS with momentum: SGD with momentum at the layer's rate."""
    w_sq, g_sq = _lars_sums(weight, grad)
    rate = _lars_rate(lr, eta, eps, wd, w_sq, g_sq, rescale, use_trust)
    for i in range(weight.size):
        _sgd_mom_step(i, weight, grad, mom, rate, momentum, wd, rescale, clip)


@_jit
def _lbsgd_rate(weight, grad, acc, lr, wd, first, step, scale, lars):
    """The first pass of LBSGD (the summed gradient, its mean on a step); the step's rate."""
    w_sq = 0.0
    g_sq = 0.0
    for i in range(weight.size):
        _lbsgd_mean_step(i, grad, acc, first, step, scale)
        if lars != 0.0 and step != 0.0:
            w = float(weight[i])
            g = float(acc[i])
            w_sq += w * w
            g_sq += g * g
    return lr * _lbsgd_trust(w_sq, g_sq, wd) if lars != 0.0 else lr


@_jit
def lbsgd_update(weight, grad, acc, lr, wd, rescale, clip, first, step, scale, lars):
    """LBSGD without momentum, state: the summed gradient. ``lr`` includes the warmup factor
    (with ``lars`` non-zero the trust ratio is computed here); no step unless ``step``."""
    rate = _lbsgd_rate(weight, grad, acc, lr, wd, first, step, scale, lars)
    if step != 0.0:
        for i in range(weight.size):
            _sgd_step(i, weight, acc, rate, wd, rescale, clip)


@_jit
def lbsgd_mom_update(weight, grad, acc, mom, lr, momentum, wd, rescale, clip, first, step, scale, lars):
    """LBSGD with momentum, states ``(summed gradient, momentum)``."""
    rate = _lbsgd_rate(weight, grad, acc, lr, wd, first, step, scale, lars)
    if step != 0.0:
        for i in range(weight.size):
            _sgd_mom_step(i, weight, acc, mom, rate, momentum, wd, rescale, clip)
