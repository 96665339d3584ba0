"""Python-level functions of ``mx.sym.contrib`` and ``mx.nd.contrib`` (MXNet defines these in
Python, not as operators), written once for both namespaces over the registered operators:
``rand_zipfian`` and ``uniform``.

>>> import symjit as mx
>>> mx.random.seed(0)
>>> samples, true_count, sampled_count = mx.nd.contrib.rand_zipfian(mx.nd.array([3]), 4, 5)
>>> samples.dtype, samples.shape, round(float(true_count.asnumpy()[0]), 6)   # log(5/4) / log(6) * 4
(<class 'numpy.int64'>, (4,), 0.498155)
"""
from __future__ import annotations

import math
from typing import Any

__all__ = ["rand_zipfian_for", "uniform_for"]


def rand_zipfian_for(ns: Any, random: Any):
    """``rand_zipfian`` over the namespace ``ns`` (``mx.nd`` or ``mx.sym``) and its ``random``."""
    def rand_zipfian(true_classes: Any, num_sampled: int, range_max: int, ctx: Any = None) -> tuple:
        """``num_sampled`` classes in [0, range_max) drawn from the log-uniform (Zipfian)
        distribution ``P(c) = log((c + 2) / (c + 1)) / log(range_max + 1)`` (int64), and the
        expected counts of the true and the sampled classes (``P(c) * num_sampled``, float64), as
        sampled softmax needs them."""
        log_range = math.log(range_max + 1)
        extra = {} if ctx is None else {"ctx": ctx}
        u = random.uniform(0, log_range, shape=(num_sampled,), dtype="float64", **extra)
        classes = ns.Cast(ns.floor(ns.exp(u) - 1.0) % range_max, dtype="int64")

        def expected(c: Any) -> Any:
            c = ns.Cast(c, dtype="float64")
            return ns.log((c + 2.0) / (c + 1.0)) / log_range * num_sampled
        return classes, expected(true_classes), expected(classes)
    return rand_zipfian


def uniform_for(random: Any):
    """``contrib.uniform``: the namespace's ``random.uniform``."""
    def uniform(*args: Any, **kwargs: Any) -> Any:
        """Samples from the uniform distribution on [low, high) (``random.uniform``)."""
        return random.uniform(*args, **kwargs)
    return uniform
