"""Compile a bind's cold kernels on every core: worker processes fill the kernel cache, then the
binding process loads from it as on a warm bind (Inductor's compile workers, with numba's cache).

The executor lists the compiled functions its bound phases will call (:func:`units`): each distinct
kernel with the numba types of its arguments, in phase order (forward first), then the compiled
program functions that link them. :func:`precompile` keeps the ones numba's cache does not hold
yet and, when there are at least two and ``Config.compile_workers`` allows more than one process,
compiles them in a pool of worker processes forked from the binding process (they inherit its
imported generated modules and numba, so a worker starts in milliseconds): first the kernels, then,
once those are cached, the program functions. Each worker's compile is the one the binding
process would have made (the same source, types and numba), so the results are the same.

Forking is done while holding numba's compiler lock, so no other thread of the binding process is
inside numba at that moment; where ``fork`` is not available, compiles stay in the binding process.
A worker whose compile fails reports it, and the binding process compiles that unit itself (raising
numba's error there, as a serial bind would); a worker that dies is logged, and the binding process
compiles what is left. Whatever no worker compiled is compiled in the binding process, in the same
order (kernels, then program functions), one unit at a time, so the progress lines
(:mod:`symjit.compiler.progress`) count every compile. :class:`Origins` tells where each unit came
from (the bind's closing line).

Workers never outlive the binding process: each follows a :class:`~symjit.compiler.lifeline.Lifeline`
(SIGKILL from the kernel when the parent dies, on Linux, and a pipe that ends the worker when the
parent is gone, everywhere), so a bind killed by SIGKILL, ``timeout`` or an out-of-memory kill
leaves no worker behind, even one in the middle of a compile; a bind stopped by an exception
(Ctrl-C) ends its workers before it returns.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ..config import Config
from .lifeline import Lifeline, follow
from .progress import TICK_SECONDS, Progress, Tally

__all__ = ["Unit", "Origins", "auto_workers", "units", "uncached_programs", "is_cached", "state",
           "precompile"]

_LOG = logging.getLogger("symjit")

Unit = tuple[Any, tuple]   # (numba dispatcher, argument types)

_UNITS: list[Unit] = []    # what the forked workers compile, by index (inherited at fork)


def auto_workers(cfg: Config) -> int:
    """How many processes compile at once: ``Config.compile_workers``, else the cores this process
    may use divided by the distributed workers on this host (at least 1)."""
    if cfg.compile_workers is not None:
        return cfg.compile_workers
    from ..dist import local_workers
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores // local_workers())


def units(target: Any, module: Any, bound: dict[str, list]) -> tuple[list[Unit], list[Unit]]:
    """The (kernels, program functions) a program's bound phases call, each once, as units:
    kernels of every phase in phase order, then the phases' compiled program functions.
    ``bound`` is ``bind_phases``'s result for ``target`` (one with kernel modules: the CPU). A
    call whose compile signature the target does not give (``Target.signature`` is None: it
    compiles in the binding process, at the first call) is no unit."""
    kernels: dict[tuple, Unit] = {}
    programs: dict[tuple, Unit] = {}
    for steps in bound.values():
        for seg, arrays in steps:
            if seg.kind not in ("njit", "calls"):
                continue
            for call, args in target.prepare_calls(module, seg.launches, dict(zip(seg.vids, arrays))):
                fn = target.unit(call)
                if (sig := target.signature(args)) is not None:
                    kernels.setdefault((id(fn), sig), (fn, sig))
            if seg.kind == "njit":
                fn = getattr(module, seg.name)
                if (sig := target.signature(arrays)) is not None:
                    programs.setdefault((id(fn), sig), (fn, sig))
    return list(kernels.values()), list(programs.values())


def uncached_programs(target: Any, module: Any, bound: dict[str, list]) -> set[str]:
    """The names of the program functions (``njit`` segments) of ``bound`` (as for :func:`units`)
    that neither this process nor numba's cache holds for their arrays."""
    names = set()
    for steps in bound.values():
        for seg, arrays in steps:
            if seg.kind == "njit" and (sig := target.signature(arrays)) is not None \
                    and not is_cached(getattr(module, seg.name), sig):
                names.add(seg.name)
    return names


def _index_has(dispatcher: Any, sig: tuple) -> bool | None:
    """Whether numba's disk cache of ``dispatcher`` holds ``sig`` (None: it has no disk cache)."""
    from numba.core.caching import Cache
    cache = getattr(dispatcher, "_cache", None)
    if not isinstance(cache, Cache):
        return None
    key = cache._index_key(sig, dispatcher.targetctx.codegen())
    try:
        return key in _index(cache._cache_file)
    except Exception:   # an unreadable index: numba recompiles it
        return False


_INDEXES: dict[str, tuple[tuple, Any]] = {}


def _index(cache_file: Any) -> Any:
    """numba's index of one cache file, read again only when the file changed (its inode, size or
    modification time): a bind of many small programs asks it for every program function."""
    path = cache_file._index_path
    try:
        st = os.stat(path)
    except OSError:
        return {}
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    kept = _INDEXES.get(path)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    index = cache_file._load_index()
    _INDEXES[path] = (stamp, index)
    return index


def is_cached(dispatcher: Any, sig: tuple) -> bool:
    """Whether numba holds ``dispatcher`` compiled for ``sig``, in memory or in its disk cache
    (a dispatcher without a disk cache counts as cached: workers could not hand it back)."""
    return tuple(sig) in dispatcher.overloads or _index_has(dispatcher, sig) is not False


def state(dispatcher: Any, sig: tuple) -> str:
    """``'loaded'`` (compiled in this process), ``'disk'`` (in numba's disk cache) or ``'cold'``."""
    if tuple(sig) in dispatcher.overloads:
        return "loaded"
    return "disk" if _index_has(dispatcher, sig) else "cold"


def _misses(dispatcher: Any, sig: tuple) -> int:
    return dispatcher.stats.cache_misses.get(tuple(sig), 0)


class Origins:
    """Where each unit of one bind comes from: its state before the bind, numba's compile count
    then, and the units compile workers compiled. :meth:`tally` after the bind."""

    def __init__(self, kernels: list[Unit], programs: list[Unit]):
        self.kernels, self.programs = kernels, programs
        self.units = kernels + programs
        self.states = [state(*u) for u in self.units]
        self.misses = [_misses(*u) for u in self.units]
        self.by_workers: set[int] = set()

    def cold(self, units: list[Unit], offset: int) -> list[tuple[int, Unit]]:
        return [(offset + i, u) for i, u in enumerate(units) if self.states[offset + i] == "cold"]

    def tally(self) -> Tally:
        """The counts of the bind's closing line: a unit numba compiled in this process since the
        bind began counts as compiled here, even when a worker compiled it too (its entry could
        not be loaded)."""
        t = Tally()
        for i, u in enumerate(self.units):
            if self.states[i] == "loaded":
                t.loaded += 1
            elif _misses(*u) > self.misses[i] or (self.states[i] == "cold" and i not in self.by_workers):
                t.here += 1
            elif i in self.by_workers:
                t.workers += 1
            else:
                t.disk += 1
        return t


def _compile(index: int) -> tuple[int, float, str]:
    dispatcher, sig = _UNITS[index]
    start = time.perf_counter()
    try:
        dispatcher.compile(sig)
    except Exception as exc:   # the binding process compiles it again and raises there
        return index, time.perf_counter() - start, f"{type(exc).__name__}: {exc}"
    return index, time.perf_counter() - start, ""


def _fork_context() -> Any:
    try:
        return multiprocessing.get_context("fork")
    except ValueError:
        return None


def _wave(pool: ProcessPoolExecutor, indices: list[int], done: Callable[[int], None],
          progress: Progress) -> None:
    pending = {pool.submit(_compile, i) for i in indices}
    while pending:
        finished, pending = wait(pending, timeout=TICK_SECONDS, return_when=FIRST_COMPLETED)
        for fut in finished:
            index, seconds, error = fut.result()
            if error:
                _LOG.debug("compile worker: %s failed (%s); compiling it in this process", index, error)
            else:
                done(index)
        progress.tick()


def _in_workers(cold: list[tuple[int, Unit]], n_kernels: int, workers: int, ctx: Any,
                progress: Progress) -> set[int]:
    """Compile the ``(index, unit)`` pairs in a pool of ``workers`` forked processes, kernels (the
    first ``n_kernels``) first; return the indices compiled."""
    from numba.core.compiler_lock import global_compiler_lock
    global _UNITS
    _UNITS = [u for _, u in cold]
    compiled: set[int] = set()
    line = Lifeline()
    pool = None
    ok = False
    try:
        n = min(workers, len(_UNITS))
        with global_compiler_lock:   # no other thread is inside numba while the workers fork
            pool = ProcessPoolExecutor(n, mp_context=ctx, initializer=follow,
                                       initargs=(line.parent, line.read, line.write))
            for _ in range(n):
                pool.submit(int)     # fork every worker now, under the lock
        _wave(pool, list(range(n_kernels)), lambda i: _done(compiled, cold, i, progress), progress)
        _wave(pool, list(range(n_kernels, len(cold))), lambda i: _done(compiled, cold, i, progress),
              progress)
        ok = True
    except BrokenProcessPool as exc:
        ok = True
        _LOG.warning("compile workers stopped (%s); compiling the remaining kernels in this process", exc)
    finally:
        if not ok:
            line.close()     # an exception (Ctrl-C): every worker ends now, even mid-compile
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        line.close()
        _UNITS = []
    return compiled


def _done(compiled: set[int], cold: list[tuple[int, Unit]], i: int, progress: Progress) -> None:
    index, (fn, sig) = cold[i]
    compiled.add(index)
    progress.done((id(fn), sig))


def precompile(kernels: list[Unit], programs: list[Unit], workers: int,
               progress: Progress | None = None, parallel: bool = True) -> Origins:
    """Compile the units neither this process nor numba's cache holds: in ``workers`` forked
    processes (kernels, then program functions) when there are at least two such units, more than
    one worker, ``parallel`` (the disk cache is on) and ``fork``; then whatever is left in this
    process, in the same order. Returns where each unit came from (:class:`Origins`);
    ``progress`` counts the compiles."""
    progress = progress if progress is not None else Progress(None)
    origins = Origins(kernels, programs)
    cold = origins.cold(kernels, 0) + origins.cold(programs, len(kernels))
    progress.expect((id(fn), sig) for _, (fn, sig) in cold)
    ctx = _fork_context()
    movable = [(i, u) for i, u in cold if not is_cached(*u)]   # ones with a disk cache
    if parallel and workers >= 2 and len(movable) >= 2 and ctx is not None:
        n_kernels = sum(i < len(kernels) for i, _ in movable)
        origins.by_workers = _in_workers(movable, n_kernels, workers, ctx, progress)
    here = [(fn, sig) for i, (fn, sig) in cold if i not in origins.by_workers]
    if here:
        with progress.ticking():
            for fn, sig in here:
                fn.compile(sig)
                progress.done((id(fn), sig))
    return origins
