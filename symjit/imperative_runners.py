"""The runners of repeated imperative calls: a compiled one-operator program's function called
straight on the arrays' storage, without the call table, the checks or the argument bookkeeping of
:func:`symjit.imperative.invoke` (what a repeated ``mx.nd`` call, recorded or not, runs once its key
has been seen).

>>> import symjit as mx
>>> from symjit import imperative
>>> a = mx.nd.array([1.0, -2.0])
>>> call = imperative._lookup('relu', {}, [a], a.context)
>>> fast_runner(call, 1, [a])([a]).asnumpy().tolist()
[1.0, 0.0]
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .imperative_bound import BoundProgram
from .jitext import typeof
from .ndarray import NDArray

__all__ = ["fast_runner", "fast_into", "seen"]


def _entry(fn: Any, args: list) -> Any:
    """The compiled entry point of dispatcher ``fn`` for the types of ``args`` (the arrays of a
    call just made: C-contiguous NDArray storage), which skips the dispatcher's type resolution
    (~0.1 us); ``fn`` itself when there is none."""
    overloads = getattr(fn, "overloads", None)
    if overloads is None:
        return fn       # not a dispatcher (an ahead-of-time entry's function): numba stays out
    found = overloads.get(tuple(typeof(a) for a in args))
    return fn if found is None else found.entry_point


def _plain_step(call: BoundProgram, n_in: int) -> tuple | None:
    """``(function, argument template, [(argument, input)], [(argument, output)])`` of a CPU program
    of one compiled function whose buffers are the inputs' and outputs' own (no reshaped views);
    None for any other program."""
    if not call.ctx.device.host_memory or len(call.steps) != 1:
        return None
    fn, template, fills = call.steps[0]
    if isinstance(fn, functools.partial) or any(s.shape is not None for _, s in fills):
        return None
    return (fn, list(template), [(i, s.index) for i, s in fills if s.index < n_in],
            [(i, s.index - n_in) for i, s in fills if s.index >= n_in])


def fast_runner(call: BoundProgram, n_in: int, sample: list | None = None) -> Any:
    """For a :func:`_plain_step` program: ``run(arrays)`` returning the new output NDArray (a list
    for several), doing only what a call needs (allocate the outputs, fill the argument list, call);
    None for any other program. The runners read the storage without waiting for queued work
    (``NDArray._store``): their caller has run it."""
    step = _plain_step(call, n_in)
    if step is None:
        return None
    fn, base, ins, outs = step
    specs = list(call.outputs)
    empty, new = np.empty, NDArray.__new__
    if len(specs) == 1 and len(ins) == 1 and len(outs) == 1 and len(base) == 2 and ins[0][0] == 0:
        (shape, dtype), j_in = specs[0], ins[0][1]
        if sample is not None:
            fn = _entry(fn, [sample[j_in]._data, empty(shape, dtype)])

        def run1(arrays: Any) -> NDArray:
            o = empty(shape, dtype)
            a = arrays[j_in]
            fn(a._store, o)
            r = new(NDArray)
            r._store = o
            r._ctx = a._ctx       # the key says "host storage", not which cpu(i): the input's
            return r
        return run1

    if len(specs) == 1 and len(ins) == 2 and len(outs) == 1 and len(base) == 3 and outs[0][0] == 2:
        (shape, dtype), ((i0, j0), (i1, j1)) = specs[0], ins
        if sample is not None:
            probe = [None, None, empty(shape, dtype)]
            probe[i0], probe[i1] = sample[j0]._data, sample[j1]._data
            fn = _entry(fn, probe)

        def run2(arrays: Any) -> NDArray:
            o = empty(shape, dtype)
            args = [None, None, o]
            args[i0] = arrays[j0]._store
            args[i1] = arrays[j1]._store
            fn(*args)
            r = new(NDArray)
            r._store = o
            r._ctx = arrays[j0]._ctx
            return r
        return run2

    def run(arrays: Any) -> Any:
        results = [empty(shape, dtype) for shape, dtype in specs]
        args = base[:]
        for i, j in ins:
            args[i] = arrays[j]._store
        for i, j in outs:
            args[i] = results[j]
        fn(*args)
        wrapped = []
        for o in results:
            r = new(NDArray)
            r._store, r._ctx = o, arrays[0]._ctx
            wrapped.append(r)
        return wrapped[0] if len(wrapped) == 1 else wrapped
    return run


def fast_into(call: BoundProgram, n_in: int) -> Any:
    """Like :func:`fast_runner` for a one-output program writing into a given array:
    ``run(arrays, out)``; None for any other program."""
    step = _plain_step(call, n_in) if len(call.outputs) == 1 else None
    if step is None:
        return None
    fn, base, ins, outs = step
    out_pos = [i for i, _ in outs]

    def run_into(arrays: Any, out: NDArray) -> NDArray:
        args = base[:]
        for i, j in ins:
            args[i] = arrays[j]._store
        for i in out_pos:
            args[i] = out._store
        fn(*args)
        out._bump()
        return out
    return run_into


class _Seen:
    """An input of a fast call as its canonical call sees it (what the runners read)."""

    __slots__ = ("_store", "_ctx")


def seen(arrays: Any, shapes: list) -> list[_Seen]:
    looks = []
    for a, s in zip(arrays, shapes):
        v = _Seen()
        v._store, v._ctx = a._store.reshape(s), a._ctx
        looks.append(v)
    return looks
