"""``mx.autograd``: gradients of imperative ``mx.nd`` code, computed by a compiled program.

While :func:`record` is on, every operator call on an array that depends on a marked variable
(:func:`mark_variables`, ``NDArray.attach_grad``) still runs its compiled kernel at once and also
leaves an entry on its outputs: the operator, its params, where each input came from (another
entry's output, or a *leaf*: an array recorded ops did not make) and the mode. ``backward`` walks
the entries reaching the heads, turns them into a graph of the registered operators (a Symbol
whose variables are the leaves) and binds it for training with the compiler ``bind`` uses
(gradient graph from the operators' rules, fusion, memory planning). The bound program is kept,
keyed by the recording's structure (operators, params, modes, how the entries connect, the
leaves' shapes and dtypes and grad_reqs, which head gradients are given), so a training loop
recording the same computation every step compiles its backward once and then only fills in the
leaves' values and calls it.

In this first form the compiled training program computes the forward pass again from the
leaves before its backward pass (the recorded intermediate values are not fed in). Two
operators are recorded so that this recomputation gives the recorded values: Dropout in a
training pass runs as a mask drawn by Dropout on ones times the input (the mask a recorded
constant), and BatchNorm recorded in predict mode binds with ``use_global_stats``; aux states
are copies, so the recomputation leaves the moving statistics alone. Samplers on recorded inputs
give constants (they have no gradient); a differentiable random operator in training mode
(``RNN`` with dropout) is an error. NDArray methods that make arrays without an operator call
(views, indexing, ``astype``, ``copyto``, assignment) reach this module through
``ndarray.dispatch.recorded`` and are recorded as the equivalent operators. Because the leaves
are read again when ``backward`` runs, each entry keeps the write count of the leaves it read
(``NDArray._cell``: one counter per storage, shared by views) and ``backward`` refuses a
recording whose leaves were written since.

>>> import symjit as mx
>>> x = mx.nd.array([1.0, 2.0, 3.0])
>>> x.attach_grad()
>>> with mx.autograd.record():
...     y = x * x + x
>>> y.backward()
>>> x.grad.asnumpy().tolist()
[3.0, 5.0, 7.0]
"""
from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from .base import MXNetError
from .context import Context
from .imperative import MODE, invoke_now
from .ndarray import NDArray, dispatch
from .ndarray.creation import ones, zeros
from .ops.registry import get_op
from .symbol.symbol import Group, Symbol, Variable, make_op_symbol

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad", "get_symbol", "Function",
           "compiles", "cached_programs", "clear_programs", "MAX_PROGRAMS", "install",
           "GraphOp", "record_graph",
           "NDArray"]   # MXNet's module exports it to ``from mxnet.autograd import *`` too

GRAD_REQS = ("write", "add", "null")
MAX_PROGRAMS = 64       # compiled backward programs kept (least recently used dropped)
_PROGRAMS: collections.OrderedDict[tuple, _Program] = collections.OrderedDict()
_STATS = {"compiles": 0}


# --- modes ------------------------------------------------------------------------------------

def _set(recording: bool, training: bool) -> None:
    MODE.recording, MODE.training = recording, training
    MODE.busy = recording or training


def set_recording(is_recording: bool) -> bool:  # noqa: FBT001 - MXNet's signature
    """Turn recording on or off for this thread; return the previous state.

    >>> import symjit as mx
    >>> mx.autograd.set_recording(True), mx.autograd.set_recording(False)
    (False, True)
    """
    prev = MODE.recording
    _set(bool(is_recording), MODE.training)
    return prev


def set_training(train_mode: bool) -> bool:  # noqa: FBT001 - MXNet's signature
    """Set this thread's mode (True: training semantics for Dropout, BatchNorm); return the
    previous one.

    >>> import symjit as mx
    >>> mx.autograd.set_training(True), mx.autograd.set_training(False)
    (False, True)
    """
    prev = MODE.training
    _set(MODE.recording, bool(train_mode))
    return prev


def is_recording() -> bool:
    """Whether operator calls are being recorded.

    >>> import symjit as mx
    >>> with mx.autograd.record():
    ...     mx.autograd.is_recording()
    True
    """
    return MODE.recording


def is_training() -> bool:
    """Whether operators run with training semantics.

    >>> import symjit as mx
    >>> with mx.autograd.record(train_mode=False):
    ...     mx.autograd.is_training()
    False
    """
    return MODE.training


@contextlib.contextmanager
def _scope(recording: bool | None, training: bool | None) -> Iterator[None]:
    old = (MODE.recording, MODE.training)
    _set(old[0] if recording is None else recording, old[1] if training is None else training)
    try:
        yield
    finally:
        _set(*old)


def record(train_mode: bool = True) -> contextlib.AbstractContextManager:  # noqa: FBT001, FBT002
    """A scope that records operator calls for :func:`backward`, in training mode by default.

    >>> import symjit as mx
    >>> with mx.autograd.record():
    ...     mx.autograd.is_recording(), mx.autograd.is_training()
    (True, True)
    """
    return _scope(True, bool(train_mode))


def pause(train_mode: bool = False) -> contextlib.AbstractContextManager:  # noqa: FBT001, FBT002
    """A scope inside :func:`record` whose calls are not recorded (predict mode by default).

    >>> import symjit as mx
    >>> with mx.autograd.record(), mx.autograd.pause():
    ...     mx.autograd.is_recording()
    False
    """
    return _scope(False, bool(train_mode))


def train_mode() -> contextlib.AbstractContextManager:
    """A scope with training semantics (recording unchanged).

    >>> import symjit as mx
    >>> with mx.autograd.train_mode():
    ...     mx.autograd.is_training()
    True
    """
    return _scope(None, True)


def predict_mode() -> contextlib.AbstractContextManager:
    """A scope with inference semantics (recording unchanged).

    >>> import symjit as mx
    >>> with mx.autograd.record(), mx.autograd.predict_mode():
    ...     mx.autograd.is_training()
    False
    """
    return _scope(None, False)


# --- variables and the recording --------------------------------------------------------------

def mark_variables(variables: Any, gradients: Any, grad_reqs: Any = "write") -> None:
    """Make ``variables`` leaves whose gradients :func:`backward` writes into ``gradients``
    (``grad_reqs``: ``'write'``, ``'add'`` (accumulate) or ``'null'``, one or one per variable).

    >>> import symjit as mx
    >>> x, dx = mx.nd.ones((2,)), mx.nd.zeros((2,))
    >>> mx.autograd.mark_variables([x], [dx])
    >>> with mx.autograd.record():
    ...     y = x * 3
    >>> y.backward(); dx.asnumpy().tolist()
    [3.0, 3.0]
    """
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    variables, gradients = list(variables), list(gradients)
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if not len(variables) == len(gradients) == len(reqs):
        raise MXNetError(f"mark_variables: {len(variables)} variables, {len(gradients)} gradients "
                         f"and {len(reqs)} grad_reqs; give one of each per variable")
    for i, (v, g, r) in enumerate(zip(variables, gradients, reqs)):
        if not isinstance(v, NDArray) or not isinstance(g, NDArray):
            raise MXNetError(f"mark_variables: variable {i} and its gradient must be NDArrays, got "
                             f"{type(v).__name__} and {type(g).__name__}")
        if r not in GRAD_REQS:
            raise MXNetError(f"mark_variables: grad_req {r!r} of variable {i} must be one of {GRAD_REQS}")
        if g.shape != v.shape:
            raise MXNetError(f"mark_variables: gradient {i} has shape {g.shape}, its variable {v.shape}")
        v._ag_grad, v._ag_req, v._ag_node, v._fresh_grad = g, r, None, False


class _Entry:
    """One recorded operator call: op, params, inputs' sources ((entry, output) or a leaf
    NDArray), each leaf's write count when it was recorded (None: not checked), number of
    outputs, mode; ``freed`` once a backward without ``retain_graph`` used it."""

    __slots__ = ("op", "params", "sources", "vers", "n_out", "train", "freed")

    def __init__(self, op: str, params: dict, sources: list, n_out: int, train: bool,
                 vers: list | None = None):
        self.op, self.params, self.sources, self.n_out, self.train = op, params, sources, n_out, train
        self.vers = vers if vers is not None else [None] * len(sources)
        self.freed = False


def _tracked(a: Any) -> bool:
    return getattr(a, "_ag_node", None) is not None or getattr(a, "_ag_req", None) is not None


def _source(a: NDArray, where: str) -> tuple[Any, int | None]:
    """Where input ``a`` comes from: its entry's output, or ``a`` itself as a leaf, with the
    leaf's write count. An array written in place after it was recorded (through a view, or by
    a call that was not recorded) is an error: its recording no longer describes its values."""
    node = getattr(a, "_ag_node", None)
    if node is None:
        return a, a._cell()[0]
    if a._ver is not None and a._ver[0] != a._ag_ver:
        raise MXNetError(f"{where}: an input of shape {a.shape} (computed by {node[0].op}) was "
                         "changed in place after it was recorded (a write through a view of it, or "
                         "one outside autograd.record()); its gradient would be wrong. Record the "
                         "change itself (assign to the array, not to a view) or copy the array first")
    return node, None


def _mark(outs: list, entry: _Entry) -> None:
    for i, o in enumerate(outs):
        o._ag_node, o._ag_ver = (entry, i), o._cell()[0]


def _constant(outs: Any) -> Any:
    """Arrays written with values that depend on no variable: no recording reaches them."""
    for o in outs if isinstance(outs, (list, tuple)) else [outs]:
        if isinstance(o, NDArray):
            o._ag_node = None
    return outs


def _no_variable_write(a: Any, where: str) -> None:
    if getattr(a, "_ag_req", None) is not None:
        raise MXNetError(f"{where}: writes in place into a variable (an array with attach_grad() or "
                         f"mark_variables(), shape {a.shape}) while recording; its gradient could "
                         "not be computed. Write into a copy, or do the update under autograd.pause()")
    if getattr(a, "_is_view", False):
        raise MXNetError(f"{where}: writes a recorded value into a view (a slice, reshape or "
                         f"detach() result, shape {a.shape}) while recording; the arrays sharing its "
                         "storage would not be recorded. Assign into the array itself "
                         "(array[key] = value) instead")


_SAMPLERS = ("_random_", "_sample_", "_shuffle", "_image_random_")


def _draws(opdef: Any, params: dict) -> bool:
    """Whether operator ``opdef`` draws random numbers when called with ``params`` now."""
    name = opdef.name
    if name.startswith(_SAMPLERS) and not name.startswith("_random_pdf_"):
        return True
    return name == "RNN" and MODE.training and opdef.parse_params(dict(params))["p"] > 0


def _record(op: str, inputs: list, params: dict, out: Any, where: str | None, ctx: Any) -> list[NDArray]:
    """The recorder :mod:`symjit.imperative` calls while recording: run the call, and record it
    when an input depends on a variable."""
    if not any(_tracked(a) for a in inputs):
        return _constant(invoke_now(op, inputs, params, out, where, ctx))
    opdef = get_op(op)
    name, where = opdef.name, where or op
    if _draws(opdef, params):
        if opdef.grad is None and opdef.expand is None or (
                name == "_sample_multinomial" and not opdef.parse_params(dict(params))["get_prob"]):
            return _constant(invoke_now(op, inputs, params, out, where, ctx))   # no gradient
        raise MXNetError(f"{where}: operator {name} draws random numbers and is differentiable; "
                         "recording it in training mode is not supported by symjit's autograd (the "
                         "compiled backward recomputes the forward pass and would draw other numbers)"
                         "; record it in predict mode (autograd.record(train_mode=False)) or without "
                         "dropout (p=0)")
    if name == "RNN" and opdef.parse_params(dict(params))["p"] > 0:
        params = dict(params, p=0.0)        # predict mode: no dropout, in the recomputation too
    if name == "Dropout":
        p = get_op(op).parse_params(dict(params))
        if not (MODE.training or p["mode"] == "always"):        # the identity
            return _record("_copy", inputs[:1], {}, out, where, ctx)
        x = inputs[0]
        axes = {a % x.ndim for a in p["axes"]}
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        mask = invoke_now("Dropout", [ones(shape, ctx=x.context, dtype=x.dtype)], params, None, where)[0]
        return _record("broadcast_mul", [x, mask], {}, out, where, ctx)
    pairs = [_source(a, where) for a in inputs]
    if MODE.training and opdef.aux:   # aux states a training pass updates: its result ignores them
        n_aux = len(opdef.list_aux(opdef.parse_params(dict(params))))
        pairs[len(pairs) - n_aux:] = [(s, None) for s, _ in pairs[len(pairs) - n_aux:]] if n_aux else []
    targets = [] if out is None else list(out) if isinstance(out, (list, tuple)) else [out]
    for t in targets:
        _no_variable_write(t, where)
    for i, (a, (_, v)) in enumerate(zip(inputs, pairs)):    # a leaf the call overwrites: its
        if v is not None and any(storage_overlaps(a, t) for t in targets):   # values as they were
            snap = a._copyto(a.context)
            pairs[i] = (snap, snap._cell()[0])
    outs = invoke_now(op, inputs, params, out, where, ctx)
    _mark(outs, _Entry(name, dict(params), [s for s, _ in pairs], len(outs), MODE.training,
                       [v for _, v in pairs]))
    return outs


GRAPH = "_graph"   # the op name of an entry whose operator is a whole traced Symbol


class GraphOp:
    """A traced Symbol recorded as one operator (a hybridized Gluon block's call): its inputs are
    the symbol's variables in ``list_inputs`` order; ``key`` tells recordings apart (the symbol's
    structure); ``backward`` inlines its nodes, renamed under the entry's name, into the graph it
    binds."""

    def __init__(self, symbol: Symbol, key: str):
        self.symbol, self.key = symbol, key
        self.inputs = symbol.list_inputs()
        self.aux = set(symbol.list_auxiliary_states())

    def __repr__(self) -> str:
        return f"GraphOp({self.key})"

    def inline(self, inputs: list[Symbol], name: str) -> Symbol:
        return self.symbol(name=name, **dict(zip(self.inputs, inputs)))


def record_graph(op: GraphOp, inputs: list[NDArray], outs: list[NDArray]) -> list[NDArray]:
    """Record ``outs``, computed by running ``op``'s symbol on ``inputs`` (one array per
    variable), as one entry while recording and when an input depends on a variable. Aux states
    are not version-checked: a training pass updates them in place.

    >>> import symjit as mx
    >>> x = mx.nd.array([2.0]); x.attach_grad()
    >>> op = mx.autograd.GraphOp(mx.sym.var('a') * mx.sym.var('a'), 'square')
    >>> with mx.autograd.record():
    ...     y = mx.autograd.record_graph(op, [x], [x * 0 + 4])[0]
    >>> y.backward(); x.grad.asnumpy().tolist()
    [4.0]
    """
    if not MODE.recording or not any(_tracked(a) for a in inputs):
        return _constant(outs)
    pairs = [_source(a, "record_graph") for a in inputs]
    pairs = [(s, None) if n in op.aux else (s, v) for n, (s, v) in zip(op.inputs, pairs)]
    _mark(outs, _Entry(GRAPH, {"graph": op}, [s for s, _ in pairs], len(outs), MODE.training,
                       [v for _, v in pairs]))
    return outs


def storage_overlaps(a: Any, b: Any) -> bool:
    from .ndarray import storage
    return isinstance(a, NDArray) and isinstance(b, NDArray) and storage.overlaps(a._data, b._data)


# --- NDArray methods that make arrays without an operator call --------------------------------

def _chain(result: NDArray, first: Any, steps: list, where: str) -> NDArray:
    """Record ``result`` as the operators ``steps`` (op, params, extra inputs: constant arrays)
    applied in turn to ``first`` (an array, or a node of an earlier chain)."""
    src = _source(first, where)
    for op, params, extra in steps:
        pairs = [src] + [(c, c._cell()[0]) for c in extra]
        entry = _Entry(op, params, [s for s, _ in pairs], 1, MODE.training, [v for _, v in pairs])
        src = ((entry, 0), None)
    result._ag_node, result._ag_ver = src[0], result._cell()[0]
    return result


def _const(a: np.ndarray, like: NDArray) -> NDArray:
    from .ndarray.ndarray import wrap
    return wrap(np.ascontiguousarray(a), like.context)


def _positions(shape: tuple, key: Any) -> np.ndarray:
    """The flat positions ``array[key]`` selects from an array of ``shape``, in the result's shape."""
    from .ndarray.ndarray import _index_array
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)[_index_array(key)]


def _getitem(result: NDArray, x: NDArray, key: Any) -> NDArray:
    where = "NDArray.__getitem__"
    if isinstance(key, int):                                      # a row: slice_axis + Reshape
        return _chain(result, x, [("slice_axis", {"axis": 0, "begin": key, "end": key + 1}, []),
                                  ("Reshape", {"shape": result.shape}, [])], where)
    if isinstance(key, slice) and key.step in (None, 1):
        begin, end, _ = key.indices(x.shape[0])
        return _chain(result, x, [("slice_axis", {"axis": 0, "begin": begin, "end": max(begin, end)}, []),
                                  ("Reshape", {"shape": result.shape}, [])], where)
    pos = _positions(x.shape, key).reshape(-1)        # any other key: take from the flat array
    return _chain(result, x, [("Reshape", {"shape": (-1,)}, []),
                              ("take", {"axis": 0}, [_const(pos, x)]),
                              ("Reshape", {"shape": result.shape}, [])], where)


def _setitem(_: None, x: NDArray, key: Any, value: Any) -> None:
    where = "NDArray.__setitem__"
    traced = isinstance(value, NDArray) and _tracked(value)
    if not (traced or _tracked(x)):
        x._setitem(key, value)
        return
    _no_variable_write(x, where)
    if getattr(x, "_ag_node", None) is not None:
        old = _source(x, where)
    else:                                    # an array no recording reached: its values as they were
        snap = x._copyto(x.context)
        old = (snap, snap._cell()[0])
    x._setitem(key, value)
    pos = _positions(x.shape, key)
    mask = np.zeros(x.size, dtype=x.dtype)
    mask[pos.reshape(-1)] = 1
    mask = _const(mask.reshape(x.shape), x)
    if not traced:                           # the assigned values are constants
        new = x._copyto(x.context)
        _assigned(x, mask, (new, new._cell()[0]), old)
        return
    if pos.size != np.unique(pos).size:
        raise MXNetError(f"{where}: an assignment to repeated positions of a recorded array is not "
                         "supported while recording")
    steps: list = []
    if np.dtype(value.dtype) != np.dtype(x.dtype):
        steps.append(("Cast", {"dtype": np.dtype(x.dtype).name}, []))
    sel = pos.shape or (1,)
    if value.shape != sel:
        if value.size == 1:
            steps.append(("Reshape", {"shape": (1,) * len(sel)}, []))
        elif value.ndim < len(sel):
            steps.append(("Reshape", {"shape": (1,) * (len(sel) - value.ndim) + value.shape}, []))
        steps.append(("broadcast_to", {"shape": sel}, []))
    steps += [("Reshape", {"shape": (-1,)}, []),
              ("scatter_nd", {"shape": (x.size,)}, [_const(pos.reshape(1, -1), x)]),
              ("Reshape", {"shape": x.shape}, [])]
    tmp = NDArray.__new__(NDArray)
    _chain(tmp, value, steps, where)
    _assigned(x, mask, (tmp._ag_node, None), old)


def _assigned(x: NDArray, mask: NDArray, new: tuple, old: tuple) -> None:
    """Record ``x`` after an assignment: ``where(mask, new, old)`` (sources with write counts)."""
    entry = _Entry("where", {}, [mask, new[0], old[0]], 1, MODE.training, [mask._cell()[0], new[1], old[1]])
    x._ag_node, x._ag_ver = (entry, 0), x._cell()[0]


def _copyto(_: None, x: NDArray, other: Any) -> NDArray:
    where = "NDArray.copyto"
    if isinstance(other, NDArray):
        if other is x or not (_tracked(x) or _tracked(other)):
            return x._copyto(other)
        if _tracked(x):
            _no_variable_write(other, where)
        out = x._copyto(other)
        if not _tracked(x):
            return _constant(out)
        dt = np.dtype(out.dtype)
        step = ("_copy", {}, []) if dt == np.dtype(x.dtype) else ("Cast", {"dtype": dt.name}, [])
        return _chain(out, x, [step], where)
    out = x._copyto(other)
    if not _tracked(x):
        return out
    if isinstance(other, Context) and other != x.context:
        raise MXNetError(f"{where}: copying a recorded array from {x.context} to {other} while "
                         "recording is not supported by symjit's autograd; move the variables first")
    return _chain(out, x, [("_copy", {}, [])], where)


def _method(method: str, result: Any, x: NDArray, *args: Any) -> Any:
    """The hook NDArray methods call (:func:`symjit.ndarray.dispatch.recorded`): while recording,
    record what the method made from a tracked array as the equivalent operator."""
    if not MODE.recording:
        return dispatch.plain(method, result, x, *args)
    if method == "setitem":
        return _setitem(result, x, *args)
    if method == "copyto":
        return _copyto(result, x, *args)
    if not _tracked(x):
        return result
    where = f"NDArray.{method}"
    if method == "getitem":
        return _getitem(result, x, args[0])
    if method == "reshape":
        return _chain(result, x, [("Reshape", {"shape": args[0]}, [])], where)
    if method == "astype":
        return _chain(result, x, [("Cast", {"dtype": args[0].name}, [])], where)
    if method == "T":
        return _chain(result, x, [("transpose", {"axes": ()}, [])], where)
    raise MXNetError(f"{where}: this NDArray method cannot be recorded by symjit's autograd")


def _detach(self: NDArray) -> NDArray:
    """A new NDArray sharing this one's storage, outside the recording (a leaf).

    >>> import symjit as mx
    >>> x = mx.nd.ones((2,)); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = (x * 2).detach() * x
    >>> y.backward(); x.grad.asnumpy().tolist()
    [2.0, 2.0]
    """
    return self._view(self._data)


def _attach_grad(self: NDArray, grad_req: str = "write", stype: Any = None) -> None:
    """Give this array a gradient buffer of zeros (``.grad``) and make it a variable.

    >>> import symjit as mx
    >>> x = mx.nd.ones((2,)); x.attach_grad(); x.grad.asnumpy().tolist()
    [0.0, 0.0]
    """
    if stype not in (None, "default"):
        raise MXNetError(f"attach_grad: stype={stype!r}: sparse storage is not supported by symjit")
    mark_variables([self], [zeros(self.shape, ctx=self.context, dtype=self.dtype)], grad_req)


def _backward_method(self: NDArray, out_grad: Any = None, retain_graph: bool = False,  # noqa: FBT001, FBT002
                     train_mode: bool = True) -> None:  # noqa: FBT001, FBT002
    """The gradients of this recorded array into its variables' gradients (see
    :func:`backward`)."""
    backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)


def install(cls: type) -> None:
    """Give NDArray ``attach_grad``, ``grad``, ``backward`` and ``detach``."""
    cls.attach_grad = _attach_grad
    cls.grad = property(lambda self: getattr(self, "_ag_grad", None), doc="The gradient buffer, or None.")
    cls.backward = _backward_method
    cls.detach = _detach


# --- the recorded graph -----------------------------------------------------------------------

class _Tape:
    """The entries reaching ``heads`` in schedule order, the leaves, and the structure key."""

    def __init__(self, heads: list[NDArray], where: str):
        self.entries: list[_Entry] = []
        self.leaves: list[NDArray] = []
        index: dict[int, int] = {}
        leaf_index: dict[int, int] = {}
        self.refs: list[list] = []       # per entry: ("e", entry, output) or ("l", leaf) per input
        for i, h in enumerate(heads):
            if not isinstance(h, NDArray):
                raise MXNetError(f"{where}: head {i} must be an NDArray, got {type(h).__name__}")
            node = getattr(h, "_ag_node", None)
            if node is None:
                raise MXNetError(f"{where}: head {i} of shape {h.shape} was not computed from a "
                                 "variable under autograd.record(); attach_grad() its inputs and "
                                 "compute it inside record()")
            _source(h, f"{where}: head {i}")
        stack = [(h._ag_node[0], False) for h in reversed(heads)]
        while stack:                    # iterative post-order: inputs before their consumers
            e, done = stack.pop()
            if id(e) in index:
                continue
            if e.freed:
                raise MXNetError(f"{where}: the recorded graph (operator {e.op}) was already used by a "
                                 "backward pass and freed; pass retain_graph=True to the first "
                                 "backward to differentiate it again")
            if done:
                index[id(e)] = len(self.entries)
                self.entries.append(e)
                continue
            stack.append((e, True))
            stack.extend((s[0], False) for s in reversed(e.sources)
                         if isinstance(s, tuple) and id(s[0]) not in index)
        for e in self.entries:
            refs = []
            for s, v in zip(e.sources, e.vers):
                if isinstance(s, tuple):
                    refs.append(("e", index[id(s[0])], s[1]))
                else:
                    if v is not None and s._cell()[0] != v:
                        raise MXNetError(f"{where}: an input of shape {s.shape} of the recorded operator "
                                         f"{e.op} was changed in place after it was recorded; the "
                                         "gradient would be computed from its new values. Do not "
                                         "write into recorded inputs (variables included) before "
                                         "backward, or write into a copy")
                    if id(s) not in leaf_index:
                        leaf_index[id(s)] = len(self.leaves)
                        self.leaves.append(s)
                    refs.append(("l", leaf_index[id(s)]))
            self.refs.append(refs)
        self.heads = [(index[id(h._ag_node[0])], h._ag_node[1]) for h in heads]
        self.reqs = [getattr(a, "_ag_req", None) or "null" for a in self.leaves]

    def key(self, given: list[bool], wanted: list[bool] | None) -> tuple:
        ops = tuple((e.op, tuple(sorted((k, repr(v)) for k, v in e.params.items())), e.train,
                     tuple(r)) for e, r in zip(self.entries, self.refs))
        leaves = tuple((a.shape, np.dtype(a.dtype).str, a.context) for a in self.leaves)
        return ops, leaves, tuple(self.reqs), tuple(self.heads), tuple(given), \
            None if wanted is None else tuple(wanted)

    def symbol(self) -> Symbol:
        """The recording as a Symbol: leaf ``i`` is variable ``leaf<i>``, entry ``j`` node ``op<j>``."""
        leaf_syms = [Variable(f"leaf{i}") for i in range(len(self.leaves))]
        made: list[Symbol] = []
        for j, (e, refs) in enumerate(zip(self.entries, self.refs)):
            ins = [leaf_syms[r[1]] if r[0] == "l" else _output(made[r[1]], r[2], self.entries[r[1]])
                   for r in refs]
            if e.op == GRAPH:                   # a traced Symbol: its nodes join this graph
                made.append(e.params["graph"].inline(ins, f"op{j}"))
                continue
            params = dict(e.params)
            if e.op == "BatchNorm" and not e.train:
                params["use_global_stats"] = True
            made.append(make_op_symbol(e.op, *ins, name=f"op{j}", **params))
        heads = [_output(made[j], i, self.entries[j]) for j, i in self.heads]
        return heads[0] if len(heads) == 1 else Group(heads)


def _output(sym: Symbol, i: int, entry: _Entry) -> Symbol:
    return sym if entry.n_out == 1 else sym[i]


class _Program:
    """A recording's training program bound to arrays of its own."""

    def __init__(self, tape: _Tape, given: list[bool], wanted: list[bool] | None):
        sym = tape.symbol()
        self.args, self.aux = sym.list_arguments(), sym.list_auxiliary_states()
        leaf = {f"leaf{i}": a for i, a in enumerate(tape.leaves)}
        ctx = tape.leaves[0].context if tape.leaves else None
        # the program writes each gradient into an array of its own; backward() adds or copies it
        reqs = dict(zip(leaf, ["null" if r == "null" else "write" for r in tape.reqs] if wanted is None
                        else ["write" if w else "null" for w in wanted]))

        def own(name: str) -> NDArray:
            a = leaf[name]
            return zeros(a.shape, ctx=a.context, dtype=a.dtype)
        args = {n: own(n) for n in self.args}
        grads = {n: own(n) for n in self.args if reqs[n] != "null"}
        self.exe = sym.bind(ctx, args, args_grad=grads, grad_req={n: reqs[n] if n in grads else "null"
                                                                  for n in self.args},
                            aux_states={n: own(n) for n in self.aux})
        self.train = any(e.train for e in tape.entries)
        self.head_ones = [None if g else ones(o.shape, ctx=o.context, dtype=o.dtype)
                          for g, o in zip(given, self.exe.outputs)]
        _STATS["compiles"] += 1

    def run(self, tape: _Tape, head_grads: list) -> dict[int, NDArray]:
        """Feed the leaves, run forward and backward; the gradient array of each leaf index that
        has one."""
        exe = self.exe
        for name, dst in zip(self.args + self.aux, exe.arg_arrays + exe.aux_arrays):
            tape.leaves[int(name[4:])].copyto(dst)
        exe.forward(is_train=self.train)
        exe.backward([g if g is not None else o for g, o in zip(head_grads, self.head_ones)])
        return {int(n[4:]): g for n, g in zip(self.args, exe.grad_arrays) if g is not None}


def _run(heads: Any, head_grads: Any, retain_graph: bool, where: str,
         wanted: list | None = None) -> tuple[_Tape, dict[int, NDArray]]:
    heads = [heads] if isinstance(heads, NDArray) else list(heads)
    if head_grads is None:
        head_grads = [None] * len(heads)
    head_grads = [head_grads] if isinstance(head_grads, NDArray) else list(head_grads)
    if len(head_grads) != len(heads):
        raise MXNetError(f"{where}: {len(head_grads)} head gradients for {len(heads)} heads")
    for i, (h, g) in enumerate(zip(heads, head_grads)):
        if g is not None and (not isinstance(g, NDArray) or g.shape != getattr(h, "shape", None)):
            raise MXNetError(f"{where}: head gradient {i} must be an NDArray of the head's shape "
                             f"{getattr(h, 'shape', None)}, got {getattr(g, 'shape', type(g).__name__)}")
    tape = _Tape(heads, where)
    mask = None
    if wanted is not None:
        ids = {id(v) for v in wanted}
        mask = [id(a) in ids for a in tape.leaves]
    given = [g is not None for g in head_grads]
    key = tape.key(given, mask)
    prog = _PROGRAMS.get(key)
    if prog is None:
        prog = _PROGRAMS[key] = _Program(tape, given, mask)
        while len(_PROGRAMS) > MAX_PROGRAMS:
            _PROGRAMS.popitem(last=False)
    else:
        _PROGRAMS.move_to_end(key)
    with _scope(False, None):
        grads = prog.run(tape, head_grads)
    if not retain_graph:
        for e in tape.entries:
            e.freed = True
    return tape, grads


def backward(heads: Any, head_grads: Any = None, retain_graph: bool = False,  # noqa: FBT001, FBT002
             train_mode: bool = True) -> None:  # noqa: FBT001, FBT002
    """Compute the gradients of ``heads`` (recorded arrays) with respect to the marked variables
    they depend on, and store them (``write``) or add them (``add``) into the variables' gradient
    arrays. ``head_grads``: one array (or None: ones) per head. Without ``retain_graph`` the
    recording is freed: a second backward over it is an error. ``train_mode`` is accepted; the
    gradient follows the mode each operator was recorded in.

    >>> import symjit as mx
    >>> x = mx.nd.array([1.0, 2.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = mx.nd.exp(x) * 0 + x * x
    >>> mx.autograd.backward([y], [mx.nd.array([1.0, 10.0])]); x.grad.asnumpy().tolist()
    [2.0, 40.0]
    """
    tape, grads = _run(heads, head_grads, retain_graph, "backward")
    with _scope(False, None):
        for i, g in grads.items():
            leaf = tape.leaves[i]
            dst = leaf._ag_grad
            if leaf._ag_req == "add":
                dst += g
            else:
                g.copyto(dst)
            leaf._fresh_grad = True


def grad(heads: Any, variables: Any, head_grads: Any = None, retain_graph: bool | None = None,  # noqa: FBT001
         create_graph: bool = False, train_mode: bool = True) -> list[NDArray]:  # noqa: FBT001, FBT002
    """The gradients of ``heads`` with respect to ``variables`` as new arrays (the variables'
    gradient buffers are left alone). ``create_graph=True`` (recording the gradient computation
    for higher-order gradients) is not supported yet.

    >>> import symjit as mx
    >>> x = mx.nd.array([3.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = x * x
    >>> mx.autograd.grad(y, [x])[0].asnumpy().tolist()
    [6.0]
    """
    if create_graph:
        raise MXNetError("autograd.grad: create_graph=True (higher-order gradients) is not "
                         "supported by symjit yet")
    variables = [variables] if isinstance(variables, NDArray) else list(variables)
    for i, v in enumerate(variables):
        if getattr(v, "_ag_req", None) is None:
            raise MXNetError(f"autograd.grad: variable {i} of shape {getattr(v, 'shape', None)} is not "
                             "marked; call attach_grad() on it before recording")
    tape, grads = _run(heads, head_grads, bool(retain_graph), "autograd.grad", variables)
    by_leaf = {id(tape.leaves[i]): g for i, g in grads.items()}
    return [by_leaf[id(v)].copy() if id(v) in by_leaf else zeros(v.shape, ctx=v.context, dtype=v.dtype)
            for v in variables]


def get_symbol(x: NDArray) -> Symbol:
    """The recorded computation of ``x`` as a Symbol (its leaves are the variables ``leaf<i>``,
    the numbers of NDArray arithmetic among them).

    >>> import symjit as mx
    >>> x = mx.nd.ones((1,)); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = mx.nd.relu(x)
    >>> mx.autograd.get_symbol(y).list_arguments()
    ['leaf0']
    """
    return _Tape([x], "get_symbol").symbol()


class Function:
    """MXNet's custom differentiable function (``forward``/``backward`` written in Python): not
    supported by symjit yet; making one is a clear error.

    >>> import symjit as mx
    >>> try:
    ...     mx.autograd.Function()
    ... except mx.MXNetError as exc:
    ...     print(str(exc).split(':')[0])
    autograd.Function
    """

    def __init__(self) -> None:
        raise MXNetError("autograd.Function: custom functions with a Python backward are not "
                         "supported by symjit yet; write the computation with mx.nd operators")


def compiles() -> int:
    """How many backward programs this process has compiled (a repeated recording reuses one)."""
    return _STATS["compiles"]


def cached_programs() -> int:
    """How many compiled backward programs are kept."""
    return len(_PROGRAMS)


def clear_programs() -> None:
    """Forget the compiled backward programs."""
    _PROGRAMS.clear()


MODE.recorder = _record
dispatch.install_recorder(_method)
install(NDArray)
