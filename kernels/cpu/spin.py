"""A short wait without the GIL: how an idle worker of :mod:`symjit.parts` watches for its next task.

A worker thread that blocks on its queue sleeps in the kernel, and waking it costs tens of
microseconds, as much as a split loop of 2^17 elements saves. So after each task a worker first
spins on a counter its pool raises with every task it hands out (:func:`spin_while`, compiled
``nogil``: the caller's Python code runs meanwhile), for about as long as numba's OpenMP threads
and OpenBLAS's spin after their regions (:data:`TICKS` of the processor's time-stamp counter,
~0.4 ms), then blocks.

>>> import numpy as np
>>> flag = np.zeros(1, np.int64)
>>> spin_while(flag, 0, 1000)      # nothing announced: the wait runs out
0
>>> flag[0] = 3
>>> spin_while(flag, 0, TICKS)     # announced: the new count, at once
3

The parts of a kernel split into parts that has phases (pad, then tiles, then unpad) meet at a
:func:`barrier` between them, on the ``sync`` array the host gives each call (:func:`new_sync`):

>>> sync = new_sync()
>>> barrier(sync, 1)               # a call in one part never waits
True
>>> sync[SYNC_ABORT] = 1          # the host marks the call failed: a waiting part returns False
>>> barrier(sync, 2)
False
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from .sync_state import SYNC_ABORT, new_sync  # noqa: F401  (re-exported: the barrier's state)

__all__ = ["spin_while", "barrier", "new_sync", "TICKS", "SETTLE", "SYNC_ABORT", "NAP_MICROS"]

TICKS = 1_000_000
"""Time-stamp counter ticks a worker spins before it blocks: ~0.3-0.5 ms at our machines' 2-3.4 GHz."""
SETTLE = 8_000
"""Ticks a spinning thread waits once its counter moved (~3 us): the raising thread's next release
of the GIL (entering its own kernel, or its own spin) comes within them."""
_MOST_READS = 1 << 26
"""Reads at most, wherever the counter does not advance (a processor without one reads 0)."""


@intrinsic
def _load_acquire(typingctx, arr, idx):
    """``arr[idx]`` of an int64 array as an atomic load (acquire): never hoisted out of a loop."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64 and isinstance(idx, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        return builder.load_atomic(ptr, "acquire", 8)
    return types.int64(arr, idx), codegen


@intrinsic
def _ticks(typingctx):
    """The processor's time-stamp counter (LLVM's ``readcyclecounter``)."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), []),
                                            "llvm.readcyclecounter")
        return builder.call(fn, [])
    return types.int64(), codegen


@njit(cache=True, nogil=True)
def spin_while(flag, seen, ticks, settle=0):
    """``flag[0]`` once it differs from ``seen``, or ``seen`` after ``ticks`` of the time-stamp
    counter (at most :data:`_MOST_READS` reads). Once it differs, ``settle`` more ticks pass
    before it returns: the thread that raised it is then past its next release of the GIL, which
    the returning thread takes without sleeping (a sleeping thread wakes tens of microseconds
    later)."""
    start = _ticks()
    for _ in range(_MOST_READS):
        v = _load_acquire(flag, 0)
        if v != seen:
            now = _ticks()
            for _ in range(_MOST_READS):
                if _ticks() - now > settle:
                    break
            return v
        if _ticks() - start > ticks:
            break
    return seen


@intrinsic
def _fetch_add(typingctx, arr, idx, val):
    """``arr[idx] += val`` of an int64 array as one atomic step (sequentially consistent); the
    value before it."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64 and isinstance(idx, types.Integer)
            and isinstance(val, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        v = context.cast(builder, args[2], sig.args[2], types.int64)
        return builder.atomic_rmw("add", ptr, v, "seq_cst")
    return types.int64(arr, idx, val), codegen


@intrinsic
def _nap(typingctx, micros):
    """``usleep(micros)``: a waiting part gives its core up (a part it waits for, or BLAS's threads
    running the phase between, may need it)."""
    if not isinstance(micros, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), [ir.IntType(32)]),
                                            "usleep")
        builder.call(fn, [builder.trunc(args[0], ir.IntType(32))])
        return context.get_dummy_value()
    return types.none(micros), codegen


NAP_MICROS = 20
"""Microseconds a part waiting at a :func:`barrier` sleeps between reads once its spin ran out."""


@njit(cache=True, nogil=True)
def barrier(sync, parts, ticks=TICKS):
    """Wait until all ``parts`` parts of the call have reached this barrier (they run at the same
    time on the host's threads, :mod:`symjit.parts`); True, or False once ``sync[SYNC_ABORT]`` is
    raised (another part failed: the caller returns). A waiting part spins for ``ticks`` of the
    time-stamp counter (``0`` where the wait is long: a phase one part runs alone on BLAS's
    threads), then sleeps :data:`NAP_MICROS` between reads."""
    if parts <= 1:
        return True
    gen = _load_acquire(sync, 1)
    if _fetch_add(sync, 0, 1) == parts - 1:   # the last to arrive: reset, then release the others
        _fetch_add(sync, 0, -parts)
        _fetch_add(sync, 1, 1)
        return True
    start = _ticks()
    while _load_acquire(sync, 1) == gen:
        if _load_acquire(sync, SYNC_ABORT) != 0:
            return False
        if _ticks() - start > ticks:
            _nap(NAP_MICROS)
    return True
