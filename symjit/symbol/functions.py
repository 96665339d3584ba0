"""``mx.sym`` functions that are not one operator's constructor, as MXNet's ``symbol`` module has
them: the creation functions (``zeros``, ``ones``, ``full``, ``arange``, ``linspace``, ``eye``,
building the input-less operators of :mod:`symjit.ops.source`) and the binary functions taking a
symbol or a number on either side (``maximum``, ``minimum``, ``power``/``pow``, ``hypot``).

>>> import symjit as mx
>>> x = mx.sym.Variable('x')
>>> y = mx.sym.maximum(x, 0.5) + mx.sym.ones((2,))
>>> y.simple_bind(mx.cpu(), x=(2,)).forward(x=mx.nd.array([0.0, 2.0]))[0].asnumpy().tolist()
[1.5, 3.0]
"""
from __future__ import annotations

import math
import numbers
from typing import Any

from ..base import MXNetError
from .symbol import Symbol, make_op_symbol

__all__ = ["zeros", "ones", "full", "arange", "linspace", "eye", "maximum", "minimum", "power", "pow",
           "hypot", "split_v2", "split_v2_params", "histogram"]


def _dtype(dtype: Any) -> Any:
    return "float32" if dtype is None else dtype


def zeros(shape: Any, dtype: Any = None, name: str | None = None, **kwargs: Any) -> Symbol:
    """A symbol of zeros of ``shape`` (MXNet's ``_zeros``)."""
    return make_op_symbol("_zeros", shape=shape, dtype=_dtype(dtype), name=name, **kwargs)


def ones(shape: Any, dtype: Any = None, name: str | None = None, **kwargs: Any) -> Symbol:
    """A symbol of ones of ``shape`` (MXNet's ``_ones``)."""
    return make_op_symbol("_ones", shape=shape, dtype=_dtype(dtype), name=name, **kwargs)


def full(shape: Any, val: float, dtype: Any = None, name: str | None = None, **kwargs: Any) -> Symbol:
    """A symbol of ``shape`` filled with ``val`` (MXNet's ``_full``)."""
    return make_op_symbol("_full", shape=shape, value=float(val), dtype=_dtype(dtype), name=name, **kwargs)


def arange(start: float, stop: float | None = None, step: float = 1.0, repeat: int = 1,
           infer_range: bool = False, name: str | None = None, dtype: Any = None) -> Symbol:
    """Evenly spaced values in ``[start, stop)`` (MXNet's ``_arange``)."""
    return make_op_symbol("_arange", start=start, stop=stop, step=step, repeat=repeat,
                          infer_range=infer_range, dtype=_dtype(dtype), name=name)


def linspace(start: float, stop: float, num: int, endpoint: bool = True, name: str | None = None,
             dtype: Any = None) -> Symbol:
    """``num`` evenly spaced values from ``start`` to ``stop`` (MXNet's ``_linspace``)."""
    return make_op_symbol("_linspace", start=start, stop=stop, num=num, endpoint=endpoint,
                          dtype=_dtype(dtype), name=name)


def eye(N: int, M: int = 0, k: int = 0, dtype: Any = None, name: str | None = None, **kwargs: Any) -> Symbol:
    """An N x M matrix with ones on diagonal ``k`` (MXNet's ``_eye``)."""
    return make_op_symbol("_eye", N=N, M=M, k=k, dtype=_dtype(dtype), name=name, **kwargs)


def _binary(where: str, left: Any, right: Any, both: str, scalar: str, rscalar: str, py) -> Any:
    """``both(left, right)`` for two symbols, ``scalar(sym, scalar=n)`` or ``rscalar(sym,
    scalar=n)`` with a number on the right or the left, ``py(left, right)`` for two numbers."""
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return make_op_symbol(both, left, right)
    if isinstance(left, Symbol) and isinstance(right, numbers.Number):
        return make_op_symbol(scalar, left, scalar=float(right))
    if isinstance(right, Symbol) and isinstance(left, numbers.Number):
        return make_op_symbol(rscalar, right, scalar=float(left))
    if isinstance(left, numbers.Number) and isinstance(right, numbers.Number):
        return py(left, right)
    raise MXNetError(f"{where}: operands must be Symbols or numbers, got {type(left).__name__} and "
                     f"{type(right).__name__}")


def maximum(left: Any, right: Any) -> Any:
    """Elementwise maximum of two symbols of one shape, or of a symbol and a number."""
    return _binary("maximum", left, right, "_maximum", "_maximum_scalar", "_maximum_scalar", max)


def minimum(left: Any, right: Any) -> Any:
    """Elementwise minimum of two symbols of one shape, or of a symbol and a number."""
    return _binary("minimum", left, right, "_minimum", "_minimum_scalar", "_minimum_scalar", min)


def power(base: Any, exp: Any) -> Any:
    """``base ** exp`` elementwise: two symbols of one shape, or a symbol and a number."""
    return _binary("power", base, exp, "_power", "_power_scalar", "_rpower_scalar", lambda a, b: a ** b)


pow = power   # noqa: A001  (MXNet's name)


def hypot(left: Any, right: Any) -> Any:
    """``sqrt(left**2 + right**2)`` elementwise: two symbols of one shape, or a symbol and a number."""
    return _binary("hypot", left, right, "_hypot", "_hypot_scalar", "_hypot_scalar", math.hypot)


def split_v2_params(indices_or_sections: Any, axis: int, squeeze_axis: bool) -> dict:
    """``_split_v2``'s params from MXNet's ``indices_or_sections`` (an int: equal sections; a
    tuple: where the pieces after the first start)."""
    if isinstance(indices_or_sections, numbers.Integral):
        return {"sections": int(indices_or_sections), "axis": axis, "squeeze_axis": squeeze_axis}
    if isinstance(indices_or_sections, (tuple, list)):
        return {"indices": (0, *indices_or_sections), "axis": axis, "squeeze_axis": squeeze_axis}
    raise MXNetError(f"split_v2: indices_or_sections must be an int or a tuple, got "
                     f"{type(indices_or_sections).__name__}")


def split_v2(ary: Symbol, indices_or_sections: Any, axis: int = 0, squeeze_axis: bool = False,
             name: str | None = None) -> Symbol:
    """Split ``ary`` along ``axis`` into equal sections (an int) or at the given indices (a tuple);
    a grouped symbol with one output per piece."""
    return make_op_symbol("_split_v2", ary, name=name, **split_v2_params(indices_or_sections, axis,
                                                                         squeeze_axis))


def histogram(a: Symbol, bins: Any = 10, range: Any = None, name: str | None = None) -> Symbol:   # noqa: A002
    """Counts (int64) of ``a``'s elements per bin, and the bin edges (a grouped symbol of two
    outputs): ``bins`` equal bins over ``range`` (required for symbols), or ``bins`` a symbol of
    edges (MXNet's ``_histogram``)."""
    if isinstance(bins, Symbol):
        return make_op_symbol("_histogram", a, bins, name=name)
    if range is None:
        raise MXNetError("histogram: give range=(low, high) with an int number of bins")
    return make_op_symbol("_histogram", a, bin_cnt=int(bins), range=str(tuple(float(v) for v in range)),
                          name=name)
