"""The compiled programs of ``mx.autograd``'s backward passes (:mod:`symjit.autograd` keeps them,
keyed by the recording's structure): :class:`HeldProgram`, the gradient alone from the values the
recorded calls kept, and :class:`Program`, the training program computing the forward pass again
from the leaves.

>>> import symjit as mx
>>> x = mx.nd.array([1.0, 2.0]); x.attach_grad()
>>> with mx.autograd.record():
...     y = x * x
>>> y.backward()
>>> type(list(mx.autograd._PROGRAMS.values())[-1]).__name__, x.grad.asnumpy().tolist()
('HeldProgram', [2.0, 4.0])
"""
from __future__ import annotations

import types
from typing import Any

import numpy as np

from . import profiler
from .autograd_graph import gradient_symbol
from .autograd_tape import GRAPH, GraphOp, Tape
from .config import default_config
from .imperative_bound import BoundProgram
from .ndarray import NDArray, dispatch
from .ndarray.creation import ones, zeros

__all__ = ["Program", "HeldProgram", "program_bytes", "STATS"]

STATS = {"compiles": 0, "gradients": 0}     # programs compiled, gradient operators made


def _owner(a: np.ndarray) -> Any:
    """The object owning the memory of host array ``a``: arrays of two owners share no memory
    (unless made from one raw pointer twice, which symjit's arrays never are)."""
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a.obj if isinstance(a, memoryview) else a     # np.frombuffer's owner: a new view a call


class Program:
    """A recording's training program bound to arrays of its own."""

    def __init__(self, tape: Tape, given: list[bool], wanted: list[bool] | None):
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
        self.sym, self.wanted = sym, [n for n in self.args if n in grads]
        self.grad_op: GraphOp | None = None
        # leaves the graph does not read (an unread input of a traced entry): zero gradients
        self.unread = {int(n[4:]): own(n) for n in leaf
                       if reqs[n] != "null" and n not in self.args + self.aux}
        STATS["compiles"] += 1

    def gradient_op(self, tape: Tape) -> GraphOp:
        """The gradient computation as one traced operator (made once): its inputs the leaves
        and head gradients it reads, its outputs the gradients of :attr:`wanted` in order."""
        if self.grad_op is None:
            shapes = {f"leaf{i}": a.shape for i, a in enumerate(tape.leaves)}
            dtypes = {f"leaf{i}": a.dtype for i, a in enumerate(tape.leaves)}
            sym, heads = gradient_symbol(self.sym, shapes, dtypes, self.wanted, self.train)
            STATS["gradients"] += 1
            self.grad_op = GraphOp(sym, f"gradient{STATS['gradients']}")
            self.grad_op.heads = {h: int(h.lstrip("_")[4:]) for h in heads}
        return self.grad_op

    def run(self, tape: Tape, head_grads: list) -> dict[int, NDArray]:
        """Feed the leaves, run forward and backward; the gradient array of each leaf index that
        has one."""
        exe = self.exe
        for name, dst in zip(self.args + self.aux, exe.arg_arrays + exe.aux_arrays):
            tape.leaves[int(name[4:])].copyto(dst)
        exe.forward(is_train=self.train)
        exe.backward([g if g is not None else o for g, o in zip(head_grads, self.head_ones)])
        return {**{int(n[4:]): g for n, g in zip(self.args, exe.grad_arrays) if g is not None}, **self.unread}


class HeldProgram:
    """A recording's gradients from the values its calls computed: one program of the gradient
    rules' operators (:func:`~symjit.autograd_graph.gradient_symbol`) whose inputs are the leaves,
    the head gradients and the recorded outputs it reads (``<output name>:held``, held by the
    entries);
    a forward operator runs only where a gradient reads an output the recording does not hold
    (BatchNorm's saved statistics, a traced graph's inner values)."""

    def __init__(self, tape: Tape, given: list[bool], wanted: list[bool] | None):
        sym = tape.symbol()
        leaf = {f"leaf{i}": a for i, a in enumerate(tape.leaves)}
        reqs = dict(zip(leaf, tape.reqs if wanted is None else ["write" if w else "null" for w in wanted]))
        self.wanted = [n for n in sym.list_arguments() if reqs[n] != "null"]
        self.train = any(e.train for e in tape.entries)
        nodes = {n.name: n for n in sym._topo()}
        self.held = {nodes[f"op{j}"].output_name(i): (j, i) for j, e in enumerate(tape.entries)
                     if e.op != GRAPH for i in range(e.n_out)}
        gsym, heads = gradient_symbol(sym, {n: a.shape for n, a in leaf.items()},
                                      {n: a.dtype for n, a in leaf.items()}, self.wanted, self.train,
                                      set(self.held))
        outs = [tape.entries[j].held[i] for j, i in tape.heads]
        self.head_ones = [None if g else ones(o.shape, ctx=o.context, dtype=o.dtype)
                          for g, o in zip(given, outs)]
        self.heads = {h: int(h.lstrip("_")[4:]) for h in heads}
        self.args, self.aux = gsym.list_arguments(), gsym.list_auxiliary_states()
        self.sources = [self._source(n, tape) for n in self.args + self.aux]
        # the program's own arrays, shaped as the values fed in (a head gradient as its head)
        own = [zeros(a.shape, ctx=a.context, dtype=a.dtype)
               for a in (self._value(src, tape, outs) for src in self.sources)]
        ctx = own[0].context if own else None
        self.exe = gsym.bind(ctx, own[:len(self.args)], grad_req="null", aux_states=own[len(self.args):])
        self.ctx, self.cfg = ctx, default_config()      # what sym.bind bound it with
        self.direct: BoundProgram | bool | None = None     # see run()
        self.threads: Any = None
        self.dtypes: list = []
        STATS["compiles"] += 1

    def _source(self, name: str, tape: Tape) -> tuple:
        if name in self.heads:
            return ("head", self.heads[name])
        if name.endswith(":held"):
            return ("held", *self.held[name[:-5]])
        return ("leaf", int(name[4:]))

    def _value(self, src: tuple, tape: Tape, head_grads: list) -> NDArray:
        if src[0] == "head":
            g = head_grads[src[1]]
            return g if g is not None else self.head_ones[src[1]]
        if src[0] == "leaf":
            return tape.leaves[src[1]]
        return tape.entries[src[1]].held[src[2]]

    def run(self, tape: Tape, head_grads: list, into: bool = False) -> dict[int, NDArray]:  # noqa: FBT001, FBT002
        """Run on the leaves, head gradients and held values: each wanted leaf's gradient. Once
        the executor runs compiled (numba's module), the program's function is called on the
        values' own buffers (:class:`~symjit.imperative_bound.BoundProgram`) instead of copying
        them into the executor's arrays; ``into``: a gradient may be written straight into its
        leaf's gradient buffer (``grad_req='write'``, returned as that buffer) when that buffer
        is contiguous, of the gradient's dtype and shares no memory with the values read."""
        values = [self._value(src, tape, head_grads) for src in self.sources]
        if self.direct is None:
            self.direct = self._bind_direct()
        if self.direct and not profiler.active() and all(
                v._store.dtype == d and v._store.flags.c_contiguous for v, d in zip(values, self.dtypes)):
            return self._run_direct(tape, values, into)
        exe = self.exe
        for v, dst in zip(values, exe.arg_arrays + exe.aux_arrays):
            v._copyto(dst)
        outs = exe.forward(is_train=self.train)
        return {int(n[4:]): g for n, g in zip(self.wanted, outs)}

    def _bind_direct(self) -> BoundProgram | bool | None:
        """The executor's compiled program bound for calls on given buffers: None while it is not
        compiled yet (not run, or run interpreted), False where it never will be here (another
        device than the host's memory, an ahead-of-time entry's module)."""
        exe = self.exe
        if self.ctx is None or not self.ctx.device.host_memory:
            return False
        found = exe.compiled_program(self.train)
        if found is None:
            return None
        compiled, arena = found
        if not isinstance(compiled.module, types.ModuleType):
            return False
        self.threads = self.ctx.device.thread_policy(self.cfg.blas_threads)
        self.dtypes = [np.dtype(a.dtype) for a in exe.arg_arrays + exe.aux_arrays]
        # the executor's temporaries' buffer: the two never run at once
        return BoundProgram(compiled, self.args + self.aux, self.ctx, "backward", self.cfg, arena)

    def _run_direct(self, tape: Tape, values: list, into: bool) -> dict[int, NDArray]:  # noqa: FBT001
        if dispatch.PENDING:
            dispatch.settle()
        stores = [v._store for v in values]
        # aux states (BatchNorm's running statistics) are read from copies: a training forward the
        # gradient computes again must not update the recorded call's states a second time
        for i, own in enumerate(self.exe.aux_arrays, len(self.args)):
            np.copyto(own._store, stores[i])
            stores[i] = own._store
        read = {id(_owner(s)) for s in stores}
        outs = []
        for n, (shape, dtype) in zip(self.wanted, self.direct.outputs):
            dst = None
            if into:
                leaf = tape.leaves[int(n[4:])]
                dst = leaf._ag_grad if leaf._ag_req == "write" else None
                if dst is not None:
                    d = dst._store
                    if type(d) is not np.ndarray or d.dtype != dtype or d.shape != shape \
                            or not d.flags.c_contiguous or id(_owner(d)) in read:
                        dst = None
                    else:
                        read.add(id(_owner(d)))
            outs.append(dst if dst is not None else NDArray(np.empty(shape, dtype), self.ctx))
        if self.threads:
            self.threads.adapt()    # BLAS threads = the cores other processes leave free
        self.direct.run(stores + [o._store for o in outs])
        return {int(n[4:]): g for n, g in zip(self.wanted, outs)}




def program_bytes(prog: Any) -> int:
    """The bytes a kept program holds: its executor's arrays and planned temporaries."""
    held = getattr(prog, "held_bytes", None)
    if held is None:
        exe = getattr(prog, "exe", None)
        arrays = [] if exe is None else [*exe.arg_arrays, *exe.grad_arrays, *exe.aux_arrays, *exe.outputs]
        held = (0 if exe is None else exe.planned_bytes) + sum(
            a.size * np.dtype(a.dtype).itemsize for a in arrays if a is not None)
        prog.held_bytes = held
    return held
