"""The event mixins of the estimator (``TrainBegin``, ``EpochBegin``, ``BatchBegin``,
``BatchEnd``, ``EpochEnd``, ``TrainEnd``): a handler inherits from those it answers, and the
estimator calls each handler at the events of its mixins only.

>>> class Hello(TrainBegin):
...     def train_begin(self, estimator, *args, **kwargs):
...         print('hello')
>>> _check_event_handlers(Hello())[0].train_begin(None)
hello
"""
from __future__ import annotations

import warnings
from typing import Any

from ....metric import EvalMetric
from .utils import _as_list

__all__ = ["EventHandler", "TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd"]


class EventHandler:
    """The base of every event handler (the estimator accepts only these)."""


def _check_event_handlers(handlers: Any) -> list[EventHandler]:
    """``handlers`` (None, a handler, or a list of them) as a new list; anything else is a
    ValueError."""
    return _as_list(handlers, EventHandler, "event_handlers must be an EventHandler or a list of them")


class TrainBegin(EventHandler):
    """Called once before the first epoch: ``train_begin(estimator)``."""

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Nothing by default."""


class TrainEnd(EventHandler):
    """Called once after the last epoch: ``train_end(estimator)``."""

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Nothing by default."""


class EpochBegin(EventHandler):
    """Called before each epoch (and before an evaluation pass): ``epoch_begin(estimator)``."""

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Nothing by default."""


class EpochEnd(EventHandler):
    """Called after each epoch (and after an evaluation pass): ``epoch_end(estimator)``; a True
    result ends the training."""

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Keeps training by default."""
        return False


class BatchBegin(EventHandler):
    """Called before each batch: ``batch_begin(estimator, batch=batch)``."""

    def batch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Nothing by default."""


class BatchEnd(EventHandler):
    """Called after each batch: ``batch_end(estimator, batch=, pred=, label=, loss=)`` (``pred``,
    ``label`` and ``loss``: lists with one array per context); a True result ends the epoch."""

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Keeps going by default."""
        return False


_GREATER_IS_BETTER = ("acc", "f1", "mcc", "pcc", "pearson")


def _improvement(mode: str, monitor: EvalMetric, who: str) -> str:
    """'greater' or 'less': how ``who`` compares the monitored values. 'auto' picks 'greater' for
    the metrics that grow as a model improves (accuracies, F1, MCC, correlations) and 'less'
    otherwise; an unknown mode falls back to 'auto' with a RuntimeWarning."""
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{who}: mode {mode!r} is unknown, using 'auto' (one of 'auto', 'min', 'max')",
                      RuntimeWarning, stacklevel=3)
        mode = "auto"
    if mode == "min":
        return "less"
    if mode == "max":
        return "greater"
    name = str(monitor.get()[0]).lower()
    return "greater" if any(key in name for key in _GREATER_IS_BETTER) else "less"


def _improved(direction: str, value: float, best: float, min_delta: float = 0.0) -> bool:
    if direction == "greater":
        return value - min_delta > best
    return value + min_delta < best
