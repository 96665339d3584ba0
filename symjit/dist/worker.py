"""One rank of ``symjit launch``: run the program, report with the rank if it fails.

``python -m symjit.dist.worker -- python train.py ...`` (started by ``mpiexec``) runs the program
as a child process that inherits the rank's MPI environment (including MPICH's PMI descriptor),
with the thread counts of :func:`symjit.dist.thread_settings` (one share of the machine's cores
per local worker, unless set by the user), waits for it, and on failure writes ``symjit launch: rank R ...`` to stderr and exits with a
failure status, so the MPI launcher stops the other ranks.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from . import thread_settings, world


def _command(argv: list[str]) -> list[str]:
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise SystemExit("symjit.dist.worker: no program given")
    if argv[0] in ("python", "python3"):
        argv = [sys.executable, *argv[1:]]
    return argv


def _die_with_parent() -> None:
    """In the child (Linux): be killed if this supervisor is, so no rank outlives the job."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the program; its exit status (128 + signal number when a signal killed it)."""
    command = _command(sys.argv[1:] if argv is None else argv)
    rank, size = world()
    fds = [int(os.environ["PMI_FD"])] if os.environ.get("PMI_FD", "").isdigit() else []
    env = {**os.environ, **thread_settings()}
    try:
        child = subprocess.Popen(command, pass_fds=fds, env=env,
                                 preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    except OSError as exc:
        print(f"symjit launch: rank {rank} of {size} could not start {command[0]!r}: {exc}",
              file=sys.stderr, flush=True)
        return 127
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    status = child.wait()
    if status < 0:
        name = signal.Signals(-status).name
        print(f"symjit launch: rank {rank} of {size} (pid {child.pid}) was killed by signal {name}",
              file=sys.stderr, flush=True)
        return 128 - status
    if status != 0:
        print(f"symjit launch: rank {rank} of {size} (pid {child.pid}) exited with status {status}",
              file=sys.stderr, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
