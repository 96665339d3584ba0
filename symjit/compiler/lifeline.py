"""Child processes that end with the process that started them.

symjit's compile workers (forked, :mod:`symjit.compiler.workers`) and ahead-of-time builders that a
program waits for (:mod:`symjit.compiler.aot`) must not outlive it, however it ends: an exception,
Ctrl-C, ``timeout``'s SIGTERM, an out-of-memory kill or SIGKILL, which runs no code of the dying
process. Two mechanisms, each enough on its own:

* on Linux, the child asks the kernel for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``
  through ctypes), which stops it wherever it is, in the middle of a compile too;
* everywhere, a pipe whose write end only the parent holds (:class:`Lifeline`): a thread of the
  child blocks reading the other end and ends the process (``os._exit``) when the read returns,
  which happens when the last write end closes, that is when the parent is gone.

The child calls :func:`follow` first thing; it also checks that its parent is still the process
that started it (the parent may die between the fork and the ``prctl``).

>>> line = Lifeline()
>>> line.parent == os.getpid()
True
>>> line.close()
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

__all__ = ["Lifeline", "follow"]

_PR_SET_PDEATHSIG = 1
EXIT_CODE = 70   # what a child ended by its lifeline exits with


def _kill_with_parent() -> None:
    """Linux: SIGKILL this process when the thread that started it ends (the compile workers and
    builders are started by the thread that then waits for them)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):   # no libc prctl: the pipe is enough
        pass


def _watch(fd: int) -> None:
    def run() -> None:
        try:
            while os.read(fd, 1):   # the parent never writes: returns b"" once it is gone
                pass
        except OSError:
            pass
        os._exit(EXIT_CODE)
    threading.Thread(target=run, name="symjit-lifeline", daemon=True).start()


def follow(parent: int, fd: int | None = None, close: int | None = None) -> None:
    """In a child started by process ``parent``: end this process when ``parent`` dies. ``fd`` is
    the read end of the parent's :class:`Lifeline` (None: the ``prctl`` alone); ``close`` a
    descriptor to close first (a forked child's copy of the write end)."""
    if close is not None:
        os.close(close)
    _kill_with_parent()
    if fd is not None:
        _watch(fd)
    if os.getppid() != parent:   # the parent died before the prctl took effect
        os._exit(EXIT_CODE)


class Lifeline:
    """The parent's side: a pipe. Children get ``read`` (forked ones also close their copy of
    ``write`` through :func:`follow`); :meth:`close` once the children are done or must stop."""

    def __init__(self) -> None:
        self.parent = os.getpid()
        self.read, self.write = os.pipe()
        self._open = True

    def close(self) -> None:
        """Close both ends: every child following this lifeline ends."""
        if self._open:
            self._open = False
            os.close(self.read)
            os.close(self.write)
