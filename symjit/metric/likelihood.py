"""Likelihood metrics: perplexity, cross-entropy, negative log-likelihood."""
from __future__ import annotations

import math
from typing import Any

import numpy

from ..base import ShapeError, shape_str
from .base import (
    EvalMetric,
    _class_indices,
    _pairs,
    _rows,
    alias,
    register,
)


@register
class Perplexity(EvalMetric):
    """``exp`` of the mean negative log-likelihood of the labels.

    Predictions hold class probabilities along ``axis``; labels equal to ``ignore_label`` are
    left out of the sum and the count. Probabilities are clamped below at 1e-10. A label outside
    ``[0, classes)`` reads the nearest class, as MXNet's (which picks in ``pick``'s 'clip' mode).

    >>> import numpy as np
    >>> m = Perplexity(ignore_label=None)
    >>> m.update([np.array([0, 1])], [np.array([[0.5, 0.5], [0.75, 0.25]])])
    >>> round(m.get()[1], 6) == round(float(np.exp(-(np.log(0.5) + np.log(0.25)) / 2)), 6)
    True
    """

    def __init__(self, ignore_label: int | None, axis: int = -1, name: str = "perplexity",
                 output_names: list[str] | None = None, label_names: list[str] | None = None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names)
        self.ignore_label = ignore_label
        self.axis = axis

    def _probs(self, label: numpy.ndarray, pred: numpy.ndarray) -> numpy.ndarray:
        if not -pred.ndim <= self.axis < pred.ndim or pred.size != label.size * pred.shape[self.axis]:
            raise ShapeError(f"Perplexity: predictions of shape {shape_str(pred.shape)} do not hold one "
                             f"distribution along axis {self.axis} per label (labels "
                             f"{shape_str(label.shape)})")
        return numpy.moveaxis(pred, self.axis, -1).reshape(label.size, -1)

    def update(self, labels: Any, preds: Any) -> None:
        """Accumulate the negative log-likelihood of each (label, pred) pair."""
        for label, pred in _pairs(labels, preds, "Perplexity"):
            probs = self._probs(label, pred)
            flat = label.ravel()
            keep = numpy.ones(flat.shape, dtype=bool)
            if self.ignore_label is not None:
                keep = flat != self.ignore_label
            # as MXNet, which picks with pick's default mode='clip': a label outside [0, classes)
            # reads the nearest class
            idx = numpy.clip(flat[keep].astype(numpy.int64), 0, probs.shape[1] - 1)
            picked = probs[keep][numpy.arange(idx.size), idx].astype(numpy.float64)
            loss = -float(numpy.sum(numpy.log(numpy.maximum(1e-10, picked))))
            self._add(loss, int(idx.size))

    def get(self) -> tuple[str, float]:
        """``(name, exp(mean negative log-likelihood))``."""
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.sum_metric / self.num_inst)

    def get_global(self) -> tuple[str, float]:
        """Global ``(name, perplexity)``."""
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.global_sum_metric / self.global_num_inst)



class _LogLoss(EvalMetric):
    """Mean of ``-log(p[label] + eps)`` over samples (predictions are (batch, num_classes))."""

    def __init__(self, eps: float, name: str, output_names: list[str] | None,
                 label_names: list[str] | None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names)
        self.eps = eps

    def update(self, labels: Any, preds: Any) -> None:
        """Add ``-log(p[label] + eps)`` of every sample."""
        where = type(self).__name__
        for label, pred in _pairs(labels, preds, where):
            pred = _rows(label, pred, where)
            idx = _class_indices(label, pred.shape[1], where)
            prob = pred[numpy.arange(idx.size), idx].astype(numpy.float64)
            self._add(float(numpy.sum(-numpy.log(prob + self.eps))), int(idx.size))


@alias("ce", "cross-entropy")
class CrossEntropy(_LogLoss):
    """Cross entropy: mean of ``-log(pred[i, label[i]] + eps)``.

    >>> import numpy as np
    >>> m = CrossEntropy()
    >>> m.update([np.array([0, 1])], [np.array([[0.5, 0.5], [0.75, 0.25]])])
    >>> round(m.get()[1], 6) == round(float(-(np.log(0.5) + np.log(0.25)) / 2), 6)
    True
    """

    def __init__(self, eps: float = 1e-12, name: str = "cross-entropy",
                 output_names: list[str] | None = None, label_names: list[str] | None = None):
        super().__init__(eps, name, output_names, label_names)


@alias("nll_loss")
class NegativeLogLikelihood(_LogLoss):
    """Negative log-likelihood: the same formula as :class:`CrossEntropy`, named ``nll-loss``.

    >>> import numpy as np
    >>> m = NegativeLogLikelihood()
    >>> m.update([np.array([0])], [np.array([[1.0, 0.0]])])
    >>> abs(m.get()[1]) < 1e-9
    True
    """

    def __init__(self, eps: float = 1e-12, name: str = "nll-loss",
                 output_names: list[str] | None = None, label_names: list[str] | None = None):
        super().__init__(eps, name, output_names, label_names)


