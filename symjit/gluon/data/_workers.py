"""The DataLoader's worker processes: forked per pass over the data, ended with it.

Each worker is forked from the loading process, so it holds the dataset and the batchify function
as they are (nothing is pickled). The loader sends a worker the indices of a batch (batch ``k`` goes
to worker ``k % n``), the worker reads the samples, batchifies them and sends the batch back in
:mod:`._wire`'s format (arrays as raw bytes, never a pickle). Results come back in order: each
worker answers its tasks in the order they came.

Workers never outlive the loading process: each follows a
:class:`~symjit.compiler.lifeline.Lifeline` (SIGKILL from the kernel when the parent dies, on
Linux; a pipe that ends the worker when the parent is gone, everywhere). A pass that ends, is
abandoned (its iterator collected) or fails kills its workers and reaps them (:meth:`Pool.close`,
also run by a finalizer). A worker reads its tasks in a thread of its own, so a loader sending
tasks never waits for a worker busy sending a batch.

Each worker reseeds NumPy's and Python's global generators and ``mx.random`` with a seed the
loader draws from ``np.random`` for it, so random augmentations differ between workers and between
passes, and a seeded program repeats them.
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import random
import signal
import sys
import threading
import traceback
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ...base import MXNetError
from ...compiler.lifeline import Lifeline, follow
from . import _wire

__all__ = ["Pool", "WorkerError"]


class WorkerError(MXNetError):
    """A worker process failed to make a batch, or died."""


def _reseed(seed: int) -> None:
    np.random.seed(seed % 2 ** 32)
    random.seed(seed)
    from ... import random as mx_random
    if "symjit.kernels.cpu.random" in sys.modules:   # numba's generator is in use: reseed it too
        mx_random.seed(seed)
    else:
        mx_random._rng = np.random.default_rng(seed)


def _serve(dataset: Any, batchify_fn: Callable[[list], Any], tasks: Any, results: Any) -> None:
    """The worker's loop: tasks in (read by a thread into a queue), batches out."""
    inbox: queue.Queue = queue.Queue()

    def read() -> None:
        try:
            while True:
                msg = tasks.recv_bytes()
                if not msg:
                    break
                inbox.put(msg)
        except (EOFError, OSError):
            pass
        inbox.put(None)

    threading.Thread(target=read, name="symjit-dataloader-tasks", daemon=True).start()
    while True:
        msg = inbox.get()
        if msg is None:
            return
        seq, indices = _wire.recv_task(msg)
        try:
            batch = batchify_fn([dataset[i] for i in indices])
            _wire.send(results, {"seq": seq}, batch, "DataLoader worker")
        except BaseException as exc:  # noqa: BLE001 - reported to the loader, which raises it
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            _wire.send(results, {"seq": seq, "error": type(exc).__name__, "message": str(exc),
                                 "traceback": text}, None)


def _child(parent: int, line_read: int, line_write: int, seed: int, dataset: Any,
           batchify_fn: Callable[[list], Any], tasks: Any, results: Any, mine: list) -> None:
    follow(parent, line_read, line_write)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the loader's to handle
    except ValueError:   # forked from a thread other than the main one
        pass
    for conn in mine:
        conn.close()
    _reseed(seed)
    try:
        _serve(dataset, batchify_fn, tasks, results)
    finally:
        sys.stdout.flush()
        os._exit(0)


def _fork_lock() -> Any:
    """numba's compiler lock when numba is loaded (no other thread is compiling while a worker
    forks, so the worker's copy of the lock is free), else a lock of our own."""
    if "numba" in sys.modules:
        from numba.core.compiler_lock import global_compiler_lock
        return global_compiler_lock
    return threading.Lock()


def _stop(owner: int, procs: list, conns: list, line: Lifeline) -> None:
    """Kill and reap the workers; close the pipes (only in the process that made them)."""
    if os.getpid() != owner:
        return
    for p in procs:
        if p.is_alive():
            p.kill()
    for p in procs:
        p.join(5)
    for c in conns:
        c.close()
    line.close()


class Pool:
    """``num_workers`` forked worker processes serving ``dataset`` with ``batchify_fn``.

    >>> import numpy as np
    >>> pool = Pool(2, np.arange(10) * 2, lambda samples: np.array(samples))
    >>> pool.submit(0, [1, 2]); pool.submit(1, [3])
    >>> pool.result(0, 60).tolist(), pool.result(1, 60).tolist()
    ([2, 4], [6])
    >>> pool.close(); pool.alive()
    []
    """

    def __init__(self, num_workers: int, dataset: Any, batchify_fn: Callable[[list], Any],
                 make_nd: Callable[[np.ndarray], Any] = lambda a: a):
        try:
            ctx = multiprocessing.get_context("fork")
        except ValueError:
            raise MXNetError("DataLoader: num_workers > 0 needs the 'fork' start method, which this "
                             "platform lacks; use thread_pool=True or num_workers=0") from None
        self._make_nd = make_nd
        self._line = Lifeline()
        self._procs: list = []
        self._tasks: list = []
        self._results: list = []
        seeds = np.random.randint(0, 2 ** 31 - 1, size=num_workers)
        try:
            with _fork_lock():
                for w in range(num_workers):
                    task_r, task_w = ctx.Pipe(duplex=False)
                    res_r, res_w = ctx.Pipe(duplex=False)
                    proc = ctx.Process(
                        target=_child, name=f"symjit-dataloader-{w}", daemon=True,
                        args=(self._line.parent, self._line.read, self._line.write, int(seeds[w]),
                              dataset, batchify_fn, task_r, res_w, [task_w, res_r]))
                    proc.start()
                    task_r.close()
                    res_w.close()
                    self._procs.append(proc)
                    self._tasks.append(task_w)
                    self._results.append(res_r)
        finally:
            self._finalizer = weakref.finalize(self, _stop, os.getpid(), self._procs,
                                               self._tasks + self._results, self._line)

    def pids(self) -> list[int]:
        """The workers' process ids."""
        return [p.pid for p in self._procs]

    def alive(self) -> list[int]:
        """The process ids of the workers still running."""
        if not self._finalizer.alive:
            return [p.pid for p in self._procs if _running(p.pid)]
        return [p.pid for p in self._procs if p.is_alive()]

    def submit(self, seq: int, indices: list) -> None:
        """Send batch ``seq`` (the samples at ``indices``) to worker ``seq % n``."""
        self._tasks[seq % len(self._procs)].send_bytes(_wire.task_bytes(seq, indices))

    def result(self, seq: int, timeout: float) -> Any:
        """Batch ``seq``, waiting at most ``timeout`` seconds for it."""
        w = seq % len(self._procs)
        conn, proc = self._results[w], self._procs[w]
        if not conn.poll(timeout):
            raise multiprocessing.TimeoutError(
                f"DataLoader: worker {w} (pid {proc.pid}) gave no batch within timeout={timeout} seconds "
                "(a slow dataset or transform: raise the DataLoader's timeout)")
        try:
            head, batch = _wire.recv(conn, self._make_nd)
        except (EOFError, OSError):
            proc.join(1)
            raise WorkerError(f"DataLoader: worker {w} (pid {proc.pid}) exited unexpectedly (exit code "
                              f"{proc.exitcode}) while making batch {seq}") from None
        if head["seq"] != seq:
            raise WorkerError(f"DataLoader: worker {w} sent batch {head['seq']} where batch {seq} was due")
        if "error" in head:
            raise _rebuild(head, w, proc.pid)
        return batch

    def close(self) -> None:
        """Kill and reap every worker (also done when the pool is collected)."""
        self._finalizer()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _rebuild(head: dict, w: int, pid: int) -> BaseException:
    """The worker's exception as one of the same built-in type where there is one (IndexError,
    KeyError, ValueError, ...), else a :class:`WorkerError`; the message names the worker and
    carries its traceback."""
    import builtins
    text = (f"DataLoader worker {w} (pid {pid}) failed: {head['error']}: {head['message']}\n"
            f"worker traceback:\n{head['traceback']}")
    cls = getattr(builtins, head["error"], None)
    if isinstance(cls, type) and issubclass(cls, Exception) and cls is not Exception:
        try:
            return cls(text)
        except Exception:  # noqa: BLE001 - a built-in exception with other arguments
            pass
    return WorkerError(text)
