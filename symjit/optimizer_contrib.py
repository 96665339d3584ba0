"""``mx.optimizer.contrib``: MXNet 1.x's contributed optimizers (``GroupAdaGrad``), registered in
``mx.optimizer`` like the others.

>>> import symjit as mx
>>> opt = mx.optimizer.contrib.GroupAdaGrad(learning_rate=0.1, eps=0.0)
>>> w = mx.nd.zeros((2, 2))
>>> opt.update(0, w, mx.nd.array([[1.0, 1.0], [2.0, 2.0]]), opt.create_state(0, w))
>>> print(w.asnumpy())
[[-0.1 -0.1]
 [-0.1 -0.1]]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .base import DTypeError, ParamError, ShapeError, shape_str
from .ndarray import NDArray, zeros
from .optimizer_base import Optimizer, register

__all__ = ["GroupAdaGrad"]


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one learning rate per row of a 2-D weight: with ``g = clip(rescale_grad * grad)``,
    ``history += mean(g^2, axis=1, keepdims=True)`` and ``weight -= lr * g / sqrt(history + eps)``.
    The state is the ``(rows, 1)`` history (zeros); weight decay is not supported (``wd`` must be 0).
    One compiled call (the ``contrib.group_adagrad_update`` operator) per update."""

    def __init__(self, eps: float = 1e-5, **kwargs: Any):
        super().__init__(**kwargs)
        self.float_stable_eps = float(eps)

    def create_state(self, index: Any, weight: NDArray) -> NDArray:
        """The per-row history, ``(rows, 1)`` zeros."""
        if len(weight.shape) != 2:
            raise ShapeError(f"GroupAdaGrad.create_state (index {index!r}): the weight must be 2-D "
                             f"(rows, columns), got shape {shape_str(weight.shape)}")
        return zeros((weight.shape[0], 1), weight.context, dtype=weight.dtype)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        """Update ``weight`` and its history in place."""
        from . import ndarray as nd
        where = f"GroupAdaGrad.update (index {index!r})"
        for what, arr in (("weight", weight), ("grad", grad), ("state", state)):
            if not isinstance(arr, NDArray):
                raise DTypeError(f"{where}: {what} must be an NDArray, got {type(arr).__name__}")
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if wd != 0.0:
            raise ParamError(f"{where}: weight decay is not supported (wd={wd}); use wd=0")
        if np.dtype(weight.dtype) not in (np.float32, np.float64):
            raise DTypeError(f"{where}: weight dtype {np.dtype(weight.dtype).name} is not supported "
                             "(float32 or float64)")
        clip = -1.0 if self.clip_gradient is None else float(self.clip_gradient)
        nd.contrib.group_adagrad_update(weight, grad, state, out=weight, lr=lr, epsilon=self.float_stable_eps,
                                        rescale_grad=self.rescale_grad, clip_gradient=clip)
