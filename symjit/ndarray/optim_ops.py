"""MXNet's fused optimizer NDArray ops (``mx.nd.sgd_update``, ``mx.nd.sgd_mom_update``): one
compiled pass updating the weight (and state) in place."""
from __future__ import annotations

import numpy as np

from ..base import MXNetError, shape_str
from .ndarray import NDArray

__all__ = ["sgd_update", "sgd_mom_update"]


def _kernels():
    """The compiled update kernels (imported on first use: importing numba costs start-up)."""
    global _K
    if _K is None:
        from symjit.kernels.cpu import optim
        _K = optim
    return _K


_K = None


def _flat(name: str, arr: NDArray, like: NDArray) -> np.ndarray:
    if not isinstance(arr, NDArray):
        raise MXNetError(f"{name}: expected an NDArray, got {type(arr).__name__}")
    if arr is not like and (arr._data.shape != like._data.shape or arr._data.dtype != like._data.dtype):
        raise MXNetError(f"{name}: shape {shape_str(arr.shape)} {np.dtype(arr.dtype).name} does not match "
                         f"the weight's {shape_str(like.shape)} {np.dtype(like.dtype).name}")
    data = arr._data
    if not data.flags.c_contiguous:
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
    _kernels().sgd_update(
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
    _kernels().sgd_mom_update(
      _flat("sgd_mom_update weight", weight, weight), _flat("sgd_mom_update grad", grad, weight),
      _flat("sgd_mom_update mom", mom, weight), float(lr), float(momentum), float(wd),
      float(rescale_grad), float(clip_gradient))
    return _out(weight, out)
