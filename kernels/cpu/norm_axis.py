"""BatchNorm's kernels on arrays of any rank, around a channel axis given at run time.

Each function here views its data arrays as :mod:`.norm`'s ``(N, C, S)`` (``C`` the ``axis``
dimension, ``N`` the product of the dimensions before it, ``S`` of those after it) and runs that
kernel; the flags are integers (0 or 1). So a program calls these functions themselves
(``KernelWriter.direct``): numba compiles one per rank and dtype, kept in its cache next to this
file, instead of a kernel per rank, axis and flags into which it would link the BatchNorm kernel
and optimise it again (1-2 s each: MXNet's own BatchNorm test binds some 200 such variants).

>>> import numpy as np
>>> x = np.arange(12.0).reshape(2, 3, 2)          # channels on axis 2
>>> one, zero = np.ones(2), np.zeros(2)
>>> out, mean, invstd = np.empty_like(x), np.empty(2), np.empty(2)
>>> batchnorm_forward_train(x, one, zero, np.zeros(2), np.ones(2), out, mean, invstd,
...                         0.0, 0.9, 2, 0, 1)
>>> mean                                          # over the six values of each channel
array([5., 6.])
"""
from __future__ import annotations

from . import _cache_stamp, norm  # noqa: F401  (_cache_stamp: numba's cache keyed by the package, first)
from ._jit import njit

__all__ = [
    "batchnorm_forward_train", "batchnorm_forward_train_parts", "batchnorm_forward_inference",
    "batchnorm_forward_inference_parts", "batchnorm_backward", "batchnorm_backward_parts",
    "batchnorm_relu_backward", "batchnorm_relu_backward_parts", "view3",
]

_jit = njit(cache=True, nogil=True)


@njit(cache=True, nogil=True, inline="always")
def view3(x, axis):
    """``x`` (C-contiguous) as ``(N, C, S)`` around ``axis``."""
    n = 1
    for d in range(axis):
        n *= x.shape[d]
    s = 1
    for d in range(axis + 1, x.ndim):
        s *= x.shape[d]
    return x.reshape(n, x.shape[axis], s)


@_jit
def batchnorm_forward_train(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd,
                            eps, momentum, axis, fix_gamma, update_moving):
    """:func:`.norm.batchnorm_forward_train` around ``axis``."""
    norm.batchnorm_forward_train(view3(x, axis), gamma, beta, moving_mean, moving_var, view3(out, axis),
                                 save_mean, save_invstd, eps, momentum, fix_gamma != 0, update_moving != 0)


@_jit
def batchnorm_forward_train_parts(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd,
                                  eps, momentum, axis, fix_gamma, update_moving, part, parts, sync):
    """:func:`.norm.batchnorm_forward_train_parts` around ``axis``."""
    norm.batchnorm_forward_train_parts(view3(x, axis), gamma, beta, moving_mean, moving_var,
                                       view3(out, axis), save_mean, save_invstd, eps, momentum,
                                       fix_gamma != 0, update_moving != 0, part, parts, sync)


@_jit
def batchnorm_forward_inference(x, gamma, beta, moving_mean, moving_var, out, save_mean, save_invstd,
                                eps, axis, fix_gamma):
    """:func:`.norm.batchnorm_forward_inference` around ``axis``."""
    norm.batchnorm_forward_inference(view3(x, axis), gamma, beta, moving_mean, moving_var,
                                     view3(out, axis), save_mean, save_invstd, eps, fix_gamma != 0)


@_jit
def batchnorm_forward_inference_parts(x, gamma, beta, moving_mean, moving_var, out, save_mean,
                                      save_invstd, eps, axis, fix_gamma, part, parts, sync):
    """:func:`.norm.batchnorm_forward_inference_parts` around ``axis``."""
    norm.batchnorm_forward_inference_parts(view3(x, axis), gamma, beta, moving_mean, moving_var,
                                           view3(out, axis), save_mean, save_invstd, eps,
                                           fix_gamma != 0, part, parts, sync)


@_jit
def batchnorm_backward(x, dout, gamma, save_mean, save_invstd, dx, dgamma, dbeta, axis, fix_gamma,
                       use_batch_stats):
    """:func:`.norm.batchnorm_backward` around ``axis``."""
    norm.batchnorm_backward(view3(x, axis), view3(dout, axis), gamma, save_mean, save_invstd,
                            view3(dx, axis), dgamma, dbeta, fix_gamma != 0, use_batch_stats != 0)


@_jit
def batchnorm_backward_parts(x, dout, gamma, save_mean, save_invstd, dx, dgamma, dbeta, axis, fix_gamma,
                             use_batch_stats, part, parts, sync):
    """:func:`.norm.batchnorm_backward_parts` around ``axis``."""
    norm.batchnorm_backward_parts(view3(x, axis), view3(dout, axis), gamma, save_mean, save_invstd,
                                  view3(dx, axis), dgamma, dbeta, fix_gamma != 0, use_batch_stats != 0,
                                  part, parts, sync)


@_jit
def batchnorm_relu_backward(x, dout, gamma, beta, save_mean, save_invstd, dx, dgamma, dbeta, axis,
                            fix_gamma, use_batch_stats):
    """:func:`.norm.batchnorm_relu_backward` around ``axis``."""
    norm.batchnorm_relu_backward(view3(x, axis), view3(dout, axis), gamma, beta, save_mean, save_invstd,
                                 view3(dx, axis), dgamma, dbeta, fix_gamma != 0, use_batch_stats != 0)


@_jit
def batchnorm_relu_backward_parts(x, dout, gamma, beta, save_mean, save_invstd, dx, dgamma, dbeta, axis,
                                  fix_gamma, use_batch_stats, part, parts, sync):
    """:func:`.norm.batchnorm_relu_backward_parts` around ``axis``."""
    norm.batchnorm_relu_backward_parts(view3(x, axis), view3(dout, axis), gamma, beta, save_mean,
                                       save_invstd, view3(dx, axis), dgamma, dbeta, fix_gamma != 0,
                                       use_batch_stats != 0, part, parts, sync)
