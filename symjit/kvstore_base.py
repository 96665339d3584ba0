"""``mx.kvstore.KVStoreBase``: MXNet 1.x's interface for key-value stores written in Python, and its
registry (``KVStoreBase.register``: ``mx.kv.create('<class name in lower case>')`` makes one).

``TestStore`` (``mx.kv.create('teststore')``) is the registered store MXNet ships for testing:
one process, no stored values; ``broadcast`` copies, ``pushpull`` sums the values of the devices.

>>> import symjit as mx
>>> kv = mx.kv.create('teststore')
>>> outs = [mx.nd.zeros((2,)) for _ in range(2)]
>>> kv.pushpull('w', [mx.nd.ones((2,)), mx.nd.ones((2,)) * 2], out=outs)
>>> outs[1].asnumpy().tolist(), kv.is_capable('optimizer')
([3.0, 3.0], False)
"""
from __future__ import annotations

import warnings
from typing import Any, ClassVar

from .base import ParamError
from .ndarray import NDArray

__all__ = ["KVStoreBase", "TestStore", "OneWorker"]


class KVStoreBase:
    """What a key-value store offers data-parallel training; subclasses implement the methods
    (each raises ``NotImplementedError`` here) and register with :meth:`register`."""

    OPTIMIZER = "optimizer"
    kv_registry: ClassVar[dict[str, type]] = {}

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        """Send ``value`` (rank 0's) to every worker, written into ``out``."""
        raise NotImplementedError(f"{type(self).__name__}.broadcast")

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """Sum ``value`` over devices and workers into ``out`` (into ``value`` when ``out`` is None)."""
        raise NotImplementedError(f"{type(self).__name__}.pushpull")

    def set_optimizer(self, optimizer: Any) -> None:
        """Run ``optimizer``'s updates in the store."""
        raise NotImplementedError(f"{type(self).__name__}.set_optimizer")

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports ``capability`` (``KVStoreBase.OPTIMIZER``)."""
        raise NotImplementedError(f"{type(self).__name__}.is_capable")

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the optimizer's states to ``fname``."""
        raise NotImplementedError(f"{type(self).__name__}.save_optimizer_states")

    def load_optimizer_states(self, fname: str) -> None:
        """Read the optimizer's states from ``fname``."""
        raise NotImplementedError(f"{type(self).__name__}.load_optimizer_states")

    @property
    def type(self) -> str:
        """The store's type name."""
        raise NotImplementedError(f"{type(self).__name__}.type")

    @property
    def rank(self) -> int:
        """This worker's rank."""
        raise NotImplementedError(f"{type(self).__name__}.rank")

    @property
    def num_workers(self) -> int:
        """The number of workers."""
        raise NotImplementedError(f"{type(self).__name__}.num_workers")

    @staticmethod
    def register(klass: type) -> type:
        """Class decorator: make ``mx.kv.create(klass.__name__.lower())`` create a ``klass`` (a later
        class of the same name replaces the earlier one, with a warning)."""
        if not isinstance(klass, type):
            raise ParamError(f"KVStoreBase.register: expected a class, got {type(klass).__name__}")
        name = klass.__name__.lower()
        old = KVStoreBase.kv_registry.get(name)
        if old is not None:
            warnings.warn(f"KVStoreBase.register: {klass.__module__}.{klass.__name__} replaces the kvstore "
                          f"{old.__module__}.{old.__name__} registered as {name!r}", stacklevel=2)
        KVStoreBase.kv_registry[name] = klass
        return klass


class OneWorker:
    """Mixin of the stores of one process: rank 0 of 1 worker."""

    @property
    def rank(self) -> int:
        """This worker's rank: always 0 (one process)."""
        return 0

    @property
    def num_workers(self) -> int:
        """The number of workers: always 1."""
        return 1


def _outs(out: Any) -> list[NDArray]:
    return list(out) if isinstance(out, (list, tuple)) else [out]


@KVStoreBase.register
class TestStore(OneWorker, KVStoreBase):
    """A one-process store for tests: no optimizer, nothing kept between calls."""

    __test__ = False   # not a pytest test class

    def broadcast(self, key: Any, value: NDArray, out: Any, priority: int = 0) -> None:
        """Copy ``value`` into ``out`` (an NDArray or a list of them)."""
        for o in _outs(out):
            o[:] = value

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """The sum of ``value`` (an NDArray, or a list with one per device, summed on the first
        one's device) written into each array of ``out``, or of ``value`` when ``out`` is None."""
        if isinstance(value, NDArray):
            total, targets = value, [] if out is None else _outs(out)
        else:
            values = list(value)
            total = values[0].copy()
            for v in values[1:]:
                total += v.as_in_context(total.context)
            targets = values if out is None else _outs(out)
        for t in targets:
            t[:] = total

    @staticmethod
    def is_capable(capability: str) -> bool:  # type: ignore[override]
        """Nothing: ``'optimizer'`` is False, any other capability an error."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ParamError(f"TestStore.is_capable: unknown capability {capability!r}")

    @property
    def type(self) -> str:
        return "teststore"
