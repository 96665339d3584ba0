"""``mx.contrib.io``: MXNet's ``DataLoaderIter``, a ``DataIter`` over a Gluon ``DataLoader``.

Each batch of ``(data, label)`` the loader yields becomes a ``DataBatch`` cast to ``dtype``; a
shorter last batch is padded up to the first batch's size with zeros (``pad`` says how many), so a
``Module`` bound for the first batch's shapes takes every batch.

>>> import numpy as np, symjit as mx
>>> ds = mx.gluon.data.ArrayDataset(np.arange(10.0).reshape(5, 2), np.arange(5.0))
>>> it = mx.contrib.io.DataLoaderIter(mx.gluon.data.DataLoader(ds, batch_size=2))
>>> [(b.data[0].shape, b.pad) for b in it]
[((2, 2), 0), ((2, 2), 0), ((2, 2), 1)]
>>> it.provide_data[0].name, it.provide_label[0].shape
('data', (2,))
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from ..io import DataDesc, DataIter
from ..ndarray import NDArray, zeros

__all__ = ["DataLoaderIter"]


def _pair(batch: Any) -> tuple[NDArray, NDArray]:
    if not (isinstance(batch, (list, tuple)) and len(batch) == 2
            and all(isinstance(a, NDArray) for a in batch)):
        raise MXNetError("mx.contrib.io.DataLoaderIter: the loader must yield (data, label) pairs of "
                         f"NDArrays, got {type(batch).__name__}")
    return batch[0], batch[1]


class DataLoaderIter(DataIter):
    """A ``DataIter`` over a Gluon ``DataLoader`` yielding ``(data, label)`` batches (see the
    module docstring): the first batch fixes ``batch_size``, ``provide_data`` and
    ``provide_label``."""

    def __init__(self, loader: Any, data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32") -> None:
        first = next(iter(loader), None)
        if first is None:
            raise MXNetError("mx.contrib.io.DataLoaderIter: the loader yields no batch")
        data, label = _pair(first)
        super().__init__(data.shape[0])
        self._loader, self.dtype = loader, np.dtype(dtype)
        self.provide_data = [DataDesc(data_name, data.shape, self.dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, self.dtype)]
        self._current: tuple[NDArray, NDArray] | None = None
        self.reset()

    def reset(self) -> None:
        """Start a new pass over the loader."""
        self._iter = iter(self._loader)

    def iter_next(self) -> bool:
        """Take the loader's next batch; False at the end of its pass."""
        batch = next(self._iter, None)
        self._current = None if batch is None else _pair(batch)
        return self._current is not None

    def _padded(self, arr: NDArray) -> NDArray:
        arr = arr.astype(self.dtype)
        if arr.shape[0] == self.batch_size:
            return arr
        out = zeros((self.batch_size, *arr.shape[1:]), ctx=arr.context, dtype=self.dtype)
        out[:arr.shape[0]] = arr
        return out

    def getdata(self) -> list[NDArray]:
        """The current batch's data, padded to ``batch_size``."""
        return [self._padded(self._current[0])]

    def getlabel(self) -> list[NDArray]:
        """The current batch's label, padded to ``batch_size``."""
        return [self._padded(self._current[1])]

    def getpad(self) -> int:
        """How many samples of padding end the current batch."""
        return self.batch_size - self._current[0].shape[0]
