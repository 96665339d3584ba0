"""Metric base: the registry, label/prediction checks, ``EvalMetric``, ``CompositeEvalMetric``
and :func:`create`."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy

from ..base import MXNetError, ParamError, ShapeError, shape_str
from ..ndarray import NDArray

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


_FOR_CALLABLES: list[type] = []


def wraps_callables(klass: type) -> type:
    """A class decorator making :func:`create` wrap a callable ``feval(label, pred)`` in ``klass``
    (:class:`~symjit.metric.custom.CustomMetric` is so decorated, in the module built on this one).

    >>> import symjit as mx
    >>> _FOR_CALLABLES == [mx.metric.CustomMetric]
    True
    """
    _FOR_CALLABLES[:] = [klass]
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



def _from_json(text: str, args: tuple, kwargs: dict) -> Any:
    """A config from JSON text: an object (a config) or MXNet's ``[name, {arguments}]``."""
    import json
    if args or kwargs:
        raise ParamError("metric.create: a JSON config takes no further arguments")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ParamError(f"metric.create: {text[:80]!r} is not a metric name nor valid JSON: {exc}") from None
    if (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
            and isinstance(value[1], dict)):
        return {**value[1], "metric": value[0]}
    if not isinstance(value, dict):
        raise ParamError(f"metric.create: a JSON config must be an object, got {text[:80]!r}")
    return value


def create(metric: Any, *args: Any, **kwargs: Any) -> EvalMetric:
    """A metric from a name (``'acc'``, ``'ce'``, ``'mse'``, ...), a callable, a list, or a metric.

    A callable becomes a :class:`CustomMetric`; a list becomes a :class:`CompositeEvalMetric` of
    each element created with the same extra arguments; an EvalMetric is returned unchanged. A
    config (``get_config()``'s dict, or that dict as JSON text) makes the metric it names under
    ``'metric'`` with the other entries as constructor arguments.

    >>> create('top_k_accuracy', top_k=5).name
    'top_k_accuracy_5'
    >>> create(['acc', 'mse']).get()[0]
    ['accuracy', 'mse']
    >>> create('{"metric": "Accuracy", "axis": 0, "name": "acc0"}').name
    'acc0'
    """
    if isinstance(metric, EvalMetric):
        return metric
    if isinstance(metric, str) and metric.lstrip().startswith(("{", "[")):
        metric = _from_json(metric, args, kwargs)
        args, kwargs = (), {}
    if isinstance(metric, dict):
        if args or kwargs:
            raise ParamError("metric.create: a config takes no further arguments")
        config = dict(metric)
        name = config.pop("metric", None)
        if not isinstance(name, str):
            raise ParamError(f"metric.create: a config needs a 'metric' entry naming the metric, "
                             f"got {metric!r}")
        return create(name, **config)
    if callable(metric):
        return _FOR_CALLABLES[0](metric, *args, **kwargs)
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
