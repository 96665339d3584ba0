"""Fused optimizer updates on a GPU: one grid-stride ``numba.cuda`` kernel per update, in place.

The same per-element bodies as the CPU (:mod:`symjit.kernels.optim_steps`), wrapped with
``cuda.jit(device=True)``. Each ``*_update`` function takes flat device arrays and the scalars in
the CPU kernel's order, and queues its kernel on ``stream`` (the device's symjit stream; 0: the
default stream).
"""

from __future__ import annotations

from numba import cuda

from .. import optim_steps as _s
from . import launch

__all__ = [
    "sgd_update",
    "sgd_mom_update",
    "nag_mom_update",
    "adagrad_update",
    "adadelta_update",
    "adam_wdclip_update",
    "rmsprop_wdclip_update",
    "rmspropalex_update",
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
