"""GEMM kernels with their epilogues: FullyConnected forward/backward and bias handling.

All kernels call numpy's BLAS through Numba (``np.dot(a, b, out)``), so a GEMM runs at the speed
of the BLAS numpy was built with; transposed operands are passed as transposed views (no copy).
They write into ``out`` (overwriting it, except the ``*_accumulate`` kernels, which add to it),
work for float32 and float64 (one compiled specialisation per dtype) and assume C-contiguous
arrays of matching dtype and validated shapes: call :func:`check_gemm` / :func:`check_bias`
first, since Numba does no bounds checks.

>>> import numpy as np
>>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> w = np.ones((4, 3), dtype=np.float32)
>>> out = np.empty((2, 4), dtype=np.float32)
>>> check_gemm("nt", a, w, out)
>>> gemm_nt_bias(a, w, np.arange(4, dtype=np.float32), out)
>>> out
array([[ 3.,  4.,  5.,  6.],
       [12., 13., 14., 15.]], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from symjit.base import shape_str

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from .errors import KernelArgError

__all__ = [
    "gemm_nt", "gemm_nn", "gemm_tn", "gemm_nt_bias", "add_bias_rows", "col_sum", "col_sum_accumulate",
    "check_gemm", "check_bias", "check_col_sum", "check_arrays", "need_shape", "need_ndim", "KernelArgError",
]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

_jit = njit(cache=True, nogil=True)


# ---------------------------------------------------------------------------------------------
# Validation shared by every kernel family.


def check_arrays(kernel: str, **arrays: np.ndarray) -> np.dtype:
    """Check that the arrays are C-contiguous numpy arrays of one float dtype; return it.

    >>> check_arrays("gemm_nt", a=np.zeros((2, 2)), b=np.zeros((3, 2)))
    dtype('float64')
    """
    dtype = None
    first = ""
    for name, arr in arrays.items():
        if not isinstance(arr, np.ndarray):
            raise KernelArgError(f"{kernel}: argument '{name}' must be a numpy array, "
                                 f"got {type(arr).__name__}")
        if arr.dtype not in _FLOATS:
            raise KernelArgError(f"{kernel}: argument '{name}' has dtype {arr.dtype} (shape "
                                 f"{shape_str(arr.shape)}); expected float32 or float64")
        if not arr.flags.c_contiguous:
            raise KernelArgError(f"{kernel}: argument '{name}' (shape {shape_str(arr.shape)}) "
                                 "must be C-contiguous")
        if dtype is None:
            dtype, first = arr.dtype, name
        elif arr.dtype != dtype:
            raise KernelArgError(f"{kernel}: argument '{name}' has dtype {arr.dtype} but '{first}' has "
                                 f"{dtype}; all arrays must share one dtype")
    return dtype


def need_shape(kernel: str, name: str, arr: np.ndarray, want: tuple[int, ...], why: str = "") -> None:
    """Raise :class:`KernelArgError` unless ``arr.shape == want``."""
    if tuple(arr.shape) != tuple(want):
        raise KernelArgError(f"{kernel}: argument '{name}' has shape {shape_str(arr.shape)}, expected "
                             f"{shape_str(tuple(want))}{why}")


def need_ndim(kernel: str, name: str, arr: np.ndarray, ndim: int) -> None:
    """Raise :class:`KernelArgError` unless ``arr.ndim == ndim``."""
    if arr.ndim != ndim:
        raise KernelArgError(f"{kernel}: argument '{name}' must have {ndim} dimensions, "
                             f"got shape {shape_str(arr.shape)}")


_GEMM_KINDS = {"nt": "a @ b.T", "nn": "a @ b", "tn": "a.T @ b"}


def check_gemm(kind: str, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """Validate the operands of ``gemm_<kind>`` (kind ``'nt'``, ``'nn'`` or ``'tn'``).

    >>> try:
    ...     check_gemm("nt", np.zeros((2, 3)), np.zeros((4, 5)), np.zeros((2, 4)))
    ... except ValueError as err:
    ...     print(err)
    gemm_nt: argument 'b' has shape (4,5), expected (4,3) (out = a @ b.T)
    """
    if kind not in _GEMM_KINDS:
        raise KernelArgError(f"check_gemm: kind must be one of {sorted(_GEMM_KINDS)}, got {kind!r}")
    name = f"gemm_{kind}"
    check_arrays(name, a=a, b=b, out=out)
    for arg, arr in (("a", a), ("b", b), ("out", out)):
        need_ndim(name, arg, arr, 2)
    why = f" (out = {_GEMM_KINDS[kind]})"
    if kind == "nt":
        need_shape(name, "b", b, (b.shape[0], a.shape[1]), why)
        need_shape(name, "out", out, (a.shape[0], b.shape[0]), why)
    elif kind == "nn":
        need_shape(name, "b", b, (a.shape[1], b.shape[1]), why)
        need_shape(name, "out", out, (a.shape[0], b.shape[1]), why)
    else:
        need_shape(name, "b", b, (a.shape[0], b.shape[1]), why)
        need_shape(name, "out", out, (a.shape[1], b.shape[1]), why)


def check_bias(kernel: str, out: np.ndarray, bias: np.ndarray) -> None:
    """Validate a bias added to the rows of the 2-D ``out``: ``bias.shape == (out.shape[1],)``."""
    check_arrays(kernel, out=out, bias=bias)
    need_ndim(kernel, "out", out, 2)
    need_shape(kernel, "bias", bias, (out.shape[1],),
               f" (one value per column of out {shape_str(out.shape)})")


def check_col_sum(kernel: str, x: np.ndarray, out: np.ndarray) -> None:
    """Validate ``col_sum``: 2-D ``x`` and ``out.shape == (x.shape[1],)``."""
    check_arrays(kernel, x=x, out=out)
    need_ndim(kernel, "x", x, 2)
    need_shape(kernel, "out", out, (x.shape[1],), f" (one sum per column of x {shape_str(x.shape)})")


# ---------------------------------------------------------------------------------------------
# Kernels. Shape contract: documented per function; nothing is checked here.


@_jit
def gemm_nt(a, b, out):
    """``out[M, N] = a[M, K] @ b[N, K].T`` (FullyConnected forward: data @ weight.T)."""
    if a.shape[1] == 0:
        out[:] = 0
    else:
        np.dot(a, b.T, out)


@_jit
def gemm_nn(a, b, out):
    """``out[M, N] = a[M, K] @ b[K, N]`` (FullyConnected data gradient: dout @ weight)."""
    if a.shape[1] == 0:
        out[:] = 0
    else:
        np.dot(a, b, out)


@_jit
def gemm_tn(a, b, out):
    """``out[K, N] = a[M, K].T @ b[M, N]`` (FullyConnected weight gradient: dout.T @ data)."""
    if a.shape[0] == 0:
        out[:] = 0
    else:
        np.dot(a.T, b, out)


@_jit
def add_bias_rows(out, bias):
    """``out[M, N] += bias[N]`` for every row, in place."""
    m, n = out.shape
    for i in range(m):
        for j in range(n):
            out[i, j] += bias[j]


@_jit
def gemm_nt_bias(a, b, bias, out):
    """``out[M, N] = a[M, K] @ b[N, K].T + bias[N]`` (FullyConnected forward with bias)."""
    gemm_nt(a, b, out)
    add_bias_rows(out, bias)


@_jit
def col_sum_accumulate(x, out):
    """``out[N] += x[M, N].sum(axis=0)`` (bias gradient with grad_req='add').

    Sums in the arrays' dtype, row by row (cache-friendly order).
    """
    m, n = x.shape
    for i in range(m):
        for j in range(n):
            out[j] += x[i, j]


@_jit
def col_sum(x, out):
    """``out[N] = x[M, N].sum(axis=0)`` (bias gradient of FullyConnected)."""
    out[:] = 0
    col_sum_accumulate(x, out)
