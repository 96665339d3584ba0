"""``DataLoader``: mini-batches from a dataset, made in this process, in threads or in worker
processes.

Each pass over a loader (``for batch in loader``) is an iterator of its own. With
``num_workers > 0`` the pass forks its worker processes when it starts and kills them when it ends,
is abandoned (the iterator collected, e.g. after a ``break``) or fails; they also end with the
loading process however it ends (see :mod:`._workers`). Workers inherit the dataset by the fork and
send batches back as raw array bytes, never pickles. ``thread_pool=True`` uses threads instead
(no fork; the samples' Python code then shares the GIL).

>>> import numpy as np
>>> from symjit.gluon.data import ArrayDataset, DataLoader
>>> ds = ArrayDataset(np.arange(10, dtype='float32').reshape(5, 2), np.arange(5))
>>> [(x.shape, y.asnumpy().tolist()) for x, y in DataLoader(ds, batch_size=2, last_batch='discard')]
[((2, 2), [0, 1]), ((2, 2), [2, 3])]
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ...base import ParamError
from ...context import Context, cpu
from ...ndarray.ndarray import NDArray, wrap
from . import sampler as _sampler

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]


def default_batchify_fn(data: list) -> Any:
    """The default ``batchify_fn``: NDArray samples stacked into one NDArray (on the first
    sample's context), tuple samples batched field by field into a list, anything else (numbers,
    numpy arrays, nested lists) turned into one NDArray of its numpy dtype.

    >>> default_batchify_fn([(1, 2.5), (3, 4.5)])[1].asnumpy().tolist()
    [2.5, 4.5]
    """
    first = data[0]
    if isinstance(first, NDArray):
        return wrap(np.stack([d.asnumpy() for d in data]), first.context)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    try:
        arr = np.asarray(data)
    except ValueError:
        arr = np.empty(0, dtype=object)
    if arr.dtype.hasobject:
        raise ParamError(f"DataLoader: cannot batch samples of type {type(first).__name__} into one array "
                         "(they differ in shape, or are not numeric): give a batchify_fn, e.g. "
                         "gluon.data.batchify.Pad for samples of different lengths")
    return wrap(np.ascontiguousarray(arr), cpu())


default_mp_batchify_fn = default_batchify_fn
"""The batchify function of worker processes: the default one (batches come back to the loading
process as array bytes, so no shared-memory context is needed)."""


def _to_ctx(value: Any, ctx: Context) -> Any:
    if isinstance(value, NDArray):
        return value.as_in_context(ctx)
    if isinstance(value, (list, tuple)):
        return [_to_ctx(v, ctx) for v in value]
    return value


class _Threads:
    def __init__(self, n: int, dataset: Any, batchify_fn: Callable[[list], Any]):
        self._pool = concurrent.futures.ThreadPoolExecutor(n, thread_name_prefix="symjit-dataloader")
        self._dataset, self._batchify_fn = dataset, batchify_fn
        self._futures: dict[int, concurrent.futures.Future] = {}

    def _make(self, indices: list) -> Any:
        return self._batchify_fn([self._dataset[i] for i in indices])

    def submit(self, seq: int, indices: list) -> None:
        self._futures[seq] = self._pool.submit(self._make, indices)

    def result(self, seq: int, timeout: float) -> Any:
        try:
            return self._futures.pop(seq).result(timeout)
        except concurrent.futures.TimeoutError:
            raise multiprocessing.TimeoutError(
                f"DataLoader: no batch from the thread pool within timeout={timeout} seconds (a slow "
                "dataset or transform: raise the DataLoader's timeout)") from None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class _Pass:
    """One pass over a loader with workers: up to ``depth`` batches in flight, returned in order."""

    def __init__(self, loader: DataLoader):
        self._batches = iter(loader._batch_sampler)
        self._timeout = loader._timeout
        self._ctx = loader._out_ctx()
        self._depth = max(1, loader._prefetch)
        self._reload = weakref.ref(loader) if loader.auto_reload else None
        self._len = len(loader._batch_sampler)
        n = loader._num_workers
        if loader._thread_pool:
            self._backend: Any = _Threads(n, loader._dataset, loader._batchify_fn)
        else:
            from ._workers import Pool
            ctx = self._ctx
            self._backend = Pool(n, loader._dataset, loader._batchify_fn, lambda a: wrap(a, ctx))
        self._sent = self._got = 0
        self._closed = False
        try:
            self._fill()
        except BaseException:
            self.close()
            raise

    def _fill(self) -> None:
        while self._sent - self._got < self._depth:
            indices = next(self._batches, None)
            if indices is None:
                return
            self._backend.submit(self._sent, indices)
            self._sent += 1

    def __iter__(self) -> _Pass:
        return self

    def __len__(self) -> int:
        return self._len

    def __next__(self) -> Any:
        if self._closed or self._got == self._sent:
            self.close()
            loader = self._reload() if self._reload is not None else None
            if loader is not None and loader._ready is None:
                loader.refresh()
            raise StopIteration
        try:
            batch = self._backend.result(self._got, self._timeout)
            self._got += 1
            self._fill()
        except BaseException:
            self.close()
            raise
        return _to_ctx(batch, self._ctx) if self._ctx != cpu() else batch

    def close(self) -> None:
        """End the pass now: its workers stop (processes are killed and reaped)."""
        if not self._closed:
            self._closed = True
            self._backend.close()

    def worker_pids(self) -> list[int]:
        """The process ids of this pass's worker processes (none with threads)."""
        return self._backend.pids() if hasattr(self._backend, "pids") else []

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class DataLoader:
    """Mini-batches of ``dataset`` (a :class:`Dataset`, list, numpy array or NDArray).

    The batches' indices come from ``batch_sampler``, or else from ``sampler`` (default: in order,
    or shuffled with ``shuffle``) grouped by ``batch_size`` with ``last_batch`` ('keep', 'discard'
    or 'rollover', see :class:`BatchSampler`). ``batchify_fn`` turns a list of samples into a
    batch (default :func:`default_batchify_fn`). ``num_workers``: 0 makes each batch when it is
    asked for; more makes them ahead (``prefetch`` batches in flight, default
    ``2 * num_workers``) in as many forked processes, or threads with ``thread_pool``; a batch
    not ready within ``timeout`` seconds is an error. ``pin_memory``: batches on
    ``cpu_pinned(pin_device_id)``. ``auto_reload``: each pass's workers start (and prefetch) as
    soon as the previous pass ends, or at once for the first.

    >>> loader = DataLoader(list(range(7)), batch_size=3, num_workers=2)
    >>> [b.asnumpy().tolist() for b in loader]
    [[0, 1, 2], [3, 4, 5], [6]]
    """

    def __init__(self, dataset: Any, batch_size: int | None = None, shuffle: bool = False,
                 sampler: Any = None, last_batch: str | None = None, batch_sampler: Any = None,
                 batchify_fn: Callable[[list], Any] | None = None, num_workers: int = 0,
                 pin_memory: bool = False, pin_device_id: int = 0, prefetch: int | None = None,
                 thread_pool: bool = False, timeout: float = 120, auto_reload: bool = False):
        self._ready: Any = None
        if batch_sampler is None:
            if batch_size is None:
                raise ParamError("DataLoader: batch_size must be given unless batch_sampler is")
            if sampler is None:
                sampler = (_sampler.RandomSampler if shuffle else _sampler.SequentialSampler)(len(dataset))
            elif shuffle:
                raise ParamError("DataLoader: give either shuffle or sampler, not both")
            batch_sampler = _sampler.BatchSampler(sampler, batch_size, last_batch or "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ParamError("DataLoader: batch_size, shuffle, sampler and last_batch must not be given "
                             "with batch_sampler")
        if isinstance(num_workers, bool) or not isinstance(num_workers, (int, np.integer)):
            raise ParamError(f"DataLoader: num_workers must be an int, got {num_workers!r}")
        if not timeout or timeout <= 0:
            raise ParamError(f"DataLoader: timeout must be positive, got {timeout!r}")
        self._dataset = dataset
        self._batch_sampler = batch_sampler
        self._batchify_fn = batchify_fn or default_batchify_fn
        self._num_workers = max(0, int(num_workers))
        self._pin_memory, self._pin_device_id = bool(pin_memory), int(pin_device_id)
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        self._thread_pool = bool(thread_pool)
        self._timeout = timeout
        self.auto_reload = bool(auto_reload)
        if self.auto_reload:
            self.refresh()

    def _out_ctx(self) -> Context:
        return Context("cpu_pinned", self._pin_device_id) if self._pin_memory else cpu()

    def _serial(self) -> Iterator[Any]:
        ctx = self._out_ctx()
        for indices in self._batch_sampler:
            batch = self._batchify_fn([self._dataset[i] for i in indices])
            yield _to_ctx(batch, ctx) if self._pin_memory else batch

    def __iter__(self) -> Iterator[Any]:
        if self._num_workers == 0:
            return self._serial()
        ready, self._ready = self._ready, None
        return ready if ready is not None else _Pass(self)

    def __len__(self) -> int:
        return len(self._batch_sampler)

    def refresh(self) -> None:
        """Start the next pass now (its workers begin making batches); ``iter`` hands it out."""
        self.clean()
        if self._num_workers > 0:
            self._ready = _Pass(self)

    def clean(self) -> None:
        """Drop a pass started by :meth:`refresh` or ``auto_reload`` (its workers stop)."""
        ready, self._ready = self._ready, None
        if ready is not None:
            ready.close()

    def __del__(self) -> None:
        try:
            self.clean()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
