"""``Estimator``: a training loop for Gluon networks over a
:class:`~symjit.gluon.data.DataLoader`, driven by event handlers.

``fit`` trains for a number of epochs or of batches: for each batch the batch processor runs the
network and the loss under ``autograd.record()`` and their backward, then the handlers apply the
gradients (:class:`GradientUpdateHandler`), update the metrics (:class:`MetricHandler`),
validate (:class:`ValidationHandler`, when ``val_data`` is given), stop (:class:`StoppingHandler`)
and log (:class:`LoggingHandler`); those the user does not pass are added. ``evaluate`` runs the
validation network and loss over a loader and updates the validation metrics.

>>> import logging, symjit as mx
>>> from symjit import gluon
>>> net = gluon.nn.Dense(1, in_units=2)
>>> net.initialize(mx.init.Zero())
>>> trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
>>> est = Estimator(net, gluon.loss.L2Loss(), trainer=trainer)
>>> est.logger.setLevel(logging.WARNING)         # no log lines in this example
>>> data = gluon.data.ArrayDataset(mx.nd.ones((8, 2)), mx.nd.ones((8, 1)))
>>> est.fit(gluon.data.DataLoader(data, batch_size=4), epochs=3)
>>> [m.name for m in est.train_metrics], [m.name for m in est.val_metrics]
(['training l2loss'], ['validation l2loss'])
>>> round(float(net.bias.data().asscalar()), 4)
0.2941
"""
from __future__ import annotations

import copy
import logging
import sys
import warnings
from typing import Any

from ....base import MXNetError
from ....context import Context, cpu, gpu, num_gpus
from ....metric import EvalMetric
from ....metric import Loss as LossMetric
from ...block import Block
from ...data import DataLoader
from ...loss import Loss
from ...trainer import Trainer
from ._events import (
    BatchBegin,
    BatchEnd,
    EpochBegin,
    EpochEnd,
    EventHandler,
    TrainBegin,
    TrainEnd,
    _check_event_handlers,
)
from .batch_processor import BatchProcessor
from .event_handler import (
    GradientUpdateHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    ValidationHandler,
)
from .utils import _check_handler_metric_ref, _check_metrics, _suggest_metric_for_loss

__all__ = ["Estimator"]

_EVENTS = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)


def _renamed(metric: EvalMetric, stage: str) -> None:
    """Prefix ``metric``'s name with ``stage`` ('training'/'validation'), the way handlers tell the
    two kinds apart; a name that already carries a stage has it replaced."""
    for known in ("training ", "validation "):
        if metric.name.startswith(known):
            metric.name = metric.name[len(known):]
            break
    metric.name = f"{stage} {metric.name}"


class Estimator:
    """Trains and evaluates ``net`` (see the module's description).

    ``loss``: a Gluon loss (``val_loss``, default the same, for evaluation); ``train_metrics`` /
    ``val_metrics``: a metric or a list of them (default: accuracy for a softmax cross-entropy,
    plus the mean loss; the validation metrics default to copies of the training ones), renamed
    ``training <name>`` / ``validation <name>``; ``initializer``: initializes the parameters not
    yet initialized (a fully initialized network is left as is, with a warning); ``trainer``: a
    :class:`~symjit.gluon.Trainer` (default SGD with learning rate 0.001, with a warning);
    ``context``: a Context or a list of them (default: the contexts the network's parameters are
    initialized on, else ``gpu(0)`` when there is a GPU, else ``cpu()``); ``val_net``: the
    network for evaluation (default ``net``; it may share ``net``'s parameters);
    ``batch_processor``: an object with ``fit_batch`` and ``evaluate_batch``
    (default :class:`BatchProcessor`).

    ``logger`` is this estimator's own :class:`logging.Logger` (level INFO, writing to the
    ``sys.stdout`` of its construction); add handlers to it (``logging.FileHandler``) to keep
    the logs elsewhere.

    >>> import warnings, symjit as mx
    >>> from symjit import gluon
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter('ignore')      # no trainer given: the default SGD, with a warning
    ...     est = Estimator(gluon.nn.Dense(3), gluon.loss.SoftmaxCrossEntropyLoss())
    >>> [m.name for m in est.train_metrics]
    ['training accuracy', 'training softmaxcrossentropyloss']
    """

    logger: logging.Logger | None = None

    def __init__(self, net: Block, loss: Loss, train_metrics: Any = None, val_metrics: Any = None,
                 initializer: Any = None, trainer: Trainer | None = None, context: Any = None,
                 val_net: Block | None = None, val_loss: Loss | None = None, batch_processor: Any = None):
        self.net = net
        self.loss = self._check_loss(loss)
        self.val_loss = self.loss if val_loss is None else self._check_loss(val_loss)
        self.val_net = net if val_net is None else val_net
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch: int | None = None
        self.max_batch: int | None = None
        self.batch_axis = 0

    # -- checks of the constructor's arguments ------------------------------------------------------
    @staticmethod
    def _check_loss(loss: Any) -> Loss:
        if not isinstance(loss, Loss):
            raise ValueError(f"Estimator: loss must be a gluon.loss.Loss, got {loss!r}")
        return loss

    def _placed(self) -> list[Context] | None:
        """The contexts of the network's parameters, when they are initialized on the same ones."""
        found = set()
        params = self.net.collect_params()
        try:
            for name in params:
                found.add(tuple(params[name].list_ctx()))
        except RuntimeError:
            return None
        return list(found.pop()) if len(found) == 1 else None

    def _check_context(self, context: Any) -> list[Context]:
        gpus = num_gpus()
        if not context:
            placed = self._placed()
            if placed:
                return placed
            if gpus > 1:
                warnings.warn("Estimator: several GPUs found, using gpu(0) only; pass "
                              "context=[mx.gpu(0), mx.gpu(1), ...] to train on more", stacklevel=3)
            return [gpu(0)] if gpus > 0 else [cpu()]
        if isinstance(context, Context):
            context = [context]
        if not isinstance(context, (list, tuple)) or not all(isinstance(c, Context) for c in context):
            raise ValueError("Estimator: context must be a Context or a list of Context, for example "
                             f"mx.cpu() or [mx.gpu(0), mx.gpu(1)]; got {context!r}")
        for ctx in context:     # an unavailable device fails an assertion, as MXNet's check does
            try:
                ctx.device.check(ctx, "Estimator")
            except MXNetError as exc:
                raise AssertionError(f"Estimator: context {ctx} is not available ({exc})") from None
        return list(context)

    def _check_batch_processor(self, batch_processor: Any) -> Any:
        if batch_processor is None:
            return BatchProcessor()
        if not callable(getattr(batch_processor, "fit_batch", None)) or \
                not callable(getattr(batch_processor, "evaluate_batch", None)):
            raise ValueError("Estimator: batch_processor must have fit_batch() and evaluate_batch() methods, "
                             f"got {batch_processor!r}")
        return batch_processor

    def _is_initialized(self) -> bool:
        params = self.net.collect_params()
        try:
            for name in params:
                params[name].list_ctx()
        except RuntimeError:
            return False
        return True

    def _initialize(self, initializer: Any) -> None:
        if not self._is_initialized():
            # partly initialized (fine-tuning a network with a new output layer): only the
            # parameters not initialized yet are, the others are kept
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if initializer:
                    self.net.initialize(init=initializer, ctx=self.context)
                else:
                    self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization: the initializer "
                          "passed to Estimator is not used (net.initialize(init=..., force_reinit=True) "
                          "re-initializes a network)", stacklevel=3)

    def _check_trainer(self, trainer: Any) -> Trainer:
        if not trainer:
            warnings.warn("No trainer specified, default SGD optimizer with learning rate 0.001 is used.",
                          stacklevel=3)
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError(f"Estimator: trainer must be a gluon.Trainer, got {trainer!r}")
        return trainer

    # -- metrics ----------------------------------------------------------------------------------
    def _add_default_training_metrics(self) -> None:
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            self._train_metrics = [suggested] if suggested is not None else []
            self._train_metrics.append(LossMetric(self.loss.name.rstrip("0123456789")))
        for metric in self._train_metrics:
            _renamed(metric, "training")

    def _add_validation_metrics(self) -> None:
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(m) for m in self._train_metrics]
        for metric in self._val_metrics:
            _renamed(metric, "validation")

    @property
    def train_metrics(self) -> list[EvalMetric]:
        """The metrics updated during training (names starting with ``training``)."""
        return self._train_metrics

    @property
    def val_metrics(self) -> list[EvalMetric]:
        """The metrics updated by :meth:`evaluate` (names starting with ``validation``)."""
        return self._val_metrics

    # -- batches ----------------------------------------------------------------------------------
    def fit_batch(self, train_batch: Any, batch_axis: int = 0) -> tuple[list, list, list, list]:
        """Train on one batch: the batch processor's ``fit_batch``; returns ``(data, label, pred,
        loss)``, lists over the contexts. Override it (or pass a batch processor) to change a step."""
        return self.batch_processor.fit_batch(self, train_batch, batch_axis)

    def evaluate_batch(self, val_batch: Any, batch_axis: int = 0) -> tuple[list, list, list, list]:
        """Evaluate one batch: the batch processor's ``evaluate_batch``."""
        return self.batch_processor.evaluate_batch(self, val_batch, batch_axis)

    # -- loops ------------------------------------------------------------------------------------
    @staticmethod
    def _check_loader(data: Any, what: str) -> None:
        if not isinstance(data, DataLoader):
            raise ValueError(f"Estimator: {what} must be a gluon.data.DataLoader (wrap a DataIter's or "
                             f"NDArrays' contents in a gluon.data.ArrayDataset), got {type(data).__name__}")

    def _epoch(self, loader: DataLoader, step: Any, batch_axis: int, batch_begin: list, batch_end: list,
               stoppable: bool) -> None:  # noqa: FBT001
        """One pass over ``loader``: ``step`` on each batch between the batch handlers; with
        ``stoppable``, a batch handler's True ends the pass (after every handler saw the batch)."""
        for batch in loader:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = step(batch, batch_axis)
            results = [h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss) for h in batch_end]
            if stoppable and any(results):
                return

    def evaluate(self, val_data: DataLoader, batch_axis: int = 0, event_handlers: Any = None) -> None:
        """Run :meth:`evaluate_batch` over ``val_data`` (a DataLoader), split along ``batch_axis``
        over the contexts, updating :attr:`val_metrics`; ``event_handlers`` are called at the
        epoch and batch events of the pass (a :class:`MetricHandler` and a
        :class:`LoggingHandler` over the validation metrics are added unless given)."""
        self._check_loader(val_data, "val_data")
        for metric in self.val_metrics:
            metric.reset()
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(handlers)
        for handler in epoch_begin:
            handler.epoch_begin(self)
        self._epoch(val_data, self.evaluate_batch, batch_axis, batch_begin, batch_end, stoppable=False)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(self, train_data: DataLoader, val_data: DataLoader | None = None, epochs: int | None = None,
            event_handlers: Any = None, batches: int | None = None, batch_axis: int = 0) -> None:
        """Train on ``train_data`` (a DataLoader) for ``epochs`` epochs or ``batches`` batches
        (exactly one of them), batches split along ``batch_axis`` over the contexts; with
        ``val_data``, evaluate after each epoch. ``event_handlers``: a handler or a list of them,
        completed with the default ones (see the module's description); a handler's ``batch_end``
        returning True ends the epoch, its ``epoch_end`` returning True ends the training."""
        self._check_loader(train_data, "train_data")
        if val_data is not None:
            self._check_loader(val_data, "val_data")
        if bool(epochs) == bool(batches):
            raise ValueError("Estimator.fit: pass exactly one of epochs and batches (the training's length "
                             f"in epochs or in batches), got epochs={epochs!r}, batches={batches!r}")
        self.max_epoch, self.max_batch, self.batch_axis = epochs, batches, batch_axis
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(handlers)
        for handler in train_begin:
            handler.train_begin(self)
        stop = False
        while not stop:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            self._epoch(train_data, self.fit_batch, batch_axis, batch_begin, batch_end, stoppable=True)
            stop = any([h.epoch_end(self) for h in epoch_end])
        for handler in train_end:
            handler.train_end(self)

    # -- handlers ---------------------------------------------------------------------------------
    @staticmethod
    def _finish_handlers(handlers: list[EventHandler], added: list[EventHandler], known: list) -> list:
        mixed = bool(handlers) and bool(added)
        handlers = handlers + added
        if mixed:       # the user's handlers must watch the metrics the default ones update
            for handler in handlers:
                _check_handler_metric_ref(handler, known)
        handlers.sort(key=lambda h: getattr(h, "priority", 0))      # stable: ties keep their order
        return handlers

    def _prepare_default_handlers(self, val_data: Any, event_handlers: Any) -> list[EventHandler]:
        handlers = _check_event_handlers(event_handlers)

        def missing(kind: type) -> bool:
            return not any(isinstance(h, kind) for h in handlers)

        added: list[EventHandler] = [StoppingHandler(self.max_epoch, self.max_batch)]
        if missing(GradientUpdateHandler):
            added.append(GradientUpdateHandler())
        if missing(MetricHandler):
            added.append(MetricHandler(metrics=self.train_metrics))
        if missing(ValidationHandler) and val_data is not None:
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if missing(LoggingHandler):
            added.append(LoggingHandler(metrics=self.train_metrics))
        return self._finish_handlers(handlers, added, self.train_metrics + self.val_metrics)

    def _prepare_default_validation_handlers(self, event_handlers: Any) -> list[EventHandler]:
        handlers = _check_event_handlers(event_handlers)
        added: list[EventHandler] = []
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        return self._finish_handlers(handlers, added, self.val_metrics)

    @staticmethod
    def _categorize_handlers(event_handlers: list[EventHandler]) -> tuple[list, ...]:
        """The handlers of each event (train_begin, epoch_begin, batch_begin, batch_end,
        epoch_end, train_end), by the event mixins they inherit from."""
        return tuple([h for h in event_handlers if isinstance(h, event)] for event in _EVENTS)
