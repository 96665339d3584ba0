"""``mx.gluon.contrib.data.sampler``: :class:`IntervalSampler`, indices at a fixed interval
(``mx.gluon.data.sampler``'s class).

>>> list(IntervalSampler(5, 2, rollover=False))
[0, 2, 4]
"""
from ...data.sampler import IntervalSampler

__all__ = ["IntervalSampler"]
