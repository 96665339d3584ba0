"""MXNet's fused optimizer NDArray ops (``mx.nd.sgd_update``, ``mx.nd.sgd_mom_update``): one
compiled pass updating the weight (and state) in place."""
from __future__ import annotations

import numpy as np

from ..base import MXNetError, shape_str
from . import storage
from .ndarray import NDArray

__all__ = ["sgd_update", "sgd_mom_update", "update_kernels"]


class _OnDevice:
    """A GPU update-kernel module whose functions run with ``ctx``'s device current, queued on
    its stream."""

    def __init__(self, module, ctx):
        self._module, self._ctx = module, ctx

    def __getattr__(self, name: str):
        fn = getattr(self._module, name)

        def call(*args):
            with storage.device_scope(self._ctx):
                fn(*args, stream=storage.stream(self._ctx))
        return call


def update_kernels(ctx):
    """The fused optimizer update kernels for arrays on ``ctx``: ``symjit.kernels.cpu.optim`` (one
    ``njit`` loop each) or ``symjit.kernels.cuda.optim`` (one grid-stride kernel each, queued on the
    device), with the same functions and arguments. Imported on first use (numba costs start-up).

    >>> import symjit as mx
    >>> update_kernels(mx.cpu()).__name__
    'symjit.kernels.cpu.optim'
    """
    if ctx.device_type == "gpu":
        from symjit.kernels.cuda import optim as gpu_optim
        return _OnDevice(gpu_optim, ctx)
    from symjit.kernels.cpu import optim
    return optim


def _flat(name: str, arr: NDArray, like: NDArray) -> np.ndarray:
    if not isinstance(arr, NDArray):
        raise MXNetError(f"{name}: expected an NDArray, got {type(arr).__name__}")
    if arr is not like and (arr._data.shape != like._data.shape or arr._data.dtype != like._data.dtype):
        raise MXNetError(f"{name}: shape {shape_str(arr.shape)} {np.dtype(arr.dtype).name} does not match "
                         f"the weight's {shape_str(like.shape)} {np.dtype(like.dtype).name}")
    if arr.context != like.context:
        raise MXNetError(f"{name}: array lives on {arr.context}, the weight on {like.context}")
    data = arr._data
    if not storage.is_contiguous(data):
        raise MXNetError(f"{name}: array must be contiguous")
    return data.reshape(-1)


def _out(weight: NDArray, out: NDArray | None) -> NDArray:
    if out is not None and out is not weight:
        raise MXNetError("optimizer update: out must be the weight itself (the update is in place)")
    return weight


def sgd_update(weight: NDArray, grad: NDArray, lr: float, wd: float = 0.0, rescale_grad: float = 1.0,
               clip_gradient: float = -1.0, out: NDArray | None = None, lazy_update: bool = True) -> NDArray:
    """``weight -= lr * (clip(rescale_grad * grad) + wd * weight)`` in place.

    >>> import symjit as mx
    >>> w = mx.nd.ones((2,)); _ = mx.nd.sgd_update(w, mx.nd.ones((2,)), lr=0.5, out=w)
    >>> w.asnumpy().tolist()
    [0.5, 0.5]
    """
    update_kernels(weight.context).sgd_update(
      _flat("sgd_update weight", weight, weight), _flat("sgd_update grad", grad, weight),
      float(lr), float(wd), float(rescale_grad), float(clip_gradient))
    return _out(weight, out)


def sgd_mom_update(weight: NDArray, grad: NDArray, mom: NDArray, lr: float, momentum: float = 0.0,
                   wd: float = 0.0, rescale_grad: float = 1.0, clip_gradient: float = -1.0,
                   out: NDArray | None = None, lazy_update: bool = True) -> NDArray:
    """``mom = momentum * mom - lr * (clip(rescale_grad * grad) + wd * weight); weight += mom``.

    >>> import symjit as mx
    >>> w, m = mx.nd.ones((2,)), mx.nd.zeros((2,))
    >>> _ = mx.nd.sgd_mom_update(w, mx.nd.ones((2,)), m, lr=0.1, momentum=0.9, out=w)
    >>> [round(v, 6) for v in w.asnumpy().tolist()]
    [0.9, 0.9]
    """
    update_kernels(weight.context).sgd_mom_update(
      _flat("sgd_mom_update weight", weight, weight), _flat("sgd_mom_update grad", grad, weight),
      _flat("sgd_mom_update mom", mom, weight), float(lr), float(momentum), float(wd),
      float(rescale_grad), float(clip_gradient))
    return _out(weight, out)
