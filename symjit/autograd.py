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
leaves' values and calls it. The :data:`MAX_PROGRAMS` most recently used programs are kept, as
long as the arrays and temporaries they hold stay under :data:`MAX_PROGRAM_BYTES` together (the
newest is always kept), so big one-off recordings do not pin their memory.

Each entry holds its outputs' values (views of their storage, kept until a backward pass without
``retain_graph`` frees the recording), and the compiled program is the recording's gradient only
(:class:`~symjit.autograd_programs.HeldProgram`): its inputs are the leaves, the head gradients
and the held values its gradient rules read, so the forward operators do not run again, except
where a rule reads an output the call did not return (BatchNorm's saved statistics). Where a
held value was written since (an intermediate assigned to in place after its consumers were
recorded) or a higher-order gradient is asked for, the training program computes the forward
pass again from the leaves (:class:`~symjit.autograd_programs.Program`). A backward also stops at
*cuts*: an
``autograd.Function``'s entry, and a hybridized block's training call whose executor still holds
its forward pass (:class:`~symjit.autograd_tape.GraphState`). A backward over cuts compiles the
parts between them and calls each cut's own backward (the Function's, or the block executor's)
once the gradients of its outputs are in, so a hybridized net's forward pass runs once per step. Two
operators are recorded so that a recomputation gives the recorded values: Dropout in a
training pass runs as a mask drawn by Dropout on ones times the input (the mask a recorded
constant), and BatchNorm recorded in predict mode binds with ``use_global_stats``; aux states
are copies, so the recomputation leaves the moving statistics alone. Samplers on recorded inputs
give constants (they have no gradient); a multinomial draw with its log-probabilities is a
constant draw and the log of data taken at the drawn indices; another differentiable random
operator in training mode (``RNN`` with dropout) is an error. NDArray methods that make arrays
without an operator call (views, indexing, ``astype``, ``copyto``, assignment) reach this module through
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

from .autograd_methods import detach, method_hook
from .autograd_programs import STATS as _STATS
from .autograd_programs import HeldProgram as _HeldProgram
from .autograd_programs import Program as _Program
from .autograd_programs import program_bytes as _program_bytes
from .autograd_tape import (
    FUNCTION,
    GRAPH,
    Entry,
    GraphOp,
    Tape,
    check_heads,
    constant,
    cut_outputs,
    held_outputs,
    is_cut,
    mark,
    no_variable_write,
    record_entry,
    record_graph,
    signature,
    source_of,
    storage_overlaps,
    tracked,
    walk,
)
from .base import MXNetError
from .imperative import MODE, RECORDED, invoke_now
from .ndarray import NDArray, dispatch
from .ndarray.creation import array, ones, zeros
from .ndarray.sparse import STYPES as _STYPES
from .ndarray.sparse import dense_zeros as sparse_zeros
from .ops.registry import get_op
from .symbol.symbol import Symbol

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "mark_variables", "backward", "grad", "get_symbol", "Function",
           "compiles", "cached_programs", "clear_programs", "MAX_PROGRAMS", "install",
           "GraphOp", "record_graph",
           "NDArray"]   # MXNet's module exports it to ``from mxnet.autograd import *`` too

GRAD_REQS = ("write", "add", "null")
MAX_PROGRAMS = 64       # compiled backward programs kept (least recently used dropped)
MAX_PROGRAM_BYTES = 1 << 30  # the memory they may hold together (the newest is always kept)
_PROGRAMS: collections.OrderedDict[tuple, _Program] = collections.OrderedDict()


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


_SAMPLERS = ("_random_", "_sample_", "_shuffle", "_image_random_")


def _draws(opdef: Any, params: dict) -> bool:
    """Whether operator ``opdef`` draws random numbers when called with ``params`` now."""
    name = opdef.name
    if name.startswith(_SAMPLERS) and not name.startswith("_random_pdf_"):
        return True
    return name == "RNN" and MODE.training and opdef.parse_params(dict(params))["p"] > 0


def _record(op: str, inputs: list, params: dict, out: Any, where: str | None, ctx: Any,
            run: Any = None) -> list[NDArray]:
    """The recorder :mod:`symjit.imperative` calls while recording: run the call (``invoke_now``, or
    ``run()`` for an operator imperative code runs itself: ``mx.nd.Custom``'s Python code), and
    record it when an input depends on a variable."""
    if not any(tracked(a) for a in inputs):
        return constant(invoke_now(op, inputs, params, out, where, ctx) if run is None else run())
    opdef = get_op(op)
    name, where = opdef.name, where or op
    if run is not None:
        return _mark_call(opdef, inputs, params, out, where, run)
    if _draws(opdef, params):
        if name == "_sample_multinomial" and opdef.parse_params(dict(params))["get_prob"]:
            return _record_multinomial(opdef, inputs, params, out, where, ctx)
        if opdef.grad is None and opdef.expand is None or name == "_sample_multinomial":
            return constant(invoke_now(op, inputs, params, out, where, ctx))   # no gradient
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
    return _mark_call(opdef, inputs, params, out, where,
                      lambda: invoke_now(op, inputs, params, out, where, ctx))


def _record_multinomial(opdef: Any, inputs: list, params: dict, out: Any, where: str,
                        ctx: Any) -> list[NDArray]:
    """A multinomial draw with its log-probabilities on a recorded ``data``: the indices are drawn
    once (a constant), and the log-probabilities recorded as ``log(take(data, flat index))``, so
    that every backward pass (a recomputing one too) reads the drawn indices, and the gradient
    reaching ``data`` is the head gradient over each drawn category's probability, summed over the
    draws (MXNet's)."""
    data = inputs[0]
    targets = [None, None] if out is None else list(out) if isinstance(out, (list, tuple)) else [out]
    if len(targets) != 2:
        raise MXNetError(f"{where}: get_prob=True makes 2 outputs (the indices and their "
                         f"log-probabilities); out= gives {len(targets)} arrays")
    draw = dict(params, get_prob=False)
    sample = constant(invoke_now(opdef.name, [data], draw, targets[:1] if targets[0] is not None
                                 else None, where, ctx))[0]
    k = data.shape[-1]
    rows = sample.asnumpy().reshape(max(int(np.prod(data.shape[:-1])), 1), -1).astype(np.int64)
    flat = rows + np.arange(rows.shape[0], dtype=np.int64)[:, None] * k
    index = array(flat.reshape(sample.shape), ctx=data.context, dtype=np.int64)
    whole = _record("Reshape", [data], {"shape": (-1,)}, None, where, ctx)[0]
    picked = _record("take", [whole, index], {}, None, where, ctx)[0]
    prob = _record("log", [picked], {}, None if targets[1] is None else [targets[1]], where, ctx)[0]
    return [sample, prob]


def _mark_call(opdef: Any, inputs: list, params: dict, out: Any, where: str, run: Any) -> list[NDArray]:
    """Run a call of operator ``opdef`` whose inputs depend on a variable (``run()``), and record it."""
    pairs = [source_of(a, where) for a in inputs]
    if MODE.training and opdef.aux:   # aux states a training pass updates: its result ignores them
        n_aux = len(opdef.list_aux(opdef.parse_params(dict(params))))
        pairs[len(pairs) - n_aux:] = [(s, None) for s, _ in pairs[len(pairs) - n_aux:]] if n_aux else []
    targets = [] if out is None else list(out) if isinstance(out, (list, tuple)) else [out]
    for t in targets:
        no_variable_write(t, where)
    for i, (a, (_, v)) in enumerate(zip(inputs, pairs)):    # a leaf the call overwrites: its
        if v is not None and any(storage_overlaps(a, t) for t in targets):   # values as they were
            snap = a._copyto(a.context)
            pairs[i] = (snap, snap._cell()[0])
    outs = run()
    mark(outs, Entry(opdef.name, dict(params), [s for s, _ in pairs], len(outs), MODE.training,
                       [v for _, v in pairs]))
    return outs


class _Token:
    """What a repeated recorded call of one operator, params and mode records (see
    :class:`symjit.imperative._Recorded`): the entry's operator name, params and signature (shared
    by the entries of such calls, never changed) and where errors name it."""

    __slots__ = ("name", "params", "sig", "where")

    def __init__(self, name: str, params: dict, where: str):
        self.name, self.params, self.where = name, params, where
        self.sig = signature(name, params, MODE.training)


def _token(opdef: Any, params: dict, where: str) -> _Token | None:
    """The token of a call :func:`_record` records as it is (no sampler, Dropout or RNN, no aux
    states): None for the others, which always take :func:`_record`."""
    if opdef.aux or opdef.name in ("Dropout", "RNN") or _draws(opdef, params):
        return None
    return _Token(opdef.name, dict(params), where)


def _record_fast(token: _Token, inputs: Any, run: Any) -> NDArray:
    """:func:`_record` for a call with a token: ``run(inputs)`` makes its one output, recorded
    when an input depends on a variable (a recorded value, or a variable itself)."""
    where = token.where
    sources, vers, hit = [], [], False
    for a in inputs:
        s, v = source_of(a, where)
        sources.append(s)
        vers.append(v)
        hit = hit or v is None or getattr(a, "_ag_req", None) is not None
    out = run(inputs)
    if not hit:
        out._ag_node = None
        return out
    mark([out], Entry(token.name, token.params, sources, 1, MODE.training, vers, sig=token.sig))
    return out


def _attach_grad(self: NDArray, grad_req: str = "write", stype: Any = None) -> None:
    """Give this array a gradient buffer of zeros (``.grad``) and make it a variable. ``stype``:
    the gradient's storage type (default: the array's own, as MXNet); a sparse gradient is
    computed dense and stored in its storage type.

    >>> import symjit as mx
    >>> x = mx.nd.ones((2,)); x.attach_grad(); x.grad.asnumpy().tolist()
    [0.0, 0.0]
    >>> x.attach_grad(stype='row_sparse'); x.grad.stype
    'row_sparse'
    """
    stype = self.stype if stype is None else stype
    if stype not in _STYPES:
        raise MXNetError(f"attach_grad: stype={stype!r} must be one of {_STYPES} (array of shape "
                         f"{self.shape})")
    mark_variables([self], [sparse_zeros(self.shape, ctx=self.context, dtype=self.dtype, stype=stype)],
                   grad_req)


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
    cls.detach = detach


def _run(heads: Any, head_grads: Any, retain_graph: bool, where: str,  # noqa: FBT001
         wanted: list | None = None, create_graph: bool = False,  # noqa: FBT001, FBT002
         into: bool = False) -> dict[int, tuple[NDArray, NDArray]]:  # noqa: FBT001, FBT002
    """Differentiate: ``{id(leaf): (leaf, gradient)}`` for each variable (each of ``wanted``
    when given) a gradient reaches; ``into``: see :func:`_compiled`."""
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
    nodes = check_heads(heads, where)
    ids = None if wanted is None else {id(v) for v in wanted}
    every = walk([e for e, _ in nodes], where, through=True)
    if any(is_cut(e, not create_graph) for e in every):
        if create_graph:
            raise MXNetError(f"{where}: create_graph=True through an autograd.Function is not "
                             "supported by symjit (its backward is Python code, not recorded)")
        out = _run_functions(nodes, head_grads, ids, every, where)
    else:
        tape = Tape(heads, where, nodes, entries=every)
        mask = None if ids is None else [id(a) in ids for a in tape.leaves]
        prog, grads = _compiled(tape, head_grads, mask, create_graph, into)
        if create_graph:
            grads = _record_gradients(prog, tape, head_grads, grads)
        out = {id(tape.leaves[i]): (tape.leaves[i], g) for i, g in grads.items()}
    if not retain_graph:
        for e in every:
            e.freed, e.held = True, None
    return out


def _compiled(tape: Tape, head_grads: list, mask: list[bool] | None, create_graph: bool = False,  # noqa: FBT001, FBT002
              into: bool = False) -> tuple[Any, dict[int, NDArray]]:  # noqa: FBT001, FBT002
    """Run the tape's gradient program (compiled once per structure): the gradients by leaf
    index. It reads the values the recorded calls kept
    (:class:`~symjit.autograd_programs.HeldProgram`) unless a higher-order gradient is asked for
    or one of them was written since; then the training program recomputes the forward pass
    (:class:`~symjit.autograd_programs.Program`). ``into``: a held program may write gradients
    straight into the leaves' gradient buffers (see its ``run``)."""
    given = [g is not None for g in head_grads]
    held = not create_graph and all(e.op == GRAPH or e.kept() is not None for e in tape.entries) \
        and all(tape.entries[j].op != GRAPH for j, _ in tape.heads)
    key = (tape.key(given, mask), held)
    prog = _PROGRAMS.get(key)
    if prog is None:
        prog = _PROGRAMS[key] = (_HeldProgram if held else _Program)(tape, given, mask)
        while len(_PROGRAMS) > MAX_PROGRAMS or len(_PROGRAMS) > 1 and \
                sum(map(_program_bytes, _PROGRAMS.values())) > MAX_PROGRAM_BYTES:
            _PROGRAMS.popitem(last=False)
    else:
        _PROGRAMS.move_to_end(key)
    with _scope(False, None):
        return prog, (prog.run(tape, head_grads, into) if held else prog.run(tape, head_grads))


def _run_functions(nodes: list, head_grads: list, ids: set | None, every: list,
                   where: str) -> dict[int, tuple[NDArray, NDArray]]:
    """Differentiate a recording with cut entries (``autograd.Function``'s, and hybridized
    blocks' with their forward pass kept): the parts between them are compiled tapes whose leaves
    include the cuts' outputs; each cut's backward runs once all gradients of its outputs are in
    (cuts in reverse recording order), and its inputs' gradients start the next compiled part."""
    out: dict[int, tuple[NDArray, NDArray]] = {}
    pending: dict[int, list] = {}        # Function entry -> the gradients of its outputs so far

    def add(table: dict, key: int, value: Any, slot: Any) -> None:
        old = table.get(key)
        if old is None:
            table[key] = (slot, value)
        else:
            with _scope(False, None):
                table[key] = (slot, old[1] + value)

    def part(parts: list[tuple[tuple, NDArray | None]]) -> None:
        """Compile and run the part reaching ``parts`` ((node, head gradient) pairs)."""
        for (e, i), g in [p for p in parts if is_cut(p[0][0], True)]:
            add(pending, (id(e), i), _ones_if_none(g, cut_outputs(e)[0][i]), (e, i))
        rest = [p for p in parts if not is_cut(p[0][0], True)]
        if not rest:
            return
        tape = Tape([], where, [n for n, _ in rest], graphs=True)
        mask = [i in tape.cuts or (getattr(a, "_ag_req", None) not in (None, "null") if ids is None
                                   else id(a) in ids)
                for i, a in enumerate(tape.leaves)]
        _, grads = _compiled(tape, [g for _, g in rest], mask)
        for i, g in grads.items():
            if i in tape.cuts:
                add(pending, (id(tape.cuts[i][0]), tape.cuts[i][1]), g, tape.cuts[i])
            else:
                add(out, id(tape.leaves[i]), g, tape.leaves[i])

    part(list(zip(nodes, head_grads)))
    for e in reversed([e for e in every if is_cut(e, True)]):
        got = {slot[1]: g for slot, g in pending.values() if slot[0] is e}
        if not got:
            continue
        outs = cut_outputs(e)[0]
        with _scope(False, None):
            ograds = [got[i] if i in got else zeros(o.shape, ctx=o.context, dtype=o.dtype)
                      for i, o in enumerate(outs)]
            igrads = e.params["function"].run_backward(ograds, e.params["shapes"]) \
                if e.op == FUNCTION else e.saved.backward(e, ograds, where)
        parts = []
        for s, g in zip(e.sources, igrads):
            if g is None:       # an input a traced graph's executor needs no gradient of
                continue
            if isinstance(s, tuple):
                parts.append((s, g))
            elif ids is None and getattr(s, "_ag_req", None) not in (None, "null") or ids and id(s) in ids:
                add(out, id(s), g, s)
        part(parts)
    return out


def _ones_if_none(g: NDArray | None, like: NDArray) -> NDArray:
    return ones(like.shape, ctx=like.context, dtype=like.dtype) if g is None else g


def _record_gradients(prog: _Program, tape: Tape, head_grads: list,
                      grads: dict[int, NDArray]) -> dict[int, NDArray]:
    """Copies of the gradients ``grads`` (by leaf index), recorded as the outputs of one entry
    whose operator is the gradient computation: a later backward differentiates them."""
    if not prog.wanted:
        return grads
    op = prog.gradient_op(tape)
    inputs = [tape.leaves[int(n[4:])] if n.startswith("leaf") else
              head_grads[op.heads[n]] if head_grads[op.heads[n]] is not None else prog.head_ones[op.heads[n]]
              for n in op.inputs]
    # the variables a gradient does not read (a linear function's) are inputs too, unread: the
    # gradients stay recorded results of theirs, whose own gradients are zeros
    inputs += [tape.leaves[int(n[4:])] for n in prog.wanted if n not in op.inputs]
    with _scope(False, None):
        outs = {int(n[4:]): grads[int(n[4:])].copy() for n in prog.wanted}
    made = list(outs.values())
    if any(tracked(a) for a in inputs):
        record_entry(GRAPH, {"graph": op}, inputs, made, prog.train, op.aux, op.inputs)
    else:
        constant(made)
    return outs


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
    grads = _run(heads, head_grads, retain_graph, "backward", into=True)
    with _scope(False, None):
        for leaf, g in grads.values():
            dst = leaf._ag_grad
            if g is dst:            # the program wrote it there
                dst._bump()
            elif leaf._ag_req == "add":
                dst += g
            else:
                g.copyto(dst)
            leaf._fresh_grad = True


def grad(heads: Any, variables: Any, head_grads: Any = None, retain_graph: bool | None = None,  # noqa: FBT001
         create_graph: bool = False, train_mode: bool = True) -> list[NDArray]:  # noqa: FBT001, FBT002
    """The gradients of ``heads`` with respect to ``variables`` as new arrays (the variables'
    gradient buffers are left alone). ``create_graph=True`` records the gradient computation
    (whether or not recording is on), so the gradients can be differentiated again
    (higher-order gradients); ``retain_graph`` defaults to ``create_graph``.

    >>> import symjit as mx
    >>> x = mx.nd.array([3.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = x * x
    >>> mx.autograd.grad(y, [x])[0].asnumpy().tolist()
    [6.0]
    """
    variables = [variables] if isinstance(variables, NDArray) else list(variables)
    for i, v in enumerate(variables):
        if getattr(v, "_ag_req", None) is None:
            raise MXNetError(f"autograd.grad: variable {i} of shape {getattr(v, 'shape', None)} is not "
                             "marked; call attach_grad() on it before recording")
    retain = create_graph if retain_graph is None else retain_graph
    grads = _run(heads, head_grads, bool(retain), "autograd.grad", variables, bool(create_graph))
    by_leaf = {k: g for k, (_, g) in grads.items()}
    with _scope(False, None):
        return [(by_leaf[id(v)] if create_graph else by_leaf[id(v)].copy()) if id(v) in by_leaf
                else zeros(v.shape, ctx=v.context, dtype=v.dtype) for v in variables]


def get_symbol(x: NDArray) -> Symbol:
    """The recorded computation of ``x`` as a Symbol: its leaves (the arrays recorded operators
    read but did not make) are the variables ``leaf<i>``; NDArray arithmetic with a number is
    the scalar operator (``x * 2``: ``_mul_scalar`` with ``scalar=2``).

    >>> import symjit as mx
    >>> x = mx.nd.ones((1,)); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = mx.nd.relu(x)
    >>> mx.autograd.get_symbol(y).list_arguments()
    ['leaf0']
    """
    return Tape([x], "get_symbol").symbol(numbers=True)


class Function:
    """A differentiable function written in Python: subclass it with ``forward(*inputs)`` and
    ``backward(*output_grads)`` (both over NDArrays, run with recording off; ``backward`` returns
    one gradient per input) and call an instance once on NDArrays. Recorded, the call is one
    entry whose gradient is the Python ``backward``: a backward pass runs the compiled programs of
    the recording's parts around it and calls ``backward`` in between (``save_for_backward``
    keeps arrays for it in ``saved_tensors``).

    >>> import symjit as mx
    >>> class Scale(mx.autograd.Function):
    ...     def forward(self, x):
    ...         return x * 3
    ...     def backward(self, dy):
    ...         return dy * 3
    >>> x = mx.nd.array([1.0, 2.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = Scale()(x) * x
    >>> y.backward(); x.grad.asnumpy().tolist()
    [6.0, 12.0]
    """

    def __init__(self) -> None:
        self._used = False
        self.saved_tensors: tuple = ()

    def save_for_backward(self, *args: Any) -> None:
        """Keep ``args`` for :meth:`backward` (as :attr:`saved_tensors`)."""
        self.saved_tensors = args

    def forward(self, *inputs: NDArray) -> Any:
        """The outputs (an NDArray or a tuple of them) of ``inputs``; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, *output_grads: NDArray) -> Any:
        """The gradients of the inputs (one NDArray each) given those of the outputs."""
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def __call__(self, *inputs: NDArray) -> Any:
        name = type(self).__name__
        if self._used:
            raise MXNetError(f"autograd.Function {name}: an instance can be called once only; make a "
                             "new one for each call")
        self._used = True
        for i, a in enumerate(inputs):
            if not isinstance(a, NDArray):
                raise MXNetError(f"autograd.Function {name}: input {i} must be an NDArray, got "
                                 f"{type(a).__name__}")
        recording = MODE.recording
        with _scope(False, None):
            result = self.forward(*inputs)
            single = isinstance(result, NDArray)
            outs = [result] if single else list(result)
            for i, o in enumerate(outs):
                if not isinstance(o, NDArray):
                    raise MXNetError(f"autograd.Function {name}: forward output {i} must be an "
                                     f"NDArray, got {type(o).__name__}")
            if not recording:
                return result
            # an output that is an input or another recorded array gets a storage of its own
            outs = [o.copy() if tracked(o) or any(o is a for a in inputs) else o for o in outs]
        if not any(tracked(a) for a in inputs):
            constant(outs)
        else:
            record_entry(FUNCTION, {"function": self, "outputs": held_outputs(outs),
                                    "shapes": [a.shape for a in inputs],
                                    "versions": [o._cell()[0] for o in outs]}, list(inputs), outs,
                         MODE.training)
        return outs[0] if single else tuple(outs)

    def run_backward(self, ograds: list[NDArray], shapes: list[tuple]) -> list[NDArray]:
        """Call :meth:`backward` and check what it returned: one gradient per input, each an
        NDArray of its input's shape."""
        name = type(self).__name__
        got = self.backward(*ograds)
        grads = [got] if isinstance(got, NDArray) else list(got)
        if len(grads) != len(shapes):
            raise MXNetError(f"autograd.Function {name}: backward returned {len(grads)} gradients for "
                             f"{len(shapes)} inputs")
        for i, (g, shape) in enumerate(zip(grads, shapes)):
            if not isinstance(g, NDArray) or g.shape != shape:
                raise MXNetError(f"autograd.Function {name}: backward's gradient {i} must be an NDArray "
                                 f"of the input's shape {shape}, got {getattr(g, 'shape', type(g).__name__)}")
        return grads


def compiles() -> int:
    """How many backward programs this process has compiled (a repeated recording reuses one)."""
    return _STATS["compiles"]


def cached_programs() -> int:
    """How many compiled backward programs are kept."""
    return len(_PROGRAMS)


def clear_programs() -> None:
    """Forget the compiled backward programs."""
    _PROGRAMS.clear()


type(MODE).recorder = staticmethod(_record)    # every thread's (MODE is thread-local)
RECORDED.token, RECORDED.call = _token, _record_fast
dispatch.install_recorder(method_hook)
install(NDArray)
