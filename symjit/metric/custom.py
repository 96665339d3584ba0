"""Metrics from user code: ``Loss`` (the mean of outputs), ``CustomMetric`` and :func:`np`."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy

from ..base import ParamError
from ..ndarray import NDArray
from .base import (
    EvalMetric,
    _to_numpy,
    check_label_shapes,
    register,
    wraps_callables,
)


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
@wraps_callables
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


