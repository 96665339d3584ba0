"""Regression metrics: MAE, MSE, RMSE, Pearson correlation (per-batch averages, as MXNet 1.x)."""
from __future__ import annotations

from typing import Any

import numpy

from .base import (
    EvalMetric,
    _pairs,
    _same_size,
    alias,
    register,
)


class _Regression(EvalMetric):
    """A per-batch regression value: ``_batch_value(label, pred)`` averaged over batches."""

    def __init__(self, name: str, output_names: list[str] | None = None,
                 label_names: list[str] | None = None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _batch_value(label: numpy.ndarray, pred: numpy.ndarray) -> float:
        raise NotImplementedError

    def update(self, labels: Any, preds: Any) -> None:
        """Add one per-batch value for each (label, pred) pair (their sizes must agree)."""
        where = type(self).__name__
        for label, pred in _pairs(labels, preds, where):
            lab, prd = _same_size(label, pred, where)
            self._add(float(self._batch_value(lab, prd)), 1)


@register
class MAE(_Regression):
    """Mean absolute error, averaged per batch.

    >>> import numpy as np
    >>> m = MAE()
    >>> m.update([np.array([1.0, 2.0])], [np.array([1.5, 1.0])])
    >>> m.get()
    ('mae', 0.75)
    """

    def __init__(self, name: str = "mae", output_names: list[str] | None = None,
                 label_names: list[str] | None = None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _batch_value(label: numpy.ndarray, pred: numpy.ndarray) -> float:
        return float(numpy.abs(label - pred).mean())


@register
class MSE(_Regression):
    """Mean squared error, averaged per batch.

    >>> import numpy as np
    >>> m = MSE()
    >>> m.update([np.array([1.0, 2.0])], [np.array([1.5, 1.0])])
    >>> m.get()
    ('mse', 0.625)
    """

    def __init__(self, name: str = "mse", output_names: list[str] | None = None,
                 label_names: list[str] | None = None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _batch_value(label: numpy.ndarray, pred: numpy.ndarray) -> float:
        return float(((label - pred) ** 2).mean())


@register
class RMSE(_Regression):
    """Root mean squared error of each batch, averaged over batches.

    >>> import numpy as np
    >>> m = RMSE()
    >>> m.update([np.array([0.0, 0.0])], [np.array([3.0, 4.0])])
    >>> round(m.get()[1], 6)
    3.535534
    """

    def __init__(self, name: str = "rmse", output_names: list[str] | None = None,
                 label_names: list[str] | None = None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _batch_value(label: numpy.ndarray, pred: numpy.ndarray) -> float:
        return float(numpy.sqrt(((label - pred) ** 2).mean()))


@alias("pearsonr")
class PearsonCorrelation(_Regression):
    """Pearson correlation of labels and predictions of each batch, averaged over batches.

    >>> import numpy as np
    >>> m = PearsonCorrelation()
    >>> m.update([np.array([1.0, 2.0, 3.0])], [np.array([2.0, 4.0, 6.5])])
    >>> m.get()[1] > 0.99
    True
    """

    def __init__(self, name: str = "pearsonr", output_names: list[str] | None = None,
                 label_names: list[str] | None = None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _batch_value(label: numpy.ndarray, pred: numpy.ndarray) -> float:
        return float(numpy.corrcoef(pred, label)[0, 1])


