"""``mx.model``: checkpoints and MXNet 1.x's ``FeedForward`` model.

A checkpoint is ``prefix-symbol.json`` plus ``prefix-%04d.params`` (an NDArray dict file with keys
``arg:<name>`` and ``aux:<name>``), readable by MXNet 1.x and written by it.

>>> import os, tempfile, symjit as mx
>>> prefix = os.path.join(tempfile.mkdtemp(), 'net')
>>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
>>> mx.model.save_checkpoint(prefix, 1, net, {'fc_weight': mx.nd.ones((2, 3))}, {})
>>> sym, arg, aux = mx.model.load_checkpoint(prefix, 1)
>>> sym.list_arguments(), arg['fc_weight'].shape, aux
(['data', 'fc_weight', 'fc_bias'], (2, 3), {})
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import io as _io
from . import metric as _metric
from . import ndarray as nd
from . import optimizer as opt
from .base import FormatError, MXNetError, ParamError, ShapeError, shape_str
from .callback import BatchEndParam, LogValidationMetricsCallback, save_checkpoint
from .context import Context, cpu
from .dist import rank_tag
from .initializer import InitDesc, Uniform
from .module.executor_group import (
    DataParallelExecutorGroup,
    create_kvstore,
    global_batch_size,
    initialize_kvstore,
    update_params,
    update_params_on_kvstore,
)
from .symbol import Symbol
from .symbol import load as _load_symbol

# module-level default arguments (MXNet's defaults; shared instances, never mutated)
DEFAULT_INITIALIZER = Uniform(0.01)
LOG_VALIDATION = LogValidationMetricsCallback()

__all__ = ["save_checkpoint", "load_checkpoint", "load_params", "FeedForward", "BatchEndParam"]


# -- checkpoints ------------------------------------------------------------------------------

def _split_params(save_dict: Any, fname: str) -> tuple[dict, dict]:
    if not isinstance(save_dict, dict):
        raise FormatError(f"load_checkpoint: {fname!r} holds an unnamed list of arrays, expected "
                          "'arg:<name>'/'aux:<name>' keys")
    arg_params, aux_params = {}, {}
    for key, value in save_dict.items():
        kind, _, name = key.partition(":")
        if kind == "arg" and name:
            arg_params[name] = value
        elif kind == "aux" and name:
            aux_params[name] = value
        else:
            raise FormatError(f"load_checkpoint: {fname!r} has key {key!r}; expected 'arg:<name>' "
                              "or 'aux:<name>'")
    return arg_params, aux_params


def load_params(prefix: str, epoch: int) -> tuple[dict, dict]:
    """``(arg_params, aux_params)`` from ``prefix-%04d.params``."""
    fname = f"{prefix}-{int(epoch):04d}.params"
    return _split_params(_read(nd.load, fname), fname)


def _read(loader: Callable, fname: str) -> Any:
    try:
        return loader(fname)
    except OSError as exc:
        raise MXNetError(f"load_checkpoint: cannot read {fname!r}: {exc.strerror or exc}") from exc


def load_checkpoint(prefix: str, epoch: int) -> tuple[Symbol, dict, dict]:
    """``(symbol, arg_params, aux_params)`` from ``prefix-symbol.json`` and ``prefix-%04d.params``.

    >>> import os, tempfile, symjit as mx
    >>> prefix = os.path.join(tempfile.mkdtemp(), 'm')
    >>> save_checkpoint(prefix, 2, mx.sym.Variable('x'), {}, {'bn_moving_mean': mx.nd.zeros((3,))})
    >>> load_checkpoint(prefix, 2)[2]['bn_moving_mean'].shape
    (3,)
    """
    symbol = _read(_load_symbol, f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


# -- FeedForward helpers ----------------------------------------------------------------------

def _as_list(obj: Any) -> list:
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _contexts(ctx: Any) -> list[Context]:
    ctxs = [cpu()] if ctx is None else _as_list(ctx)
    for c in ctxs:
        if not isinstance(c, Context):
            raise ParamError(f"FeedForward: ctx must be a Context or a list of Contexts, got {c!r}")
    return ctxs


def _float32(x: Any) -> Any:
    """numpy inputs become float32, as MXNet's ``mx.nd.array`` makes them."""
    return x.astype(np.float32) if isinstance(x, np.ndarray) else x


def _check_arguments(symbol: Symbol) -> None:
    names = symbol.list_arguments()
    aux = symbol.list_auxiliary_states()
    dup = sorted({n for n in names + aux if (names + aux).count(n) > 1})
    if dup:
        raise ParamError(f"FeedForward: the symbol has duplicated argument/aux names {dup}")


def _call_all(callbacks: Any, *args: Any) -> None:
    for cb in _as_list(callbacks):
        cb(*args)


class FeedForward:
    """MXNet 1.x's (deprecated there) model class: ``fit``, ``predict``, ``score``, ``save``.

    Extra keyword arguments go to the optimizer (``learning_rate``, ``momentum``, ``wd``...).

    >>> import numpy as np, symjit as mx
    >>> net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2,
    ...                            name='fc'), name='softmax')
    >>> model = mx.model.FeedForward(net, num_epoch=1, numpy_batch_size=4, learning_rate=0.1)
    >>> model.fit(np.ones((8, 3)), np.array([0, 1] * 4))
    >>> model.predict(np.ones((5, 3))).shape
    (5, 2)
    """

    def __init__(self, symbol: Symbol, ctx: Any = None, num_epoch: int | None = None,
                 epoch_size: int | None = None, optimizer: Any = "sgd",
                 initializer: Any = DEFAULT_INITIALIZER,
                 numpy_batch_size: int = 128, arg_params: dict | None = None,
                 aux_params: dict | None = None, allow_extra_params: bool = False,
                 begin_epoch: int = 0, **kwargs: Any):
        if not isinstance(symbol, Symbol):
            raise ParamError(f"FeedForward: symbol must be a Symbol, got {type(symbol).__name__}")
        _check_arguments(symbol)
        self.symbol = symbol
        self.ctx = _contexts(ctx)
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.optimizer = optimizer
        self.initializer = initializer
        self.numpy_batch_size = int(numpy_batch_size)
        self.arg_params = arg_params
        self.aux_params = aux_params
        self.allow_extra_params = allow_extra_params
        self.begin_epoch = begin_epoch
        self.kwargs = dict(kwargs)
        self._pred_exec = None
        self._pred_shapes: Any = None

    # -- inputs and parameters ---------------------------------------------------------------
    def _init_iter(self, X: Any, y: Any, is_train: bool) -> Any:
        if isinstance(X, (np.ndarray, nd.NDArray)):
            if y is None:
                if is_train:
                    raise ParamError("FeedForward.fit: y must be given when X is an array")
                y = np.zeros(X.shape[0], dtype=np.float32)
            if not isinstance(y, (np.ndarray, nd.NDArray)):
                raise ParamError(f"FeedForward: y must be a numpy array or NDArray, got {type(y).__name__}")
            if X.shape[0] != y.shape[0]:
                raise ShapeError(f"FeedForward: X has shape {shape_str(X.shape)} and y "
                                 f"{shape_str(y.shape)}: they need the same number of samples")
            y = y.asnumpy() if isinstance(y, nd.NDArray) else y
            if y.ndim == 2 and y.shape[1] == 1:
                y = y.reshape(-1)
            if y.ndim != 1:
                raise ShapeError(f"FeedForward: y must be 1-D (or (n, 1)), got shape {shape_str(y.shape)}")
            batch = min(X.shape[0], self.numpy_batch_size)
            return _io.NDArrayIter(_float32(X), _float32(y), batch, shuffle=is_train,
                                   last_batch_handle="roll_over" if is_train else "pad")
        if not isinstance(X, _io.DataIter) and not hasattr(X, "provide_data"):
            raise ParamError(f"FeedForward: X must be a DataIter, an NDArray or a numpy array, "
                             f"got {type(X).__name__}")
        return X

    def _init_eval_iter(self, eval_data: Any) -> Any:
        if eval_data is None:
            return None
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            X, y = eval_data
            if isinstance(X, (np.ndarray, nd.NDArray)):
                return self._init_iter(X, y, is_train=False)
        return self._init_iter(eval_data, None, is_train=False)

    def _init_params(self, inputs: list, overwrite: bool = False) -> tuple[list, list, list]:
        """Create and initialise every parameter not given in ``arg_params``/``aux_params``."""
        shapes = {d[0]: tuple(d[1]) for d in inputs}
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**shapes)
        if arg_shapes is None:
            raise ShapeError(f"FeedForward: cannot infer the parameter shapes from inputs {shapes}")
        arg_types, _, aux_types = self.symbol.infer_type()
        arg_names = self.symbol.list_arguments()
        aux_names = self.symbol.list_auxiliary_states()
        param_names = [n for n in arg_names if n not in shapes]
        arg_types = arg_types or [np.float32] * len(arg_names)
        aux_types = aux_types or [np.float32] * len(aux_names)
        arg = {n: nd.zeros(s, dtype=t) for n, s, t in zip(arg_names, arg_shapes, arg_types)
               if n in param_names}
        aux = {n: nd.zeros(s, dtype=t) for n, s, t in zip(aux_names, aux_shapes, aux_types)}
        self._fill(arg, self.arg_params, overwrite)
        self._fill(aux, self.aux_params, overwrite)
        self.arg_params, self.aux_params = arg, aux
        return arg_names, param_names, aux_names

    def _fill(self, new: dict, given: dict | None, overwrite: bool) -> None:
        given = given or {}
        extra = sorted(set(given) - set(new))
        if extra and not self.allow_extra_params:
            raise ParamError(f"FeedForward: parameters {extra} are not used by the symbol "
                             "(pass allow_extra_params=True to ignore them)")
        attrs = self.symbol.attr_dict()
        for name in sorted(new):
            arr = new[name]
            if name in given and not overwrite:
                src = given[name]
                if tuple(src.shape) != arr.shape:
                    raise ShapeError(f"FeedForward: parameter {name!r} has shape "
                                     f"{shape_str(tuple(src.shape))}, the symbol needs "
                                     f"{shape_str(arr.shape)}")
                arr[:] = src.asnumpy() if isinstance(src, nd.NDArray) else np.asarray(src)
            else:
                self.initializer(InitDesc(name, attrs.get(name)), arr)

    # -- training ----------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, eval_data: Any = None, eval_metric: Any = "acc",
            epoch_end_callback: Any = None, batch_end_callback: Any = None, kvstore: Any = "local",
            logger: Any = None, work_load_list: list | None = None, monitor: Any = None,
            eval_end_callback: Any = LOG_VALIDATION,
            eval_batch_end_callback: Any = None) -> None:
        """Train for ``num_epoch`` epochs on ``X`` (a DataIter, or arrays with labels ``y``)."""
        if self.num_epoch is None:
            raise ParamError("FeedForward.fit: num_epoch must be set (FeedForward(num_epoch=...))")
        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        logger = logger or logging
        inputs = [(d[0], d[1]) for d in list(data.provide_data) + list(data.provide_label or [])]
        _, param_names, _ = self._init_params(inputs)
        eval_metric = _metric.create(eval_metric)
        work_load_list = work_load_list or [1] * len(self.ctx)
        if len(work_load_list) != len(self.ctx):
            raise ParamError(f"FeedForward.fit: work_load_list has {len(work_load_list)} entries for "
                             f"{len(self.ctx)} contexts")
        group = DataParallelExecutorGroup(self.symbol, self.ctx, work_load_list, data.provide_data,
                                          data.provide_label, param_names, True, False, logger=logger)
        group.set_params(self.arg_params, self.aux_params)
        if monitor is not None:
            group.install_monitor(monitor)
        kv, on_kv, updater = self._init_update(group, kvstore)
        for epoch in range(self.begin_epoch, self.num_epoch):
            tic = time.time()
            eval_metric.reset()
            self._train_epoch(epoch, data, group, eval_metric, (kv, on_kv, updater),
                              batch_end_callback, monitor)
            for name, value in eval_metric.get_global_name_value():   # Speedometer resets local
                logger.info(rank_tag() + "Epoch[%d] Train-%s=%f", epoch, name, value)
            logger.info(rank_tag() + "Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            group.get_params(self.arg_params, self.aux_params)
            _call_all(epoch_end_callback, epoch, self.symbol, self.arg_params, self.aux_params)
            if eval_data is not None:
                self._evaluate(epoch, eval_data, eval_metric, eval_end_callback, eval_batch_end_callback)

    def _init_update(self, group: DataParallelExecutorGroup, kvstore: Any) -> tuple:
        kv, on_kv = create_kvstore(kvstore, len(self.ctx), self.arg_params)
        names = group.param_names
        n = len(self.ctx)
        idx2name = dict(enumerate(names)) if on_kv else {
            i * n + k: name for i, name in enumerate(names) for k in range(n)}
        optimizer = self.optimizer
        if isinstance(optimizer, str):
            params = {"rescale_grad": 1.0 / global_batch_size(group.batch_size, kv), **self.kwargs}
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name, **params)
        elif not isinstance(optimizer, opt.Optimizer):
            raise ParamError(f"FeedForward: optimizer must be a name or an Optimizer, got "
                             f"{type(optimizer).__name__}")
        updater = None
        if kv is not None:
            if on_kv:
                kv.set_optimizer(optimizer)
            initialize_kvstore(kv, group.param_arrays, self.arg_params, names, on_kv)
        if not on_kv:
            updater = opt.get_updater(optimizer)
        return kv, on_kv, updater

    def _train_epoch(self, epoch: int, data: Any, group: DataParallelExecutorGroup, eval_metric: Any,
                     update: tuple, batch_end_callback: Any, monitor: Any) -> None:
        kv, on_kv, updater = update
        nbatch = 0
        while True:
            do_reset = True
            for batch in data:
                if monitor is not None:
                    monitor.tic()
                group.forward(batch, is_train=True)
                group.backward()
                if on_kv:
                    update_params_on_kvstore(group.param_arrays, group.grad_arrays, kv, group.param_names)
                else:
                    update_params(group.param_arrays, group.grad_arrays, updater, len(self.ctx), kv,
                                  group.param_names)
                if monitor is not None:
                    monitor.toc_print()
                group.update_metric(eval_metric, batch.label)
                nbatch += 1
                _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
                if self.epoch_size is not None and nbatch >= self.epoch_size:
                    do_reset = False
                    break
            if do_reset:
                data.reset()
            if self.epoch_size is None or nbatch >= self.epoch_size:
                break

    def _evaluate(self, epoch: int, eval_data: Any, eval_metric: Any, end_callback: Any,
                  batch_callback: Any) -> None:
        eval_metric.reset()
        eval_data.reset()
        nbatch = 0
        ex = self._predictor(eval_data.provide_data)
        for nbatch, batch in enumerate(eval_data):
            self._forward(ex, eval_data.provide_data, batch)
            self._update_metric(ex, eval_metric, batch)
            _call_all(batch_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
        _call_all(end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))

    # -- inference ---------------------------------------------------------------------------
    def _predictor(self, provide_data: list) -> Any:
        """An inference executor on the first context for these data shapes (params copied)."""
        if self.arg_params is None:
            raise MXNetError("FeedForward.predict: the model has no parameters; fit or load it first")
        shapes = {d[0]: tuple(d[1]) for d in provide_data}
        if self._pred_exec is None or self._pred_shapes != shapes:
            types = {d.name: d.dtype for d in provide_data if getattr(d, "dtype", None) is not None}
            self._pred_exec = self.symbol.simple_bind(self.ctx[0], grad_req="null", type_dict=types,
                                                      **shapes)
            self._pred_shapes = shapes
        self._pred_exec.copy_params_from(self.arg_params, self.aux_params,
                                         allow_extra_params=self.allow_extra_params)
        return self._pred_exec

    @staticmethod
    def _forward(ex: Any, provide_data: list, batch: Any) -> None:
        for desc, value in zip(provide_data, batch.data):
            ex.arg_dict[desc[0]][:] = value.asnumpy() if isinstance(value, nd.NDArray) else value
        ex.forward(is_train=False)

    @staticmethod
    def _update_metric(ex: Any, eval_metric: Any, batch: Any) -> None:
        real = ex.outputs[0].shape[0] - (batch.pad or 0)
        preds = [nd.array(o.asnumpy()[:real], dtype=o.dtype) for o in ex.outputs]
        labels = [nd.array(lb.asnumpy()[:real], dtype=lb.dtype) for lb in batch.label or []]
        eval_metric.update(labels, preds)

    def predict(self, X: Any, num_batch: int | None = None, return_data: bool = False,
                reset: bool = True) -> Any:
        """Outputs (numpy) for ``X``; the padding of the last batch is cut off. With one output a
        single array, else a list; with ``return_data`` also the data and labels."""
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        outputs: list[list[np.ndarray]] = []
        data_list: list[list[np.ndarray]] = []
        label_list: list[list[np.ndarray]] = []
        ex = self._predictor(X.provide_data)
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            self._forward(ex, X.provide_data, batch)
            real = ex.outputs[0].shape[0] - (batch.pad or 0)
            outputs.append([o.asnumpy()[:real] for o in ex.outputs])
            if return_data:
                data_list.append([d.asnumpy()[:real] for d in batch.data])
                label_list.append([lb.asnumpy()[:real] for lb in batch.label or []])
        if not outputs:
            return [] if not return_data else ([], [], [])
        result = [np.concatenate(parts) for parts in zip(*outputs)]
        result = result[0] if len(result) == 1 else result
        if not return_data:
            return result
        data = [np.concatenate(parts) for parts in zip(*data_list)]
        label = [np.concatenate(parts) for parts in zip(*label_list)]
        return result, data[0] if len(data) == 1 else data, label[0] if len(label) == 1 else label

    def score(self, X: Any, eval_metric: Any = "acc", num_batch: int | None = None,
              batch_end_callback: Any = None, reset: bool = True) -> Any:
        """The metric's value over ``X`` (padding samples are not counted)."""
        X = self._init_iter(X, None, is_train=False)
        eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        if reset:
            X.reset()
        ex = self._predictor(X.provide_data)
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            self._forward(ex, X.provide_data, batch)
            self._update_metric(ex, eval_metric, batch)
            _call_all(batch_end_callback, BatchEndParam(0, i, eval_metric, locals()))
        return eval_metric.get()[1]

    # -- persistence -------------------------------------------------------------------------
    def save(self, prefix: str, epoch: int | None = None) -> None:
        """Write a checkpoint (epoch defaults to ``num_epoch``)."""
        if epoch is None:
            epoch = self.num_epoch
        if epoch is None:
            raise ParamError("FeedForward.save: give epoch (num_epoch is not set)")
        if self.arg_params is None:
            raise MXNetError("FeedForward.save: the model has no parameters; fit it first")
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params)

    @staticmethod
    def load(prefix: str, epoch: int, ctx: Any = None, **kwargs: Any) -> FeedForward:
        """A FeedForward from a checkpoint (training would continue from ``epoch``)."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params,
                           begin_epoch=epoch, **kwargs)

    @staticmethod
    def create(symbol: Symbol, X: Any, y: Any = None, ctx: Any = None, num_epoch: int | None = None,
               epoch_size: int | None = None, optimizer: Any = "sgd", initializer: Any = DEFAULT_INITIALIZER,
               eval_data: Any = None, eval_metric: Any = "acc", epoch_end_callback: Any = None,
               batch_end_callback: Any = None, kvstore: Any = "local", logger: Any = None,
               work_load_list: list | None = None,
               eval_end_callback: Callable | None = LOG_VALIDATION,
               eval_batch_end_callback: Any = None, **kwargs: Any) -> FeedForward:
        """Build a FeedForward and ``fit`` it."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
                  kvstore=kvstore, logger=logger, work_load_list=work_load_list,
                  eval_end_callback=eval_end_callback, eval_batch_end_callback=eval_batch_end_callback)
        return model
