"""``mx.mod.BaseModule``: what every module shares, written over the methods a module defines
(``bind``, ``init_params``, ``init_optimizer``, ``forward``, ``backward``, ``update``,
``update_metric``, ``get_params``, ``score``): ``forward_backward`` and the training loop ``fit``,
as MXNet 1.x's BaseModule has them. :class:`~symjit.module.Module` and the other modules build
on it; a module written in Python may too.

>>> import symjit as mx
>>> base = mx.mod.BaseModule()
>>> base.binded, base.params_initialized
(False, False)
"""
from __future__ import annotations

import logging
import time
from typing import Any

from .. import metric as _metric
from ..base import ParamError
from ..callback import BatchEndParam
from ..dist import rank_tag
from ..initializer import Uniform

__all__ = ["BaseModule"]

DEFAULT_INITIALIZER = Uniform(0.01)


def _call_all(callbacks: Any, *args: Any) -> None:
    for cb in callbacks if isinstance(callbacks, (list, tuple)) else [callbacks]:
        if cb is not None:
            cb(*args)



class BaseModule:
    """The module interface; the computation methods are the subclass's (here they raise)."""

    def __init__(self, logger: Any = logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol: Any = None

    @property
    def symbol(self) -> Any:
        """The module's symbol (None for a module without one)."""
        return self._symbol

    def _abstract(self, name: str) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.{name}: a module must define it")

    def bind(self, *args: Any, **kwargs: Any) -> None:
        """Bind for the given input shapes (the subclass's)."""
        self._abstract("bind")

    def init_params(self, *args: Any, **kwargs: Any) -> None:
        """Initialise the parameters (the subclass's)."""
        self._abstract("init_params")

    def init_optimizer(self, *args: Any, **kwargs: Any) -> None:
        """Install the optimizer (the subclass's)."""
        self._abstract("init_optimizer")

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Forward pass (the subclass's)."""
        self._abstract("forward")

    def backward(self, out_grads: Any = None) -> None:
        """Backward pass (the subclass's)."""
        self._abstract("backward")

    def update(self) -> None:
        """Apply the optimizer (the subclass's)."""
        self._abstract("update")

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Accumulate ``eval_metric`` over the last outputs (the subclass's)."""
        self._abstract("update_metric")

    def get_params(self) -> tuple[dict, dict]:
        """``(arg_params, aux_params)`` (the subclass's)."""
        return self._abstract("get_params")

    def install_monitor(self, mon: Any) -> None:
        """Install a monitor (the subclass's)."""
        self._abstract("install_monitor")

    def score(self, *args: Any, **kwargs: Any) -> list:
        """Evaluate over a data iterator (the subclass's)."""
        return self._abstract("score")

    def forward_backward(self, data_batch: Any) -> None:
        """``forward(is_train=True)`` then ``backward()``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def fit(self, train_data: Any, eval_data: Any = None, eval_metric: Any = "acc",
            epoch_end_callback: Any = None, batch_end_callback: Any = None, kvstore: Any = "local",
            optimizer: Any = "sgd", optimizer_params: Any = (("learning_rate", 0.01),),
            eval_end_callback: Any = None, eval_batch_end_callback: Any = None,
            initializer: Any = DEFAULT_INITIALIZER, arg_params: dict | None = None,
            aux_params: dict | None = None, allow_missing: bool = False, force_rebind: bool = False,
            force_init: bool = False, begin_epoch: int = 0, num_epoch: int | None = None,
            validation_metric: Any = None, monitor: Any = None, sparse_row_id_fn: Any = None) -> None:
        """Bind, initialise and train for ``num_epoch`` epochs, as MXNet 1.x's ``BaseModule.fit``
        (through the subclass's bind, init_params, init_optimizer, forward, backward, update,
        update_metric, get_params and score)."""
        if num_epoch is None:
            raise ParamError(f"{type(self).__name__}.fit: please specify num_epoch")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        validation_metric = eval_metric if validation_metric is None else validation_metric
        eval_metric = _metric.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            values = self._fit_epoch(epoch, train_data, eval_metric, batch_end_callback, monitor)
            for name, val in values:
                self.logger.info(rank_tag() + "Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info(rank_tag() + "Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params, aux_params = self.get_params()
            _call_all(epoch_end_callback, epoch, self.symbol, arg_params, aux_params)
            if eval_data is not None:
                res = self.score(eval_data, validation_metric, score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info(rank_tag() + "Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    def _fit_epoch(self, epoch: int, train_data: Any, eval_metric: Any, batch_end_callback: Any,
                   monitor: Any) -> list:
        values: list = []
        for nbatch, batch in enumerate(train_data):
            if monitor is not None:
                monitor.tic()
            self.forward_backward(batch)
            self.update()
            self.update_metric(eval_metric, batch.label)
            if monitor is not None:
                monitor.toc_print()
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
        values = eval_metric.get_global_name_value()
        return values

