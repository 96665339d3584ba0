"""``mx.gluon.contrib.nn``: containers that run their children side by side and join the outputs
(``Concurrent``, ``HybridConcurrent``) and the pass-through ``Identity``.

>>> import symjit as mx
>>> from symjit.gluon import nn
>>> from symjit.gluon.contrib.nn import HybridConcurrent, Identity
>>> both = HybridConcurrent(axis=1)
>>> both.add(Identity(), nn.Dense(2, in_units=3))
>>> both.initialize(mx.init.One())
>>> both(mx.nd.ones((1, 3))).asnumpy().tolist()
[[1.0, 1.0, 1.0, 3.0, 3.0]]
"""
from .basic_layers import Concurrent, HybridConcurrent, Identity

__all__ = ["Concurrent", "HybridConcurrent", "Identity"]
