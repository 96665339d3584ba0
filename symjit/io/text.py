"""Iterators over text files: ``CSVIter`` and ``LibSVMIter`` (dense output).

Both read the whole file at construction (parsed with numpy; nothing is evaluated) and batch it
as :class:`NDArrayIter` does. An incomplete last batch is returned full size, with the filler count
in ``batch.pad``, whatever ``round_batch`` says (as MXNet does); the filler rows are the first
rows of the file (MXNet's ``round_batch=False`` leaves the rows of an earlier batch there, and
only ``pad`` tells which rows are real). As MXNet's iterators written in C++, ``getdata()`` and
``getlabel()`` return one NDArray, and the batches hold lists of one.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), 'd.csv')
>>> with open(path, 'w') as f:
...     _ = f.write('1,2,3,4\\n5,6,7,8\\n9,10,11,12\\n')
>>> it = CSVIter(data_csv=path, data_shape=(2, 2), batch_size=2)
>>> [b.data[0].shape for b in it], it.getpad()
([(2, 2, 2), (2, 2, 2)], 1)
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..base import FormatError, MXNetError, ParamError, np_dtype, shape_str
from ..context import cpu
from ..ndarray import NDArray
from ..ndarray.ndarray import wrap
from .iterators import DataBatch, DataDesc, DataIter, NDArrayIter, _check_batch_size

__all__ = ["CSVIter", "LibSVMIter"]

_NULL = ("", "NULL", None)


def _shape(value: Any, where: str, arg: str) -> tuple[int, ...]:
    shape = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not shape or any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1 for d in shape):
        raise ParamError(f"{where}: {arg} must be a tuple of positive ints, got {value!r}")
    return tuple(int(d) for d in shape)


def _read_text(path: Any, where: str, arg: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise MXNetError(f"{where}: cannot read {arg} {os.fspath(path)!r}: {exc}") from exc


def read_csv(path: Any, shape: tuple[int, ...], dtype: np.dtype, where: str, arg: str) -> np.ndarray:
    """The rows of a CSV file as an array of shape ``(rows,) + shape``."""
    width = int(np.prod(shape))
    rows = []
    for n, line in enumerate(_read_text(path, where, arg), 1):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) != width:
            raise FormatError(f"{where}: {arg} {os.fspath(path)!r} line {n} has {len(fields)} values, but "
                              f"shape {shape_str(shape)} needs {width}")
        try:
            rows.append([float(v) for v in fields])
        except ValueError:
            raise FormatError(f"{where}: {arg} {os.fspath(path)!r} line {n} holds a value that is not a "
                              f"number: {line[:80]!r}") from None
    if not rows:
        raise FormatError(f"{where}: {arg} {os.fspath(path)!r} holds no rows")
    return np.asarray(rows, dtype=np.float64).astype(dtype).reshape((len(rows),) + shape)


def read_libsvm(path: Any, width: int, where: str, arg: str) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, dense features)`` of a LibSVM file: ``<label>[,<label>...] <i>:<v> ...`` per
    line, feature indices zero-based and below ``width``."""
    labels, rows = [], []
    for n, line in enumerate(_read_text(path, where, arg), 1):
        parts = line.split("#", 1)[0].split()
        if not parts:
            continue
        try:
            labels.append([float(v) for v in parts[0].split(",")])
            pairs = [(int(i), float(v)) for i, v in (item.split(":") for item in parts[1:])]
        except ValueError:
            raise FormatError(f"{where}: {arg} {os.fspath(path)!r} line {n} is not LibSVM "
                              f"('<label> <index>:<value> ...'): {line[:80]!r}") from None
        row = np.zeros(width, dtype=np.float32)
        for i, value in pairs:
            if not 0 <= i < width:
                raise FormatError(f"{where}: {arg} {os.fspath(path)!r} line {n}: feature index {i} is "
                                  f"outside data_shape ({width},)")
            row[i] = value
        rows.append(row)
    if not rows:
        raise FormatError(f"{where}: {arg} {os.fspath(path)!r} holds no rows")
    if len({len(lab) for lab in labels}) != 1:
        raise FormatError(f"{where}: {arg} {os.fspath(path)!r}: lines have different numbers of labels")
    return np.asarray(labels, dtype=np.float32), np.stack(rows)


class _TextIter(DataIter):
    """Batches of in-memory arrays read from text files (the shared part of CSVIter/LibSVMIter)."""

    def __init__(self, where: str, data: np.ndarray, label: np.ndarray, batch_size: int,
                 num_parts: int | None = 1, part_index: int | None = 0):
        super().__init__(_check_batch_size(batch_size, where))
        if data.shape[0] != label.shape[0]:
            raise FormatError(f"{where}: the data has {data.shape[0]} rows but the labels {label.shape[0]}")
        self._inner = NDArrayIter({"data": wrap(data, cpu())}, {"softmax_label": wrap(label, cpu())},
                                  batch_size, last_batch_handle="pad", num_parts=num_parts,
                                  part_index=part_index)

    @property
    def provide_data(self) -> list[DataDesc]:
        """``[DataDesc('data', (batch,) + data_shape)]``."""
        return self._inner.provide_data

    @property
    def provide_label(self) -> list[DataDesc]:
        """``[DataDesc('softmax_label', (batch,) + label_shape)]``."""
        return self._inner.provide_label

    def reset(self) -> None:
        """Back to the first row."""
        self._inner.reset()

    def iter_next(self) -> bool:
        """Move to the next batch."""
        return self._inner.iter_next()

    def next(self) -> DataBatch:
        """The next batch (data and label as lists of one NDArray); StopIteration at the end."""
        if self.iter_next():
            return DataBatch(data=self._inner.getdata(), label=self._inner.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def getdata(self) -> NDArray:
        """The current batch's data (one NDArray, as MXNet's C++ iterators return it)."""
        return self._inner.getdata()[0]

    def getlabel(self) -> NDArray:
        """The current batch's labels (one NDArray)."""
        return self._inner.getlabel()[0]

    def getpad(self) -> int:
        """Filler rows at the end of the current batch (the last one of the file)."""
        return self._inner.getpad()

    def getindex(self) -> np.ndarray | None:
        """The rows of the current batch."""
        return self._inner.getindex()


class CSVIter(_TextIter):
    """Batches from CSV files: each row of ``data_csv`` is one sample of ``data_shape``; each row
    of ``label_csv`` one label of ``label_shape`` (all labels are 0 without ``label_csv``).

    ``dtype`` (``'float32'``, ``'int32'``, ``'int64'``, ...) applies to data and labels.
    ``prefetch_buffer`` and ``ctx`` are accepted and ignored (the file is read at construction).
    """

    def __init__(self, data_csv: Any, data_shape: Any, label_csv: Any = "NULL", label_shape: Any = (1,),
                 batch_size: int = 1, round_batch: bool = True, prefetch_buffer: int = 4, ctx: Any = None,
                 dtype: Any = "float32", **kwargs: Any):
        where = "CSVIter"
        if kwargs:
            raise ParamError(f"{where}: unknown arguments {sorted(kwargs)}")
        dt = np_dtype(dtype)
        data = read_csv(data_csv, _shape(data_shape, where, "data_shape"), dt, where, "data_csv")
        lshape = _shape(label_shape, where, "label_shape")
        label = (np.zeros((data.shape[0],) + lshape, dtype=dt) if label_csv in _NULL
                 else read_csv(label_csv, lshape, dt, where, "label_csv"))
        if lshape == (1,):
            label = label.reshape(-1)
        super().__init__(where, data, label, batch_size)


class LibSVMIter(_TextIter):
    """Batches from LibSVM files (``<label> <index>:<value> ...`` per line, zero-based indices),
    as dense float32 arrays of shape ``(batch,) + data_shape`` (MXNet gives CSR; symjit has dense
    storage only). ``label_libsvm`` gives labels of ``label_shape`` in the same format
    (``<ignored> <index>:<value> ...``); else each line's leading label is used.
    ``num_parts``/``part_index`` read one part of the rows (default: the worker's part under an
    MPI launcher, else everything).
    """

    def __init__(self, data_libsvm: Any, data_shape: Any, label_libsvm: Any = "NULL", label_shape: Any = (1,),
                 batch_size: int = 1, round_batch: bool = True, num_parts: int | None = None,
                 part_index: int | None = None, prefetch_buffer: int = 4, **kwargs: Any):
        where = "LibSVMIter"
        if kwargs:
            raise ParamError(f"{where}: unknown arguments {sorted(kwargs)}")
        shape = _shape(data_shape, where, "data_shape")
        if len(shape) != 1:
            raise ParamError(f"{where}: data_shape must have one dimension (the feature count), got {shape}")
        first, data = read_libsvm(data_libsvm, shape[0], where, "data_libsvm")
        lshape = _shape(label_shape, where, "label_shape")
        if label_libsvm in _NULL:
            if first.shape[1] != int(np.prod(lshape)):
                raise FormatError(f"{where}: lines carry {first.shape[1]} labels but label_shape is {lshape}")
            label = first.reshape((-1,) + lshape)
        else:
            if len(lshape) != 1:
                raise ParamError(f"{where}: label_shape must have one dimension with label_libsvm, "
                                 f"got {lshape}")
            label = read_libsvm(label_libsvm, lshape[0], where, "label_libsvm")[1]
        if lshape == (1,):
            label = label.reshape(-1)
        super().__init__(where, data, label, batch_size, num_parts, part_index)
