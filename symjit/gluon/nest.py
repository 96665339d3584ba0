"""Nested inputs and outputs of Gluon blocks: (nested) lists of arrays or symbols flattened to
one list and regrouped in the same structure.

>>> import symjit as mx
>>> a, b, c = mx.nd.ones(1), mx.nd.zeros(1), mx.nd.ones(2)
>>> flat, fmt = _flatten([a, [b, c]], "input")
>>> len(flat), fmt
(3, [0, [0, 0]])
>>> nested = _regroup(flat, fmt)[0]
>>> nested[0] is a and nested[1][1] is c
True
"""
from __future__ import annotations

from typing import Any

from ..ndarray import NDArray
from ..symbol import Symbol

__all__ = ["_flatten", "_regroup"]


def _flatten(args: Any, what: str, loose: bool = False) -> tuple[list, Any]:  # noqa: FBT001, FBT002
    """Nested lists/tuples of arrays or symbols -> (flat list, format to regroup); ``loose``:
    other values (numbers) are items too, instead of an error."""
    if isinstance(args, (NDArray, Symbol)):
        if isinstance(args, Symbol) and len(args) > 1:
            return list(args), len(args)
        return [args], 0
    if args is None:
        return [None], -1
    if loose and not isinstance(args, (list, tuple)):
        return [args], 0
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"HybridBlock {what} must be (nested) list of Symbol or NDArray, but got "
                        f"{args!r} of type {type(args).__name__}")
    flat, fmts = [], []
    for a in args:
        f, fmt = _flatten(a, what, loose)
        flat += f
        fmts.append(fmt)
    return flat, fmts


def _regroup(args: list, fmt: Any) -> tuple[Any, list]:
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        if fmt == -1:
            return None, args[1:]
        return args[:fmt], args[fmt:]
    out = []
    for f in fmt:
        res, args = _regroup(args, f)
        out.append(res)
    return out, args
