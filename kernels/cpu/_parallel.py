"""The decorator of the kernels that split their work over threads (numba's ``prange``), and the
size from which the compiler calls them.

Memory-bound kernels (BatchNorm, max pooling, the convolution bias gradient) run their channels,
planes or filters on both cores: on a 2-core Intel Xeon of ours one core reads ~6 GB/s, two read
~12 GB/s, and these kernels ran 1.6-2x faster on two threads (``docs/performance.md``, "Two
cores for BatchNorm and max pooling").
How many threads they get is :mod:`symjit.threads`' policy, the same count as BLAS's, set on
numba (``numba.set_num_threads``) by the executor's calling thread.

numba's ahead-of-time compiler (pycc, :mod:`symjit.compiler.aot`) cannot compile a ``parallel``
function, so no entry holds a call of these kernels (``aot.threaded_kernels``); its builder
process, which imports them all the same, sets :data:`SERIAL_VARIABLE`, under which they are the
serial loops they are with ``prange`` read as ``range``, start no threads and are not written to
numba's cache (whose entries would not say which form they hold).
"""
from __future__ import annotations

import os

import numba

from symjit.jitext import unique_parallel_names
from symjit.threads import SERIAL_VARIABLE, SPLIT_MIN

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit

unique_parallel_names()   # before any parallel kernel compiles (see there)

__all__ = ["pjit", "part_range", "SPLIT_MIN", "PARTS", "SERIAL_VARIABLE", "SERIAL"]

SERIAL = os.environ.get(SERIAL_VARIABLE) == "1"
PARTS = 32
"""Slices a threaded kernel cuts its planes into (numba's scheduler hands them to the threads in
even runs; a kernel cannot ask numba for the thread count and stay in numba's disk cache)."""

pjit = njit(cache=not SERIAL, nogil=True, parallel=not SERIAL)


@njit(cache=True, nogil=True)
def part_range(t, parts, n):
    """Items ``[start, stop)`` of part ``t`` when ``n`` items are cut into ``parts`` even runs."""
    return t * n // parts, (t + 1) * n // parts

if not SERIAL:
    # Start numba's threading layer now: machine code loaded from numba's cache that calls a
    # threaded kernel (a program function) links against the layer's symbols, which exist only
    # once it runs ("LLVM ERROR: Symbol not found: allocate_sched" otherwise, an abort).
    numba.get_num_threads()

