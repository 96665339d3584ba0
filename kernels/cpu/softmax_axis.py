"""softmax and log_softmax on arrays of any rank, over an axis given at run time.

Each function runs :mod:`.softmax`'s row kernel on ``(rows, K)`` when the axis is the last one,
else its ``(A, K, B)`` kernel (:func:`.norm_axis.view3`). So a program calls these functions
themselves (``KernelWriter.direct``): numba compiles one per rank and dtype, kept in its cache
next to this file, instead of a kernel per rank and axis into which it would link the softmax
kernel and optimise it again.

>>> import numpy as np
>>> x = np.log(np.array([[1.0, 1.0], [1.0, 3.0]]))
>>> out = np.empty_like(x)
>>> softmax_forward(x, out, 1.0, 0)               # over the columns
>>> out
array([[0.5 , 0.25],
       [0.5 , 0.75]])
"""
from __future__ import annotations

from . import _cache_stamp, softmax  # noqa: F401  (_cache_stamp: numba's cache keyed by the package, first)
from ._jit import njit
from .norm_axis import last_rows, view3

__all__ = ["softmax_forward", "log_softmax_forward", "softmax_backward", "log_softmax_backward"]

_jit = njit(cache=True, nogil=True)


@_jit
def softmax_forward(x, out, temperature, axis):
    """:func:`.softmax.softmax_forward` over ``axis``."""
    if axis == x.ndim - 1:
        softmax.softmax_forward(last_rows(x), last_rows(out), temperature)
    else:
        softmax.softmax_forward_3d(view3(x, axis), view3(out, axis), temperature)


@_jit
def log_softmax_forward(x, out, temperature, axis):
    """:func:`.softmax.log_softmax_forward` over ``axis``."""
    if axis == x.ndim - 1:
        softmax.log_softmax_forward(last_rows(x), last_rows(out), temperature)
    else:
        softmax.log_softmax_forward_3d(view3(x, axis), view3(out, axis), temperature)


@_jit
def softmax_backward(dout, y, dx, temperature, axis):
    """:func:`.softmax.softmax_backward` over ``axis``."""
    if axis == y.ndim - 1:
        softmax.softmax_backward(last_rows(dout), last_rows(y), last_rows(dx), temperature)
    else:
        softmax.softmax_backward_3d(view3(dout, axis), view3(y, axis), view3(dx, axis), temperature)


@_jit
def log_softmax_backward(dout, y, dx, temperature, axis):
    """:func:`.softmax.log_softmax_backward` over ``axis``."""
    if axis == y.ndim - 1:
        softmax.log_softmax_backward(last_rows(dout), last_rows(y), last_rows(dx), temperature)
    else:
        softmax.log_softmax_backward_3d(view3(dout, axis), view3(y, axis), view3(dx, axis), temperature)
