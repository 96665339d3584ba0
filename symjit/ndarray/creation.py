"""Array creation: ``empty``, ``zeros``, ``ones``, ``full``, ``array``, ``arange``, ``*_like``.

Every function takes ``ctx=`` (default: the current context) and ``dtype=`` (default float32,
except ``array`` of an NDArray, which keeps its dtype, as MXNet 1.x does). ``zeros``, ``ones`` and
``full`` follow the shape semantics in force (``mx.util``): with classic shapes a 0 in ``shape`` is
an unknown size and ``()`` an unknown shape, an error as in MXNet; with NumPy shape semantics they
make zero-size and 0-d arrays (and ``array`` of a number or a 0-d array a 0-d array).

>>> import symjit as mx
>>> mx.nd.arange(3, repeat=2).asnumpy().tolist()
[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
>>> mx.nd.full((2,), 7, dtype='int32').asnumpy().tolist()
[7, 7]
"""
from __future__ import annotations

import ctypes
import math
import time
import weakref
from typing import Any

import numpy as np

from .. import profiler
from ..base import DTypeError, ParamError, ShapeError, np_dtype, shape_str
from ..context import Context
from ..util import is_np_shape
from . import dispatch, storage
from .ndarray import NDArray, wrap

__all__ = ["empty", "zeros", "ones", "full", "array", "arange", "eye", "linspace", "from_numpy", "zeros_like",
           "ones_like", "norm_shape", "place", "host_copy"]

_DEFAULT = np.dtype("float32")


def norm_shape(shape: Any, where: str) -> tuple[int, ...]:
    """A shape given as an int or a sequence of non-negative ints, as a tuple."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        out = tuple(int(d) for d in shape)
        ok = all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in shape)
    except TypeError:
        ok = False
    if not ok or any(d < 0 for d in out):
        raise ShapeError(f"{where}: shape must be an int or a tuple of non-negative ints, got {shape!r}")
    return out


def _filled_shape(shape: Any, where: str) -> tuple[int, ...]:
    """``norm_shape``, and with classic shapes no 0 and no ``()``: unknown there (MXNet's fill
    operators cannot make such an array)."""
    shp = norm_shape(shape, where)
    if not is_np_shape() and (not shp or 0 in shp):
        raise ShapeError(f"{where}: shape {shape_str(shp)} is not complete: with classic shapes 0 is an "
                         "unknown size and () an unknown shape; zero-size and 0-d arrays need NumPy shape "
                         "semantics (mx.np_shape())")
    return shp


def _dtype(dtype: Any, default: np.dtype = _DEFAULT) -> np.dtype:
    return default if dtype is None else np_dtype(dtype)


def place(arr: np.ndarray, ctx: Context | None, where: str, out: NDArray | None = None) -> NDArray:
    """Put a numpy result on ``ctx`` (checked), or write it into ``out`` in place and return ``out``."""
    if out is not None:
        if not isinstance(out, NDArray):
            raise DTypeError(f"{where}: out must be an NDArray, got {type(out).__name__}")
        shape = arr.shape or (1,)
        if shape != out.shape:
            raise ShapeError(f"{where}: out has shape {shape_str(out.shape)}, the result has shape "
                             f"{shape_str(shape)}")
        out._write(Ellipsis, arr.reshape(shape), where)
        return out
    return wrap(arr, storage.check_ctx(ctx, where))


def empty(shape: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """A new array (its elements are zero here; MXNet leaves them uninitialised).

    >>> import symjit as mx
    >>> mx.nd.empty((2, 3)).shape
    (2, 3)
    """
    dt = _dtype(dtype)
    ctx = storage.check_ctx(ctx, "empty")
    return NDArray(storage.alloc(norm_shape(shape, "empty"), dt, ctx, 0), ctx)


def zeros(shape: Any, ctx: Context | None = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    """A new array of zeros.

    >>> import symjit as mx
    >>> mx.nd.zeros(2).asnumpy().tolist()
    [0.0, 0.0]
    """
    return full(shape, 0, ctx, dtype, kwargs.get("out"), where="zeros")


def ones(shape: Any, ctx: Context | None = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    """A new array of ones.

    >>> import symjit as mx
    >>> mx.nd.ones((1, 2), dtype='int8').asnumpy().tolist()
    [[1, 1]]
    """
    return full(shape, 1, ctx, dtype, kwargs.get("out"), where="ones")


def full(shape: Any, val: Any, ctx: Context | None = None, dtype: Any = None,
         out: NDArray | None = None, where: str = "full") -> NDArray:
    """A new array with every element ``val`` (``where``: the function named in errors).

    >>> import symjit as mx
    >>> mx.nd.full((2,), 0.5).asnumpy().tolist()
    [0.5, 0.5]
    """
    if not profiler.active("profile_imperative"):
        return _fill(_filled_shape(shape, where), val, ctx, _dtype(dtype), out, where)
    start = time.perf_counter()     # profiled as MXNet's operator (_zeros, _ones, _full)
    try:
        return _fill(_filled_shape(shape, where), val, ctx, _dtype(dtype), out, where)
    finally:
        profiler.record_op(f"_{where}", start, time.perf_counter())


def _fill(shp: tuple[int, ...], val: Any, ctx: Context | None, dt: np.dtype, out: NDArray | None,
          where: str) -> NDArray:
    """``full`` of a checked shape (or one taken from an existing array, zero-size included)."""
    with np.errstate(all="ignore"):
        value = np.asarray(val).astype(dt)
    if out is not None:
        return place(np.full(shp, value, dtype=dt), None, where, out)
    ctx = storage.check_ctx(ctx, where)
    return NDArray(storage.alloc(shp, dt, ctx, value), ctx)


def host_copy(source: Any, dtype: Any, where: str) -> np.ndarray:
    """A new C-contiguous numpy copy of ``source`` (NDArray, numpy array, nested list or number)
    as ``dtype``. The default is the source's own dtype for an NDArray and float32 for anything
    else, numpy arrays included (MXNet 1.x's rule for ``mx.nd.array`` and ``NDArrayIter``).
    Sources that do not hold numbers (strings, objects, complex) are an error naming their dtype.

    >>> import numpy as np
    >>> host_copy(np.arange(3.0), None, 'array').dtype
    dtype('float32')
    """
    if isinstance(source, NDArray):
        src = source.asnumpy()
        dt = _dtype(dtype, src.dtype)
    else:
        dt = _dtype(dtype)
        try:
            src = np.asarray(source)
        except (ValueError, TypeError) as exc:
            raise DTypeError(f"{where}: cannot convert {type(source).__name__} to an array: "
                             f"{exc}") from None
        if src.dtype.kind not in "biuf":
            raise DTypeError(f"{where}: source must hold numbers, got {type(source).__name__} of "
                             f"dtype {src.dtype}")
    with np.errstate(all="ignore"):
        return np.array(src, dtype=dt, order="C", copy=True)


def array(source_array: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """A new array copied from an NDArray, numpy array, nested list or number.

    The dtype defaults to the source's dtype when it is an NDArray, else to float32 (numpy arrays
    included, as in MXNet 1.x: ``mx.nd.array(np.zeros(2))`` is float32); ``dtype=`` overrides it.

    >>> import symjit as mx, numpy as np
    >>> mx.nd.array([[1, 2]]).dtype, mx.nd.array(np.arange(2.0)).dtype
    (<class 'numpy.float32'>, <class 'numpy.float32'>)
    >>> mx.nd.array(np.arange(2), dtype='int64').dtype
    <class 'numpy.int64'>
    """
    host, ctx = host_copy(source_array, dtype, "array"), storage.check_ctx(ctx, "array")
    if host.ndim == 0 and is_np_shape():
        return NDArray(storage.alloc((), host.dtype, ctx, host), ctx)
    return wrap(host, ctx)


def arange(start: float, stop: float | None = None, step: float = 1.0, repeat: int = 1,
           infer_range: Any = None, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """Evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times.

    >>> import symjit as mx
    >>> mx.nd.arange(2, 6, 2).asnumpy().tolist()
    [2.0, 4.0]
    """
    if stop is None:
        start, stop = 0.0, start
    start, stop, step = float(start), float(stop), float(step)
    if step == 0:
        raise ParamError("arange: step must not be 0")
    if int(repeat) < 1:
        raise ParamError(f"arange: repeat must be >= 1, got {repeat}")
    n = math.ceil((stop - start) / step)
    if n <= 0:
        raise ParamError(f"arange: invalid range (start, stop, step) = ({start}, {stop}, {step}): "
                         "it holds no values")
    params = {"start": start, "stop": stop, "step": step, "repeat": int(repeat), "dtype": _dtype(dtype).name}
    return dispatch.invoke("_arange", [], params, where="arange", ctx=storage.check_ctx(ctx, "arange"))[0]


def eye(N: int, M: int = 0, k: int = 0, ctx: Context | None = None, dtype: Any = None,
        **kwargs: Any) -> NDArray:
    """An N x M matrix (M=0: N x N) with ones on diagonal ``k``, computed by the registered
    ``_eye`` operator's kernel on ``ctx``.

    >>> import symjit as mx
    >>> mx.nd.eye(2, 3, k=1).asnumpy().tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    ctx = storage.check_ctx(ctx, "eye")
    params = {"N": N, "M": M, "k": k, "dtype": "float32" if dtype is None else dtype}
    return dispatch.invoke("_eye", [], params, where="eye", ctx=ctx)[0]


def linspace(start: float, stop: float, num: int, endpoint: bool = True, ctx: Context | None = None,
             dtype: Any = None) -> NDArray:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included when ``endpoint``),
    computed by the registered ``_linspace`` operator's kernel on ``ctx``.

    >>> import symjit as mx
    >>> mx.nd.linspace(0, 1, 5).asnumpy().tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    ctx = storage.check_ctx(ctx, "linspace")
    params = {"start": start, "stop": stop, "num": num, "endpoint": endpoint,
              "dtype": "float32" if dtype is None else dtype}
    return dispatch.invoke("_linspace", [], params, where="linspace", ctx=ctx)[0]


_LOCKED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()   # arrays from_numpy made read-only


def _writable_view(a: np.ndarray) -> np.ndarray:
    """A writable view of C-contiguous ``a`` (read-only or not) that keeps ``a`` alive."""
    if a.size == 0:
        return a.copy()
    buf = (ctypes.c_byte * a.nbytes).from_address(a.ctypes.data)
    buf.owner = a
    return np.frombuffer(buf, dtype=a.dtype).reshape(a.shape)


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True) -> NDArray:
    """An NDArray on the CPU holding ``ndarray``: with ``zero_copy`` (a C-contiguous array, as in
    MXNet) the same memory, and ``ndarray`` itself becomes read-only (MXNet's documentation
    disallows changing it; writes go through the NDArray and show in it); else a copy.

    >>> import numpy as np, symjit as mx
    >>> a = np.arange(3, dtype=np.float32)
    >>> b = mx.nd.from_numpy(a)
    >>> b[0] = 7
    >>> a.tolist(), a.flags.writeable
    ([7.0, 1.0, 2.0], False)
    """
    if not isinstance(ndarray, np.ndarray):
        raise DTypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    if zero_copy and not ndarray.flags["C_CONTIGUOUS"]:
        raise ParamError("from_numpy: zero_copy needs a C-contiguous array; pass zero_copy=False to copy")
    if zero_copy:
        if not ndarray.flags.writeable and _LOCKED.get(id(ndarray)) is not ndarray:
            raise ParamError("from_numpy: zero_copy needs a writable array; pass zero_copy=False to copy")
        arr = _writable_view(ndarray)
        ndarray.flags.writeable = False
        _LOCKED[id(ndarray)] = ndarray
    else:
        arr = np.array(ndarray, order="C")
    return NDArray(arr.reshape(1) if arr.ndim == 0 else arr, storage.check_ctx(None, "from_numpy"))


def _like(data: NDArray, val: int, where: str) -> NDArray:
    if not isinstance(data, NDArray):
        raise DTypeError(f"{where}: data must be an NDArray, got {type(data).__name__}")
    return _fill(data.shape, val, data.context, np.dtype(data.dtype), None, where)   # any array's shape


def zeros_like(data: NDArray, **kwargs: Any) -> NDArray:
    """Zeros with the shape, dtype and context of ``data``.

    >>> import symjit as mx
    >>> mx.nd.zeros_like(mx.nd.ones((2,))).asnumpy().tolist()
    [0.0, 0.0]
    """
    result = _like(data, 0, "zeros_like")
    out = kwargs.get("out")
    return result if out is None else place(result._host(), None, "zeros_like", out)


def ones_like(data: NDArray, **kwargs: Any) -> NDArray:
    """Ones with the shape, dtype and context of ``data``.

    >>> import symjit as mx
    >>> mx.nd.ones_like(mx.nd.zeros((1,), dtype='int32')).asnumpy().tolist()
    [1]
    """
    result = _like(data, 1, "ones_like")
    out = kwargs.get("out")
    return result if out is None else place(result._host(), None, "ones_like", out)
