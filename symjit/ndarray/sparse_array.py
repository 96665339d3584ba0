"""MXNet's sparse NDArrays: :class:`RowSparseNDArray` and :class:`CSRNDArray`.

A sparse array keeps compressed components on the host (numpy arrays): a row_sparse array its
``data`` (the stored rows, shape ``(nnz_rows,) + shape[1:]``) and ``indices`` (their row numbers,
int64, sorted, unique); a csr matrix its ``data`` (the stored values), ``indices`` (their column
numbers, int64, sorted within each row) and ``indptr`` (where each row's values start, int64,
``shape[0] + 1`` entries). Both are NDArray subclasses: every operator without a sparse kernel
reads them through their *dense mirror* (``_store``), a dense buffer on the array's context made
from the components when first asked and kept while they stay the same. That is MXNet's storage
fallback: the operator runs its dense kernel and gives a dense result. A write into the mirror
(an operator's ``out=``, ``a[:] = b``, a gradient written by autograd) counts on the array's write
counter (``_ver``); the components are rebuilt from the mirror before they are next read, keeping
the rows (elements) that are not zero.

>>> import symjit as mx
>>> a = mx.nd.array([[0, 0], [1, 2], [0, 0]]).tostype('row_sparse')
>>> a.stype, a.indices.asnumpy().tolist(), a.data.asnumpy().tolist()
('row_sparse', [1], [[1.0, 2.0]])
>>> (a * 2).stype, (a + 1).stype
('row_sparse', 'default')
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError, ShapeError, np_dtype, shape_str
from ..context import Context
from . import dispatch, storage
from .ndarray import NDArray, wrap

__all__ = ["BaseSparseNDArray", "RowSparseNDArray", "CSRNDArray", "STYPES", "LIVE", "is_sparse",
           "dense_to_rsp", "dense_to_csr", "make_sparse", "check_rsp_parts", "check_csr_parts"]

STYPES = ("default", "row_sparse", "csr")
LIVE = [False]
"""True once a sparse array was made in this process: the operator functions look for sparse
arguments only then."""

_INDEX = np.dtype(np.int64)


def is_sparse(a: Any) -> bool:
    """Whether ``a`` is a sparse NDArray.

    >>> import symjit as mx
    >>> is_sparse(mx.nd.ones((2,))), is_sparse(mx.nd.ones((2, 2)).tostype('csr'))
    (False, True)
    """
    return isinstance(a, BaseSparseNDArray)


# -- conversions between dense and compressed layouts ------------------------------------------

def dense_to_rsp(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (data, indices) of a row_sparse array equal to ``dense``: its rows holding anything but
    zeros (NaN counts as non-zero).

    >>> d, i = dense_to_rsp(np.array([[0., 0.], [0., 3.]]))
    >>> d.tolist(), i.tolist()
    ([[0.0, 3.0]], [1])
    """
    if dense.ndim == 0:
        raise ShapeError("row_sparse: a row_sparse array needs at least one dimension")
    flat = dense.reshape(dense.shape[0], -1)
    rows = np.flatnonzero((flat != 0).any(axis=1)) if flat.shape[1] else np.zeros(0, _INDEX)
    return np.ascontiguousarray(dense[rows]), rows.astype(_INDEX)


def dense_to_csr(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (data, indices, indptr) of a csr matrix equal to the 2-D ``dense``.

    >>> d, i, p = dense_to_csr(np.array([[0., 1.], [2., 0.]]))
    >>> d.tolist(), i.tolist(), p.tolist()
    ([1.0, 2.0], [1, 0], [0, 1, 2])
    """
    if dense.ndim != 2:
        raise ShapeError(f"csr: a csr matrix has two dimensions, got shape {shape_str(dense.shape)}")
    r, c = np.nonzero(dense)
    indptr = np.zeros(dense.shape[0] + 1, _INDEX)
    np.cumsum(np.bincount(r, minlength=dense.shape[0]), out=indptr[1:])
    return np.ascontiguousarray(dense[r, c]), c.astype(_INDEX), indptr


def check_rsp_parts(shape: tuple, data: np.ndarray, indices: np.ndarray, where: str) -> None:
    """MXNetError unless (data, indices) is a valid row_sparse layout for ``shape``."""
    if len(shape) < 1:
        raise ShapeError(f"{where}: a row_sparse array needs at least one dimension, got shape ()")
    if indices.ndim != 1 or data.shape != (indices.shape[0], *shape[1:]):
        raise ShapeError(f"{where}: row_sparse data of shape {shape_str(data.shape)} and indices of "
                         f"shape {shape_str(indices.shape)} do not fit shape {shape_str(shape)} "
                         f"(data must be (len(indices),) + shape[1:])")
    if indices.size and (indices.min() < 0 or indices.max() >= shape[0]):
        raise MXNetError(f"{where}: row_sparse indices must lie in [0, {shape[0]}), got values from "
                         f"{int(indices.min())} to {int(indices.max())}")
    if indices.size > 1 and not (np.diff(indices) > 0).all():
        raise MXNetError(f"{where}: row_sparse indices must be sorted and unique, got "
                         f"{indices.tolist()[:10]}")


def check_csr_parts(shape: tuple, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
                    where: str) -> None:
    """MXNetError unless (data, indices, indptr) is a valid csr layout for ``shape``."""
    if len(shape) != 2:
        raise ShapeError(f"{where}: a csr matrix has two dimensions, got shape {shape_str(shape)}")
    if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1:
        raise ShapeError(f"{where}: csr data, indices and indptr must be 1-D, got shapes "
                         f"{shape_str(data.shape)}, {shape_str(indices.shape)}, {shape_str(indptr.shape)}")
    if indptr.shape[0] != shape[0] + 1:
        raise ShapeError(f"{where}: csr indptr has {indptr.shape[0]} entries; shape "
                         f"{shape_str(shape)} needs {shape[0] + 1}")
    if data.shape[0] != indices.shape[0]:
        raise ShapeError(f"{where}: csr data has {data.shape[0]} values and indices {indices.shape[0]}")
    if indptr[0] != 0 or indptr[-1] != indices.shape[0] or (np.diff(indptr) < 0).any():
        raise MXNetError(f"{where}: csr indptr must start at 0, never decrease and end at the number "
                         f"of values {indices.shape[0]}, got {indptr.tolist()[:12]}")
    if indices.size and (indices.min() < 0 or indices.max() >= shape[1]):
        raise MXNetError(f"{where}: csr column indices must lie in [0, {shape[1]}), got values from "
                         f"{int(indices.min())} to {int(indices.max())}")
    for r in range(shape[0]):
        cols = indices[indptr[r]:indptr[r + 1]]
        if cols.size > 1 and not (np.diff(cols) > 0).all():
            raise MXNetError(f"{where}: csr column indices of row {r} must be sorted and unique, "
                             f"got {cols.tolist()[:10]}")


# -- the classes ----------------------------------------------------------------------------------

class BaseSparseNDArray(NDArray):
    """The base of MXNet's sparse NDArrays: compressed components kept on the host, a dense mirror
    for the operators without a sparse kernel (see the module's text)."""

    _STYPE = ""
    _AUX: tuple[str, ...] = ()

    def __init__(self, shape: tuple, data: np.ndarray, aux: tuple, ctx: Context | None = None):
        self._sp_shape = tuple(int(d) for d in shape)
        self._sp_data = np.ascontiguousarray(data)
        self._sp_aux = tuple(np.ascontiguousarray(a, _INDEX) for a in aux)
        self._ctx = ctx if ctx is not None else Context("cpu", 0)
        self._mirror: Any = None
        self._ver = [0]
        self._synced = 0
        LIVE[0] = True

    # -- components and the dense mirror -----------------------------------------------------------
    def _parts(self) -> tuple[np.ndarray, tuple]:
        """The components (data, aux), rebuilt from the mirror if it was written since."""
        if self._mirror is not None and self._ver[0] != self._synced:
            self._from_dense(storage.to_host(self._data))
            self._synced = self._ver[0]
        return self._sp_data, self._sp_aux

    def _set_parts(self, data: np.ndarray, aux: tuple) -> None:
        """Replace the components (a write: the write counter moves, the mirror is dropped)."""
        self._sp_data = np.ascontiguousarray(data, self._sp_data.dtype)
        self._sp_aux = tuple(np.ascontiguousarray(a, _INDEX) for a in aux)
        self._mirror = None
        self._ver[0] += 1
        self._synced = self._ver[0]

    def _from_dense(self, dense: np.ndarray) -> None:
        raise NotImplementedError

    def _dense_host(self) -> np.ndarray:
        raise NotImplementedError

    @property   # type: ignore[override]
    def _store(self) -> Any:
        m = self._mirror
        if m is None:
            data, _ = self._parts()
            m = self._mirror = storage.from_host(self._dense_host(), self._ctx)
            self._synced = self._ver[0]
        return m

    @_store.setter
    def _store(self, buf: Any) -> None:
        self._set_dense(storage.to_host(buf), "NDArray")

    def _set_dense(self, dense: np.ndarray, where: str) -> None:
        if tuple(dense.shape) != self._sp_shape:
            raise ShapeError(f"{where}: a value of shape {shape_str(dense.shape)} does not fit the "
                             f"{self._STYPE} array of shape {shape_str(self._sp_shape)}")
        self._from_dense(np.asarray(dense).astype(self._sp_data.dtype, copy=False))
        self._mirror = None
        self._ver[0] += 1
        self._synced = self._ver[0]

    def _write(self, key: Any, value: Any, where: str) -> None:
        dense = self._dense_host()
        storage.write(dense, key, value, where)
        self._set_dense(dense, where)

    # -- attributes ------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, a tuple of ints."""
        return self._sp_shape

    @property
    def dtype(self) -> type:
        """The element type as a numpy type class."""
        return self._sp_data.dtype.type

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._sp_shape)

    @property
    def stype(self) -> str:
        """The storage type, ``'row_sparse'`` or ``'csr'``."""
        return self._STYPE

    @property
    def data(self) -> NDArray:
        """A copy of the stored values as a dense NDArray."""
        return wrap(self._parts()[0].copy(), self._ctx)

    @property
    def indices(self) -> NDArray:
        """A copy of the index array (int64) as a dense NDArray."""
        return wrap(self._parts()[1][0].copy(), self._ctx)

    def _aux_types(self) -> list:
        return [np.int64] * len(self._AUX)

    def check_format(self, full_check: bool = True) -> None:  # noqa: FBT001, FBT002 - MXNet's signature
        """MXNetError unless the components form a valid layout (``full_check``: the index values
        too, else only the shapes)."""
        raise NotImplementedError

    def asnumpy(self) -> np.ndarray:
        """A dense numpy copy of the elements."""
        return self._dense_host()

    def _host(self) -> np.ndarray:
        return self._dense_host()

    def __repr__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        return f"\n<{type(self).__name__} {dims} @{self._ctx}>"

    def __reduce__(self) -> Any:
        raise MXNetError(f"{type(self).__name__}: pickling sparse arrays is not supported; use mx.nd.save")

    def __len__(self) -> int:
        return self._sp_shape[0]

    # -- copies and conversions -------------------------------------------------------------------
    def _like(self, data: np.ndarray, aux: tuple, ctx: Context | None = None) -> BaseSparseNDArray:
        return type(self)(self._sp_shape, data, aux, ctx or self._ctx)

    def copy(self) -> BaseSparseNDArray:
        """A deep copy of the same storage type on the same context."""
        return self.copyto(self._ctx)

    def _copyto(self, other: Any) -> Any:
        data, aux = self._parts()
        if isinstance(other, Context):
            ctx = storage.check_ctx(other, "NDArray.copyto")
            return self._like(data.copy(), tuple(a.copy() for a in aux), ctx)
        if isinstance(other, NDArray):
            if not self._copy_target(other):
                return other
            if isinstance(other, BaseSparseNDArray):
                if other.stype == self.stype:
                    other._set_parts(data.astype(other._sp_data.dtype), tuple(a.copy() for a in aux))
                else:
                    other._set_dense(self._dense_host(), "NDArray.copyto")
                return other
            other._write(Ellipsis, self._dense_host(), "NDArray.copyto")
            return other
        raise MXNetError(f"NDArray.copyto: expected an NDArray or a Context, got {type(other).__name__}")

    def as_in_context(self, context: Context) -> BaseSparseNDArray:
        """This array if it lives on ``context``, else a copy there (same storage type)."""
        return self if context == self._ctx else self.copyto(context)

    def astype(self, dtype: Any, copy: bool = True) -> BaseSparseNDArray:  # noqa: FBT001, FBT002
        """A copy whose values are converted to ``dtype`` (same storage type)."""
        dt = np_dtype(dtype)
        data, aux = self._parts()
        if not copy and dt == data.dtype:
            return self
        return self._like(data.astype(dt), tuple(a.copy() for a in aux))

    def tostype(self, stype: str) -> NDArray:
        """A copy in storage type ``stype`` (``'default'``, ``'row_sparse'`` or ``'csr'``)."""
        return make_sparse(self._dense_host(), stype, self._ctx, "tostype") if stype != self._STYPE \
            else self.copy()

    def detach(self) -> BaseSparseNDArray:
        """A new array of the same storage type sharing nothing recorded (a copy of the components)."""
        data, aux = self._parts()
        return self._like(data, aux)

    def wait_to_read(self) -> None:
        """Block until queued work has finished."""
        storage.synchronize(self._ctx)

    def reshape(self, *shape: Any, **kwargs: Any) -> NDArray:
        raise MXNetError(f"{type(self).__name__}.reshape: reshaping a {self._STYPE} array is not supported; "
                         "convert it with tostype('default') first")

    def _view(self, data: Any) -> NDArray:
        v = NDArray(data, self._ctx)
        v._ver, v._is_view = self._cell(), True
        return v

    def _binary(self, other: Any, name: str, reflect: bool = False, where: str | None = None) -> NDArray:
        # MXNet's sparse arrays compute +, -, * with an array of their shape elementwise
        # (elemwise_add/sub/mul), keeping a sparse storage type where MXNet does
        if isinstance(other, NDArray) and other.shape == self.shape and name in ("add", "sub", "mul"):
            a, b = (other, self) if reflect else (self, other)
            return dispatch.function(f"elemwise_{name}")(a, b)
        return super()._binary(other, name, reflect, where)

    def __setitem__(self, key: Any, value: Any) -> None:
        if not (isinstance(key, slice) and key == slice(None)):
            raise MXNetError(f"{type(self).__name__}.__setitem__: only x[:] = value is supported for "
                             f"a {self._STYPE} array, got key {key!r}")
        if isinstance(value, BaseSparseNDArray):
            value.copyto(self)
        elif isinstance(value, NDArray):
            self._set_dense(value.asnumpy(), "NDArray.__setitem__")
        else:
            self._write(Ellipsis, np.asarray(value) if isinstance(value, (list, tuple)) else value,
                        "NDArray.__setitem__")


class RowSparseNDArray(BaseSparseNDArray):
    """A row_sparse array: the rows ``indices`` hold ``data``, every other row is zero.

    >>> import symjit as mx
    >>> a = mx.nd.sparse.row_sparse_array(([[1, 2]], [2]), shape=(3, 2))
    >>> a.asnumpy().tolist()
    [[0.0, 0.0], [0.0, 0.0], [1.0, 2.0]]
    """

    _STYPE = "row_sparse"
    _AUX = ("indices",)

    def _dense_host(self) -> np.ndarray:
        data, (indices,) = self._sp_data, self._sp_aux
        if self._mirror is not None and self._ver[0] != self._synced:
            data, (indices,) = self._parts()
        out = np.zeros(self._sp_shape, data.dtype)
        out[indices] = data
        return out

    def _from_dense(self, dense: np.ndarray) -> None:
        data, indices = dense_to_rsp(dense)
        self._sp_data, self._sp_aux = data, (indices,)

    def check_format(self, full_check: bool = True) -> None:  # noqa: FBT001, FBT002
        """MXNetError unless the indices are in range, sorted and unique and the data fits them.

        >>> import symjit as mx
        >>> mx.nd.sparse.row_sparse_array(([[1.]], [0]), shape=(2, 1)).check_format()
        """
        data, (indices,) = self._parts()
        check_rsp_parts(self._sp_shape, data, indices if full_check else indices[:0], "check_format")

    def __getitem__(self, key: Any) -> NDArray:
        if isinstance(key, slice) and key == slice(None):
            return self
        raise MXNetError(f"RowSparseNDArray.__getitem__: only x[:] is supported, got key {key!r}")


class CSRNDArray(BaseSparseNDArray):
    """A 2-D matrix in compressed sparse row format.

    >>> import symjit as mx
    >>> m = mx.nd.sparse.csr_matrix(([1, 2], [1, 0], [0, 1, 2]), shape=(2, 3))
    >>> m.asnumpy().tolist(), m.indptr.asnumpy().tolist()
    ([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]], [0, 1, 2])
    """

    _STYPE = "csr"
    _AUX = ("indptr", "indices")

    def _dense_host(self) -> np.ndarray:
        data, (indices, indptr) = self._sp_data, self._sp_aux
        if self._mirror is not None and self._ver[0] != self._synced:
            data, (indices, indptr) = self._parts()
        out = np.zeros(self._sp_shape, data.dtype)
        rows = np.repeat(np.arange(self._sp_shape[0]), np.diff(indptr))
        out[rows, indices] = data
        return out

    def _from_dense(self, dense: np.ndarray) -> None:
        data, indices, indptr = dense_to_csr(dense)
        self._sp_data, self._sp_aux = data, (indices, indptr)

    @property
    def indptr(self) -> NDArray:
        """A copy of the row pointers (int64) as a dense NDArray."""
        return wrap(self._parts()[1][1].copy(), self._ctx)

    def check_format(self, full_check: bool = True) -> None:  # noqa: FBT001, FBT002
        """MXNetError unless indptr, indices and data form a valid csr layout.

        >>> import symjit as mx
        >>> mx.nd.sparse.csr_matrix(([1.], [0], [0, 1]), shape=(1, 2)).check_format()
        """
        data, (indices, indptr) = self._parts()
        if full_check:
            check_csr_parts(self._sp_shape, data, indices, indptr, "check_format")
        elif data.shape != indices.shape or indptr.shape != (self._sp_shape[0] + 1,):
            raise ShapeError("check_format: csr data, indices and indptr do not fit each other")

    def asscipy(self) -> Any:
        """The matrix as a ``scipy.sparse.csr_matrix`` (a copy)."""
        import scipy.sparse as sps
        data, (indices, indptr) = self._parts()
        return sps.csr_matrix((data.copy(), indices.copy(), indptr.copy()), shape=self._sp_shape)

    def __getitem__(self, key: Any) -> NDArray:
        n = self._sp_shape[0]
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            i = self._int_index(int(key))
            key = slice(i, i + 1)
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise MXNetError(f"CSRNDArray.__getitem__: only an integer or a slice of step 1 along the "
                             f"first axis is supported, got {key!r}")
        begin, end, _ = key.indices(n)
        end = max(begin, end)
        data, (indices, indptr) = self._parts()
        lo, hi = int(indptr[begin]), int(indptr[end])
        return CSRNDArray((end - begin, self._sp_shape[1]), data[lo:hi].copy(),
                          (indices[lo:hi].copy(), indptr[begin:end + 1] - lo), self._ctx)


def make_sparse(dense: np.ndarray, stype: str, ctx: Context, where: str) -> NDArray:
    """An array of storage type ``stype`` holding the host array ``dense``.

    >>> m = make_sparse(np.eye(2, dtype=np.float32), 'csr', Context('cpu', 0), 'example')
    >>> m.indices.asnumpy().tolist()
    [0, 1]
    """
    if stype == "default":
        return wrap(np.array(dense), ctx)
    if stype == "row_sparse":
        data, indices = dense_to_rsp(dense)
        return RowSparseNDArray(dense.shape, data, (indices,), ctx)
    if stype == "csr":
        if dense.ndim != 2:
            raise ShapeError(f"{where}: stype 'csr' needs a 2-D array, got shape {shape_str(dense.shape)}")
        data, indices, indptr = dense_to_csr(dense)
        return CSRNDArray(dense.shape, data, (indices, indptr), ctx)
    raise MXNetError(f"{where}: unknown storage type {stype!r}; expected one of {STYPES}")
