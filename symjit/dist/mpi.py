"""MPI for the distributed KVStores: start it, wait on it with a timeout, stop every rank on failure.

Only buffer-based MPI calls are used (numpy arrays; never mpi4py's pickle-based lowercase methods),
so nothing a worker receives is ever unpickled.

Failure handling (a worker that raises or dies must not leave the others waiting forever):

- :func:`comm` installs an exception hook: an exception nobody catches prints its traceback
  prefixed with the rank and aborts the whole MPI job (``MPI_Abort``), so the launcher stops the
  other ranks at once instead of leaving them in a collective.
- :func:`wait` polls a non-blocking request and raises :class:`DistTimeout` after
  ``Config.dist_timeout`` seconds (``SYMJIT_DIST_TIMEOUT``), the bound on a wait MPI itself does
  not offer; the error then aborts the job the same way.
- A worker killed by a signal is reported by ``symjit launch`` with its rank; the MPI launcher
  stops the others.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time
import traceback
from typing import Any

import numpy as np

from ..base import MXNetError

__all__ = ["DistError", "DistTimeout", "comm", "wait", "agree", "MISSING_HELP"]

MISSING_HELP = ("install the distributed extra: pip install 'symjit[dist]' (mpi4py and the MPICH "
                "library; mpi4py also works with Open MPI or a cluster's own MPI)")


class DistError(MXNetError):
    """A distributed KVStore call that failed on some rank (the message names the rank)."""


class DistTimeout(DistError, TimeoutError):
    """The other workers did not reach a collective within ``Config.dist_timeout`` seconds."""


_hook_installed = False
ABORT_GRACE = 0.5
"""Seconds a failing worker waits after writing its error before it aborts the job: MPICH's
mpiexec forwards a worker's output asynchronously and drops what it has not forwarded when
``MPI_Abort`` kills the job (seen on a loaded 2-core machine: the job stopped without the failing
rank's traceback)."""


def _mpi() -> Any:
    """The ``mpi4py.MPI`` module, or a clear error naming what to install."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise MXNetError(f"distributed KVStore: mpi4py cannot be imported ({exc}); {MISSING_HELP}") from exc
    except RuntimeError as exc:   # mpi4py present, but no MPI library to load
        raise MXNetError(f"distributed KVStore: no MPI library was found ({exc}); {MISSING_HELP}") from exc
    return MPI


def comm() -> Any:
    """``MPI.COMM_WORLD`` (MPI started on first use), with the abort-on-uncaught-exception hook."""
    MPI = _mpi()
    world = MPI.COMM_WORLD
    _install_hook(world)
    return world


def _install_hook(world: Any) -> None:
    global _hook_installed
    if _hook_installed or world.Get_size() == 1:
        return
    previous = sys.excepthook

    def abort_job(kind: type, value: BaseException, tb: Any) -> None:
        text = "".join(traceback.format_exception(kind, value, tb))
        rank = world.Get_rank()
        sys.stderr.write("".join(f"[rank {rank}] {line}\n" for line in text.rstrip().split("\n")))
        sys.stderr.write(f"[rank {rank}] symjit: rank {rank} failed with {kind.__name__}; "
                         "stopping all workers\n")
        sys.stderr.flush()
        if kind is KeyboardInterrupt:
            previous(kind, value, tb)
        time.sleep(ABORT_GRACE)    # mpiexec forwards the text before MPI_Abort kills the job
        world.Abort(1)

    sys.excepthook = abort_job
    _hook_installed = True


def _spin_seconds() -> float:
    """How long a wait polls without sleeping: 1 ms while every local worker has a core of its
    own; none when there are more workers than cores (a spinning worker would take the core from
    the one it waits for)."""
    from . import local_workers
    return 1e-3 if local_workers() <= (os.cpu_count() or 1) else 0.0


def wait(request: Any, timeout: float, where: str, rank: int) -> None:
    """Wait for a non-blocking MPI request, at most ``timeout`` seconds.

    Spins briefly (a collective on one machine completes in microseconds), then sleeps between
    polls so a waiting worker leaves the core to the others."""
    if request.Test():
        return
    start = time.monotonic()
    deadline, spin = start + timeout, _SPIN
    pause = 0.0
    while not request.Test():
        now = time.monotonic()
        if now > deadline:
            raise DistTimeout(f"{where}: rank {rank} waited {timeout:g} s for the other workers, who did "
                              "not arrive; a worker died, hangs, or runs a different program "
                              "(SYMJIT_DIST_TIMEOUT sets the bound)")
        if now - start < spin:
            continue
        if now - start < 0.05:      # the others are about to arrive: let them run first
            os.sched_yield()
            continue
        pause = min(max(pause * 2, 1e-5), 1e-3)
        time.sleep(pause)


def digest(text: str) -> int:
    """A 63-bit hash of ``text`` (the same in every process, unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1


_SPIN = _spin_seconds()
_MSG_BYTES = 480


def agree(world: Any, timeout: float, where: str, text: str, error: str | None = None) -> None:
    """A collective check that every rank is about to do the same thing.

    ``text`` describes this rank's call (keys, shapes, dtypes); ``error`` is the message of a local
    check that failed on this rank. Unless every rank passed its check with the same ``text``,
    every rank raises the same :class:`DistError`, naming the ranks and what each one did.
    """
    size, rank = world.Get_size(), world.Get_rank()
    mine = np.array([0 if error is None else 1, digest(text)], dtype=np.int64)
    everyone = np.empty((size, 2), dtype=np.int64)
    wait(world.Iallgather(mine, everyone), timeout, where, rank)
    if not everyone[:, 0].any() and (everyone[:, 1] == everyone[0, 1]).all():
        return
    note = (error if error is not None else text).encode()[:_MSG_BYTES]
    buf = np.zeros(_MSG_BYTES, dtype=np.uint8)
    buf[:len(note)] = np.frombuffer(note, dtype=np.uint8)
    notes = np.empty((size, _MSG_BYTES), dtype=np.uint8)
    wait(world.Iallgather(buf, notes), timeout, where, rank)
    said = [bytes(notes[r]).rstrip(b"\0").decode(errors="replace") for r in range(size)]
    failed = [r for r in range(size) if everyone[r, 0]]
    if len(failed) == 1:
        raise DistError(f"{where} failed on rank {failed[0]}: {said[failed[0]]}")
    if failed:
        detail = "; ".join(f"rank {r}: {said[r]}" for r in failed)
        raise DistError(f"{where} failed on ranks {', '.join(map(str, failed))}: {detail}")
    detail = "; ".join(f"rank {r} {said[r]}" for r in range(size))
    raise DistError(f"{where}: the workers disagree (every rank must make the same call): {detail}")
