"""``symjit launch``: run N workers of a program under the installed ``mpiexec``.

``symjit launch -n 2 python train.py --epochs 3`` runs::

    mpiexec -n 2 [-f HOSTFILE] <python> -m symjit.dist.worker -- python train.py --epochs 3

Each rank is a small supervisor (:mod:`symjit.dist.worker`) that starts the program, waits for it
and, if it dies by a signal or exits with an error, says which rank it was before exiting with a
failure, so ``mpiexec`` stops the other ranks: a failed worker ends the whole job, with its rank
named, instead of leaving the others waiting. ``python``/``python3`` at the start of the command
mean this interpreter.

MXNet's ``tools/launch.py`` options map as: ``-n`` (workers) the same; ``-H`` (host file) the
same, passed to ``mpiexec`` (``-f`` for MPICH, ``--hostfile`` for Open MPI); ``-s`` (servers) is
accepted and ignored, because ``dist_async`` serves from a thread of rank 0 (see
:mod:`symjit.dist.async_`).

>>> build_command(2, ['python', 'train.py'], mpiexec='/usr/bin/mpiexec', flavour='mpich')[:3]
['/usr/bin/mpiexec', '-n', '2']
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

from ..base import MXNetError
from .mpi import MISSING_HELP

__all__ = ["find_mpiexec", "build_command", "launch"]


def find_mpiexec(explicit: str | None = None) -> str:
    """The ``mpiexec`` to use: ``explicit``, else the one beside this interpreter (a venv with
    ``symjit[dist]``), else the first on ``PATH``; a clear error naming what to install."""
    if explicit:
        found = shutil.which(explicit)
        if found is None:
            raise MXNetError(f"symjit launch: --mpiexec {explicit!r} is not an executable")
        return found
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("mpiexec")
    if found is None:
        raise MXNetError(f"symjit launch: no mpiexec was found (beside {sys.executable} or on PATH); "
                         f"{MISSING_HELP}")
    return found


def check_mpi4py() -> None:
    """A clear error when the workers could not start MPI."""
    if importlib.util.find_spec("mpi4py") is None:
        raise MXNetError(f"symjit launch: the Python package mpi4py is not installed in "
                         f"{sys.executable}; {MISSING_HELP}")


def flavour(mpiexec: str) -> str:
    """``'openmpi'`` or ``'mpich'`` (MPICH, Intel MPI and other Hydra-based launchers)."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MXNetError(f"symjit launch: cannot run {mpiexec} --version: {exc}") from exc
    text = out.stdout + out.stderr
    return "openmpi" if ("Open MPI" in text or "OpenRTE" in text) else "mpich"


def build_command(n: int, command: list[str], mpiexec: str, flavour: str = "mpich",
                  hostfile: str | None = None) -> list[str]:
    """The ``mpiexec`` command line that runs ``command`` as ``n`` supervised workers."""
    cmd = [mpiexec, "-n", str(n)]
    if hostfile:
        cmd += ["--hostfile", hostfile] if flavour == "openmpi" else ["-f", hostfile]
    if flavour == "openmpi" and hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd + [sys.executable, "-m", "symjit.dist.worker", "--", *command]


def launch(n: int, command: list[str], hostfile: str | None = None, mpiexec: str | None = None,
           servers: int | None = None) -> int:
    """Run ``command`` as ``n`` workers; the exit status of the job."""
    if n < 1:
        raise MXNetError(f"symjit launch: -n must be at least 1, got {n}")
    if not command:
        raise MXNetError("symjit launch: give the program to run, e.g. symjit launch -n 2 python train.py")
    if hostfile is not None and not os.path.isfile(hostfile):
        raise MXNetError(f"symjit launch: host file {hostfile!r} does not exist")
    check_mpi4py()
    exe = find_mpiexec(mpiexec)
    if servers:
        print(f"symjit launch: -s {servers} ignored (dist_async serves from rank 0; no server "
              "processes are started)", file=sys.stderr)
    cmd = build_command(n, command, exe, flavour(exe), hostfile)
    status = subprocess.run(cmd).returncode
    if status != 0:
        print(f"symjit launch: the job of {n} workers failed (mpiexec exit status {status})",
              file=sys.stderr)
    return status
