"""``dist_sync`` / ``dist_device_sync``: synchronous data-parallel training over MPI.

MXNet's semantics, built on collectives instead of a parameter server:

- ``init`` is collective: every worker calls it with the same keys, shapes and dtypes, and rank
  0's values are broadcast, so all workers start from the same weights.
- ``push`` is collective: every worker pushes the same keys in the same order (as ``Module`` and
  ``FeedForward`` do). Each worker sums its own devices' values, then the sums of all workers are
  added by allreduce. Many keys travel together: their values are packed into one preallocated
  buffer per dtype, exchanged in allreduces of at most ``Config.dist_bucket_bytes``
  (``SYMJIT_DIST_BUCKET_BYTES``) each, as Horovod's tensor fusion does.
- The updater (``set_optimizer``) then runs on every worker on the same summed gradient and the
  same stored weight, once per key per round, so every worker holds, and pulls, the same updated
  weight: this replaces MXNet's server-side update (it costs each worker the update kernels, which
  are small next to the exchange). Without an updater the sum replaces the stored value.
- ``pull`` copies the local stored value (no message).
- Before each collective the workers check, in one small allgather, that they all make the same
  call and that every local check passed; otherwise every rank raises the same :class:`DistError`
  naming the rank at fault (a key not initialised, a wrong shape, different keys).

``dist_device_sync`` sums and updates on the GPU of the pushed values, as ``'device'`` does, and
exchanges through host memory (no CUDA-aware MPI is assumed).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError, shape_str
from ..config import Config, default_config
from ..kvstore_local import Key, KVStore
from ..ndarray import NDArray
from . import mpi

__all__ = ["DistSyncKVStore"]


def _wire_dtype(dtype: Any) -> np.dtype:
    """The dtype values travel in (MPI has no portable float16 sum: it goes as float32)."""
    dt = np.dtype(dtype)
    return np.dtype(np.float32) if dt == np.float16 else dt


def pack(arr: NDArray, flat: np.ndarray) -> None:
    """Copy ``arr``'s elements into the 1-D buffer slice ``flat``."""
    np.copyto(flat, arr._host().reshape(-1), casting="unsafe")


def unpack(flat: np.ndarray, arr: NDArray, where: str) -> None:
    """Copy the buffer slice ``flat`` into ``arr`` (on its device)."""
    if arr.context.device.host_memory:
        np.copyto(arr._host().reshape(-1), flat, casting="unsafe")
    else:
        arr._write(Ellipsis, flat.reshape(arr.shape).astype(arr.dtype), where)


class Layout:
    """Where each of a fixed list of arrays lives in one flat buffer per wire dtype."""

    def __init__(self, shapes: list[tuple[int, ...]], dtypes: list[Any]):
        self.slots: list[tuple[np.dtype, int, int]] = []   # (wire dtype, offset, size) per array
        sizes: dict[np.dtype, int] = {}
        for shape, dtype in zip(shapes, dtypes):
            wire, n = _wire_dtype(dtype), int(np.prod(shape, dtype=np.int64))
            self.slots.append((wire, sizes.get(wire, 0), n))
            sizes[wire] = sizes.get(wire, 0) + n
        self.buffers = {wire: np.empty(n, dtype=wire) for wire, n in sizes.items()}

    @classmethod
    def cached(cls, cache: dict, sig: Any, arrays: list[NDArray]) -> Layout:
        """The layout of ``arrays`` kept in ``cache`` under ``sig`` (made the first time)."""
        layout = cache.get(sig)
        if layout is None:
            layout = cache[sig] = cls([a.shape for a in arrays], [a.dtype for a in arrays])
        return layout

    def views(self) -> list[np.ndarray]:
        """Each array's slice of its buffer."""
        return [self.buffers[w][o:o + n] for w, o, n in self.slots]

    def chunks(self, limit_bytes: int) -> list[np.ndarray]:
        """The buffers cut into messages of at most ``limit_bytes``."""
        out = []
        for buf in self.buffers.values():
            step = max(1, limit_bytes // buf.itemsize)
            out.extend(buf[i:i + step] for i in range(0, buf.size, step))
        return out


def describe(pairs: list[tuple[Key, NDArray]]) -> str:
    """The call as the workers compare it: keys with shapes and dtypes."""
    return ", ".join(f"{k!r}:{shape_str(a.shape)}:{np.dtype(a.dtype).name}" for k, a in pairs)


class DistSyncKVStore(KVStore):
    """A synchronous distributed store (create with ``mx.kv.create('dist_sync')``).

    With one process (no launcher) it behaves as a ``'local'`` store with ``num_workers == 1``.

    >>> import symjit as mx
    >>> kv = mx.kv.create('dist_sync')     # doctest: +SKIP
    >>> kv.rank, kv.num_workers            # doctest: +SKIP
    (0, 1)
    """

    def __init__(self, kv_type: str = "dist_sync", config: Config | None = None):
        super().__init__(kv_type)
        self._config = config if config is not None else default_config()
        self._comm = mpi.comm()
        self._rank, self._size = self._comm.Get_rank(), self._comm.Get_size()
        self._layouts: dict[tuple, Layout] = {}

    def __repr__(self) -> str:
        return f"<KVStore type={self._type!r} rank={self._rank}/{self._size} keys={len(self._store)}>"

    @property
    def rank(self) -> int:
        """This worker's rank in the MPI job (0 .. num_workers - 1)."""
        return self._rank

    @property
    def num_workers(self) -> int:
        """The number of workers in the MPI job."""
        return self._size

    def _where(self, op: str) -> str:
        return f"KVStore.{op} ({self._type}, rank {self._rank} of {self._size})"

    def _agree(self, where: str, text: str, error: str | None) -> None:
        mpi.agree(self._comm, self._config.dist_timeout, where, text, error)

    def _layout(self, tag: str, keys: list[Key], arrays: list[NDArray]) -> Layout:
        return Layout.cached(self._layouts, (tag, tuple(keys)), arrays)

    def _wait_all(self, requests: list[Any], where: str) -> None:
        for req in requests:
            mpi.wait(req, self._config.dist_timeout, where, self._rank)

    # -- collectives --------------------------------------------------------------------------
    def init(self, key: Any, value: Any) -> None:
        """Collective: every worker initialises the same keys; rank 0's values win."""
        where = self._where("init")
        pairs, error = [], None
        try:
            pairs = self._check_init(key, value, where)
        except MXNetError as exc:
            error = str(exc)
        self._agree(where, "init " + describe([(k, v[0]) for k, v in pairs]), error)
        self._store_init(pairs)
        self._registered([k for k, _ in pairs])
        if self._size > 1 and pairs:
            self._broadcast([k for k, _ in pairs], where)

    def _registered(self, keys: list[Key]) -> None:
        """Called by ``init`` once ``keys`` are stored, before rank 0's values are broadcast."""

    def _broadcast(self, keys: list[Key], where: str) -> None:
        arrays = [self._store[k] for k in keys]
        layout = self._layout("init", keys, arrays)
        views = layout.views()
        if self._rank == 0:
            for arr, flat in zip(arrays, views):
                pack(arr, flat)
        chunks = layout.chunks(self._config.dist_bucket_bytes)
        self._wait_all([self._comm.Ibcast(c, root=0) for c in chunks], where)
        if self._rank != 0:
            for arr, flat in zip(arrays, views):
                unpack(flat, arr, where)

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        """Collective: the sum over every worker's pushed values is applied to each key."""
        where = self._where("push")
        grouped, error = {}, None
        try:
            grouped = self._check_push(key, value, where)
        except MXNetError as exc:
            error = str(exc)
        keys = sorted(grouped)  # type: ignore[type-var]  # one key type per call
        self._agree(where, "push " + describe([(k, self._store[k]) for k in keys]), error)
        totals = self._sum_all(keys, grouped)
        if self._size > 1:
            self._allreduce(keys, totals, where)
        self._apply(keys, totals)

    def _allreduce(self, keys: list[Key], totals: list[NDArray], where: str) -> None:
        layout = self._layout("push", keys, totals)
        views = layout.views()
        for arr, flat in zip(totals, views):
            pack(arr, flat)
        MPI = mpi._mpi()
        chunks = layout.chunks(self._config.dist_bucket_bytes)
        self._wait_all([self._comm.Iallreduce(MPI.IN_PLACE, c, op=MPI.SUM) for c in chunks], where)
        for arr, flat in zip(totals, views):
            unpack(flat, arr, where)

    def barrier(self) -> None:
        """Wait until every worker has reached this barrier (bounded by ``SYMJIT_DIST_TIMEOUT``)."""
        self._wait_all([self._comm.Ibarrier()], self._where("barrier"))

    _barrier = barrier
