"""The optimizers' update kernels per device, and :class:`MultiUpdate` (every parameter of a step in
one call). ``mx.nd.sgd_update`` and the other update operators are registry records
(:mod:`symjit.ops.update`) running the same per-element steps."""
from __future__ import annotations

import numpy as np

from . import storage
from .ndarray import NDArray

__all__ = ["update_kernels", "MultiUpdate"]


def update_kernels(ctx):
    """The fused optimizer update kernels for arrays on ``ctx``: ``symjit.kernels.cpu.optim`` (one
    ``njit`` loop each) or ``symjit.kernels.cuda.optim`` (one kernel each, queued on the device),
    with the same functions and arguments (both generated from ``symjit.kernels.optim_table``),
    as the context's device hands them out (:meth:`symjit.devices.Device.update_kernels`).
    Imported on first use (numba costs start-up).
    On the CPU, with the kernel cache and ``Config.aot`` on (read once, at the first call), the
    kernels are called through an ahead-of-time module when one was built for their argument types
    (no numba in the process; :class:`symjit.compiler.aot.Kernels`).

    >>> import symjit as mx
    >>> update_kernels(mx.cpu()).__name__
    'symjit.kernels.cpu.optim'
    """
    return ctx.device.update_kernels()


class MultiUpdate:
    """One update kernel applied to many parameters in one call: the table of their arrays' data
    addresses and sizes, built once (on the parameters' device) and reused while the arrays stay
    the same objects over the same storage.

    ``rows`` holds per parameter its weight, grad and states (NDArrays of one shape, the order of
    the kernel's single-parameter form), already validated by the caller; all rows share a dtype
    and a device. Arrays of different rows must not overlap (:meth:`disjoint`): a GPU updates the
    rows in parallel. The object keeps the arrays alive while their addresses are in its table.

    >>> import numpy as np, symjit as mx
    >>> ws = [mx.nd.ones((2,)), mx.nd.ones((3,))]
    >>> run = MultiUpdate("multi_sgd_update", [(w, mx.nd.ones(w.shape)) for w in ws])
    >>> run(np.array([[0.5, 0.0, 1.0, -1.0], [0.25, 0.0, 1.0, -1.0]]))
    >>> [w.asnumpy().tolist() for w in ws]
    [[0.5, 0.5], [0.75, 0.75, 0.75]]
    """

    def __init__(self, kernel: str, rows: list[tuple[NDArray, ...]]):
        self.rows = [tuple(r) for r in rows]
        self.storages = [tuple(a._store for a in r) for r in self.rows]
        self.ctx = self.rows[0][0].context
        self.kernel = getattr(update_kernels(self.ctx), kernel)
        addrs = np.array([[storage.address(d) for d in r] for r in self.storages], np.int64)
        sizes = np.array([int(r[0].size) for r in self.storages], np.int64)
        self.like = max((r[0] for r in self.storages), key=lambda d: d.size).reshape(-1)
        self.device = self.ctx.device
        self.addrs, self.sizes = self.device.upload(addrs), self.device.upload(sizes)
        self._scalars = None

    def same(self, rows: list[tuple[NDArray, ...]]) -> bool:
        """Whether ``rows`` are this table's arrays (the same objects over the same storage)."""
        if len(rows) != len(self.rows):
            return False
        for row, mine, datas in zip(rows, self.rows, self.storages):
            if len(row) != len(mine):
                return False
            for a, b, d in zip(row, mine, datas):
                if a is not b or a._store is not d:
                    return False
        return True

    @staticmethod
    def disjoint(rows: list[tuple[NDArray, ...]]) -> bool:
        """Whether no array of one row shares a byte with an array of another row (a sweep over
        the arrays sorted by address, keeping the furthest reach of two different rows).

        >>> import symjit as mx
        >>> a, b = mx.nd.zeros((4,)), mx.nd.zeros((4,))
        >>> MultiUpdate.disjoint([(a, b)]), MultiUpdate.disjoint([(a,), (a,)])
        (True, False)
        """
        spans = sorted((storage.address(a._store), storage.address(a._store) + a._store.nbytes, r)
                       for r, row in enumerate(rows) for a in row if a._store.nbytes)
        best = second = (-1, -1)   # (end, row): the furthest end, and the furthest of another row
        for start, end, r in spans:
            if start < (best[0] if best[1] != r else second[0]):
                return False
            if best[1] == r:
                best = max(best, (end, r))
            elif end > best[0]:
                best, second = (end, r), best
            elif end > second[0]:
                second = (end, r)
        return True

    def __call__(self, scalars: np.ndarray) -> None:
        """Apply the kernel to every row, with row ``k``'s scalars in ``scalars[k]`` (float64)."""
        self._scalars = self.device.upload(scalars, self._scalars)
        self.kernel(self.addrs, self.sizes, self._scalars, self.like)
