"""``mx.mon``: Monitor, which collects statistics of arrays while a network trains.

``Monitor(interval, stat_func, pattern, sort)`` installs itself on executors through
``Executor.set_monitor_callback``. Every ``interval`` batches (``tic`` starts a batch, ``toc`` ends
it) it records ``stat_func`` of each array the executor reports whose name matches ``pattern``:
every op's outputs (``fc1_output``), with ``monitor_all`` also every op's inputs (``fc1_data``),
the gradients the backward pass computes, named as MXNet names the outputs of its backward nodes
(``fc1_backward_weight``), and the executors' arguments (the weights). ``toc_print`` logs one line
per array as MXNet does::

    Batch:       1 fc1_output                     0.12345

Only the watched batches run the executor's unfused monitoring program; the others run at full
speed.

The default statistic is ``norm(x) / sqrt(x.size)``.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable
from math import sqrt
from typing import Any

import numpy as np

from .ndarray import NDArray

__all__ = ["Monitor"]


def _default_stat(x: NDArray) -> NDArray:
    from . import ndarray as nd
    return nd.norm(x) / sqrt(x.size)


class Monitor:
    """Collects ``stat_func`` of matching arrays every ``interval`` batches.

    >>> import symjit as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
    >>> ex = net.simple_bind(mx.cpu(), grad_req='null', data=(1, 3))
    >>> mon = mx.mon.Monitor(1, pattern='fc.*')
    >>> mon.install(ex); mon.tic(); _ = ex.forward(); [name for _, name, _ in mon.toc()]
    ['fc_output', 'fc_weight', 'fc_bias']
    """

    def __init__(self, interval: int, stat_func: Callable[[NDArray], Any] | None = None,
                 pattern: str = ".*", sort: bool = False, monitor_all: bool = False):
        if int(interval) < 1:
            raise ValueError(f"Monitor: interval must be >= 1, got {interval}")
        self.interval = int(interval)
        self.stat_func = stat_func or _default_stat
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all
        self.activated = False
        self.queue: list[tuple[int, str, Any]] = []
        self.step = 0
        self.exes: list[Any] = []

    def stat_helper(self, name: str, array: NDArray) -> None:
        """The executor callback: record the statistic of a matching array while activated."""
        if self.activated and self.re_prog.match(name):
            self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe: Any) -> None:
        """Attach to an executor (``Executor.set_monitor_callback``)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all, active=lambda: self.activated)
        self.exes.append(exe)

    def tic(self) -> None:
        """Start a batch: collect during it when the batch count is a multiple of ``interval``."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self) -> list[tuple[int, str, str]]:
        """End a batch: return ``(batch, name, statistic as text)`` for what was collected, the
        arguments (weights) of the installed executors included."""
        if not self.activated:
            return []
        for exe in self.exes:
            for name, array in exe.arg_dict.items():
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        res = []
        queue = sorted(self.queue, key=lambda q: q[1]) if self.sort else self.queue
        for n, name, value in queue:
            values = value if isinstance(value, list) else [value]
            text = "\t".join(_fmt(v) for v in values)
            res.append((n, name, text))
        self.queue = []
        return res

    def toc_print(self) -> None:
        """End a batch and log each collected statistic: ``Batch: %7d %30s %s``."""
        for n, name, text in self.toc():
            logging.info("Batch: %7d %30s %s", n, name, text)


def _fmt(value: Any) -> str:
    arr = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
    return " ".join(f"{float(v):.8g}" for v in arr.reshape(-1))
