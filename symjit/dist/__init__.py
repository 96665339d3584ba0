"""Distributed training over MPI: the ``dist_*`` KVStores and the ``symjit launch`` launcher.

A distributed program is N copies of one Python program started by an MPI launcher
(``symjit launch -n 2 python train.py``, or ``mpiexec -n 2 python train.py``); each copy is a
*worker* with a rank. :func:`world` tells a program its ``(rank, size)`` from the launcher's
environment without starting MPI, so iterators and log lines can use it before a KVStore exists.

- :mod:`symjit.dist.mpi`: starting MPI (``mpi4py``), the clear error when it is missing, waits with
  a timeout, and stopping every rank when one fails.
- :mod:`symjit.dist.sync`: ``dist_sync`` / ``dist_device_sync`` (bucketed allreduce, every worker
  applies the same update).
- :mod:`symjit.dist.async_`: ``dist_async`` (a server thread on rank 0 applies pushes as they come).
- :mod:`symjit.dist.launch`: ``symjit launch``.

>>> from symjit import dist
>>> dist.world({})
(0, 1)
>>> dist.world({'PMI_RANK': '1', 'PMI_SIZE': '2'})
(1, 2)

Threads: N workers on one machine that each start a thread per core (OpenBLAS's pool, Numba's)
oversubscribe it, and spinning threads then slow a step down tenfold or more. So each worker of a
job gets ``cores // local workers`` threads (at least 1) for OpenBLAS, OpenMP, MKL and Numba,
unless the user set those variables: :func:`thread_settings` computes them; ``symjit launch``
sets them for its workers, and ``import symjit`` sets them in a program started by ``mpiexec``
directly, if Numba and numpy's BLAS are not loaded yet.
"""
from __future__ import annotations

import os

__all__ = ["world", "rank_tag", "local_workers", "thread_settings", "THREAD_VARS"]

# (rank, size) variables set by MPI launchers: MPICH/Hydra and Intel MPI, Open MPI, Slurm's srun.
_WORLD_VARS = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
               ("SLURM_PROCID", "SLURM_NTASKS"))


def world(env: dict[str, str] | None = None) -> tuple[int, int]:
    """``(rank, size)`` of this process in the MPI job that started it; ``(0, 1)`` outside one.

    Read from the launcher's environment only: MPI is not started.
    """
    env = dict(os.environ) if env is None else env
    for rank_var, size_var in _WORLD_VARS:
        if env.get(rank_var, "").isdigit() and env.get(size_var, "").isdigit():
            rank, size = int(env[rank_var]), int(env[size_var])
            if 0 <= rank < size:
                return rank, size
    return 0, 1


def rank_tag(env: dict[str, str] | None = None) -> str:
    """``'Rank[r] '`` in a job of several workers (the prefix of per-worker log lines), else ``''``.

    >>> rank_tag({'PMI_RANK': '1', 'PMI_SIZE': '2'})
    'Rank[1] '
    """
    rank, size = world(env)
    return f"Rank[{rank}] " if size > 1 else ""


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def local_workers(env: dict[str, str] | None = None) -> int:
    """How many workers of this job run on this machine (1 outside a job)."""
    env = dict(os.environ) if env is None else env
    for var in ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"):
        if env.get(var, "").isdigit() and int(env[var]) > 0:
            return int(env[var])
    return world(env)[1]


def thread_settings(env: dict[str, str] | None = None, cores: int | None = None) -> dict[str, str]:
    """The thread-count variables to set for a worker of a job (none outside a job, none the
    user has set).

    >>> thread_settings({'PMI_RANK': '0', 'PMI_SIZE': '2', 'MPI_LOCALNRANKS': '2'}, cores=2)
    {'OMP_NUM_THREADS': '1', 'OPENBLAS_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1', 'NUMBA_NUM_THREADS': '1'}
    >>> thread_settings({}, cores=2)
    {}
    """
    env = dict(os.environ) if env is None else env
    workers = local_workers(env)
    if workers <= 1:
        return {}
    cores = cores if cores is not None else (os.cpu_count() or 1)
    per_worker = str(max(1, cores // workers))
    return {var: per_worker for var in THREAD_VARS if not env.get(var)}
