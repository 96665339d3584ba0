"""``mx.metric``: MXNet 1.x's evaluation metrics, computed with numpy on the host.

Every metric accumulates ``sum_metric`` and ``num_inst``; :meth:`EvalMetric.get` returns
``(name, sum_metric / num_inst)`` (NaN before the first update). ``update`` takes lists of
NDArrays or numpy arrays (a single array is wrapped in a list). As in MXNet 1.x, ``MSE``, ``MAE``,
``RMSE`` and ``PearsonCorrelation`` average *per-batch* values (each ``update`` pair counts as one
instance), and ``F1(average='macro')`` averages per-batch F1 scores.

>>> import symjit as mx
>>> acc = mx.metric.create('acc')
>>> acc.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]])])
>>> name, value = acc.get()
>>> name, round(value, 4)
('accuracy', 0.6667)
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy

from .base import MXNetError, ParamError, ShapeError, shape_str
from .ndarray import NDArray

__all__ = [
    "EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "Perplexity", "MAE", "MSE",
    "RMSE", "CrossEntropy", "NegativeLogLikelihood", "PearsonCorrelation", "Loss", "CustomMetric",
    "check_label_shapes", "create", "register", "alias", "np",
]

_REGISTRY: dict[str, type] = {}


def register(klass: type) -> type:
    """Register a metric class under its lower-cased class name (usable with :func:`create`).

    >>> import symjit as mx
    >>> @mx.metric.register
    ... class Zero(mx.metric.EvalMetric):
    ...     def __init__(self): super().__init__('zero')
    ...     def update(self, labels, preds): self.sum_metric, self.num_inst = 0.0, 1
    >>> mx.metric.create('zero').name
    'zero'
    """
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases: str) -> Callable[[type], type]:
    """A class decorator registering a metric under extra names (and its class name)."""
    def deco(klass: type) -> type:
        register(klass)
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass
    return deco


def _to_numpy(x: Any, where: str) -> numpy.ndarray:
    if isinstance(x, NDArray):
        return x.asnumpy()
    if isinstance(x, numpy.ndarray):
        return x
    try:
        return numpy.asarray(x)
    except (TypeError, ValueError) as exc:
        raise MXNetError(f"{where}: cannot use a value of type {type(x).__name__} as an array") from exc


def _shape_of(x: Any) -> str:
    return shape_str(tuple(x.shape)) if hasattr(x, "shape") else f"<{type(x).__name__}>"


def check_label_shapes(labels: Any, preds: Any, wrap: bool = False, shape: bool = False,
                       where: str = "check_label_shapes") -> tuple[Any, Any]:
    """Check that ``labels`` and ``preds`` agree: in count (lists) or, with ``shape=True``, in shape.

    With ``wrap=True`` a single array is wrapped in a list first and the lists are returned.
    A mismatch raises :class:`symjit.base.ShapeError` (an ``MXNetError`` and a ``ValueError``).

    >>> import numpy as np
    >>> check_label_shapes([np.zeros(3)], np.zeros(3), wrap=True)[1][0].shape
    (3,)
    >>> check_label_shapes(np.zeros(2), np.zeros(3), shape=True, where='MSE')
    Traceback (most recent call last):
    ...
    symjit.base.ShapeError: MSE: shape of labels (2,) does not match shape of predictions (3,)
    """
    if wrap:
        labels = [labels] if isinstance(labels, (NDArray, numpy.ndarray)) else labels
        preds = [preds] if isinstance(preds, (NDArray, numpy.ndarray)) else preds
    if shape:
        if tuple(labels.shape) != tuple(preds.shape):
            raise ShapeError(f"{where}: shape of labels {_shape_of(labels)} does not match shape of "
                             f"predictions {_shape_of(preds)}")
    elif len(labels) != len(preds):
        raise ShapeError(f"{where}: got {len(labels)} label arrays but {len(preds)} prediction "
                         f"arrays (shapes {[_shape_of(x) for x in labels]} vs "
                         f"{[_shape_of(x) for x in preds]})")
    return labels, preds


def _pairs(labels: Any, preds: Any, where: str) -> list[tuple[numpy.ndarray, numpy.ndarray]]:
    """Wrap, count-check and convert every (label, pred) pair to numpy."""
    labels, preds = check_label_shapes(labels, preds, wrap=True, where=where)
    return [(_to_numpy(lab, where), _to_numpy(pred, where)) for lab, pred in zip(labels, preds)]


def _class_indices(label: numpy.ndarray, num_classes: int, where: str) -> numpy.ndarray:
    """Labels as int64 class indices, checked to be integers in ``[0, num_classes)``."""
    flat = label.ravel()
    idx = flat.astype(numpy.int64)
    if flat.size and (not numpy.all(idx == flat) or idx.min() < 0 or idx.max() >= num_classes):
        raise MXNetError(f"{where}: labels must be integer class indices in [0, {num_classes}); "
                         f"got values in [{flat.min()}, {flat.max()}] (labels shape "
                         f"{shape_str(label.shape)})")
    return idx


def _rows(label: numpy.ndarray, pred: numpy.ndarray, where: str) -> numpy.ndarray:
    """Check that ``pred`` is (batch, num_classes) with one row per label; return it."""
    if pred.ndim != 2 or pred.shape[0] != label.size:
        raise ShapeError(f"{where}: predictions must have shape (batch, num_classes) with batch equal "
                         f"to the number of labels; got labels {shape_str(label.shape)} and "
                         f"predictions {shape_str(pred.shape)}")
    return pred


def _same_size(label: numpy.ndarray, pred: numpy.ndarray, where: str) -> tuple[numpy.ndarray, ...]:
    """Both arrays flattened, after checking they have as many elements."""
    if label.size != pred.size:
        raise ShapeError(f"{where}: shape of labels {shape_str(label.shape)} does not match shape of "
                         f"predictions {shape_str(pred.shape)}")
    return label.ravel().astype(numpy.float64), pred.ravel().astype(numpy.float64)


class EvalMetric:
    """Base class of all metrics: accumulates ``sum_metric`` over ``num_inst`` instances.

    Subclasses implement :meth:`update`. Global statistics (``get_global``) survive
    :meth:`reset_local`, which ``Speedometer(auto_reset=True)`` calls between log lines.

    >>> m = EvalMetric('m')
    >>> m.get()
    ('m', nan)
    """

    def __init__(self, name: str, output_names: list[str] | None = None,
                 label_names: list[str] | None = None, **kwargs: Any):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self) -> str:
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self) -> dict:
        """The constructor arguments, as a dict that :func:`create` accepts back."""
        config = dict(self._kwargs)
        config.update({"metric": self.__class__.__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label: dict, pred: dict) -> None:
        """Update from dicts name -> array, selecting ``output_names`` / ``label_names`` if set."""
        outs, labs = self.output_names, self.label_names
        preds = [pred[n] for n in outs] if outs is not None else list(pred.values())
        labels = [label[n] for n in labs] if labs is not None else list(label.values())
        self.update(labels, preds)

    def update(self, labels: Any, preds: Any) -> None:
        """Accumulate statistics for a batch: ``labels`` and ``preds`` are lists of arrays."""
        raise NotImplementedError(f"{type(self).__name__}.update is not implemented")

    def reset(self) -> None:
        """Clear local and global statistics."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        """Clear the local statistics only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def _add(self, total: float, count: int | float) -> None:
        self.sum_metric += total
        self.num_inst += count
        self.global_sum_metric += total
        self.global_num_inst += count

    def get(self) -> tuple[Any, Any]:
        """``(name, value)``; value is NaN when no instance was seen."""
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, self.sum_metric / self.num_inst

    def get_global(self) -> tuple[Any, Any]:
        """``(name, value)`` over everything since the last :meth:`reset`."""
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, self.global_sum_metric / self.global_num_inst

    @staticmethod
    def _name_value(name: Any, value: Any) -> list[tuple[str, Any]]:
        if not isinstance(name, list):
            name, value = [name], [value]
        return list(zip(name, value))

    def get_name_value(self) -> list[tuple[str, Any]]:
        """:meth:`get` as a list of ``(name, value)`` pairs."""
        return self._name_value(*self.get())

    def get_global_name_value(self) -> list[tuple[str, Any]]:
        """:meth:`get_global` as a list of ``(name, value)`` pairs."""
        return self._name_value(*self.get_global())


@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; :meth:`get` returns ``(names, values)`` lists.

    >>> import symjit as mx
    >>> m = mx.metric.CompositeEvalMetric(['acc', 'ce'])
    >>> m.get()[0]
    ['accuracy', 'cross-entropy']
    """

    def __init__(self, metrics: list | None = None, name: str = "composite",
                 output_names: list[str] | None = None, label_names: list[str] | None = None):
        super().__init__(name, output_names=output_names, label_names=label_names)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric: Any) -> None:
        """Append a metric (an EvalMetric, a name or a callable, as :func:`create` takes)."""
        self.metrics.append(create(metric))

    def get_metric(self, index: int) -> EvalMetric:
        """The child metric at ``index``."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise ParamError(f"CompositeEvalMetric.get_metric: index {index} is out of range "
                             f"(the composite holds {len(self.metrics)} metrics)")
        return self.metrics[index]

    def update_dict(self, labels: dict, preds: dict) -> None:
        """Update every child from dicts (each selects its own output/label names)."""
        if self.label_names is not None:
            labels = {n: labels[n] for n in self.label_names}
        if self.output_names is not None:
            preds = {n: preds[n] for n in self.output_names}
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels: Any, preds: Any) -> None:
        """Update every child metric."""
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self) -> None:
        """Reset every child metric."""
        super().reset()
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self) -> None:
        """Reset the local statistics of every child metric."""
        for metric in self.metrics:
            metric.reset_local()

    @staticmethod
    def _collect(results: list[tuple[Any, Any]]) -> tuple[list, list]:
        names: list = []
        values: list = []
        for name, value in results:
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return names, values

    def get(self) -> tuple[list, list]:
        """``([name, ...], [value, ...])`` over the children."""
        return self._collect([m.get() for m in self.metrics])

    def get_global(self) -> tuple[list, list]:
        """Global ``([name, ...], [value, ...])`` over the children."""
        return self._collect([m.get_global() for m in self.metrics])

    def get_config(self) -> dict:
        """The constructor arguments, children included."""
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config


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
    """True/false positive/negative counts for binary classification (``F1``)."""

    def __init__(self) -> None:
        self.reset_stats()

    def reset_stats(self) -> None:
        self.tp = self.fp = self.fn = self.tn = 0

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
        self.tp += int(numpy.sum(guess_pos & label_pos))
        self.fp += int(numpy.sum(guess_pos & ~label_pos))
        self.fn += int(numpy.sum(~guess_pos & label_pos))
        self.tn += int(numpy.sum(~guess_pos & ~label_pos))

    @property
    def total_examples(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def fscore(self) -> float:
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp > 0 else 0.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn > 0 else 0.0
        if precision + recall == 0:
            return 0.0
        return 2 * precision * recall / (precision + recall)


@register
class F1(EvalMetric):
    """F1 score of binary classification (class 1 is positive; predictions are (batch, 2) scores).

    ``average='macro'`` averages the F1 of each update pair (per batch, as MXNet 1.x does);
    ``'micro'`` computes F1 from the counts accumulated over all batches.

    >>> import numpy as np
    >>> m = F1()
    >>> m.update([np.array([1, 0, 1])], [np.array([[0.3, 0.7], [0.6, 0.4], [0.8, 0.2]])])
    >>> round(m.get()[1], 4)
    0.6667
    """

    def __init__(self, name: str = "f1", output_names: list[str] | None = None,
                 label_names: list[str] | None = None, average: str = "macro"):
        if average not in ("macro", "micro"):
            raise ParamError(f"F1: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        self.metrics = _BinaryStats()
        super().__init__(name, output_names=output_names, label_names=label_names, average=average)

    def update(self, labels: Any, preds: Any) -> None:
        """Accumulate confusion counts of each (label, pred) pair."""
        for label, pred in _pairs(labels, preds, "F1"):
            self.metrics.update_binary_stats(label, pred, "F1")
            if self.average == "macro":
                self._add(self.metrics.fscore, 1)
                self.metrics.reset_stats()
            else:
                total = self.metrics.total_examples
                self.sum_metric = self.global_sum_metric = self.metrics.fscore * total
                self.num_inst = self.global_num_inst = total

    def reset(self) -> None:
        """Clear the statistics and the confusion counts."""
        super().reset()
        self.metrics.reset_stats()

    def reset_local(self) -> None:
        """Clear the local statistics and the confusion counts."""
        super().reset_local()
        self.metrics.reset_stats()


@register
class Perplexity(EvalMetric):
    """``exp`` of the mean negative log-likelihood of the labels.

    Predictions hold class probabilities along ``axis``; labels equal to ``ignore_label`` are
    left out of the sum and the count. Probabilities are clamped below at 1e-10.

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
            idx = _class_indices(flat[keep], probs.shape[1], "Perplexity")
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


@register
class Loss(EvalMetric):
    """Mean of the output values themselves (for networks whose output is a loss); labels unused.

    >>> import numpy as np
    >>> m = Loss()
    >>> m.update(None, [np.array([1.0, 2.0, 6.0])])
    >>> m.get()
    ('loss', 3.0)
    """

    def __init__(self, name: str = "loss", output_names: list[str] | None = None,
                 label_names: list[str] | None = None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, _: Any, preds: Any) -> None:
        """Add the sum and count of every output array."""
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
        for pred in preds:
            arr = _to_numpy(pred, "Loss")
            self._add(float(arr.sum()), int(arr.size))


@register
class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on numpy arrays, called once per (label, pred) pair.

    ``feval`` returns a value (counted as one instance) or a ``(sum_metric, num_inst)`` tuple.
    Unless ``allow_extra_outputs``, the numbers of labels and predictions must match.

    >>> import numpy as np
    >>> m = CustomMetric(lambda label, pred: float(np.sum(label == pred)), name='same')
    >>> m.update([np.array([1, 2])], [np.array([1, 3])])
    >>> m.get()
    ('same', 1.0)
    """

    def __init__(self, feval: Callable, name: str | None = None, allow_extra_outputs: bool = False,
                 output_names: list[str] | None = None, label_names: list[str] | None = None):
        if not callable(feval):
            raise ParamError(f"CustomMetric: feval must be callable, got {type(feval).__name__}")
        if name is None:
            name = getattr(feval, "__name__", "custom")
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels: Any, preds: Any) -> None:
        """Call ``feval`` on each (label, pred) pair and accumulate its result."""
        if self._allow_extra_outputs:
            labels = [labels] if isinstance(labels, (NDArray, numpy.ndarray)) else labels
            preds = [preds] if isinstance(preds, (NDArray, numpy.ndarray)) else preds
        else:
            labels, preds = check_label_shapes(labels, preds, wrap=True, where=f"CustomMetric({self.name})")
        for label, pred in zip(labels, preds):
            reval = self._feval(_to_numpy(label, self.name), _to_numpy(pred, self.name))
            if isinstance(reval, tuple):
                total, count = reval
                self._add(total, count)
            else:
                self._add(reval, 1)

    def get_config(self) -> dict:
        """Not supported: a custom metric's function cannot be serialised."""
        raise NotImplementedError("CustomMetric.get_config: a custom metric cannot be serialised")


def np(numpy_feval: Callable, name: str | None = None, allow_extra_outputs: bool = False) -> CustomMetric:
    """A :class:`CustomMetric` from a function of numpy ``(label, pred)``.

    >>> import numpy
    >>> def mad(label, pred):
    ...     return float(numpy.abs(label - pred).max())
    >>> m = np(mad)
    >>> m.update([numpy.array([1.0, 2.0])], [numpy.array([1.5, 4.0])])
    >>> m.get()
    ('mad', 2.0)
    """
    def feval(label: numpy.ndarray, pred: numpy.ndarray) -> Any:
        return numpy_feval(label, pred)
    feval.__name__ = getattr(numpy_feval, "__name__", "custom")
    return CustomMetric(feval, name, allow_extra_outputs)


def create(metric: Any, *args: Any, **kwargs: Any) -> EvalMetric:
    """A metric from a name (``'acc'``, ``'ce'``, ``'mse'``, ...), a callable, a list, or a metric.

    A callable becomes a :class:`CustomMetric`; a list becomes a :class:`CompositeEvalMetric` of
    each element created with the same extra arguments; an EvalMetric is returned unchanged.

    >>> create('top_k_accuracy', top_k=5).name
    'top_k_accuracy_5'
    >>> create(['acc', 'mse']).get()[0]
    ['accuracy', 'mse']
    """
    if isinstance(metric, EvalMetric):
        return metric
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, (list, tuple)):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if isinstance(metric, str):
        klass = _REGISTRY.get(metric.lower())
        if klass is None:
            raise ParamError(f"metric.create: unknown metric {metric!r} "
                             f"(known: {', '.join(sorted(_REGISTRY))})")
        return klass(*args, **kwargs)
    raise ParamError(f"metric.create: metric must be a name, a callable, a list or an EvalMetric, "
                     f"got {type(metric).__name__}")
