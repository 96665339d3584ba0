"""Fused optimizer updates on a GPU: one grid-stride ``numba.cuda`` kernel per update, in place.

The same per-element bodies as the CPU (:mod:`symjit.kernels.optim_steps`), wrapped with
``cuda.jit(device=True)``. Each ``*_update`` function takes flat device arrays and the scalars in
the CPU kernel's order, and queues its kernel on ``stream`` (the device's symjit stream; 0: the
default stream).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from numba import config, cuda

from .. import optim_steps as _s
from . import SIM_BLOCKS, launch

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
    "multi_launch",
]



_sgd_step = cuda.jit(device=True)(_s.sgd_step)


@cuda.jit
def _sgd_step_kernel(weight, grad, lr, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _sgd_step(i, weight, grad, lr, wd, rescale, clip)


def sgd_update(weight, grad, lr, wd, rescale, clip, stream=0) -> None:
    """``w -= lr * (g + wd * w)``."""
    _sgd_step_kernel[launch(weight.size, stream)](weight, grad, lr, wd, rescale, clip)


_sgd_mom_step = cuda.jit(device=True)(_s.sgd_mom_step)


@cuda.jit
def _sgd_mom_step_kernel(weight, grad, mom, lr, momentum, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _sgd_mom_step(i, weight, grad, mom, lr, momentum, wd, rescale, clip)


def sgd_mom_update(weight, grad, mom, lr, momentum, wd, rescale, clip, stream=0) -> None:
    """``mom = momentum * mom - lr * (g + wd * w); w += mom``."""
    _sgd_mom_step_kernel[launch(weight.size, stream)](weight, grad, mom, lr, momentum, wd, rescale, clip)


_nag_mom_step = cuda.jit(device=True)(_s.nag_mom_step)


@cuda.jit
def _nag_mom_step_kernel(weight, grad, mom, lr, momentum, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _nag_mom_step(i, weight, grad, mom, lr, momentum, wd, rescale, clip)


def nag_mom_update(weight, grad, mom, lr, momentum, wd, rescale, clip, stream=0) -> None:
    """Nesterov: ``g' = g + wd*w; mom = momentum*mom + g'; w -= lr * (g' + momentum*mom)``."""
    _nag_mom_step_kernel[launch(weight.size, stream)](weight, grad, mom, lr, momentum, wd, rescale, clip)


_adagrad_step = cuda.jit(device=True)(_s.adagrad_step)


@cuda.jit
def _adagrad_step_kernel(weight, grad, history, lr, eps, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _adagrad_step(i, weight, grad, history, lr, eps, wd, rescale, clip)


def adagrad_update(weight, grad, history, lr, eps, wd, rescale, clip, stream=0) -> None:
    """``h += g^2; w -= lr * (g / sqrt(h + eps) + wd * w)``."""
    _adagrad_step_kernel[launch(weight.size, stream)](weight, grad, history, lr, eps, wd, rescale, clip)


_adadelta_step = cuda.jit(device=True)(_s.adadelta_step)


@cuda.jit
def _adadelta_step_kernel(weight, grad, acc_g, acc_delta, rho, eps, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _adadelta_step(i, weight, grad, acc_g, acc_delta, rho, eps, wd, rescale, clip)


def adadelta_update(weight, grad, acc_g, acc_delta, rho, eps, wd, rescale, clip, stream=0) -> None:
    """Zeiler: running averages of g^2 and of delta^2; ``w -= delta + wd * w``."""
    _adadelta_step_kernel[launch(weight.size, stream)](
        weight, grad, acc_g, acc_delta, rho, eps, wd, rescale, clip
    )


_adam_wdclip_step = cuda.jit(device=True)(_s.adam_wdclip_step)


@cuda.jit
def _adam_wdclip_step_kernel(weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _adam_wdclip_step(i, weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip)


def adam_wdclip_update(weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip, stream=0) -> None:
    """Adam with ``g = clip(rescale*grad + wd*w)``; ``lr`` already bias-corrected."""
    _adam_wdclip_step_kernel[launch(weight.size, stream)](
        weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip
    )


_rmsprop_wdclip_step = cuda.jit(device=True)(_s.rmsprop_wdclip_step)


@cuda.jit
def _rmsprop_wdclip_step_kernel(weight, grad, n, lr, gamma1, eps, wd, rescale, clip, clip_weights):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _rmsprop_wdclip_step(i, weight, grad, n, lr, gamma1, eps, wd, rescale, clip, clip_weights)


def rmsprop_wdclip_update(
    weight, grad, n, lr, gamma1, eps, wd, rescale, clip, clip_weights, stream=0
) -> None:
    """RMSProp with ``g = clip(rescale*grad + wd*w)``; ``n = (1-g1)*g^2 + g1*n; w -= lr*g/sqrt(n+eps)``."""
    _rmsprop_wdclip_step_kernel[launch(weight.size, stream)](
        weight, grad, n, lr, gamma1, eps, wd, rescale, clip, clip_weights
    )


_rmspropalex_step = cuda.jit(device=True)(_s.rmspropalex_step)


@cuda.jit
def _rmspropalex_step_kernel(
    weight, grad, n, g_avg, delta, lr, gamma1, gamma2, eps, wd, rescale, clip, clip_weights
):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _rmspropalex_step(
            i, weight, grad, n, g_avg, delta, lr, gamma1, gamma2, eps, wd, rescale, clip, clip_weights
        )


def rmspropalex_update(
    weight, grad, n, g_avg, delta, lr, gamma1, gamma2, eps, wd, rescale, clip, clip_weights, stream=0
) -> None:
    """Centered RMSProp (Graves 2013): ``n = (1-g1)*g^2 + g1*n; a = (1-g1)*g + g1*a;"""
    _rmspropalex_step_kernel[launch(weight.size, stream)](
        weight, grad, n, g_avg, delta, lr, gamma1, gamma2, eps, wd, rescale, clip, clip_weights
    )


# -- every parameter of a step in one launch -------------------------------------------------------
# The tables of symjit.kernels.cpu.optim's multi_* functions, as device arrays: block row y of the
# grid takes parameters y, y + gridDim.y, ...; its blocks stride over the parameter's elements.


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


@cuda.jit
def _multi_sgd_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        lr, wd, rescale, clip = p[0], p[1], p[2], p[3]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _sgd_step(i, w, g, lr, wd, rescale, clip)


def multi_sgd_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`sgd_update` of every row of the tables (``like``: the largest weight)."""
    _multi_sgd_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_sgd_mom_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g, m = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        lr, momentum, wd, rescale, clip = p[0], p[1], p[2], p[3], p[4]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _sgd_mom_step(i, w, g, m, lr, momentum, wd, rescale, clip)


def multi_sgd_mom_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`sgd_mom_update` of every row of the tables (``like``: the largest weight)."""
    _multi_sgd_mom_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_nag_mom_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g, m = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        lr, momentum, wd, rescale, clip = p[0], p[1], p[2], p[3], p[4]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _nag_mom_step(i, w, g, m, lr, momentum, wd, rescale, clip)


def multi_nag_mom_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`nag_mom_update` of every row of the tables (``like``: the largest weight)."""
    _multi_nag_mom_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_adagrad_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g, h = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        lr, eps, wd, rescale, clip = p[0], p[1], p[2], p[3], p[4]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _adagrad_step(i, w, g, h, lr, eps, wd, rescale, clip)


def multi_adagrad_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`adagrad_update` of every row of the tables (``like``: the largest weight)."""
    _multi_adagrad_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_adadelta_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        acc_g, acc_d = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        rho, eps, wd, rescale, clip = p[0], p[1], p[2], p[3], p[4]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _adadelta_step(i, w, g, acc_g, acc_d, rho, eps, wd, rescale, clip)


def multi_adadelta_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`adadelta_update` of every row of the tables (``like``: the largest weight)."""
    _multi_adadelta_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_adam_wdclip_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        mean, var = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        lr, beta1, beta2, eps, wd, rescale, clip = p[0], p[1], p[2], p[3], p[4], p[5], p[6]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _adam_wdclip_step(i, w, g, mean, var, lr, beta1, beta2, eps, wd, rescale, clip)


def multi_adam_wdclip_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`adam_wdclip_update` of every row of the tables (``like``: the largest weight)."""
    _multi_adam_wdclip_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_rmsprop_wdclip_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g, s = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        lr, gamma1, eps, wd, rescale, clip, cw = p[0], p[1], p[2], p[3], p[4], p[5], p[6]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _rmsprop_wdclip_step(i, w, g, s, lr, gamma1, eps, wd, rescale, clip, cw)


def multi_rmsprop_wdclip_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`rmsprop_wdclip_update` of every row of the tables (``like``: the largest weight)."""
    _multi_rmsprop_wdclip_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_rmspropalex_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g, s = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        avg, delta = view(addrs[k, 3], n, like), view(addrs[k, 4], n, like)
        lr, gamma1, gamma2, eps, wd = p[0], p[1], p[2], p[3], p[4]
        rescale, clip, cw = p[5], p[6], p[7]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _rmspropalex_step(i, w, g, s, avg, delta, lr, gamma1, gamma2, eps, wd, rescale, clip, cw)


def multi_rmspropalex_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`rmspropalex_update` of every row of the tables (``like``: the largest weight)."""
    _multi_rmspropalex_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


# -- the rules mx.optimizer's Signum, FTML, Ftrl, Adamax, Nadam and DCASGD apply ------------------
# (the multi forms load a row's scalars into locals before its loop: read from the table inside
# the loop, LLVM reloads them per element, as a store through a view might change them)

_signsgd_step = cuda.jit(device=True)(_s.signsgd_step)
_signum_step = cuda.jit(device=True)(_s.signum_step)
_ftml_step = cuda.jit(device=True)(_s.ftml_step)
_ftrl_step = cuda.jit(device=True)(_s.ftrl_step)
_adamax_step = cuda.jit(device=True)(_s.adamax_step)
_nadam_step = cuda.jit(device=True)(_s.nadam_step)
_dcasgd_step = cuda.jit(device=True)(_s.dcasgd_step)
_dcasgd_mom_step = cuda.jit(device=True)(_s.dcasgd_mom_step)


@cuda.jit
def _signsgd_step_kernel(weight, grad, lr, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _signsgd_step(i, weight, grad, lr, wd, rescale, clip)


def signsgd_update(weight, grad, lr, wd, rescale, clip, stream=0) -> None:
    """``w = (1 - lr wd) w - lr sign(g)``."""
    _signsgd_step_kernel[launch(weight.size, stream)](weight, grad, lr, wd, rescale, clip)


@cuda.jit
def _signum_step_kernel(weight, grad, mom, lr, momentum, wd, rescale, clip, wd_lh):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _signum_step(i, weight, grad, mom, lr, momentum, wd, rescale, clip, wd_lh)


def signum_update(weight, grad, mom, lr, momentum, wd, rescale, clip, wd_lh, stream=0) -> None:
    """``mom = momentum mom - (1-momentum) (wd w + g); w = (1 - lr wd_lh) w + lr sign(mom)``."""
    _signum_step_kernel[launch(weight.size, stream)](
        weight, grad, mom, lr, momentum, wd, rescale, clip, wd_lh)


@cuda.jit
def _ftml_step_kernel(weight, grad, d, v, z, lr, beta1, beta2, eps, t, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _ftml_step(i, weight, grad, d, v, z, lr, beta1, beta2, eps, t, wd, rescale, clip)


def ftml_update(weight, grad, d, v, z, lr, beta1, beta2, eps, t, wd, rescale, clip, stream=0) -> None:
    """FTML, states ``(d, v, z)``."""
    _ftml_step_kernel[launch(weight.size, stream)](
        weight, grad, d, v, z, lr, beta1, beta2, eps, t, wd, rescale, clip)


@cuda.jit
def _ftrl_step_kernel(weight, grad, z, n, lr, lamda1, beta, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _ftrl_step(i, weight, grad, z, n, lr, lamda1, beta, wd, rescale, clip)


def ftrl_update(weight, grad, z, n, lr, lamda1, beta, wd, rescale, clip, stream=0) -> None:
    """FTRL-Proximal, states ``(z, n)``."""
    _ftrl_step_kernel[launch(weight.size, stream)](weight, grad, z, n, lr, lamda1, beta, wd, rescale, clip)


@cuda.jit
def _adamax_step_kernel(weight, grad, mean, u, lr, beta1, beta2, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _adamax_step(i, weight, grad, mean, u, lr, beta1, beta2, wd, rescale, clip)


def adamax_update(weight, grad, mean, u, lr, beta1, beta2, wd, rescale, clip, stream=0) -> None:
    """AdaMax, states ``(m, u)``; ``lr`` already bias-corrected."""
    _adamax_step_kernel[launch(weight.size, stream)](
        weight, grad, mean, u, lr, beta1, beta2, wd, rescale, clip)


@cuda.jit
def _nadam_step_kernel(weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip, coef_g, coef_m,
                       bias2):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _nadam_step(i, weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip, coef_g, coef_m,
                    bias2)


def nadam_update(weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip, coef_g, coef_m, bias2,
                 stream=0) -> None:
    """Nadam, states ``(m, v)``; the schedule's coefficients from the host."""
    _nadam_step_kernel[launch(weight.size, stream)](
        weight, grad, mean, var, lr, beta1, beta2, eps, wd, rescale, clip, coef_g, coef_m, bias2)


@cuda.jit
def _dcasgd_step_kernel(weight, grad, prev, lr, lamda, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _dcasgd_step(i, weight, grad, prev, lr, lamda, wd, rescale, clip)


def dcasgd_update(weight, grad, prev, lr, lamda, wd, rescale, clip, stream=0) -> None:
    """DCASGD without momentum, state: the previous weight."""
    _dcasgd_step_kernel[launch(weight.size, stream)](weight, grad, prev, lr, lamda, wd, rescale, clip)


@cuda.jit
def _dcasgd_mom_step_kernel(weight, grad, mom, prev, lr, momentum, lamda, wd, rescale, clip):
    for i in range(cuda.grid(1), weight.size, cuda.gridsize(1)):
        _dcasgd_mom_step(i, weight, grad, mom, prev, lr, momentum, lamda, wd, rescale, clip)


def dcasgd_mom_update(weight, grad, mom, prev, lr, momentum, lamda, wd, rescale, clip, stream=0) -> None:
    """DCASGD with momentum, states ``(mom, previous weight)``."""
    _dcasgd_mom_step_kernel[launch(weight.size, stream)](
        weight, grad, mom, prev, lr, momentum, lamda, wd, rescale, clip)


@cuda.jit
def _multi_signsgd_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        s0, s1, s2, s3 = p[0], p[1], p[2], p[3]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _signsgd_step(i, w, g, s0, s1, s2, s3)


def multi_signsgd_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`signsgd_update` of every row of the tables (``like``: the largest weight)."""
    _multi_signsgd_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_signum_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g, m = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        s0, s1, s2, s3, s4, s5 = p[0], p[1], p[2], p[3], p[4], p[5]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _signum_step(i, w, g, m, s0, s1, s2, s3, s4, s5)


def multi_signum_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`signum_update` of every row of the tables (``like``: the largest weight)."""
    _multi_signum_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_ftml_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        d, v, z = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like), view(addrs[k, 4], n, like)
        s0, s1, s2, s3, s4, s5, s6, s7 = p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _ftml_step(i, w, g, d, v, z, s0, s1, s2, s3, s4, s5, s6, s7)


def multi_ftml_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`ftml_update` of every row of the tables (``like``: the largest weight)."""
    _multi_ftml_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_ftrl_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        z, nn = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        s0, s1, s2, s3, s4, s5 = p[0], p[1], p[2], p[3], p[4], p[5]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _ftrl_step(i, w, g, z, nn, s0, s1, s2, s3, s4, s5)


def multi_ftrl_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`ftrl_update` of every row of the tables (``like``: the largest weight)."""
    _multi_ftrl_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_adamax_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        m, u = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        s0, s1, s2, s3, s4, s5 = p[0], p[1], p[2], p[3], p[4], p[5]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _adamax_step(i, w, g, m, u, s0, s1, s2, s3, s4, s5)


def multi_adamax_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`adamax_update` of every row of the tables (``like``: the largest weight)."""
    _multi_adamax_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_nadam_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        m, v = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        s0, s1, s2, s3, s4, s5, s6, s7, s8, s9 = p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _nadam_step(i, w, g, m, v, s0, s1, s2, s3, s4, s5, s6, s7, s8, s9)


def multi_nadam_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`nadam_update` of every row of the tables (``like``: the largest weight)."""
    _multi_nadam_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_dcasgd_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g, prev = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like), view(addrs[k, 2], n, like)
        s0, s1, s2, s3, s4 = p[0], p[1], p[2], p[3], p[4]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _dcasgd_step(i, w, g, prev, s0, s1, s2, s3, s4)


def multi_dcasgd_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`dcasgd_update` of every row of the tables (``like``: the largest weight)."""
    _multi_dcasgd_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)


@cuda.jit
def _multi_dcasgd_mom_kernel(addrs, sizes, scalars, like):
    for k in range(cuda.blockIdx.y, sizes.size, cuda.gridDim.y):
        n, p = sizes[k], scalars[k]
        w, g = view(addrs[k, 0], n, like), view(addrs[k, 1], n, like)
        m, prev = view(addrs[k, 2], n, like), view(addrs[k, 3], n, like)
        s0, s1, s2, s3, s4, s5 = p[0], p[1], p[2], p[3], p[4], p[5]
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            _dcasgd_mom_step(i, w, g, m, prev, s0, s1, s2, s3, s4, s5)


def multi_dcasgd_mom_update(addrs, sizes, scalars, like, stream=0) -> None:
    """:func:`dcasgd_mom_update` of every row of the tables (``like``: the largest weight)."""
    _multi_dcasgd_mom_kernel[multi_launch(like, sizes.size, stream)](addrs, sizes, scalars, like)

