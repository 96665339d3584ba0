"""Datasets: indexable collections of samples with a length.

A dataset answers ``len(ds)`` and ``ds[i]``; lists, numpy arrays and NDArrays serve as datasets
as they are. :class:`Dataset` adds the derived views: ``transform``/``transform_first`` (a
function applied to each sample, on demand or once), ``filter``, ``shard``, ``take`` and
``sample`` (a subset chosen by a sampler).

>>> from symjit.gluon.data import SimpleDataset
>>> ds = SimpleDataset(list(range(10)))
>>> list(ds.transform(lambda x: x * x).take(4))
[0, 1, 4, 9]
>>> [len(ds.shard(3, i)) for i in range(3)]
[4, 3, 3]
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ...base import MXNetError, ParamError
from ...ndarray.ndarray import NDArray

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """Base class of datasets: subclasses define ``__getitem__`` and ``__len__``.

    >>> class Squares(Dataset):
    ...     def __getitem__(self, i): return i * i
    ...     def __len__(self): return 4
    >>> list(Squares().filter(lambda x: x % 2 == 0))
    [0, 4]
    """

    def __getitem__(self, idx: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def filter(self, fn: Callable[[Any], bool]) -> Dataset:
        """The samples for which ``fn(sample)`` is true (a transformed dataset's samples are
        transformed before ``fn`` sees them, and again when read).

        >>> list(SimpleDataset([5, 6, 7, 8]).filter(lambda x: x % 2))
        [5, 7]
        """
        from .sampler import FilterSampler
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards: int, index: int) -> Dataset:
        """Part ``index`` of ``num_shards`` contiguous parts of nearly equal length (the first
        ``len % num_shards`` parts have one sample more). Shard before shuffling so that each
        worker of a distributed job reads its own samples.

        >>> list(SimpleDataset(list(range(5))).shard(2, 1))
        [3, 4]
        """
        for name, value in (("num_shards", num_shards), ("index", index)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ParamError(f"Dataset.shard: {name} must be an int, got {value!r}")
        if num_shards <= 0:
            raise ParamError(f"Dataset.shard: num_shards must be positive, got {num_shards}")
        if not 0 <= index < num_shards:
            raise ParamError(f"Dataset.shard: index must be in [0, {num_shards}), got {index}")
        base, extra = divmod(len(self), num_shards)
        start = base * index + min(index, extra)
        from .sampler import SequentialSampler
        return _SampledDataset(self, SequentialSampler(base + (index < extra), start))

    def take(self, count: int | None) -> Dataset:
        """The first ``count`` samples (all of them when ``count`` is None or at least the
        length).

        >>> len(SimpleDataset([1, 2, 3]).take(10))
        3
        """
        if count is not None and (isinstance(count, bool) or not isinstance(count, (int, np.integer))
                                  or count < 0):
            raise ParamError(f"Dataset.take: count must be None or an int >= 0, got {count!r}")
        n = len(self)
        if count is None or count > n:
            count = n
        from .sampler import SequentialSampler
        return _SampledDataset(self, SequentialSampler(int(count)))

    def sample(self, sampler: Any) -> Dataset:
        """The samples at the indices ``sampler`` (a :class:`Sampler`) yields, in its order.

        >>> from symjit.gluon.data import IntervalSampler
        >>> list(SimpleDataset(list("abcd")).sample(IntervalSampler(4, 2)))
        ['a', 'c', 'b', 'd']
        """
        from .sampler import Sampler
        if not isinstance(sampler, Sampler):
            raise TypeError(f"Dataset.sample: sampler must be a gluon.data.Sampler, got "
                            f"{type(sampler).__name__}")
        return _SampledDataset(self, sampler)

    def transform(self, fn: Callable[..., Any], lazy: bool = True) -> Dataset:
        """Each sample passed through ``fn`` (a tuple sample as separate arguments). ``lazy``:
        on every read (needed for random augmentations); otherwise once, now, into a
        :class:`SimpleDataset`.

        >>> list(SimpleDataset([(1, 2), (3, 4)]).transform(lambda a, b: a + b))
        [3, 7]
        """
        if not callable(fn):
            raise ParamError(f"Dataset.transform: fn must be callable, got {type(fn).__name__}")
        view = _LazyTransformDataset(self, fn)
        return view if lazy else SimpleDataset([view[i] for i in range(len(view))])

    def transform_first(self, fn: Callable[[Any], Any], lazy: bool = True) -> Dataset:
        """Like :meth:`transform`, for the first element of each sample only (the data of a
        ``(data, label)`` pair); the other elements are kept as they are.

        >>> list(SimpleDataset([(1, 'a'), (2, 'b')]).transform_first(lambda x: -x))
        [(-1, 'a'), (-2, 'b')]
        """
        if not callable(fn):
            raise ParamError(f"Dataset.transform_first: fn must be callable, got {type(fn).__name__}")
        return self.transform(_FirstOnly(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset over any object with ``len`` and indexing (a list, an array).

    >>> SimpleDataset([4, 5])[1]
    5
    """

    def __init__(self, data: Any):
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data: Any, fn: Callable[..., Any]):
        self._data, self._fn = data, fn

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        item = self._data[idx]
        return self._fn(*item) if isinstance(item, tuple) else self._fn(item)


class _FirstOnly:
    """``fn`` applied to the first argument; the others passed through (a class, not a closure,
    so that it has a readable repr)."""

    def __init__(self, fn: Callable[[Any], Any]):
        self._fn = fn

    def __call__(self, first: Any, *rest: Any) -> Any:
        return (self._fn(first),) + rest if rest else self._fn(first)

    def __repr__(self) -> str:
        return f"transform_first({self._fn!r})"


class _SampledDataset(Dataset):
    def __init__(self, dataset: Any, sampler: Any):
        self._dataset = dataset
        self._indices = list(sampler)

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, idx: int) -> Any:
        return self._dataset[self._indices[idx]]


class ArrayDataset(Dataset):
    """Several dataset-like objects of one length side by side: sample ``i`` is
    ``(a[i], b[i], ...)``, or ``a[i]`` for a single one. A 1-D NDArray is kept as a numpy array,
    so that its samples are numbers.

    >>> import numpy as np
    >>> ds = ArrayDataset(np.arange(6).reshape(3, 2), [7, 8, 9])
    >>> ds[1]
    (array([2, 3]), 8)
    """

    def __init__(self, *args: Any):
        if not args:
            raise ParamError("ArrayDataset: needs at least one array")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ParamError(f"ArrayDataset: all arrays must have the same length; argument 0 has "
                                 f"{self._length} samples, argument {i} has {len(data)}")
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx: int) -> Any:
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self) -> int:
        return self._length


class RecordFileDataset(Dataset):
    """The records of a RecordIO file (``filename``, with its index ``<name>.idx`` beside it) as
    raw bytes, in index order. Each thread and each process (a DataLoader worker) reads through
    a file handle of its own, so parallel reads never share a file position.

    >>> import os, tempfile
    >>> from symjit import recordio
    >>> d = tempfile.mkdtemp()
    >>> w = recordio.MXIndexedRecordIO(os.path.join(d, 'a.idx'), os.path.join(d, 'a.rec'), 'w')
    >>> for i in range(3):
    ...     w.write_idx(i, b'record %d' % i)
    >>> w.close()
    >>> RecordFileDataset(os.path.join(d, 'a.rec'))[2]
    b'record 2'
    """

    def __init__(self, filename: str | os.PathLike):
        from ... import recordio
        self.filename = os.fspath(filename)
        self.idx_file = os.path.splitext(self.filename)[0] + ".idx"
        if not os.path.isfile(self.idx_file):
            raise MXNetError(f"RecordFileDataset: the index file {self.idx_file!r} of {self.filename!r} "
                             "does not exist (write the record file with MXIndexedRecordIO, or make the "
                             "index with tools/im2rec.py)")
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")
        self._local = threading.local()

    def _reader(self) -> Any:
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            from ... import recordio
            local.reader, local.pid = recordio.MXRecordIO(self.filename, "r"), os.getpid()
        return local.reader

    def __getitem__(self, idx: int) -> bytes:
        keys = self._record.keys
        if not -len(keys) <= idx < len(keys):
            raise IndexError(f"RecordFileDataset: index {idx} out of range for {len(keys)} records")
        reader = self._reader()
        reader._file.seek(self._record.idx[keys[idx]])
        return reader.read()

    def __len__(self) -> int:
        return len(self._record.keys)
