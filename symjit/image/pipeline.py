"""The engine of the image iterators: sources of encoded images, and batches decoded and
augmented by worker threads while the consumer trains.

A *source* lists samples: ``(label, encoded bytes)`` by position. A :class:`BatchPipeline`
draws the epoch's order and one seed per sample in its producer thread, reads the bytes
sequentially, hands decoding and augmentation to ``threads`` workers (OpenCV releases the GIL),
each of which writes its sample straight into the batch array, and keeps up to ``prefetch``
finished batches in a queue. Seeds make the augmentations reproducible whatever the thread
count. An error in a worker is raised by ``next()`` with the sample it happened on.
"""
from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..base import FormatError, MXNetError, ParamError
from ..context import cpu
from ..ndarray.ndarray import wrap
from ..recordio import MXRecordIO, scan_offsets, unpack
from .ops import sample_rng

__all__ = ["RecordSource", "ListSource", "BatchPipeline", "check_data_shape"]


def check_data_shape(data_shape: Any, where: str) -> tuple[int, int, int]:
    """``(C, H, W)`` with C 1 or 3, the image shape of every image iterator's batches.

    >>> check_data_shape([3, 32, 32], 'ImageIter')
    (3, 32, 32)
    """
    shape = tuple(int(d) for d in data_shape) if isinstance(data_shape, (tuple, list)) else ()
    if len(shape) != 3 or shape[0] not in (1, 3) or min(shape) < 1:
        raise ParamError(f"{where}: data_shape must be (C, H, W) with C 1 or 3, got {data_shape!r}")
    return shape


def _labels(label: Any, width: int, where: str, what: str) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(label, dtype=np.float32)).reshape(-1)
    if arr.size < width:
        raise FormatError(f"{where}: {what} has {arr.size} labels but label_width is {width}")
    return arr[:width]


class RecordSource:
    """The records of a ``.rec`` file (offsets from ``.idx`` when given, else from a header scan)."""

    def __init__(self, path_imgrec: str, path_imgidx: str | None, label_width: int, where: str):
        self.path, self.width, self.where = os.fspath(path_imgrec), label_width, where
        if path_imgidx:
            from ..recordio import MXIndexedRecordIO
            idx = MXIndexedRecordIO(path_imgidx, self.path, "r")
            self.offsets = [idx.idx[k] for k in idx.keys]
            idx.close()
        else:
            self.offsets = scan_offsets(self.path)
        self._reader: MXRecordIO | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    def read_record(self, i: int) -> tuple[Any, bytes]:
        """``(IRHeader, encoded image)`` of record ``i`` (called from one thread)."""
        if self._reader is None:
            self._reader = MXRecordIO(self.path, "r")
        self._reader._file.seek(self.offsets[i])
        return unpack(self._reader.read())

    def read(self, i: int) -> tuple[np.ndarray, bytes]:
        """``(labels, encoded image)`` of sample ``i`` (called from one thread)."""
        header, payload = self.read_record(i)
        return _labels(header.label, self.width, self.where, f"record {i} of {self.path!r}"), payload


class ListSource:
    """Images named by a list: ``imglist`` entries ``[label(s)..., path]`` or an ``.lst`` file of
    ``index<TAB>label(s)<TAB>path`` lines; paths relative to ``root``."""

    def __init__(self, entries: list, root: str, label_width: int, where: str):
        self.items = [(_labels(e[:-1], label_width, where, f"image list entry {n}"),
                       os.path.join(root, e[-1])) for n, e in enumerate(entries)]
        self.where = where

    @classmethod
    def from_file(cls, path: str, root: str, label_width: int, where: str) -> ListSource:
        entries = []
        try:
            lines = open(path).read().splitlines()
        except OSError as exc:
            raise MXNetError(f"{where}: cannot read the image list {path!r}: {exc}") from exc
        for n, line in enumerate(lines, 1):
            fields = line.strip().split("\t")
            if len(fields) < 3:
                if line.strip():
                    raise FormatError(f"{where}: {path!r} line {n} is not 'index<TAB>label<TAB>path'")
                continue
            try:
                entries.append([float(v) for v in fields[1:-1]] + [fields[-1]])
            except ValueError:
                raise FormatError(f"{where}: {path!r} line {n} has a label that is not a number") from None
        return cls(entries, root, label_width, where)

    def __len__(self) -> int:
        return len(self.items)

    def read(self, i: int) -> tuple[np.ndarray, bytes]:
        label, path = self.items[i]
        try:
            with open(path, "rb") as f:
                return label, f.read()
        except OSError as exc:
            raise MXNetError(f"{self.where}: cannot read image {path!r}: {exc}") from exc


class BatchPipeline:
    """Batches of ``(batch, C, H, W)`` data and ``(batch[, label_width])`` labels from a source.

    ``transform(bytes) -> HxWxC array`` decodes and augments one sample (it must give the data
    shape's size); with ``label_transform`` it is ``transform(bytes, label_row)`` and may change
    the sample's label row in place (detection boxes that follow a flip). ``last`` is ``'pad'``
    or ``'discard'``.
    """

    def __init__(self, source: Any, batch_size: int, data_shape: tuple[int, int, int], label_width: int,
                 transform: Callable[[bytes], np.ndarray], dtype: Any, threads: int, prefetch: int,
                 shuffle: bool, seed: int, last: str, part: tuple[int, int], where: str,
                 label_transform: bool = False):
        self.source, self.batch_size, self.data_shape = source, batch_size, tuple(data_shape)
        self.label_transform = label_transform
        self.label_width, self.transform, self.dtype = label_width, transform, np.dtype(dtype)
        self.shuffle, self.last, self.where = shuffle, last, where
        num_parts, part_index = part
        n = len(source)
        step = n // num_parts
        self.ids = np.arange(step * part_index, n if part_index == num_parts - 1 else step * (part_index + 1))
        if self.ids.size == 0 and n:     # an empty list is an empty epoch, as MXNet's
            raise ParamError(f"{where}: part {part_index} of {num_parts} holds no samples ({n} in all)")
        self.rng = np.random.default_rng(seed)
        self.threads = max(1, int(threads))
        self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="symjit-image")
        self.prefetch = max(1, int(prefetch))
        self._queue: queue.Queue | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- producer -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start producing the batches of a new epoch (stopping the previous epoch's producer)."""
        self.stop()
        order = self.rng.permutation(self.ids) if self.shuffle else self.ids
        seeds = self.rng.integers(0, 2 ** 63, size=order.size)
        self._queue, self._stop = queue.Queue(self.prefetch), threading.Event()
        self._thread = threading.Thread(target=self._produce, args=(order, seeds, self._queue, self._stop),
                                        name="symjit-image-producer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread = None

    def _produce(self, order: np.ndarray, seeds: np.ndarray, out: queue.Queue, stop: threading.Event) -> None:
        bs, n = self.batch_size, order.size
        try:
            for start in range(0, n, bs):
                if stop.is_set():
                    return
                take = np.arange(start, start + bs)
                pad = max(0, start + bs - n)
                if pad and self.last == "discard":
                    break
                out.put(self._batch(order[take % n], seeds[take % n], pad))
        except BaseException as exc:  # handed to the consumer, which raises it
            out.put(exc)
            return
        out.put(None)

    def _batch(self, ids: np.ndarray, seeds: np.ndarray, pad: int) -> tuple:
        c, h, w = self.data_shape
        data = np.empty((len(ids), c, h, w), dtype=self.dtype)
        labels = np.empty((len(ids), self.label_width), dtype=np.float32)
        raws = []
        for j, i in enumerate(ids):
            labels[j], raw = self.source.read(int(i))
            raws.append(raw)
        chunks = np.array_split(np.arange(len(ids)), min(self.threads, len(ids)))
        futures = [self.pool.submit(self._some, data, labels, chunk, ids, raws, seeds) for chunk in chunks]
        for f in futures:
            f.result()
        label = labels[:, 0].copy() if self.label_width == 1 else labels
        return data, label, pad, ids

    def _some(self, data: np.ndarray, labels: np.ndarray, chunk: np.ndarray, ids: np.ndarray, raws: list,
              seeds: np.ndarray) -> None:
        for j in chunk:
            self._one(data, labels[int(j)], int(j), int(ids[j]), raws[j], int(seeds[j]))

    def _one(self, data: np.ndarray, label: np.ndarray, j: int, i: int, raw: bytes, seed: int) -> None:
        try:
            with sample_rng(seed):
                img = self.transform(raw, label) if self.label_transform else self.transform(raw)
        except MXNetError as exc:
            raise type(exc)(f"{self.where}: sample {i}: {exc}") from exc
        c, h, w = self.data_shape
        if img.ndim == 2:
            img = img[:, :, None]
        if img.shape != (h, w, c):
            raise MXNetError(f"{self.where}: sample {i}: augmented to {img.shape} (HxWxC), but data_shape "
                             f"{self.data_shape} needs {(h, w, c)}; add a crop or resize")
        data[j] = np.moveaxis(img, 2, 0)

    # -- consumer -----------------------------------------------------------------------------
    def next(self) -> tuple | None:
        """The next ``(data, label, pad, ids)`` (NDArrays for data and label), None at the end."""
        if self._thread is None:
            self.start()
        item = self._queue.get()
        if isinstance(item, BaseException):
            self._thread = None
            raise item
        if item is None:
            self._queue.put(None)       # stays at the end until reset
            return None
        data, label, pad, ids = item
        return wrap(data, cpu()), wrap(label, cpu()), pad, ids

    def close(self) -> None:
        self.stop()
        self.pool.shutdown(wait=False)
