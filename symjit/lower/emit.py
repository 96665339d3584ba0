"""Source helpers every lowering shares: constants, runtime dims, array views, loops, kernel calls.

A lowering emits Numba source through a :class:`~symjit.lower.writer.KernelWriter`; these helpers
keep the common patterns short and written once.

>>> from symjit.lower.writer import KernelWriter, ModuleWriter
>>> k = KernelWriter(ModuleWriter("", ""), "f", ["x"])
>>> axis_view3(k, "x", 1, 3), k.lines[-1].strip()
('_v1', '_v1 = x.reshape(x.shape[0], x.shape[1], x.shape[2])')
>>> int_tuple((3, 1)), dims("x", range(2)), literal(0.5, np.dtype('float32'))
('(np.int64(3), np.int64(1))', 'x.shape[0] * x.shape[1]', 'np.float32(0.5)')
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from .writer import PARTS_SUFFIX

__all__ = ["KCPU", "axis_steps", "stepped_index", "call", "view2d", "rows_view", "elem_index", "literal",
           "int_tuple", "dims", "axis_view3", "rank_axis", "open_loops", "close_loops", "flat_index", "ndim"]

KCPU = "symjit.kernels.cpu"


def literal(value: float, dtype: np.dtype) -> str:
    """A constant as source, typed like the arrays it meets (float32 stays float32)."""
    dt = np.dtype(dtype)
    if isinstance(value, bool):
        value = float(value)
    if isinstance(value, float) and math.isnan(value):
        text = "math.nan"
    elif isinstance(value, float) and math.isinf(value):
        text = "math.inf" if value > 0 else "-math.inf"
    else:
        text = repr(value)
    if dt.kind == "f":
        return f"np.{dt.name}({text})"
    return text


def int_tuple(values: Iterable[int]) -> str:
    """A tuple of int64 constants as source (typed int64, not literals Numba specialises on)."""
    return "(" + ", ".join(f"np.int64({int(v)})" for v in values) + ")"


def const_source(value: int | float | tuple) -> str:
    """The source of a kernel's attribute argument (``KernelWriter.const``): an int64, a float64,
    or a tuple of int64s."""
    if isinstance(value, tuple):
        return int_tuple(value)
    if not isinstance(value, float):
        return f"np.int64({int(value)})"
    text = "np.nan" if math.isnan(value) else repr(value).replace("inf", "np.inf")
    return f"np.float64({text})"


def axis_steps(k, array: str, ndim: int) -> list[str]:
    """Emit, per axis of ``array``, a local that is 0 where the array has size 1 and 1 elsewhere
    (what an index is multiplied by to broadcast it, :func:`stepped_index`); returns their names.
    A kernel indexing so serves every broadcast pattern of its ranks.

    >>> from symjit.lower.writer import KernelWriter, ModuleWriter
    >>> k = KernelWriter(ModuleWriter("", ""), "k0", ["v1"])
    >>> axis_steps(k, "v1", 2), k.lines
    (['_s1', '_s2'], ['    _s1 = 0 if v1.shape[0] == 1 else 1', '    _s2 = 0 if v1.shape[1] == 1 else 1'])
    """
    names = []
    for d in range(ndim):
        names.append(k.tmp("s"))
        k.line(f"{names[-1]} = 0 if {array}.shape[{d}] == 1 else 1")
    return names


def stepped_index(idx: list[str], steps: list[str]) -> str:
    """The index of an array by :func:`axis_steps` (``idx`` and ``steps`` aligned).

    >>> stepped_index(["i0", "i1"], ["_s1", "_s2"])
    'i0 * _s1, i1 * _s2'
    """
    return ", ".join(f"{i} * {s}" for i, s in zip(idx, steps))


def dims(arr: str, axes: Iterable[int]) -> str:
    """Source of the product of ``arr``'s runtime dims ``axes`` ("1" for none)."""
    return " * ".join(f"{arr}.shape[{d}]" for d in axes) or "1"


def call(k, module: str, fn: str, *args: object) -> None:
    """Emit ``module.fn(*args)`` (module relative to ``symjit.kernels.cpu``; a building block in
    parts gets the kernel's part parameters, ``KernelWriter.parts_call``)."""
    alias = k.imp(f"{KCPU}.{module}", fn)
    text = [str(a) for a in args]
    if fn.endswith(PARTS_SUFFIX):
        text = k.parts_call(text)
    k.line(f"{alias}({', '.join(text)})")


def view2d(k, arr: str, first: str = "0") -> str:
    """A local 2-D view of ``arr``: (shape[0], rest) when ``first='0'``, (rest, shape[-1]) when
    ``first='-1'``."""
    name = k.tmp("v")
    if first == "0":
        k.line(f"{name} = {arr}.reshape({arr}.shape[0], -1)")
    else:
        k.line(f"{name} = {arr}.reshape(-1, {arr}.shape[-1])")
    return name


def rows_view(k, arr: str) -> str:
    """A 2-D (rows, last axis) view."""
    return view2d(k, arr, "-1")


def elem_index(idx: list[str]) -> str:
    return ", ".join(idx)


def axis_view3(k, arr: str, axis: int, ndim: int, mid: str | None = None) -> str:
    """Emit a local ``(A, K, B)`` view of ``arr`` (rank ``ndim``): ``K`` is ``axis`` (or the source
    ``mid``), ``A`` the product of the dims before it and ``B`` of those after it (runtime shapes)."""
    name = k.tmp("v")
    k_dim = mid if mid is not None else f"{arr}.shape[{axis}]"
    k.line(f"{name} = {arr}.reshape({dims(arr, range(axis))}, {k_dim}, {dims(arr, range(axis + 1, ndim))})")
    return name


def ndim(k, arr: str) -> int:
    """The static rank of the array argument ``arr``."""
    return len(k.info[arr].shape)


def flat_index(idx: list[str], arr: str, start: int = 0) -> str:
    """Source of the row-major flat position of index ``idx`` over axes ``start``... of ``arr``
    (runtime shapes).

    >>> flat_index(['i', 'j', 'l'], 'x')
    '((i) * x.shape[1] + j) * x.shape[2] + l'
    """
    flat = idx[0] if idx else "0"
    for d in range(1, len(idx)):
        flat = f"({flat}) * {arr}.shape[{start + d}] + {idx[d]}"
    return flat


def rank_axis(k, node, arr: str) -> tuple[int, int]:
    """(rank of ``arr``, the node's ``axis`` param normalised for it)."""
    nd = len(k.info[arr].shape)
    return nd, node.params["axis"] % nd


def decode_flat(k, flat: str, extents: list[str], names: list[str] | None = None) -> list[str]:
    """Emit the row-major decoding of the flat position ``flat`` over ``extents`` (sources);
    return the index names (fresh ones, or ``names``; ``flat`` itself for one extent when no
    names are given)."""
    if len(extents) == 1 and names is None:
        return [flat]
    idx, rest = names or [k.tmp("i") for _ in extents], k.tmp("rest")
    k.line(f"{rest} = {flat}")
    for d in reversed(range(len(extents))):
        k.line(f"{idx[d]} = {rest} % ({extents[d]})")
        k.line(f"{rest} = {rest} // ({extents[d]})")
    return idx


def open_loops(k, extents: list[str], prefix: str = "i") -> list[str]:
    """Open one serial loop per extent (source expressions); returns the fresh index names."""
    idx = [k.tmp(prefix) for _ in extents]
    for i, n in zip(idx, extents):
        k.line(f"for {i} in range({n}):")
        k.indent += 1
    return idx


def close_loops(k, idx: list[str]) -> None:
    k.indent -= len(idx)
