"""``mx.gluon.contrib``: the contributed Gluon layers symjit has so far (``contrib.nn``:
``Concurrent``, ``HybridConcurrent``, ``Identity``).

>>> import symjit as mx
>>> from symjit.gluon.contrib.nn import Identity
>>> Identity()(mx.nd.ones((2,))).asnumpy().tolist()
[1.0, 1.0]
"""
from . import nn

__all__ = ["nn"]
