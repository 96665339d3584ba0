"""One-pass closeness check of two arrays, for ``mx.test_utils``' comparisons of big arrays.

numpy's ``allclose`` makes several temporaries of the arrays' size (``|a - b|``,
``atol + rtol * |b|``, the finiteness and comparison masks): ~5-8 ms for a million elements, what
a test comparing optimizer states of 1024 x 1024 weights thousands of times spends most of its
time on. :func:`all_close` reads each pair of elements once and stops at the first that is not
close. The rule is numpy's, in float64: ``x == y``, or ``y`` finite and
``|x - y| <= atol + rtol * |y|``, or (``equal_nan``) both NaN.

>>> import numpy as np
>>> a = np.array([1.0, 2.0, np.nan]); b = np.array([1.0, 2.0 + 1e-9, np.nan])
>>> all_close(a, b, 1e-5, 1e-8, True), all_close(a, b, 1e-5, 1e-8, False)
(True, False)
>>> all_close(np.array([np.inf]), np.array([np.inf]), 0.0, 0.0, False)
True
"""
from __future__ import annotations

import math

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit

__all__ = ["all_close"]


@njit(cache=True, nogil=True)
def all_close(a, b, rtol, atol, equal_nan):
    """Whether each ``a[i]`` is close to ``b[i]`` (1-D arrays of one length; see the module)."""
    for i in range(a.shape[0]):
        x = float(a[i])
        y = float(b[i])
        if x == y or (math.isfinite(y) and abs(x - y) <= atol + rtol * abs(y)):
            continue
        if equal_nan and math.isnan(x) and math.isnan(y):
            continue
        return False
    return True
