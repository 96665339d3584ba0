"""``mx.nd`` functions that rearrange elements: transpose, concat, stack, split, expand_dims,
flatten, reshape, one_hot, broadcast_to, where. Each checks its arguments (errors that name the
function and the shapes) and runs the registered operator's compiled kernel; each returns a new
array (no shared memory).

>>> import symjit as mx
>>> a = mx.nd.ones((2, 3))
>>> mx.nd.concat(a, a, dim=1).shape, mx.nd.stack(a, a).shape, mx.nd.flatten(mx.nd.ones((2, 3, 4))).shape
((2, 6), (2, 2, 3), (2, 12))
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import DTypeError, MXNetError, ParamError, ShapeError, dtype_name, np_dtype, shape_str
from . import dispatch
from .creation import norm_shape
from .ndarray import NDArray, infer_reshape
from .ops import need_nd

__all__ = ["transpose", "concat", "Concat", "concatenate", "stack", "split", "expand_dims", "flatten",
           "Flatten", "reshape", "Reshape", "one_hot", "broadcast_to", "where", "swapaxes", "moveaxis",
           "onehot_encode"]


def _same_kind(arrays: Sequence[NDArray], where: str) -> None:
    if not arrays:
        raise ParamError(f"{where}: needs at least one array")
    for i, a in enumerate(arrays):
        need_nd(a, where, f"data[{i}]")
    first = arrays[0]
    for i, a in enumerate(arrays[1:], 1):
        if a.dtype != first.dtype:
            raise DTypeError(f"{where}: data[{i}] has dtype {dtype_name(a.dtype)}, data[0] has "
                             f"{dtype_name(first.dtype)}")
        if a.context != first.context:
            raise MXNetError(f"{where}: data[{i}] is on {a.context}, data[0] on {first.context}")


def _axis(axis: int, ndim: int, where: str, arg: str = "axis") -> int:
    if not -ndim <= int(axis) < ndim:
        raise ShapeError(f"{where}: {arg}={axis} is out of range for {ndim} dimensions")
    return int(axis) % ndim


def transpose(data: NDArray, axes: Any = None, out: NDArray | None = None) -> NDArray:
    """Permute the axes (reverse them when ``axes`` is empty or None).

    >>> import symjit as mx
    >>> mx.nd.transpose(mx.nd.ones((2, 3, 4)), axes=(1, 0, 2)).shape
    (3, 2, 4)
    """
    need_nd(data, "transpose")
    if axes is not None and len(tuple(axes)) > 0:
        axes = tuple(int(a) for a in axes)
        norm = sorted(a % data.ndim if -data.ndim <= a < data.ndim else -1 for a in axes)
        if norm != list(range(data.ndim)):
            raise ShapeError(f"transpose: axes {axes} is not a permutation of the {data.ndim} "
                             f"axes of shape {shape_str(data.shape)}")
    else:
        axes = None
    return dispatch.invoke1("transpose", [data], {"axes": axes or ()}, out=out, where="transpose")


def swapaxes(data: NDArray, dim1: int = 0, dim2: int = 0, out: NDArray | None = None) -> NDArray:
    """Exchange two axes.

    >>> import symjit as mx
    >>> mx.nd.swapaxes(mx.nd.ones((2, 3)), 0, 1).shape
    (3, 2)
    """
    need_nd(data, "swapaxes")
    d1, d2 = _axis(dim1, data.ndim, "swapaxes", "dim1"), _axis(dim2, data.ndim, "swapaxes", "dim2")
    return dispatch.invoke1("SwapAxis", [data], {"dim1": d1, "dim2": d2}, out=out, where="swapaxes")


def concat(*data: NDArray, dim: int = 1, num_args: int | None = None, out: NDArray | None = None) -> NDArray:
    """Join arrays along ``dim``; every other dimension must agree.

    >>> import symjit as mx
    >>> mx.nd.concat(mx.nd.ones((1, 2)), mx.nd.zeros((1, 3))).asnumpy().tolist()
    [[1.0, 1.0, 0.0, 0.0, 0.0]]
    """
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    if num_args is not None and int(num_args) != len(data):
        raise ParamError(f"concat: num_args={num_args} but {len(data)} arrays were given")
    _same_kind(data, "concat")
    ndim = data[0].ndim
    ax = _axis(dim, ndim, "concat", "dim")
    for i, a in enumerate(data):
        same = a.ndim == ndim and all(a.shape[j] == data[0].shape[j] for j in range(ndim) if j != ax)
        if not same:
            raise ShapeError(f"concat: data[{i}] has shape {shape_str(a.shape)}, incompatible with "
                             f"data[0]'s {shape_str(data[0].shape)} for dim={dim}")
    return dispatch.invoke1("Concat", list(data), {"dim": ax, "num_args": len(data)}, out=out,
                            where="concat")


Concat = concat


def concatenate(arrays: Sequence[NDArray], axis: int = 0, always_copy: bool = True) -> NDArray:
    """Join a list of arrays along ``axis`` (a single array is returned as is unless ``always_copy``).

    >>> import symjit as mx
    >>> mx.nd.concatenate([mx.nd.ones((1, 2)), mx.nd.ones((2, 2))]).shape
    (3, 2)
    """
    if not isinstance(arrays, (list, tuple)):
        raise DTypeError(f"concatenate: arrays must be a list of NDArrays, got {type(arrays).__name__}")
    if len(arrays) == 1 and not always_copy:
        return need_nd(arrays[0], "concatenate", "arrays[0]")
    return concat(*arrays, dim=axis)


def stack(*data: NDArray, axis: int = 0, num_args: int | None = None, out: NDArray | None = None) -> NDArray:
    """Join arrays of one shape along a new axis.

    >>> import symjit as mx
    >>> mx.nd.stack(mx.nd.ones((2,)), mx.nd.zeros((2,)), axis=1).asnumpy().tolist()
    [[1.0, 0.0], [1.0, 0.0]]
    """
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    if num_args is not None and int(num_args) != len(data):
        raise ParamError(f"stack: num_args={num_args} but {len(data)} arrays were given")
    _same_kind(data, "stack")
    for i, a in enumerate(data):
        if a.shape != data[0].shape:
            raise ShapeError(f"stack: data[{i}] has shape {shape_str(a.shape)}, data[0] has "
                             f"{shape_str(data[0].shape)}")
    ax = _axis(axis, data[0].ndim + 1, "stack")
    return dispatch.invoke1("stack", list(data), {"axis": ax, "num_args": len(data)}, out=out,
                            where="stack")


def split(data: NDArray, num_outputs: int, axis: int = 1, squeeze_axis: bool = False) -> Any:
    """Split into ``num_outputs`` equal parts along ``axis``: a list (one part: the NDArray itself).

    >>> import symjit as mx
    >>> [p.shape for p in mx.nd.split(mx.nd.ones((2, 6)), num_outputs=3)]
    [(2, 2), (2, 2), (2, 2)]
    """
    need_nd(data, "split")
    n = int(num_outputs)
    ax = _axis(axis, data.ndim, "split")
    if n < 1 or data.shape[ax] % n:
        raise ShapeError(f"split: cannot split axis {axis} of shape {shape_str(data.shape)} into "
                         f"{num_outputs} equal parts")
    if squeeze_axis and data.shape[ax] != n:
        raise ShapeError(f"split: squeeze_axis needs shape[{axis}] == num_outputs, got shape "
                         f"{shape_str(data.shape)} and num_outputs={n}")
    outs = dispatch.invoke("SliceChannel", [data], {"num_outputs": n, "axis": ax,
                                                    "squeeze_axis": bool(squeeze_axis)}, where="split")
    return outs[0] if n == 1 else outs


def expand_dims(data: NDArray, axis: int, out: NDArray | None = None) -> NDArray:
    """Insert an axis of size 1 at ``axis`` (``-1`` appends).

    >>> import symjit as mx
    >>> mx.nd.expand_dims(mx.nd.ones((2, 3)), axis=1).shape
    (2, 1, 3)
    """
    need_nd(data, "expand_dims")
    ax = _axis(axis, data.ndim + 1, "expand_dims")
    if out is None:     # the operator's mx.nd function: its fast path for repeated calls
        return dispatch.function("expand_dims")(data, axis=ax)
    return dispatch.invoke1("expand_dims", [data], {"axis": ax}, out=out, where="expand_dims")


def flatten(data: NDArray, out: NDArray | None = None) -> NDArray:
    """Collapse every axis but the first: shape ``(d0, d1*...*dk)``.

    >>> import symjit as mx
    >>> mx.nd.flatten(mx.nd.ones((3,))).shape
    (3, 1)
    """
    need_nd(data, "flatten")
    if data.ndim == 0:
        raise ShapeError("flatten: the input must have at least one dimension, got shape ()")
    return dispatch.invoke1("Flatten", [data], out=out, where="flatten")


Flatten = flatten


def reshape(data: NDArray, shape: Any, reverse: bool = False, out: NDArray | None = None) -> NDArray:
    """A copy with a new shape; understands MXNet's 0/-1/-2/-3/-4 codes.

    >>> import symjit as mx
    >>> mx.nd.reshape(mx.nd.ones((2, 3, 4)), shape=(0, -1)).shape
    (2, 12)
    """
    need_nd(data, "reshape")
    new = infer_reshape(data.shape, shape, reverse, "reshape")
    return dispatch.invoke1("Reshape", [data], {"shape": new}, out=out, where="reshape")


Reshape = reshape


def one_hot(indices: NDArray, depth: int, on_value: float = 1.0, off_value: float = 0.0,
            dtype: Any = "float32", out: NDArray | None = None) -> NDArray:
    """One-hot rows of length ``depth`` (indices outside ``[0, depth)`` give all ``off_value``).

    >>> import symjit as mx
    >>> mx.nd.one_hot(mx.nd.array([1, 0]), 3).asnumpy().tolist()
    [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    """
    need_nd(indices, "one_hot", "indices")
    if int(depth) < 0:
        raise ParamError(f"one_hot: depth must be >= 0, got {depth}")
    dt = np_dtype(dtype)
    return dispatch.invoke1("one_hot", [indices], {"depth": int(depth), "on_value": float(on_value),
                                                   "off_value": float(off_value), "dtype": dt.name},
                            out=out, where="one_hot")


def broadcast_to(data: NDArray, shape: Any, out: NDArray | None = None) -> NDArray:
    """Repeat axes of size 1 to reach ``shape`` (a 0 keeps the input's dimension).

    >>> import symjit as mx
    >>> mx.nd.broadcast_to(mx.nd.ones((2, 1)), shape=(0, 3)).shape
    (2, 3)
    """
    need_nd(data, "broadcast_to")
    shape = norm_shape(shape, "broadcast_to")
    if len(shape) != data.ndim:
        raise ShapeError(f"broadcast_to: shape {shape} must have as many dimensions as the input "
                         f"shape {shape_str(data.shape)}")
    target = tuple(s if t == 0 else t for s, t in zip(data.shape, shape))
    for s, t in zip(data.shape, target):
        if s != t and s != 1:
            raise ShapeError(f"broadcast_to: cannot broadcast shape {shape_str(data.shape)} to "
                             f"{shape_str(target)}: only dimensions of size 1 can grow")
    return dispatch.invoke1("broadcast_to", [data], {"shape": target}, out=out, where="broadcast_to")


def where(condition: NDArray, x: NDArray, y: NDArray, out: NDArray | None = None) -> NDArray:
    """Elements of ``x`` where ``condition`` is non-zero, else of ``y``.

    ``condition`` has ``x``'s shape, or is 1-D with one value per row of ``x``.

    >>> import symjit as mx
    >>> mx.nd.where(mx.nd.array([1, 0]), mx.nd.array([1, 2]), mx.nd.array([5, 6])).asnumpy().tolist()
    [1.0, 6.0]
    """
    for arg, v in (("condition", condition), ("x", x), ("y", y)):
        need_nd(v, "where", arg)
    if x.shape != y.shape:
        raise ShapeError(f"where: x and y must have the same shape, got {shape_str(x.shape)} and "
                         f"{shape_str(y.shape)}")
    if x.dtype != y.dtype:
        raise DTypeError(f"where: x and y must have the same dtype, got {dtype_name(x.dtype)} and "
                         f"{dtype_name(y.dtype)}")
    if condition.shape != x.shape and not (condition.ndim == 1 and x.ndim >= 1
                                           and condition.shape[0] == x.shape[0]):
        raise ShapeError(f"where: condition of shape {shape_str(condition.shape)} must have x's shape "
                         f"{shape_str(x.shape)} or be 1-D of length {x.shape[0] if x.ndim else 0}")
    return dispatch.invoke1("where", [condition, x, y], out=out, where="where")


def moveaxis(tensor: NDArray, source: Any, destination: Any) -> NDArray:
    """Move the axes ``source`` to the positions ``destination`` (ints or sequences of ints), the
    other axes keeping their order (numpy's moveaxis), by a transpose.

    >>> import symjit as mx
    >>> mx.nd.moveaxis(mx.nd.ones((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    need_nd(tensor, "moveaxis")
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ShapeError(f"moveaxis: source {source} and destination {destination} differ in length")
    src = [_axis(a, tensor.ndim, "moveaxis", "source") for a in src]
    dst = [_axis(a, tensor.ndim, "moveaxis", "destination") for a in dst]
    for arg, axes in (("source", src), ("destination", dst)):
        if len(set(axes)) != len(axes):
            raise ShapeError(f"moveaxis: {arg} {source if arg == 'source' else destination} repeats an axis")
    order = [a for a in range(tensor.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(tensor, axes=tuple(order))


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """MXNet's legacy one-hot: write into ``out`` (shape (n, depth)) the one-hot rows of the n
    ``indices``; returns ``out``.

    >>> import symjit as mx
    >>> out = mx.nd.zeros((2, 3))
    >>> mx.nd.onehot_encode(mx.nd.array([2, 0]), out).asnumpy().tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    need_nd(indices, "onehot_encode", "indices")
    need_nd(out, "onehot_encode", "out")
    if out.ndim != 2 or indices.shape != (out.shape[0],):
        raise ShapeError(f"onehot_encode: out {shape_str(out.shape)} must be (n, depth) for indices "
                         f"{shape_str(indices.shape)}")
    return dispatch.invoke1("one_hot", [indices], {"depth": out.shape[1], "dtype": np.dtype(out.dtype).name},
                            out=out, where="onehot_encode")
