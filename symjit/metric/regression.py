"""Regression metrics: MAE, MSE, RMSE, Pearson correlation (per-batch averages, as MXNet 1.x)."""
from __future__ import annotations

from typing import Any

import numpy

from ..base import ParamError
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


def _comoments(label: numpy.ndarray, pred: numpy.ndarray) -> numpy.ndarray:
    """``[n, mean_l, mean_p, M2_l, M2_p, C]`` of one batch (sums of squared/cross deviations)."""
    ml, mp = label.mean(), pred.mean()
    dl, dp = label - ml, pred - mp
    return numpy.array([label.size, ml, mp, (dl * dl).sum(), (dp * dp).sum(), (dl * dp).sum()])


def _merge(a: numpy.ndarray, b: numpy.ndarray) -> numpy.ndarray:
    """The co-moments of two sample sets pooled (Chan et al.'s pairwise update)."""
    n = a[0] + b[0]
    if a[0] == 0:
        return b.copy()
    dl, dp = b[1] - a[1], b[2] - a[2]
    f = a[0] * b[0] / n
    return numpy.array([n, a[1] + dl * b[0] / n, a[2] + dp * b[0] / n,
                        a[3] + b[3] + dl * dl * f, a[4] + b[4] + dp * dp * f, a[5] + b[5] + dl * dp * f])


@alias("pearsonr")
class PearsonCorrelation(_Regression):
    """Pearson correlation of labels and predictions. ``average='macro'`` (the default) averages
    each batch's correlation over batches; ``'micro'`` is the correlation of all the values seen
    since the last reset pooled together (kept as running co-moments, not the values).

    >>> import numpy as np
    >>> m = PearsonCorrelation()
    >>> m.update([np.array([1.0, 2.0, 3.0])], [np.array([2.0, 4.0, 6.5])])
    >>> m.get()[1] > 0.99
    True
    >>> m = PearsonCorrelation(average='micro')
    >>> m.update([np.array([1.0, 2.0])], [np.array([1.0, 2.0])])
    >>> m.update([np.array([3.0, 4.0])], [np.array([3.0, 4.0])])
    >>> round(m.get()[1], 6)
    1.0
    """

    def __init__(self, name: str = "pearsonr", output_names: list[str] | None = None,
                 label_names: list[str] | None = None, average: str = "macro"):
        if average not in ("macro", "micro"):
            raise ParamError(f"PearsonCorrelation: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        EvalMetric.__init__(self, name, output_names=output_names, label_names=label_names,
                            average=average)

    def reset(self) -> None:
        """Clear local and global statistics."""
        super().reset()
        self._local = self._global = numpy.zeros(6)

    def reset_local(self) -> None:
        """Clear the local statistics only."""
        super().reset_local()
        self._local = numpy.zeros(6)

    def update(self, labels: Any, preds: Any) -> None:
        """Add each (label, pred) pair: its correlation (macro) or its values (micro)."""
        if self.average == "macro":
            super().update(labels, preds)
            return
        for label, pred in _pairs(labels, preds, "PearsonCorrelation"):
            moments = _comoments(*_same_size(label, pred, "PearsonCorrelation"))
            self._local, self._global = _merge(self._local, moments), _merge(self._global, moments)
            self._add(0.0, 1)

    def _pooled(self, moments: numpy.ndarray, count: int) -> tuple[str, float]:
        if count == 0:
            return self.name, float("nan")
        with numpy.errstate(divide="ignore", invalid="ignore"):
            return self.name, float(moments[5] / numpy.sqrt(moments[3] * moments[4]))

    def get(self) -> tuple[Any, Any]:
        """``(name, value)``; NaN before any update."""
        return super().get() if self.average == "macro" else self._pooled(self._local, self.num_inst)

    def get_global(self) -> tuple[Any, Any]:
        """``(name, value)`` over everything since the last :meth:`reset`."""
        if self.average == "macro":
            return super().get_global()
        return self._pooled(self._global, self.global_num_inst)

    @staticmethod
    def _batch_value(label: numpy.ndarray, pred: numpy.ndarray) -> float:
        return float(numpy.corrcoef(pred, label)[0, 1])


