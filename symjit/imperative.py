"""Imperative operator calls: one registered operator run on NDArrays by its compiled kernels.

``invoke('broadcast_add', [a, b])`` builds the operator's one-node symbol, compiles it for the
arrays' device with the pipeline ``bind`` uses (inference mode, no gradient), binds the program to
an arena of its own, and keeps that in a table keyed by (operator, params, input shapes and
dtypes, device); the next call with the same key only fills in the input and output buffers and
calls the compiled program. This is how NDArray arithmetic and the ``mx.nd`` functions compute, on
the CPU and on a GPU (kernels queued on the device's stream, no host copy); a repeated ``mx.nd``
call skips even the table (:func:`nd_function`). The kernels have no float16: a call with float16
arrays (or a float16 ``dtype`` param) runs the float32 kernel on widened copies and rounds back
the outputs the float16 call types as float16 (:func:`_invoke_half`), which is what MXNet's CPU
operators do element by element (their ``half_t`` arithmetic is float arithmetic rounded back).

Every distinct key compiles once per process (loading from the kernel cache when it can), so a
scalar *param* that changes every call compiles a kernel per value; NDArray arithmetic passes a
scalar operand as a (1,) array instead, and the update operators their float params as a vector.
The table keeps the :data:`MAX_CALLS` most recent entries.

>>> import symjit as mx
>>> a = mx.nd.array([[1, 2], [3, 4]])
>>> invoke('broadcast_add', [a, mx.nd.array([10, 20])])[0].asnumpy().tolist()
[[11.0, 22.0], [13.0, 24.0]]
>>> invoke('sum', [a], {'axis': 1})[0].asnumpy().tolist()
[3.0, 7.0]
"""
from __future__ import annotations

import collections
import functools
import sys
import threading
import time
import types
from numbers import Real
from typing import Any

import numpy as np

from . import profiler
from .base import DTypeError, MXNetError, ShapeError, dtype_name, shape_str
from .compiler.pipeline import compile_symbol
from .config import Config, default_config
from .context import Context, current_context
from .imperative_bound import BoundProgram
from .imperative_runners import fast_into, fast_runner, seen
from .imperative_shapes import Canonical, canonical_cached
from .lower.rules import lookup
from .ndarray import NDArray, arith, dispatch, storage
from .ndarray import sparse as _sparse
from .ndarray.ndarray import wrap
from .ndarray.sparse_array import LIVE as _SPARSE_LIVE
from .ops.registry import Kind, get_op
from .ops.update import runtime_params, runtime_scalars, scalar_layout
from .symbol.symbol import Variable, absent_inputs, make_op_symbol, min_inputs, positional_inputs
from .symbol.symbol import without_absent_inputs as without_absent

__all__ = ["invoke", "invoke_now", "MODE", "QUEUE", "queueable",
           "MAX_CALLS", "cached_calls", "clear_calls", "nd_function", "install_nd_functions"]

MAX_CALLS = 512
_CALLS: collections.OrderedDict[tuple, _Call] = collections.OrderedDict()
_PROFILER = profiler._P   # while it runs, calls take the recorded path (no fast path)


class _Mode(threading.local):
    """The calling thread's autograd state, which :mod:`symjit.autograd` sets: ``recording``
    (calls go to ``recorder``, which runs and records them) and ``training`` (the ops' training
    semantics: Dropout masks, BatchNorm batch statistics). ``busy`` is either; the fast paths of
    the ``mx.nd`` functions are skipped while it is set."""

    recording = False
    training = False
    busy = False
    recorder: Any = None


MODE = _Mode()


class _Queue:
    """Where :func:`nd_function` hands a call the lazy engine may queue (:mod:`symjit.lazy` sets
    it): ``on`` while the engine queues, ``call(op, called, args, kwargs, out)`` returning the
    queued call's output, or None to have the call run now."""

    on = False
    call: Any = None


QUEUE = _Queue()


class _Recorded:
    """What :mod:`symjit.autograd` installs for repeated recorded ``mx.nd`` calls:
    ``token(op, params, where)``, what the recorder needs to record a call of registered operator
    ``op`` with ``params`` in the thread's mode without looking at the operator again (None for a
    call it records otherwise: samplers, Dropout, aux states...), and ``call(token, inputs, run)``,
    which records and runs such a call, ``run(inputs)`` computing its one output."""

    token: Any = None
    call: Any = None


RECORDED = _Recorded()


def queueable(op: Any) -> bool:
    """Whether calls of operator ``op`` may wait in the lazy engine's queue: an elementwise or
    broadcast operator with a scalar body (pure arithmetic, which fuses), one output, no aux
    states, no random draws and no optimizer update."""
    return (op.body is not None and op.kind <= Kind.BROADCAST and not op.aux
            and not callable(op.outputs) and len(op.outputs) == 1
            and "update" not in op.extra and op.variadic is None)


class _Call(BoundProgram):
    """One operator compiled for one key, its program bound to a private arena; inputs and
    outputs are filled in per call. The pipeline runs here (the outputs' shapes, the checks); the
    program's functions are loaded (compiled, the first time) at the first use of its ``steps``,
    so a call looked up only for its outputs' shapes, and then run as its variant into one of its
    inputs (``over``), compiles nothing."""

    def __init__(self, op_name: str, params: dict, metas: tuple, ctx: Context, cfg: Config,
                 is_train: bool = False, over: tuple = ()):
        op = get_op(op_name)
        parsed = op.parse_params(dict(params))
        slots = op.list_arguments(parsed) + op.list_aux(parsed)
        if len(metas) != len(slots):
            raise MXNetError(f"{op_name}: {len(metas)} input array(s) given, the operator takes "
                             f"{len(slots)}: {slots}")
        names = [f"in{i}_{s}" for i, s in enumerate(slots)]
        sym = make_op_symbol(op_name, *[Variable(n) for n in names], name="imperative",
                             **params)
        shapes = {n: m[0] for n, m in zip(names, metas)}
        dtypes = {n: np.dtype(m[1]) for n, m in zip(names, metas)}
        target = ctx.device.target
        compiled = compile_symbol(sym, shapes, dtypes, {}, is_train, cfg, target=target, load=False,
                                  over={j: names[i] for j, i in over})
        self.compiled, self.ctx = compiled, ctx
        self.outputs = [(compiled.graph.values[v].shape, compiled.graph.values[v].dtype)
                        for v in compiled.graph.outputs]
        self._bind = (compiled, names, ctx, op_name, cfg)
        self.elementwise = op.kind <= Kind.BROADCAST
        lowering = lookup(op, target)
        self.inplace = set(lowering.inplace_pairs(parsed)) if lowering is not None else set()
        # aux states a training pass or an optimizer update writes (their write counters move)
        self.n_written_aux = len(op.list_aux(parsed)) if is_train or "update" in op.extra \
            or op_name.startswith("_rt_") else 0

    def __getattr__(self, name: str) -> Any:
        if name != "steps" or "_bind" not in self.__dict__:
            raise AttributeError(name)
        bind = self.__dict__.get("_bind")
        if bind is not None:            # (another thread may have bound it meanwhile)
            BoundProgram.__init__(self, *bind)   # sets steps (or raises again)
            self.__dict__.pop("_bind", None)
        return self.__dict__["steps"]


def _fast_for(op: str, params: dict, inputs: list, out: Any, aliased: list) -> Any:
    """The runner of a repeated ``mx.nd`` call (:func:`~symjit.imperative_runners.fast_runner`, or
    :func:`~symjit.imperative_runners.fast_into` for
    one into ``out``; ``aliased``: whether each input is ``out`` itself) made from the call just
    run: on its call on fewer axes when it has one (:mod:`symjit.imperative_shapes`), the inputs and
    outputs seen with that call's shapes; None when there is none."""
    ctx = inputs[0].context
    canon = _canonical(op, params, inputs)
    if canon is None:
        key, views = (op, params), inputs
    elif canon.picks == list(range(len(inputs))):
        views = [a._view(storage.reshape_view(a._data, s)) for a, s in zip(inputs, canon.in_shapes)]
        key = (canon.op, canon.params)
    else:
        return None
    if out is None:
        call = _lookup(*key, views, ctx)
        run = fast_runner(call, len(inputs), views)
        if run is None or canon is None:
            return run
        in_shapes, out_shapes = canon.in_shapes, canon.out_shapes

        def run_seen(arrays: Any) -> Any:
            r = run(seen(arrays, in_shapes))
            for x, s in zip([r] if isinstance(r, NDArray) else r, out_shapes):
                x._store = x._store.reshape(s)
            return r
        return run_seen
    if canon is not None and (out.shape != canon.out_shapes[0] or not storage.is_contiguous(out._data)):
        return None
    guess = _over([out], views)
    call = _lookup(*key, views, ctx, guess)
    out_view = out if canon is None else out._view(storage.reshape_view(out._data, call.outputs[0][0]))
    if not all(not al or (i, 0) in call.inplace or call.elementwise for i, al in enumerate(aliased)) \
            or not _safe_target(call, out_view, 0, views):
        return None
    run_into = fast_into(call, len(inputs))
    if run_into is None or canon is None:
        return run_into
    in_shapes, out_shape = canon.in_shapes, call.outputs[0][0]

    def seen_into(arrays: Any, out: NDArray) -> NDArray:
        run_into(seen(arrays, in_shapes), out._view(out._store.reshape(out_shape)))
        return out
    return seen_into


def _params_key(params: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def _check_inputs(op: str, inputs: list, where: str, ctx: Context | None = None) -> Context:
    if not inputs:   # an operator without inputs (_zeros, _arange, ...) runs where it is asked to
        return ctx if ctx is not None else current_context()
    for i, a in enumerate(inputs):
        if not isinstance(a, NDArray):
            raise DTypeError(f"{where}: input {i} must be an NDArray, got {type(a).__name__}")
        if a.context != inputs[0].context:
            raise MXNetError(f"{where}: input {i} lives on {a.context}, input 0 on "
                             f"{inputs[0].context}; move one with as_in_context()")
    return inputs[0].context


_HALF = np.dtype(np.float16)


def _is_half(v: Any) -> bool:
    """Whether a param value names float16 (``'float16'``, ``np.float16``, its dtype)."""
    if isinstance(v, str):
        return v == "float16"
    return v is np.float16 or (isinstance(v, np.dtype) and v == _HALF)


def _has_half(inputs: list, params: dict) -> bool:
    return any(a._store.dtype == _HALF for a in inputs) or any(_is_half(v) for v in params.values())


@functools.lru_cache(maxsize=256)
def _half_types(op: str, params: tuple, dtypes: tuple) -> tuple[list, int]:
    """The output dtypes of ``op`` called with ``dtypes`` (float16 among them) and its number of
    arguments (the inputs after them are aux states), by the operator's own type rule."""
    names = [f"in{i}" for i in range(len(dtypes))]
    sym = make_op_symbol(op, *[Variable(n) for n in names], name="imperative", **dict(params))
    _, outs, _ = sym.infer_type(**dict(zip(names, dtypes)))
    return [np.dtype(d) for d in outs], len(sym.list_arguments())


def _converted(a: NDArray, dtype: Any) -> NDArray:
    """``a`` converted to ``dtype`` on the host (a GPU array goes through a host copy: no kernel
    takes float16)."""
    return wrap(a._host().astype(dtype), a.context)


def _invoke_half(op: str, inputs: list, params: dict, out: Any, where: str, ctx: Context) -> list[NDArray]:
    """A call with float16 arrays or a float16 ``dtype`` param: the float32 kernel on widened
    copies; the outputs the float16 call types as float16 are rounded back, and widened aux
    states (the update ops' states, which they change in place) are written back."""
    names = tuple(np.dtype(a.dtype).name for a in inputs)
    try:
        dtypes, n_args = _half_types(op, tuple(params.items()), names)
    except TypeError:   # an unhashable param value (a list): the rule, uncached
        dtypes, n_args = _half_types.__wrapped__(op, tuple(params.items()), names)
    wide = [_converted(a, np.float32) if a._data.dtype == _HALF else a for a in inputs]
    results = invoke_now(op, wide, {k: "float32" if _is_half(v) else v for k, v in params.items()},
                         None, where, ctx)
    for a, w in list(zip(inputs, wide))[n_args:]:
        if w is not a:
            a._write(Ellipsis, w._host().astype(np.float16), where)
    results = [_converted(r, d) if np.dtype(r.dtype) != d else r for r, d in zip(results, dtypes)]
    if out is None:
        return results
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(outs) != len(results):
        raise MXNetError(f"{where}: {len(outs)} out array(s) for {len(results)} outputs")
    for o, r in zip(outs, results):
        _check_out(where, o, r.shape, np.dtype(r.dtype), ctx)._write(Ellipsis, r._data, where)
    return outs


def _lookup(op: str, params: dict, inputs: list, ctx: Context, over: tuple = ()) -> _Call:
    """The compiled call for these inputs' shapes and dtypes; ``over``: ``(output, input)`` pairs
    the caller passes one array for (see :func:`_over`)."""
    metas = tuple((a.shape, np.dtype(a.dtype).str) for a in inputs)
    train = MODE.training
    key = (op, _params_key(params), metas, ctx, True) if train else (op, _params_key(params), metas, ctx)
    if over:
        key += (over,)
    call = _CALLS.get(key)
    if call is None:
        call = _CALLS[key] = _Call(op, params, metas, ctx, default_config(), train, over)
        while len(_CALLS) > MAX_CALLS:
            _CALLS.popitem(last=False)
    else:
        _CALLS.move_to_end(key)
    return call


def _check_out(where: str, out: Any, shape: tuple, dtype: np.dtype, ctx: Context) -> NDArray:
    if not isinstance(out, NDArray):
        raise DTypeError(f"{where}: out must be an NDArray, got {type(out).__name__}")
    if out.shape != tuple(shape) or np.dtype(out.dtype) != dtype:
        raise ShapeError(f"{where}: out has shape {shape_str(out.shape)} {dtype_name(out.dtype)}, "
                         f"the result {shape_str(tuple(shape))} {dtype_name(dtype)}")
    if out.context != ctx:
        raise MXNetError(f"{where}: out lives on {out.context}, the inputs on {ctx}")
    if not storage.is_contiguous(out._store):
        raise MXNetError(f"{where}: out must be a contiguous array")
    return out


def _safe_target(call: _Call, out: NDArray, slot: int, inputs: list) -> bool:
    """Can the program write ``out`` (output ``slot``) directly? Not when it overlaps an input,
    unless it is that very input and the operator writes each element from the same element (an
    elementwise op, or an (input, output) pair its lowering declares in-place)."""
    for i, a in enumerate(inputs):
        if storage.overlaps(out._data, a._data):
            if not ((call.elementwise or (i, slot) in call.inplace) and a.shape == out.shape
                    and storage.same_buffer(out._data, a._data)):
                return False
    return True


def _over(outs: list, inputs: list) -> tuple:
    """``(output, input)`` pairs of a call's ``out`` arrays that are inputs' very arrays
    (``mx.nd.sgd_update(w, g, out=w)``, ``x += y``): the call compiled for those written straight
    into them takes each such array once, so its loop vectorizes."""
    pairs = []
    for j, o in enumerate(outs):
        i = next((i for i, a in enumerate(inputs) if a.size == o.size and a.dtype == o.dtype
                  and storage.same_buffer(o._data, a._data)), None)
        if i is not None:
            pairs.append((j, i))
    return tuple(pairs)


def invoke(op: str, inputs: list, params: dict | None = None, out: Any = None,
           where: str | None = None, ctx: Context | None = None) -> list[NDArray]:
    """Run the registered operator ``op`` (or an alias) on the NDArrays ``inputs`` (its arguments
    then aux states, in the operator's order) with ``params``; return its visible outputs, new
    arrays on the inputs' context, or written into ``out`` (a list with one NDArray per output).
    An operator without inputs runs on ``ctx`` (default: the current context).

    >>> import symjit as mx
    >>> x = mx.nd.array([1, -2, 3])
    >>> y = mx.nd.zeros((3,))
    >>> invoke('relu', [x], out=[y])[0] is y, y.asnumpy().tolist()
    (True, [1.0, 0.0, 3.0])
    """
    if not profiler.active("profile_imperative"):
        return _invoke(op, inputs, params, out, where, ctx)
    start = time.perf_counter()
    try:
        return _invoke(op, inputs, params, out, where, ctx)
    finally:
        profiler.record_op(arith.scalar_op_name(op, inputs), start, time.perf_counter())


def _invoke(op: str, inputs: list, params: dict | None, out: Any, where: str | None,
            ctx: Context | None = None) -> list[NDArray]:
    if MODE.recording and MODE.recorder is not None:     # autograd.record(): run and record
        return MODE.recorder(op, list(inputs), dict(params or {}), out, where, ctx)
    return invoke_now(op, inputs, params, out, where, ctx)


def invoke_now(op: str, inputs: list, params: dict | None, out: Any = None, where: str | None = None,
               ctx: Context | None = None) -> list[NDArray]:
    """:func:`invoke` without recording (what the autograd recorder calls): the operator in the
    thread's mode (training semantics while ``MODE.training``)."""
    params = dict(params or {})
    where = where or op
    ctx = _check_inputs(op, list(inputs), where, ctx)
    if _has_half(inputs, params):
        return _invoke_half(op, list(inputs), params, out, where, ctx)
    canon = _canonical(op, params, inputs)
    if canon is not None:
        return _invoke_canonical(canon, op, inputs, params, out, where, ctx)
    return _invoke_as_given(op, inputs, params, out, where, ctx)


def _invoke_as_given(op: str, inputs: list, params: dict, out: Any, where: str,
                     ctx: Context) -> list[NDArray]:
    outs = None if out is None else list(out) if isinstance(out, (list, tuple)) else [out]
    guess = _over(outs, inputs) if outs and all(isinstance(o, NDArray) for o in outs) else ()
    try:
        call = _lookup(op, params, list(inputs), ctx, guess)
    except MXNetError as exc:     # the one-node symbol's node name says nothing to the caller
        raise type(exc)(str(exc).replace(" 'imperative' (", " (", 1)) from None
    for a in inputs[len(inputs) - call.n_written_aux:] if call.n_written_aux else ():
        a._bump()
    if out is None:
        results = [NDArray(storage.empty(s, d, ctx), ctx) for s, d in call.outputs]
        call.run([a._data for a in inputs] + [r._data for r in results])
        return results
    if len(outs) != len(call.outputs):
        raise MXNetError(f"{where}: {len(outs)} out array(s) for {len(call.outputs)} outputs")
    outs = [_check_out(where, o, s, d, ctx) for o, (s, d) in zip(outs, call.outputs)]
    direct = [_safe_target(call, o, j, inputs) for j, o in enumerate(outs)]
    over = tuple((j, i) for j, i in guess if direct[j])
    if over != guess:
        call = _lookup(op, params, list(inputs), ctx, over)
    targets = [o if ok else NDArray(storage.empty(o.shape, np.dtype(o.dtype), ctx), ctx)
               for o, ok in zip(outs, direct)]
    call.run([a._data for a in inputs] + [t._data for t in targets])
    for o, t, ok in zip(outs, targets, direct):
        o._bump()
        if not ok:
            with storage.device_scope(ctx):
                storage.copy_into(o._data, t._data)
    return outs


def _canonical(op: str, params: dict, inputs: list) -> Canonical | None:
    """The call on fewer axes sharing kernels with other shapes (:mod:`symjit.imperative_shapes`),
    for contiguous inputs; None to run the call as it is."""
    if not inputs or any(not storage.is_contiguous(a._data) for a in inputs):
        return None
    try:
        return canonical_cached(op, _params_key(params), params, tuple(a.shape for a in inputs))
    except TypeError:   # an unhashable param value
        return None


def _invoke_canonical(canon: Canonical, op: str, inputs: list, params: dict, out: Any, where: str,
                      ctx: Context) -> list[NDArray]:
    """Run ``canon`` on views of ``inputs`` (and of ``out``); the outputs seen with the original
    call's shapes."""
    outs = None if out is None else list(out) if isinstance(out, (list, tuple)) else [out]
    if outs is not None and (len(outs) != len(canon.out_shapes) or any(
            not isinstance(o, NDArray) or o.shape != s or not storage.is_contiguous(o._data)
            for o, s in zip(outs, canon.out_shapes))):
        return _invoke_as_given(op, inputs, params, out, where, ctx)   # its checks say what is wrong
    views = [inputs[i]._view(storage.reshape_view(inputs[i]._data, s))
             for i, s in zip(canon.picks, canon.in_shapes)]
    try:
        if outs is None:
            results = _invoke_as_given(canon.op, views, canon.params, None, where, ctx)
            return [NDArray(storage.reshape_view(r._data, s), ctx) for r, s in zip(results, canon.out_shapes)]
        shapes = [s for s, _ in _lookup(canon.op, canon.params, views, ctx, _over(outs, views)).outputs]
        _invoke_as_given(canon.op, views, canon.params,
                         [o._view(storage.reshape_view(o._data, s)) for o, s in zip(outs, shapes)],
                         where, ctx)
        return outs
    except MXNetError:   # reported for the call as given (its shapes, its operator)
        return _invoke_as_given(op, inputs, params, out, where, ctx)


def cached_calls() -> int:
    """How many compiled operator calls the table holds."""
    return len(_CALLS)


def clear_calls() -> None:
    """Forget every compiled operator call (their kernels stay in the kernel cache)."""
    _CALLS.clear()


def nd_function(called: str) -> Any:
    """``mx.nd.<called>``: the registered operator ``called`` (or alias) as an NDArray function:
    inputs positionally (in the operator's order) or by input name, params by keyword (or
    positionally after the inputs, in the operator's parameter order, as MXNet allows), ``out=``
    an NDArray (or a list, one per output); returns the output, or the list of visible outputs.
    It runs the operator's compiled program on the inputs' device (:func:`invoke`), in inference
    mode (BatchNorm with its moving statistics, Dropout as the identity), as MXNet's NDArray
    functions do outside ``autograd.record``. A repeated call (the same params, input shapes and
    dtypes, no ``out=``) goes straight to the compiled function (:mod:`symjit.imperative_runners`),
    under ``autograd.record`` too (then keyed by the mode as well, and handed to the recorder with
    what it needs to record it, :class:`_Recorded`); float16 calls take :func:`_invoke_half` every
    time."""
    op = get_op(called)
    fast: dict = {}     # (params, each input's shape, dtype, storage type) -> a runner (fast_runner)
    fast_get = fast.get
    recorded: dict = {}     # (training, the key of fast) -> (the recorder's token, a runner)
    recorded_get, rec = recorded.get, RECORDED
    fast_ok = "update" not in op.extra
    # an update operator's float params go into a scalar vector at run time (_invoke_update): its
    # repeated calls into the weight are keyed without their values
    upd_rt = frozenset(runtime_params(op.extra["update"])) \
        if "update" in op.extra and "runtime" not in op.extra else None
    state = _PROFILER
    mode = MODE
    queue, lazy_ok, pending = QUEUE, queueable(op), dispatch.PENDING
    sparse_live, sparse_active, sparse_call = _SPARSE_LIVE, _sparse.active, _sparse.call

    def fn(*args: Any, out: Any = None, name: str | None = None, **kwargs: Any) -> Any:
        if sparse_live[0] and sparse_active(args, kwargs, out):     # MXNet's storage fallback
            return sparse_call(called, fn, args, kwargs, out)
        if lazy_ok and queue.on and not mode.busy and not state.running:
            queued = queue.call(op, called, args, kwargs, out)
            if queued is not None:
                return queued
        if pending:      # queued work runs first; then the storage is read as it is (_store)
            dispatch.settle()
        key = None
        if out is None and fast_ok:
            try:
                if kwargs:
                    key = (tuple(kwargs.items()),
                           *[(a._store.shape, a._store.dtype, type(a._store)) for a in args])
                elif len(args) == 1:
                    d = args[0]._store
                    key = (d.shape, d.dtype, type(d))
                elif len(args) == 2:
                    d, e = args[0]._store, args[1]._store
                    key = (d.shape, d.dtype, type(d), e.shape, e.dtype, type(e))
                else:
                    key = tuple([(a._store.shape, a._store.dtype, type(a._store)) for a in args])
                if mode.recording:
                    hit = recorded_get((mode.training, key))
                    if hit is not None and not state.running:
                        return rec.call(hit[0], args, hit[1])
                    run = None
                else:
                    run = fast_get(key)
            except (AttributeError, TypeError):     # a non-NDArray positional, an unhashable param
                run = key = None
            if run is not None and not state.running and not mode.busy:
                return run(args)
        elif type(out) is NDArray and fast_ok and not _PROFILER.running and not mode.busy:
            try:
                od = out._store
                key = ("out", tuple(kwargs.items()), od.shape, od.dtype, type(od),
                       *[(a._store.shape, a._store.dtype, type(a._store), a._store is od) for a in args])
                run = fast.get(key)
            except (AttributeError, TypeError):
                run = key = None
            if run is not None and (any(k[3] for k in key[5:]) or not any(
                    np.may_share_memory(od, a._store) for a in args)):
                return run(args, out)
        elif upd_rt is not None and type(out) is NDArray and not state.running and not mode.busy \
                and not mode.recording:
            try:
                od = out._store
                key = ("update", tuple((k, None if k in upd_rt and isinstance(v, Real) else v)
                                       for k, v in kwargs.items()),
                       *[(a._store.shape, a._store.dtype, type(a._store), a._store is od) for a in args])
                run = fast_get(key)
            except (AttributeError, TypeError):
                run = key = None
            if run is not None and key[2][3] and not any(
                    not k[3] and np.may_share_memory(od, a._store) for a, k in zip(args, key[2:])):
                return run(args, kwargs, out)
        kwargs = without_absent(op, kwargs)
        n_arrays = positional_inputs(op, args, kwargs, NDArray)
        args, extra = args[:n_arrays], args[n_arrays + absent_inputs(op, args, n_arrays, kwargs):]
        if any(isinstance(a, NDArray) for a in extra) or (extra and n_arrays < min_inputs(op, kwargs)):
            raise DTypeError(f"{called}: positional input {n_arrays} must be an NDArray, got "
                             f"{type(extra[0]).__name__}; inputs come first, then parameters")
        if extra:      # parameters given positionally after the inputs, in the operator's order
            free = [p.name for p in op.params if p.name not in kwargs]
            if len(extra) > len(free):
                raise MXNetError(f"{called}: {len(extra)} positional parameter(s) given, it has {free}")
            kwargs = {**kwargs, **dict(zip(free, extra))}
        given_kw = {k: v for k, v in kwargs.items() if isinstance(v, NDArray)}
        params = {k: v for k, v in kwargs.items() if not isinstance(v, NDArray)}
        if op.variadic is not None:
            params.setdefault(op.variadic, len(args))
        parsed = op.parse_params(dict(params))
        slots = op.list_arguments(parsed) + op.list_aux(parsed)
        if len(args) > len(slots):
            raise MXNetError(f"{called}: {len(args)} inputs given, it takes {len(slots)}: {slots}")
        given = dict(zip(slots, args))
        for k, v in given_kw.items():
            if k not in slots:
                raise MXNetError(f"{called}: unknown input {k!r}; inputs are {slots}")
            if k in given:
                raise MXNetError(f"{called}: input {k!r} given twice")
            given[k] = v
        missing = [s for s in slots if s not in given]
        if missing:
            raise MXNetError(f"{called}: input(s) {missing} not given; it takes {slots}")
        if "update" in op.extra and "runtime" not in op.extra:
            outs = _invoke_update(op, parsed, params, given, out, called)
            if key is not None and key[0] == "update" and len(args) == len(slots) and not given_kw \
                    and len(fast) < MAX_CALLS:
                runner = _fast_update(op, parsed, params, given, out)
                if runner is not None:
                    fast[key] = runner
        else:
            inputs = [given[s] for s in slots]
            outs = invoke(called, inputs, params, out, called)
            if key is not None and inputs and len(args) == len(inputs) and not given_kw \
                    and len(fast) < MAX_CALLS and not _has_half(inputs, params) and not mode.busy:
                aliased = [k[3] for k in key[5:]] if out is not None else []
                runner = _fast_for(called, params, inputs, out, aliased)
                if runner is not None:
                    fast[key] = runner
            elif key is not None and inputs and len(outs) == 1 and len(args) == len(inputs) and not given_kw \
                    and mode.recording and rec.token is not None and len(recorded) < MAX_CALLS \
                    and not _has_half(inputs, params):
                _remember_recorded(recorded, (mode.training, key), rec.token(op, params, called),
                                   called, params, inputs)
        return outs[0] if len(outs) == 1 else outs

    fn.__name__ = fn.__qualname__ = called
    fn.__doc__ = (f"{op.doc.strip() or f'The {op.name} operator.'}\n\n"
                  f"NDArray form of ``mx.sym.{called}``; see :func:`symjit.imperative.nd_function`.")
    return fn


def _remember_recorded(table: dict, key: tuple, token: Any, called: str, params: dict,
                       inputs: list) -> None:
    """Keep the runner of a recorded call just made with its recorder's token (none when the
    recorder records such calls otherwise, or when the call has no runner)."""
    if token is not None:
        runner = _fast_for(called, params, inputs, None, [])
        if runner is not None:
            table[key] = (token, runner)


def _update_call(op: Any, parsed: dict, params: dict, given: dict, where: str) -> tuple:
    """An optimizer update op's ``_rt_`` twin as called on NDArrays: ``(inputs, params, number
    of arguments)``, the inputs its arguments, then the float params in a float64 vector (so that
    a learning rate changing every step reuses one compiled kernel), then its states."""
    from .ndarray.creation import place
    spec = op.extra["update"]
    runtime = set(runtime_params(spec))
    args = [given[s] for s in op.list_arguments(parsed)]
    aux = [given[s] for s in op.list_aux(parsed)]
    for i, a in enumerate(args + aux):
        if not isinstance(a, NDArray):
            raise DTypeError(f"{where}: input {i} must be an NDArray, got {type(a).__name__}")
    vec = runtime_scalars(spec, parsed, parsed["num_weights"] if spec.group else 1)
    inputs = args + [place(vec, args[0].context, where)] + aux
    return inputs, {k: v for k, v in params.items() if k not in runtime}, len(args)


def _invoke_update(op: Any, parsed: dict, params: dict, given: dict, out: Any, where: str) -> list[NDArray]:
    """An optimizer update op called on NDArrays: its ``_rt_`` twin (:func:`_update_call`)."""
    inputs, rt_params, _ = _update_call(op, parsed, params, given, where)
    return invoke(f"_rt_{op.name}", inputs, rt_params, out, where)


def _fast_update(op: Any, parsed: dict, params: dict, given: dict, out: Any) -> Any:
    """The runner of a repeated update operator call into its weight, as optimizers written
    against MXNet's operators make every step (``mx.nd.sgd_mom_update(w, g, m, lr=lr, out=w)``):
    ``run(arrays, kwargs, out)`` writes the call's float params into a scalar vector it keeps and
    calls the ``_rt_`` twin's runner (:func:`_fast_for`); None where there is none (several
    weights, device memory, ``out`` not the weight's array)."""
    spec = op.extra["update"]
    weight = given[op.extra["outputs_like"](parsed)[0]]
    if spec.group or type(out) is not NDArray or out._store is not weight._store \
            or not out.context.device.host_memory:
        return None
    inputs, rt_params, n_args = _update_call(op, parsed, params, given, op.name)
    if _has_half(inputs, params):      # computed in float32 and written back (_invoke_half)
        return None
    runner = _fast_for(f"_rt_{op.name}", rt_params, inputs, out, [a._store is out._store for a in inputs])
    if runner is None:
        return None
    scalars, layout = inputs[n_args], scalar_layout(spec, 1)
    vec = scalars._store
    given_rt = [(k, layout[k]) for k in params if k not in rt_params]

    def run(arrays: Any, kwargs: dict, out: NDArray) -> NDArray:
        for k, at in given_rt:
            vec[at] = kwargs[k]
        runner([*arrays[:n_args], scalars, *arrays[n_args:]], out)
        for a in arrays[n_args:]:      # the states it wrote
            a._bump()
        return out
    return run


def install_nd_functions(module: Any) -> list[str]:
    """Give ``module`` (``mx.nd``) a function for every public registered operator and alias it
    does not define itself (Custom, which runs Python code, aside); return their names."""
    from .ndarray import arith
    from .ops.registry import aliases, all_ops
    names = sorted(n for n in [*all_ops(), *aliases()]
                   if not n.startswith("_") and n != "Custom" and not hasattr(module, n))
    for n in names:
        setattr(module, n, nd_function(n))
    # NDArray arithmetic's operators, and every generated function (mx.nd.sparse's names)
    for n in {*arith.ARRAY_OP.values(), "negative", "abs", *names}:
        dispatch.install_function(n, getattr(module, n))
    dispatch.install_function("expand_dims", nd_function("expand_dims"))  # mx.nd's checks its axis
    module.__all__ = [*module.__all__, *names]
    from .symbol import SUBSPACES
    for space, prefix in SUBSPACES.items():   # mx.nd.contrib.<name>: the operator <prefix><name>
        sub = sys.modules.get(f"{module.__name__}.{space}") or types.ModuleType(
            f"{module.__name__}.{space}", f"mx.nd.{space}: the operators {prefix}<name>.")
        for n in sorted([*all_ops(), *aliases()]):
            if n.startswith(prefix) and not hasattr(sub, n[len(prefix):]):
                setattr(sub, n[len(prefix):], nd_function(n))
        setattr(module, space, sub)
        sys.modules[sub.__name__] = sub
    from .ndarray import internal
    internal_ns = types.ModuleType(f"{module.__name__}._internal", "mx.nd._internal: the operators _<name>.")
    for n in internal.__all__:
        setattr(internal_ns, n, getattr(internal, n))
    for n in sorted([*all_ops(), *aliases()]):
        if n.startswith("_") and not n.startswith(("_backward", "_rt_")) and not hasattr(internal_ns, n):
            setattr(internal_ns, n, nd_function(n))
    module._internal = sys.modules[internal_ns.__name__] = internal_ns
    from .symbol import control_flow
    module.contrib.foreach = control_flow.nd_foreach
    module.contrib.while_loop = control_flow.nd_while_loop
    module.contrib.cond = control_flow.nd_cond
    from . import contrib_functions as cf
    module.contrib.rand_zipfian = cf.rand_zipfian_for(module, module.random)
    module.contrib.uniform = cf.uniform_for(module.random)
    module.contrib.boolean_mask = cf.boolean_mask_for(module, False)
    module.contrib.backward_index_copy = cf.backward_index_copy_for(module)
    module.contrib.backward_hawkesll = cf.backward_hawkesll_for(module, _nd_call)
    for mp in (False, True):
        prefix = "mp_" if mp else ""
        setattr(module.contrib, f"{prefix}adamw_update", cf.adamw_for(module, _nd_call, mp))
        setattr(module.contrib, f"multi_{prefix}adamw_update", cf.multi_adamw_for(module, _nd_call, mp))
        setattr(module.contrib, f"multi_{prefix}lamb_update", cf.multi_lamb_for(module, mp))
    return names


def _nd_call(op: str, *inputs: Any, out: Any = None, name: str | None = None, **params: Any) -> Any:
    return nd_function(op)(*inputs, out=out, **params)


dispatch.install(invoke)
