"""A symbol run on NDArrays as one operator: ``mx.nd.CachedOp``, and the executors behind it and
behind a hybridized Gluon block (:mod:`symjit.gluon.cached`).

:class:`BoundGraph` binds the symbol once per (shapes and dtypes of the inputs it copies,
context, gradients needed) and keeps the executors. Each call copies the *copied* inputs into the
executor's own buffers; the other inputs (a block's parameters, a ``CachedOp``'s aux states and
its ``param_indices``) are bound as they are, so an in-place change of them is seen by the next
call and a training pass updates aux states in the caller's arrays; a call with another array
object in such a place binds again (the compiled kernels come from the cache). Outputs are copies
(or written into ``out``), so a result stays valid after the next call. Under
``autograd.record()`` a training call keeps its forward pass in an executor bound with the
gradients the recording needs, and is left on the tape as one entry whose backward is that
executor's backward (:class:`~symjit.autograd_tape.GraphState`); a predict-mode recording is
differentiated by inlining the symbol into the compiled backward program.

>>> import symjit as mx
>>> op = mx.nd.CachedOp(mx.sym.var('a') * 2 + mx.sym.var('b'))
>>> op(mx.nd.array([1, 2]), mx.nd.array([10, 20])).asnumpy().tolist()
[12.0, 24.0]
"""
from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from . import autograd
from .autograd_tape import GraphOp, GraphState, no_variable_write, record_graph, tracked
from .base import MXNetError, shape_str
from .imperative import MODE
from .ndarray import NDArray, zeros
from .symbol import Symbol

__all__ = ["BoundGraph", "CachedOp", "install"]


class BoundGraph:
    """``symbol``'s executors; ``copied`` names the inputs each call copies into the executor's
    buffers (the others are bound as given). ``hook``: ``(callback, monitor_all)`` handed every
    watched value with its operator's name (``register_op_hook``), or None."""

    def __init__(self, symbol: Symbol, copied: Sequence[str]):
        self.symbol = symbol
        self.inputs = symbol.list_inputs()
        self.aux = set(symbol.list_auxiliary_states())
        self.copied = [n for n in self.inputs if n in set(copied)]
        self.op = GraphOp(symbol, hashlib.sha1(symbol.tojson().encode()).hexdigest()[:16])
        self.executors: dict[tuple, tuple] = {}
        self.hook: tuple[Callable, bool] | None = None

    def _watch(self, exe: Any) -> None:
        """Hand the hook each watched value with the name of the operator whose node the value's
        name starts with."""
        if self.hook is None:
            exe.set_monitor_callback(None)
            return
        callback, monitor_all = self.hook
        names = sorted(((n.name, n.op.name) for n in self.symbol._topo() if n.op is not None),
                       key=lambda item: -len(item[0]))

        def report(name: str, arr: NDArray) -> None:
            op = next((o for n, o in names if name.startswith(n + "_")), "")
            callback(name, op, arr)
        exe.set_monitor_callback(report, monitor_all, variables=False)   # op names only, as MXNet's hooks

    def _executor(self, arrays: dict[str, NDArray], ctx: Any, need: tuple | None) -> tuple:
        copied = [arrays[n] for n in self.copied]
        bound = {n: a for n, a in arrays.items() if n not in self.copied}
        key = (tuple((a.shape, str(a.dtype)) for a in copied), ctx, need)
        hit = self.executors.get(key)
        if hit is None or any(hit[1][n] is not a for n, a in bound.items()):
            bufs = {n: zeros(a.shape, ctx=ctx, dtype=a.dtype) for n, a in zip(self.copied, copied)}
            args = {n: a for n, a in {**bufs, **bound}.items() if n not in self.aux}
            aux = {n: a for n, a in bound.items() if n in self.aux}
            aux.update({n: a for n, a in bufs.items() if n in self.aux})
            grads = {n: zeros(args[n].shape, ctx=ctx, dtype=args[n].dtype) for n in need or ()}
            exe = self.symbol.bind(ctx, args, args_grad=grads or None,
                                   grad_req={n: "write" if n in grads else "null" for n in args},
                                   aux_states=aux)
            hit = self.executors[key] = (exe, bound, [bufs[n] for n in self.copied], [0],
                                         [grads.get(n) for n in self.inputs])
        return hit

    def run(self, arrays: dict[str, NDArray], ctx: Any, need: tuple | None = None,
            out: list[NDArray] | None = None) -> tuple[list[NDArray], GraphState | None]:
        """The outputs of a call on ``arrays`` (by input name; copies, or ``out`` written), and
        with ``need`` (the inputs whose gradients a recorded training call needs) the call's
        forward pass kept for its backward by an executor bound with those gradients."""
        exe, _, bufs, runs, grads = self._executor(arrays, ctx, need)
        self._watch(exe)
        for name, dst in zip(self.copied, bufs):
            arrays[name]._copyto(dst)
        results = exe.forward(is_train=MODE.training)
        if out is None:
            outs = [o.copy() for o in results]
        else:
            for k, (o, d) in enumerate(zip(results, out)):
                if o.shape != d.shape:
                    raise MXNetError(f"CachedOp: out[{k}] has shape {shape_str(d.shape)}, output "
                                     f"{self.symbol.list_outputs()[k]!r} has {shape_str(o.shape)}")
            outs = [o._copyto(d) for o, d in zip(results, out)]
        runs[0] += 1
        return outs, None if need is None else GraphState(exe, runs, grads, outs)

    def call(self, inputs: list[NDArray], ctx: Any, out: list[NDArray] | None = None) -> list[NDArray]:
        """Run on ``inputs`` (one array per input, in ``list_inputs`` order) and, while recording,
        leave the call on the autograd tape as one entry."""
        need = None     # a recorded training call keeps its forward pass for its backward
        if MODE.recording and MODE.training and any(tracked(a) for a in inputs):
            need = tuple(n for n, a in zip(self.inputs, inputs) if n not in self.aux and tracked(a)) or None
        with autograd.pause(train_mode=MODE.training):
            outs, saved = self.run(dict(zip(self.inputs, inputs)), ctx, need, out)
        record_graph(self.op, inputs, outs, saved)
        return outs


_FLAGS = ("static_alloc", "static_shape", "is_dynamic", "inline_limit", "forward_bulk_size",
          "backward_bulk_size", "data_indices", "param_indices")


def _flags(flags: Any, n_inputs: int) -> dict[str, Any]:
    """MXNet's CachedOp flags, ``(key, value)`` pairs or a dict, values as given or as strings."""
    pairs = flags.items() if isinstance(flags, dict) else flags
    out: dict[str, Any] = {}
    for item in pairs:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise MXNetError(f"CachedOp: flags must be (key, value) pairs, got {item!r}")
        key, value = item
        if key not in _FLAGS:
            raise MXNetError(f"CachedOp: unknown flag {key!r}; the flags are {list(_FLAGS)}")
        if isinstance(value, str):
            try:
                value = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError):
                raise MXNetError(f"CachedOp: flag {key}={value!r} is not a value") from None
        if key.endswith("_indices"):
            value = [value] if isinstance(value, int) else list(value)
            if not all(isinstance(i, int) and 0 <= i < n_inputs for i in value):
                raise MXNetError(f"CachedOp: flag {key}={value!r} must hold input positions in "
                                 f"[0, {n_inputs})")
        out[key] = value
    return out


class CachedOp:
    """MXNet's imperative handle on a symbol: called with one NDArray per input of ``sym`` (in
    ``sym.list_inputs()`` order), it runs the symbol's compiled program and returns its output (a
    list for several), or writes them into ``out``. Under ``autograd.record()`` the call is
    recorded as one operator, so gradients flow to its inputs.

    ``flags``: MXNet's ``(key, value)`` pairs. ``param_indices`` names inputs bound as they are
    (the other inputs are copied into the executor's buffers at each call); every other flag is
    accepted and changes nothing (symjit keeps an executor per input shapes anyway).

    >>> import symjit as mx
    >>> op = mx.nd.CachedOp(mx.sym.var('x') * mx.sym.var('w'))
    >>> w = mx.nd.array([3.0]); w.attach_grad()
    >>> with mx.autograd.record():
    ...     y = op(mx.nd.array([2.0]), w)
    >>> y.backward(); w.grad.asnumpy().tolist()
    [2.0]
    """

    def __init__(self, sym: Symbol, flags: Any = ()):
        if not isinstance(sym, Symbol):
            raise MXNetError(f"CachedOp: sym must be a Symbol, got {type(sym).__name__}")
        self.symbol = sym
        names = sym.list_inputs()
        self.flags = _flags(flags, len(names))
        params = {names[i] for i in self.flags.get("param_indices", ())}
        aux = set(sym.list_auxiliary_states())
        self._graph = BoundGraph(sym, [n for n in names if n not in params and n not in aux])

    def __call__(self, *args: NDArray, out: Any = None, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"CachedOp.__call__ got unexpected keyword argument(s): {', '.join(kwargs)}")
        names = self._graph.inputs
        if len(args) != len(names):
            raise MXNetError(f"CachedOp: the symbol has {len(names)} inputs {names}, got {len(args)} arrays")
        for n, a in zip(names, args):
            if not isinstance(a, NDArray):
                raise MXNetError(f"CachedOp: input {n!r} must be an NDArray, got {type(a).__name__}")
        ctx = args[0].context if args else None
        if ctx is None:
            raise MXNetError("CachedOp: a symbol without inputs cannot be called")
        for n, a in zip(names, args):
            if a.context != ctx:
                raise MXNetError(f"CachedOp: input {n!r} is on {a.context}, input {names[0]!r} on {ctx}; "
                                 "every input must be on one context")
        targets = self._targets(out)
        with ctx:
            outs = self._graph.call(list(args), ctx, targets)
        if out is not None:
            return out
        return outs[0] if len(outs) == 1 else outs

    def _targets(self, out: Any) -> list[NDArray] | None:
        if out is None:
            return None
        targets = list(out) if isinstance(out, (list, tuple)) else [out]
        n_out = len(self.symbol.list_outputs())
        if len(targets) != n_out or not all(isinstance(t, NDArray) for t in targets):
            raise MXNetError(f"CachedOp: out must be {n_out} NDArray(s), one per output "
                             f"{self.symbol.list_outputs()}, got {out!r}")
        if MODE.recording:
            for t in targets:
                no_variable_write(t, "CachedOp")
        return targets

    def _register_op_hook(self, callback: Callable | None, monitor_all: bool = False) -> None:  # noqa: FBT001, FBT002
        """Hand ``callback(name, op_name, array)`` the values of each later call (every
        operator's outputs, and with ``monitor_all`` its inputs too)."""
        self._graph.hook = None if callback is None else (callback, monitor_all)

    def __repr__(self) -> str:
        return f"CachedOp({', '.join(self._graph.inputs)} -> {', '.join(self.symbol.list_outputs())})"


def install(module: Any) -> None:
    """Give ``module`` (``mx.nd``) :class:`CachedOp`."""
    module.CachedOp = CachedOp
    module.__all__ = [*module.__all__, "CachedOp"]

