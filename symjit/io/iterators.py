"""``mx.io`` data iterators: ``DataDesc``, ``DataBatch``, ``DataIter``, ``NDArrayIter``,
``MNISTIter``, ``ResizeIter`` and ``PrefetchingIter``, with MXNet 1.x's names and semantics.

Every batch is a fresh copy: writing into ``batch.data[0]`` never changes the iterator's source
(MXNet hands out views of the source, or reuses one buffer between batches).

>>> import numpy as np
>>> import symjit as mx
>>> it = mx.io.NDArrayIter(np.arange(10).reshape(5, 2), np.arange(5), batch_size=2)
>>> it.provide_data      # numpy sources become float32, as mx.nd.array makes them
[DataDesc[data,(2, 2),float32,NCHW]]
>>> [(b.data[0].shape, b.label[0].asnumpy().tolist(), b.pad) for b in it]
[((2, 2), [0.0, 1.0], 0), ((2, 2), [2.0, 3.0], 0), ((2, 2), [4.0, 0.0], 1)]
"""
from __future__ import annotations

import logging
import os
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..base import DTypeError, FormatError, MXNetError, ParamError, ShapeError, np_dtype, shape_str
from ..context import cpu
from ..dist import world as dist_world
from ..ndarray.creation import host_copy
from ..ndarray.ndarray import NDArray, wrap
from .mnist import DatasetNotFound, _read_file, read_idx

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "MNISTIter", "ResizeIter",
           "PrefetchingIter"]

_LAST_BATCH = ("pad", "discard", "roll_over")


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """The name, shape, dtype and layout of one input (a ``(name, shape)`` tuple with extras).

    >>> d = DataDesc('data', (32, 1, 28, 28))
    >>> d.name, d.shape, d.dtype, d.layout
    ('data', (32, 1, 28, 28), <class 'numpy.float32'>, 'NCHW')
    >>> name, shape = d
    >>> DataDesc.get_batch_axis('TNC')
    1
    """

    def __new__(cls, name: str, shape: Any, dtype: Any = np.float32, layout: str = "NCHW") -> DataDesc:
        ret = super().__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self) -> str:
        dtype = getattr(self.dtype, "__name__", self.dtype)
        return f"DataDesc[{self.name},{self.shape},{dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout: str | None) -> int:
        """The axis of ``N`` in ``layout`` (0 when the layout is None, -1 when it has no ``N``).

        >>> DataDesc.get_batch_axis('NCHW'), DataDesc.get_batch_axis(None)
        (0, 0)
        """
        return 0 if layout is None else layout.find("N")

    @staticmethod
    def get_list(shapes: Sequence[tuple[str, Any]], types: Sequence[tuple[str, Any]] | None = None
                 ) -> list[DataDesc]:
        """DataDescs from ``[(name, shape)]`` and optional ``[(name, dtype)]`` lists.

        >>> DataDesc.get_list([('data', (2, 3))], [('data', np.float64)])
        [DataDesc[data,(2, 3),float64,NCHW]]
        """
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtypes = dict(types)
        return [DataDesc(name, shape, dtypes[name]) for name, shape in shapes]


class DataBatch:
    """One mini-batch: lists of NDArrays for data and label, plus ``pad`` (how many trailing
    samples are padding), ``index`` (the samples' indices) and optional bucket/shape info.

    >>> import symjit as mx
    >>> b = DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))], pad=0)
    >>> print(b)
    DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]
    """

    def __init__(self, data: Sequence[NDArray], label: Sequence[NDArray] | None = None,
                 pad: int | None = None, index: Any = None, bucket_key: Any = None,
                 provide_data: list[DataDesc] | None = None,
                 provide_label: list[DataDesc] | None = None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise DTypeError(f"DataBatch: data must be a list of NDArrays, got {type(data).__name__}")
        if label is not None and not isinstance(label, (list, tuple)):
            raise DTypeError(f"DataBatch: label must be a list of NDArrays, got {type(label).__name__}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self) -> str:
        data = [d.shape for d in self.data] if self.data is not None else None
        label = [lb.shape for lb in self.label] if self.label is not None else None
        return f"{type(self).__name__}: data shapes: {data} label shapes: {label}"


class DataIter:
    """Base class of the iterators: ``for batch in it`` calls :meth:`next` until StopIteration;
    subclasses implement ``iter_next`` and the ``get*`` methods (or ``next`` directly).

    >>> DataIter(4).batch_size
    4
    """

    def __init__(self, batch_size: int = 0):
        self.batch_size = batch_size

    def __iter__(self) -> Iterator[DataBatch]:
        return self

    def reset(self) -> None:
        """Go back to the start of the data."""

    def next(self) -> DataBatch:
        """The next batch; raises StopIteration at the end of the epoch."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self) -> DataBatch:
        return self.next()

    def iter_next(self) -> bool:
        """Move to the next batch; False when there is none."""
        return False

    def getdata(self) -> list[NDArray] | None:
        """The data of the current batch."""
        return None

    def getlabel(self) -> list[NDArray] | None:
        """The label of the current batch."""
        return None

    def getindex(self) -> np.ndarray | None:
        """The indices of the current batch's samples (None when unknown)."""
        return None

    def getpad(self) -> int:
        """How many samples at the end of the current batch are padding."""
        return 0


# -- NDArrayIter ------------------------------------------------------------------------------

def _check_batch_size(batch_size: Any, where: str) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
        raise ParamError(f"{where}: batch_size must be a positive int, got {batch_size!r}")
    return int(batch_size)


def _as_host(value: Any, name: str) -> np.ndarray:
    """One data source as a C-contiguous numpy copy: an NDArray keeps its dtype, anything else
    (numpy arrays included) becomes float32, as MXNet's NDArrayIter converts it with ``mx.nd.array``."""
    arr = host_copy(value, None, f"NDArrayIter: input '{name}'")
    if arr.ndim == 0:
        raise ShapeError(f"NDArrayIter: input '{name}' must have at least one dimension (the samples), "
                         "got a scalar")
    return arr


def _named_sources(data: Any, default_name: str, what: str) -> list[tuple[str, np.ndarray]]:
    """``data`` (array, list of arrays or dict name -> array) as ``[(name, array)]``: one array is
    named ``default_name``, a list's entries ``_0_<default_name>``, ``_1_...``; dicts by sorted name."""
    if data is None:
        return []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, (list, tuple)):
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict((f"_{i}_{default_name}", d) for i, d in enumerate(data))
    if not isinstance(data, Mapping):
        raise DTypeError(f"NDArrayIter: {what} must be an NDArray, a numpy array, a list of them or a "
                         f"dict of them, got {type(data).__name__}")
    for key in data:
        if not isinstance(key, str):
            raise DTypeError(f"NDArrayIter: {what} dict keys must be names (str), got {key!r}")
    return [(k, _as_host(v, k)) for k, v in sorted(data.items())]


class NDArrayIter(DataIter):
    """Batches from in-memory arrays (numpy arrays, NDArrays, lists or dicts of them).

    ``last_batch_handle`` says what happens when the sample count is not a multiple of
    ``batch_size``: ``'pad'`` fills the last batch from the start of the data and sets
    ``batch.pad`` to the number of filler samples; ``'discard'`` drops the incomplete batch;
    ``'roll_over'`` drops it this epoch and puts those samples at the front of the first batch of
    the next epoch (after :meth:`reset`; that batch reports ``pad`` = the number of rolled-over
    samples, as MXNet 1.x does). ``shuffle=True`` draws a new order at construction and at every
    reset from ``mx.random``'s generator (reproducible under ``mx.random.seed``). Batches keep the
    sources' dtype (lists of numbers become float32). The first data input's first dimension is the
    number of samples; another input may have more (its first ones are read, as in MXNet), not fewer.

    ``num_parts``/``part_index`` (a symjit addition for distributed training) make the iterator
    read only part ``part_index`` of ``num_parts`` equal contiguous parts of the samples (each of
    ``num_samples // num_parts`` samples, so every worker runs the same number of batches; the at
    most ``num_parts - 1`` samples left over are not used). They default to the worker's rank and
    the number of workers when the program runs under an MPI launcher (``symjit launch``), so each
    worker of a ``dist_sync`` job reads its own part; pass ``num_parts=1`` to read everything.

    >>> import numpy as np
    >>> it = NDArrayIter(np.arange(10, dtype='float32'), batch_size=4, last_batch_handle='roll_over')
    >>> [b.data[0].asnumpy().tolist() for b in it]
    [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    >>> it.reset()
    >>> it.next().data[0].asnumpy().tolist()
    [8.0, 9.0, 0.0, 1.0]
    """

    def __init__(self, data: Any, label: Any = None, batch_size: int = 1, shuffle: bool = False,
                 last_batch_handle: str = "pad", data_name: str = "data",
                 label_name: str = "softmax_label", num_parts: int | None = None,
                 part_index: int | None = None):
        super().__init__(_check_batch_size(batch_size, "NDArrayIter"))
        if last_batch_handle not in _LAST_BATCH:
            raise ParamError(f"NDArrayIter: last_batch_handle must be one of {_LAST_BATCH}, "
                             f"got {last_batch_handle!r}")
        self.data = _named_sources(data, data_name, "data")
        if not self.data:
            raise ParamError("NDArrayIter: data must hold at least one array, got none")
        self.label = _named_sources(label, label_name, "label")
        self._check_lengths()
        self.num_parts, self.part_index = _check_part(num_parts, part_index, "NDArrayIter")
        if self.num_parts > 1:
            self._keep_part()
        self.num_data = self.data[0][1].shape[0]
        self.shuffle = bool(shuffle)
        self.last_batch_handle = last_batch_handle
        self.idx = np.arange(self.num_data)
        self._pos = 0
        self._carry_in: np.ndarray | None = None
        self._carry_out: np.ndarray | None = None
        self._ids: np.ndarray | None = None
        self._pad = 0
        self.reset()

    def _keep_part(self) -> None:
        step = self.data[0][1].shape[0] // self.num_parts
        if step == 0:
            raise ShapeError(f"NDArrayIter: {self.data[0][1].shape[0]} samples cannot be split into "
                             f"num_parts={self.num_parts} parts")
        start = step * self.part_index
        self.data = [(name, arr[start:start + step]) for name, arr in self.data]
        self.label = [(name, arr[start:start + step]) for name, arr in self.label]

    def _check_lengths(self) -> None:
        names = set()
        first_name, first = self.data[0]
        for name, arr in self.data + self.label:
            if name in names:
                raise ParamError(f"NDArrayIter: the name '{name}' is used by both a data and a label input")
            names.add(name)
            if arr.shape[0] < first.shape[0]:   # more are allowed: MXNet reads the first ones
                raise ShapeError(f"NDArrayIter: every input needs at least the first data input's "
                                 f"number of samples (first dimension; the same number of samples, "
                                 f"or more, of which the first are read): '{first_name}' has shape "
                                 f"{shape_str(first.shape)}, '{name}' has shape {shape_str(arr.shape)}")

    def _descs(self, sources: list[tuple[str, np.ndarray]]) -> list[DataDesc]:
        return [DataDesc(name, (self.batch_size,) + arr.shape[1:], arr.dtype.type)
                for name, arr in sources]

    @property
    def provide_data(self) -> list[DataDesc]:
        """Name, batch shape and dtype of each data input."""
        return self._descs(self.data)

    @property
    def provide_label(self) -> list[DataDesc]:
        """Name, batch shape and dtype of each label input (empty without labels)."""
        return self._descs(self.label)

    def hard_reset(self) -> None:
        """Go back to the start, dropping samples that ``'roll_over'`` would carry over."""
        self._carry_out = None
        self.reset()

    def reset(self) -> None:
        """Start a new epoch (reshuffled when ``shuffle``; rolled-over samples go first)."""
        if self.shuffle:
            from .. import random as _random  # not at top level: symjit imports io before random
            self.idx = _random._rng.permutation(self.num_data)
        carry = self._carry_out if self.last_batch_handle == "roll_over" else None
        self._carry_in = carry if carry is not None and carry.size else None
        self._carry_out = None
        self._pos = 0
        self._ids = None
        self._pad = 0

    def _wrapped(self, start: int, count: int) -> np.ndarray:
        return self.idx[(start + np.arange(count)) % self.num_data]

    def iter_next(self) -> bool:
        """Move to the next full (or padded) batch; False at the end of the epoch."""
        n, bs = self.num_data, self.batch_size
        if self._carry_in is not None:
            carry, self._carry_in = self._carry_in, None
            need = bs - carry.size
            self._ids, self._pad = np.concatenate([carry, self._wrapped(0, need)]), carry.size
            self._pos = need
            return True
        if self._pos >= n or n == 0:
            self._ids = None
            return False
        remain = n - self._pos
        if remain >= bs:
            self._ids, self._pad = self.idx[self._pos:self._pos + bs], 0
        elif self.last_batch_handle == "pad":
            self._ids, self._pad = self._wrapped(self._pos, bs), bs - remain
        else:
            self._carry_out = self.idx[self._pos:].copy()
            self._pos, self._ids = n, None
            return False
        self._pos += bs
        return True

    def _take(self, sources: list[tuple[str, np.ndarray]]) -> list[NDArray]:
        if self._ids is None:
            raise MXNetError("NDArrayIter: no current batch; call iter_next() (or next()) first")
        return [wrap(np.ascontiguousarray(arr[self._ids]), cpu()) for _, arr in sources]

    def getdata(self) -> list[NDArray]:
        """The current batch's data arrays, in ``provide_data`` order."""
        return self._take(self.data)

    def getlabel(self) -> list[NDArray]:
        """The current batch's label arrays, in ``provide_label`` order."""
        return self._take(self.label)

    def getindex(self) -> np.ndarray | None:
        """The positions in the source arrays of the current batch's samples."""
        return None if self._ids is None else self._ids.copy()

    def getpad(self) -> int:
        """How many samples of the current batch are filler (``'pad'``) or rolled over."""
        return self._pad


# -- MNISTIter --------------------------------------------------------------------------------

_MNIST_IGNORED = {"prefetch_buffer", "ctx", "input_shape", "data_shape", "round_batch"}


def _mnist_file(path: Any, arg: str) -> Path:
    """The file at ``path``, or its gzip-compressed / uncompressed sibling."""
    p = Path(os.fspath(path)).expanduser()
    if p.is_file():
        return p
    sibling = p.with_name(p.name[:-3]) if p.name.endswith(".gz") else p.with_name(p.name + ".gz")
    if sibling.is_file():
        return sibling
    raise DatasetNotFound(f"MNISTIter: {arg} file {os.fspath(path)!r} not found (nor {str(sibling)!r})")


def _check_part(num_parts: Any, part_index: Any, where: str) -> tuple[int, int]:
    """``(num_parts, part_index)`` checked; ``None`` means the MPI job's size and this worker's
    rank (``(1, 0)`` outside a job)."""
    rank, size = dist_world()
    num_parts = size if num_parts is None else num_parts
    part_index = (rank if num_parts == size else 0) if part_index is None else part_index
    for arg, v in (("num_parts", num_parts), ("part_index", part_index)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ParamError(f"{where}: {arg} must be an int, got {v!r}")
    if num_parts < 1 or not 0 <= part_index < num_parts:
        raise ParamError(f"{where}: need num_parts >= 1 and 0 <= part_index < num_parts, got "
                         f"num_parts={num_parts}, part_index={part_index}")
    return int(num_parts), int(part_index)


class MNISTIter(DataIter):
    """Batches of MNIST from its IDX files (``image``/``label`` paths, plain or ``.gz``).

    Data are float32 in [0, 1] of shape ``(batch_size, 1, 28, 28)``, or ``(batch_size, 784)``
    with ``flat=True``; labels float32 of shape ``(batch_size,)``. As in MXNet, ``shuffle``
    permutes the samples once (from ``seed``, not ``mx.random``), every epoch then visits them in
    that order, and an incomplete last batch is dropped. ``num_parts``/``part_index`` select one
    of ``num_parts`` equal contiguous slices (the last one also takes the remainder); they default
    to the number of workers and this worker's rank under an MPI launcher (``symjit launch``).
    ``prefetch_buffer``, ``ctx`` and ``input_shape`` are accepted and ignored.

    >>> it = MNISTIter('../shared/data/mnist/t10k-images-idx3-ubyte.gz',
    ...                '../shared/data/mnist/t10k-labels-idx1-ubyte.gz',
    ...                batch_size=100, flat=True, silent=True)
    >>> it.provide_data
    [DataDesc[data,(100, 784),float32,NCHW]]
    """

    def __init__(self, image: Any = "./train-images-idx3-ubyte", label: Any = "./train-labels-idx1-ubyte",
                 batch_size: int = 128, shuffle: bool = True, flat: bool = False, silent: bool = False,
                 seed: int = 0, num_parts: int | None = None, part_index: int | None = None,
                 dtype: Any = None,
                 **kwargs: Any):
        super().__init__(_check_batch_size(batch_size, "MNISTIter"))
        unknown = sorted(set(kwargs) - _MNIST_IGNORED)
        if unknown:
            warnings.warn(f"MNISTIter: ignoring unknown arguments {unknown}", stacklevel=2)
        num_parts, part_index = _check_part(num_parts, part_index, "MNISTIter")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ParamError(f"MNISTIter: seed must be an int, got {seed!r}")
        out_dtype = np.dtype(np.float32) if dtype is None else np_dtype(dtype)
        images, labels = self._load(image, label)
        step = images.shape[0] // num_parts
        start = step * part_index
        end = images.shape[0] if part_index == num_parts - 1 else start + step
        self._index = np.arange(start, end)
        if shuffle:
            self._index = np.random.default_rng(int(seed)).permutation(self._index)
        self.flat = bool(flat)
        rows = images[self._index].astype(np.float32) / np.float32(255.0)
        shape = (len(self._index), -1) if self.flat else (len(self._index), 1) + images.shape[1:]
        self._images = rows.reshape(shape).astype(out_dtype, copy=False)
        self._labels = labels[self._index].astype(np.float32)
        self._pos = 0
        self._cur: slice | None = None
        if not silent:
            logging.info("MNISTIter: load %d images, shuffle=%d, shape=%s", len(self._index),
                         int(bool(shuffle)), self.provide_data[0].shape)

    @staticmethod
    def _load(image: Any, label: Any) -> tuple[np.ndarray, np.ndarray]:
        img_path, lbl_path = _mnist_file(image, "image"), _mnist_file(label, "label")
        images = read_idx(_read_file(img_path), str(img_path))
        labels = read_idx(_read_file(lbl_path), str(lbl_path))
        if images.ndim != 3 or images.dtype != np.uint8:
            raise FormatError(f"MNISTIter: image file {img_path} must hold uint8 images of shape "
                              f"(N, rows, cols), got {images.dtype} {shape_str(images.shape)}")
        if labels.ndim != 1:
            raise FormatError(f"MNISTIter: label file {lbl_path} must hold labels of shape (N,), got "
                              f"{labels.dtype} {shape_str(labels.shape)}")
        if labels.shape[0] != images.shape[0]:
            raise FormatError(f"MNISTIter: {labels.shape[0]} labels in {lbl_path} for "
                              f"{images.shape[0]} images in {img_path}")
        return images, labels

    @property
    def provide_data(self) -> list[DataDesc]:
        """``[DataDesc('data', (batch_size, 1, 28, 28) or (batch_size, 784))]``."""
        return [DataDesc("data", (self.batch_size,) + self._images.shape[1:], self._images.dtype.type)]

    @property
    def provide_label(self) -> list[DataDesc]:
        """``[DataDesc('softmax_label', (batch_size,))]``."""
        return [DataDesc("softmax_label", (self.batch_size,), np.float32)]

    def reset(self) -> None:
        """Back to the first batch (same order as before)."""
        self._pos = 0
        self._cur = None

    def iter_next(self) -> bool:
        """Move to the next full batch; False when fewer than ``batch_size`` samples remain."""
        if self._pos + self.batch_size > self._images.shape[0]:
            self._cur = None
            return False
        self._cur = slice(self._pos, self._pos + self.batch_size)
        self._pos += self.batch_size
        return True

    def _current(self) -> slice:
        if self._cur is None:
            raise MXNetError("MNISTIter: no current batch; call iter_next() (or next()) first")
        return self._cur

    def getdata(self) -> list[NDArray]:
        """The current batch's images."""
        return [wrap(self._images[self._current()].copy(), cpu())]

    def getlabel(self) -> list[NDArray]:
        """The current batch's labels."""
        return [wrap(self._labels[self._current()].copy(), cpu())]

    def getindex(self) -> np.ndarray:
        """The current batch's sample positions in the files."""
        return self._index[self._current()].copy()

    def getpad(self) -> int:
        """Always 0: incomplete batches are dropped."""
        return 0


# -- wrappers ---------------------------------------------------------------------------------

class ResizeIter(DataIter):
    """Make an epoch of ``data_iter`` exactly ``size`` batches long, restarting the inner iterator
    whenever it runs out (``reset_internal``: also restart it on :meth:`reset`).

    >>> import numpy as np
    >>> it = ResizeIter(NDArrayIter(np.arange(4.0), batch_size=2), 3)
    >>> [b.data[0].asnumpy().tolist() for b in it]
    [[0.0, 1.0], [2.0, 3.0], [0.0, 1.0]]
    """

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True):
        super().__init__(getattr(data_iter, "batch_size", 0))
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise ParamError(f"ResizeIter: size must be a non-negative int, got {size!r}")
        self.data_iter = data_iter
        self.size = int(size)
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch: DataBatch | None = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label

    def reset(self) -> None:
        """Start a new epoch of ``size`` batches."""
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self) -> bool:
        """Fetch the next inner batch (restarting the inner iterator if needed)."""
        if self.cur >= self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            try:
                self.current_batch = self.data_iter.next()
            except StopIteration:
                raise MXNetError("ResizeIter: the wrapped iterator gives no batch even after a "
                                 "reset") from None
        self.cur += 1
        return True

    def _batch(self) -> DataBatch:
        if self.current_batch is None:
            raise MXNetError("ResizeIter: no current batch; call iter_next() (or next()) first")
        return self.current_batch

    def getdata(self) -> list[NDArray]:
        """The current batch's data."""
        return self._batch().data

    def getlabel(self) -> list[NDArray] | None:
        """The current batch's label."""
        return self._batch().label

    def getindex(self) -> Any:
        """The current batch's index."""
        return self._batch().index

    def getpad(self) -> int:
        """The current batch's pad."""
        return self._batch().pad


def _renamed(descs: list[DataDesc], rename: Mapping[str, str] | None) -> list[DataDesc]:
    if not rename:
        return list(descs)
    return [DataDesc(rename.get(d.name, d.name), d.shape, getattr(d, "dtype", np.float32),
                     getattr(d, "layout", "NCHW")) for d in descs]


class PrefetchingIter(DataIter):
    """Combine one or more iterators into one (their data lists, then their label lists,
    concatenated), optionally renaming inputs (``rename_data``/``rename_label``: one dict per
    iterator). symjit reads the batches synchronously: there is no background thread.

    >>> import numpy as np
    >>> a = NDArrayIter(np.zeros((4, 2)), batch_size=2)
    >>> b = NDArrayIter(np.ones((4, 3)), batch_size=2, data_name='x')
    >>> PrefetchingIter([a, b]).provide_data
    [DataDesc[data,(2, 2),float32,NCHW], DataDesc[x,(2, 3),float32,NCHW]]
    """

    def __init__(self, iters: DataIter | Sequence[DataIter],
                 rename_data: Sequence[Mapping[str, str]] | None = None,
                 rename_label: Sequence[Mapping[str, str]] | None = None):
        iters = [iters] if isinstance(iters, DataIter) else list(iters)
        if not iters:
            raise ParamError("PrefetchingIter: iters must hold at least one iterator")
        for arg, renames in (("rename_data", rename_data), ("rename_label", rename_label)):
            if renames is not None and len(renames) != len(iters):
                raise ParamError(f"PrefetchingIter: {arg} needs one dict per iterator ({len(iters)}), "
                                 f"got {len(renames)}")
        super().__init__(getattr(iters[0], "batch_size", 0))
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.current_batch: DataBatch | None = None

    @property
    def provide_data(self) -> list[DataDesc]:
        """All iterators' data descriptions, renamed."""
        renames = self.rename_data or [None] * len(self.iters)
        return [d for it, r in zip(self.iters, renames) for d in _renamed(it.provide_data, r)]

    @property
    def provide_label(self) -> list[DataDesc]:
        """All iterators' label descriptions, renamed."""
        renames = self.rename_label or [None] * len(self.iters)
        return [d for it, r in zip(self.iters, renames) for d in _renamed(it.provide_label, r)]

    def reset(self) -> None:
        """Reset every wrapped iterator."""
        for it in self.iters:
            it.reset()
        self.current_batch = None

    def iter_next(self) -> bool:
        """Fetch one batch from every iterator; they must end together."""
        batches = []
        for it in self.iters:
            try:
                batches.append(it.next())
            except StopIteration:
                batches.append(None)
        ended = [b is None for b in batches]
        if any(ended) and not all(ended):
            raise MXNetError("PrefetchingIter: the wrapped iterators have different numbers of batches")
        if all(ended):
            self.current_batch = None
            return False
        first = batches[0]
        self.current_batch = DataBatch(
            data=[d for b in batches for d in b.data],
            label=[lb for b in batches for lb in (b.label or [])],
            pad=first.pad, index=first.index,
            provide_data=self.provide_data, provide_label=self.provide_label)
        return True

    def next(self) -> DataBatch:
        """The next combined batch."""
        if not self.iter_next():
            raise StopIteration
        return self.current_batch

    def _batch(self) -> DataBatch:
        if self.current_batch is None:
            raise MXNetError("PrefetchingIter: no current batch; call iter_next() (or next()) first")
        return self.current_batch

    def getdata(self) -> list[NDArray]:
        """The current combined data."""
        return self._batch().data

    def getlabel(self) -> list[NDArray]:
        """The current combined labels."""
        return self._batch().label

    def getindex(self) -> Any:
        """The first iterator's index for the current batch."""
        return self._batch().index

    def getpad(self) -> int:
        """The first iterator's pad for the current batch."""
        return self._batch().pad
