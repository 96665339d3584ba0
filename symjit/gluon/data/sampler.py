"""Samplers: the order in which a :class:`~symjit.gluon.data.DataLoader` visits a dataset.

A sampler is an iterable of dataset indices with a length; :class:`BatchSampler` groups another
sampler's indices into lists (mini-batches). Shuffling draws from NumPy's global generator
(``np.random``), as MXNet's samplers do, so ``np.random.seed`` makes an epoch's order repeatable.

>>> from symjit.gluon.data import SequentialSampler, BatchSampler
>>> list(BatchSampler(SequentialSampler(7), 3, "keep"))
[[0, 1, 2], [3, 4, 5], [6]]
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ...base import ParamError

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler",
           "IntervalSampler"]

LAST_BATCH = ("keep", "discard", "rollover")


def _count(value: Any, name: str, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ParamError(f"{where}: {name} must be an int >= {minimum}, got {value!r}")
    return int(value)


class Sampler:
    """Base class of samplers: subclasses define ``__iter__`` (indices) and ``__len__``.

    >>> class Evens(Sampler):
    ...     def __iter__(self): return iter(range(0, 6, 2))
    ...     def __len__(self): return 3
    >>> list(Evens())
    [0, 2, 4]
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class SequentialSampler(Sampler):
    """The indices ``start, start + 1, ..., start + length - 1`` in order.

    >>> list(SequentialSampler(3, start=2))
    [2, 3, 4]
    """

    def __init__(self, length: int, start: int = 0):
        self._length = _count(length, "length", "SequentialSampler")
        self._start = _count(start, "start", "SequentialSampler")

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._start, self._start + self._length))

    def __len__(self) -> int:
        return self._length


class RandomSampler(Sampler):
    """The indices ``0 .. length - 1`` in a new random order on every pass (no repeats), drawn
    from ``np.random``.

    >>> sorted(RandomSampler(4))
    [0, 1, 2, 3]
    """

    def __init__(self, length: int):
        self._length = _count(length, "length", "RandomSampler")

    def __iter__(self) -> Iterator[int]:
        order = np.random.permutation(self._length)
        return iter(order.tolist())

    def __len__(self) -> int:
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of ``dataset`` for which ``fn(sample)`` is true (the dataset is
    read once, when the sampler is made).

    >>> list(FilterSampler(lambda x: x > 1, [3, 0, 2, 1]))
    [0, 2]
    """

    def __init__(self, fn: Callable[[Any], bool], dataset: Any):
        if not callable(fn):
            raise ParamError(f"FilterSampler: fn must be callable, got {type(fn).__name__}")
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self) -> Iterator[int]:
        return iter(self._indices)

    def __len__(self) -> int:
        return len(self._indices)


class IntervalSampler(Sampler):
    """Every ``interval``-th index of ``0 .. length - 1``: ``0, interval, 2 * interval, ...``;
    with ``rollover`` the pass goes on from 1, then 2, ... so that every index comes once.

    >>> list(IntervalSampler(7, 3))
    [0, 3, 6, 1, 4, 2, 5]
    >>> list(IntervalSampler(7, 3, rollover=False))
    [0, 3, 6]
    """

    def __init__(self, length: int, interval: int, rollover: bool = True):
        self._length = _count(length, "length", "IntervalSampler")
        self._interval = _count(interval, "interval", "IntervalSampler", 1)
        if self._interval > max(self._length, 1):
            raise ParamError(f"IntervalSampler: interval {interval} is larger than length {length}")
        self._rollover = bool(rollover)

    def __iter__(self) -> Iterator[int]:
        for first in range(self._interval if self._rollover else 1):
            yield from range(first, self._length, self._interval)

    def __len__(self) -> int:
        if self._rollover:
            return self._length
        return len(range(0, self._length, self._interval))


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices taken from ``sampler``. What happens to a last, shorter
    list is ``last_batch``'s choice: ``'keep'`` yields it, ``'discard'`` drops it, ``'rollover'``
    keeps its indices for the start of the next pass.

    >>> b = BatchSampler(SequentialSampler(5), 2, "rollover")
    >>> list(b), list(b)
    ([[0, 1], [2, 3]], [[4, 0], [1, 2], [3, 4]])
    """

    def __init__(self, sampler: Any, batch_size: int, last_batch: str = "keep"):
        self._sampler = sampler
        self._batch_size = _count(batch_size, "batch_size", "BatchSampler", 1)
        if last_batch not in LAST_BATCH:
            raise ParamError(f"BatchSampler: last_batch must be one of {', '.join(map(repr, LAST_BATCH))}, "
                             f"got {last_batch!r}")
        self._last_batch = last_batch
        self._carry: list = []

    def __iter__(self) -> Iterator[list]:
        batch, self._carry = self._carry, []
        for index in self._sampler:
            batch.append(index)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if not batch:
            return
        if self._last_batch == "keep":
            yield batch
        elif self._last_batch == "rollover":
            self._carry = batch

    def __len__(self) -> int:
        n = len(self._sampler)
        if self._last_batch == "keep":
            return -(-n // self._batch_size)
        if self._last_batch == "discard":
            return n // self._batch_size
        return (n + len(self._carry)) // self._batch_size
