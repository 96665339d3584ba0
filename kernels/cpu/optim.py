"""Fused optimizer updates on the CPU: one pass over the weight, in place, no temporaries.

Each update runs its per-element body from :mod:`symjit.kernels.optim_steps` (MXNet 1.x's
formulas, shared with the GPU's :mod:`symjit.kernels.cuda.optim`) in one loop. All arrays are
flat (``.reshape(-1)`` views) of one float dtype.

>>> import numpy as np
>>> w = np.ones(3, np.float32)
>>> sgd_update(w, np.ones(3, np.float32), 0.5, 0.0, 1.0, -1.0)
>>> w.tolist()
[0.5, 0.5, 0.5]
"""

from __future__ import annotations

import numba
from numba.core import types as _types
from numba.extending import intrinsic as _intrinsic
from numba.np.arrayobj import make_array as _make_array
from numba.np.arrayobj import populate_array as _populate_array

from .. import optim_steps as _s
from ..views import make_view
from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)

__all__ = [
    "sgd_update",
    "sgd_mom_update",
    "nag_mom_update",
    "adagrad_update",
    "adadelta_update",
    "adam_wdclip_update",
    "rmsprop_wdclip_update",
    "rmspropalex_update",
    "multi_sgd_update",
    "multi_sgd_mom_update",
    "multi_nag_mom_update",
    "multi_adagrad_update",
    "multi_adadelta_update",
    "multi_adam_wdclip_update",
    "multi_rmsprop_wdclip_update",
    "multi_rmspropalex_update",
    "signsgd_update",
    "signum_update",
    "ftml_update",
    "ftrl_update",
    "adamax_update",
    "nadam_update",
    "dcasgd_update",
    "dcasgd_mom_update",
    "multi_signsgd_update",
    "multi_signum_update",
    "multi_ftml_update",
    "multi_ftrl_update",
    "multi_adamax_update",
    "multi_nadam_update",
    "multi_dcasgd_update",
    "multi_dcasgd_mom_update",
    "sgld_update",
    "lamb_update",
    "lars_update",
    "lars_mom_update",
    "lbsgd_update",
    "lbsgd_mom_update",
    "multi_sgld_update",
    "multi_lamb_update",
    "multi_lars_update",
    "multi_lars_mom_update",
    "multi_lbsgd_update",
    "multi_lbsgd_mom_update",
    "view",
]

_jit = numba.njit(cache=True, nogil=True, fastmath=False)
_jit_nan = numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")   # x / 0: inf or nan
_body = numba.njit(inline="always")
view = make_view(_intrinsic, _types, _make_array, _populate_array)


_sgd_step = _body(_s.sgd_step)


@_jit
def sgd_update(weight, grad, lr, wd, rescale, clip):
    """``w -= lr * (g + wd * w)``."""
    for i in range(weight.size):
        _sgd_step(i, weight, grad, lr, wd, rescale, clip)


_sgd_mom_step = _body(_s.sgd_mom_step)


@_jit
def sgd_mom_update(weight, grad, mom, lr, momentum, wd, rescale, clip):
    """``mom = momentum * mom - lr * (g + wd * w); w += mom``."""
    for i in range(weight.size):
        _sgd_mom_step(i, weight, grad, mom, lr, momentum, wd, rescale, clip)


_nag_mom_step = _body(_s.nag_mom_step)


@_jit
def nag_mom_update(weight, grad, mom, lr, momentum, wd, rescale, clip):
    """Nesterov: ``g' = g + wd*w; mom = momentum*mom + g'; w -= lr * (g' + momentum*mom)``."""
    for i in range(weight.size):
        _nag_mom_step(i, weight, grad, mom, lr, momentum, wd, rescale, clip)


_adagrad_step = _body(_s.adagrad_step)


@_jit
def adagrad_update(weight, grad, history, lr, eps, wd, rescale, clip):
    """``h += g^2; w -= lr * (g / sqrt(h + eps) + wd * w)``."""
    for i in range(weight.size):
        _adagrad_step(i, weight, grad, history, lr, eps, wd, rescale, clip)


_adadelta_step = _body(_s.adadelta_step)


@_jit
def adadelta_update(weight, grad, acc_g, acc_delta, rho, eps, wd, rescale, clip):
    """Zeiler: running averages of g^2 and of delta^2; ``w -= delta + wd * w``."""
    for i in range(weight.size):
        _adadelta_step(i, weight, grad, acc_g, acc_delta, rho, eps, wd, rescale, clip)


_adam_wdclip_step = _body(_s.adam_wdclip_step)


@_jit
def adam_wdclip_update(weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip):
    """Adam with ``g = clip(rescale*grad + wd*w)``; ``lr`` already bias-corrected."""
    for i in range(weight.size):
        _adam_wdclip_step(i, weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip)


_rmsprop_wdclip_step = _body(_s.rmsprop_wdclip_step)


@_jit
def rmsprop_wdclip_update(weight, grad, n, lr, gamma1, eps, wd, rescale, clip, clip_weights):
    """RMSProp with ``g = clip(rescale*grad + wd*w)``; ``n = (1-g1)*g^2 + g1*n; w -= lr*g/sqrt(n+eps)``."""
    for i in range(weight.size):
        _rmsprop_wdclip_step(i, weight, grad, n, lr, gamma1, eps, wd, rescale, clip, clip_weights)


_rmspropalex_step = _body(_s.rmspropalex_step)


@_jit
def rmspropalex_update(
    weight, grad, n, g_avg, delta, lr, gamma1, gamma2, eps, wd, rescale, clip, clip_weights
):
    """Centered RMSProp (Graves 2013): ``n = (1-g1)*g^2 + g1*n; a = (1-g1)*g + g1*a;"""
    for i in range(weight.size):
        _rmspropalex_step(
            i, weight, grad, n, g_avg, delta, lr, gamma1, gamma2, eps, wd, rescale, clip, clip_weights
        )


# -- every parameter of a step in one call ------------------------------------------------------
# ``addrs[k]``: the data addresses of parameter k's weight, grad and states (in the single
# update's order), ``sizes[k]`` its element count, ``scalars[k]`` its scalars (in the single
# update's order, float64), ``like``: an array of the parameters' one dtype. The caller validates
# the table (symjit.ndarray.optim_ops.MultiUpdate) and keeps the arrays alive.


@_jit
def multi_sgd_update(addrs, sizes, scalars, like):
    """:func:`sgd_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        lr, wd, rescale, clip = p[0], p[1], p[2], p[3]
        for i in range(n):
            _sgd_step(i, w, g, lr, wd, rescale, clip)


@_jit
def multi_sgd_mom_update(addrs, sizes, scalars, like):
    """:func:`sgd_mom_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g, m = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        lr, momentum, wd, rescale, clip = p[0], p[1], p[2], p[3], p[4]
        for i in range(n):
            _sgd_mom_step(i, w, g, m, lr, momentum, wd, rescale, clip)


@_jit
def multi_nag_mom_update(addrs, sizes, scalars, like):
    """:func:`nag_mom_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g, m = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        lr, momentum, wd, rescale, clip = p[0], p[1], p[2], p[3], p[4]
        for i in range(n):
            _nag_mom_step(i, w, g, m, lr, momentum, wd, rescale, clip)


@_jit
def multi_adagrad_update(addrs, sizes, scalars, like):
    """:func:`adagrad_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g, h = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        lr, eps, wd, rescale, clip = p[0], p[1], p[2], p[3], p[4]
        for i in range(n):
            _adagrad_step(i, w, g, h, lr, eps, wd, rescale, clip)


@_jit
def multi_adadelta_update(addrs, sizes, scalars, like):
    """:func:`adadelta_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        acc_g, acc_d = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        rho, eps, wd, rescale, clip = p[0], p[1], p[2], p[3], p[4]
        for i in range(n):
            _adadelta_step(i, w, g, acc_g, acc_d, rho, eps, wd, rescale, clip)


@_jit
def multi_adam_wdclip_update(addrs, sizes, scalars, like):
    """:func:`adam_wdclip_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        mean, var = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        lr, beta1, beta2, eps, wd, rescale, clip = p[0], p[1], p[2], p[3], p[4], p[5], p[6]
        for i in range(n):
            _adam_wdclip_step(i, w, g, mean, var, lr, beta1, beta2, eps, wd, rescale, clip)


@_jit
def multi_rmsprop_wdclip_update(addrs, sizes, scalars, like):
    """:func:`rmsprop_wdclip_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g, s = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        lr, gamma1, eps, wd, rescale, clip, cw = p[0], p[1], p[2], p[3], p[4], p[5], p[6]
        for i in range(n):
            _rmsprop_wdclip_step(i, w, g, s, lr, gamma1, eps, wd, rescale, clip, cw)


@_jit
def multi_rmspropalex_update(addrs, sizes, scalars, like):
    """:func:`rmspropalex_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g, s = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        avg, delta = view(addrs[k, 3], n, like), view(addrs[k, 4], n, like)
        lr, gamma1, gamma2, eps, wd = p[0], p[1], p[2], p[3], p[4]
        rescale, clip, cw = p[5], p[6], p[7]
        for i in range(n):
            _rmspropalex_step(i, w, g, s, avg, delta, lr, gamma1, gamma2, eps, wd, rescale, clip, cw)


# -- the rules mx.optimizer's Signum, FTML, Ftrl, Adamax, Nadam and DCASGD apply ------------------
# (the multi forms load a row's scalars into locals before its loop: read from the table inside
# the loop, LLVM reloads them per element, as a store through a view might change them)

_signsgd_step = _body(_s.signsgd_step)
_signum_step = _body(_s.signum_step)
_ftml_step = _body(_s.ftml_step)
_ftrl_step = _body(_s.ftrl_step)
_adamax_step = _body(_s.adamax_step)
_nadam_step = _body(_s.nadam_step)
_dcasgd_step = _body(_s.dcasgd_step)
_dcasgd_mom_step = _body(_s.dcasgd_mom_step)


@_jit
def signsgd_update(weight, grad, lr, wd, rescale, clip):
    """``w = (1 - lr wd) w - lr sign(g)``."""
    for i in range(weight.size):
        _signsgd_step(i, weight, grad, lr, wd, rescale, clip)


@_jit
def signum_update(weight, grad, mom, lr, momentum, wd, rescale, clip, wd_lh):
    """``mom = momentum mom - (1-momentum) (wd w + g); w = (1 - lr wd_lh) w + lr sign(mom)``."""
    for i in range(weight.size):
        _signum_step(i, weight, grad, mom, lr, momentum, wd, rescale, clip, wd_lh)


@_jit
def ftml_update(weight, grad, d, v, z, lr, beta1, beta2, eps, t, wd, rescale, clip):
    """FTML, states ``(d, v, z)``."""
    for i in range(weight.size):
        _ftml_step(i, weight, grad, d, v, z, lr, beta1, beta2, eps, t, wd, rescale, clip)


@_jit
def ftrl_update(weight, grad, z, n, lr, lamda1, beta, wd, rescale, clip):
    """FTRL-Proximal, states ``(z, n)``."""
    for i in range(weight.size):
        _ftrl_step(i, weight, grad, z, n, lr, lamda1, beta, wd, rescale, clip)


@_jit_nan
def adamax_update(weight, grad, mean, u, lr, beta1, beta2, wd, rescale, clip):
    """AdaMax, states ``(m, u)``; ``lr`` already bias-corrected."""
    for i in range(weight.size):
        _adamax_step(i, weight, grad, mean, u, lr, beta1, beta2, wd, rescale, clip)


@_jit
def nadam_update(weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip, coef_g, coef_m, bias2):
    """Nadam, states ``(m, v)``; the schedule's coefficients from the host."""
    for i in range(weight.size):
        _nadam_step(i, weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip, coef_g, coef_m,
                    bias2)


@_jit
def dcasgd_update(weight, grad, prev, lr, lamda, wd, rescale, clip):
    """DCASGD without momentum, state: the previous weight."""
    for i in range(weight.size):
        _dcasgd_step(i, weight, grad, prev, lr, lamda, wd, rescale, clip)


@_jit
def dcasgd_mom_update(weight, grad, mom, prev, lr, momentum, lamda, wd, rescale, clip):
    """DCASGD with momentum, states ``(mom, previous weight)``."""
    for i in range(weight.size):
        _dcasgd_mom_step(i, weight, grad, mom, prev, lr, momentum, lamda, wd, rescale, clip)


@_jit
def multi_signsgd_update(addrs, sizes, scalars, like):
    """:func:`signsgd_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        s0, s1, s2, s3 = p[0], p[1], p[2], p[3]
        for i in range(n):
            _signsgd_step(i, w, g, s0, s1, s2, s3)


@_jit
def multi_signum_update(addrs, sizes, scalars, like):
    """:func:`signum_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g, m = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        s0, s1, s2, s3, s4, s5 = p[0], p[1], p[2], p[3], p[4], p[5]
        for i in range(n):
            _signum_step(i, w, g, m, s0, s1, s2, s3, s4, s5)


@_jit
def multi_ftml_update(addrs, sizes, scalars, like):
    """:func:`ftml_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        d, v, z = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like), view(addrs[k, 4], n, like)
        s0, s1, s2, s3, s4, s5, s6, s7 = p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]
        for i in range(n):
            _ftml_step(i, w, g, d, v, z, s0, s1, s2, s3, s4, s5, s6, s7)


@_jit
def multi_ftrl_update(addrs, sizes, scalars, like):
    """:func:`ftrl_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        z, nn = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        s0, s1, s2, s3, s4, s5 = p[0], p[1], p[2], p[3], p[4], p[5]
        for i in range(n):
            _ftrl_step(i, w, g, z, nn, s0, s1, s2, s3, s4, s5)


@_jit_nan
def multi_adamax_update(addrs, sizes, scalars, like):
    """:func:`adamax_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        m, u = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        s0, s1, s2, s3, s4, s5 = p[0], p[1], p[2], p[3], p[4], p[5]
        for i in range(n):
            _adamax_step(i, w, g, m, u, s0, s1, s2, s3, s4, s5)


@_jit
def multi_nadam_update(addrs, sizes, scalars, like):
    """:func:`nadam_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        m, v = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        s0, s1, s2, s3, s4, s5, s6, s7, s8, s9 = p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9]
        for i in range(n):
            _nadam_step(i, w, g, m, v, s0, s1, s2, s3, s4, s5, s6, s7, s8, s9)


@_jit
def multi_dcasgd_update(addrs, sizes, scalars, like):
    """:func:`dcasgd_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g, prev = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        s0, s1, s2, s3, s4 = p[0], p[1], p[2], p[3], p[4]
        for i in range(n):
            _dcasgd_step(i, w, g, prev, s0, s1, s2, s3, s4)


@_jit
def multi_dcasgd_mom_update(addrs, sizes, scalars, like):
    """:func:`dcasgd_mom_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        m, prev = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        s0, s1, s2, s3, s4, s5 = p[0], p[1], p[2], p[3], p[4], p[5]
        for i in range(n):
            _dcasgd_mom_step(i, w, g, m, prev, s0, s1, s2, s3, s4, s5)


# -- SGLD, and the rules scaled by norms over the parameter (LAMB, LARS, LBSGD) --------------------
# Two passes over a parameter: the first updates moments / the summed gradient and accumulates
# squared norms in float64, the second steps. The multi forms run both per row.

_sgld_step = _body(_s.sgld_step)
_lamb_moments_step = _body(_s.lamb_moments_step)
_lamb_direction = _body(_s.lamb_direction)
_lamb_ratio = _body(_s.lamb_ratio)
_lars_rate = _body(_s.lars_rate)
_lbsgd_mean_step = _body(_s.lbsgd_mean_step)
_lbsgd_trust = _body(_s.lbsgd_trust)


@_jit
def sgld_update(weight, grad, noise, lr, wd, rescale, clip):
    """SGLD, the noise drawn by the host (as a state array)."""
    for i in range(weight.size):
        _sgld_step(i, weight, grad, noise, lr, wd, rescale, clip)


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


@_jit
def multi_sgld_update(addrs, sizes, scalars, like):
    """:func:`sgld_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g, z = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        s0, s1, s2, s3 = p[0], p[1], p[2], p[3]
        for i in range(n):
            _sgld_step(i, w, g, z, s0, s1, s2, s3)


@_jit
def multi_lamb_update(addrs, sizes, scalars, like):
    """:func:`lamb_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        m, v, r = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like), view(addrs[k, 4], n, like)
        lamb_update(w, g, m, v, r, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10])


@_jit
def multi_lars_update(addrs, sizes, scalars, like):
    """:func:`lars_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        lars_update(w, g, p[0], p[1], p[2], p[3], p[4], p[5], p[6])


@_jit
def multi_lars_mom_update(addrs, sizes, scalars, like):
    """:func:`lars_mom_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g, m = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        lars_mom_update(w, g, m, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7])


@_jit
def multi_lbsgd_update(addrs, sizes, scalars, like):
    """:func:`lbsgd_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g, a = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        lbsgd_update(w, g, a, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7])


@_jit
def multi_lbsgd_mom_update(addrs, sizes, scalars, like):
    """:func:`lbsgd_mom_update` of every row of the tables."""
    for k in range(sizes.size):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        a, m = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        lbsgd_mom_update(w, g, a, m, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8])
