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
from .base import (
    CompositeEvalMetric,
    EvalMetric,
    alias,
    check_label_shapes,
    create,
    register,
)
from .classification import F1, MCC, PCC, Accuracy, TopKAccuracy
from .custom import CustomMetric, Loss, np
from .likelihood import CrossEntropy, NegativeLogLikelihood, Perplexity
from .regression import MAE, MSE, RMSE, PearsonCorrelation

__all__ = [
    "EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC", "PCC", "Perplexity",
    "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood", "PearsonCorrelation", "Loss",
    "CustomMetric", "check_label_shapes", "create", "register", "alias", "np",
]
