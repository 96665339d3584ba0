"""NDArray arithmetic's tables (the registered operator of each operation) and the numpy kernels
float16 arrays on the CPU compute with (MXNet 1.x semantics).

Both operands arrive as numpy arrays of the same dtype (a Python scalar is first cast to the
array's dtype, as MXNet casts the scalar of ``_plus_scalar`` to ``DType``), and the result keeps
that dtype: comparisons give 0/1 in it, integer division truncates toward zero like C, ``%``
takes the divisor's sign and gives 0 for a zero divisor, as MXNet's ``mod`` does.

>>> import numpy as np
>>> compute('div', np.array([7, -7], np.int32), np.array([2, 2], np.int32)).tolist()
[3, -3]
>>> compute('gt', np.array([1., 3.], np.float32), np.array(2., np.float32)).tolist()
[0.0, 1.0]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import DTypeError, ShapeError, dtype_name, shape_str

__all__ = ["compute", "broadcast_shape", "scalar_as", "is_scalar", "BINARY", "ARRAY_OP"]


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    zero = b == 0
    safe = np.where(zero, 1, b).astype(b.dtype)
    q = np.floor_divide(a, safe)
    fix = (np.remainder(a, safe) != 0) & ((a < 0) != (safe < 0))
    q = q + fix.astype(q.dtype)
    return np.where(zero, 0, q)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iub":
        return _int_div(a, b)
    return np.true_divide(a, b)


def _mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    zero = b == 0
    safe = np.where(zero, 1, b).astype(b.dtype)
    return np.where(zero, 0, np.mod(a, safe))


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu" and np.any(b < 0):
        return np.power(a.astype(np.float64), b.astype(np.float64))
    return np.power(a, b)


BINARY: dict[str, tuple[str, Callable]] = {
    "add": ("+", np.add),
    "sub": ("-", np.subtract),
    "mul": ("*", np.multiply),
    "div": ("/", _div),
    "mod": ("%", _mod),
    "pow": ("**", _pow),
    "eq": ("==", np.equal),
    "ne": ("!=", np.not_equal),
    "gt": (">", np.greater),
    "ge": (">=", np.greater_equal),
    "lt": ("<", np.less),
    "le": ("<=", np.less_equal),
    "maximum": ("maximum", np.maximum),
    "minimum": ("minimum", np.minimum),
    "hypot": ("hypot", np.hypot),
}


# the registered operator computing each binary operation (broadcasting; a scalar as a (1,) array)
ARRAY_OP: dict[str, str] = {
    "add": "broadcast_add", "sub": "broadcast_sub", "mul": "broadcast_mul", "div": "broadcast_div",
    "mod": "broadcast_mod", "pow": "broadcast_power", "eq": "broadcast_equal",
    "ne": "broadcast_not_equal", "gt": "broadcast_greater", "ge": "broadcast_greater_equal",
    "lt": "broadcast_lesser", "le": "broadcast_lesser_equal", "maximum": "broadcast_maximum",
    "minimum": "broadcast_minimum", "hypot": "broadcast_hypot",
}
def is_scalar(x: Any) -> bool:
    """True for Python and numpy numbers (bools included), which operators take as scalars."""
    return isinstance(x, (int, float, np.number, np.bool_)) or (
        isinstance(x, np.ndarray) and x.ndim == 0)


def scalar_as(value: Any, dtype: np.dtype) -> np.ndarray:
    """``value`` as a 0-d array of ``dtype`` (C-style cast: 2.7 -> 2 for integer arrays)."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(np.asarray(value).astype(dtype))
    except (OverflowError, TypeError, ValueError) as exc:
        raise DTypeError(f"cannot use the scalar {value!r} with an array of dtype "
                         f"{dtype_name(dtype)}: {exc}") from None


def broadcast_shape(op: str, lshape: tuple[int, ...], rshape: tuple[int, ...]) -> tuple[int, ...]:
    """The numpy broadcast of two shapes; ShapeError naming the op and both shapes otherwise."""
    try:
        return tuple(np.broadcast_shapes(lshape, rshape))
    except ValueError:
        raise ShapeError(f"{op}: operands could not be broadcast together: shapes "
                         f"{shape_str(lshape)} and {shape_str(rshape)}") from None


def compute(name: str, a: np.ndarray, b: np.ndarray, where: str | None = None) -> np.ndarray:
    """``a <op> b`` elementwise with broadcasting; the result has ``a``'s dtype."""
    symbol, fn = BINARY[name]
    op = where or f"NDArray {symbol}"
    if a.dtype != b.dtype:
        raise DTypeError(f"{op}: operands have different dtypes {dtype_name(a.dtype)} and "
                         f"{dtype_name(b.dtype)}; convert one with astype()")
    broadcast_shape(op, a.shape, b.shape)
    with np.errstate(all="ignore"):
        out = fn(a, b)
    return np.asarray(out).astype(a.dtype, copy=False)
