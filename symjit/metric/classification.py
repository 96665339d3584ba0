"""Classification metrics: accuracy, top-k accuracy, F1, MCC, PCC."""
from __future__ import annotations

import math
from typing import Any

import numpy

from ..base import MXNetError, ParamError, ShapeError, shape_str
from .base import (
    EvalMetric,
    _pairs,
    _rows,
    alias,
    register,
)


@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of correct predictions.

    When a prediction's shape differs from its label's, the predicted class is its argmax over
    ``axis``; otherwise predictions are used as class labels. Both are cast to int32 (truncation,
    as MXNet 1.x does) before comparing.

    >>> import numpy as np
    >>> m = Accuracy()
    >>> m.update([np.array([1, 0])], [np.array([[0.2, 0.8], [0.1, 0.9]])])
    >>> m.get()
    ('accuracy', 0.5)
    """

    def __init__(self, axis: int = 1, name: str = "accuracy", output_names: list[str] | None = None,
                 label_names: list[str] | None = None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names)
        self.axis = axis

    def _predicted(self, label: numpy.ndarray, pred: numpy.ndarray) -> numpy.ndarray:
        if pred.shape == label.shape:
            return pred
        if not -pred.ndim <= self.axis < pred.ndim:
            raise ShapeError(f"Accuracy: axis {self.axis} is out of range for predictions of shape "
                             f"{shape_str(pred.shape)} (labels {shape_str(label.shape)})")
        return numpy.argmax(pred, axis=self.axis)

    def update(self, labels: Any, preds: Any) -> None:
        """Count correct predictions of each (label, pred) pair."""
        for label, pred in _pairs(labels, preds, "Accuracy"):
            guess = self._predicted(label, pred)
            if guess.size != label.size:
                raise ShapeError(f"Accuracy: shape of labels {shape_str(label.shape)} does not match "
                                 f"shape of predictions {shape_str(pred.shape)} (axis={self.axis})")
            hits = guess.ravel().astype(numpy.int32) == label.ravel().astype(numpy.int32)
            self._add(int(hits.sum()), int(hits.size))


@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest-scored classes.

    The metric's name is ``'top_k_accuracy_<k>'``.

    >>> import numpy as np
    >>> m = TopKAccuracy(top_k=2)
    >>> m.update([np.array([2, 0])], [np.array([[0.1, 0.5, 0.4], [0.2, 0.3, 0.5]])])
    >>> m.get()
    ('top_k_accuracy_2', 0.5)
    """

    def __init__(self, top_k: int = 1, name: str = "top_k_accuracy", output_names: list[str] | None = None,
                 label_names: list[str] | None = None):
        if isinstance(top_k, bool) or not isinstance(top_k, (int, numpy.integer)) or top_k < 1:
            raise ParamError(f"TopKAccuracy: top_k must be a positive integer, got {top_k!r}")
        super().__init__(name, top_k=int(top_k), output_names=output_names, label_names=label_names)
        self.top_k = int(top_k)
        self.name += f"_{self.top_k}"

    def update(self, labels: Any, preds: Any) -> None:
        """Count samples whose label is within the top ``top_k`` scores."""
        for label, pred in _pairs(labels, preds, "TopKAccuracy"):
            pred = _rows(label, pred, "TopKAccuracy")
            k = min(self.top_k, pred.shape[1])
            top = numpy.argpartition(pred.astype(numpy.float32), -k, axis=1)[:, -k:]
            hits = (top == label.ravel().astype(numpy.int64)[:, None]).any(axis=1)
            self._add(int(hits.sum()), int(pred.shape[0]))


class _BinaryStats:
    """True/false positive/negative counts for binary classification (``F1``, ``MCC``): the local
    counts (since the last :meth:`local_reset_stats`) and the global ones (since :meth:`reset_stats`)."""

    def __init__(self) -> None:
        self.reset_stats()

    def local_reset_stats(self) -> None:
        self.tp = self.fp = self.fn = self.tn = 0

    def reset_stats(self) -> None:
        self.local_reset_stats()
        self.global_counts = [0, 0, 0, 0]

    def update_binary_stats(self, label: numpy.ndarray, pred: numpy.ndarray, where: str) -> None:
        if pred.ndim != 2 or pred.shape[1] != 2 or pred.shape[0] != label.size:
            raise ShapeError(f"{where}: binary classification needs predictions of shape (batch, 2) "
                             f"with batch equal to the number of labels; got labels "
                             f"{shape_str(label.shape)} and predictions {shape_str(pred.shape)}")
        flat = label.ravel()
        if not numpy.all(numpy.isin(flat, (0, 1))):
            raise MXNetError(f"{where}: only binary classification is supported: labels must be 0 or 1, "
                             f"got values {numpy.unique(flat)[:10].tolist()}")
        guess_pos = numpy.argmax(pred, axis=1) == 1
        label_pos = flat == 1
        counts = (int(numpy.sum(guess_pos & label_pos)), int(numpy.sum(guess_pos & ~label_pos)),
                  int(numpy.sum(~guess_pos & label_pos)), int(numpy.sum(~guess_pos & ~label_pos)))
        self.tp, self.fp, self.fn, self.tn = (a + b for a, b in zip(self.counts(), counts))
        self.global_counts = [a + b for a, b in zip(self.global_counts, counts)]

    def counts(self, use_global: bool = False) -> tuple[int, int, int, int]:
        """``(tp, fp, fn, tn)``, local or global."""
        return tuple(self.global_counts) if use_global else (self.tp, self.fp, self.fn, self.tn)

    def total(self, use_global: bool = False) -> int:
        return sum(self.counts(use_global))

    def fscore(self, use_global: bool = False) -> float:
        tp, fp, fn, _ = self.counts(use_global)
        precision = tp / (tp + fp) if tp + fp > 0 else 0.0
        recall = tp / (tp + fn) if tp + fn > 0 else 0.0
        if precision + recall == 0:
            return 0.0
        return 2 * precision * recall / (precision + recall)

    def mcc(self, use_global: bool = False) -> float:
        return _matthews(*self.counts(use_global))


def _matthews(tp: int, fp: int, fn: int, tn: int) -> float:
    """The Matthews correlation of binary counts; a zero factor of the denominator counts as 1
    (MXNet's convention, so a constant prediction scores 0 instead of NaN)."""
    denom = 1.0
    for term in (tp + fp, tp + fn, tn + fp, tn + fn):
        if term != 0:
            denom *= term
    return (tp * tn - fp * fn) / math.sqrt(denom)


class _BinaryMetric(EvalMetric):
    """A score of binary confusion counts (class 1 positive, predictions (batch, 2) scores).

    ``average='macro'`` averages the score of each ``update`` call (the counts of all its
    (label, pred) pairs together: one batch), as MXNet 1.x does; ``'micro'`` computes it from the
    counts accumulated over all calls. ``reset_local`` clears the local counts only."""

    def __init__(self, name: str, output_names: list[str] | None, label_names: list[str] | None,
                 average: str) -> None:
        if average not in ("macro", "micro"):
            raise ParamError(f"{type(self).__name__}: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        self.metrics = _BinaryStats()
        super().__init__(name, output_names=output_names, label_names=label_names, average=average)

    def _score(self, use_global: bool) -> float:
        raise NotImplementedError

    def update(self, labels: Any, preds: Any) -> None:
        """Accumulate the confusion counts of every (label, pred) pair of this batch."""
        where = type(self).__name__
        for label, pred in _pairs(labels, preds, where):
            self.metrics.update_binary_stats(label, pred, where)
        if self.average == "macro":
            self.sum_metric += self._score(False)
            self.global_sum_metric += self._score(True)
            self.num_inst += 1
            self.global_num_inst += 1
            self.metrics.reset_stats()
        else:
            self.num_inst, self.global_num_inst = self.metrics.total(False), self.metrics.total(True)
            self.sum_metric = self._score(False) * self.num_inst
            self.global_sum_metric = self._score(True) * self.global_num_inst

    def reset(self) -> None:
        """Clear the statistics and the confusion counts."""
        super().reset()
        self.metrics.reset_stats()

    def reset_local(self) -> None:
        """Clear the local statistics and counts (the global ones stay)."""
        super().reset_local()
        self.metrics.local_reset_stats()


@register
class F1(_BinaryMetric):
    """F1 score of binary classification (class 1 is positive; predictions are (batch, 2) scores);
    ``average`` as in :class:`_BinaryMetric` (``'macro'``: the mean of each batch's F1).

    >>> import numpy as np
    >>> m = F1()
    >>> m.update([np.array([1, 0, 1])], [np.array([[0.3, 0.7], [0.6, 0.4], [0.8, 0.2]])])
    >>> round(m.get()[1], 4)
    0.6667
    """

    def __init__(self, name: str = "f1", output_names: list[str] | None = None,
                 label_names: list[str] | None = None, average: str = "macro"):
        super().__init__(name, output_names, label_names, average)

    def _score(self, use_global: bool) -> float:
        return self.metrics.fscore(use_global)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of binary classification (class 1 positive, predictions
    (batch, 2) scores), in [-1, 1]; ``average`` as in :class:`_BinaryMetric`.

    >>> import numpy as np
    >>> m = MCC(average='micro')
    >>> m.update([np.array([1, 0, 1, 0])], [np.array([[0.3, 0.7], [0.6, 0.4], [0.8, 0.2], [0.9, 0.1]])])
    >>> round(m.get()[1], 4)
    0.5774
    """

    def __init__(self, name: str = "mcc", output_names: list[str] | None = None,
                 label_names: list[str] | None = None, average: str = "macro"):
        super().__init__(name, output_names, label_names, average)

    def _score(self, use_global: bool) -> float:
        return self.metrics.mcc(use_global)


@register
class PCC(EvalMetric):
    """The multiclass Matthews correlation (Gorodkin's R_K) of a confusion matrix accumulated
    over all updates; equals :class:`MCC` ``(average='micro')`` for two classes.

    Predictions are class scores (argmax over axis 1) or class indices shaped like the labels.
    The value is NaN while every prediction, or every label, is one class.

    >>> import numpy as np
    >>> m = PCC()
    >>> m.update([np.array([1, 0, 1, 0])], [np.array([[0.3, 0.7], [0.6, 0.4], [0.8, 0.2], [0.9, 0.1]])])
    >>> round(m.get()[1], 4)
    0.5774
    """

    def __init__(self, name: str = "pcc", output_names: list[str] | None = None,
                 label_names: list[str] | None = None):
        self.k = 2
        super().__init__(name, output_names=output_names, label_names=label_names)

    def reset(self) -> None:
        """Clear both confusion matrices."""
        super().reset()
        self.lcm = numpy.zeros((self.k, self.k), dtype=numpy.int64)
        self.gcm = numpy.zeros((self.k, self.k), dtype=numpy.int64)

    def reset_local(self) -> None:
        """Clear the local confusion matrix."""
        super().reset_local()
        self.lcm = numpy.zeros((self.k, self.k), dtype=numpy.int64)

    def _grow(self, n: int) -> None:
        if n <= self.k:
            return
        pad = ((0, n - self.k), (0, n - self.k))
        self.lcm, self.gcm, self.k = numpy.pad(self.lcm, pad), numpy.pad(self.gcm, pad), n

    def update(self, labels: Any, preds: Any) -> None:
        """Add each (label, pred) pair to the confusion matrices."""
        for label, pred in _pairs(labels, preds, "PCC"):
            guess = pred if pred.shape == label.shape else numpy.argmax(_rows(label, pred, "PCC"), axis=1)
            guess, truth = guess.ravel().astype(numpy.int64), label.ravel().astype(numpy.int64)
            if guess.size != truth.size:
                raise ShapeError(f"PCC: {truth.size} labels but {guess.size} predictions")
            if guess.size and min(guess.min(), truth.min()) < 0:
                raise MXNetError("PCC: class indices must be >= 0")
            if guess.size:
                self._grow(int(max(guess.max(), truth.max())) + 1)
            batch = numpy.zeros((self.k, self.k), dtype=numpy.int64)
            numpy.add.at(batch, (guess, truth), 1)
            self.lcm += batch
            self.gcm += batch
            self.num_inst += 1
            self.global_num_inst += 1

    @staticmethod
    def _rk(cmat: numpy.ndarray) -> float:
        n = float(cmat.sum())
        x, y = cmat.sum(axis=1).astype(numpy.float64), cmat.sum(axis=0).astype(numpy.float64)
        cov_xx, cov_yy = float(numpy.sum(x * (n - x))), float(numpy.sum(y * (n - y)))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        cov_xy = float(numpy.sum(cmat.diagonal() * n - x * y))
        return cov_xy / math.sqrt(cov_xx * cov_yy)

    def get(self) -> tuple[Any, Any]:
        """``('pcc', R_K)`` of the local confusion matrix (NaN before any update)."""
        return self.name, (self._rk(self.lcm) if self.num_inst else float("nan"))

    def get_global(self) -> tuple[Any, Any]:
        """``('pcc', R_K)`` of the global confusion matrix."""
        return self.name, (self._rk(self.gcm) if self.global_num_inst else float("nan"))
