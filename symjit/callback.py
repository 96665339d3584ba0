"""``mx.callback``: MXNet 1.x's training callbacks (speed and metric logging, checkpoints).

Batch-end callbacks are called with a :class:`BatchEndParam` ``(epoch, nbatch, eval_metric,
locals)``; epoch-end callbacks with ``(iter_no, symbol, arg_params, aux_params)``. Messages go
to the root logger through :mod:`logging`, as in MXNet; in a distributed job of several workers
each line starts with ``Rank[r] ``.

>>> import symjit as mx
>>> speedometer = mx.callback.Speedometer(batch_size=32, frequent=10)
>>> speedometer(mx.callback.BatchEndParam(epoch=0, nbatch=0, eval_metric=None, locals=None))
"""
from __future__ import annotations

import logging
import math
import time
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np

from . import ndarray as nd
from .base import ParamError, write_atomic
from .dist import rank_tag, world

__all__ = ["BatchEndParam", "Speedometer", "ProgressBar", "LogValidationMetricsCallback",
           "do_checkpoint", "module_checkpoint", "log_train_metric", "save_checkpoint"]

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])
BatchEndParam.__doc__ = """What a batch-end callback receives: ``(epoch, nbatch, eval_metric, locals)``."""


def _positive_int(value: Any, where: str, arg: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParamError(f"{where}: {arg} must be a positive integer, got {value!r}")
    return value


def _reset_local(metric: Any) -> None:
    (getattr(metric, "reset_local", None) or metric.reset)()


def _as_nd(value: Any, name: str) -> nd.NDArray:
    if isinstance(value, nd.NDArray):
        return value
    try:
        host = np.asarray(value)
    except Exception:
        host = None
    if host is None or host.dtype.kind not in "biuf":
        raise ParamError(f"save_checkpoint: parameter {name!r} is a {type(value).__name__}, "
                         f"not an NDArray")
    return nd.array(host, dtype=host.dtype)


def save_checkpoint(prefix: str, epoch: int, symbol: Any, arg_params: dict, aux_params: dict) -> None:
    """Write ``prefix-symbol.json`` (unless ``symbol`` is None) and ``prefix-%04d.params`` with
    ``arg:``/``aux:`` keys (``mx.model.save_checkpoint``, the same function). Both files are
    written atomically.

    >>> import os, tempfile, symjit as mx
    >>> prefix = os.path.join(tempfile.mkdtemp(), 'net')
    >>> save_checkpoint(prefix, 3, mx.sym.Variable('x'), {'w': mx.nd.ones((2,))}, {})
    >>> sorted(mx.nd.load(prefix + '-0003.params'))
    ['arg:w']
    """
    if symbol is not None:
        write_atomic(f"{prefix}-symbol.json", symbol.tojson())
    save_dict = {f"arg:{k}": _as_nd(v, k) for k, v in (arg_params or {}).items()}
    save_dict.update({f"aux:{k}": _as_nd(v, k) for k, v in (aux_params or {}).items()})
    param_name = f"{prefix}-{int(epoch):04d}.params"
    write_atomic(param_name, nd.save_tobuffer(save_dict))
    logging.info('Saved checkpoint to "%s"', param_name)


def do_checkpoint(prefix: str, period: int = 1) -> Callable:
    """An epoch-end callback saving a checkpoint every ``period`` epochs (epoch number ``iter_no+1``).

    In a distributed job only rank 0 writes (every worker holds the same parameters).

    >>> import os, tempfile, symjit as mx
    >>> prefix = os.path.join(tempfile.mkdtemp(), 'net')
    >>> cb = mx.callback.do_checkpoint(prefix, period=2)
    >>> cb(0, mx.sym.Variable('x'), {}, {}); cb(1, mx.sym.Variable('x'), {}, {})
    >>> sorted(os.listdir(os.path.dirname(prefix)))
    ['net-0002.params', 'net-symbol.json']
    """
    return every_epochs(period, lambda epoch, sym, arg, aux: save_checkpoint(prefix, epoch, sym, arg, aux))


def every_epochs(period: int, save: Callable) -> Callable:
    """An epoch-end callback calling ``save(epoch, sym, arg, aux)`` (epoch number ``iter_no + 1``)
    every ``period`` epochs, on rank 0 only in a distributed job: the checkpoint callbacks' rule."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % period == 0 and world()[0] == 0:
            save(iter_no + 1, sym, arg, aux)
    return _callback


def module_checkpoint(mod: Any, prefix: str, period: int = 1,
                      save_optimizer_states: bool = False) -> Callable:
    """An epoch-end callback calling ``mod.save_checkpoint(prefix, epoch, save_optimizer_states)``
    every ``period`` epochs (on rank 0 only in a distributed job)."""
    return every_epochs(period, lambda epoch, *_: mod.save_checkpoint(prefix, epoch, save_optimizer_states))


def log_train_metric(period: int, auto_reset: bool = False) -> Callable:
    """A batch-end callback logging ``Iter[e] Batch[n] Train-<name>=<value>`` every ``period`` batches.

    >>> import symjit as mx
    >>> cb = mx.callback.log_train_metric(5)
    >>> cb(mx.callback.BatchEndParam(0, 5, mx.metric.create('acc'), None))
    """
    period = _positive_int(period, "log_train_metric", "period")

    def _callback(param: Any) -> None:
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info(rank_tag() + "Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name,
                             value)
            if auto_reset:
                _reset_local(param.eval_metric)
    return _callback


class Speedometer:
    """Log training speed and the metric's values every ``frequent`` batches.

    The line is ``Epoch[e] Batch [n]\\tSpeed: s samples/sec\\t<name>=<value>...`` (one
    ``\\t<name>=<value>`` per metric value), where the speed counts ``frequent * batch_size``
    samples since the previous line. The first call of an epoch only starts the clock. With
    ``auto_reset`` the metric's local statistics are reset after each line.

    >>> import symjit as mx
    >>> s = mx.callback.Speedometer(batch_size=64, frequent=100, auto_reset=False)
    >>> s.frequent, s.batch_size
    (100, 64)
    """

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True):
        self.batch_size = _positive_int(batch_size, "Speedometer", "batch_size")
        self.frequent = _positive_int(frequent, "Speedometer", "frequent")
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0.0
        self.last_count = 0

    def _speed(self) -> float:
        elapsed = time.time() - self.tic
        return self.frequent * self.batch_size / elapsed if elapsed > 0 else math.inf

    def __call__(self, param: Any) -> None:
        """Log (when ``param.nbatch`` is a multiple of ``frequent``) and restart the clock."""
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        speed = self._speed()
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            if self.auto_reset:
                _reset_local(param.eval_metric)
            msg = rank_tag() + "Epoch[%d] Batch [%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
            logging.info(msg, param.epoch, count, speed, *[x for nv in name_value for x in nv])
        else:
            logging.info(rank_tag() + "Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count,
                         speed)
        self.tic = time.time()


class ProgressBar:
    """Log a progress bar ``[====----] p%`` of the batches processed within the epoch.

    >>> import symjit as mx
    >>> mx.callback.ProgressBar(total=4, length=8).bar(2)
    '[====----] 50%'
    """

    def __init__(self, total: int, length: int = 80):
        self.total = _positive_int(total, "ProgressBar", "total")
        self.bar_len = _positive_int(length, "ProgressBar", "length")

    def bar(self, count: int) -> str:
        """The bar text for ``count`` batches done (clipped to ``[0, total]``)."""
        count = min(max(int(count), 0), self.total)
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        return f"[{'=' * filled}{'-' * (self.bar_len - filled)}] {percents}%"

    def __call__(self, param: Any) -> None:
        """Log the bar for ``param.nbatch``."""
        logging.info("%s\r", self.bar(param.nbatch))


class LogValidationMetricsCallback:
    """An epoch-end (score) callback logging ``Epoch[e] Validation-<name>=<value>`` per metric value.

    >>> import symjit as mx
    >>> LogValidationMetricsCallback()(mx.callback.BatchEndParam(0, 0, None, None))
    """

    def __call__(self, param: Any) -> None:
        """Log every ``(name, value)`` of ``param.eval_metric`` (nothing when it is None)."""
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info(rank_tag() + "Epoch[%d] Validation-%s=%f", param.epoch, name, value)
