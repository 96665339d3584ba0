"""``mx.nd`` operator functions: elementwise math, binary ops, reductions, ``dot``, ``clip``.

Shape-manipulating functions (``concat``, ``stack``, ``transpose`` ...) are in
:mod:`symjit.ndarray.shape_ops`. Results keep the input's dtype and context; full reductions
give shape (1,) as in MXNet 1.x. Most functions take ``out=`` to write the result in place.

>>> import symjit as mx
>>> a = mx.nd.array([[1, 2], [3, 4]])
>>> mx.nd.sum(a, axis=1).asnumpy().tolist(), mx.nd.sum(a).shape
([3.0, 7.0], (1,))
>>> mx.nd.dot(a, a, transpose_b=True).asnumpy().tolist()
[[5.0, 11.0], [11.0, 25.0]]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import DTypeError, ParamError, ShapeError, dtype_name, shape_str
from . import arith, dispatch, storage
from .creation import place
from .ndarray import NDArray, wrap

__all__ = [
    "sum", "mean", "max", "min", "prod", "norm", "argmax", "argmin", "dot", "clip", "waitall",
    "add", "subtract", "multiply", "divide", "modulo", "power", "maximum", "minimum", "hypot",
    "equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal", "need_nd",
    "result",
]


def need_nd(x: Any, where: str, arg: str = "data") -> NDArray:
    """``x`` if it is an NDArray, else a DTypeError naming the function and argument."""
    if not isinstance(x, NDArray):
        raise DTypeError(f"{where}: argument '{arg}' must be an NDArray, got {type(x).__name__}")
    return x


def result(arr: np.ndarray, like: NDArray, where: str, out: NDArray | None = None) -> NDArray:
    """Wrap a numpy result in ``like``'s dtype and context (or write it into ``out``)."""
    with np.errstate(all="ignore"):
        arr = np.asarray(arr).astype(like._data.dtype, copy=False)
    return place(np.ascontiguousarray(arr), like.context, where, out)


def waitall() -> None:
    """Wait until the work queued on every GPU has finished (the CPU computes synchronously).

    >>> import symjit as mx
    >>> mx.nd.waitall()
    """
    storage.synchronize()


# -- elementwise unary ---------------------------------------------------------------------------

def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


_UNARY: dict[str, tuple[Callable, str]] = {
    "exp": (np.exp, "e ** x"), "log": (np.log, "natural logarithm"), "sqrt": (np.sqrt, "square root"),
    "square": (np.square, "x * x"), "abs": (np.abs, "absolute value"), "sign": (np.sign, "-1, 0 or 1"),
    "negative": (np.negative, "-x"), "reciprocal": (np.reciprocal, "1 / x"),
    "floor": (np.floor, "floor"), "ceil": (np.ceil, "ceiling"),
    "round": (lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x), "round, halves away from zero"),
    "trunc": (np.trunc, "truncate toward zero"), "sin": (np.sin, "sine"), "cos": (np.cos, "cosine"),
    "tanh": (np.tanh, "hyperbolic tangent"), "sigmoid": (_sigmoid, "1 / (1 + exp(-x))"),
    "relu": (lambda x: np.maximum(x, 0), "max(x, 0)"), "rsqrt": (lambda x: 1.0 / np.sqrt(x), "1 / sqrt(x)"),
    "log2": (np.log2, "base-2 logarithm"), "log10": (np.log10, "base-10 logarithm"),
    "log1p": (np.log1p, "log(1 + x)"), "expm1": (np.expm1, "exp(x) - 1"),
}


def _make_unary(name: str, fn: Callable, what: str) -> Callable:
    def op(data: NDArray, out: NDArray | None = None, **kwargs: Any) -> NDArray:
        need_nd(data, name)
        if dispatch.on_gpu(data):
            return dispatch.invoke1(name, [data], out=out, where=name)
        host = data._host()
        if host.dtype.kind in "iub" and name not in ("abs", "sign", "negative", "square", "relu"):
            host = host.astype(np.float64)
        with np.errstate(all="ignore"):
            return result(fn(host), data, name, out)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"Elementwise {what}; the result keeps the input's dtype.\n\n"
                  f"    >>> import symjit as mx\n"
                  f"    >>> mx.nd.{name}(mx.nd.ones((1,))).shape\n    (1,)\n")
    return op


exp = _make_unary("exp", *_UNARY["exp"])
log = _make_unary("log", *_UNARY["log"])
sqrt = _make_unary("sqrt", *_UNARY["sqrt"])
square = _make_unary("square", *_UNARY["square"])
abs = _make_unary("abs", *_UNARY["abs"])
sign = _make_unary("sign", *_UNARY["sign"])
negative = _make_unary("negative", *_UNARY["negative"])
reciprocal = _make_unary("reciprocal", *_UNARY["reciprocal"])
floor = _make_unary("floor", *_UNARY["floor"])
ceil = _make_unary("ceil", *_UNARY["ceil"])
round = _make_unary("round", *_UNARY["round"])
trunc = _make_unary("trunc", *_UNARY["trunc"])
sin = _make_unary("sin", *_UNARY["sin"])
cos = _make_unary("cos", *_UNARY["cos"])
tanh = _make_unary("tanh", *_UNARY["tanh"])
sigmoid = _make_unary("sigmoid", *_UNARY["sigmoid"])
relu = _make_unary("relu", *_UNARY["relu"])
rsqrt = _make_unary("rsqrt", *_UNARY["rsqrt"])
log2 = _make_unary("log2", *_UNARY["log2"])
log10 = _make_unary("log10", *_UNARY["log10"])
log1p = _make_unary("log1p", *_UNARY["log1p"])
expm1 = _make_unary("expm1", *_UNARY["expm1"])
__all__ += list(_UNARY)


# -- elementwise binary (arrays or scalars on either side) ----------------------------------------

def _binary_fn(name: str, kind: str, what: str) -> Callable:
    def op(lhs: Any, rhs: Any, out: NDArray | None = None) -> Any:
        if isinstance(lhs, NDArray):
            res = lhs._binary(rhs, kind, False, name)
        elif isinstance(rhs, NDArray):
            res = rhs._binary(lhs, kind, True, name)
        elif arith.is_scalar(lhs) and arith.is_scalar(rhs):
            return arith.BINARY[kind][1](lhs, rhs)
        else:
            raise DTypeError(f"{name}: operands must be NDArrays or numbers, got "
                             f"{type(lhs).__name__} and {type(rhs).__name__}")
        if res is NotImplemented:
            other = rhs if isinstance(lhs, NDArray) else lhs
            raise DTypeError(f"{name}: unsupported operand type {type(other).__name__}")
        if out is None:
            return res
        return res.copyto(out) if dispatch.on_gpu(res) else place(res._host(), None, name, out)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"Elementwise {what} of two NDArrays (numpy broadcasting) or an NDArray and a scalar.\n\n"
                  f"    >>> import symjit as mx\n"
                  f"    >>> mx.nd.{name}(mx.nd.ones((2, 1)), mx.nd.ones((3,))).shape\n    (2, 3)\n")
    return op


_BINARY_FUNCS = {
    "add": ("add", "sum"), "subtract": ("sub", "difference"), "multiply": ("mul", "product"),
    "divide": ("div", "quotient"), "modulo": ("mod", "remainder"), "power": ("pow", "power"),
    "maximum": ("maximum", "maximum"), "minimum": ("minimum", "minimum"), "hypot": ("hypot", "hypotenuse"),
    "equal": ("eq", "== (0/1)"), "not_equal": ("ne", "!= (0/1)"), "greater": ("gt", "> (0/1)"),
    "greater_equal": ("ge", ">= (0/1)"), "lesser": ("lt", "< (0/1)"), "lesser_equal": ("le", "<= (0/1)"),
}
_BROADCAST_ALIASES = {
    "broadcast_add": "add", "broadcast_plus": "add", "broadcast_sub": "subtract",
    "broadcast_minus": "subtract", "broadcast_mul": "multiply", "broadcast_div": "divide",
    "broadcast_mod": "modulo", "broadcast_power": "power", "broadcast_maximum": "maximum",
    "broadcast_minimum": "minimum", "broadcast_equal": "equal", "broadcast_not_equal": "not_equal",
    "broadcast_greater": "greater", "broadcast_greater_equal": "greater_equal",
    "broadcast_lesser": "lesser", "broadcast_lesser_equal": "lesser_equal",
    "elemwise_add": "add", "elemwise_sub": "subtract", "elemwise_mul": "multiply", "elemwise_div": "divide",
}

add = _binary_fn("add", *_BINARY_FUNCS["add"])
subtract = _binary_fn("subtract", *_BINARY_FUNCS["subtract"])
multiply = _binary_fn("multiply", *_BINARY_FUNCS["multiply"])
divide = _binary_fn("divide", *_BINARY_FUNCS["divide"])
modulo = _binary_fn("modulo", *_BINARY_FUNCS["modulo"])
power = _binary_fn("power", *_BINARY_FUNCS["power"])
maximum = _binary_fn("maximum", *_BINARY_FUNCS["maximum"])
minimum = _binary_fn("minimum", *_BINARY_FUNCS["minimum"])
hypot = _binary_fn("hypot", *_BINARY_FUNCS["hypot"])
equal = _binary_fn("equal", *_BINARY_FUNCS["equal"])
not_equal = _binary_fn("not_equal", *_BINARY_FUNCS["not_equal"])
greater = _binary_fn("greater", *_BINARY_FUNCS["greater"])
greater_equal = _binary_fn("greater_equal", *_BINARY_FUNCS["greater_equal"])
lesser = _binary_fn("lesser", *_BINARY_FUNCS["lesser"])
lesser_equal = _binary_fn("lesser_equal", *_BINARY_FUNCS["lesser_equal"])
true_divide = divide
for _alias, _target in _BROADCAST_ALIASES.items():
    globals()[_alias] = globals()[_target]
__all__ += ["true_divide", *_BROADCAST_ALIASES]


def _logical_fn(name: str) -> Callable:
    kind = name.removeprefix("logical_")

    def op(lhs: Any, rhs: Any, out: NDArray | None = None) -> Any:
        if arith.is_scalar(lhs) and arith.is_scalar(rhs):
            return float({"and": bool(lhs) and bool(rhs), "or": bool(lhs) or bool(rhs),
                          "xor": bool(lhs) != bool(rhs)}[kind])
        arrays = [a for a in (lhs, rhs) if isinstance(a, NDArray)]
        if not arrays or not all(isinstance(a, NDArray) or arith.is_scalar(a) for a in (lhs, rhs)):
            raise DTypeError(f"{name}: operands must be NDArrays or numbers, got "
                             f"{type(lhs).__name__} and {type(rhs).__name__}")
        like = arrays[0]

        def nd(a: Any) -> NDArray:
            return a if isinstance(a, NDArray) else wrap(np.full((1,), a, like.dtype), like.context)
        return dispatch.invoke1(f"broadcast_{name}", [nd(lhs), nd(rhs)], out=out, where=name)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"Elementwise logical {kind} (1 where true, else 0) of two NDArrays (numpy "
                  f"broadcasting) or an NDArray and a number, by the registered operator "
                  f"``broadcast_{name}``.\n\n"
                  f"    >>> import symjit as mx\n"
                  f"    >>> mx.nd.{name}(mx.nd.array([0, 1]), 1).asnumpy().tolist()\n"
                  f"    {[[0.0, 1.0], [1.0, 1.0], [1.0, 0.0]][['and', 'or', 'xor'].index(kind)]}\n")
    return op


logical_and = _logical_fn("logical_and")
logical_or = _logical_fn("logical_or")
logical_xor = _logical_fn("logical_xor")
__all__ += ["logical_and", "logical_or", "logical_xor"]


# -- reductions ----------------------------------------------------------------------------------

def _axes(axis: Any, ndim: int, exclude: bool, where: str) -> tuple[int, ...] | None:
    if axis is None or axis == ():
        return None if not exclude or axis is None else tuple(range(ndim))
    raw = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in raw:
        if not -ndim <= int(a) < ndim:
            raise ShapeError(f"{where}: axis {a} is out of range for an array of {ndim} dimensions")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"{where}: axis {axis} names a dimension twice")
    if exclude:
        out = [i for i in range(ndim) if i not in out]
    return tuple(sorted(out))


def _acc_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt == np.float16 else dt


def _reduce(name: str, fn: Callable, data: NDArray, axis: Any, keepdims: bool, exclude: bool,
            out: NDArray | None, params: dict | None = None) -> NDArray:
    need_nd(data, name)
    if dispatch.on_gpu(data):
        axes = _axes(axis, data.ndim, exclude, name)
        p = {"keepdims": bool(keepdims), **(params or {})}
        if axes is not None:
            p["axis"] = axes
        return dispatch.invoke1(name, [data], p, out=out, where=name)
    host = data._host()
    axes = _axes(axis, host.ndim, exclude, name)
    try:
        with np.errstate(all="ignore"):
            res = fn(host, axes, bool(keepdims))
    except ValueError as exc:
        raise ShapeError(f"{name}: cannot reduce an array of shape {shape_str(data.shape)} over axis "
                         f"{axis}: {exc}") from None
    return result(res, data, name, out)


def sum(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False,  # noqa: A001
        out: NDArray | None = None) -> NDArray:
    """Sum over ``axis`` (int, tuple or None for all; ``exclude=True`` reduces the other axes).

    >>> import symjit as mx
    >>> mx.nd.sum(mx.nd.ones((2, 3)), axis=0, keepdims=True).shape
    (1, 3)
    """
    return _reduce("sum", lambda h, ax, k: np.sum(h, axis=ax, keepdims=k, dtype=_acc_dtype(h.dtype)),
                   data, axis, keepdims, exclude, out)


def mean(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False,
         out: NDArray | None = None) -> NDArray:
    """Mean over ``axis``; integer arrays truncate the mean to their dtype.

    >>> import symjit as mx
    >>> mx.nd.mean(mx.nd.array([1, 2, 3, 6])).asscalar()
    np.float32(3.0)
    """
    return _reduce("mean", lambda h, ax, k: np.mean(h, axis=ax, keepdims=k, dtype=np.float64),
                   data, axis, keepdims, exclude, out)


def prod(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False,
         out: NDArray | None = None) -> NDArray:
    """Product over ``axis``.

    >>> import symjit as mx
    >>> mx.nd.prod(mx.nd.array([2, 3])).asscalar()
    np.float32(6.0)
    """
    return _reduce("prod", lambda h, ax, k: np.prod(h, axis=ax, keepdims=k, dtype=_acc_dtype(h.dtype)),
                   data, axis, keepdims, exclude, out)


def max(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False,  # noqa: A001
        out: NDArray | None = None) -> NDArray:
    """Maximum over ``axis``.

    >>> import symjit as mx
    >>> mx.nd.max(mx.nd.array([[1, 5], [3, 4]]), axis=1).asnumpy().tolist()
    [5.0, 4.0]
    """
    return _reduce("max", lambda h, ax, k: np.max(h, axis=ax, keepdims=k), data, axis, keepdims,
                   exclude, out)


def min(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False,  # noqa: A001
        out: NDArray | None = None) -> NDArray:
    """Minimum over ``axis``.

    >>> import symjit as mx
    >>> mx.nd.min(mx.nd.array([[1, 5], [3, 4]]), axis=0).asnumpy().tolist()
    [1.0, 4.0]
    """
    return _reduce("min", lambda h, ax, k: np.min(h, axis=ax, keepdims=k), data, axis, keepdims,
                   exclude, out)


def norm(data: NDArray, ord: int = 2, axis: Any = None, keepdims: bool = False,  # noqa: A002
         out: NDArray | None = None) -> NDArray:
    """The L2 (``ord=2``) or L1 (``ord=1``) norm over ``axis`` (all elements by default).

    >>> import symjit as mx
    >>> mx.nd.norm(mx.nd.array([3, 4])).asscalar()
    np.float32(5.0)
    """
    if ord not in (1, 2):
        raise ParamError(f"norm: parameter 'ord' must be 1 or 2, got {ord!r}")

    def fn(h: np.ndarray, ax: Any, k: bool) -> np.ndarray:
        h = np.abs(h.astype(np.float64))
        return np.sum(h, axis=ax, keepdims=k) if ord == 1 else np.sqrt(np.sum(h * h, axis=ax, keepdims=k))
    return _reduce("norm", fn, data, axis, keepdims, False, out, {"ord": int(ord)})


def _arg(name: str, fn: Callable, data: NDArray, axis: Any, keepdims: bool, out: NDArray | None):
    need_nd(data, name)
    if data.size == 0:
        raise ShapeError(f"{name}: cannot take the {name} of an empty array of shape {shape_str(data.shape)}")
    if dispatch.on_gpu(data):
        p: dict[str, Any] = {"keepdims": bool(keepdims)}
        if axis is not None:
            (p["axis"],) = _axes(int(axis), data.ndim, False, name)
        return dispatch.invoke1(name, [data], p, out=out, where=name)
    host = data._host()
    if axis is None:
        res = np.asarray(fn(host.reshape(-1)))
        res = res.reshape((1,) * host.ndim) if keepdims else res
    else:
        (ax,) = _axes(int(axis), host.ndim, False, name)
        res = fn(host, axis=ax)
        res = np.expand_dims(res, ax) if keepdims else res
    return result(res, data, name, out)


def argmax(data: NDArray, axis: Any = None, keepdims: bool = False, out: NDArray | None = None) -> NDArray:
    """Indices of the maxima along ``axis`` (over all elements when None), in the input's dtype.

    >>> import symjit as mx
    >>> mx.nd.argmax(mx.nd.array([[1, 5], [7, 4]]), axis=1).asnumpy().tolist()
    [1.0, 0.0]
    """
    return _arg("argmax", np.argmax, data, axis, keepdims, out)


def argmin(data: NDArray, axis: Any = None, keepdims: bool = False, out: NDArray | None = None) -> NDArray:
    """Indices of the minima along ``axis`` (over all elements when None), in the input's dtype.

    >>> import symjit as mx
    >>> mx.nd.argmin(mx.nd.array([[1, 5], [7, 4]]), axis=0).asnumpy().tolist()
    [0.0, 1.0]
    """
    return _arg("argmin", np.argmin, data, axis, keepdims, out)


# -- dot and clip --------------------------------------------------------------------------------

def dot(lhs: NDArray, rhs: NDArray, transpose_a: bool = False, transpose_b: bool = False,
        out: NDArray | None = None) -> NDArray:
    """Matrix product; for N-D arrays a sum product over lhs's last axis and rhs's first axis.

    ``transpose_a`` contracts over lhs's first axis instead, ``transpose_b`` over rhs's last.

    >>> import symjit as mx
    >>> mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((3, 4))).shape
    (2, 4)
    """
    need_nd(lhs, "dot", "lhs")
    need_nd(rhs, "dot", "rhs")
    a, b = lhs._data, rhs._data
    if a.dtype != b.dtype:
        raise DTypeError(f"dot: lhs and rhs have different dtypes {dtype_name(a.dtype)} and "
                         f"{dtype_name(b.dtype)}")
    if lhs.context != rhs.context:
        raise ShapeError(f"dot: lhs and rhs are on different contexts {lhs.context} and {rhs.context}")
    a_ax = 0 if transpose_a else a.ndim - 1
    b_ax = b.ndim - 1 if transpose_b else 0
    if a.shape[a_ax] != b.shape[b_ax]:
        raise ShapeError(f"dot: shapes {shape_str(a.shape)} and {shape_str(b.shape)} (transpose_a="
                         f"{bool(transpose_a)}, transpose_b={bool(transpose_b)}) do not match: "
                         f"{a.shape[a_ax]} != {b.shape[b_ax]}")
    if dispatch.on_gpu(lhs):
        return dispatch.invoke1("dot", [lhs, rhs], {"transpose_a": bool(transpose_a),
                                                    "transpose_b": bool(transpose_b)},
                                out=out, where="dot")
    a, b = lhs._host(), rhs._host()
    acc = _acc_dtype(a.dtype)
    res = np.tensordot(a.astype(acc, copy=False), b.astype(acc, copy=False), axes=([a_ax], [b_ax]))
    return result(res, lhs, "dot", out)


def clip(data: NDArray, a_min: float, a_max: float, out: NDArray | None = None) -> NDArray:
    """Limit every element to ``[a_min, a_max]``.

    >>> import symjit as mx
    >>> mx.nd.clip(mx.nd.array([-2, 0.5, 3]), -1, 1).asnumpy().tolist()
    [-1.0, 0.5, 1.0]
    """
    need_nd(data, "clip")
    if a_min is None or a_max is None or float(a_min) > float(a_max):
        raise ParamError(f"clip: need a_min <= a_max, got a_min={a_min}, a_max={a_max}")
    dt = data._data.dtype
    lo, hi = arith.scalar_as(a_min, dt), arith.scalar_as(a_max, dt)
    if dispatch.on_gpu(data):
        return dispatch.invoke1("clip", [data], {"a_min": float(lo), "a_max": float(hi)}, out=out,
                                where="clip")
    return result(np.clip(data._host(), lo, hi), data, "clip", out)
