"""``mx.gluon.contrib.data``: the contributed samplers (``IntervalSampler``, the same class as
``mx.gluon.data.IntervalSampler``).

>>> from symjit.gluon.contrib.data import IntervalSampler
>>> list(IntervalSampler(5, 2))
[0, 2, 4, 1, 3]
"""
from . import sampler
from .sampler import IntervalSampler

__all__ = ["IntervalSampler", "sampler"]
