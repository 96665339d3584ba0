"""BatchNorm's and LayerNorm's kernels on arrays of any rank, around an axis given at run time.

Each BatchNorm function here views its data arrays as :mod:`.norm`'s ``(N, C, S)`` (``C`` the
``axis`` dimension, ``N`` the product of the dimensions before it, ``S`` of those after it) and
runs that kernel; the flags are integers (0 or 1). Each LayerNorm function runs :mod:`.norm`'s
``(M, K)`` kernel on the rows over the last axis, or (``*_moved``) on rows copied over ``axis``
into the workspace arrays the caller plans, the result copied back. So a program calls these
functions themselves (``KernelWriter.direct``): numba compiles one per rank and dtype, kept in its
cache next to this file, instead of a kernel per rank, axis and flags into which it would link the
normalisation kernel and optimise it again (1-2 s each for BatchNorm's: MXNet's own BatchNorm test
binds some 200 such variants).

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
    "batchnorm_relu_backward", "batchnorm_relu_backward_parts", "layernorm_forward",
    "layernorm_forward_moved", "layernorm_backward", "layernorm_backward_moved", "view3", "last_rows",
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


@njit(cache=True, nogil=True, inline="always")
def last_rows(x):
    """``x`` (C-contiguous) as rows over its last axis."""
    return x.reshape(-1, x.shape[x.ndim - 1])


@njit(cache=True, nogil=True)
def _swap_last(src, dst):
    """``dst[a, j, i] = src[a, i, j]``."""
    for a in range(src.shape[0]):
        for i in range(src.shape[1]):
            for j in range(src.shape[2]):
                dst[a, j, i] = src[a, i, j]


@njit(cache=True, nogil=True)
def _to_rows(x, axis, ws):
    """``x``'s values moved so ``axis`` is last, written into ``ws`` (``x``'s size): its rows."""
    x3 = view3(x, axis)
    _swap_last(x3, ws.reshape(x3.shape[0], x3.shape[2], x3.shape[1]))
    return ws.reshape(x3.shape[0] * x3.shape[2], x3.shape[1])


@njit(cache=True, nogil=True)
def _from_rows(rows, axis, dest):
    """The inverse of :func:`_to_rows`: ``rows`` written into ``dest`` around ``axis``."""
    d3 = view3(dest, axis)
    _swap_last(rows.reshape(d3.shape[0], d3.shape[2], d3.shape[1]), d3)


@_jit
def layernorm_forward(x, gamma, beta, out, save_mean, save_std, eps):
    """:func:`.norm.layernorm_forward` over the last axis of ``x``."""
    norm.layernorm_forward(last_rows(x), gamma, beta, last_rows(out), save_mean.reshape(-1),
                           save_std.reshape(-1), eps)


@_jit
def layernorm_forward_moved(x, gamma, beta, out, save_mean, save_std, ws_x, ws_out, eps, axis):
    """:func:`.norm.layernorm_forward` over ``axis`` (not the last) through the workspaces."""
    rows = _to_rows(x, axis, ws_x)
    orows = ws_out.reshape(rows.shape)
    norm.layernorm_forward(rows, gamma, beta, orows, save_mean.reshape(-1), save_std.reshape(-1), eps)
    _from_rows(orows, axis, out)


@_jit
def layernorm_backward(x, dout, gamma, save_mean, save_std, dx, dgamma, dbeta):
    """:func:`.norm.layernorm_backward` over the last axis of ``x``."""
    norm.layernorm_backward(last_rows(x), last_rows(dout), gamma, save_mean.reshape(-1),
                            save_std.reshape(-1), last_rows(dx), dgamma, dbeta)


@_jit
def layernorm_backward_moved(x, dout, gamma, save_mean, save_std, dx, dgamma, dbeta, ws_x, ws_dout,
                             ws_dx, axis):
    """:func:`.norm.layernorm_backward` over ``axis`` (not the last) through the workspaces."""
    rows = _to_rows(x, axis, ws_x)
    grows = _to_rows(dout, axis, ws_dout)
    dxrows = ws_dx.reshape(rows.shape)
    norm.layernorm_backward(rows, grows, gamma, save_mean.reshape(-1), save_std.reshape(-1), dxrows,
                            dgamma, dbeta)
    _from_rows(dxrows, axis, dx)
