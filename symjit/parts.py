"""Kernels split into parts, run on a small pool of Python threads.

A generated CPU map loop over at least :data:`symjit.threads.PARTS_MIN` elements is compiled as a
serial kernel that takes three trailing arguments, ``part``, ``parts`` and ``sync``, and runs only
its share of the loop's outer iterations (:meth:`symjit.lower.cpu.CPUTarget.open_map_loop`); so do
the hand-written building blocks of big arrays (BatchNorm, pooling, the convolutions:
:mod:`symjit.kernels.cpu._parallel`), whose parts meet at barriers between their phases
(``kernels.cpu.spin.barrier`` on ``sync``). Such a function's name ends in
:data:`symjit.lower.writer.PARTS_SUFFIX`. Called with ``(0, 1)`` and a barrier state
(:func:`whole_call`) it runs the whole loop, so any caller that knows nothing of parts still gets
the right result. A :class:`PartsCall` runs part 0 in the calling thread and the others on
:class:`PartPool`'s worker threads at the same time; the kernels release the GIL (``nogil``), so
the parts run on as many cores.

Why not numba's ``prange``: a kernel compiled ``parallel=True`` took ~0.63 s to compile against
~0.18 s for the same loop serial (numba's parfor passes and gufunc lowering, measured on a
BatchNorm epilogue with a warm compiler), and numba's ahead-of-time compiler cannot compile one,
so such kernels made cold binds slow and kept numba in every warm process.

An idle worker first spins on a counter the pool raises with each task it hands out, and a caller
done with its own part on a counter the workers raise as they finish, both without the
GIL (:func:`symjit.kernels.cpu.spin.spin_while`, ~0.4 ms, as long as numba's OpenMP threads and
OpenBLAS's spin), then blocks on its queue: waking a blocked thread costs tens of microseconds,
as much as a small split loop saves. It spins only in a process that has numba loaded
(whose cache holds the spinning function); elsewhere it blocks at once.

How many parts: the count :mod:`symjit.threads`' policy sets for the calling thread
(:func:`symjit.threads.set_parts`, what it also gives BLAS), else ``NUMBA_NUM_THREADS`` where
set, else the usable cores. The workers are daemon threads, made at the first call that needs
them, remade in a forked child (whose parent's threads do not exist there), and they only ever
run kernels.

>>> import numpy as np
>>> def double(x, out, part, parts, sync):     # a parts kernel, as Python
...     n = x.shape[0]
...     for i in range(part * n // parts, (part + 1) * n // parts):
...         out[i] = 2 * x[i]
>>> x, out = np.arange(10.0), np.zeros(10)
>>> PartsCall(double, parts=3)(x, out, *whole_call())
>>> out.tolist() == (2 * x).tolist()
True
"""
from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from . import threads
from .kernels.cpu.sync_state import PART_ARGS, SYNC_ABORT, SYNC_LENGTH

__all__ = ["PartsCall", "PartPool", "POOL", "whole_call", "run_in_parts", "SYNC_LENGTH", "SYNC_ABORT"]


class PartPool:
    """Worker threads running parts of split kernels; part 0 runs in the caller."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: list[queue.SimpleQueue] = []
        self._pid = os.getpid()
        self._flag = np.zeros(1, np.int64)   # raised with every task handed out: spinning workers watch it
        self.spin: Callable | None = None     # the workers' spin, loaded by a caller (never a worker)

    def _workers(self, n: int) -> list[queue.SimpleQueue]:
        """At least ``n`` workers' task queues (made as needed; remade after a fork)."""
        if self._pid != os.getpid():   # a forked child: the parent's workers (and lock holders) are not here
            self._tasks, self._pid, self._lock = [], os.getpid(), threading.Lock()
        if self.spin is None:
            self.spin = _spinner()
        if len(self._tasks) < n:
            with self._lock:
                while len(self._tasks) < n:
                    tasks: queue.SimpleQueue = queue.SimpleQueue()
                    threading.Thread(target=_work, args=(self, tasks), daemon=True,
                                     name=f"symjit-parts-{len(self._tasks)}").start()
                    self._tasks.append(tasks)
        return self._tasks

    def run(self, fn: Callable, args: tuple, parts: int) -> None:
        """``fn(*args, t, parts, sync)`` for every ``t < parts``, at the same time, ``sync`` this
        call's barrier state (:func:`whole_call`); returns when all have, re-raising the first
        error any part raised (after raising ``sync``'s abort flag, so that parts waiting at a
        barrier for the failed one return)."""
        sync = np.zeros(SYNC_LENGTH, np.int64)
        if parts <= 1:
            fn(*args, 0, 1, sync)
            return
        done: queue.SimpleQueue = queue.SimpleQueue()
        finished = np.zeros(1, np.int64)   # raised by each worker after it has put its outcome
        workers = self._workers(parts - 1)
        for t in range(1, parts):
            workers[t - 1].put((fn, args, t, parts, sync, done, finished))
        self._flag[0] += 1
        error = None
        try:
            fn(*args, 0, parts, sync)
        except BaseException as e:   # wait for the other parts before raising: they use the arrays
            sync[SYNC_ABORT] = 1
            error = e
        spin = self.spin
        for _ in range(parts - 1):
            seen = int(finished[0])
            if spin is not None and done.empty():   # spin first: a blocked caller wakes late
                spin(finished, seen)
            e = done.get()
            if e is not None and error is None:
                error = e
        if error is not None:
            raise error


def _spinner() -> Callable | None:
    """The compiled spin (:mod:`symjit.kernels.cpu.spin`) once numba is loaded, else None. Loaded
    by a calling thread: a worker that compiled could hold numba's lock across a fork."""
    if "numba" not in sys.modules:
        return None
    from symjit.kernels.cpu.spin import SETTLE, TICKS, spin_while
    return lambda flag, seen: spin_while(flag, seen, TICKS, SETTLE)


def _work(pool: PartPool, tasks: queue.SimpleQueue) -> None:
    flag = pool._flag
    while True:
        spin = pool.spin
        if spin is not None:
            seen = int(flag[0])
            if tasks.empty():   # a task put before this read is in the queue; a later one raises the flag
                spin(flag, seen)
        fn, args, t, parts, sync, done, finished = tasks.get()
        try:
            fn(*args, t, parts, sync)
        except BaseException as e:  # noqa: BLE001  (handed to the caller, which raises it)
            sync[SYNC_ABORT] = 1
            done.put(e)
        else:
            done.put(None)
        finished[0] += 1


POOL = PartPool()
"""The process's pool (its workers are made at the first split call that needs them)."""


def whole_call() -> tuple:
    """The trailing arguments of a kernel in parts called whole: part 0 of 1, a fresh barrier state
    (what a ``calls`` segment binds, and what :class:`PartsCall` replaces)."""
    return np.int64(0), np.int64(1), np.zeros(SYNC_LENGTH, np.int64)


class PartsCall:
    """A split kernel's call: ``call(*args)`` with ``args`` ending in the ``(part, parts, sync)``
    of a whole call (:func:`whole_call`) runs ``fn`` in :func:`symjit.threads.parts_for_thread` parts on
    :data:`POOL` (``parts`` fixes the count). ``fn`` is what the call runs (a numba dispatcher,
    an ahead-of-time entry's function, or Python)."""

    __slots__ = ("fn", "parts")

    def __init__(self, fn: Callable, parts: int | None = None) -> None:
        self.fn = fn
        self.parts = parts

    def __call__(self, *args: Any) -> None:
        POOL.run(self.fn, args[:-PART_ARGS], self.parts or threads.parts_for_thread())

    def __repr__(self) -> str:
        return f"PartsCall({getattr(self.fn, '__name__', self.fn)!r})"


def run_in_parts(fn: Callable, *args: Any, parts: int | None = None) -> None:
    """``fn`` (a kernel in parts) on ``args`` (without the part arguments) in ``parts`` parts, or
    as many as :func:`symjit.threads.parts_for_thread` gives, as a compiled program runs it."""
    POOL.run(fn, args, parts or threads.parts_for_thread())
