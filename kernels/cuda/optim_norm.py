"""The hand-written parts of the GPU's fused optimizer updates, which :mod:`symjit.kernels.cuda.optim`
(generated from :mod:`symjit.kernels.optim_table`) imports: the address-table ``view`` and launch
shape of the ``multi_*`` forms, and the passes of the rules that scale a parameter's step by norms
over the whole parameter (LAMB, LARS, LBSGD), with the per-element bodies and scalar rules of
:mod:`symjit.kernels.optim_steps` (as the CPU's :mod:`symjit.kernels.cpu.optim_norm`).

A norm rule takes one block per parameter (blocks stride over the rows of a multi update): its
threads stride over the elements in a first pass, a block sum (float64, in shared memory) gives
the squared norms, and the same threads take the same elements in the second pass, so no element
is read by one thread after another wrote it. ``{name}_block(buf, tid, nthreads, ...)`` runs it in
the calling block, ``buf`` the kernel's shared array of ``MAX_SHARED`` float64, ``tid`` and
``nthreads`` the thread's index and the block's size as the kernel read them (these functions never
read ``cuda``'s thread indices themselves: see ``optim_gen.BLOCK_ARGS``).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from numba import config, cuda

from .. import optim_steps as _s
from . import SIM_BLOCKS, launch
from .reduce import block_sum

__all__ = ["view", "multi_launch", "lamb_block", "lars_block", "lars_mom_block", "lbsgd_block",
           "lbsgd_mom_block"]


def _sim_view(addr, n, like):
    """The simulator's ``view``: a numpy array over the simulated device memory (host memory)."""
    ctype = np.ctypeslib.as_ctypes_type(np.dtype(like.dtype))
    if n == 0:
        return np.empty(0, like.dtype)
    return np.ctypeslib.as_array(ctypes.cast(int(addr), ctypes.POINTER(ctype)), shape=(int(n),))


def _device_view():
    try:   # numba-cuda (the symjit[cuda] extra)
        from numba.cuda import types
        from numba.cuda.extending import intrinsic
        from numba.cuda.np.arrayobj import make_array, populate_array
    except ImportError:   # the numba.cuda that numba itself still ships
        from numba.core import types
        from numba.core.extending import intrinsic
        from numba.np.arrayobj import make_array, populate_array
    from ..views import make_view
    return make_view(intrinsic, types, make_array, populate_array)


view = cuda.jit(device=True)(_sim_view) if config.ENABLE_CUDASIM else _device_view()


def multi_launch(like: Any, rows: int, stream: Any = 0) -> tuple[tuple[int, int], int, Any]:
    """((blocks per parameter, parameter rows), threads, stream) of a multi update whose largest
    weight is ``like``."""
    blocks, threads, _ = launch(like.size, stream)
    most = SIM_BLOCKS if config.ENABLE_CUDASIM else 65535
    return (blocks, max(1, min(int(rows), most))), threads, stream


_sgd_step = cuda.jit(device=True)(_s.sgd_step)
_sgd_mom_step = cuda.jit(device=True)(_s.sgd_mom_step)
_lamb_moments_step = cuda.jit(device=True)(_s.lamb_moments_step)
_lamb_direction = cuda.jit(device=True)(_s.lamb_direction)
_lamb_ratio = cuda.jit(device=True)(_s.lamb_ratio)
_lars_rate = cuda.jit(device=True)(_s.lars_rate)
_lbsgd_mean_step = cuda.jit(device=True)(_s.lbsgd_mean_step)
_lbsgd_trust = cuda.jit(device=True)(_s.lbsgd_trust)


@cuda.jit(device=True)
def lamb_block(buf, tid, nthreads, weight, grad, mean, var, direction, lr, beta1, beta2, eps, wd, rescale,
               clip, inv1, inv2, lower, upper):
    w_sq = 0.0
    r_sq = 0.0
    for i in range(tid, weight.size, nthreads):
        _lamb_moments_step(i, grad, mean, var, beta1, beta2, rescale, clip)
        r = _lamb_direction(i, weight, mean, var, eps, wd, inv1, inv2)
        direction[i] = r
        w = 1.0 * weight[i]
        w_sq += w * w
        r_sq += r * r
    w_sq = block_sum(buf, w_sq)
    r_sq = block_sum(buf, r_sq)
    rate = lr * _lamb_ratio(w_sq, r_sq, lower, upper)
    for i in range(tid, weight.size, nthreads):
        weight[i] -= rate * direction[i]


@cuda.jit(device=True)
def _lars_block_rate(buf, tid, nthreads, weight, grad, lr, eta, eps, wd, rescale, use_trust):
    w_sq = 0.0
    g_sq = 0.0
    for i in range(tid, weight.size, nthreads):
        w = 1.0 * weight[i]
        g = 1.0 * grad[i]
        w_sq += w * w
        g_sq += g * g
    w_sq = block_sum(buf, w_sq)
    g_sq = block_sum(buf, g_sq)
    return _lars_rate(lr, eta, eps, wd, w_sq, g_sq, rescale, use_trust)


@cuda.jit(device=True)
def lars_block(buf, tid, nthreads, weight, grad, lr, eta, eps, wd, rescale, clip, use_trust):
    rate = _lars_block_rate(buf, tid, nthreads, weight, grad, lr, eta, eps, wd, rescale, use_trust)
    for i in range(tid, weight.size, nthreads):
        _sgd_step(i, weight, grad, rate, wd, rescale, clip)


@cuda.jit(device=True)
def lars_mom_block(buf, tid, nthreads, weight, grad, mom, lr, momentum, eta, eps, wd, rescale, clip,
                   use_trust):
    rate = _lars_block_rate(buf, tid, nthreads, weight, grad, lr, eta, eps, wd, rescale, use_trust)
    for i in range(tid, weight.size, nthreads):
        _sgd_mom_step(i, weight, grad, mom, rate, momentum, wd, rescale, clip)


@cuda.jit(device=True)
def _lbsgd_block_rate(buf, tid, nthreads, weight, grad, acc, lr, wd, first, step, scale, lars):
    w_sq = 0.0
    g_sq = 0.0
    for i in range(tid, weight.size, nthreads):
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
def lbsgd_block(buf, tid, nthreads, weight, grad, acc, lr, wd, rescale, clip, first, step, scale, lars):
    rate = _lbsgd_block_rate(buf, tid, nthreads, weight, grad, acc, lr, wd, first, step, scale, lars)
    if step != 0.0:
        for i in range(tid, weight.size, nthreads):
            _sgd_step(i, weight, acc, rate, wd, rescale, clip)


@cuda.jit(device=True)
def lbsgd_mom_block(buf, tid, nthreads, weight, grad, acc, mom, lr, momentum, wd, rescale, clip, first, step,
                    scale, lars):
    rate = _lbsgd_block_rate(buf, tid, nthreads, weight, grad, acc, lr, wd, first, step, scale, lars)
    if step != 0.0:
        for i in range(tid, weight.size, nthreads):
            _sgd_mom_step(i, weight, acc, mom, rate, momentum, wd, rescale, clip)
