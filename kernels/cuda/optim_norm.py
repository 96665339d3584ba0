"""Fused optimizer updates on a GPU for SGLD and the rules that scale a parameter's step by norms
over the whole parameter (LAMB, LARS, LBSGD): the per-element bodies of
:mod:`symjit.kernels.optim_steps`, as in :mod:`symjit.kernels.cuda.optim` (whose address-table
``view`` the multi forms share), with the same functions and arguments as the CPU's
:mod:`symjit.kernels.cpu.optim`.

The norm rules take one block per parameter (blocks stride over the rows of a multi update): its
threads stride over the elements in a first pass, a block sum (float64, in shared memory) gives
the squared norms, and the same threads take the same elements in the second pass, so no element
is read by one thread after another wrote it.
"""

from __future__ import annotations

from numba import cuda, float64

from .. import optim_steps as _s
from . import MAX_SHARED, block_launch, launch
from .optim import multi_launch, view
from .reduce import block_sum

__all__ = [
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
]

_sgd_step = cuda.jit(device=True)(_s.sgd_step)
_sgd_mom_step = cuda.jit(device=True)(_s.sgd_mom_step)

_sgld_step = cuda.jit(device=True)(_s.sgld_step)
_lamb_moments_step = cuda.jit(device=True)(_s.lamb_moments_step)
_lamb_direction = cuda.jit(device=True)(_s.lamb_direction)
_lamb_ratio = cuda.jit(device=True)(_s.lamb_ratio)
_lars_rate = cuda.jit(device=True)(_s.lars_rate)
_lbsgd_mean_step = cuda.jit(device=True)(_s.lbsgd_mean_step)
_lbsgd_trust = cuda.jit(device=True)(_s.lbsgd_trust)


@cuda.jit
def _sgld_step_kernel(weight, grad, noise, lr, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _sgld_step(i, weight, grad, noise, lr, wd, rescale, clip)


def sgld_update(weight, grad, noise, lr, wd, rescale, clip, stream=0) -> None:
    """SGLD, the noise drawn by the host (as a state array)."""
    _sgld_step_kernel[launch(weight.size, stream)](weight, grad, noise, lr, wd, rescale, clip)


@cuda.jit
def _multi_sgld_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g, z = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        s0, s1, s2, s3 = p[0], p[1], p[2], p[3]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _sgld_step(i, w, g, z, s0, s1, s2, s3)


def multi_sgld_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`sgld_update` of every row of the tables (``like``: the largest weight)."""
    _multi_sgld_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit(device=True)
def _lamb_block(buf, weight, grad, mean, var, direction, lr, beta1, beta2, eps, wd, rescale, clip, inv1, inv2,
                lower, upper):
    w_sq = 0.0
    r_sq = 0.0
    for i in range(cuda.threadIdx.x, weight.size, cuda.blockDim.x):
        _lamb_moments_step(i, grad, mean, var, beta1, beta2, rescale, clip)
        r = _lamb_direction(i, weight, mean, var, eps, wd, inv1, inv2)
        direction[i] = r
        w = 1.0 * weight[i]
        w_sq += w * w
        r_sq += r * r
    w_sq = block_sum(buf, w_sq)
    r_sq = block_sum(buf, r_sq)
    rate = lr * _lamb_ratio(w_sq, r_sq, lower, upper)
    for i in range(cuda.threadIdx.x, weight.size, cuda.blockDim.x):
        weight[i] -= rate * direction[i]


@cuda.jit
def _lamb_step_kernel(weight, grad, mean, var, direction, lr, beta1, beta2, eps, wd, rescale, clip, inv1,
                      inv2, lower, upper):
    buf = cuda.shared.array(MAX_SHARED, float64)
    _lamb_block(buf, weight, grad, mean, var, direction, lr, beta1, beta2, eps, wd, rescale, clip, inv1, inv2,
                lower, upper)


def lamb_update(weight, grad, mean, var, direction, lr, beta1, beta2, eps, wd, rescale, clip, inv1, inv2,
                lower, upper, stream=0) -> None:
    """LAMB, states ``(mean, var)`` and a scratch array for Adam's direction ``r``; then ``w -= lr
    (||w|| / ||r||) r``."""
    _lamb_step_kernel[block_launch(1, stream)](
        weight, grad, mean, var, direction, lr, beta1, beta2, eps, wd, rescale, clip, inv1, inv2, lower,
        upper)


@cuda.jit
def _multi_lamb_kernel(addrs, sizes, scalars, like):
    buf = cuda.shared.array(MAX_SHARED, float64)
    for k in range(cuda.blockIdx.x, sizes.size, cuda.gridDim.x):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        m, v, r = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like), view(addrs[k, 4], n, like)
        _lamb_block(buf, w, g, m, v, r, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10])


def multi_lamb_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`lamb_update` of every row of the tables, a block per row."""
    _multi_lamb_kernel[block_launch(sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit(device=True)
def _lars_block_rate(buf, weight, grad, lr, eta, eps, wd, rescale, use_trust):
    w_sq = 0.0
    g_sq = 0.0
    for i in range(cuda.threadIdx.x, weight.size, cuda.blockDim.x):
        w = 1.0 * weight[i]
        g = 1.0 * grad[i]
        w_sq += w * w
        g_sq += g * g
    w_sq = block_sum(buf, w_sq)
    g_sq = block_sum(buf, g_sq)
    return _lars_rate(lr, eta, eps, wd, w_sq, g_sq, rescale, use_trust)


@cuda.jit(device=True)
def _lars_block(buf, weight, grad, lr, eta, eps, wd, rescale, clip, use_trust):
    rate = _lars_block_rate(buf, weight, grad, lr, eta, eps, wd, rescale, use_trust)
    for i in range(cuda.threadIdx.x, weight.size, cuda.blockDim.x):
        _sgd_step(i, weight, grad, rate, wd, rescale, clip)


@cuda.jit(device=True)
def _lars_mom_block(buf, weight, grad, mom, lr, momentum, eta, eps, wd, rescale, clip, use_trust):
    rate = _lars_block_rate(buf, weight, grad, lr, eta, eps, wd, rescale, use_trust)
    for i in range(cuda.threadIdx.x, weight.size, cuda.blockDim.x):
        _sgd_mom_step(i, weight, grad, mom, rate, momentum, wd, rescale, clip)


@cuda.jit
def _lars_step_kernel(weight, grad, lr, eta, eps, wd, rescale, clip, use_trust):
    buf = cuda.shared.array(MAX_SHARED, float64)
    _lars_block(buf, weight, grad, lr, eta, eps, wd, rescale, clip, use_trust)


def lars_update(weight, grad, lr, eta, eps, wd, rescale, clip, use_trust, stream=0) -> None:
    """LARS without momentum: SGD at the layer's rate (:func:`optim_steps.lars_rate`)."""
    _lars_step_kernel[block_launch(1, stream)](weight, grad, lr, eta, eps, wd, rescale, clip, use_trust)


@cuda.jit
def _lars_mom_step_kernel(weight, grad, mom, lr, momentum, eta, eps, wd, rescale, clip, use_trust):
    buf = cuda.shared.array(MAX_SHARED, float64)
    _lars_mom_block(buf, weight, grad, mom, lr, momentum, eta, eps, wd, rescale, clip, use_trust)


def lars_mom_update(weight, grad, mom, lr, momentum, eta, eps, wd, rescale, clip, use_trust,
                    stream=0) -> None:
    """LARS with momentum: SGD with momentum at the layer's rate."""
    _lars_mom_step_kernel[block_launch(1, stream)](
        weight, grad, mom, lr, momentum, eta, eps, wd, rescale, clip, use_trust)


@cuda.jit
def _multi_lars_kernel(addrs, sizes, scalars, like):
    buf = cuda.shared.array(MAX_SHARED, float64)
    for k in range(cuda.blockIdx.x, sizes.size, cuda.gridDim.x):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        _lars_block(buf, w, g, p[0], p[1], p[2], p[3], p[4], p[5], p[6])


def multi_lars_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`lars_update` of every row of the tables, a block per row."""
    _multi_lars_kernel[block_launch(sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_lars_mom_kernel(addrs, sizes, scalars, like):
    buf = cuda.shared.array(MAX_SHARED, float64)
    for k in range(cuda.blockIdx.x, sizes.size, cuda.gridDim.x):
        n, p = sizes[k], scalars[k]
        w, g, m = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        _lars_mom_block(buf, w, g, m, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7])


def multi_lars_mom_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`lars_mom_update` of every row of the tables, a block per row."""
    _multi_lars_mom_kernel[block_launch(sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit(device=True)
def _lbsgd_block_rate(buf, weight, grad, acc, lr, wd, first, step, scale, lars):
    w_sq = 0.0
    g_sq = 0.0
    for i in range(cuda.threadIdx.x, weight.size, cuda.blockDim.x):
        _lbsgd_mean_step(i, grad, acc, first, step, scale)
        if lars != 0.0 and step != 0.0:
            w = 1.0 * weight[i]
            g = 1.0 * acc[i]
            w_sq += w * w
            g_sq += g * g
    if lars == 0.0:
        return lr
    w_sq = block_sum(buf, w_sq)
    g_sq = block_sum(buf, g_sq)
    return lr * _lbsgd_trust(w_sq, g_sq, wd)


@cuda.jit(device=True)
def _lbsgd_block(buf, weight, grad, acc, lr, wd, rescale, clip, first, step, scale, lars):
    rate = _lbsgd_block_rate(buf, weight, grad, acc, lr, wd, first, step, scale, lars)
    if step != 0.0:
        for i in range(cuda.threadIdx.x, weight.size, cuda.blockDim.x):
            _sgd_step(i, weight, acc, rate, wd, rescale, clip)


@cuda.jit(device=True)
def _lbsgd_mom_block(buf, weight, grad, acc, mom, lr, momentum, wd, rescale, clip, first, step, scale, lars):
    rate = _lbsgd_block_rate(buf, weight, grad, acc, lr, wd, first, step, scale, lars)
    if step != 0.0:
        for i in range(cuda.threadIdx.x, weight.size, cuda.blockDim.x):
            _sgd_mom_step(i, weight, acc, mom, rate, momentum, wd, rescale, clip)


@cuda.jit
def _lbsgd_step_kernel(weight, grad, acc, lr, wd, rescale, clip, first, step, scale, lars):
    buf = cuda.shared.array(MAX_SHARED, float64)
    _lbsgd_block(buf, weight, grad, acc, lr, wd, rescale, clip, first, step, scale, lars)


def lbsgd_update(weight, grad, acc, lr, wd, rescale, clip, first, step, scale, lars, stream=0) -> None:
    """LBSGD without momentum, state: the summed gradient (see the CPU kernel)."""
    _lbsgd_step_kernel[block_launch(1, stream)](
        weight, grad, acc, lr, wd, rescale, clip, first, step, scale, lars)


@cuda.jit
def _lbsgd_mom_step_kernel(weight, grad, acc, mom, lr, momentum, wd, rescale, clip, first, step, scale, lars):
    buf = cuda.shared.array(MAX_SHARED, float64)
    _lbsgd_mom_block(buf, weight, grad, acc, mom, lr, momentum, wd, rescale, clip, first, step, scale, lars)


def lbsgd_mom_update(weight, grad, acc, mom, lr, momentum, wd, rescale, clip, first, step, scale, lars,
                     stream=0) -> None:
    """LBSGD with momentum, states ``(summed gradient, momentum)``."""
    _lbsgd_mom_step_kernel[block_launch(1, stream)](
        weight, grad, acc, mom, lr, momentum, wd, rescale, clip, first, step, scale, lars)


@cuda.jit
def _multi_lbsgd_kernel(addrs, sizes, scalars, like):
    buf = cuda.shared.array(MAX_SHARED, float64)
    for k in range(cuda.blockIdx.x, sizes.size, cuda.gridDim.x):
        n, p = sizes[k], scalars[k]
        w, g, a = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        _lbsgd_block(buf, w, g, a, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7])


def multi_lbsgd_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`lbsgd_update` of every row of the tables, a block per row."""
    _multi_lbsgd_kernel[block_launch(sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_lbsgd_mom_kernel(addrs, sizes, scalars, like):
    buf = cuda.shared.array(MAX_SHARED, float64)
    for k in range(cuda.blockIdx.x, sizes.size, cuda.gridDim.x):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        a, m = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        _lbsgd_mom_block(buf, w, g, a, m, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8])


def multi_lbsgd_mom_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`lbsgd_mom_update` of every row of the tables, a block per row."""
    _multi_lbsgd_mom_kernel[block_launch(sizes.size, stream)](addrs, sizes, scalars, like)
