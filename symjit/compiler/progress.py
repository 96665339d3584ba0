"""What a long bind tells the user while it compiles, and the one line it ends with.

A bind that compiles for longer than ``Config.progress_seconds`` (2 s) writes its progress to
stderr, in any context: on a terminal one line rewritten in place, elsewhere (a log file, a
notebook, CI) plain lines, one every ``Config.progress_interval`` seconds (5 s)::

    symjit: compiling kernels 5/27, 12 s, about 40 s left

(kernels and program functions compiled so far out of those the bind has to compile, the time
since the bind began, and the time left at the rate so far; ``Rank[r] symjit: ...`` in a
distributed job). It ends with one line saying where
every compiled function the bind needs came from; the four counts add up to the total::

    symjit: bind: 27 kernels (17 distinct) in 62.8 s: 31 compiled functions = 3 compiled here
    + 14 compiled by worker processes + 10 from the disk cache + 4 already loaded; ...

A quicker bind writes nothing. ``SYMJIT_PROGRESS=0`` (``Config.progress``) switches the lines
off, and so does setting the ``symjit`` logger above INFO (``logging.getLogger("symjit")
.setLevel(logging.WARNING)``); the closing line then goes to the ``symjit`` logger at INFO, as it
does at DEBUG when it was written to stderr.

Lines are written by the binding thread as compiles finish and, while one compile runs long, by a
ticker thread that exists only during :meth:`Progress.ticking` (a daemon, stopped and joined when
the compile returns or raises, so it neither outlives the bind nor keeps the process alive).

>>> import io
>>> from symjit.config import Config
>>> out = io.StringIO()
>>> p = Progress(Config(progress_seconds=0.0, progress_interval=0.0), out)
>>> p.expect(["k0", "k1"]); p.done("k0")
>>> out.getvalue().split(",")[0]
'symjit: compiling kernels 1/2'
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..config import Config
from ..dist import rank_tag

__all__ = ["Progress", "Tally", "summary"]

_LOG = logging.getLogger("symjit")
TICK_SECONDS = 0.25      # how often the ticker thread looks whether a line is due
TTY_REFRESH = 0.5        # how often a terminal's line is rewritten


@dataclasses.dataclass
class Tally:
    """Where each compiled function (a kernel or program function, for one argument-type
    signature) a bind needs came from; the counts add up to :attr:`total`."""

    here: int = 0       # compiled by numba in the binding process
    workers: int = 0    # compiled by compile worker processes (then loaded from the disk cache)
    disk: int = 0       # found in the disk cache (compiled by an earlier run)
    loaded: int = 0     # already in this process (another program of this process uses it)

    @property
    def total(self) -> int:
        return self.here + self.workers + self.disk + self.loaded


def summary(kernels: int, distinct: int, tally: Tally, seconds: float, cfg: Config) -> str:
    """The closing line of a bind.

    >>> summary(5, 3, Tally(here=2, disk=1), 3.04, Config(cache=False))
    'bind: 5 kernels (3 distinct) in 3.0 s: 3 compiled functions = 2 compiled here + 0 compiled by \
worker processes + 1 from the disk cache + 0 already loaded'
    """
    text = (f"bind: {kernels} kernels ({distinct} distinct) in {seconds:.1f} s: {tally.total} compiled "
            f"functions = {tally.here} compiled here + {tally.workers} compiled by worker processes + "
            f"{tally.disk} from the disk cache + {tally.loaded} already loaded")
    if cfg.cache and tally.here + tally.workers:
        text += (f"; kept in the kernel cache ({Path(cfg.cache_dir) / 'kernels'}), so later runs load "
                 "them instead of compiling")
    return text


def _silenced() -> bool:
    """Whether the user set the ``symjit`` logger above INFO (or disabled it)."""
    log = logging.getLogger("symjit")
    return log.disabled or log.level > logging.INFO


class Progress:
    """The progress lines of one bind (see the module's documentation). ``cfg`` None: silent.
    Keys passed to :meth:`expect` and :meth:`done` are whatever identifies a compile."""

    def __init__(self, cfg: Config | None, stream: Any = None, start: float | None = None):
        self.on = cfg is not None and cfg.progress and not _silenced()
        self.stream = stream if stream is not None else sys.stderr
        self.on = self.on and self.stream is not None   # no stderr at all (pythonw)
        self.start = time.perf_counter() if start is None else start
        self.threshold = cfg.progress_seconds if cfg is not None else 0.0
        self.interval = cfg.progress_interval if cfg is not None else 0.0
        self.tty = self.on and bool(getattr(self.stream, "isatty", lambda: False)())
        self.todo: set = set()
        self.finished: set = set()
        self.shown = False
        self._began: float | None = None   # when the first compile was expected
        self._last = float("-inf")
        self._width = 0
        self._lock = threading.Lock()
        self._tag = rank_tag() + "symjit: "   # ``Rank[r] symjit: `` in a distributed job

    def expect(self, keys: Iterable[Any]) -> None:
        """Compiles the bind is about to make."""
        self.todo.update(keys)
        if self._began is None and self.todo:
            self._began = time.perf_counter()

    def done(self, key: Any) -> None:
        """One compile finished."""
        self.finished.add(key)
        self.tick()

    def line(self, now: float) -> str:
        """The progress line at ``now``."""
        done, total = len(self.finished & self.todo), len(self.todo)
        text = f"{self._tag}compiling kernels {done}/{total}, {now - self.start:.0f} s"
        if 0 < done < total and self._began is not None:
            left = (now - self._began) / done * (total - done)
            text += f", about {left:.0f} s left"
        return text

    def tick(self) -> None:
        """Write a progress line if one is due."""
        if not self.on:
            return
        now = time.perf_counter()
        if now - self.start < self.threshold:
            return
        if now - self._last < (TTY_REFRESH if self.tty else self.interval):
            return
        self._last = now
        self._write(self.line(now), final=False)

    def _write(self, text: str, final: bool) -> None:
        if not self._lock.acquire(blocking=False):   # the other thread is writing: skip this one
            return
        try:
            if self.tty:
                pad = max(0, self._width - len(text))
                self.stream.write("\r" + text + " " * pad + ("\n" if final else ""))
                self._width = len(text)
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
            self.shown = True
        except (OSError, ValueError):   # a closed or broken stream: stop writing
            self.on = False
        finally:
            self._lock.release()

    @contextlib.contextmanager
    def ticking(self) -> Iterator[None]:
        """While the body runs, a daemon thread writes the lines that fall due (a single compile
        may run for a minute); it is stopped and joined when the body returns or raises."""
        if not self.on:
            yield
            return
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(TICK_SECONDS):
                self.tick()
        thread = threading.Thread(target=run, name="symjit-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def close(self, text: str) -> None:
        """End the bind with ``text``: on stderr when the bind took longer than the threshold
        (and the lines are on), logged at DEBUG then; otherwise logged at INFO when the bind took
        longer than the threshold, at DEBUG when not."""
        long = time.perf_counter() - self.start >= self.threshold
        if self.on and long:
            self._write(self._tag + text, final=True)
            _LOG.debug("%s", text)
        else:
            _LOG.log(logging.INFO if long else logging.DEBUG, "%s", text)
