"""Event handlers of :class:`~symjit.gluon.contrib.estimator.Estimator`: the six event mixins
(``TrainBegin``, ``EpochBegin``, ``BatchBegin``, ``BatchEnd``, ``EpochEnd``, ``TrainEnd``) a
handler inherits from to be called at those events, and the handlers the estimator adds by
default or users add: :class:`StoppingHandler`, :class:`GradientUpdateHandler`,
:class:`MetricHandler`, :class:`ValidationHandler`, :class:`LoggingHandler`,
:class:`CheckpointHandler` and :class:`EarlyStoppingHandler`.

The estimator calls the handlers of an event in ascending ``priority`` (0 when a handler has
none; gradient update -2000, metrics and validation -1000, logging last); a ``batch_end`` or
``epoch_end`` returning True ends the epoch or the training.

>>> class CountEpochs(EpochEnd):
...     def __init__(self):
...         self.seen = 0
...     def epoch_end(self, estimator, *args, **kwargs):
...         self.seen += 1
...         return self.seen == 2          # stop after two epochs
>>> handler = CountEpochs()
>>> handler.epoch_end(None), handler.epoch_end(None)
(False, True)
"""
from __future__ import annotations

import time
import warnings
from typing import Any

from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as LossMetric
from ._events import (
    BatchBegin,
    BatchEnd,
    EpochBegin,
    EpochEnd,
    TrainBegin,
    TrainEnd,
    _improved,
    _improvement,
)
from .checkpoint import CheckpointHandler
from .utils import _check_metrics

__all__ = ["TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd",
           "StoppingHandler", "MetricHandler", "ValidationHandler", "LoggingHandler",
           "CheckpointHandler", "EarlyStoppingHandler", "GradientUpdateHandler"]


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Ends the training once ``max_epoch`` epochs or ``max_batch`` batches are done (the
    estimator's ``max_epoch``/``max_batch``, read at each check: a handler that shortens them at
    ``train_begin``, as a resumed :class:`CheckpointHandler` does, is followed).

    >>> s = StoppingHandler(max_batch=2)
    >>> s.batch_end(None), s.batch_end(None)
    (False, True)
    """

    def __init__(self, max_epoch: int | None = None, max_batch: int | None = None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def _limits(self, estimator: Any) -> None:
        if estimator is not None:
            self.max_epoch = estimator.max_epoch
            self.max_batch = estimator.max_batch

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Reset the counters."""
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Count the batch; True once ``max_batch`` batches are done."""
        self._limits(estimator)
        self.current_batch += 1
        if self.max_batch and self.current_batch >= self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Count the epoch; True once ``max_epoch`` epochs are done (or the batches ran out)."""
        self._limits(estimator)
        self.current_epoch += 1
        if self.max_epoch and self.current_epoch >= self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets ``metrics`` at each epoch's beginning and updates them after each batch: a
    :class:`mx.metric.Loss <symjit.metric.Loss>` with the batch's loss values, the others with its
    labels and predictions.

    >>> import symjit as mx
    >>> acc = mx.metric.Accuracy()
    >>> h = MetricHandler([acc])
    >>> h.batch_end(None, pred=[mx.nd.array([[0.1, 0.9]])], label=[mx.nd.array([1])], loss=[])
    >>> acc.get()
    ('accuracy', 1.0)
    """

    def __init__(self, metrics: Any, priority: float = -1000):
        self.metrics = _check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Reset the metrics."""
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Update the metrics with the batch's ``pred``, ``label`` and ``loss``."""
        for metric in self.metrics:
            if isinstance(metric, LossMetric):
                metric.update(0, kwargs["loss"])
            else:
                metric.update(kwargs["label"], kwargs["pred"])


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs ``eval_fn(val_data=, batch_axis=, event_handlers=)`` (typically the estimator's
    :meth:`~symjit.gluon.contrib.estimator.Estimator.evaluate`) every ``epoch_period`` epochs
    and, if set, every ``batch_period`` batches.

    >>> calls = []
    >>> class Est:
    ...     batch_axis = 0
    >>> h = ValidationHandler([1, 2], lambda **kw: calls.append(kw['val_data']), batch_period=2)
    >>> _ = [h.batch_end(Est()) for _ in range(4)]
    >>> calls
    [[1, 2], [1, 2]]
    """

    def __init__(self, val_data: Any, eval_fn: Any, epoch_period: int | None = 1,
                 batch_period: int | None = None, priority: float = -1000, event_handlers: Any = None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def _evaluate(self, estimator: Any) -> None:
        self.eval_fn(val_data=self.val_data, batch_axis=getattr(estimator, "batch_axis", 0),
                     event_handlers=self.event_handlers)

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Reset the counters."""
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Count the batch; validate every ``batch_period`` batches."""
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._evaluate(estimator)

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Count the epoch; validate every ``epoch_period`` epochs."""
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._evaluate(estimator)


def _metric_text(metrics: list[EvalMetric]) -> str:
    return ", ".join(f"{name}: {value:.4f}" for m in metrics for name, value in m.get_name_value())


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs the optimizer and learning rate at the training's beginning, ``metrics`` at each
    epoch's end (``log_interval='epoch'``) or every ``log_interval`` batches (an int) as well, and
    the totals at the end, through the estimator's ``logger`` (a :mod:`logging` logger).

    A batch line reads ``[Epoch e][Batch b][Samples n] time/interval: 0.123s training accuracy:
    0.5000``. With validation metrics (names not starting with ``training``) the epoch lines
    frame a validation pass.

    >>> LoggingHandler(log_interval=10).log_interval
    10
    """

    def __init__(self, log_interval: int | str = "epoch", metrics: Any = None,
                 priority: float = float("inf")):
        if log_interval != "epoch" and (not isinstance(log_interval, int) or isinstance(log_interval, bool)
                                        or log_interval < 1):
            raise ValueError(f"LoggingHandler: log_interval must be a positive integer or 'epoch', "
                             f"got {log_interval!r}")
        self.metrics = _check_metrics(metrics)
        self.log_interval = log_interval
        self.priority = priority
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.log_interval_time = 0.0
        self.train_start = self.epoch_start = self.batch_start = time.time()

    def _training(self) -> bool:
        return any(m.name.startswith("training") for m in self.metrics)

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Log the optimizer, learning rate and length of the training; reset the counters."""
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info("Training begin: using optimizer %s with current learning rate %.4f ",
                              type(trainer.optimizer).__name__, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0.0

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Log the training's time, epochs and final metrics."""
        msg = f"Train finished using total {int(time.time() - self.train_start)}s with " \
              f"{self.current_epoch} epochs. "
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Start the batch's clock."""
        self.batch_start = time.time()

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Every ``log_interval`` batches, log the samples seen, the interval's time and the metrics."""
        if isinstance(self.log_interval, int):
            self.log_interval_time += time.time() - self.batch_start
            batch = kwargs.get("batch")
            if batch is not None:
                axis = getattr(estimator, "batch_axis", 0) or 0
                first = batch[0] if isinstance(batch, (list, tuple)) else batch
                self.processed_samples += first.shape[axis]
            if self.batch_index % self.log_interval == 0:
                msg = f"[Epoch {self.current_epoch}][Batch {self.batch_index}][Samples " \
                      f"{self.processed_samples}] time/interval: {self.log_interval_time:.3f}s "
                estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
                self.log_interval_time = 0.0
        self.batch_index += 1

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Log the epoch's beginning and learning rate (or a validation pass's beginning)."""
        self.epoch_start = time.time()
        if self._training():
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f",
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Log the epoch's time and metrics."""
        msg = f"[Epoch {self.current_epoch}] Finished in {time.time() - self.epoch_start:.3f}s, "
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Ends the training when ``monitor`` (one of the estimator's metrics) has not improved by
    more than ``min_delta`` for ``patience`` epochs (``patience=0``: at the first epoch without
    improvement). ``mode``: 'min', 'max' or 'auto' (see :func:`_improvement`); ``baseline``: the
    value to beat at first (default: any value).

    >>> import symjit as mx
    >>> loss = mx.metric.Loss('training loss')
    >>> h = EarlyStoppingHandler(loss, mode='min'); h.train_begin(None)
    >>> loss.update(0, [mx.nd.array([1.0])]); h.epoch_end(None)
    False
    >>> h.epoch_end(None)                  # no improvement
    True
    """

    def __init__(self, monitor: EvalMetric, min_delta: float = 0, patience: int = 0, mode: str = "auto",
                 baseline: float | None = None):
        if not isinstance(monitor, EvalMetric):
            raise ValueError("EarlyStoppingHandler: monitor must be one of the metric objects of "
                             f"estimator.train_metrics or estimator.val_metrics, got {monitor!r}")
        if isinstance(monitor, CompositeEvalMetric):
            raise ValueError("EarlyStoppingHandler: a CompositeEvalMetric cannot be monitored; "
                             "monitor one of its metrics")
        self.monitor = monitor
        self.min_delta = abs(min_delta)
        self.patience = patience
        self.baseline = baseline
        self.direction = _improvement(mode, monitor, "EarlyStoppingHandler")
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.best = self._start()

    def _start(self) -> float:
        if self.baseline is not None:
            return self.baseline
        return float("-inf") if self.direction == "greater" else float("inf")

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Reset the best value and the counters."""
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.best = self._start()

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Compare the monitored value with the best one; True when patience ran out."""
        name, value = self.monitor.get()
        if value != value:      # NaN: the metric was never updated
            warnings.warn(f"EarlyStoppingHandler: {name} was not updated; monitor one of the metric "
                          "objects of estimator.train_metrics or estimator.val_metrics",
                          RuntimeWarning, stacklevel=2)
        elif _improved(self.direction, value, self.best, self.min_delta):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Log the epoch the training stopped at, if it stopped early."""
        if self.stop_training:
            estimator.logger.info("[Epoch %d] EarlyStoppingHandler: early stopping because %s did not "
                                  "improve", self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """After each batch, ``estimator.trainer.step(n)`` with ``n`` the batch's samples (the loss
    arrays' first dimensions summed over the contexts).

    >>> GradientUpdateHandler().priority
    -2000
    """

    def __init__(self, priority: float = -2000):
        self.priority = priority

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Apply the gradients."""
        loss = kwargs["loss"]
        losses = loss if isinstance(loss, (list, tuple)) else [loss]
        estimator.trainer.step(sum(int(part.shape[0]) for part in losses))

