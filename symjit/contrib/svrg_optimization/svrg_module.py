"""``SVRGModule``: a Module trained by stochastic variance-reduced gradient (Johnson & Zhang, 2013).

Every ``update_freq`` epochs the module takes a snapshot ``w~`` of its weights and computes the
full gradient ``mu`` (the gradient averaged over every batch of the data) at ``w~``; each step then
uses, instead of the batch gradient ``g(w)``, ``g(w) - g(w~) + mu`` (both batch gradients on the
same batch), whose variance shrinks as ``w`` nears ``w~``. The snapshot lives in a second Module
(``_mod_aux``) bound like this one; ``mu`` is kept per device in ``_param_dict``, and summed over
devices through the KVStore (keys ``<name>_full``) when the module trains with one.

>>> import numpy as np, symjit as mx
>>> from symjit.contrib.svrg_optimization import SVRGModule
>>> x = mx.sym.var('data')
>>> net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(x, num_hidden=1, name='fc'),
...                                     mx.sym.var('y'), name='lro')
>>> it = mx.io.NDArrayIter(np.ones((8, 2)), np.full((8,), 3.0), batch_size=4, label_name='y')
>>> mod = SVRGModule(net, data_names=['data'], label_names=['y'], update_freq=2)
>>> mod.fit(it, num_epoch=2, optimizer_params={'learning_rate': 0.1}, eval_metric='mse')
>>> bool(mod.score(it, 'mse')[0][1] < 9.0)
True
"""
from __future__ import annotations

import logging
from typing import Any

from ... import ndarray as nd
from ...base import ParamError
from ...module import Module
from ...module.executor_group import create_kvstore, global_batch_size
from .svrg_optimizer import _SVRGOptimizer

__all__ = ["SVRGModule"]


class SVRGModule(Module):
    """A :class:`~symjit.module.Module` whose ``update`` applies the SVRG gradient; takes Module's
    arguments and ``update_freq`` (a positive int: the full gradient is recomputed every that many
    epochs of :meth:`fit`, or whenever :meth:`update_full_grads` is called)."""

    def __init__(self, symbol: Any, data_names: Any = ("data",), label_names: Any = ("softmax_label",),
                 logger: Any = logging, context: Any = None, work_load_list: list | None = None,
                 fixed_param_names: Any = None, state_names: Any = None, group2ctxs: Any = None,
                 compression_params: Any = None, update_freq: int | None = None):
        if isinstance(update_freq, bool) or not isinstance(update_freq, int):
            raise TypeError(f"SVRGModule: update_freq must be an int (epochs between full gradients), "
                            f"got {update_freq!r}")
        if update_freq <= 0:
            raise ParamError(f"SVRGModule: update_freq must be a positive int, got {update_freq}")
        kwargs = dict(data_names=data_names, label_names=label_names, logger=logger, context=context,
                      work_load_list=work_load_list, fixed_param_names=fixed_param_names,
                      state_names=state_names, group2ctxs=group2ctxs, compression_params=compression_params)
        super().__init__(symbol, **kwargs)
        self.update_freq = update_freq
        self._mod_aux = Module(symbol, **kwargs)
        self._param_dict: list[dict] | None = None
        self._ctx_len = len(self._context)

    # -- binding and parameters ---------------------------------------------------------------
    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Bind this module and, for training, the snapshot module with the same shapes."""
        super().bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind, shared_module,
                     grad_req)
        if for_training:
            self._mod_aux.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind,
                               shared_module._mod_aux if isinstance(shared_module, SVRGModule) else None,
                               grad_req)

    def reshape(self, data_shapes: Any, label_shapes: Any = None) -> None:
        """Re-bind both modules for new input shapes."""
        super().reshape(data_shapes, label_shapes)
        if self._mod_aux.binded:
            self._mod_aux.reshape(data_shapes, label_shapes)

    def init_params(self, *args: Any, **kwargs: Any) -> None:
        """Module's ``init_params``; a snapshot not taken yet starts as a copy of these weights
        (:meth:`update_full_grads` takes the next one)."""
        super().init_params(*args, **kwargs)
        if self._mod_aux.binded and not self._mod_aux.params_initialized:
            self._mod_aux.set_params(*self.get_params())

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),), force_init: bool = False) -> None:
        """Install ``optimizer`` wrapped in an ``_SVRGOptimizer`` (parameters named ``*_full``, the
        full gradients in a KVStore, are assigned rather than optimized)."""
        self._need("init_optimizer", binded=True, params=True)
        if self.optimizer_initialized and not force_init:
            super().init_optimizer(kvstore, optimizer, optimizer_params, force_init)   # its warning
            return
        arg_params = self.get_params()[0]
        self._param_dict = [{name: nd.zeros(value.shape, ctx, dtype=value.dtype)
                             for name, value in arg_params.items()} for ctx in self._context]
        kv, on_kv = create_kvstore(kvstore, self._ctx_len, self._arg_params)
        svrg = self._create_optimizer(optimizer, kv, on_kv, optimizer_params)
        super().init_optimizer(kvstore=kv, optimizer=svrg, force_init=force_init)
        if self._kvstore is not None:
            group = self._exec_group
            for idx, name in enumerate(group.param_names):
                self._kvstore.init(name + "_full", nd.zeros(self._arg_params[name].shape))
                if self._update_on_kvstore:
                    self._kvstore.pull(name + "_full", group.param_arrays[idx], priority=-idx)

    def _create_optimizer(self, default: Any, kv: Any, on_kv: bool, optimizer_params: Any) -> _SVRGOptimizer:
        names = self._exec_group.param_names
        n = self._ctx_len
        idx2name = dict(enumerate(names)) if on_kv else {
            i * n + k: name for i, name in enumerate(names) for k in range(n)}
        for name in self._param_dict[0]:
            idx2name[max(idx2name, default=-1) + 1] = name + "_full"
        params = dict(optimizer_params or {})
        params.setdefault("rescale_grad", 1.0 / global_batch_size(self._exec_group.batch_size, kv))
        params.setdefault("sym", self._symbol)
        return _SVRGOptimizer(default_optimizer=default, param_idx2name=idx2name, **params)

    # -- computation ------------------------------------------------------------------------
    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Forward this module and, when it trains, the snapshot module on the same batch."""
        super().forward(data_batch, is_train)
        if (self.for_training if is_train is None else is_train) and self._mod_aux.binded:
            self._mod_aux.forward(data_batch, True)

    def backward(self, out_grads: Any = None) -> None:
        """Backward through both modules."""
        super().backward(out_grads)
        if self._mod_aux.binded:
            self._mod_aux.backward(out_grads)

    def update(self) -> None:
        """Replace each gradient ``g(w)`` by ``g(w) - g(w~) + mu``, then apply the optimizer."""
        self._need("update", binded=True, params=True, optimizer=True)
        group, snap = self._exec_group, self._mod_aux._exec_group
        for index, name in enumerate(group.param_names):
            for ctx in range(self._ctx_len):
                grad = group.grad_arrays[index][ctx]
                if grad is None:
                    continue
                grad -= snap.grad_arrays[index][ctx]
                grad += self._param_dict[ctx][name]
        super().update()

    def update_full_grads(self, train_data: Any) -> None:
        """Take the snapshot ``w~`` (the current weights) and compute ``mu``: the gradient at
        ``w~`` summed over each batch of ``train_data`` and divided by the number of batches (a
        padded last batch counts for its real share)."""
        self._need("update_full_grads", binded=True, params=True, optimizer=True)
        self._mod_aux.set_params(*self.get_params())
        names = self._exec_group.param_names
        sums = [{name: None for name in names} for _ in range(self._ctx_len)]
        train_data.reset()
        nbatch, pad = 0, 0
        for batch in train_data:
            self._mod_aux.forward(batch, is_train=True)
            self._mod_aux.backward()
            for ctx in range(self._ctx_len):
                for index, name in enumerate(names):
                    grad = self._mod_aux._exec_group.grad_arrays[index][ctx]
                    if grad is not None:
                        sums[ctx][name] = grad.copy() if sums[ctx][name] is None else sums[ctx][name] + grad
            nbatch += 1
            pad = getattr(batch, "pad", 0) or 0
        if nbatch == 0:
            raise ParamError("SVRGModule.update_full_grads: train_data gave no batch")
        batches = nbatch - pad / train_data.batch_size
        for name in names:
            for ctx in range(self._ctx_len):
                if sums[ctx][name] is not None:
                    self._param_dict[ctx][name] = sums[ctx][name] / batches
            if self._kvstore is not None:
                self._accumulate_kvstore(name, [self._param_dict[ctx][name] for ctx in range(self._ctx_len)])

    def _accumulate_kvstore(self, key: str, value: list) -> None:
        """Sum ``value`` (one full gradient per device) over devices and workers in the KVStore key
        ``key + '_full'`` and give each device the average over devices."""
        self._kvstore.push(key + "_full", value)
        self._kvstore.barrier()
        self._kvstore.pull(key + "_full", value)
        for ctx in range(self._ctx_len):
            self._param_dict[ctx][key] = value[ctx] / self._ctx_len

    def _fit_epoch(self, epoch: int, train_data: Any, eval_metric: Any, batch_end_callback: Any,
                   monitor: Any) -> list:
        if epoch % self.update_freq == 0:
            self.update_full_grads(train_data)
            train_data.reset()
        return super()._fit_epoch(epoch, train_data, eval_metric, batch_end_callback, monitor)
