"""The NDArray class: MXNet 1.x's imperative n-dimensional array.

Storage sits in ``_store`` (a C-contiguous numpy array on CPU, a numba.cuda device array on GPU;
see :mod:`symjit.ndarray.storage`) and is read through ``_data``, which first runs the work the
lazy engine has queued (:mod:`symjit.lazy`; nothing to do when it is off or its queue is empty),
so a read always sees the current elements; shapes, dtypes and views need no such wait. Its
memory never moves after creation: every write (``a[:] = ...``, ``a += b``, ``copyto``) goes into
the existing buffer, so the compiled executor can use user arrays as its own storage. Slicing
along the first axis returns a view, as in MXNet. MXNet 1.x has no 0-d arrays: full reductions
and integer indexing of a 1-D array give shape (1,).

>>> import symjit as mx
>>> a = mx.nd.array([[1, 2], [3, 4]])
>>> a
<BLANKLINE>
[[1. 2.]
 [3. 4.]]
<NDArray 2x2 @cpu(0)>
>>> b = a[1]
>>> b[:] = 7
>>> a.asnumpy().tolist()
[[1.0, 2.0], [7.0, 7.0]]
>>> (a * 2 + 1).dtype
<class 'numpy.float32'>
"""
from __future__ import annotations

import ctypes
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..base import DTYPE_TO_FLAG, DTypeError, MXNetError, ShapeError, np_dtype, shape_str
from ..context import Context
from . import arith, dispatch, storage
from .dispatch import PENDING as _PENDING

__all__ = ["NDArray", "NDArrayIndexError", "infer_reshape", "wrap", "py_slice"]

# Python's ``slice``, under the name MXNet's module keeps it by (its ``slice`` is the operator).
py_slice = slice

# MXNet's tables of this module, for programs that read them: storage types, dtype flags,
# grad_req codes
_STORAGE_TYPE_UNDEFINED, _STORAGE_TYPE_DEFAULT, _STORAGE_TYPE_ROW_SPARSE, _STORAGE_TYPE_CSR = -1, 0, 1, 2
_STORAGE_TYPE_ID_TO_STR = {-1: "undefined", 0: "default", 1: "row_sparse", 2: "csr"}
_STORAGE_TYPE_STR_TO_ID = {v: k for k, v in _STORAGE_TYPE_ID_TO_STR.items()}
_DTYPE_NP_TO_MX = {None: -1, **{d.type: f for d, f in DTYPE_TO_FLAG.items()}}
_DTYPE_MX_TO_NP = {-1: None, **{f: d.type for d, f in DTYPE_TO_FLAG.items()}}
_GRAD_REQ_MAP = {"null": 0, "write": 1, "add": 3}


class NDArrayIndexError(MXNetError, IndexError):
    """An index outside an array's bounds."""


def wrap(arr: np.ndarray, ctx: Context) -> NDArray:
    """A new NDArray on ``ctx`` holding ``arr`` (a 0-d result becomes shape (1,), as in MXNet 1.x)."""
    arr = np.asarray(arr)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    return NDArray(storage.from_host(arr, ctx), ctx)


_TOSTYPE: list = []
"""How a dense array converts to a sparse storage type (:func:`symjit.ndarray.sparse.cast_storage`,
registered by the :mod:`symjit.ndarray` package)."""

_RAW_READER: list = []
"""How ``NDArray.__setstate__`` reads the array bytes a pickled MXNet NDArray holds
(:func:`symjit.ndarray.io.array_from_raw_bytes`, registered by the :mod:`symjit.ndarray` package
when it has imported its io module)."""


def register_raw_reader(reader: Any) -> None:
    """Make ``NDArray.__setstate__`` read MXNet's pickled array bytes with ``reader(raw, where)``
    (called by :mod:`symjit.ndarray`).

    >>> from symjit.ndarray.io import array_from_raw_bytes
    >>> _RAW_READER[0] is array_from_raw_bytes
    True
    """
    _RAW_READER[:] = [reader]


def _prod(dims: Any) -> int:
    out = 1
    for d in dims:
        out *= int(d)
    return out


def _reshape_codes(src: tuple[int, ...], target: tuple[int, ...], where: str) -> list[int]:
    out: list[int] = []
    infer = -1
    si = i = 0

    def take(n: int = 1) -> list[int]:
        nonlocal si
        if si + n > len(src):
            raise ShapeError(f"{where}: shape {tuple(target)} refers to more dimensions than the "
                             f"input shape {shape_str(src)} has")
        si += n
        return list(src[si - n:si])

    while i < len(target):
        d = int(target[i])
        if d == 0:
            out += take()
        elif d == -1:
            if infer >= 0:
                raise ShapeError(f"{where}: shape {tuple(target)} has more than one -1")
            infer = len(out)
            out.append(1)
            if si < len(src):
                si += 1
        elif d == -2:
            out += list(src[si:])
            si = len(src)
        elif d == -3:
            a, b = take(2)
            out.append(a * b)
        elif d == -4:
            if i + 2 >= len(target):
                raise ShapeError(f"{where}: -4 in shape {tuple(target)} must be followed by two dims")
            (whole,) = take()
            d1, d2 = int(target[i + 1]), int(target[i + 2])
            d1 = whole // d2 if d1 == -1 and d2 > 0 else d1
            d2 = whole // d1 if d2 == -1 and d1 > 0 else d2
            if d1 <= 0 or d2 <= 0 or d1 * d2 != whole:
                raise ShapeError(f"{where}: cannot split dimension {whole} of input shape "
                                 f"{shape_str(src)} into ({target[i + 1]}, {target[i + 2]})")
            out += [d1, d2]
            i += 2
        elif d > 0:
            out.append(d)
            if si < len(src):
                si += 1
        else:
            raise ShapeError(f"{where}: invalid dimension {d} in shape {tuple(target)}")
        i += 1
    if infer >= 0:
        rest = _prod(out[:infer] + out[infer + 1:])
        if rest == 0 or _prod(src) % rest:
            raise ShapeError(f"{where}: cannot reshape array of shape {shape_str(src)} into "
                             f"{tuple(target)}")
        out[infer] = _prod(src) // rest
    return out


def infer_reshape(src: tuple[int, ...], target: Any, reverse: bool = False,
                  where: str = "reshape") -> tuple[int, ...]:
    """The output shape of MXNet's ``Reshape`` with its special codes 0, -1, -2, -3, -4.

    >>> infer_reshape((2, 3, 4), (0, -1)), infer_reshape((2, 3, 4), (-3, 4)), infer_reshape((6,), (-4, 2, -1))
    ((2, 12), (6, 4), (2, 3))
    """
    if isinstance(target, (int, np.integer)):
        target = (int(target),)
    target = tuple(int(d) for d in target)
    if reverse:
        out = _reshape_codes(tuple(reversed(src)), tuple(reversed(target)), where)[::-1]
    else:
        out = _reshape_codes(tuple(src), target, where)
    if _prod(out) != _prod(src):
        raise ShapeError(f"{where}: cannot reshape array of shape {shape_str(src)} into "
                         f"{shape_str(tuple(out))} (target {tuple(target)}): sizes differ")
    return tuple(out)


def _index_array(key: Any) -> Any:
    """Turn NDArray / list indices into numpy integer arrays; leave basic keys alone."""
    if isinstance(key, NDArray):
        return key.asnumpy().astype(np.int64)
    if isinstance(key, list):
        return np.asarray(key, dtype=np.int64)
    if isinstance(key, tuple):
        return tuple(_index_array(k) for k in key)
    return key


def _value_host(value: Any, where: str) -> Any:
    if isinstance(value, NDArray):
        return value._host()
    if arith.is_scalar(value) or isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    raise DTypeError(f"{where}: cannot assign a value of type {type(value).__name__}")


def _wrap_fast(data: np.ndarray, ctx: Context) -> NDArray:
    """An NDArray over a fresh contiguous host array (no checks)."""
    r = NDArray.__new__(NDArray)
    r._store = data
    r._ctx = ctx
    return r


_HANDLES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()   # id -> an array handed out


def _from_handle(handle: ctypes.c_void_p) -> NDArray:
    """The live array a handle from :attr:`NDArray._as_parameter_` names."""
    src = _HANDLES.get(handle.value or 0)
    if src is None:
        raise MXNetError(f"NDArray: handle {handle.value!r} names no live NDArray of this process "
                         "(symjit has no C library: a handle comes from ctypes.cast(array, NDArrayHandle))")
    return src


class NDArray:
    """An n-dimensional array on a device, with MXNet 1.x's operators and methods.

    Create arrays with :func:`symjit.nd.array`, ``zeros``, ``ones`` and friends; the constructor
    wraps an existing storage buffer without copying.

    >>> import symjit as mx
    >>> mx.nd.ones((2, 3)).shape
    (2, 3)
    """

    # numpy's binary operators defer to NDArray's reflected ones (a numpy array or scalar on the
    # left), while numpy's functions read an NDArray through __array__ (np.all(a == 1)), as MXNet's
    __array_priority__ = 1000.0
    _ver: list | None = None  # the write counter shared with views (made on first need)
    _number = False           # an array made from a number operand of arithmetic
    _is_view = False          # made by _view: shares another array's storage

    def __init__(self, data: Any, ctx: Context | None = None, writable: bool = True):
        if isinstance(data, np.ndarray):
            if not data.flags.c_contiguous:
                data = np.ascontiguousarray(data)  # views and reshape rely on C order
        elif isinstance(data, ctypes.c_void_p):    # MXNet's NDArray(handle, writable)
            src = _from_handle(data)
            data, ctx = src._store, src._ctx
            self._ver, self._is_view = src._cell(), True
            if not writable and isinstance(data, np.ndarray):
                data = data.view()
                data.flags.writeable = False
        self._store = data
        self._ctx = ctx if ctx is not None else Context("cpu", 0)

    @property
    def _as_parameter_(self) -> ctypes.c_void_p:
        """The array as ctypes sees it, MXNet's ``NDArrayHandle`` (``ctypes.cast(arr, NDArrayHandle)``):
        symjit has no C library, so a handle names a live array, and ``NDArray(handle)`` is a view
        of it (``writable=False``: a read-only one)."""
        _HANDLES[id(self)] = self
        return ctypes.c_void_p(id(self))

    # -- storage access (the only places that touch _data) ------------------------------------
    @property
    def _data(self) -> Any:
        """The storage, for reading or writing its elements: queued work runs first
        (:func:`symjit.ndarray.dispatch.settle`)."""
        if _PENDING:
            dispatch.settle()
        return self._store

    @_data.setter
    def _data(self, data: Any) -> None:
        self._store = data

    def _host(self) -> np.ndarray:
        """The elements as numpy: the storage itself on CPU (do not keep), a copy on GPU."""
        return storage.to_host(self._data)

    def _new(self, arr: np.ndarray) -> NDArray:
        return wrap(arr, self._ctx)

    def _write(self, key: Any, value: Any, where: str) -> None:
        storage.write(self._data, key, value, where)
        self._bump()

    def _cell(self) -> list:
        """The write counter of this array's storage, one list shared by its views (autograd
        compares it to detect in-place changes of recorded arrays)."""
        if self._ver is None:
            self._ver = [0]
        return self._ver

    def _bump(self) -> None:
        """Count a write into this array's storage."""
        if self._ver is not None:
            self._ver[0] += 1

    def _view(self, data: Any) -> NDArray:
        """A new NDArray over ``data``, a view of this array's storage (sharing its write counter)."""
        v = NDArray(data, self._ctx)
        v._ver, v._is_view = self._cell(), True
        return v

    # -- attributes ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, a tuple of ints."""
        return tuple(int(d) for d in self._store.shape)

    @property
    def dtype(self) -> type:
        """The element type as a numpy type class (``numpy.float32``), as MXNet returns it."""
        return np.dtype(self._store.dtype).type

    @property
    def size(self) -> int:
        """The number of elements."""
        return _prod(self.shape)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._store.shape)

    @property
    def context(self) -> Context:
        """The device the array lives on."""
        return self._ctx

    ctx = context

    @property
    def stype(self) -> str:
        """The storage type: ``'default'`` (dense); the sparse subclasses
        (:mod:`symjit.ndarray.sparse_array`) say ``'row_sparse'`` or ``'csr'``."""
        return "default"

    def tostype(self, stype: str) -> NDArray:
        """A copy in storage type ``stype`` (``'default'``, ``'row_sparse'`` or ``'csr'``).

        >>> import symjit as mx
        >>> mx.nd.ones((2,)).tostype('default').asnumpy().tolist()
        [1.0, 1.0]
        >>> mx.nd.ones((2, 2)).tostype('csr').stype
        'csr'
        """
        if stype == "default":
            return self.copy()
        return _TOSTYPE[0](self, stype)

    @property
    def T(self) -> NDArray:
        """The transpose (arrays with fewer than 2 dimensions are returned as they are)."""
        if self.ndim < 2:
            return self
        if dispatch.on_gpu(self):
            return dispatch.invoke1("transpose", [self], where="NDArray.T")
        return dispatch.recorded("T", self._new(np.ascontiguousarray(self._host().T)), self)

    @property
    def handle(self) -> Any:
        """The storage buffer (numpy array or numba.cuda device array)."""
        return self._data

    # -- conversion and copies ----------------------------------------------------------------
    def asnumpy(self) -> np.ndarray:
        """A numpy copy of the elements."""
        return storage.to_host(self._data, copy=True)

    def asscalar(self) -> Any:
        """The single element as a numpy scalar; MXNetError unless the array has size 1."""
        if self.size != 1:
            raise ShapeError(f"NDArray.asscalar: the array must have exactly one element, got shape "
                             f"{shape_str(self.shape)}")
        return self._host().reshape(-1)[0].copy()

    def copyto(self, other: NDArray | Context) -> NDArray:
        """Copy into ``other`` (an NDArray of the same shape, written in place, dtype cast) or
        onto a new array on the Context ``other``."""
        return dispatch.recorded("copyto", None, self, other)

    def _copy_target(self, other: NDArray) -> bool:
        """Whether a copy into ``other`` has anything to write (False: ``other`` is this array);
        an error when the shapes differ."""
        if other is self:
            return False
        if other.shape != self.shape:
            raise ShapeError(f"NDArray.copyto: shape mismatch: source {shape_str(self.shape)}, "
                             f"destination {shape_str(other.shape)}")
        return True

    def _copyto(self, other: NDArray | Context) -> NDArray:
        if isinstance(other, NDArray):
            if not self._copy_target(other):
                return other
            if other.context == self._ctx and dispatch.on_gpu(self):   # on the device
                if other.dtype == self.dtype:
                    with storage.device_scope(self._ctx):
                        storage.copy_into(other._data, self._data)
                    other._bump()
                    return other
                return dispatch.invoke1("Cast", [self], {"dtype": np.dtype(other.dtype).name},
                                        out=other, where="NDArray.copyto")
            other._write(Ellipsis, self._host(), "NDArray.copyto")
            return other
        if isinstance(other, Context):
            ctx = storage.check_ctx(other, "NDArray.copyto")
            if ctx == self._ctx and dispatch.on_gpu(self):
                new = NDArray(storage.empty(self.shape, np.dtype(self.dtype), ctx), ctx)
                return self._copyto(new)
            return wrap(self.asnumpy(), ctx)
        raise DTypeError(f"NDArray.copyto: expected an NDArray or a Context, got {type(other).__name__}")

    def copy(self) -> NDArray:
        """A deep copy on the same context."""
        return self.copyto(self._ctx)

    def as_in_context(self, context: Context) -> NDArray:
        """This array if it already lives on ``context``, else a copy there."""
        if context == self._ctx:
            return self
        return self.copyto(context)

    def astype(self, dtype: Any, copy: bool = True) -> NDArray:
        """A copy converted to ``dtype`` (this array itself when ``copy=False`` and nothing changes)."""
        dt = np_dtype(dtype)
        if not copy and dt == np.dtype(self._data.dtype):
            return self
        if dispatch.on_gpu(self):
            if dt == np.dtype(self._data.dtype):
                return self.copy()
            return dispatch.invoke1("Cast", [self], {"dtype": dt.name}, where="NDArray.astype")
        with np.errstate(all="ignore"):
            return dispatch.recorded("astype", self._new(self._host().astype(dt)), self, dt)

    def wait_to_read(self) -> None:
        """Block until the work queued on this array's device has finished (on the CPU: until the
        lazy engine's queue has run)."""
        dispatch.settle()
        storage.synchronize(self._ctx)

    def wait_to_write(self) -> None:
        """Block until pending reads and writes of this array's device finish."""
        dispatch.settle()
        storage.synchronize(self._ctx)

    def reshape(self, *shape: Any, **kwargs: Any) -> NDArray:
        """A view with a new shape; takes ``(2, 3)``, ``2, 3`` or ``shape=``, MXNet's 0/-1/-2/-3/-4
        codes, and ``reverse=True`` to match codes from the right."""
        reverse = bool(kwargs.pop("reverse", False))
        if "shape" in kwargs:
            shape = (kwargs.pop("shape"),)
        if kwargs:
            raise MXNetError(f"NDArray.reshape: unknown arguments {sorted(kwargs)}")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        new = infer_reshape(self.shape, shape, reverse, "NDArray.reshape")
        return dispatch.recorded("reshape", self._view(storage.reshape_view(self._store, new)), self, new)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.asnumpy()
        return out if dtype is None else out.astype(dtype)

    # -- pickling -----------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        host = self._host()
        return {"shape": self.shape, "dtype": host.dtype.name, "data": host.tobytes(),
                "ctx": (self._ctx.device_type, self._ctx.device_id)}

    def __setstate__(self, state: dict) -> None:
        if isinstance(state, dict) and set(state) == {"handle"}:   # MXNet's state: its array bytes
            raw = state["handle"]
            if not isinstance(raw, (bytes, bytearray)):
                raise MXNetError("NDArray.__setstate__: MXNet's state holds no array bytes")
            if not _RAW_READER:
                raise MXNetError("NDArray.__setstate__: reading MXNet's pickled arrays needs symjit.ndarray "
                                 "imported (import symjit)")
            loaded = _RAW_READER[0](raw, "NDArray.__setstate__")    # onto the CPU
            self._ctx, self._data = loaded._ctx, loaded._data
            return
        dt = np_dtype(state["dtype"])
        shape = tuple(int(d) for d in state["shape"])
        raw = state["data"]
        if not isinstance(raw, bytes) or len(raw) != _prod(shape) * dt.itemsize:
            raise MXNetError(f"NDArray.__setstate__: data of {len(raw)} bytes does not fit shape "
                             f"{shape_str(shape)} and dtype {dt.name}")
        ctx = storage.check_ctx(Context(*state["ctx"]), "NDArray.__setstate__")
        arr = np.frombuffer(raw, dtype=dt).reshape(shape).copy()
        self._ctx = ctx
        self._data = storage.from_host(arr, ctx)

    # -- printing and Python protocols --------------------------------------------------------
    def __repr__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        return f"\n{self._host()}\n<{type(self).__name__} {dims} @{self._ctx}>"

    def __str__(self) -> str:
        return self.__repr__()

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self) -> Iterator[NDArray]:
        for i in range(self.shape[0]):
            yield self[i]

    def __hash__(self) -> int:
        return id(self) // 16

    def __bool__(self) -> bool:
        if self.size == 0:
            return False
        if self.size == 1:
            return bool(self._host().reshape(-1)[0])
        raise ShapeError("The truth value of an NDArray with multiple elements is ambiguous "
                         f"(shape {shape_str(self.shape)})")

    def __float__(self) -> float:
        return float(self.asscalar())

    def __int__(self) -> int:
        return int(self.asscalar())

    def __index__(self) -> int:
        if np.dtype(self.dtype).kind not in "iu":
            raise DTypeError(f"NDArray.__index__: only integer arrays can index, got {np.dtype(self.dtype)}")
        return int(self.asscalar())

    # -- indexing -----------------------------------------------------------------------------
    def _int_index(self, i: int) -> int:
        n = self.shape[0] if self.ndim else 0
        if not -n <= i < n:
            raise NDArrayIndexError(f"NDArray.__getitem__: index {i} is out of bounds for axis 0 "
                                    f"with size {n} (shape {shape_str(self.shape)})")
        return i % n

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key: Any, shape: tuple) -> bool:
        """Whether ``array[slc_key]`` of a C-contiguous array of ``shape`` is C-contiguous (numpy's
        rule: dimensions of length 1 do not count, an empty result is contiguous); ``slc_key`` is a
        tuple of slices and ints.

        >>> NDArray._basic_indexing_slice_is_contiguous((slice(1, 3), slice(None)), (4, 5))
        True
        >>> NDArray._basic_indexing_slice_is_contiguous((slice(None), slice(0, 2)), (4, 5))
        False
        """
        key = slc_key if isinstance(slc_key, tuple) else (slc_key,)
        lengths, strides = [], []
        inner = 1
        dims = list(zip(key + (slice(None),) * (len(shape) - len(key)), shape))
        for k, n in reversed(dims):
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                lengths.append(len(range(start, stop, step)))
                strides.append(step * inner)
            inner *= n
        if 0 in lengths:
            return True
        expected = 1
        for length, stride in zip(lengths, strides):     # innermost first
            if length != 1:
                if stride != expected:
                    return False
                expected *= length
        return True

    def __getitem__(self, key: Any) -> NDArray:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            i = self._int_index(int(key))
            row = storage.view(self._store, slice(i, i + 1))
            return dispatch.recorded("getitem", self._view(storage.reshape_view(row, self.shape[1:] or (1,))),
                                     self, i)
        if isinstance(key, slice) and key.step in (None, 1):
            part = storage.view(self._store, key)
            if part is not None:
                return dispatch.recorded("getitem", self._view(part), self, key)
        key = _index_array(key)
        try:
            part = storage.view(self._store, key)
            if part is not None:
                return dispatch.recorded("getitem", self._view(part), self, key)
            return dispatch.recorded("getitem", self._new(np.ascontiguousarray(self._host()[key])), self, key)
        except IndexError as exc:
            raise NDArrayIndexError(f"NDArray.__getitem__: index {key!r} is invalid for shape "
                                    f"{shape_str(self.shape)}: {exc}") from None

    def __setitem__(self, key: Any, value: Any) -> None:
        dispatch.recorded("setitem", None, self, key, value)

    def _setitem(self, key: Any, value: Any) -> None:
        where = "NDArray.__setitem__"
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            key = self._int_index(int(key))
        if isinstance(value, NDArray) and dispatch.assign(self, key, value):   # queued (symjit.lazy)
            self._bump()
            return
        if isinstance(value, NDArray) and value.context == self._ctx and dispatch.on_gpu(self):
            if storage.overlaps(value._data, self._data):
                value = value.copy()     # the device assignment must not read what it writes
            self._write(_index_array(key), value._data, where)   # device to device
            return
        self._write(_index_array(key), _value_host(value, where), where)

    # -- arithmetic ---------------------------------------------------------------------------
    def _operand(self, other: Any, where: str) -> Any:
        """``other`` as an operand of this array's compiled operator: an NDArray as it is, a number
        or numpy array in this array's dtype; None for unsupported types."""
        dt = self._store.dtype
        if type(other) is float and dt.kind == "f":     # the common case, without scalar_as's checks
            return np.array((other,), dt)
        if isinstance(other, NDArray):
            if other._ctx != self._ctx:
                raise MXNetError(f"{where}: operands are on different contexts {self._ctx} and "
                                 f"{other._ctx}; move one with as_in_context()")
            return other
        if arith.is_scalar(other):
            return arith.scalar_as(other, dt)
        if isinstance(other, np.ndarray) and other.dtype in DTYPE_TO_FLAG:
            return other.astype(dt)     # a copy: the operand is the call's own (it may wait in a queue)
        return None

    def _binary(self, other: Any, name: str, reflect: bool = False, where: str | None = None) -> NDArray:
        if type(other) is NDArray and other._store.shape == self._store.shape \
                and other._store.dtype == self._store.dtype and other._ctx == self._ctx:
            a, b = (other, self) if reflect else (self, other)       # the common case, checked here
            return dispatch.function(arith.ARRAY_OP[name])(a, b)
        where = where or f"NDArray {arith.BINARY[name][0]}"
        rhs = self._operand(other, where)
        if rhs is None:
            if name in ("eq", "ne"):
                return NotImplemented
            raise DTypeError(f"{where}: unsupported operand type {type(other).__name__}")
        return self._device_binary(rhs, name, reflect, where, None)

    def _device_binary(self, rhs: Any, name: str, reflect: bool, where: str,
                       out: NDArray | None) -> NDArray:
        """``self <name> rhs`` by the registered broadcast operator's compiled kernel on this
        array's device; ``rhs`` as :meth:`_operand` gave it. A scalar (already cast to this array's
        dtype, as MXNet casts it) becomes an array of one element, so a new value needs no new
        kernel."""
        if not isinstance(rhs, NDArray):
            number = rhs.size == 1      # a number (autograd.get_symbol writes it as a scalar op's)
            rhs = wrap(np.ascontiguousarray(rhs.reshape(-1) if rhs.ndim == 0 else rhs), self._ctx) \
                if rhs.ndim != 1 or not self._ctx.device.host_memory else _wrap_fast(rhs, self._ctx)
            rhs._number = number
        elif rhs._store.dtype != self._store.dtype:
            raise DTypeError(f"{where}: operands have different dtypes "
                             f"{np.dtype(self.dtype).name} and {np.dtype(rhs.dtype).name}; "
                             "convert one with astype()")
        a, b = (rhs, self) if reflect else (self, rhs)
        if a._store.shape != b._store.shape and rhs._store.shape != (1,):    # (1,): a scalar, or as one
            arith.broadcast_shape(where, a.shape, b.shape)
        fn = dispatch.function(arith.ARRAY_OP[name])
        return fn(a, b) if out is None else fn(a, b, out=out)

    def _inplace(self, other: Any, name: str) -> NDArray:
        where = f"NDArray {arith.BINARY[name][0]}="
        rhs = self._operand(other, where)
        if rhs is None:
            raise DTypeError(f"{where}: unsupported operand type {type(other).__name__}")
        rs = rhs._store.shape if isinstance(rhs, NDArray) else rhs.shape
        shape = self._store.shape if rs in (self._store.shape, (), (1,)) else \
            arith.broadcast_shape(where, self.shape, tuple(rs))
        if shape != self._store.shape:
            raise ShapeError(f"{where}: the result of shape {shape_str(shape)} does not fit the "
                             f"array of shape {shape_str(self.shape)} updated in place")
        self._device_binary(rhs, name, False, where, self)
        return self

    def __add__(self, o: Any) -> NDArray: return self._binary(o, "add")
    def __radd__(self, o: Any) -> NDArray: return self._binary(o, "add", True)
    def __sub__(self, o: Any) -> NDArray: return self._binary(o, "sub")
    def __rsub__(self, o: Any) -> NDArray: return self._binary(o, "sub", True)
    def __mul__(self, o: Any) -> NDArray: return self._binary(o, "mul")
    def __rmul__(self, o: Any) -> NDArray: return self._binary(o, "mul", True)
    def __truediv__(self, o: Any) -> NDArray: return self._binary(o, "div")
    def __rtruediv__(self, o: Any) -> NDArray: return self._binary(o, "div", True)
    def __mod__(self, o: Any) -> NDArray: return self._binary(o, "mod")
    def __rmod__(self, o: Any) -> NDArray: return self._binary(o, "mod", True)
    def __pow__(self, o: Any) -> NDArray: return self._binary(o, "pow")
    def __rpow__(self, o: Any) -> NDArray: return self._binary(o, "pow", True)
    def __eq__(self, o: Any) -> NDArray: return self._binary(o, "eq")  # type: ignore[override]
    def __ne__(self, o: Any) -> NDArray: return self._binary(o, "ne")  # type: ignore[override]
    def __gt__(self, o: Any) -> NDArray: return self._binary(o, "gt")
    def __ge__(self, o: Any) -> NDArray: return self._binary(o, "ge")
    def __lt__(self, o: Any) -> NDArray: return self._binary(o, "lt")
    def __le__(self, o: Any) -> NDArray: return self._binary(o, "le")
    def __iadd__(self, o: Any) -> NDArray: return self._inplace(o, "add")
    def __isub__(self, o: Any) -> NDArray: return self._inplace(o, "sub")
    def __imul__(self, o: Any) -> NDArray: return self._inplace(o, "mul")
    def __itruediv__(self, o: Any) -> NDArray: return self._inplace(o, "div")
    def __imod__(self, o: Any) -> NDArray: return self._inplace(o, "mod")
    def __ipow__(self, o: Any) -> NDArray: return self._inplace(o, "pow")

    __div__ = __truediv__
    __rdiv__ = __rtruediv__
    __idiv__ = __itruediv__

    def __neg__(self) -> NDArray:
        return dispatch.function("negative")(self)

    def __pos__(self) -> NDArray:
        return self.copy()

    def __abs__(self) -> NDArray:
        return dispatch.function("abs")(self)
