"""The lazy engine: NDArray work queued, then run as one compiled, fused program when a value is read.

With ``Config.lazy`` (the default; ``SYMJIT_LAZY=0`` turns it off), an ``mx.nd`` call or
NDArray arithmetic of an elementwise or broadcast operator on the CPU
(:func:`symjit.imperative.queueable`) and an assignment ``a[key] = b`` of an NDArray do not run at
the call: the call is checked (shapes and dtypes are inferred, so a shape or dtype error is raised
right there), its output array is allocated, and the call waits in the queue. The queue runs when
anything reads an array's elements: ``asnumpy``, ``asscalar``, ``bool(x)``, printing,
``wait_to_read``, ``mx.nd.waitall``, an executor's forward or backward, any other operator call
(through ``NDArray._data``, the one way to the storage), and when it holds :data:`MAX_OPS` calls.
Any other call reads its inputs through ``_data`` first, so it runs after the work queued before
it, and autograd's recording runs every call at once (its calls never queue).

A queue runs as one program built from the calls: a symbol with a variable per array it reads
and the calls as nodes, compiled by the ordinary pipeline (fusion on), its outputs bound to the
arrays the calls wrote. Each write into an array makes a new version of it (value numbering): a
later call reads the newest; the program writes each array's last version only, and only where
the array is still alive or existed before the queue (a temporary nobody holds is never
written). An array read and then written in place by the queue is written directly where every
element read is the element written (elementwise reads of its whole shape by calls the writing
call depends on), through a temporary and a copy otherwise; a kernel that reads such an array and
writes it takes it once (``compile_symbol``'s ``over``), so its loop vectorizes. A queue of
elementwise calls (and broadcasts of single elements, such as a number operand) compiles on its
arrays seen flat, as imperative calls do. Programs are kept by the queue's structure (operators,
params, the data flow between calls, shapes, dtypes, which arrays are written and kept): a
training loop's per-step sequence compiles once. The first time a structure is seen (``replays``
times) its calls run one by one through the imperative calls' kernels instead, so that one-off
sequences never wait for a compilation; a queue of one call always does. An optimizer update
(``Optimizer.update``) runs at its call, after the queued work: queued and run as one fused
multi-parameter update call, updates cost more than they saved on the CPU (:meth:`Engine.update`).

The fast path (:mod:`symjit.lazy_replay`): each queue run is remembered, and the next queue that
starts like it follows it, each call checked against the call expected at its position instead
of taking the generic path above (no buffer table, no inferred shapes, no structure key), and
runs the remembered compiled program's entry point on the arrays' storage; any mismatch hands the
calls followed so far to the generic path. A call that would start a queue like a queue of that
call alone, seen twice in a row (a call, then a read of its result), runs at once.

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
import dataclasses
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import profiler
from .base import MXNetError
from .compiler.codegen.generate import PROGRAM_CALLS_LIMIT
from .compiler.pipeline import compile_symbol
from .config import Config, default_config
from .context import Context
from .imperative import MODE, QUEUE, _check_out, _params_key, invoke_now
from .imperative_bound import BoundProgram
from .lazy_replay import DROPPED, EXT, FRESH, PRIVATE, PROGRAM, REPLAY, SINGLE, Follower, address
from .ndarray import NDArray, dispatch, storage
from .ndarray.ndarray import _wrap_fast
from .ops.registry import Kind, get_op
from .symbol.symbol import Group, Variable, make_op_symbol

__all__ = ["Engine", "ENGINE", "enabled", "flush", "forget", "stats", "reset_stats", "MAX_OPS",
           "MAX_PROGRAMS"]

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
    """One array storage the queue reads or writes: its kind (``EXT``: an array made before the
    queue, ``PRIVATE``: a number operand's, ``FRESH``: a queued call's output), byte span (``EXT``),
    shape and dtype, the storage (held; a weak reference ``ref`` for a ``FRESH`` one), its current
    version (``-(index + 1)``: as it was before the queue; ``j``: written by call ``j``)."""

    __slots__ = ("index", "kind", "start", "end", "shape", "dtype", "store", "ref", "read",
                 "writes", "version")

    def __init__(self, index: int, kind: int, store: np.ndarray | None, start: int = 0,
                 ref: Any = None, meta: tuple | None = None):
        self.index, self.kind = index, kind
        self.shape, self.dtype = (store.shape, store.dtype) if store is not None else meta
        self.start = start
        self.end = start + (store.nbytes if store is not None else 0)
        self.store, self.ref = store, ref
        self.read = False       # its contents from before the queue are read
        self.writes = 0
        self.version = -(index + 1)

    def array(self) -> np.ndarray | None:
        """The storage, or None for a queued call's output nobody holds any more."""
        return self.store if self.store is not None else self.ref()


class _Program:
    """A queue's calls compiled as one program: its inputs are the arrays read as they were
    before the queue, its outputs the last versions of the arrays written and kept. A queue of
    elementwise calls (and broadcasts of single elements) is compiled on the arrays seen flat
    (``flat``), as imperative calls are: one loop per group instead of a nest over the axes."""

    def __init__(self, ops: list, bufs: list[_Buffer], outs: list[_Buffer], ctx: Context, cfg: Config):
        self.flat = _flat_queue(ops, bufs)
        seen = (lambda b: (_size(b.shape),)) if self.flat else (lambda b: b.shape)
        self.reads = [b.index for b in bufs if b.read]
        variables = {i: Variable(f"b{i}") for i in self.reads}
        nodes: list = []
        for j, (name, params, refs, _, _, _) in enumerate(ops):
            ins = [variables[-r - 1] if r < 0 else nodes[r] for r in refs]
            nodes.append(make_op_symbol(name, *ins, name=f"q{j}_{name}", **params))
        sym = Group([nodes[b.version] for b in outs])
        used = set(sym.list_arguments())
        shapes = {f"b{i}": seen(bufs[i]) for i in self.reads if f"b{i}" in used}
        dtypes = {f"b{i}": bufs[i].dtype for i in self.reads if f"b{i}" in used}
        if cfg.program_calls is None:     # a small queue's kernels too from one compiled function
            cfg = dataclasses.replace(cfg, program_calls=PROGRAM_CALLS_LIMIT)
        direct = [_writes_in_place(ops, b) for b in outs]
        over = {j: f"b{b.index}" for j, (b, ok) in enumerate(zip(outs, direct))   # one array
                if ok and b.read and f"b{b.index}" in used}
        compiled = compile_symbol(sym, shapes, dtypes, {}, False, cfg, target=ctx.device.target,
                                  over=over)
        self.bound = BoundProgram(compiled, [f"b{i}" for i in self.reads], ctx, "lazy engine")
        if [(tuple(s), np.dtype(d)) for s, d in self.bound.outputs] != [(seen(b), b.dtype) for b in outs]:
            raise MXNetError("lazy engine: the compiled queue's outputs differ from the arrays "
                             f"it writes: {self.bound.outputs}")
        self.outs = [b.index for b in outs]
        self.direct = direct

    def run(self, arrays: list) -> None:
        """Run on the queue's storages (``arrays[i]``: buffer ``i``'s)."""
        if self.flat:
            arrays = [a if a is None or a.ndim == 1 else a.reshape(-1) for a in arrays]
        targets = [arrays[i] if ok else np.empty(arrays[i].shape, arrays[i].dtype)
                   for i, ok in zip(self.outs, self.direct)]
        self.bound.run([arrays[i] for i in self.reads] + targets)
        for i, ok, t in zip(self.outs, self.direct, targets):
            if not ok:
                storage.copy_into(arrays[i], t)


def _size(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _flat_queue(ops: list, bufs: list[_Buffer]) -> bool:
    """Whether every call of a queue computes each element of its output from the same element
    of its inputs (or from an input's single element), whatever the shapes: an elementwise
    operator on arrays of its output's shape, or a broadcast operator without params whose
    inputs have its output's shape or one element. Then the queue computes the same values on
    its arrays seen flat."""
    for name, params, refs, _, shape, _ in ops:
        op = get_op(name)
        shapes = [bufs[-r - 1].shape if r < 0 else ops[r][4] for r in refs]
        if op.kind == Kind.ELEMWISE and not op.loss and op.variadic is None:
            if any(s != shape for s in shapes):
                return False
        elif op.kind == Kind.BROADCAST and op.name.startswith("broadcast_") and not params \
                and op.name not in ("broadcast_to", "broadcast_like", "broadcast_axis"):
            if any(s != shape and _size(s) != 1 for s in shapes):
                return False
        else:
            return False
    return True


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
        self.counts = dict.fromkeys(("queued", "flushes", "programs", "compiles",
                                     "replayed", "dropped", "diverged"), 0)
        self.follow = Follower(self, MAX_OPS)
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
        self.calls: list[tuple] = []      # per call: (operator, params, arrays), inputs, output, out given
        self.bufs: list[_Buffer] = []
        self.spans: dict[tuple[int, int], _Buffer] = {}
        self.starts: list[int] = []       # the spans' starts, sorted (live spans never overlap)
        self.sorted: list[_Buffer] = []   # their buffers in that order
        self.ctx: Context | None = None
        self.fresh: dict[int, _Buffer] = {}   # the queued calls' outputs, by storage object
        self.follow.restart()

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
        start = address(store)
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
        b = _Buffer(len(self.bufs), EXT, store, start)
        self.bufs.append(b)
        self.spans[(start, end)] = b
        self.starts.insert(k, start)
        self.sorted.insert(k, b)
        return b

    def _fresh(self, store: np.ndarray) -> _Buffer:
        """The buffer of a queued call's new output ``store`` (held weakly)."""
        b = _Buffer(len(self.bufs), FRESH, None, ref=weakref.ref(store), meta=(store.shape, store.dtype))
        self.bufs.append(b)
        self.fresh[id(store)] = b
        return b

    def _private(self, store: np.ndarray) -> _Buffer:
        """The buffer of a number operand of NDArray arithmetic: an array of its own, which
        nothing else can see or write (no span to check)."""
        b = _Buffer(len(self.bufs), PRIVATE, store)
        self.bufs.append(b)
        return b

    def _adopt(self, trace: Any, n: int, cur: list, loose: dict) -> None:
        """Take over the first ``n`` calls a queue followed of remembered queue ``trace``
        (:mod:`symjit.lazy_replay`; ``cur``: each buffer's storage, ``loose``: the byte spans
        that are not the remembered ones) as this generic queue's."""
        for k in range(trace.firsts[n]):
            kind, c = trace.kinds[k], cur[k]
            if kind == FRESH:
                b = _Buffer(k, FRESH, None, ref=c, meta=(trace.shapes[k], trace.dtypes[k]))
                if c() is not None:
                    self.fresh[id(c())] = b
            else:
                b = _Buffer(k, kind, c, loose.get(k, trace.spans[k] or (0,))[0])
                if kind == EXT:
                    i = bisect.bisect_left(self.starts, b.start)
                    self.spans[(b.start, b.end)] = b
                    self.starts.insert(i, b.start)
                    self.sorted.insert(i, b)
            self.bufs.append(b)
        for j, (_, ins, target, _) in enumerate(trace.gcalls[:n]):
            for k in ins:
                if self.bufs[k].version < 0:
                    self.bufs[k].read = True
            b = self.bufs[target]
            b.version = j
            b.writes += 1
        self.ops, self.key, self.calls = trace.ops[:n], trace.key[:n], trace.gcalls[:n]
        self.ctx = trace.ctx

    # -- queueing -----------------------------------------------------------------------------------
    def call(self, op: Any, called: str, args: tuple, kwargs: dict, out: Any) -> NDArray | None:
        """Queue ``mx.nd.<called>(*args, out=out, **kwargs)`` (``op`` its record) and return its
        output, or return None to have it run now (anything but NDArrays of host memory and
        params, float16, empty and 0-d arrays, an array the queue cannot see as one buffer). A call
        that is the next call of a remembered queue takes the fast path
        (:class:`symjit.lazy_replay.Follower`)."""
        follow = self.follow
        if not follow.off:
            if follow.trace is None and called in follow.single_ops \
                    and follow.single(called, args, kwargs, out):
                return None
            with self.lock:
                found = follow.call(called, args, kwargs, out) if not follow.off else None
                if found is not None:
                    if not dispatch.PENDING:
                        dispatch.PENDING.append(self.flush)
                    return found
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
                    or not st.flags.c_contiguous or st.dtype == _HALF or st.size == 0 or not st.ndim:
                return None      # (a 0-d array: the call as it is reports it)
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
            follow.leave()      # the rest of this queue is the generic path's
            try:
                return self._place(pkey, params, key, args, out, shape, dtype, ctx)
            except _Conflict:
                self._flush()
            if not follow.off:      # a new queue, which may follow a remembered one
                found = follow.call(called, args, kwargs, out)
                if found is not None:
                    if not dispatch.PENDING:
                        dispatch.PENDING.append(self.flush)
                    return found
            follow.leave()
            try:
                return self._place(pkey, params, key, args, out, shape, dtype, ctx)
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

    def _place(self, pkey: tuple, params: dict, key: tuple, args: tuple, out: NDArray | None,
               shape: tuple, dtype: np.dtype, ctx: Context) -> NDArray:
        called = pkey[0]
        if len(self.ops) >= MAX_OPS or (self.ctx is not None and self.ctx != ctx):
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
        self.calls.append((pkey, tuple(b.index for b in ins), target.index, out is not None))
        self.counts["queued"] += 1
        if not dispatch.PENDING:
            dispatch.PENDING.append(self.flush)
        return result

    def assign(self, dst: NDArray, key: Any, value: NDArray) -> bool:
        """``dst[key] = value`` queued as a copy when the selection is a contiguous view of
        ``value``'s shape and dtype (nothing to do when it is ``value``'s own storage); False to
        have it done at once."""
        if not QUEUE.on or MODE.busy or profiler._P.running or type(value) is not NDArray \
                or (value._ctx is not dst._ctx and value._ctx != dst._ctx):
            return False
        src, buf = value._store, dst._store
        if type(src) is not np.ndarray or type(buf) is not np.ndarray:
            return False
        if type(key) is slice and key == _ALL and src.shape == buf.shape and src.dtype == buf.dtype \
                and src.flags.c_contiguous and buf.flags.c_contiguous and (
                    src is buf or src.base is buf or (src.base is not None and src.base is buf.base
                                                      and address(src) == self._start(buf))):
            return True      # w[:] = (a view of all of w): nothing to copy
        if not storage._basic(key):
            return False
        view = storage.view(buf, key)
        if view is None or view.shape != src.shape or view.dtype != src.dtype or view.size == 0:
            return False
        if storage.same_buffer(view, src):
            return True      # an array written into itself
        return self.call(_COPY[0], "_copy", (value,), {}, _wrap_fast(view, dst._ctx)) is not None

    @staticmethod
    def update(opt: Any, index: Any, kernel: str, rows: tuple, scalars: tuple) -> bool:
        """Whether optimizer ``opt``'s update of ``index`` (kernel ``kernel`` on ``rows`` with
        ``scalars``) is queued: never, it runs at its call (``Optimizer.update``, which runs the
        queued work first). Queued and run as one fused multi-parameter update call per step,
        updates cost ~0.9 us more each than at once on the CPU, with 6, 64 or 200 parameters
        (``docs/performance.md``): queueing one costs more than the kernel call it saves."""
        return False

    # -- running --------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Run the queue (nothing when it is empty)."""
        with self.lock:
            self._flush()

    def _flush(self) -> None:
        if self.running:      # a read by the flush itself: what it reads is not queued
            return
        follow = self.follow
        if follow.pos:
            if follow.ready():      # a remembered queue, complete: run as it ran
                self._running(follow.run)
                return
            follow.leave()
        ops, bufs, key, calls, ctx = self.ops, self.bufs, self.key, self.calls, self.ctx
        self._reset()
        if not ops:
            dispatch.PENDING.clear()
            return
        self._running(self._run_ops, ops, bufs, key, calls, ctx)

    def _running(self, fn: Any, *args: Any) -> None:
        """``fn(*args)``, a run of the queue: counted, and a read by the run itself runs nothing."""
        self.counts["flushes"] += 1
        self.running = True     # other threads' reads wait for the lock until the queue has run
        try:
            fn(*args)
        finally:
            self.running = False
            dispatch.PENDING.clear()

    def _run_ops(self, ops: list, bufs: list[_Buffer], key: list, calls: list, ctx: Context) -> None:
        """Run a queue of calls by the generic path, and remember it for the fast path."""
        arrays = [b.array() for b in bufs]
        mode, program = self._run(ops, bufs, key, ctx, list(arrays))
        self.follow.learn(ops, key, calls, bufs, arrays, ctx, mode, program)

    def _run(self, ops: list, bufs: list[_Buffer], key: list, ctx: Context, arrays: list) -> tuple:
        """Run a queue (``arrays``: its buffers' storages, None for an output nobody holds);
        return how it ran (:mod:`symjit.lazy_replay`'s modes) and its program."""
        outs = [b for b in bufs if b.writes and arrays[b.index] is not None]
        if not outs:
            self.counts["dropped"] += len(ops)
            return DROPPED, None
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
                return (SINGLE if len(ops) == 1 else REPLAY), None
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
        return PROGRAM, program

    def _replay(self, ops: list, arrays: list, ctx: Context) -> None:
        """Run the calls one by one (each through the imperative calls' kernels), in order."""
        for name, params, refs, target, shape, dtype in ops:
            if arrays[target] is None:      # an output nobody holds, which a later call reads
                arrays[target] = np.empty(shape, dtype)
            ins = [_wrap_fast(arrays[-r - 1] if r < 0 else arrays[ops[r][3]], ctx) for r in refs]
            invoke_now(name, ins, params, [_wrap_fast(arrays[target], ctx)], name, ctx)
        self.counts["replayed"] += len(ops)


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
    """What the engine did since the last :func:`reset_stats`: calls ``queued``, queue
    ``flushes``, queue ``programs`` run and ``compiles`` of them, calls
    ``replayed`` one by one, and calls ``dropped`` (nothing they wrote was still held); of the
    queued calls, those ``followed`` on the fast path (the next call of a remembered queue,
    :mod:`symjit.lazy_replay`), queues that ``diverged`` from the remembered one after following
    it (the generic path took over), and calls run at once (``eager``) as the remembered queue
    they start was that call alone.

    >>> sorted(stats())[:4]
    ['compiles', 'diverged', 'dropped', 'eager']
    """
    counts = dict(ENGINE.counts)
    counts["followed"] = ENGINE.follow.followed
    counts["eager"] = ENGINE.follow.eager
    counts["queued"] += counts["followed"]
    return counts


def forget() -> None:
    """Forget the queues remembered for the fast path (:mod:`symjit.lazy_replay`): the next
    queues take the generic path (their compiled programs are kept).

    >>> forget()
    """
    with ENGINE.lock:
        ENGINE.flush()
        ENGINE.follow.forget()


def reset_stats() -> None:
    """Set every count of :func:`stats` to zero.

    >>> reset_stats(); stats()['queued']
    0
    """
    for k in ENGINE.counts:
        ENGINE.counts[k] = 0
    ENGINE.follow.followed = ENGINE.follow.eager = 0


@contextlib.contextmanager
def enabled(on: bool = True, replays: int | None = None, fast: bool | None = None) -> Iterator[Engine]:
    """A ``with`` block with the engine queueing (``on``) or not, the queue structures seen
    ``replays`` times running call by call before they compile (default 1), and queues following
    the remembered ones (``fast``, the fast path of :mod:`symjit.lazy_replay`; default on) or
    taking the generic path only; the queue runs before and after, and the block starts with no
    queue remembered for the fast path (:func:`forget`).

    >>> import symjit as mx
    >>> with enabled(False):
    ...     (mx.nd.ones((2,)) + 1).asnumpy().tolist()
    [2.0, 2.0]
    """
    engine = ENGINE
    engine.flush()
    engine.follow.forget()
    was, before, fast_was = engine.on, engine.replays, engine.follow.on
    engine.on = on
    if replays is not None:
        engine.replays = replays
    if fast is not None:
        engine.follow.on = fast
        engine.follow.restart()
    try:
        yield engine
    finally:
        engine.flush()
        engine.on, engine.replays, engine.follow.on = was, before, fast_was
        engine.follow.restart()
