"""``mx.gluon.contrib.estimator``: a training loop for Gluon networks (:class:`Estimator`), the
event handlers that make it up or extend it, and :class:`BatchProcessor`, the per-batch step.

>>> import symjit as mx
>>> from symjit.gluon.contrib.estimator import Estimator, EarlyStoppingHandler, BatchEnd
>>> issubclass(EarlyStoppingHandler, mx.gluon.contrib.estimator.EpochEnd)
True
"""
from . import batch_processor, estimator, event_handler
from .batch_processor import BatchProcessor
from .estimator import Estimator
from .event_handler import (
    BatchBegin,
    BatchEnd,
    CheckpointHandler,
    EarlyStoppingHandler,
    EpochBegin,
    EpochEnd,
    GradientUpdateHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    TrainBegin,
    TrainEnd,
    ValidationHandler,
)

__all__ = ["batch_processor", "estimator", "event_handler", "Estimator", "BatchProcessor", "TrainBegin",
           "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd", "StoppingHandler", "MetricHandler",
           "ValidationHandler", "LoggingHandler", "CheckpointHandler", "EarlyStoppingHandler",
           "GradientUpdateHandler"]
