"""The local key-value store (``mx.kv.KVStore``: ``create``'s ``'local'`` and ``'device'`` types),
the base class of the distributed stores (:mod:`symjit.dist`); :mod:`symjit.kvstore` is ``mx.kv``."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .base import DTypeError, MXNetError, ParamError, ShapeError, shape_str, write_atomic
from .context import Context, cpu
from .kvstore_base import KVStoreBase, OneWorker
from .ndarray import NDArray, sparse
from .ndarray.ndarray import wrap
from .optimizer import Optimizer, Updater, get_updater

__all__ = ["KVStore", "KVStoreKeyError", "apply_update", "rows_of"]

LOCAL_TYPES = ("local", "device", "local_update_cpu", "local_allreduce_cpu", "local_allreduce_device")
DEVICE_TYPES = ("device", "local_allreduce_device",    # reduce and update on the values' GPU
                "dist_device_sync", "dist_sync_device")
SYNC_TYPES = ("dist_sync", "dist_device_sync", "dist_sync_device")   # symjit.dist.sync
ASYNC_TYPES = ("dist_async",)                                         # symjit.dist.async_
UNSUPPORTED_TYPES = ("dist", "dist_async_device", "horovod", "byteps", "nccl")

Key = int | str


class KVStoreKeyError(MXNetError, LookupError):
    """A key that is not initialised (push/pull) or already initialised (init)."""


def apply_update(updater: Callable[..., Any] | None, keys: list[Key], totals: list[NDArray],
                 stored: list[NDArray]) -> None:
    """What a push does with each key's sum: replace the stored value (no updater), or hand both
    to the updater, an ``Updater`` every key in one call (one update kernel for them all),
    another callable one key at a time."""
    if updater is None:
        for total, dst in zip(totals, stored):
            total.copyto(dst)
    elif isinstance(updater, Updater) and len(keys) > 1:
        updater(keys, totals, stored)
    else:
        for k, total, dst in zip(keys, totals, stored):
            updater(k, total, dst)


def _sparse_sum(stored: NDArray, values: list[NDArray]) -> NDArray:
    """The sum of pushed values where one is sparse (or the stored value is): row_sparse when
    every value is (only the rows they store count, for the optimizer's lazy update), else dense;
    on the stored value's context, in its dtype."""
    total = np.zeros(stored.shape, np.dtype(stored.dtype))
    for v in values:
        total += v.asnumpy().astype(total.dtype, copy=False)
    if all(v.stype == "row_sparse" for v in values):
        rows = np.unique(np.concatenate([v.indices.asnumpy() for v in values]))
        return sparse.RowSparseNDArray(stored.shape, total[rows], (rows,), stored.context)
    return wrap(total, stored.context)


def rows_of(value: NDArray, row_ids: NDArray, where: str) -> NDArray:
    """The rows ``row_ids`` (any order, repeats allowed) of ``value`` as a row_sparse array (a
    row_sparse value keeps only the rows it stores)."""
    rows = np.unique(sparse.integer_indices(row_ids, where, "row_ids"))
    if rows.size and (rows[0] < 0 or rows[-1] >= value.shape[0]):
        raise ShapeError(f"{where}: row_ids must lie in [0, {value.shape[0]}), got values from "
                         f"{int(rows[0])} to {int(rows[-1])}")
    if value.stype == "row_sparse":
        return sparse.retain(value, wrap(rows, value.context))
    return sparse.RowSparseNDArray(value.shape, np.ascontiguousarray(value.asnumpy()[rows]), (rows,),
                                   value.context)


def _check_key(key: Any, where: str) -> Key:
    """``key`` as a plain int or str (numpy integers accepted; bools refused)."""
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer, str)):
        raise ParamError(f"{where}: a key must be an int or a str, got {type(key).__name__} {key!r:.40}")
    return key if isinstance(key, str) else int(key)


def _as_arrays(value: Any, key: Key, where: str, what: str) -> list[NDArray]:
    """One NDArray or a non-empty list of NDArrays (one per device), as a list."""
    if isinstance(value, NDArray):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, NDArray) for v in value):
        return list(value)
    kind = f"an empty {type(value).__name__}" if isinstance(value, (list, tuple)) and not value else (
        f"{type(value).__name__}")
    raise DTypeError(f"{where} (key {key!r}): {what} must be an NDArray or a list of NDArrays, got {kind}")


def _pairs(key: Any, value: Any, where: str, what: str) -> list[tuple[Key, list[NDArray]]]:
    """``(key, [arrays])`` pairs from a single key or a list of keys with one entry per key."""
    if not isinstance(key, (list, tuple)):
        k = _check_key(key, where)
        return [(k, _as_arrays(value, k, where, what))]
    keys = [_check_key(k, where) for k in key]
    if len({isinstance(k, str) for k in keys}) > 1:
        raise ParamError(f"{where}: keys must be all ints or all strs, got {keys!r:.80}")
    if not isinstance(value, (list, tuple)) or len(value) != len(keys):
        got = f"{len(value)} entries" if isinstance(value, (list, tuple)) else type(value).__name__
        raise ParamError(f"{where}: {len(keys)} keys need a list of {len(keys)} {what}s "
                         f"(NDArrays or lists of NDArrays), got {got}")
    return [(k, _as_arrays(v, k, where, what)) for k, v in zip(keys, value)]


def pulled(pairs: list[tuple[Key, list[NDArray]]], ignore_sparse: bool) -> list[tuple[Key, list[NDArray]]]:
    """The ``(key, [out arrays])`` pairs a :meth:`KVStore.pull` writes: with ``ignore_sparse`` (MXNet's
    default) its sparse outputs are left as they are, as MXNet's pull leaves them (a sparse array
    takes ``row_sparse_pull``'s rows); without it they get the whole value."""
    if not ignore_sparse:
        return pairs
    return [(k, [o for o in outs if not sparse.is_sparse(o)]) for k, outs in pairs]


class KVStore(OneWorker, KVStoreBase):
    """A single-process key-value store (create one with :func:`create`).

    >>> import symjit as mx
    >>> kv = mx.kv.create()
    >>> kv.init(['w', 'b'], [mx.nd.ones((2,)), mx.nd.zeros((1,))])
    >>> kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    >>> kv.push('w', mx.nd.ones((2,)))
    >>> out = mx.nd.zeros((2,))
    >>> kv.pull('w', out=out)
    >>> out.asnumpy().tolist()
    [0.5, 0.5]
    """

    def __init__(self, kv_type: str = "local"):
        self._type = kv_type
        self._store: dict[Key, NDArray] = {}
        self._sums: dict[Key, NDArray] = {}     # per key, the buffer a push sums into
        self._updater: Callable[..., Any] | None = None

    def __repr__(self) -> str:
        return f"<KVStore type={self._type!r} keys={len(self._store)}>"

    # -- attributes ---------------------------------------------------------------------------
    @property
    def type(self) -> str:
        """The type given to :func:`create`, e.g. ``'local'``."""
        return self._type

    # -- init / push / pull -------------------------------------------------------------------
    def init(self, key: Any, value: Any) -> None:
        """Store a copy of ``value`` under ``key`` (or of each value under each key of a list).

        Initialising a key twice is an error."""
        self._store_init(self._check_init(key, value, "KVStore.init"))

    def _check_init(self, key: Any, value: Any, where: str) -> list[tuple[Key, list[NDArray]]]:
        """``init``'s arguments as ``(key, [value])`` pairs, checked; nothing is changed."""
        pairs = self._pairs(key, value, where, "value")
        seen: set[Key] = set()
        for k, vals in pairs:
            if len(vals) != 1:
                raise ParamError(f"{where} (key {k!r}): takes one NDArray per key, got a list of {len(vals)}")
            if k in self._store or k in seen:
                raise KVStoreKeyError(f"{where}: key {k!r} is already initialised")
            seen.add(k)
        return pairs

    def _pairs(self, key: Any, value: Any, where: str, what: str) -> list[tuple[Key, list[NDArray]]]:
        """:func:`_pairs`, and keys of the store's one type: a store holding int keys refuses str
        keys and the other way round, as MXNet's does."""
        pairs = _pairs(key, value, where, what)
        held = next(iter(self._store), None)
        if held is not None and pairs and isinstance(pairs[0][0], str) != isinstance(held, str):
            kinds = ("str", "int") if isinstance(held, str) else ("int", "str")
            raise MXNetError(f"{where}: this store's keys are {kinds[0]}s, got the {kinds[1]} key "
                             f"{pairs[0][0]!r} (a store takes keys of one type)")
        return pairs

    def _store_init(self, pairs: list[tuple[Key, list[NDArray]]]) -> None:
        for k, vals in pairs:
            self._store[k] = vals[0].copyto(cpu())

    def _to_device(self, key: Key, values: list[NDArray]) -> None:
        """A device store moves ``key``'s value to the GPU of the first pushed GPU value."""
        if self._type not in DEVICE_TYPES:
            return
        home: Context | None = next((v.context for v in values if not v.context.device.host_memory), None)
        if home is not None and self._store[key].context != home:
            self._store[key] = self._store[key].copyto(home)

    def _stored(self, key: Key, where: str) -> NDArray:
        if key not in self._store:
            raise KVStoreKeyError(f"{where}: key {key!r} is not initialised; call init first")
        return self._store[key]

    def _check_shapes(self, key: Key, arrays: list[NDArray], where: str, what: str) -> NDArray:
        stored = self._stored(key, where)
        for i, arr in enumerate(arrays):
            if arr.shape != stored.shape:
                raise ShapeError(f"{where} (key {key!r}): {what}[{i}] has shape {shape_str(arr.shape)} but "
                                 f"the stored value has shape {shape_str(stored.shape)}")
        return stored

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        """Push values: each key's values (one NDArray or a list, one per device) are summed; the
        sum replaces the stored value, or is handed to the updater as ``updater(key, sum, stored)``.

        Keys repeated in one call have all their values summed into one update. Everything is
        checked before anything is changed."""
        grouped = self._check_push(key, value, "KVStore.push")
        keys = sorted(grouped)  # type: ignore[type-var]  # one key type per call
        self._apply(keys, self._sum_all(keys, grouped))

    def _check_push(self, key: Any, value: Any, where: str) -> dict[Key, list[NDArray]]:
        """``push``'s values per key, checked against the stored shapes; nothing is changed."""
        grouped: dict[Key, list[NDArray]] = {}
        for k, vals in self._pairs(key, value, where, "value"):
            grouped.setdefault(k, []).extend(vals)
        for k, vals in grouped.items():
            self._check_shapes(k, vals, where, "value")
        return grouped

    def _sum_all(self, keys: list[Key], grouped: dict[Key, list[NDArray]]) -> list[NDArray]:
        totals = []
        for k in keys:
            self._to_device(k, grouped[k])
            totals.append(self._sum(k, grouped[k]))
        return totals

    def _sum(self, key: Key, values: list[NDArray]) -> NDArray:
        """The sum of ``values`` in the stored dtype, where the stored value lives, in a buffer kept
        per key (a push allocates nothing after the first)."""
        stored = self._store[key]
        if stored.stype != "default" or any(v.stype != "default" for v in values):
            return _sparse_sum(stored, values)

        def here(v: NDArray) -> NDArray:
            v = v.as_in_context(stored.context)
            return v if v.dtype == stored.dtype else v.astype(stored.dtype)
        total = self._sums.get(key)
        if total is None or total.context != stored.context:
            total = self._sums[key] = stored.copy()
        here(values[0]).copyto(total)
        for v in values[1:]:
            total += here(v)
        return total

    def _apply(self, keys: list[Key], totals: list[NDArray]) -> None:
        """Store the sums, or hand them to the updater: an ``Updater`` takes every key of the push
        in one call (one update kernel for them all), another callable one key at a time."""
        apply_update(self._updater, keys, totals, [self._store[k] for k in keys])

    def pull(self, key: Any, out: Any = None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Copy the stored value of ``key`` into ``out`` (an NDArray or a list, one per device); for a
        list of keys, ``out`` has one entry (an NDArray or a list) per key. With ``ignore_sparse``
        (the default), sparse arrays in ``out`` are left unchanged, as in MXNet
        (:meth:`row_sparse_pull` fills them).

        >>> import symjit as mx
        >>> kv = mx.kv.create()
        >>> kv.init(3, mx.nd.ones((2, 2)))
        >>> dense, rows = mx.nd.zeros((2, 2)), mx.nd.sparse.zeros('row_sparse', (2, 2))
        >>> kv.pull(3, out=[dense, rows])
        >>> dense.asnumpy().sum(), rows.asnumpy().sum()
        (np.float32(4.0), np.float32(0.0))
        """
        where = "KVStore.pull"
        if out is None:
            raise ParamError(f"{where}: out is required (an NDArray or a list of NDArrays)")
        pairs = self._pairs(key, out, where, "out")
        for k, outs in pairs:
            self._check_shapes(k, outs, where, "out")
        for k, outs in pulled(pairs, ignore_sparse):
            for o in outs:
                self._store[k].copyto(o)

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        """:meth:`init` ``key`` with ``value`` then :meth:`pull` it into ``out`` (an NDArray or a
        list; for a list of keys, one value and one ``out`` entry per key)."""
        self.init(key, value)
        self.pull(key, out=out, priority=priority)

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports ``capability``: ``'optimizer'`` (updates in the store) it does."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ParamError(f"KVStore.is_capable: unknown capability {capability!r}")

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """:meth:`push` then :meth:`pull`; without ``out`` the result is written back into ``value``."""
        self.push(key, value, priority)
        self.pull(key, out=value if out is None else out, priority=priority)

    def row_sparse_pull(self, key: Any, out: Any = None, priority: int = 0, row_ids: Any = None) -> None:
        """Copy the rows ``row_ids`` of the stored value of ``key`` into ``out``, a row_sparse
        array (or a list, one per device, with one ``row_ids`` array each or one for all); for a
        list of keys, one entry of each per key. ``out`` then stores exactly those rows.

        >>> import symjit as mx
        >>> kv = mx.kv.create()
        >>> kv.init(0, mx.nd.array([[1.0], [2.0], [3.0]]))
        >>> out = mx.nd.sparse.zeros('row_sparse', (3, 1))
        >>> kv.row_sparse_pull(0, out=out, row_ids=mx.nd.array([2, 0]))
        >>> out.indices.asnumpy().tolist(), out.data.asnumpy().tolist()
        ([0, 2], [[1.0], [3.0]])
        """
        where = "KVStore.row_sparse_pull"
        if out is None or row_ids is None:
            raise ParamError(f"{where}: out and row_ids are required")
        pairs = self._pairs(key, out, where, "out")
        ids = [row_ids] if len(pairs) == 1 else list(row_ids) if isinstance(row_ids, (list, tuple)) else None
        if ids is None or len(ids) != len(pairs):
            raise ParamError(f"{where}: {len(pairs)} keys need {len(pairs)} row_ids entries")
        for (k, outs), rid in zip(pairs, ids):
            self._check_shapes(k, outs, where, "out")
            rids = rid if isinstance(rid, (list, tuple)) else [rid] * len(outs)
            if len(rids) != len(outs):
                raise ParamError(f"{where} (key {k!r}): {len(outs)} outs need as many row_ids, "
                                 f"got {len(rids)}")
            for o, r in zip(outs, rids):
                if not isinstance(r, NDArray):
                    raise DTypeError(f"{where} (key {k!r}): row_ids must be NDArrays, got {type(r).__name__}")
                if o.stype != "row_sparse":
                    raise DTypeError(f"{where} (key {k!r}): out must be a row_sparse array, got "
                                     f"storage type {o.stype!r}")
                rows_of(self._store[k], r, where).copyto(o)

    def set_gradient_compression(self, compression_params: dict) -> None:
        """Not supported: gradients are always exchanged uncompressed."""
        raise MXNetError(f"KVStore.set_gradient_compression: gradient compression is not supported by "
                         f"symjit (type {self._type!r}); got {compression_params!r:.80}")

    # -- updaters and optimizer states --------------------------------------------------------
    def set_optimizer(self, optimizer: Optimizer) -> None:
        """Apply ``optimizer`` on push: the pushed sum is the gradient, the stored value the weight."""
        if not isinstance(optimizer, Optimizer):
            raise ParamError(f"KVStore.set_optimizer: expected an Optimizer, got {type(optimizer).__name__}")
        self._set_updater(get_updater(optimizer))

    def _set_updater(self, updater: Callable[..., Any]) -> None:
        """Call ``updater(key, summed_value, stored)`` on each push (it updates ``stored`` in place)."""
        if not callable(updater):
            raise ParamError(f"KVStore._set_updater: updater must be callable, got {type(updater).__name__}")
        self._updater = updater

    set_updater = _set_updater

    def _updater_states(self, where: str, method: str) -> Callable[..., Any]:
        if self._updater is None:
            raise MXNetError(f"{where}: no updater is set; call set_optimizer first")
        fn = getattr(self._updater, method, None)
        if not callable(fn):
            raise MXNetError(f"{where}: the updater {type(self._updater).__name__} has no {method}(); "
                             "only optimizer updaters (set_optimizer) have states")
        return fn

    def save_optimizer_states(self, fname: str | os.PathLike, dump_optimizer: bool = False) -> None:
        """Write the updater's states (and with ``dump_optimizer`` the optimizer) to ``fname``."""
        get_states = self._updater_states("KVStore.save_optimizer_states", "get_states")
        write_atomic(fname, get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str | os.PathLike) -> None:
        """Read states written by :meth:`save_optimizer_states` (never unpickled)."""
        where = "KVStore.load_optimizer_states"
        set_states = self._updater_states(where, "set_states")
        try:
            with open(fname, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise MXNetError(f"{where}: cannot read {os.fspath(fname)!r}: {exc}") from exc
        set_states(data)

    # -- synchronisation ----------------------------------------------------------------------
    def barrier(self) -> None:
        """Wait for all workers: a no-op with one worker."""

    _barrier = barrier
