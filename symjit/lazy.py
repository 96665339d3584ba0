"""The lazy engine: NDArray work queued, then run as one compiled, fused program when a value is read.

With ``SYMJIT_LAZY=1`` (``Config.lazy``; off by default for now), an ``mx.nd`` call or NDArray
arithmetic of an elementwise or broadcast operator on the CPU (:func:`symjit.imperative.queueable`),
an assignment ``a[key] = b`` of an NDArray, and an optimizer update (``Optimizer.update``, what
``mx.optimizer.get_updater``'s updater calls) do not run at the call: the call is checked (shapes
and dtypes are inferred, so a shape or dtype error is raised right there), its output array is
allocated, and the call waits in the queue. The queue runs when anything reads an array's
elements: ``asnumpy``, ``asscalar``, ``bool(x)``, printing, ``wait_to_read``, ``mx.nd.waitall``,
an executor's forward or backward, any other operator call (through ``NDArray._data``, the one
way to the storage), and when it holds :data:`MAX_OPS` calls. Any other call reads its inputs
through ``_data`` first, so it runs after the work queued before it, and autograd's recording runs
every call at once (its calls never queue).

A queue runs as one program built from the calls: a symbol with a variable per array it reads
and the calls as nodes, compiled by the ordinary pipeline (fusion on), its outputs bound to the
arrays the calls wrote. Each write into an array makes a new version of it (value numbering): a
later call reads the newest; the program writes each array's last version only, and only where
the array is still alive or existed before the queue (a temporary nobody holds is never
written). An array read and then written in place by the queue is written directly where every
element read is the element written (elementwise reads of its whole shape by calls the writing
call depends on), through a temporary and a copy otherwise. Programs are kept by the queue's
structure (operators, params, the data flow between calls, shapes, dtypes, which arrays are
written and kept): a training loop's per-step sequence compiles once. The first time a structure
is seen (``replays`` times) its calls run one by one through the imperative calls' kernels
instead, so that one-off sequences never wait for a compilation; a queue of one call always does.
Optimizer updates never share a queue with other calls (one after the other runs the queue
first); a queue of updates runs them in order, one call of the fused multi-parameter update kernel
for each run of updates by one optimizer, rule and dtype (as ``Module`` updates).

Results are those of running each call at once: a fused group rounds every value another of its
operators reads to that value's dtype, as the unfused kernels' stores do. The queue is one per
process, guarded by a lock, so an array queued by one thread and read by another is current there
too (MXNet's engine is one per process as well). ``stats()`` counts what the engine did.

>>> import symjit as mx
>>> from symjit import lazy
>>> a = mx.nd.ones((3,))
>>> with lazy.enabled():
...     lazy.reset_stats()
...     b = a * 2 + 1
...     queued = lazy.stats()['queued']
...     values = b.asnumpy().tolist()
>>> queued, values
(2, [3.0, 3.0, 3.0])
"""
from __future__ import annotations

import bisect
import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import profiler
from .base import MXNetError
from .compiler.pipeline import compile_symbol
from .config import Config, default_config
from .context import Context
from .imperative import MODE, QUEUE, _check_out, _params_key, invoke_now
from .imperative_bound import BoundProgram
from .ndarray import NDArray, dispatch, storage
from .ndarray.ndarray import _wrap_fast
from .ops.registry import get_op
from .symbol.symbol import Group, Variable, make_op_symbol

__all__ = ["Engine", "ENGINE", "enabled", "flush", "stats", "reset_stats", "MAX_OPS", "MAX_PROGRAMS"]

MAX_OPS = 256
"""The most calls a queue holds; the next call runs it first."""
MAX_PROGRAMS = 64
"""The most compiled queue programs kept (the first compiled go first)."""

_HALF = np.dtype(np.float16)
_ALL = slice(None)
_MEMO = 4096     # the most parsed params and inferred shapes remembered (then forgotten at once)


class _Conflict(Exception):
    """A call cannot join the queue as it stands (it touches an array the queue sees otherwise)."""


class _Buffer:
    """One array storage the queue reads or writes: its byte span, shape and dtype, the storage
    (held for an array made before the queue; a weak reference for one a queued call made), its
    current version (``-(index + 1)``: as it was before the queue; ``j``: written by call ``j``)."""

    __slots__ = ("index", "start", "end", "shape", "dtype", "store", "ref", "read", "writes",
                 "version")

    def __init__(self, index: int, store: np.ndarray, start: int, fresh: bool):
        self.index, self.start, self.end = index, start, start + store.nbytes
        self.shape, self.dtype = store.shape, store.dtype
        self.store = None if fresh else store
        self.ref = weakref.ref(store) if fresh else None
        self.read = False       # its contents from before the queue are read
        self.writes = 0
        self.version = -(index + 1)

    def array(self) -> np.ndarray | None:
        """The storage, or None for a queued call's output nobody holds any more."""
        return self.store if self.store is not None else self.ref()


class _Program:
    """A queue's calls compiled as one program: its inputs are the arrays read as they were
    before the queue, its outputs the last versions of the arrays written and kept."""

    def __init__(self, ops: list, bufs: list[_Buffer], outs: list[_Buffer], ctx: Context, cfg: Config):
        self.reads = [b.index for b in bufs if b.read]
        variables = {i: Variable(f"b{i}") for i in self.reads}
        nodes: list = []
        for j, (name, params, refs, _, _, _) in enumerate(ops):
            ins = [variables[-r - 1] if r < 0 else nodes[r] for r in refs]
            nodes.append(make_op_symbol(name, *ins, name=f"q{j}_{name}", **params))
        sym = Group([nodes[b.version] for b in outs])
        used = set(sym.list_arguments())
        shapes = {f"b{i}": bufs[i].shape for i in self.reads if f"b{i}" in used}
        dtypes = {f"b{i}": bufs[i].dtype for i in self.reads if f"b{i}" in used}
        compiled = compile_symbol(sym, shapes, dtypes, {}, False, cfg, target=ctx.device.target)
        self.bound = BoundProgram(compiled, [f"b{i}" for i in self.reads], ctx, "lazy engine")
        if [(tuple(s), np.dtype(d)) for s, d in self.bound.outputs] != [(b.shape, b.dtype) for b in outs]:
            raise MXNetError("lazy engine: the compiled queue's outputs differ from the arrays "
                             f"it writes: {self.bound.outputs}")
        self.outs = [b.index for b in outs]
        self.direct = [_writes_in_place(ops, b) for b in outs]

    def run(self, arrays: list) -> None:
        """Run on the queue's storages (``arrays[i]``: buffer ``i``'s)."""
        targets = [arrays[i] if ok else np.empty(arrays[i].shape, arrays[i].dtype)
                   for i, ok in zip(self.outs, self.direct)]
        self.bound.run([arrays[i] for i in self.reads] + targets)
        for i, ok, t in zip(self.outs, self.direct, targets):
            if not ok:
                storage.copy_into(arrays[i], t)


def _writes_in_place(ops: list, b: _Buffer) -> bool:
    """Whether the program may write buffer ``b``'s last version straight into its storage:
    yes unless it also reads ``b``'s contents from before the queue somewhere an element other
    than the one written may be read, or that may run after the write (a call the writing call
    does not depend on)."""
    if not b.read:
        return True
    writer, initial = b.version, -(b.index + 1)
    before, todo = {writer}, [writer]
    while todo:
        for r in ops[todo.pop()][2]:
            if r >= 0 and r not in before:
                before.add(r)
                todo.append(r)
    return all(j in before and ops[j][4] == b.shape
               for j, op in enumerate(ops) if initial in op[2])


class Engine:
    """The queue and what runs it (see the module docstring); one per process, :data:`ENGINE`.

    >>> import symjit as mx
    >>> with enabled() as engine:
    ...     x = mx.nd.ones((2,)) + 1
    ...     pending = len(engine.ops)
    ...     engine.flush()
    ...     done = len(engine.ops)
    >>> pending, done, x.asnumpy().tolist()
    (1, 0, [2.0, 2.0])
    """

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.replays = 1
        self.lock = threading.RLock()
        self.programs: dict[tuple, _Program] = {}
        self.seen: dict[tuple, int] = {}
        self.running = False
        self.addresses: dict[int, tuple] = {}   # storage object -> (weak reference, address)
        self._params: dict[tuple, tuple] = {}
        self._specs: dict[tuple, tuple] = {}
        self.counts = dict.fromkeys(("queued", "updates", "flushes", "programs", "compiles",
                                     "replayed", "dropped"), 0)
        self._reset()
        self.on = cfg.lazy

    @property
    def on(self) -> bool:
        """Whether calls queue (``Config.lazy``)."""
        return QUEUE.on

    @on.setter
    def on(self, value: bool) -> None:
        QUEUE.on = bool(value)

    def _reset(self) -> None:
        self.ops: list[tuple] = []
        self.key: list[tuple] = []
        self.bufs: list[_Buffer] = []
        self.spans: dict[tuple[int, int], _Buffer] = {}
        self.starts: list[int] = []       # the spans' starts, sorted (live spans never overlap)
        self.sorted: list[_Buffer] = []   # their buffers in that order
        self.updates: list[tuple] = []
        self.ctx: Context | None = None
        self.fresh: dict[int, _Buffer] = {}   # the queued calls' outputs, by storage object

    # -- the arrays a queue touches ---------------------------------------------------------------
    # Arrays made before the queue are found by their byte span (two views of one array are one
    # buffer; a partial overlap is a conflict); the outputs of queued calls by their storage object
    # (a view of one is a conflict: the program could not read it before it is written).
    def _start(self, store: np.ndarray) -> int:
        """The address of ``store``'s first byte, remembered per storage object (weakly), and
        for a view of a whole contiguous array that array's."""
        addrs = self.addresses
        hit = addrs.get(id(store))
        if hit is not None and hit[0]() is store:
            return hit[1]
        base = store.base
        if type(base) is np.ndarray and base.nbytes == store.nbytes and base.flags.c_contiguous:
            hit = addrs.get(id(base))
            if hit is not None and hit[0]() is base:
                return hit[1]
            store = base        # remembered for the array it views all of (which lives longer)
        start = store.ctypes.data
        if len(addrs) >= _MEMO:
            addrs.clear()
        addrs[id(store)] = (weakref.ref(store), start)
        return start

    def _buffer(self, store: np.ndarray) -> _Buffer:
        """The buffer of ``store``, registered on first sight; _Conflict when it partly overlaps
        an array the queue touches, views a queued call's output, or is an array seen with another
        shape or dtype."""
        b = self.fresh.get(id(store))
        if b is not None and b.ref() is store:
            return b
        root = store
        while type(root.base) is np.ndarray:
            root = root.base
        if root is not store:
            b = self.fresh.get(id(root))
            if b is not None and b.ref() is root:
                raise _Conflict
        start = self._start(store)
        end = start + store.nbytes
        b = self.spans.get((start, end))
        if b is not None:
            if b.shape != store.shape or b.dtype != store.dtype:
                raise _Conflict
            return b
        k = bisect.bisect_left(self.starts, end)
        if k > 0 and self.sorted[k - 1].end > start:
            raise _Conflict
        b = _Buffer(len(self.bufs), store, start, False)
        self.bufs.append(b)
        self.spans[(start, end)] = b
        self.starts.insert(k, start)
        self.sorted.insert(k, b)
        return b

    def _fresh(self, store: np.ndarray) -> _Buffer:
        """The buffer of a queued call's new output ``store`` (held weakly)."""
        b = _Buffer(len(self.bufs), store, 0, True)
        self.bufs.append(b)
        self.fresh[id(store)] = b
        return b

    def _private(self, store: np.ndarray) -> _Buffer:
        """The buffer of a number operand of NDArray arithmetic: an array of its own, which
        nothing else can see or write (no span to check)."""
        b = _Buffer(len(self.bufs), store, 0, False)
        self.bufs.append(b)
        return b

    # -- queueing -----------------------------------------------------------------------------------
    def call(self, op: Any, called: str, args: tuple, kwargs: dict, out: Any) -> NDArray | None:
        """Queue ``mx.nd.<called>(*args, out=out, **kwargs)`` (``op`` its record) and return its
        output, or return None to have it run now (anything but NDArrays of host memory and
        params, float16, empty arrays, an array the queue cannot see as one buffer)."""
        if isinstance(out, (list, tuple)):
            if len(out) != 1:
                return None
            out = out[0]
        if out is not None and type(out) is not NDArray:
            return None
        if not args:
            return None
        for a in args:
            if type(a) is not NDArray:
                return None      # params given positionally, numbers: the call as it is
        try:
            pkey = (called, tuple(kwargs.items()), len(args))
            spec = self._params.get(pkey)
        except TypeError:      # an unhashable param value
            return None
        if spec is None:
            if any(isinstance(v, NDArray) for v in kwargs.values()):
                return None
            params = dict(kwargs)
            try:
                parsed = op.parse_params(dict(params))
            except MXNetError:
                return None      # the call as it is reports it
            if len(self._params) >= _MEMO:
                self._params.clear()
            spec = self._params[pkey] = (params, _params_key(params), len(op.list_arguments(parsed)))
        params, key, n_args = spec
        if len(args) != n_args:
            return None
        ctx = args[0]._ctx
        if not ctx.device.host_memory:
            return None
        metas = []
        for a in args:
            st = a._store
            if (a._ctx is not ctx and a._ctx != ctx) or type(st) is not np.ndarray \
                    or not st.flags.c_contiguous or st.dtype == _HALF or st.size == 0:
                return None
            metas.append((st.shape, st.dtype))
        shape, dtype = self._spec(called, params, key, tuple(metas))
        if out is not None:
            ost = out._store
            if type(ost) is not np.ndarray or ost.shape != shape or ost.dtype != dtype \
                    or out._ctx != ctx or not ost.flags.c_contiguous:
                _check_out(called, out, shape, dtype, ctx)     # its error, if it has one
                if type(ost) is not np.ndarray:
                    return None
            if ost.size == 0:
                return None
        with self.lock:
            try:
                return self._place(called, params, key, args, out, shape, dtype, ctx)
            except _Conflict:
                self._flush()
            try:
                return self._place(called, params, key, args, out, shape, dtype, ctx)
            except _Conflict:
                return None

    def _spec(self, called: str, params: dict, key: tuple, metas: tuple) -> tuple:
        """The output's (shape, dtype), by the operator's rules (their errors name the operator)."""
        found = self._specs.get((called, key, metas))
        if found is None:
            names = [f"in{i}" for i in range(len(metas))]
            sym = make_op_symbol(called, *[Variable(n) for n in names], name="imperative", **params)
            try:
                _, shapes, _ = sym.infer_shape(**{n: m[0] for n, m in zip(names, metas)})
                _, types, _ = sym.infer_type(**{n: m[1] for n, m in zip(names, metas)})
            except MXNetError as exc:
                raise type(exc)(str(exc).replace(" 'imperative' (", " (", 1)) from None
            if len(self._specs) >= _MEMO:
                self._specs.clear()
            found = self._specs[(called, key, metas)] = (tuple(shapes[0]), np.dtype(types[0]))
        return found

    def _place(self, called: str, params: dict, key: tuple, args: tuple, out: NDArray | None,
               shape: tuple, dtype: np.dtype, ctx: Context) -> NDArray:
        if self.updates or len(self.ops) >= MAX_OPS or (self.ctx is not None and self.ctx != ctx):
            raise _Conflict
        ins = [self._private(a._store) if a._number else self._buffer(a._store) for a in args]
        target = self._buffer(out._store) if out is not None else None
        self.ctx = ctx
        refs = tuple(b.version for b in ins)
        for b in ins:
            if b.version < 0:
                b.read = True
        if out is None:
            store = np.empty(shape, dtype)
            target = self._fresh(store)
            result = _wrap_fast(store, ctx)
        else:
            result = out
            out._bump()
        j = len(self.ops)
        target.version = j
        target.writes += 1
        self.ops.append((called, params, refs, target.index, shape, dtype))
        self.key.append((called, key, refs, target.index))
        self.counts["queued"] += 1
        if not dispatch.PENDING:
            dispatch.PENDING.append(self.flush)
        return result

    def assign(self, dst: NDArray, key: Any, value: NDArray) -> bool:
        """``dst[key] = value`` queued as a copy when the selection is a contiguous view of
        ``value``'s shape and dtype (nothing to do when it is ``value``'s own storage); False to
        have it done at once."""
        if not QUEUE.on or MODE.busy or profiler._P.running or type(value) is not NDArray \
                or value._ctx != dst._ctx:
            return False
        src, buf = value._store, dst._store
        if type(src) is not np.ndarray or type(buf) is not np.ndarray:
            return False
        if (src is buf or src.base is buf) and type(key) is slice and key == _ALL and \
                src.shape == buf.shape and src.dtype == buf.dtype and src.flags.c_contiguous:
            return True      # w[:] = (a view of all of w): nothing to copy
        if not storage._basic(key):
            return False
        view = storage.view(buf, key)
        if view is None or view.shape != src.shape or view.dtype != src.dtype or view.size == 0:
            return False
        if storage.same_buffer(view, src):
            return True      # an array written into itself
        return self.call(_COPY[0], "_copy", (value,), {}, _wrap_fast(view, dst._ctx)) is not None

    def update(self, opt: Any, index: Any, kernel: str, rows: tuple, scalars: tuple) -> bool:
        """Queue optimizer ``opt``'s update of ``index`` by its kernel ``kernel`` on ``rows``
        (weight, gradient, states: NDArrays already checked) with ``scalars``; False to have it
        run now (GPU arrays). Updates and other calls do not share a queue: one after the other
        runs the queue first (so the updates' arrays need no tracking: they run in order)."""
        if not QUEUE.on or MODE.busy or profiler._P.running:
            return False
        ctx = rows[0]._ctx
        if not ctx.device.host_memory or any(type(a._store) is not np.ndarray or a._store.size == 0
                                             for a in rows):
            return False
        with self.lock:
            for attempt in range(2):
                try:
                    self._place_update(opt, index, kernel, rows, scalars, ctx)
                    return True
                except _Conflict:
                    if attempt == 0:
                        self._flush()
        return False

    def _place_update(self, opt: Any, index: Any, kernel: str, rows: tuple, scalars: tuple,
                      ctx: Context) -> None:
        if self.ops or len(self.updates) >= MAX_OPS or (self.ctx is not None and self.ctx != ctx):
            raise _Conflict
        self.ctx = ctx
        self.updates.append((opt, kernel, index, tuple(rows), tuple(scalars)))
        self.counts["updates"] += 1
        if not dispatch.PENDING:
            dispatch.PENDING.append(self.flush)

    # -- running --------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Run the queue (nothing when it is empty)."""
        with self.lock:
            self._flush()

    def _flush(self) -> None:
        if self.running:      # a read by the flush itself: what it reads is not queued
            return
        ops, bufs, key, updates, ctx = self.ops, self.bufs, self.key, self.updates, self.ctx
        self._reset()
        if not ops and not updates:
            dispatch.PENDING.clear()
            return
        self.counts["flushes"] += 1
        self.running = True     # other threads' reads wait for the lock until the queue has run
        try:
            if ops:
                self._run(ops, bufs, key, ctx)
        finally:
            try:
                self._run_updates(updates)
            finally:
                self.running = False
                dispatch.PENDING.clear()

    def _run(self, ops: list, bufs: list[_Buffer], key: list, ctx: Context) -> None:
        arrays = [b.array() for b in bufs]
        outs = [b for b in bufs if b.writes and arrays[b.index] is not None]
        if not outs:
            self.counts["dropped"] += len(ops)
            return
        sig = (tuple(key), tuple((b.shape, b.dtype.str, b.store is None, b.read, arrays[b.index] is not None)
                                 for b in bufs), ctx)
        program = self.programs.get(sig) if len(ops) > 1 else None
        if program is None:
            seen = self.seen.pop(sig, 0) + 1
            self.seen[sig] = seen          # the most recent last
            while len(self.seen) > 4 * MAX_PROGRAMS:
                del self.seen[next(iter(self.seen))]
            if len(ops) == 1 or seen <= self.replays:
                self._replay(ops, arrays, ctx)
                return
            program = self.programs[sig] = _Program(ops, bufs, outs, ctx, self.cfg)
            self.counts["compiles"] += 1
            while len(self.programs) > MAX_PROGRAMS:     # the first compiled goes first
                del self.programs[next(iter(self.programs))]
        try:
            program.run(arrays)
        except MXNetError as exc:
            names = ", ".join(dict.fromkeys(op[0] for op in ops))
            raise type(exc)(f"queued operators ({names}): {exc}") from None
        self.counts["programs"] += 1

    def _replay(self, ops: list, arrays: list, ctx: Context) -> None:
        """Run the calls one by one (each through the imperative calls' kernels), in order."""
        for name, params, refs, target, shape, dtype in ops:
            if arrays[target] is None:      # an output nobody holds, which a later call reads
                arrays[target] = np.empty(shape, dtype)
            ins = [_wrap_fast(arrays[-r - 1] if r < 0 else arrays[ops[r][3]], ctx) for r in refs]
            invoke_now(name, ins, params, [_wrap_fast(arrays[target], ctx)], name, ctx)
        self.counts["replayed"] += len(ops)

    @staticmethod
    def _run_updates(updates: list) -> None:
        """The queued optimizer updates in order: one fused call for each run of updates by
        one optimizer, kernel and dtype (which keeps the order where their arrays overlap)."""
        runs: list[tuple] = []
        for opt, kernel, index, rows, scalars in updates:
            key = (id(opt), kernel, rows[0]._store.dtype)
            if not runs or runs[-1][0] != key:
                runs.append((key, opt, kernel, []))
            runs[-1][3].append((index, rows, scalars))
        for _, opt, kernel, members in runs:
            opt._run_queued(kernel, members)


_COPY: list = [get_op("_copy")]

ENGINE = Engine(default_config())
"""The process's engine (``Config.lazy`` read from the environment at import)."""
QUEUE.call = ENGINE.call
dispatch.install_assign(ENGINE.assign)


def flush() -> None:
    """Run the queued work now (what ``mx.nd.waitall()`` does).

    >>> flush()
    """
    ENGINE.flush()


def stats() -> dict[str, int]:
    """What the engine did since the last :func:`reset_stats`: calls ``queued``, optimizer
    ``updates`` queued, queue ``flushes``, queue ``programs`` run and ``compiles`` of them, calls
    ``replayed`` one by one, and calls ``dropped`` (nothing they wrote was still held).

    >>> sorted(stats())[:3]
    ['compiles', 'dropped', 'flushes']
    """
    return dict(ENGINE.counts)


def reset_stats() -> None:
    """Set every count of :func:`stats` to zero.

    >>> reset_stats(); stats()['queued']
    0
    """
    for k in ENGINE.counts:
        ENGINE.counts[k] = 0


@contextlib.contextmanager
def enabled(on: bool = True, replays: int | None = None) -> Iterator[Engine]:
    """A ``with`` block with the engine queueing (``on``) or not, and the queue structures seen
    ``replays`` times running call by call before they compile (default 1); the queue runs
    before and after.

    >>> import symjit as mx
    >>> with enabled(False):
    ...     (mx.nd.ones((2,)) + 1).asnumpy().tolist()
    [2.0, 2.0]
    """
    engine = ENGINE
    engine.flush()
    was, before = engine.on, engine.replays
    engine.on = on
    if replays is not None:
        engine.replays = replays
    try:
        yield engine
    finally:
        engine.flush()
        engine.on, engine.replays = was, before
