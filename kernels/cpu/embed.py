"""Embedding lookup and its gradient (dense, scatter-add).

Views: ``indices (M,)`` (the flattened index array, any real dtype: MXNet passes indices as
floats), ``weight (V, D)``, ``out``/``dout (M, D)``, ``dweight (V, D)``.

Index rule (MXNet 1.x Embedding with ``sparse_grad=False``, documented as "an index that is too
large is replaced by the index of the last vector"): an index is truncated toward zero and then
clipped to ``[0, V - 1]``, so a negative index reads row 0 and a NaN reads row 0 too. The backward
applies the same rule, so the gradient lands on the row the forward read. Use
:func:`count_out_of_range` to warn about or reject such indices before calling the kernels.

Kernels are ``numba.njit(cache=True, nogil=True)``, write into preallocated C-contiguous float32 or
float64 arrays (``weight``, ``out``, ``dout`` and ``dweight`` of one dtype), and need ``V > 0`` and
validated shapes: call :func:`check_embedding` first.

>>> import numpy as np
>>> w = np.arange(8, dtype=np.float32).reshape(4, 2)
>>> idx = np.array([1.0, 7.0, -2.0], dtype=np.float32)       # 7 -> 3 and -2 -> 0 (clipped)
>>> out = np.empty((3, 2), dtype=np.float32)
>>> check_embedding("embedding_forward", idx, w, out)
>>> embedding_forward(idx, w, out)
>>> out
array([[2., 3.],
       [6., 7.],
       [0., 1.]], dtype=float32)
>>> dw = np.empty_like(w)
>>> embedding_backward(idx, np.ones((3, 2), dtype=np.float32), dw, False)
>>> dw[:, 0]
array([1., 1., 0., 1.], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from symjit.base import shape_str

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from .gemm import KernelArgError, check_arrays, need_ndim, need_shape

__all__ = ["embedding_forward", "embedding_backward", "clip_index", "check_embedding", "count_out_of_range"]

_jit = njit(cache=True, nogil=True)


@_jit
def clip_index(v, n):
    """The row an index value ``v`` reads from an ``n``-row table: ``clip(trunc(v), 0, n - 1)``."""
    if not (v >= 0):
        return 0
    if v >= n:
        return n - 1
    return int(v)


@_jit
def embedding_forward(indices, weight, out):
    """``out[i, :] = weight[clip_index(indices[i], V), :]`` for ``indices (M,)``, ``weight (V, D)``."""
    v_n, d_n = weight.shape
    for i in range(indices.shape[0]):
        row = clip_index(indices[i], v_n)
        for j in range(d_n):
            out[i, j] = weight[row, j]


@_jit
def embedding_backward(indices, dout, dweight, accumulate):
    """``dweight[clip_index(indices[i]), :] += dout[i, :]``, zeroing ``dweight`` first unless ``accumulate``.

    Repeated indices add up (a dense scatter-add, in ``dweight``'s dtype).
    """
    v_n, d_n = dweight.shape
    if not accumulate:
        dweight[:, :] = 0.0
    for i in range(indices.shape[0]):
        row = clip_index(indices[i], v_n)
        for j in range(d_n):
            dweight[row, j] += dout[i, j]


def check_embedding(kernel: str, indices: np.ndarray, weight: np.ndarray, out: np.ndarray) -> None:
    """Validate an embedding call: ``indices (M,)`` real, ``weight (V, D)`` with ``V > 0`` and
    ``out (M, D)`` (the forward's ``out``, or the backward's ``dout``; pass ``dweight`` as ``weight``).

    >>> try:
    ...     check_embedding("embedding_forward", np.zeros(3), np.zeros((4, 2)), np.zeros((3, 5)))
    ... except ValueError as e:
    ...     print(e)
    embedding_forward: argument 'out' has shape (3,5), expected (3,2) for indices (3,) and weight (4,2)
    """
    check_arrays(kernel, weight=weight, out=out)
    if not isinstance(indices, np.ndarray) or indices.dtype.kind not in "fiu":
        what = indices.dtype if isinstance(indices, np.ndarray) else type(indices).__name__
        raise KernelArgError(f"{kernel}: argument 'indices' must be a real numpy array, got {what}")
    if not indices.flags.c_contiguous:
        raise KernelArgError(f"{kernel}: argument 'indices' (shape {shape_str(indices.shape)}) "
                             "must be C-contiguous")
    need_ndim(kernel, "indices", indices, 1)
    need_ndim(kernel, "weight", weight, 2)
    if weight.shape[0] == 0 and indices.shape[0] > 0:
        raise KernelArgError(f"{kernel}: argument 'weight' has shape {shape_str(weight.shape)}: "
                             "an empty table cannot be indexed")
    need_shape(kernel, "out", out, (indices.shape[0], weight.shape[1]),
               f" for indices {shape_str(indices.shape)} and weight {shape_str(weight.shape)}")


def count_out_of_range(indices: np.ndarray, num_rows: int) -> int:
    """How many indices fall outside ``[0, num_rows)`` after truncation (NaN counts) and get clipped.

    >>> count_out_of_range(np.array([0.0, 3.9, 4.0, -1.0, np.nan]), 4)
    3
    """
    with np.errstate(invalid="ignore"):
        t = np.trunc(np.asarray(indices, dtype=np.float64))
        ok = (t >= 0) & (t < num_rows)
    return int(np.count_nonzero(~ok))
