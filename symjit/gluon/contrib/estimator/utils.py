"""Helpers of the estimator: metric arguments as lists, the metric a loss suggests, and the check
that event handlers refer only to the metrics an :class:`Estimator` updates.

>>> import symjit as mx
>>> [m.name for m in _check_metrics(mx.metric.Accuracy())]
['accuracy']
"""
from __future__ import annotations

from typing import Any

from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ...loss import SoftmaxCrossEntropyLoss

__all__: list[str] = []


def _check_metrics(metrics: Any) -> list[EvalMetric]:
    """``metrics`` (None, a metric, a composite metric or a list of metrics) as a flat list;
    anything else is a ValueError."""
    if isinstance(metrics, CompositeEvalMetric):
        return [leaf for m in metrics.metrics for leaf in _check_metrics(m)]
    return _as_list(metrics, EvalMetric, "metrics must be an EvalMetric or a list of EvalMetric (mx.metric)")


def _as_list(items: Any, cls: type, message: str) -> list:
    """``items`` (None, one ``cls`` object or a list of them) as a new list; else a ValueError."""
    if isinstance(items, cls):
        return [items]
    if items is None:
        return []
    if isinstance(items, (list, tuple)) and all(isinstance(i, cls) for i in items):
        return list(items)
    raise ValueError(f"{message}, got {items!r}")


def _suggest_metric_for_loss(loss: Any) -> EvalMetric | None:
    """The metric an estimator adds by default for ``loss``: accuracy for a softmax cross-entropy."""
    return Accuracy() if isinstance(loss, SoftmaxCrossEntropyLoss) else None


def _handler_metrics(handler: Any) -> list[EvalMetric]:
    """The metrics a handler holds in its attributes whose names mention ``metric`` or ``monitor``."""
    found: list[EvalMetric] = []
    for key, value in vars(handler).items():
        if "metric" not in key and "monitor" not in key:
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        found.extend(v for v in values if isinstance(v, EvalMetric))
    return found


def _check_handler_metric_ref(handler: Any, known_metrics: Any) -> None:
    """ValueError when ``handler`` refers to a metric object outside ``known_metrics`` (compared by
    identity: a handler must share the estimator's metric objects to see their values)."""
    known = {id(m) for m in known_metrics}
    for metric in _handler_metrics(handler):
        if id(metric) not in known:
            raise ValueError(f"Event handler {type(handler).__name__} refers to the metric {metric.name!r}, "
                             "which is none of the estimator's metrics: use the metric objects of "
                             "estimator.train_metrics and estimator.val_metrics")
