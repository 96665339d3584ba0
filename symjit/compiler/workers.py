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
compiles what is left.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ..config import Config

__all__ = ["Unit", "auto_workers", "units", "is_cached", "precompile"]

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
    ``bound`` is ``bind_phases``'s result for ``target`` (one with kernel modules: the CPU)."""
    kernels: dict[tuple, Unit] = {}
    programs: dict[tuple, Unit] = {}
    for steps in bound.values():
        for seg, arrays in steps:
            if seg.kind not in ("njit", "calls"):
                continue
            for fn, args in target.prepare_calls(module, seg.launches, dict(zip(seg.vids, arrays))):
                kernels.setdefault((id(fn), sig := target.signature(args)), (fn, sig))
            if seg.kind == "njit":
                fn = getattr(module, seg.name)
                programs.setdefault((id(fn), sig := target.signature(arrays)), (fn, sig))
    return list(kernels.values()), list(programs.values())


def is_cached(dispatcher: Any, sig: tuple) -> bool:
    """Whether numba holds ``dispatcher`` compiled for ``sig``, in memory or in its disk cache
    (a dispatcher without a disk cache counts as cached: workers could not hand it back)."""
    from numba.core.caching import Cache
    if tuple(sig) in dispatcher.overloads:
        return True
    cache = getattr(dispatcher, "_cache", None)
    if not isinstance(cache, Cache):
        return True
    key = cache._index_key(sig, dispatcher.targetctx.codegen())
    try:
        return key in cache._cache_file._load_index()
    except Exception:   # an unreadable index: numba recompiles it; let the workers do that
        return False


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


def _wave(pool: ProcessPoolExecutor, first: int, count: int, done: Callable[[int], None]) -> None:
    futures = [pool.submit(_compile, i) for i in range(first, first + count)]
    for fut in as_completed(futures):
        index, seconds, error = fut.result()
        if error:
            _LOG.debug("compile worker: %s failed (%s); compiling it in this process", index, error)
        else:
            done(index - first)


def precompile(kernels: list[Unit], programs: list[Unit], workers: int,
               done: Callable[[Any], None] = lambda fn: None) -> int:
    """Compile the units numba's cache lacks in ``workers`` forked processes (kernels, then program
    functions); return how many the workers compiled (0: fewer than two cold units, one worker,
    or no ``fork``). ``done(dispatcher)`` is called as each finishes (the progress line)."""
    cold_k = [u for u in kernels if not is_cached(*u)]
    cold_p = [u for u in programs if not is_cached(*u)]
    ctx = _fork_context()
    if workers < 2 or len(cold_k) + len(cold_p) < 2 or ctx is None:
        return 0
    from numba.core.compiler_lock import global_compiler_lock
    global _UNITS
    _UNITS = cold_k + cold_p
    compiled = [0]

    def finished(units: list[Unit]) -> Callable[[int], None]:
        def one(i: int) -> None:
            compiled[0] += 1
            done(units[i][0])
        return one
    try:
        with global_compiler_lock:   # no other thread is inside numba while the workers fork
            pool = ProcessPoolExecutor(min(workers, len(_UNITS)), mp_context=ctx)
            for _ in range(min(workers, len(_UNITS))):
                pool.submit(int)     # fork every worker now, under the lock
        with pool:
            _wave(pool, 0, len(cold_k), finished(cold_k))
            _wave(pool, len(cold_k), len(cold_p), finished(cold_p))
    except BrokenProcessPool as exc:
        _LOG.warning("compile workers stopped (%s); compiling the remaining kernels in this process", exc)
    finally:
        _UNITS = []
    return compiled[0]
