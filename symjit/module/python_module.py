"""``mx.mod.PythonModule`` and ``PythonLossModule``: modules whose computation is Python code, to
chain with compiled modules in a ``SequentialModule`` (a loss written in numpy, for example).

>>> import numpy as np, symjit as mx
>>> loss = mx.mod.PythonLossModule(grad_func=lambda scores, labels: scores - 1)
>>> loss.bind([('data', (2, 3))], [('softmax_label', (2,))])
>>> loss.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))]), is_train=True)
>>> loss.backward(); loss.get_input_grads()[0].asnumpy().tolist()
[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
"""
from __future__ import annotations

import logging
from typing import Any

from .. import ndarray as nd
from ..base import MXNetError, ParamError
from ..io import DataDesc
from .executor_group import as_descs
from .module import Module

__all__ = ["PythonModule", "PythonLossModule"]


class PythonModule(Module):
    """A module without parameters whose outputs Python code computes; subclasses implement
    ``_compute_output_shapes``, ``forward``, ``backward``, ``get_outputs`` and ``get_input_grads``."""

    def __init__(self, data_names: Any, label_names: Any, output_names: Any, logger: Any = logging):
        self.logger = logger
        self._data_names = list(data_names)
        self._label_names = list(label_names) if label_names is not None else None
        self._output_names = list(output_names)
        self._data_shapes: list[DataDesc] = []
        self._label_shapes: list[DataDesc] | None = None
        self._output_shapes: list = []
        self.binded = self.for_training = self.inputs_need_grad = False
        self.params_initialized = self.optimizer_initialized = False
        self._symbol = None

    @property
    def data_names(self) -> list[str]:
        return self._data_names

    @property
    def label_names(self) -> list[str]:
        return self._label_names or []

    @property
    def output_names(self) -> list[str]:
        return self._output_names

    @property
    def output_shapes(self) -> list:
        return self._output_shapes

    def get_params(self) -> tuple[dict, dict]:
        """No parameters."""
        return {}, {}

    def init_params(self, *args: Any, **kwargs: Any) -> None:
        """No parameters to initialise."""
        self.params_initialized = True

    def set_params(self, *args: Any, **kwargs: Any) -> None:
        self.params_initialized = True

    def init_optimizer(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to optimise."""
        self.optimizer_initialized = True

    def update(self) -> None:
        """Nothing to update."""

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Update ``eval_metric`` with the outputs (when bound with labels)."""
        if self._label_shapes is None:
            return
        eval_metric.update(labels, self.get_outputs())

    def install_monitor(self, mon: Any) -> None:
        raise MXNetError(f"{type(self).__name__}: a Python module cannot be monitored")

    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Record the shapes (checked against the names) and compute the output shapes."""
        where = f"{type(self).__name__}.bind"
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if grad_req != "write":
            raise ParamError(f"{where}: a Python module supports grad_req='write' only, got {grad_req!r}")
        data = as_descs(data_shapes, where)
        if [d.name for d in data] != self._data_names:
            raise ParamError(f"{where}: data shapes {[d.name for d in data]} for data names "
                             f"{self._data_names}")
        labels = as_descs(label_shapes, where) if label_shapes else None
        if labels is not None and [d.name for d in labels] != (self._label_names or []):
            raise ParamError(f"{where}: label shapes {[d.name for d in labels]} for label names "
                             f"{self._label_names}")
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._data_shapes, self._label_shapes = data, labels
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self) -> list:
        raise NotImplementedError(f"{type(self).__name__}._compute_output_shapes")


class PythonLossModule(PythonModule):
    """A loss layer in Python: forward passes its input through as the output (the scores);
    backward sets the input gradient to ``grad_func(scores, labels)`` (NDArrays in, an NDArray
    or numpy array out)."""

    def __init__(self, name: str = "pyloss", data_names: Any = ("data",),
                 label_names: Any = ("softmax_label",), logger: Any = logging, grad_func: Any = None):
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        if len(self._data_names) != 1 or len(self._label_names or []) != 1:
            raise ParamError("PythonLossModule: takes one data and one label input")
        if grad_func is not None and not callable(grad_func):
            raise ParamError(f"PythonLossModule: grad_func must be callable, got {type(grad_func).__name__}")
        self._name, self._grad_func = name, grad_func
        self._scores = self._labels = self._scores_grad = None

    def _compute_output_shapes(self) -> list:
        return [(self._name + "_output", self._data_shapes[0].shape)]

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Keep the scores (and in training the labels)."""
        self._scores = data_batch.data[0]
        if (self.for_training if is_train is None else is_train):
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        return [self._scores]

    def backward(self, out_grads: Any = None) -> None:
        """The input gradient from ``grad_func``."""
        if out_grads is not None:
            raise MXNetError("PythonLossModule.backward: a loss module takes no out_grads")
        if not self.for_training:
            raise MXNetError("PythonLossModule.backward: bind with for_training=True")
        if self._grad_func is None:
            raise MXNetError("PythonLossModule.backward: no grad_func was given")
        grad = self._grad_func(self._scores, self._labels)
        self._scores_grad = grad if isinstance(grad, nd.NDArray) else nd.array(grad)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        return [self._scores_grad]
