"""``mx.kv`` / ``mx.kvstore``: MXNet 1.x's single-machine key-value store.

``push`` sums the values given for a key (one per device) and, without an updater, REPLACES the
stored value with that sum; with an updater (``set_optimizer`` or ``_set_updater``) it calls
``updater(key, summed, stored)``, which updates ``stored`` in place. ``pull`` copies the stored
value into one array or each array of a list.

Where a key's value lives and is summed and updated, as in MXNet: ``init`` keeps a copy on the CPU;
the ``'local'`` types sum and update there (GPU values are copied over); ``'device'`` and
``'local_allreduce_device'`` move the value, at the first push of GPU values, to the GPU of the
first pushed value, so with GPU executors the sum of the devices' gradients and the optimizer's
update run as kernels on that GPU (values from other GPUs are copied over). MXNet spreads the keys
over the GPUs by size; symjit uses the first value's GPU for every key.

>>> import symjit as mx
>>> kv = mx.kv.create('local')
>>> kv.init(3, mx.nd.ones((2, 3)) * 2)
>>> kv.push(3, [mx.nd.ones((2, 3), mx.cpu(i)) for i in range(4)])
>>> a = mx.nd.zeros((2, 3))
>>> kv.pull(3, out=a)
>>> a.asnumpy().tolist()
[[4.0, 4.0, 4.0], [4.0, 4.0, 4.0]]
"""
from __future__ import annotations

from .base import MXNetError, ParamError
from .kvstore_base import KVStoreBase, TestStore
from .kvstore_local import (  # noqa: F401  (mx.kv's names)
    ASYNC_TYPES,
    DEVICE_TYPES,
    LOCAL_TYPES,
    SYNC_TYPES,
    UNSUPPORTED_TYPES,
    Key,
    KVStore,
    KVStoreKeyError,
    _pairs,
    apply_update,
)

__all__ = ["KVStore", "KVStoreKeyError", "create", "KVStoreBase", "TestStore"]


def create(name: str = "local") -> KVStore:
    """A new key-value store of type ``name``.

    ``'local'``, ``'device'`` and the aliases ``'local_update_cpu'``, ``'local_allreduce_cpu'`` and
    ``'local_allreduce_device'`` all behave as one single-process store. ``'dist_sync'``,
    ``'dist_device_sync'`` and ``'dist_async'`` are the distributed stores of :mod:`symjit.dist`
    (run the program with ``symjit launch -n N python prog.py``; they need ``symjit[dist]``).
    ``'horovod'``, ``'byteps'`` and ``'nccl'`` raise :class:`MXNetError`. A name registered with
    :meth:`KVStoreBase.register` (``'teststore'``) creates that class.

    >>> import symjit as mx
    >>> kv = mx.kv.create('device')
    >>> kv.type, kv.rank, kv.num_workers
    ('device', 0, 1)
    """
    if not isinstance(name, str):
        raise ParamError(f"kvstore.create: name must be a str, got {type(name).__name__}")
    name = name.lower()
    if name in KVStoreBase.kv_registry:       # stores written in Python come first, as in MXNet
        return KVStoreBase.kv_registry[name]()
    if name in LOCAL_TYPES:
        return KVStore(name)
    if name in SYNC_TYPES:
        from .dist.sync import DistSyncKVStore
        return DistSyncKVStore(name)
    if name in ASYNC_TYPES:
        from .dist.async_ import DistAsyncKVStore
        return DistAsyncKVStore(name)
    known = ", ".join(LOCAL_TYPES + SYNC_TYPES + ASYNC_TYPES + tuple(KVStoreBase.kv_registry))
    if name in UNSUPPORTED_TYPES:
        raise MXNetError(f"kvstore.create: type {name!r} is not supported by symjit; use one of {known}")
    raise ParamError(f"kvstore.create: unknown kvstore type {name!r}; expected one of {known}")
