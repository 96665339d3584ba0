"""NDArray arithmetic's tables: the registered operator computing each operation, its symbol, and
what two plain numbers give (``mx.nd.add(2, 3)`` is 5, as in MXNet 1.x), plus the scalar and
shape helpers the operators' callers share.

A Python scalar operand is cast to the array's dtype (as MXNet casts the scalar of
``_plus_scalar`` to ``DType``) and passed to the compiled operator as an array of one element.

>>> BINARY['div'][1](7, 2), BINARY['gt'][1](1.0, 3.0)
(3.5, 0)
>>> scalar_as(2.7, np.dtype(np.int32)).tolist()
2
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import DTypeError, ShapeError, dtype_name, shape_str

__all__ = ["broadcast_shape", "scalar_as", "is_scalar", "BINARY", "ARRAY_OP", "SCALAR_OPS",
           "scalar_op_name"]


def _flag(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], int]:
    return lambda x, y: 1 if test(x, y) else 0


# name -> (the operator's symbol, what two plain numbers give)
BINARY: dict[str, tuple[str, Callable]] = {
    "add": ("+", operator.add),
    "sub": ("-", operator.sub),
    "mul": ("*", operator.mul),
    "div": ("/", operator.truediv),
    "mod": ("%", operator.mod),
    "pow": ("**", operator.pow),
    "eq": ("==", _flag(operator.eq)),
    "ne": ("!=", _flag(operator.ne)),
    "gt": (">", _flag(operator.gt)),
    "ge": (">=", _flag(operator.ge)),
    "lt": ("<", _flag(operator.lt)),
    "le": ("<=", _flag(operator.le)),
    "maximum": ("maximum", lambda x, y: x if x > y else y),
    "minimum": ("minimum", lambda x, y: x if x < y else y),
    "hypot": ("hypot", math.hypot),
}


# the registered operator computing each binary operation (broadcasting; a scalar as a (1,) array)
ARRAY_OP: dict[str, str] = {
    "add": "broadcast_add", "sub": "broadcast_sub", "mul": "broadcast_mul", "div": "broadcast_div",
    "mod": "broadcast_mod", "pow": "broadcast_power", "eq": "broadcast_equal",
    "ne": "broadcast_not_equal", "gt": "broadcast_greater", "ge": "broadcast_greater_equal",
    "lt": "broadcast_lesser", "le": "broadcast_lesser_equal", "maximum": "broadcast_maximum",
    "minimum": "broadcast_minimum", "hypot": "broadcast_hypot",
}


# MXNet's scalar operator for arithmetic of an array with a number:
# broadcast op -> (the number on the right, the number on the left)
SCALAR_OPS: dict[str, tuple[str, str]] = {
    "broadcast_add": ("_plus_scalar", "_plus_scalar"), "broadcast_sub": ("_minus_scalar", "_rminus_scalar"),
    "broadcast_mul": ("_mul_scalar", "_mul_scalar"), "broadcast_div": ("_div_scalar", "_rdiv_scalar"),
    "broadcast_mod": ("_mod_scalar", "_rmod_scalar"), "broadcast_power": ("_power_scalar", "_rpower_scalar"),
    "broadcast_maximum": ("_maximum_scalar", "_maximum_scalar"),
    "broadcast_minimum": ("_minimum_scalar", "_minimum_scalar"),
    "broadcast_hypot": ("_hypot_scalar", "_hypot_scalar"),
    "broadcast_equal": ("_equal_scalar", "_equal_scalar"),
    "broadcast_not_equal": ("_not_equal_scalar", "_not_equal_scalar"),
    "broadcast_greater": ("_greater_scalar", "_lesser_scalar"),
    "broadcast_greater_equal": ("_greater_equal_scalar", "_lesser_equal_scalar"),
    "broadcast_lesser": ("_lesser_scalar", "_greater_scalar"),
    "broadcast_lesser_equal": ("_lesser_equal_scalar", "_greater_equal_scalar"),
}


def scalar_op_name(op: str, inputs: list) -> str:
    """MXNet's name for the call ``op(*inputs)``: a broadcast operator with a number operand (an
    array marked ``_number``) is its scalar operator (``x + 1``: ``_plus_scalar``).

    >>> scalar_op_name('broadcast_sub', [object(), object()])
    'broadcast_sub'
    """
    ops = SCALAR_OPS.get(op)
    if ops is not None and len(inputs) == 2:
        for k in (1, 0):
            if getattr(inputs[k], "_number", False):
                return ops[1 - k]
    return op


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
