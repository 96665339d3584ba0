"""``mx.engine``: MXNet's bulk-execution setting, accepted and without effect.

MXNet's engine can bundle up to ``size`` consecutive operators into one scheduled unit.
symjit has no such engine: a bound program already runs its fused kernels in one call, and each
imperative ``mx.nd`` call runs when it is made. :func:`set_bulk_size` and :func:`bulk` keep the
number they are given (so the previous size comes back as in MXNet) and change no result and no
timing. As in MXNet, the size is kept per thread and starts at 0 (no bulking).

>>> import symjit as mx
>>> with mx.engine.bulk(10):
...     x = mx.nd.zeros((1,))
...     for i in range(3):
...         x += 1
>>> x.asnumpy().tolist()
[3.0]
>>> old = mx.engine.set_bulk_size(4)
>>> mx.engine.set_bulk_size(old)
4
"""
from __future__ import annotations

import threading
from types import TracebackType

from .base import ParamError

__all__ = ["set_bulk_size", "bulk"]

_state = threading.local()
DEFAULT_BULK_SIZE = 0


def set_bulk_size(size: int) -> int:
    """Set the bulk size (kept, no effect in symjit) and return the previous one.

    >>> prev = set_bulk_size(20)
    >>> set_bulk_size(prev)
    20
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ParamError(f"engine.set_bulk_size: size must be an int >= 0, got {size!r}")
    prev = getattr(_state, "size", DEFAULT_BULK_SIZE)
    _state.size = size
    return prev


class _BulkScope:
    """``with bulk(size):``: the bulk size inside, the previous one restored after."""

    def __init__(self, size: int):
        self._size = size
        self._old: int | None = None

    def __enter__(self) -> _BulkScope:
        self._old = set_bulk_size(self._size)
        return self

    def __exit__(self, kind: type | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if self._old is not None:
            set_bulk_size(self._old)


def bulk(size: int) -> _BulkScope:
    """A scope with bulk size ``size`` (accepted, no effect in symjit; see the module docstring).

    >>> with bulk(5):
    ...     inner = set_bulk_size(5)
    >>> inner
    5
    """
    return _BulkScope(size)
