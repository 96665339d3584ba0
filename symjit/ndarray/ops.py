"""``mx.nd``'s binary functions (``add``, ``maximum``, ``equal``, ``logical_and`` ...), which take
NDArrays or numbers on either side (NDArray arithmetic's operators), and helpers the ``mx.nd``
functions share. Every other operator function (``exp``, ``sum``, ``dot``, ``FullyConnected`` ...)
is generated from the operator registry (:func:`symjit.imperative.install_nd_functions`);
shape-manipulating ones with argument checks of their own are in :mod:`symjit.ndarray.shape_ops`.
Results keep the input's dtype and context; full reductions give shape (1,) as in MXNet 1.x.

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

from ..base import DTypeError
from . import arith, dispatch, storage
from .creation import place
from .ndarray import NDArray, wrap

__all__ = [
    "waitall", "add", "subtract", "multiply", "divide", "modulo", "power", "maximum", "minimum", "hypot",
    "equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal", "need_nd",
]


def need_nd(x: Any, where: str, arg: str = "data") -> NDArray:
    """``x`` if it is an NDArray, else a DTypeError naming the function and argument."""
    if not isinstance(x, NDArray):
        raise DTypeError(f"{where}: argument '{arg}' must be an NDArray, got {type(x).__name__}")
    return x


def waitall() -> None:
    """Wait until the work queued on every GPU has finished, and the NDArray work the lazy engine
    queued on the CPU (:mod:`symjit.lazy`) has run.

    >>> import symjit as mx
    >>> mx.nd.waitall()
    """
    dispatch.settle()
    storage.synchronize()


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
__all__ += ["true_divide"]


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
