"""``mx.nd.sparse``: making sparse arrays, converting between storage types, and the operators with
a sparse result.

Creation follows MXNet 1.9.1: :func:`row_sparse_array` from ``(data, indices)``, :func:`csr_matrix`
from ``(data, indices, indptr)``, ``(data, (row, col))``, a scipy matrix, a dense array or a shape;
:func:`zeros`, :func:`empty`, :func:`array`, :func:`cast_storage` (``NDArray.tostype``) and
:func:`retain`. Every index is checked here, where it enters: numba's kernels do not check bounds.

Operators (:func:`call`, asked by every ``mx.nd`` operator function given a sparse array) run
their dense kernel on the arrays' dense mirrors (MXNet's storage fallback); the result is dense
unless MXNet 1.9.1 gives the operator a sparse result for those storage types (:data:`KEEP`,
:func:`result_stype`), and then it is converted to that type. ``dot`` of a transposed csr matrix
and a dense (or row_sparse) array is row_sparse, as is the weight gradient of ``dot(csr, w)``
when ``w``'s gradient is row_sparse.

>>> import symjit as mx
>>> m = mx.nd.sparse.csr_matrix(([1.0, 2.0], [0, 2], [0, 1, 2]), shape=(2, 3))
>>> mx.nd.sparse.dot(m, mx.nd.ones((3, 1))).asnumpy().tolist()
[[1.0], [2.0]]
>>> mx.nd.dot(m, mx.nd.ones((2, 4)), transpose_a=True).stype
'row_sparse'
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import DTypeError, MXNetError, ShapeError, np_dtype, shape_str
from ..context import Context
from . import arith, creation, dispatch, storage
from .ndarray import NDArray
from .sparse_array import (
    STYPES,
    BaseSparseNDArray,
    CSRNDArray,
    RowSparseNDArray,
    check_csr_parts,
    check_rsp_parts,
    is_sparse,
    make_sparse,
)

__all__ = ["BaseSparseNDArray", "RowSparseNDArray", "CSRNDArray", "row_sparse_array", "csr_matrix",
           "zeros", "empty", "array", "cast_storage", "retain", "dot", "add", "subtract", "multiply",
           "divide", "elemwise_add", "elemwise_sub", "elemwise_mul", "zeros_like", "call", "KEEP",
           "result_stype", "is_sparse", "STYPES", "dense_zeros", "nd_array", "nd_zeros_like"]

_DEFAULT_DTYPE = np.dtype(np.float32)


def _ctx(ctx: Any, where: str) -> Context:
    return storage.check_ctx(ctx, where)


def _host(x: Any, dtype: Any, where: str) -> np.ndarray:
    if isinstance(x, NDArray):
        out = x.asnumpy()
        return out if dtype is None else out.astype(np_dtype(dtype))
    return creation.host_copy(x, dtype, where)


def _dense_source(x: Any, dtype: Any, where: str) -> np.ndarray:
    """A dense source's elements: in ``dtype``, else a numpy array's own dtype, else float32."""
    return _host(x, dtype if dtype is not None or not isinstance(x, np.ndarray) else x.dtype, where)


def integer_indices(x: Any, where: str, what: str) -> np.ndarray:
    """``x`` (an NDArray or array-like of whole numbers) as flat int64 indices; an error naming
    ``what`` for fractions or a non-numeric dtype."""
    arr = x.asnumpy() if isinstance(x, NDArray) else np.asarray(x)
    if arr.size and arr.dtype.kind == "f" and not (arr == np.round(arr)).all():
        raise DTypeError(f"{where}: {what} must hold integers, got {arr.ravel()[:6].tolist()}")
    if arr.dtype.kind not in "iuf" and arr.size:
        raise DTypeError(f"{where}: {what} must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64).reshape(-1)


def _shape(shape: Any, where: str) -> tuple[int, ...]:
    return creation.norm_shape(shape, where)


def _is_shape(x: Any) -> bool:
    return isinstance(x, tuple) and len(x) > 0 and all(isinstance(d, (int, np.integer)) for d in x)


# -- creation -------------------------------------------------------------------------------------

def row_sparse_array(arg1: Any, shape: Any = None, ctx: Context | None = None,
                     dtype: Any = None) -> RowSparseNDArray:
    """A :class:`RowSparseNDArray` from ``(data, indices)`` (the stored rows and their row numbers,
    sorted and unique), from another row_sparse array or a dense array (its non-zero rows), or
    from a shape (all zeros). ``shape`` defaults to the smallest one the rows fit in.

    >>> import symjit as mx
    >>> a = mx.nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [0, 2]), shape=(4, 2))
    >>> a.shape, a.indices.asnumpy().tolist()
    ((4, 2), [0, 2])
    """
    where = "row_sparse_array"
    c = _ctx(ctx, where)
    if _is_shape(arg1):
        return zeros("row_sparse", arg1, c, dtype)
    if isinstance(arg1, RowSparseNDArray):
        out = arg1.copyto(c)
        return out if dtype is None else out.astype(dtype)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        default = arg1[0].dtype if isinstance(arg1[0], (NDArray, np.ndarray)) else None
        data = _host(arg1[0], dtype if dtype is not None else default, where)
        if data.dtype == np.float64 and dtype is None and not isinstance(arg1[0], (NDArray, np.ndarray)):
            data = data.astype(_DEFAULT_DTYPE)
        indices = integer_indices(arg1[1], where, "indices")
        if shape is None:
            if data.ndim < 1:
                raise ShapeError(f"{where}: data of shape {shape_str(data.shape)} needs at least one "
                                 "dimension")
            shape = (int(indices.max()) + 1 if indices.size else 0, *data.shape[1:])
        shp = _shape(shape, where)
        if data.ndim >= 1 and data.shape[0] == 0:
            data = data.reshape((0, *shp[1:]))
        check_rsp_parts(shp, data, indices, where)
        return RowSparseNDArray(shp, data, (indices,), c)
    if isinstance(arg1, BaseSparseNDArray):
        return make_sparse(_host(arg1, dtype, where), "row_sparse", c, where)
    dense = _dense_source(arg1, dtype, where)
    if shape is not None and _shape(shape, where) != dense.shape:
        raise ShapeError(f"{where}: shape {tuple(shape)} does not match the array's {shape_str(dense.shape)}")
    return make_sparse(dense, "row_sparse", c, where)


def _from_scipy(m: Any, dtype: Any, c: Context, where: str) -> CSRNDArray:
    m = m.tocsr()
    m.sort_indices()
    m.sum_duplicates()
    data = np.asarray(m.data, np_dtype(dtype) if dtype is not None else m.data.dtype)
    return CSRNDArray(m.shape, data, (m.indices.astype(np.int64), m.indptr.astype(np.int64)), c)


def _is_scipy(x: Any) -> bool:
    return type(x).__module__.startswith("scipy.sparse")


def csr_matrix(arg1: Any, shape: Any = None, ctx: Context | None = None, dtype: Any = None) -> CSRNDArray:
    """A :class:`CSRNDArray` from ``(data, indices, indptr)``, ``(data, (row, col))`` (coordinates;
    duplicates are summed), a scipy sparse matrix, another csr matrix, a dense 2-D array, or a
    shape (all zeros).

    >>> import symjit as mx
    >>> mx.nd.sparse.csr_matrix(([5.0], ([1], [2])), shape=(2, 3)).asnumpy().tolist()
    [[0.0, 0.0, 0.0], [0.0, 0.0, 5.0]]
    """
    where = "csr_matrix"
    c = _ctx(ctx, where)
    if _is_shape(arg1):
        if len(arg1) != 2:
            raise ShapeError(f"{where}: a csr matrix has two dimensions, got shape {tuple(arg1)}")
        return zeros("csr", arg1, c, dtype)
    if _is_scipy(arg1):
        return _from_scipy(arg1, dtype, c, where)
    if isinstance(arg1, CSRNDArray):
        out = arg1.copyto(c)
        return out if dtype is None else out.astype(dtype)
    if isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple):
        import scipy.sparse as sps
        data = _host(arg1[0], dtype, where)
        row, col = integer_indices(arg1[1][0], where, "row"), integer_indices(arg1[1][1], where, "col")
        shp = _shape(shape, where) if shape is not None else (
            int(row.max()) + 1 if row.size else 0, int(col.max()) + 1 if col.size else 0)
        if data.shape != row.shape or row.shape != col.shape:
            raise ShapeError(f"{where}: data, row and col must have one length, got "
                             f"{data.shape}, {row.shape}, {col.shape}")
        for name, idx, n in (("row", row, shp[0]), ("col", col, shp[1])):
            if idx.size and (idx.min() < 0 or idx.max() >= n):
                raise MXNetError(f"{where}: {name} indices must lie in [0, {n}) for shape {shp}")
        return _from_scipy(sps.coo_matrix((data, (row, col)), shape=shp), None, c, where)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        default = arg1[0].dtype if isinstance(arg1[0], (NDArray, np.ndarray)) else None
        data = _host(arg1[0], dtype if dtype is not None else default, where).reshape(-1)
        if data.dtype == np.float64 and dtype is None and not isinstance(arg1[0], (NDArray, np.ndarray)):
            data = data.astype(_DEFAULT_DTYPE)
        indices = integer_indices(arg1[1], where, "indices")
        indptr = integer_indices(arg1[2], where, "indptr")
        if shape is None:
            shape = (max(indptr.shape[0] - 1, 0), int(indices.max()) + 1 if indices.size else 0)
        shp = _shape(shape, where)
        check_csr_parts(shp, data, indices, indptr, where)
        return CSRNDArray(shp, data, (indices, indptr), c)
    if isinstance(arg1, BaseSparseNDArray):
        return make_sparse(_host(arg1, dtype, where), "csr", c, where)
    dense = _dense_source(arg1, dtype, where)
    if shape is not None and _shape(shape, where) != dense.shape:
        raise ShapeError(f"{where}: shape {tuple(shape)} does not match the array's {shape_str(dense.shape)}")
    return make_sparse(dense, "csr", c, where)


def zeros(stype: str, shape: Any, ctx: Context | None = None, dtype: Any = None,
          **kwargs: Any) -> NDArray:
    """An all-zero array of storage type ``stype`` (no stored rows or values).

    >>> import symjit as mx
    >>> z = mx.nd.sparse.zeros('row_sparse', (3, 2))
    >>> z.stype, z.indices.shape, float(z.asnumpy().sum())
    ('row_sparse', (0,), 0.0)
    """
    where = "zeros"
    c, shp = _ctx(ctx, where), _shape(shape, where)
    dt = np_dtype(dtype) if dtype is not None else _DEFAULT_DTYPE
    out = kwargs.get("out")
    if stype == "default":
        return creation.zeros(shp, c, dt, out=out)
    if stype == "row_sparse":
        if not shp:
            raise ShapeError(f"{where}: a row_sparse array needs at least one dimension")
        made: NDArray = RowSparseNDArray(shp, np.zeros((0, *shp[1:]), dt), (np.zeros(0, np.int64),), c)
    elif stype == "csr":
        if len(shp) != 2:
            raise ShapeError(f"{where}: a csr matrix has two dimensions, got shape {shape_str(shp)}")
        made = CSRNDArray(shp, np.zeros(0, dt), (np.zeros(0, np.int64), np.zeros(shp[0] + 1, np.int64)), c)
    else:
        raise MXNetError(f"{where}: unknown storage type {stype!r}; expected one of {STYPES}")
    if out is not None:
        made.copyto(out)
        return out
    return made


def empty(stype: str, shape: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """An array of storage type ``stype`` (sparse ones hold nothing: all zeros).

    >>> import symjit as mx
    >>> mx.nd.sparse.empty('csr', (2, 2)).stype
    'csr'
    """
    return zeros(stype, shape, ctx, dtype)


def array(source_array: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """A sparse array copied from a sparse NDArray or a scipy sparse matrix (a csr matrix).

    >>> import symjit as mx, scipy.sparse as sps
    >>> mx.nd.sparse.array(sps.eye(2, format='csr')).stype
    'csr'
    """
    if isinstance(source_array, BaseSparseNDArray):
        out = source_array.copyto(_ctx(ctx if ctx is not None else source_array.context, "array"))
        return out if dtype is None else out.astype(dtype)
    if _is_scipy(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    raise DTypeError(f"mx.nd.sparse.array: expected a sparse NDArray or a scipy sparse matrix, got "
                     f"{type(source_array).__name__}")


def cast_storage(data: NDArray, stype: str, out: NDArray | None = None) -> NDArray:
    """``data`` converted to storage type ``stype`` (a copy).

    >>> import symjit as mx
    >>> mx.nd.cast_storage(mx.nd.eye(2), 'csr').stype
    'csr'
    """
    if not isinstance(data, NDArray):
        raise DTypeError(f"cast_storage: data must be an NDArray, got {type(data).__name__}")
    if stype not in STYPES:
        raise MXNetError(f"cast_storage: unknown storage type {stype!r}; expected one of {STYPES}")
    result = data.copy() if data.stype == stype else make_sparse(data.asnumpy(), stype, data.context,
                                                                 "cast_storage")
    result = _adopt(result, data, "cast_storage")
    if out is not None:
        result.copyto(out)
        return out
    return result


def retain(data: RowSparseNDArray, indices: Any) -> RowSparseNDArray:
    """The rows of the row_sparse ``data`` whose numbers are in ``indices``; the others dropped.

    >>> import symjit as mx
    >>> a = mx.nd.sparse.row_sparse_array(([[1.], [2.]], [0, 3]), shape=(4, 1))
    >>> mx.nd.sparse.retain(a, mx.nd.array([3, 1])).indices.asnumpy().tolist()
    [3]
    """
    where = "sparse.retain"
    if not isinstance(data, RowSparseNDArray):
        raise DTypeError(f"{where}: data must be a row_sparse array, got storage type "
                         f"{getattr(data, 'stype', type(data).__name__)!r}")
    rows = integer_indices(indices, where, "indices")
    if rows.size and (rows.min() < 0 or rows.max() >= data.shape[0]):
        raise MXNetError(f"{where}: indices must lie in [0, {data.shape[0]}), got values from "
                         f"{int(rows.min())} to {int(rows.max())}")
    values, (have,) = data._parts()
    keep = np.isin(have, rows)
    return RowSparseNDArray(data.shape, values[keep].copy(), (have[keep].copy(),), data.context)


RowSparseNDArray.retain = retain   # type: ignore[attr-defined]


def dense_zeros(shape: Any, ctx: Context | None = None, dtype: Any = None, stype: str | None = None,
                **kwargs: Any) -> NDArray:
    """``mx.nd.zeros``: zeros of storage type ``stype`` (default: dense).

    >>> import symjit as mx
    >>> mx.nd.zeros((2, 2), stype='csr').stype
    'csr'
    """
    if stype in (None, "default"):
        return creation.zeros(shape, ctx, dtype, **kwargs)
    return zeros(stype, shape, ctx, dtype, **kwargs)


def nd_array(source_array: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """``mx.nd.array``: a sparse source (a sparse NDArray, a scipy matrix) keeps its storage type.

    >>> import symjit as mx
    >>> mx.nd.array(mx.nd.ones((2, 2)).tostype('csr')).stype
    'csr'
    """
    if isinstance(source_array, BaseSparseNDArray) or _is_scipy(source_array):
        return array(source_array, ctx, dtype)
    return creation.array(source_array, ctx, dtype)


def zeros_like(data: NDArray, **kwargs: Any) -> NDArray:
    """Zeros of ``data``'s shape, dtype, context and storage type.

    >>> import symjit as mx
    >>> mx.nd.zeros_like(mx.nd.ones((2, 2)).tostype('row_sparse')).stype
    'row_sparse'
    """
    if isinstance(data, BaseSparseNDArray):
        return zeros(data.stype, data.shape, data.context, data.dtype, **kwargs)
    return creation.zeros_like(data, **kwargs)


nd_zeros_like = zeros_like


# -- the storage type of an operator's result --------------------------------------------------------

KEEP = frozenset(("abs", "sign", "relu", "sqrt", "square", "negative", "ceil", "floor", "rint", "round",
                  "trunc", "fix", "sin", "tan", "arcsin", "arctan", "sinh", "tanh", "arcsinh", "arctanh",
                  "expm1", "log1p", "degrees", "radians", "cbrt", "clip", "zeros_like", "_copy", "copy"))
"""Operators of one array whose result keeps a sparse input's storage type (f(0) = 0)."""

_NUMBER_OPS = {"broadcast_add": "add", "broadcast_sub": "sub", "broadcast_mul": "mul", "broadcast_div": "div",
               "broadcast_greater": "gt", "broadcast_lesser": "lt", "broadcast_not_equal": "ne",
               "broadcast_equal": "eq", "broadcast_greater_equal": "ge", "broadcast_lesser_equal": "le",
               "broadcast_maximum": "maximum", "broadcast_minimum": "minimum", "broadcast_power": "pow"}
_SCALAR_KEEP = ("add", "sub", "gt", "lt", "ne", "eq", "ge", "le")   # sparse where f(0, scalar) == 0


def _number(a: Any) -> float | None:
    if isinstance(a, NDArray) and not is_sparse(a) and a._number:
        return float(a._host().reshape(-1)[0])
    return None


def _keeps_zero(name: str, zero_first: bool, s: float) -> bool:  # noqa: FBT001
    fn = arith.BINARY[name][1]
    with np.errstate(all="ignore"):
        try:
            v = fn(0.0, s) if zero_first else fn(s, 0.0)
        except ZeroDivisionError:
            return False
    return v == 0


def _scalar_keeps(name: str, sparse_first: bool, s: float) -> bool:  # noqa: FBT001
    """Whether MXNet 1.9.1's operator ``name`` of a sparse array and the number ``s`` (the sparse
    array first or not) has a sparse result: a product or quotient by a number always (only the
    stored values are computed), ``s - x`` and ``s / x`` never, the others where f(0, s) == 0."""
    if name == "mul" or (name == "div" and sparse_first):
        return True
    if not sparse_first and name in ("sub", "div"):
        return False
    return name in _SCALAR_KEEP and _keeps_zero(name, sparse_first, s)


def result_stype(op: str, arrays: list, params: dict) -> str:
    """The storage type MXNet 1.9.1 gives the result of operator ``op`` on ``arrays``.

    >>> import symjit as mx
    >>> r = mx.nd.ones((2, 2)).tostype('row_sparse')
    >>> result_stype('sqrt', [r], {}), result_stype('exp', [r], {})
    ('row_sparse', 'default')
    """
    st = [getattr(a, "stype", "default") for a in arrays]
    if op == "clip" and not _number_or(params.get("a_min"), 0) <= 0 <= _number_or(params.get("a_max"), 0):
        return "default"        # clip(0) is not 0
    if op in KEEP and st:
        return st[0]
    if op in _NUMBER_OPS and len(arrays) == 2:
        for i, j in ((0, 1), (1, 0)):
            s = _number(arrays[j])
            if st[i] != "default" and s is not None:
                return st[i] if _scalar_keeps(_NUMBER_OPS[op], i == 0, s) else "default"
        if op in ("broadcast_mul", "broadcast_div") and st[0] == "csr" and st[1] == "default" \
                and _broadcasts_to(arrays[1].shape, arrays[0].shape):
            return "csr"
        return "default"
    if op in ("elemwise_add", "elemwise_sub", "_grad_add") and len(st) == 2:
        return st[0] if st[0] == st[1] else "default"
    if op == "elemwise_mul" and len(st) == 2:
        kinds = set(st) - {"default"}
        return kinds.pop() if len(kinds) == 1 else "default"
    if op == "dot":
        forced = params.get("forward_stype")
        if forced not in (None, "None"):
            return str(forced)
        ta, tb = _flag(params.get("transpose_a")), _flag(params.get("transpose_b"))
        if st[0] == "csr" and ta and not tb and st[1] != "csr":
            return "row_sparse"
        if st[0] == "default" and st[1] == "csr" and not ta:
            return "csr"
    return "default"


def _broadcasts_to(small: tuple, shape: tuple) -> bool:
    try:
        return np.broadcast_shapes(small, shape) == shape
    except ValueError:
        return False


def _pattern_of(op: str, arrays: list, stype: str, shape: tuple) -> BaseSparseNDArray | None:
    """The operand whose stored positions a sparse result keeps: the only sparse operand, of the
    result's storage type and shape (MXNet's sparse kernels compute the stored values only, so
    ``x * inf`` is still zero where ``x`` stores nothing); None for ``dot`` and ``zeros_like``."""
    sparse = [a for a in arrays if is_sparse(a)]
    if op in ("dot", "zeros_like") or len(sparse) != 1 or sparse[0].stype != stype \
            or sparse[0].shape != shape:
        return None
    return sparse[0]


def _on_pattern(dense: np.ndarray, src: BaseSparseNDArray, ctx: Context) -> BaseSparseNDArray:
    """The values of ``dense`` at the positions ``src`` stores, in ``src``'s layout."""
    _, aux = src._parts()
    if isinstance(src, RowSparseNDArray):
        return RowSparseNDArray(src.shape, dense[aux[0]], (aux[0].copy(),), ctx)
    indices, indptr = aux
    rows = np.repeat(np.arange(src.shape[0]), np.diff(indptr))
    return CSRNDArray(src.shape, dense[rows, indices], (indices.copy(), indptr.copy()), ctx)


def _number_or(v: Any, default: float) -> float:
    return float(v) if isinstance(v, (int, float, np.number)) else default


def _flag(v: Any) -> bool:
    return v in (True, 1, "True", "true", "1")


# -- operator calls with sparse arrays ---------------------------------------------------------------

class _State(threading.local):
    busy = False


_STATE = _State()


def active(args: tuple, kwargs: dict, out: Any) -> bool:
    """Whether an ``mx.nd`` operator call must go through :func:`call`: a sparse array among its
    arguments or ``out``, and not already inside :func:`call`."""
    if _STATE.busy:
        return False
    if kwargs.get("forward_stype") not in (None, "default"):
        return True
    return any(isinstance(a, BaseSparseNDArray) for a in (*args, *kwargs.values())) or \
        isinstance(out, BaseSparseNDArray) or (isinstance(out, (list, tuple)) and any(map(is_sparse, out)))


def _adopt(result: NDArray, source: NDArray, where: str) -> NDArray:
    """Give ``result`` (a storage conversion of ``source``) the recorded history of ``source``:
    the autograd entry that made ``source`` made ``result`` too."""
    node = getattr(source, "_ag_node", None)
    if node is not None and result is not source:
        result._ag_node, result._ag_ver = node, result._cell()[0]
    return result


def call(called: str, fn: Callable[..., Any], args: tuple, kwargs: dict, out: Any) -> Any:
    """Run the ``mx.nd`` operator function ``fn`` (operator ``called``) on arguments among which
    are sparse arrays: its dense kernels on their dense mirrors, the result converted to the
    storage type :func:`result_stype` gives, written into ``out`` when given."""
    params = {k: v for k, v in kwargs.items() if not isinstance(v, NDArray)}
    if called == "clip":
        params.update(zip(("a_min", "a_max"), args[1:3]))
    if "forward_stype" in kwargs:       # the dense kernel has one result type; the stype is ours
        kwargs = {k: v for k, v in kwargs.items() if k != "forward_stype"}
    _STATE.busy = True
    try:
        result = fn(*args, **kwargs)
    finally:
        _STATE.busy = False
    arrays = [a for a in (*args, *kwargs.values()) if isinstance(a, NDArray)]
    if isinstance(result, NDArray):
        stype = result_stype(called, arrays, params)
        if stype != "default":
            src = _pattern_of(called, arrays, stype, result.shape)
            made = make_sparse(result.asnumpy(), stype, result.context, called) if src is None \
                else _on_pattern(result.asnumpy(), src, result.context)
            result = _adopt(made, result, called)
    if out is None:
        return result
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    results = result if isinstance(result, (list, tuple)) else [result]
    if len(outs) != len(results):
        raise MXNetError(f"{called}: {len(outs)} out array(s) for {len(results)} outputs")
    for o, r in zip(outs, results):
        if o.shape != r.shape:
            raise ShapeError(f"{called}: out has shape {shape_str(o.shape)}, the result {shape_str(r.shape)}")
        r.copyto(o)
    return out


def _elemwise(op: str, lhs: NDArray, rhs: NDArray, where: str) -> NDArray:
    if not isinstance(lhs, NDArray) or not isinstance(rhs, NDArray):
        raise DTypeError(f"{where}: both operands must be NDArrays, got {type(lhs).__name__} and "
                         f"{type(rhs).__name__}")
    if lhs.shape != rhs.shape:
        raise ShapeError(f"{where}: operands of shapes {shape_str(lhs.shape)} and {shape_str(rhs.shape)} "
                         "differ (the sparse elementwise operators do not broadcast)")
    return dispatch.function(op)(lhs, rhs)


def elemwise_add(lhs: NDArray, rhs: NDArray) -> NDArray:
    """``lhs + rhs`` of one shape; row_sparse + row_sparse and csr + csr stay sparse.

    >>> import symjit as mx
    >>> r = mx.nd.ones((2, 2)).tostype('row_sparse')
    >>> mx.nd.sparse.elemwise_add(r, r).stype
    'row_sparse'
    """
    return _elemwise("elemwise_add", lhs, rhs, "sparse.elemwise_add")


def elemwise_sub(lhs: NDArray, rhs: NDArray) -> NDArray:
    """``lhs - rhs`` of one shape (storage types as :func:`elemwise_add`)."""
    return _elemwise("elemwise_sub", lhs, rhs, "sparse.elemwise_sub")


def elemwise_mul(lhs: NDArray, rhs: NDArray) -> NDArray:
    """``lhs * rhs`` of one shape; a sparse operand (with a dense one or one of its own type)
    gives its storage type."""
    return _elemwise("elemwise_mul", lhs, rhs, "sparse.elemwise_mul")


def _binary(name: str, lhs: Any, rhs: Any) -> Any:
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray) and lhs.shape == rhs.shape and name != "div":
        return dispatch.function(f"elemwise_{name}")(lhs, rhs)
    if isinstance(lhs, NDArray):
        return lhs._binary(rhs, name)
    if isinstance(rhs, NDArray):
        return rhs._binary(lhs, name, True)
    return arith.BINARY[name][1](lhs, rhs)


def add(lhs: Any, rhs: Any) -> Any:
    """``lhs + rhs`` (arrays of one shape: ``elemwise_add``; otherwise broadcasting, dense).

    >>> import symjit as mx
    >>> c = mx.nd.ones((2, 2)).tostype('csr')
    >>> mx.nd.sparse.add(c, c).stype
    'csr'
    """
    return _binary("add", lhs, rhs)


def subtract(lhs: Any, rhs: Any) -> Any:
    """``lhs - rhs`` (see :func:`add`)."""
    return _binary("sub", lhs, rhs)


def multiply(lhs: Any, rhs: Any) -> Any:
    """``lhs * rhs`` (see :func:`add`)."""
    return _binary("mul", lhs, rhs)


def divide(lhs: Any, rhs: Any) -> Any:
    """``lhs / rhs`` (broadcasting division)."""
    return _binary("div", lhs, rhs)


def dot(lhs: NDArray, rhs: NDArray, transpose_a: bool = False, transpose_b: bool = False,  # noqa: FBT001, FBT002
        forward_stype: str | None = None) -> NDArray:
    """The matrix product with csr / row_sparse operands (``mx.nd.dot``): computed exactly by the
    dense kernel; csr.T times dense or row_sparse is row_sparse, the rest dense unless
    ``forward_stype`` says otherwise.

    >>> import symjit as mx
    >>> c = mx.nd.sparse.csr_matrix(([2.0], [1], [0, 1, 1]), shape=(2, 2))
    >>> mx.nd.sparse.dot(c, mx.nd.ones((2, 2))).asnumpy().tolist()
    [[2.0, 2.0], [0.0, 0.0]]
    """
    kwargs: dict = {"transpose_a": transpose_a, "transpose_b": transpose_b}
    if forward_stype is not None:
        if forward_stype not in STYPES:
            raise MXNetError(f"dot: forward_stype {forward_stype!r} must be one of {STYPES}")
        kwargs["forward_stype"] = forward_stype
    return dispatch.function("dot")(lhs, rhs, **kwargs)


def __getattr__(name: str) -> Any:
    """The other ``mx.nd`` operator functions under ``mx.nd.sparse`` (MXNet lists them there too)."""
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return dispatch.function(name)
    except MXNetError:
        raise AttributeError(f"module 'mx.nd.sparse' has no attribute {name!r}") from None
