"""The per-element bodies of the fused optimizer updates, written once as plain Python functions.

Each ``*_step(i, ...)`` updates element ``i`` of a flat weight (and its state arrays) in place,
with MXNet 1.x's formulas: ``grad`` is rescaled by ``rescale``, clipped to ``[-clip, clip]`` when
``clip >= 0``, and weight decay adds ``wd * weight``. The targets wrap them: the CPU's
:mod:`symjit.kernels.cpu.optim` with ``numba.njit(inline='always')`` inside one loop, the GPU's
:mod:`symjit.kernels.cuda.optim` with ``cuda.jit(device=True)`` inside a grid-stride kernel (both
modules written by :mod:`symjit.kernels.optim_gen` from :mod:`symjit.kernels.optim_table`). They
call nothing but ``math.sqrt`` (which both targets compile to the hardware square root; a ``** 0.5``
is a ``pow`` call, ten times slower in Adam's update), so that both wrappers compile them
unchanged. The centered RMSProp keeps ``** 0.5``: its argument ``n - a^2 + eps`` may round below
zero, where ``math.sqrt`` would raise on the simulator instead of giving nan.

The steps of SGD, NAG, AdaGrad, AdaDelta, Adam, RMSProp, Signum/signSGD, Adamax, Nadam, DCASGD
and SGLD compute in the weight's dtype, their float scalars cast to it first (``t =
weight.dtype.type``), as MXNet 1.x's update kernels do. A float32 update is float32 arithmetic:
Adam's weight and moments and SGD's momentum weight come out bit-identical to MXNet 1.9.1's on
random inputs, and the loop runs 2-3x faster than float64 arithmetic with conversions. AdamW,
FTML, FTRL and the norm-scaled rules (LAMB, LARS, LBSGD) still compute in float64.

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
           "adam_wdclip_step", "rmsprop_wdclip_step", "rmspropalex_step", "ftml_step", "ftrl_step",
           "signsgd_step", "signum_step", "adamw_step", "lamb_phase1_step", "lamb_phase2_step",
           "multi_lars_step", "group_adagrad_row", "adamax_step", "nadam_step", "dcasgd_step",
           "dcasgd_mom_step", "sgld_step", "lamb_moments_step", "lamb_direction", "lamb_ratio",
           "lars_rate", "lbsgd_mean_step", "lbsgd_trust"]


def sgd_step(i, weight, grad, lr, wd, rescale, clip):
    """``w -= lr * (g + wd * w)``."""
    t = weight.dtype.type
    lr, wd, rescale, clip = t(lr), t(wd), t(rescale), t(clip)
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    weight[i] -= lr * (g + wd * weight[i])


def sgd_mom_step(i, weight, grad, mom, lr, momentum, wd, rescale, clip):
    """``mom = momentum * mom - lr * (g + wd * w); w += mom``."""
    t = weight.dtype.type
    lr, momentum, wd, rescale, clip = t(lr), t(momentum), t(wd), t(rescale), t(clip)
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
    """Nesterov, as MXNet 1.9.1's ``nag_mom_update`` computes it: ``g' = g + wd*w;
    mom = momentum*mom - lr*g'; w += momentum*mom - lr*g'``."""
    t = weight.dtype.type
    lr, momentum, wd, rescale, clip = t(lr), t(momentum), t(wd), t(rescale), t(clip)
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    g = g + wd * weight[i]
    m = momentum * mom[i] - lr * g
    mom[i] = m
    weight[i] += momentum * m - lr * g


def adagrad_step(i, weight, grad, history, lr, eps, wd, rescale, clip):
    """``h += g^2; w -= lr * (g / sqrt(h + eps) + wd * w)``."""
    t = weight.dtype.type
    lr, eps, wd, rescale, clip = t(lr), t(eps), t(wd), t(rescale), t(clip)
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
    t = weight.dtype.type
    rho, eps, wd, rescale, clip = t(rho), t(eps), t(wd), t(rescale), t(clip)
    one = t(1.0)
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    ag = rho * acc_g[i] + (one - rho) * g * g
    acc_g[i] = ag
    d = (math.sqrt(acc_delta[i] + eps) / math.sqrt(ag + eps)) * g
    acc_delta[i] = rho * acc_delta[i] + (one - rho) * d * d
    weight[i] -= d + wd * weight[i]


# MXNet's Adam/RMSProp order: weight decay is added first, then the sum is clipped

def adam_wdclip_step(i, weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip):
    """Adam with ``g = clip(rescale*grad + wd*w)``; ``lr`` already bias-corrected."""
    t = weight.dtype.type
    lr, beta1, beta2, eps, wd, rescale, clip = t(lr), t(beta1), t(beta2), t(eps), t(wd), t(rescale), t(clip)
    one = t(1.0)
    g = grad[i] * rescale + wd * weight[i]
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    m = beta1 * mean[i] + (one - beta1) * g
    v = beta2 * var[i] + (one - beta2) * g * g
    mean[i] = m
    var[i] = v
    weight[i] -= lr * m / (math.sqrt(v) + eps)


def rmsprop_wdclip_step(i, weight, grad, n, lr, gamma1, eps, wd, rescale, clip, clip_weights):
    """RMSProp with ``g = clip(rescale*grad + wd*w)``; ``n = (1-g1)*g^2 + g1*n; w -= lr*g/sqrt(n+eps)``."""
    t = weight.dtype.type
    lr, gamma1, eps = t(lr), t(gamma1), t(eps)
    wd, rescale, clip, clip_weights = t(wd), t(rescale), t(clip), t(clip_weights)
    one = t(1.0)
    g = grad[i] * rescale + wd * weight[i]
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    nn = (one - gamma1) * g * g + gamma1 * n[i]
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
    t = weight.dtype.type
    lr, gamma1, gamma2, eps = t(lr), t(gamma1), t(gamma2), t(eps)
    wd, rescale, clip, clip_weights = t(wd), t(rescale), t(clip), t(clip_weights)
    one = t(1.0)
    g = grad[i] * rescale + wd * weight[i]
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    nn = (one - gamma1) * g * g + gamma1 * n[i]
    a = (one - gamma1) * g + gamma1 * g_avg[i]
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


def ftml_step(i, weight, grad, d, v, z, lr, beta1, beta2, eps, t, wd, rescale, clip):
    """FTML (Zheng & Kwok) with ``g = clip(rescale*grad + wd*w)``: ``v = b2 v + (1-b2) g^2;
    d_t = (1 - b1^t) / lr * (sqrt(v / (1 - b2^t)) + eps); z = b1 z + (1-b1) g - (d_t - b1 d) w;
    d = d_t; w = -z / d_t``."""
    g = grad[i] * rescale + wd * weight[i]
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    vv = beta2 * v[i] + (1.0 - beta2) * g * g
    v[i] = vv
    d_t = (1.0 - beta1 ** t) / lr * (math.sqrt(vv / (1.0 - beta2 ** t)) + eps)
    zz = beta1 * z[i] + (1.0 - beta1) * g - (d_t - beta1 * d[i]) * weight[i]
    z[i] = zz
    d[i] = d_t
    weight[i] = -zz / d_t


def ftrl_step(i, weight, grad, z, n, lr, lamda1, beta, wd, rescale, clip):
    """FTRL-Proximal: ``z += g - (sqrt(n + g^2) - sqrt(n)) w / lr; n += g^2;
    w = (sign(z) lamda1 - z) / ((beta + sqrt(n)) / lr + wd)`` where ``|z| > lamda1``, else 0."""
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    nn = n[i] + g * g
    zz = z[i] + g - (math.sqrt(nn) - math.sqrt(n[i])) * weight[i] / lr
    z[i] = zz
    n[i] = nn
    if zz > lamda1:
        weight[i] = (lamda1 - zz) / ((beta + math.sqrt(nn)) / lr + wd)
    elif zz < -lamda1:
        weight[i] = (-lamda1 - zz) / ((beta + math.sqrt(nn)) / lr + wd)
    else:
        weight[i] = 0.0


def signsgd_step(i, weight, grad, lr, wd, rescale, clip):
    """``w = (1 - lr wd) w - lr sign(g)`` (sign of the rescaled, clipped gradient; 0 for 0)."""
    t = weight.dtype.type
    lr, wd, rescale, clip = t(lr), t(wd), t(rescale), t(clip)
    one, zero = t(1.0), t(0.0)
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    s = one if g > 0.0 else (-one if g < 0.0 else zero)
    weight[i] = (one - lr * wd) * weight[i] - lr * s


def signum_step(i, weight, grad, mom, lr, momentum, wd, rescale, clip, wd_lh):
    """Signum: ``mom = momentum mom - (1-momentum) (wd w + g); w = (1 - lr wd_lh) w + lr sign(mom)``."""
    t = weight.dtype.type
    lr, momentum, wd, rescale, clip, wd_lh = t(lr), t(momentum), t(wd), t(rescale), t(clip), t(wd_lh)
    one, zero = t(1.0), t(0.0)
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    m = momentum * mom[i] - (one - momentum) * (wd * weight[i] + g)
    mom[i] = m
    s = one if m > 0.0 else (-one if m < 0.0 else zero)
    weight[i] = (one - lr * wd_lh) * weight[i] + lr * s


def adamw_step(i, weight, grad, mean, var, rescale, lr, beta1, beta2, eps, wd, eta, clip):
    """AdamW (Loshchilov & Hutter): ``g = clip(rescale grad)``, Adam's moments, then
    ``w -= eta (lr m / (sqrt(v) + eps) + wd w)``; a ``rescale`` that is nan, inf or 0 leaves the
    weight and the moments as they are (a skipped step, as MXNet's loss-scaling uses it)."""
    if not (rescale == rescale) or rescale == 0.0 or rescale - rescale != 0.0:
        return
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    m = beta1 * mean[i] + (1.0 - beta1) * g
    v = beta2 * var[i] + (1.0 - beta2) * g * g
    mean[i] = m
    var[i] = v
    weight[i] -= eta * (lr * m / (math.sqrt(v) + eps) + wd * weight[i])


# steps that compute an output other than the weight: ``step(i, out, inputs..., scalars...)``

def lamb_phase1_step(i, out, weight, grad, mean, var, beta1, beta2, eps, t, bias_correction, wd, rescale,
                     clip):
    """LAMB's direction: Adam's moments of ``g = clip(rescale grad)`` (bias-corrected when
    ``bias_correction`` is non-zero), ``out = m / (sqrt(v) + eps) + wd w``."""
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    m = beta1 * mean[i] + (1.0 - beta1) * g
    v = beta2 * var[i] + (1.0 - beta2) * g * g
    mean[i] = m
    var[i] = v
    if bias_correction != 0.0:
        m = m / (1.0 - beta1 ** t)
        v = v / (1.0 - beta2 ** t)
    out[i] = m / (math.sqrt(v) + eps) + wd * weight[i]


def lamb_phase2_step(i, out, weight, g, r1, r2, lr, lower_bound, upper_bound):
    """LAMB's step: ``out = w - lr (r1 / r2) g`` with ``r1 = ||w||`` clamped to the bounds that are
    >= 0 and ``r2 = ||g||`` (each an array of one element); ratio 1 when either is 0."""
    a = r1[0]
    b = r2[0]
    if lower_bound >= 0.0 and a < lower_bound:
        a = lower_bound
    if upper_bound >= 0.0 and a > upper_bound:
        a = upper_bound
    ratio = a / b if a > 0.0 and b > 0.0 else 1.0
    out[i] = weight[i] - lr * ratio * g[i]


def multi_lars_step(i, out, lrs, weights_sum_sq, grads_sum_sq, wds, eta, eps, rescale):
    """LARS's learning rate of layer ``i``: ``lr eta ||w|| / (||g|| + wd ||w|| + eps)`` from the squared
    norms (``||g||`` rescaled), ``lr`` where either norm is 0."""
    w = math.sqrt(weights_sum_sq[i])
    g = math.sqrt(grads_sum_sq[i]) * rescale
    if w > 0.0 and g > 0.0:
        out[i] = lrs[i] * eta * w / (g + wds[i] * w + eps)
    else:
        out[i] = lrs[i]


def group_adagrad_row(r, cols, weight, grad, history, lr, rescale, clip, eps):
    """Group AdaGrad on row ``r`` (``cols`` elements from ``r * cols``): ``history[r] += mean(g^2)``
    over the row, then ``w -= lr g / sqrt(history[r] + eps)``, with ``g = clip(rescale grad)``."""
    acc = 0.0
    for c in range(cols):
        g = grad[r * cols + c] * rescale
        if clip >= 0.0:
            if g > clip:
                g = clip
            elif g < -clip:
                g = -clip
        acc += g * g
    h = history[r] + acc / cols
    history[r] = h
    scale = lr / math.sqrt(h + eps)
    for c in range(cols):
        g = grad[r * cols + c] * rescale
        if clip >= 0.0:
            if g > clip:
                g = clip
            elif g < -clip:
                g = -clip
        weight[r * cols + c] -= scale * g


def adamax_step(i, weight, grad, mean, u, lr, beta1, beta2, wd, rescale, clip):
    """AdaMax with ``g = clip(rescale*grad + wd*w)``: ``m = b1 m + (1-b1) g; u = max(b2 u, |g|);
    w -= lr m / u`` (``lr`` already bias-corrected: ``lr / (1 - b1^t)``)."""
    t = weight.dtype.type
    lr, beta1, beta2, wd, rescale, clip = t(lr), t(beta1), t(beta2), t(wd), t(rescale), t(clip)
    one = t(1.0)
    g = grad[i] * rescale + wd * weight[i]
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    m = beta1 * mean[i] + (one - beta1) * g
    mean[i] = m
    uu = beta2 * u[i]
    ag = g if g >= 0.0 else -g
    if ag > uu or ag != ag:   # numpy's maximum: a nan wins
        uu = ag
    u[i] = uu
    weight[i] -= lr * m / uu


def nadam_step(i, weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip, coef_g, coef_m,
               bias2):
    """Nadam with ``g = clip(rescale*grad + wd*w)``: Adam's moments, ``m_bar = coef_g g + coef_m m``,
    ``w -= lr m_bar / (sqrt(v / bias2) + eps)``; the momentum schedule's coefficients and ``bias2 =
    1 - b2^t`` come from the host (they depend on the optimizer's update count only)."""
    t = weight.dtype.type
    lr, beta1, beta2, eps, wd = t(lr), t(beta1), t(beta2), t(eps), t(wd)
    rescale, clip, coef_g, coef_m, bias2 = t(rescale), t(clip), t(coef_g), t(coef_m), t(bias2)
    one = t(1.0)
    g = grad[i] * rescale + wd * weight[i]
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    m = beta1 * mean[i] + (one - beta1) * g
    mean[i] = m
    v = beta2 * var[i] + (one - beta2) * g * g
    var[i] = v
    weight[i] -= lr * (coef_g * g + coef_m * m) / (math.sqrt(v / bias2) + eps)


def dcasgd_step(i, weight, grad, prev, lr, lamda, wd, rescale, clip):
    """DCASGD without momentum, ``g = clip(rescale*grad)``: ``w_prev = w; w -= lr (g + wd w + lamda
    g^2 (w - w_prev))`` (with ``w_prev`` the previous weight)."""
    t = weight.dtype.type
    lr, lamda, wd, rescale, clip = t(lr), t(lamda), t(wd), t(rescale), t(clip)
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    w = weight[i]
    step = -lr * (g + wd * w + lamda * g * g * (w - prev[i]))
    prev[i] = w
    weight[i] = w + step


def dcasgd_mom_step(i, weight, grad, mom, prev, lr, momentum, lamda, wd, rescale, clip):
    """DCASGD with momentum: ``mom = momentum mom - lr (g + wd w + lamda g^2 (w - w_prev));
    w_prev = w; w += mom``."""
    t = weight.dtype.type
    lr, momentum, lamda, wd, rescale, clip = t(lr), t(momentum), t(lamda), t(wd), t(rescale), t(clip)
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    w = weight[i]
    m = momentum * mom[i] - lr * (g + wd * w + lamda * g * g * (w - prev[i]))
    mom[i] = m
    prev[i] = w
    weight[i] = w + m


def sgld_step(i, weight, grad, noise, lr, wd, rescale, clip):
    """SGLD with ``g = clip(rescale*grad)``: ``w += -lr/2 (g + wd w) + noise`` (the Gaussian noise,
    standard deviation ``sqrt(lr)``, drawn by the host)."""
    t = weight.dtype.type
    lr, wd, rescale, clip = t(lr), t(wd), t(rescale), t(clip)
    half = t(0.5)
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    w = weight[i]
    weight[i] = w + (-half * lr * (g + wd * w) + noise[i])


# -- the rules that scale a parameter's step by norms over the whole parameter ---------------------
# (a first pass updates the moments or the summed gradient and accumulates squared norms in
# float64, the scalar functions below turn them into a rate, a second pass steps)

def lamb_moments_step(i, grad, mean, var, beta1, beta2, rescale, clip):
    """LAMB's (Adam's) moments of ``g = clip(rescale*grad)``, in place."""
    g = grad[i] * rescale
    if clip >= 0.0:
        if g > clip:
            g = clip
        elif g < -clip:
            g = -clip
    mean[i] = beta1 * mean[i] + (1.0 - beta1) * g
    var[i] = beta2 * var[i] + (1.0 - beta2) * g * g


def lamb_direction(i, weight, mean, var, eps, wd, inv1, inv2):
    """LAMB's direction at ``i``: ``(m inv1) / (sqrt(v inv2) + eps) + wd w`` (``inv = 1 / (1 -
    beta^t)`` with bias correction, else 1), from the stored moments."""
    return (mean[i] * inv1) / (math.sqrt(var[i] * inv2) + eps) + wd * weight[i]


def lamb_ratio(w_sq, r_sq, lower, upper):
    """LAMB's trust ratio ``||w|| / ||r||`` from the squared norms, ``||w||`` clamped to the bounds
    that are >= 0; 1 when either norm is 0."""
    a = math.sqrt(w_sq)
    b = math.sqrt(r_sq)
    if lower >= 0.0 and a < lower:
        a = lower
    if upper >= 0.0 and a > upper:
        a = upper
    return a / b if a > 0.0 and b > 0.0 else 1.0


def lars_rate(lr, eta, eps, wd, w_sq, g_sq, rescale, use_trust):
    """LARS's layer learning rate, MXNet's: ``lr eta ||w|| / (||g|| + wd ||w|| + eps)`` with
    ``||g||`` the norm of ``rescale*grad`` (not clipped); ``lr`` where either norm is 0 or where
    ``use_trust`` is 0 (biases, BatchNorm's gamma and beta)."""
    w = math.sqrt(w_sq)
    g = math.sqrt(g_sq) * rescale
    if use_trust != 0.0 and w > 0.0 and g > 0.0:
        return lr * eta * w / (g + wd * w + eps)
    return lr


def lbsgd_mean_step(i, grad, acc, first, step, scale):
    """LBSGD's summed gradient: ``acc = grad`` (``first`` non-zero: a new sum) or ``acc + grad``;
    on a ``step`` the sum is replaced by its mean (``/ scale``), which the step then applies."""
    a = grad[i] if first != 0.0 else acc[i] + grad[i]
    acc[i] = a
    if step != 0.0:
        acc[i] = acc[i] / scale


def lbsgd_trust(w_sq, g_sq, wd):
    """LBSGD's 'lars' learning-rate multiplier ``sqrt(|w|^2 / (|g|^2 + wd |w|^2))`` (with ``g`` the
    mean gradient), clipped to [0.01, 100]."""
    r = math.sqrt(w_sq / (g_sq + wd * w_sq + 1e-18))
    if r < 0.01:
        return 0.01
    if r > 100.0:
        return 100.0
    return r
