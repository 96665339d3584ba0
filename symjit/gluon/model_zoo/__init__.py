"""``mx.gluon.model_zoo``: MXNet 1.9.1's predefined networks (:mod:`.vision`) and the local store
of their pretrained parameters (:mod:`.model_store`; symjit downloads nothing).

>>> import symjit as mx
>>> net = mx.gluon.model_zoo.vision.get_model('squeezenet1.1', classes=10)
>>> net.output[0].weight.shape   # its input channels are inferred at the first call
(10, 0, 1, 1)
"""
from . import model_store, vision

__all__ = ["model_store", "vision"]
