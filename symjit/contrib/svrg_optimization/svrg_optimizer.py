"""The optimizers behind :class:`~symjit.contrib.svrg_optimization.SVRGModule`: ``_SVRGOptimizer``
routes each parameter to the optimizer the user chose, except the ``<name>_full`` keys that hold the
full gradients in a KVStore, which ``_AssignmentOptimizer`` overwrites with what is pushed. Both are
registered in ``mx.optimizer`` under their lower-cased names, as MXNet 1.x registers them.

>>> import symjit as mx
>>> opt = _SVRGOptimizer(default_optimizer='sgd', learning_rate=1.0,
...                      param_idx2name={0: 'w', 1: 'w_full'})
>>> w, w_full = mx.nd.zeros((2,)), mx.nd.zeros((2,))
>>> opt.update(0, w, mx.nd.ones((2,)), opt.create_state(0, w))
>>> opt.update(1, w_full, mx.nd.ones((2,)) * 3, opt.create_state(1, w_full))
>>> w.asnumpy().tolist(), w_full.asnumpy().tolist()
([-1.0, -1.0], [3.0, 3.0])
"""
from __future__ import annotations

from typing import Any

from ...base import ParamError
from ...ndarray import NDArray
from ...optimizer import Optimizer, create, register

__all__ = ["_AssignmentOptimizer", "_SVRGOptimizer"]

# the keyword arguments Optimizer itself takes; the others belong to the default optimizer only
_BASE_PARAMS = ("rescale_grad", "param_idx2name", "wd", "clip_gradient", "learning_rate", "lr_scheduler",
                "sym", "begin_num_update", "multi_precision", "param_dict")


@register
class _AssignmentOptimizer(Optimizer):
    """Sets the weight to the pushed gradient: a KVStore key updated by it holds the last value
    pushed (the sum over devices and workers), which is how SVRGModule collects full gradients."""

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        """``weight[:] = grad``."""
        if not isinstance(weight, NDArray) or not isinstance(grad, NDArray):
            raise ParamError(f"_AssignmentOptimizer.update (index {index!r}): weight and grad must be "
                             "NDArrays")
        weight[:] = grad


@register
class _SVRGOptimizer(Optimizer):
    """Updates parameters named ``*_full`` with :class:`_AssignmentOptimizer` and every other one
    with ``default_optimizer`` (a name, created with all the keyword arguments, or an Optimizer).
    ``param_idx2name`` maps each index to its parameter name; an index may also be the name."""

    def __init__(self, default_optimizer: Any, **kwargs: Any):
        super().__init__(**{k: v for k, v in kwargs.items() if k in _BASE_PARAMS})
        if isinstance(default_optimizer, str):
            self.default_opt = create(default_optimizer, **kwargs)
        elif isinstance(default_optimizer, Optimizer):
            self.default_opt = default_optimizer
        else:
            raise ParamError("_SVRGOptimizer: default_optimizer must be an optimizer name or an Optimizer, "
                             f"got {type(default_optimizer).__name__}")
        self.aux_opt = _AssignmentOptimizer()

    def _name(self, index: Any) -> str:
        if isinstance(index, str) and index in self.idx2name.values():
            return index
        if index not in self.idx2name:
            raise ParamError(f"_SVRGOptimizer: index {index!r} has no parameter name in param_idx2name")
        return str(self.idx2name[index])

    def _target(self, index: Any) -> Optimizer:
        return self.aux_opt if self._name(index).endswith("_full") else self.default_opt

    def create_state(self, index: Any, weight: NDArray) -> Any:
        """The state of the optimizer that updates ``index``."""
        return self._target(index).create_state(index, weight)

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        """Update ``weight`` with the optimizer ``index``'s name selects."""
        self._target(index).update(index, weight, grad, state)
