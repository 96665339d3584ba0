"""Reductions over one axis and the gradients that broadcast back.

Every reduction works on an ``(A, R, B)`` view of its input (``R`` = the reduced axis, or the
product of several adjacent reduced axes; ``A``/``B`` = the products of the axes before/after it)
and writes an ``(A, B)`` output; reducing the last axis is ``B = 1``. The caller reshapes (no copy).

Semantics (MXNet 1.x):

* ``sum``/``mean`` accumulate in float64 (``mean`` divides by ``R``); ``max``/``min`` propagate
  NaN (a NaN anywhere along ``R`` gives NaN), like numpy.
* ``argmax``/``argmin`` write the index of the first occurrence as a float of the output's dtype
  (MXNet returns indices in the data's float dtype); a NaN counts as the extreme (numpy's rule).
* Gradients: ``sum`` broadcasts ``dout`` back, ``mean`` broadcasts ``dout / R``, and ``max``/``min``
  route ``dout`` to *every* position equal to the result (MXNet's ``_backward_max`` multiplies by
  ``x == y``, so tied maxima each get the full gradient; NaN positions get none).

The ``broadcast_back_*`` kernels overwrite ``dx`` or, with ``accumulate=True``, add to it (MXNet's
``grad_req='add'``). All kernels are ``numba.njit(cache=True, nogil=True)`` on C-contiguous float32
or float64 arrays of one dtype, and trust their caller for shapes: call :func:`check_reduce` /
:func:`check_broadcast_back` / :func:`check_sum_rows` first.

>>> import numpy as np
>>> x = np.array([[[1.0], [5.0], [5.0]]])          # (A=1, R=3, B=1)
>>> y, idx = np.empty((1, 1)), np.empty((1, 1))
>>> check_reduce("reduce_max", x, y)
>>> reduce_max(x, y); reduce_argmax(x, idx)
>>> y, idx
(array([[5.]]), array([[1.]]))
>>> dx = np.empty_like(x)
>>> broadcast_back_extreme(x, y, np.ones((1, 1)), dx, False)
>>> dx.ravel()                                      # both maxima get the gradient
array([0., 1., 1.])
"""
from __future__ import annotations

import numpy as np

from symjit.base import shape_str

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from .gemm import KernelArgError, check_arrays, need_ndim, need_shape
from .reduce_axes import reduce_block_of

__all__ = [
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_argmax", "reduce_argmin",
    "sum_rows", "sum_rows_accumulate", "reduce_block", "reduce_block_of",
    "broadcast_back_sum", "broadcast_back_mean", "broadcast_back_extreme",
    "check_reduce", "check_broadcast_back", "check_sum_rows", "REDUCE_KERNELS",
]

_jit = njit(cache=True, nogil=True)


# ---------------------------------------------------------------------------------------------
# sum / mean


reduce_block = _jit(reduce_block_of)


@_jit
def _sum_strip(x, a, r_n):
    """``x[a, :, 0].sum()`` in float64 with four independent partial sums (no latency chain)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    r = 0
    while r + 4 <= r_n:
        s0 += x[a, r, 0]
        s1 += x[a, r + 1, 0]
        s2 += x[a, r + 2, 0]
        s3 += x[a, r + 3, 0]
        r += 4
    while r < r_n:
        s0 += x[a, r, 0]
        r += 1
    return (s0 + s1) + (s2 + s3)


@_jit
def _sum_into(x, out, scale):
    a_n, r_n, b_n = x.shape
    if b_n == 1:
        for a in range(a_n):
            out[a, 0] = _sum_strip(x, a, r_n) * scale
        return
    acc_v = np.zeros(b_n, np.float64)
    for a in range(a_n):
        acc_v[:] = 0.0
        for r in range(r_n):
            for b in range(b_n):
                acc_v[b] += x[a, r, b]
        for b in range(b_n):
            out[a, b] = acc_v[b] * scale


@_jit
def reduce_sum(x, out):
    """``out[A, B] = x[A, R, B].sum(axis=1)`` (float64 accumulation; 0 when ``R == 0``)."""
    _sum_into(x, out, 1.0)


@_jit
def reduce_mean(x, out):
    """``out[A, B] = x[A, R, B].mean(axis=1)`` (float64 accumulation; ``R > 0``)."""
    _sum_into(x, out, 1.0 / x.shape[1])


@_jit
def sum_rows(x, out):
    """``out[K] = x[M, K].sum(axis=0)`` (e.g. a bias gradient), float64 accumulation."""
    out2 = out.reshape((1, out.shape[0]))
    _sum_into(x.reshape((1, x.shape[0], x.shape[1])), out2, 1.0)


@_jit
def sum_rows_accumulate(x, out):
    """``out[K] += x[M, K].sum(axis=0)`` (``grad_req='add'``), float64 accumulation."""
    acc = np.zeros(x.shape[1], np.float64)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            acc[j] += x[i, j]
    for j in range(x.shape[1]):
        out[j] = out[j] + acc[j]


# ---------------------------------------------------------------------------------------------
# max / min (NaN-propagating) and argmax / argmin (first occurrence)


@_jit
def _better(cur, v, want_max):
    """True when ``v`` replaces the running extreme ``cur`` (a NaN ``cur`` is never replaced)."""
    if cur != cur:
        return False
    if v != v:
        return True
    return v > cur if want_max else v < cur


@_jit
def _extreme(x, out, idx, want_max, want_index):
    a_n, r_n, b_n = x.shape
    best = np.empty(b_n, x.dtype)
    arg = np.zeros(b_n, np.int64)
    for a in range(a_n):
        for b in range(b_n):
            best[b] = x[a, 0, b]
            arg[b] = 0
        for r in range(1, r_n):
            for b in range(b_n):
                v = x[a, r, b]
                if _better(best[b], v, want_max):
                    best[b] = v
                    arg[b] = r
        for b in range(b_n):
            if want_index:
                idx[a, b] = arg[b]
            else:
                out[a, b] = best[b]


@_jit
def reduce_max(x, out):
    """``out[A, B] = x[A, R, B].max(axis=1)`` (``R > 0``; NaN propagates)."""
    _extreme(x, out, out, True, False)


@_jit
def reduce_min(x, out):
    """``out[A, B] = x[A, R, B].min(axis=1)`` (``R > 0``; NaN propagates)."""
    _extreme(x, out, out, False, False)


@_jit
def reduce_argmax(x, out):
    """``out[A, B]`` = index (as a float) of the first maximum along ``R`` (``R > 0``)."""
    _extreme(x, out, out, True, True)


@_jit
def reduce_argmin(x, out):
    """``out[A, B]`` = index (as a float) of the first minimum along ``R`` (``R > 0``)."""
    _extreme(x, out, out, False, True)


# ---------------------------------------------------------------------------------------------
# gradients broadcast back over R


@_jit
def _broadcast(dout, dx, scale, accumulate):
    for a in range(dx.shape[0]):
        for r in range(dx.shape[1]):
            for b in range(dx.shape[2]):
                g = dout[a, b] * scale
                if accumulate:
                    dx[a, r, b] += g
                else:
                    dx[a, r, b] = g


@_jit
def broadcast_back_sum(dout, dx, accumulate):
    """Gradient of ``sum``: ``dx[a, r, b] (=|+=) dout[a, b]``."""
    _broadcast(dout, dx, 1.0, accumulate)


@_jit
def broadcast_back_mean(dout, dx, accumulate):
    """Gradient of ``mean``: ``dx[a, r, b] (=|+=) dout[a, b] / R``."""
    _broadcast(dout, dx, 1.0 / max(dx.shape[1], 1), accumulate)


@_jit
def broadcast_back_extreme(x, y, dout, dx, accumulate):
    """Gradient of ``max``/``min``: ``dx[a, r, b] (=|+=) dout[a, b] * (x[a, r, b] == y[a, b])``.

    Every position equal to the result gets the full ``dout`` (MXNet); NaN positions get 0.
    """
    for a in range(dx.shape[0]):
        for r in range(dx.shape[1]):
            for b in range(dx.shape[2]):
                g = dout[a, b] if x[a, r, b] == y[a, b] else 0.0
                if accumulate:
                    dx[a, r, b] += g
                else:
                    dx[a, r, b] = g


# ---------------------------------------------------------------------------------------------
# validation (pure Python: call before the kernels)

#: kernels that need a non-empty reduced axis
_NEED_NONEMPTY = ("reduce_mean", "reduce_max", "reduce_min", "reduce_argmax", "reduce_argmin")

#: reduction name -> kernel, for callers that dispatch by MXNet op name
REDUCE_KERNELS = {"sum": reduce_sum, "mean": reduce_mean, "max": reduce_max, "min": reduce_min,
                  "argmax": reduce_argmax, "argmin": reduce_argmin}


def check_reduce(kernel: str, x: np.ndarray, out: np.ndarray) -> None:
    """Validate a reduction of ``x (A, R, B)`` into ``out (A, B)``.

    >>> try:
    ...     check_reduce("reduce_max", np.zeros((2, 0, 3)), np.zeros((2, 3)))
    ... except ValueError as e:
    ...     print(e)
    reduce_max: cannot reduce an empty axis (x has shape (2,0,3))
    """
    check_arrays(kernel, x=x, out=out)
    need_ndim(kernel, "x", x, 3)
    need_shape(kernel, "out", out, (x.shape[0], x.shape[2]), f" for x of shape {shape_str(x.shape)}")
    if kernel in _NEED_NONEMPTY and x.shape[1] == 0 and out.size > 0:
        raise KernelArgError(f"{kernel}: cannot reduce an empty axis (x has shape {shape_str(x.shape)})")


def check_broadcast_back(kernel: str, dout: np.ndarray, dx: np.ndarray, x: np.ndarray | None = None,
                         y: np.ndarray | None = None) -> None:
    """Validate a gradient broadcast from ``dout (A, B)`` to ``dx (A, R, B)`` (``x``, ``y`` for max/min)."""
    arrays = {"dout": dout, "dx": dx}
    if x is not None:
        arrays["x"] = x
    if y is not None:
        arrays["y"] = y
    check_arrays(kernel, **arrays)
    need_ndim(kernel, "dx", dx, 3)
    want = (dx.shape[0], dx.shape[2])
    need_shape(kernel, "dout", dout, want, f" for dx of shape {shape_str(dx.shape)}")
    if x is not None:
        need_shape(kernel, "x", x, dx.shape)
    if y is not None:
        need_shape(kernel, "y", y, want, f" for dx of shape {shape_str(dx.shape)}")


def check_sum_rows(kernel: str, x: np.ndarray, out: np.ndarray) -> None:
    """Validate :func:`sum_rows` / :func:`sum_rows_accumulate`: ``x (M, K)`` into ``out (K,)``."""
    check_arrays(kernel, x=x, out=out)
    need_ndim(kernel, "x", x, 2)
    need_shape(kernel, "out", out, (x.shape[1],), f" for x of shape {shape_str(x.shape)}")
