"""The lazy engine's fast path: a queue that follows the structure of a queue it ran before.

A training loop queues the same calls every step: the same operators with the same params, on
the same arrays (or arrays of the same shapes made anew), in the same order. The engine
(:mod:`symjit.lazy`) remembers each queue it ran by the generic path as a :class:`Trace`: per
call its operator, params, which buffers it reads and writes; per buffer what it is (an array made
before the queue, a number operand, a queued call's output), its shape, dtype and byte span. The
next queue whose first call matches a remembered queue's first call *follows* it (:class:`Follower`):
each call is checked against the call expected at its position (the operator and params compared,
each array checked to be the expected buffer: the very array seen before, or one over the same
bytes, or an array of the expected shape that overlaps none of the others), its output allocated,
and nothing else is done; no buffer table, no inferred shapes, no structure key. When the queue
runs, a followed queue that is complete (its last call the remembered one's) and whose results
nobody dropped differently runs the remembered compiled program, its entry point called straight on
the arrays' storage. Any mismatch (another operator, param, shape, dtype, data flow, an array
partly overlapping another, a read before the queue is complete, an output freed or kept that was
not before) hands the calls followed so far to the generic queue, which goes on from there; so the
fast path only ever runs what the generic path would have run, on the same buffers.

A queue of a single call (the call, then a read of its result) gains nothing from queueing: once
such a queue has run twice in a row, calls like its call (operator, params, ``out`` given or not,
the first array's shape) that would start a queue run at once, unless the queue that came after
the last one last time starts with such a call.

>>> import symjit as mx
>>> from symjit import lazy
>>> w, g = mx.nd.ones((4,)), mx.nd.ones((4,))
>>> with lazy.enabled(replays=0):
...     for step in range(3):
...         w[:] -= 0.5 * g
...         mx.nd.waitall()
...     followed = lazy.stats()['followed']
>>> w.asnumpy().tolist(), followed >= 2
([-0.5, -0.5, -0.5, -0.5], True)
"""
from __future__ import annotations

import ctypes
import weakref
from typing import Any

import numpy as np

from .base import MXNetError
from .imperative_runners import _entry
from .ndarray import NDArray, storage
from .ndarray.ndarray import _wrap_fast

__all__ = ["EXT", "PRIVATE", "FRESH", "PROGRAM", "REPLAY", "DROPPED", "SINGLE",
           "Trace", "Follower", "address", "root"]

EXT, PRIVATE, FRESH = 0, 1, 2
"""Buffer kinds: an array made before the queue, a number operand's array, a queued call's output."""
PROGRAM, REPLAY, DROPPED, SINGLE = "program", "replay", "dropped", "single"
"""How a remembered queue ran: its compiled program; call by call (seen the first time); not at
all (nothing it wrote was still held); one call alone, call by call."""

MAX_TRACES = 64
"""The most first calls remembered queues are found by (two queues each)."""

_char_at, _address_of = ctypes.c_char.from_buffer, ctypes.addressof


def address(store: np.ndarray) -> int:
    """The address of ``store``'s first byte (~0.6 us; numpy's ``ctypes.data`` takes ~2.5 us).

    >>> a = np.zeros(4, np.float32)
    >>> address(a[1:]) - address(a)
    4
    """
    try:
        return _address_of(_char_at(store))
    except TypeError:        # not writable or not contiguous: numpy's own way
        return store.ctypes.data


def root(store: np.ndarray) -> np.ndarray:
    """The array whose memory ``store`` views (``store`` itself when it owns it).

    >>> a = np.zeros(4)
    >>> root(a[1:][1:]) is a
    True
    """
    while type(store.base) is np.ndarray:
        store = store.base
    return store


class Trace:
    """A queue run by the generic path, as the next queues follow it: per call ``(operator,
    params as given, number of arrays, input buffers, output buffer, out given, shape, dtype)``;
    per buffer its kind, shape, dtype, byte span and (weakly) the array and the memory's owner
    seen; which outputs were still held; how it ran (``mode``) and its compiled program. ``ops``,
    ``key`` and ``gcalls`` are the generic queue's own records of the calls, which a queue that
    leaves the fast path takes over."""

    __slots__ = ("ops", "key", "gcalls", "ctx", "mode", "program", "key0", "calls", "kinds",
                 "shapes", "dtypes", "spans", "objs", "roots", "kept", "firsts", "first", "next", "steps",
                 "__weakref__")

    def __init__(self, ops: list, key: list, gcalls: list, bufs: list, arrays: list, ctx: Any,
                 mode: str, program: Any):
        self.ops, self.key, self.gcalls, self.ctx = ops, key, gcalls, ctx
        self.mode, self.program = mode, program
        self.key0 = gcalls[0][0]
        self.kinds = [b.kind for b in bufs]
        self.calls = [(p[0], p[1], p[2], ins, t, given, op[4], op[5],
                       tuple(self.kinds[i] for i in ins), self.kinds[t])
                      for (p, ins, t, given), op in zip(gcalls, ops)]
        self.shapes = [b.shape for b in bufs]
        self.dtypes = [b.dtype for b in bufs]
        self.spans = [(b.start, b.end) if b.kind == EXT else None for b in bufs]
        self.objs = [weakref.ref(b.store) if b.kind == EXT else None for b in bufs]
        self.roots = [weakref.ref(root(b.store)) if b.kind == EXT else None for b in bufs]
        self.kept = [(b.index, arrays[b.index] is not None) for b in bufs if b.kind == FRESH]
        self.firsts = [0]           # the buffers the first j calls touch: indices below firsts[j]
        for _, ins, t, _ in gcalls:
            self.firsts.append(max(self.firsts[-1], t + 1, *(i + 1 for i in ins)))
        first = self.calls[0]
        self.first = (first[5], self.shapes[first[3][0]], self.kinds[first[3][0]] == PRIVATE) \
            if first[3] else (first[5], None, False)
        self.next: Trace | None = None    # the queue that came after this one last time
        self.steps: list | None = None    # the program's steps on the queue's buffers (first run)

    @staticmethod
    def usable(bufs: list) -> bool:
        """Whether a queue of buffers ``bufs`` can be followed: every buffer read or written
        (a call that could not join the queue can leave one registered that no call uses)."""
        return all(b.read or b.writes for b in bufs)


class Follower:
    """The fast path's state for the queue being filled (see the module docstring): the
    remembered queue followed (``trace``), the calls matched so far (``pos``), each buffer's
    array (``cur``: the storage, or a weak reference for a call's output), the byte spans of
    arrays that are not the memory seen before (``loose``), and ``off`` once the queue left the
    fast path (or from its start while ``on`` is False: the generic path only). The engine
    calls it under its lock."""

    def __init__(self, engine: Any, max_ops: int):
        self.engine, self.max_ops = engine, max_ops
        self.on = True
        self.followed = 0       # calls queued on the fast path (counted here: it is cheaper)
        self.eager = 0          # calls run at once as a remembered queue of that call alone
        self.traces: dict[tuple, list[Trace]] = {}
        self.singles: dict[tuple, Trace] = {}
        self.single_ops: frozenset = frozenset()     # the operators of singles' first calls
        self.alone: Trace | None = None     # the last queue run, when it was one call alone
        self.last: Trace | None = None
        self.restart()

    def restart(self) -> None:
        """A new, empty queue: the next call looks for a remembered queue to follow."""
        self.trace: Trace | None = None
        self.pos = 0
        self.off = not self.on
        self.cur: list = []
        self.loose: dict[int, tuple] = {}

    def forget(self) -> None:
        """Forget every remembered queue."""
        self.traces.clear()
        self.singles.clear()
        self.single_ops = frozenset()
        self.alone = None
        self.last = None
        self.restart()

    # -- remembering -----------------------------------------------------------------------------
    def learn(self, ops: list, key: list, gcalls: list, bufs: list, arrays: list, ctx: Any,
              mode: str, program: Any) -> None:
        """Remember the queue the generic path just ran (a queue of one call alone, when the
        last queue was that one too: that calls like it run at once from now on)."""
        if not gcalls or not Trace.usable(bufs):
            return
        tr = Trace(ops, key, gcalls, bufs, arrays, ctx, mode, program)
        if mode == SINGLE:
            if self.alone is None or self.alone.calls != tr.calls:
                self.alone = tr       # its first time in a row: no guess yet
                return
            self.singles.pop(tr.key0, None)
            self.singles[tr.key0] = tr
            while len(self.singles) > MAX_TRACES:
                del self.singles[next(iter(self.singles))]
            self.single_ops = frozenset(k[0] for k in self.singles)
            return
        self.alone = None
        found = self.traces.pop(tr.key0, [])
        self.traces[tr.key0] = [tr, *[t for t in found if t.calls != tr.calls][:1]]
        while len(self.traces) > MAX_TRACES:
            del self.traces[next(iter(self.traces))]
        self._chain(tr)

    def _chain(self, tr: Trace) -> None:
        self.alone = None
        if self.last is not None:
            self.last.next = tr
        self.last = tr

    def single(self, called: str, args: tuple, kwargs: dict, out: Any) -> bool:
        """Whether a call that would start a queue is like the call of a queue of that call
        alone that ran twice in a row (the operator, params, number of arrays, ``out`` given or
        not, the first array's shape and whether it is a number's), which then runs at once,
        unless the queue that came after the last one last time starts with such a call. A guess
        (a call run at once is always right), so it takes no lock."""
        try:
            key0 = (called, tuple(kwargs.items()) if kwargs else (), len(args))
            given, shape, number = self.singles[key0].first
        except (KeyError, TypeError):        # none, or an unhashable param
            return False
        a = args[0]
        if (out is None) is given or type(a) is not NDArray or a._store.shape != shape \
                or a._number != number:
            return False
        nxt = self.last.next if self.last is not None else None
        if nxt is not None and nxt.key0 == key0:
            return False
        self.eager += 1
        return True

    # -- following -------------------------------------------------------------------------------
    def call(self, called: str, args: tuple, kwargs: dict, out: Any) -> Any:
        """The call ``called(*args, out=out, **kwargs)`` queued as the next call of the followed
        queue: its output (``out``, or a new array); None to leave it (and the rest of the queue)
        to the generic path."""
        tr = self.trace
        if tr is None:
            return self._first(called, args, kwargs, out)
        j = self.pos
        calls = tr.calls
        if j < len(calls):
            e = calls[j]
            found = self._match(e, called, args, kwargs, out)
            if found is not None:
                self.pos = j + 1
                self.followed += 1
                if found is True:
                    st = np.empty(e[6], e[7])
                    self.cur[e[4]] = weakref.ref(st)
                    return _wrap_fast(st, tr.ctx)
                found._bump()
                return found
        elif j >= self.max_ops and self.ready():     # a full queue as remembered: it runs, then
            self.engine._flush()                     # the call starts the next one
            return self.call(called, args, kwargs, out)
        self.leave()
        return None

    def _first(self, called: str, args: tuple, kwargs: dict, out: Any) -> Any:
        """:meth:`call` for a queue's first call: which remembered queue does it start (the
        queue that came after the last one last time, else the last two that started so)?"""
        engine = self.engine
        if not engine.ops:
            try:
                key0 = (called, tuple(kwargs.items()) if kwargs else (), len(args))
                found = self.traces.get(key0, ())
            except TypeError:        # an unhashable param: the generic path says no
                found = ()
            nxt = self.last.next if self.last is not None else None
            if nxt is not None and nxt.key0 == key0:
                found = [nxt, *[t for t in found if t is not nxt]]
            for tr in found:
                self.trace, self.cur = tr, [None] * len(tr.kinds)
                if self.loose:
                    self.loose = {}
                if self._match(tr.calls[0], called, args, kwargs, out) is not None:
                    return self.call(called, args, kwargs, out)     # matches again, cheaply
        self.restart()
        self.off = True
        return None

    def _match(self, e: tuple, called: str, args: tuple, kwargs: dict, out: Any) -> Any:
        """When the call is the expected call ``e``: its ``out`` NDArray, or True for a new
        output; else None."""
        if called != e[0] or len(args) != e[2]:
            return None
        if kwargs or e[1]:
            try:
                if tuple(kwargs.items()) != e[1]:
                    return None
            except (TypeError, ValueError):      # a param compared as an array
                return None
        tr, cur = self.trace, self.cur
        ctx = tr.ctx
        for a, k, kind in zip(args, e[3], e[8]):
            if type(a) is not NDArray or (a._ctx is not ctx and a._ctx != ctx):
                return None
            st, c = a._store, cur[k]
            if c is st:
                continue
            if kind == FRESH:
                if c is None or c() is not st:
                    return None
            elif kind == PRIVATE:
                if not a._number or type(st) is not np.ndarray or st.shape != tr.shapes[k] \
                        or st.dtype != tr.dtypes[k]:
                    return None
                cur[k] = st
            elif a._number or not self._external(k, st):
                return None
        if not e[5]:
            return True if out is None else None
        if type(out) is not NDArray:
            if not isinstance(out, (list, tuple)) or len(out) != 1 or type(out[0]) is not NDArray:
                return None
            out = out[0]
        if out._ctx is not ctx and out._ctx != ctx:
            return None
        k, st = e[4], out._store
        c = cur[k]
        if c is st:
            return out
        if e[9] == FRESH:
            return out if c is not None and c() is st else None
        return out if not out._number and self._external(k, st) else None

    def _external(self, k: int, st: Any) -> bool:
        """Whether ``st`` is buffer ``k``, an array made before the queue: the very array the
        remembered queue saw, an array over the same bytes of the same memory, or (the first time
        the queue meets buffer ``k``) any array of its shape and dtype that no queued call made and
        that overlaps none of the queue's other arrays."""
        tr, cur = self.trace, self.cur
        held = cur[k]
        if st is tr.objs[k]():
            start = tr.spans[k][0]
        else:       # (the same shape and dtype: the same byte count, so the starts say it all)
            if type(st) is not np.ndarray or st.shape != tr.shapes[k] or st.dtype != tr.dtypes[k]:
                return False
            flags = st.flags
            if not (flags.c_contiguous and flags.writeable):
                return False
            start = address(st)
            owner = st.base
            if type(owner) is not np.ndarray:
                owner = st
            elif type(owner.base) is np.ndarray:
                owner = root(owner)
            if owner is not tr.roots[k]() or start != tr.spans[k][0]:
                if any(kind == FRESH and cur[i] is not None and cur[i]() is owner
                       for i, kind in enumerate(tr.kinds)):
                    return False          # a view of a queued call's output
                if held is None:
                    span = (start, start + st.nbytes)
                    if not self._apart(k, span):
                        return False
                    self.loose[k] = span
                    cur[k] = st
                    return True
        if held is not None:
            return start == self.loose.get(k, tr.spans[k])[0]
        if self.loose and not self._apart(k, tr.spans[k]):
            return False
        cur[k] = st
        return True

    def _apart(self, k: int, span: tuple) -> bool:
        """Whether byte span ``span`` of buffer ``k`` overlaps no other array the queue holds."""
        tr, loose = self.trace, self.loose
        start, end = span
        for i, held in enumerate(self.cur):
            if held is not None and i != k and tr.kinds[i] == EXT:
                s, e = loose.get(i, tr.spans[i])
                if s < end and start < e:
                    return False
        return True

    def leave(self) -> None:
        """Hand the calls followed so far to the generic queue (whose rest runs there)."""
        tr, n = self.trace, self.pos
        if tr is not None and n:
            self.engine._adopt(tr, n, self.cur, self.loose)
            self.engine.counts["diverged"] += 1
        self.trace, self.pos, self.off = None, 0, True

    # -- running -----------------------------------------------------------------------------------
    def ready(self) -> bool:
        """Whether the followed queue is complete and may run as the remembered one did: its
        compiled program (or not at all), the same outputs still held."""
        tr = self.trace
        if tr is None or self.pos != len(tr.calls) or tr.mode not in (PROGRAM, DROPPED):
            return False
        cur = self.cur
        return all((cur[k]() is not None) is alive for k, alive in tr.kept)

    def run(self) -> None:
        """Run the :meth:`ready` queue as the remembered one ran and start a new queue."""
        tr, cur, n = self.trace, self.cur, self.pos
        self.restart()
        self._chain(tr)
        if tr.mode == DROPPED:
            self.engine.counts["dropped"] += n
            return
        try:
            _run_program(tr, cur)
        except MXNetError as exc:
            names = ", ".join(dict.fromkeys(op[0] for op in tr.ops))
            raise type(exc)(f"queued operators ({names}): {exc}") from None
        self.engine.counts["programs"] += 1


def _run_program(tr: Trace, cur: list) -> None:
    """Call trace ``tr``'s compiled program on a followed queue's storages (``cur[i]``: buffer
    ``i``'s, a weak reference for a call's output): each step's compiled entry point on the
    buffers, outputs that may not be written in place through a temporary."""
    program, kinds = tr.program, tr.kinds
    slots = [cur[i] for i in program.reads]      # read before the queue: held arrays
    if program.flat:
        slots = [a if a.ndim == 1 else a.reshape(-1) for a in slots]
    copies = []
    for i, ok in zip(program.outs, program.direct):
        dst = cur[i]() if kinds[i] == FRESH else cur[i]
        if program.flat and dst.ndim != 1:
            dst = dst.reshape(-1)
        if ok:
            slots.append(dst)
        else:
            tmp = np.empty(dst.shape, dst.dtype)
            slots.append(tmp)
            copies.append((dst, tmp))
    steps = tr.steps
    if steps is None:
        steps = tr.steps = _steps(program.bound, slots)
    for fn, template, fills in steps:
        args = list(template)
        for i, s, shape in fills:
            args[i] = slots[s] if shape is None else slots[s].reshape(shape)
        fn(*args)
    for dst, tmp in copies:
        storage.copy_into(dst, tmp)


def _steps(bound: Any, slots: list) -> list:
    """A bound program's steps as ``(function, argument template, [(argument, slot, shape)])``,
    each function the compiled entry point for the arguments' types (``slots``: a call's
    buffers, which every later call's match in type)."""
    steps = []
    for fn, template, fills in bound.steps:
        where = [(i, s.index, s.shape) for i, s in fills]
        args = list(template)
        for i, s, shape in where:
            args[i] = slots[s] if shape is None else slots[s].reshape(shape)
        steps.append((_entry(fn, args), list(template), where))
    return steps

