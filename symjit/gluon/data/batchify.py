"""Batchify functions: how a :class:`~symjit.gluon.data.DataLoader` turns a list of samples into
a batch (its ``batchify_fn``).

:class:`Stack` stacks samples of one shape, :class:`Pad` pads samples of different shapes to a
common one, :class:`Append` keeps them apart as a list, :class:`Group` applies one function per
field of tuple samples, :class:`AsList` hands the list through. MXNet 1.9.1 has no
``gluon.data.batchify`` module (it came with MXNet 2.0); symjit follows 2.0's classes.

>>> import numpy as np
>>> from symjit.gluon.data.batchify import Group, Pad, Stack
>>> fn = Group(Pad(val=-1), Stack())
>>> data, label = fn([(np.array([1, 2, 3]), 0), (np.array([4]), 1)])
>>> data.asnumpy().tolist(), label.asnumpy().tolist()
([[1, 2, 3], [4, -1, -1]], [0, 1])
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...base import ParamError, ShapeError, np_dtype
from ...context import Context
from ...ndarray.ndarray import NDArray, wrap

__all__ = ["Stack", "Pad", "Append", "Group", "AsList"]


def _ctx(use_shared_mem: bool) -> Context:
    return Context("cpu_shared", 0) if use_shared_mem else Context("cpu", 0)


def _host(x: Any) -> np.ndarray:
    return x.asnumpy() if isinstance(x, NDArray) else np.asarray(x)


def _check_samples(data: Any, where: str) -> None:
    if not isinstance(data, (list, tuple)) or not data:
        raise ParamError(f"{where}: expects a non-empty list of samples, got "
                         f"{type(data).__name__ if not isinstance(data, (list, tuple)) else 'an empty list'}")


class Stack:
    """Stack samples of one shape along a new first axis into one NDArray. Tuple samples are
    stacked field by field (a list of NDArrays); numbers give a 1-D array of their dtype.

    >>> import numpy as np
    >>> Stack()([np.zeros((2, 3)), np.ones((2, 3))]).shape
    (2, 2, 3)
    """

    def __init__(self, use_shared_mem: bool = False):
        self._use_shared_mem = bool(use_shared_mem)

    def __call__(self, data: Sequence[Any]) -> Any:
        _check_samples(data, "batchify.Stack")
        first = data[0]
        if isinstance(first, (tuple, list)) and not isinstance(first, np.ndarray) \
                and first and not np.isscalar(first[0]):
            return [self(list(field)) for field in zip(*data)]
        arrays = [_host(x) for x in data]
        shapes = {a.shape for a in arrays}
        if len(shapes) > 1:
            raise ShapeError(f"batchify.Stack: samples must have one shape, got {sorted(shapes)}; "
                             "use batchify.Pad for samples of different lengths")
        dtype = arrays[0].dtype
        return wrap(np.stack(arrays).astype(dtype, copy=False), _ctx(self._use_shared_mem))


class Pad:
    """Pad samples (arrays or lists of numbers of one rank) with ``val`` (default 0) to the
    largest size along every axis, then stack them. ``dtype``: of the batch (default the
    samples'); ``round_to``: each padded size rounded up to a multiple of it.

    >>> Pad(val=0, round_to=4)([[1, 2, 3], [4, 5]]).asnumpy().tolist()
    [[1, 2, 3, 0], [4, 5, 0, 0]]
    """

    def __init__(self, val: float | None = None, dtype: Any = None, round_to: int | None = None,
                 use_shared_mem: bool = False):
        self._val = 0 if val is None else val
        self._dtype = None if dtype is None else np_dtype(dtype)
        if round_to is not None and (isinstance(round_to, bool) or not isinstance(round_to, int)
                                     or round_to < 1):
            raise ParamError(f"batchify.Pad: round_to must be None or a positive int, got {round_to!r}")
        self._round_to = round_to
        self._use_shared_mem = bool(use_shared_mem)

    def __call__(self, data: Sequence[Any]) -> NDArray:
        _check_samples(data, "batchify.Pad")
        if isinstance(data[0], tuple):
            raise ParamError("batchify.Pad: the samples are tuples; use batchify.Group(Pad(), ...) to pad "
                             "each field")
        arrays = [_host(x) for x in data]
        ranks = {a.ndim for a in arrays}
        if len(ranks) > 1:
            raise ShapeError(f"batchify.Pad: samples must have one rank, got shapes "
                             f"{[a.shape for a in arrays]}")
        shape = [max(a.shape[k] for a in arrays) for k in range(arrays[0].ndim)]
        if self._round_to is not None:
            shape = [self._round_to * math.ceil(n / self._round_to) for n in shape]
        dtype = self._dtype or arrays[0].dtype
        out = np.full([len(arrays)] + shape, self._val, dtype=dtype)
        for i, a in enumerate(arrays):
            out[(i,) + tuple(slice(0, n) for n in a.shape)] = a
        return wrap(out, _ctx(self._use_shared_mem))


class Append:
    """The samples as a list of NDArrays, each with a batch axis of length 1 inserted at
    ``batch_axis`` when ``expand`` (samples of different shapes stay apart).

    >>> [a.shape for a in Append()([[1, 2], [3]])]
    [(1, 2), (1, 1)]
    """

    def __init__(self, expand: bool = True, batch_axis: int = 0, use_shared_mem: bool = False):
        self._expand = bool(expand)
        self._batch_axis = int(batch_axis)
        self._use_shared_mem = bool(use_shared_mem)

    def __call__(self, data: Sequence[Any]) -> list[NDArray]:
        _check_samples(data, "batchify.Append")
        out = []
        for x in data:
            a = _host(x)
            if self._expand:
                a = np.expand_dims(a, self._batch_axis)
            out.append(wrap(np.ascontiguousarray(a), _ctx(self._use_shared_mem)))
        return out


class Group:
    """One batchify function per field of tuple samples: ``Group(f0, f1)`` or
    ``Group([f0, f1])`` makes ``(f0(field 0 of each sample), f1(field 1 ...))``.

    >>> a, b = Group(Stack(), AsList())([(1, 'x'), (2, 'y')])
    >>> a.asnumpy().tolist(), b
    ([1, 2], ['x', 'y'])
    """

    def __init__(self, fn: Any, *args: Callable[..., Any]):
        fns = list(fn) + list(args) if isinstance(fn, (list, tuple)) else [fn, *args]
        for i, f in enumerate(fns):
            if not callable(f):
                raise ParamError(f"batchify.Group: function {i} is not callable ({type(f).__name__})")
        self._fn = fns

    def __call__(self, data: Sequence[Any]) -> tuple:
        _check_samples(data, "batchify.Group")
        width = len(data[0])
        if width != len(self._fn):
            raise ParamError(f"batchify.Group: {len(self._fn)} functions for samples of {width} fields")
        return tuple(f([sample[i] for sample in data]) for i, f in enumerate(self._fn))


class AsList:
    """The samples as they are, in a list.

    >>> AsList()([1, 'a'])
    [1, 'a']
    """

    def __call__(self, data: Sequence[Any]) -> list:
        return list(data)
