"""The IR every compiler pass shares: a flat list of op nodes over typed, shaped values.

A :class:`Graph` is one *program*: the forward pass for one mode (training or inference), and, for
training, the backward pass appended after it. Values are SSA: each is written once, by one op, or
comes from outside (``kind`` says which: arguments, aux states, gradients handed to the user,
head gradients given to ``backward``, graph outputs, or temporaries the memory planner owns).
Ops are kept in schedule order. :class:`GraphBuilder` appends ops and runs each op's shape and
dtype rule as it goes, so a gradient rule can build new nodes without knowing their shapes.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..base import MXNetError, dtype_name, shape_str
from ..ops.registry import OpDef, RuleError, get_op, same_dtype

__all__ = ["Value", "OpNode", "Graph", "GraphBuilder", "EXTERNAL_KINDS"]

# Value kinds whose storage comes from outside the plan (never reused by the planner).
EXTERNAL_KINDS = frozenset({"arg", "aux", "grad", "grad_in", "head_grad", "out"})


@dataclasses.dataclass
class Value:
    """One tensor of the program."""

    id: int
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    kind: str = "tmp"   # arg | aux | grad | grad_in | head_grad | out | tmp
    ref: str | None = None   # for external kinds: the argument/aux/output name it binds to

    @property
    def nbytes(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"%{self.id}:{self.name}{shape_str(self.shape)}{dtype_name(self.dtype)}[{self.kind}]"


@dataclasses.dataclass
class OpNode:
    """One operator application in schedule order."""

    op: OpDef
    name: str
    params: dict[str, Any]
    inputs: list[int]
    outputs: list[int]
    phase: str = "forward"   # forward | backward
    train: bool = False      # training-mode semantics (BatchNorm batch stats, Dropout masks)
    # where a GEMM op (FullyConnected, dot) runs, for targets that choose (Target.schedule marks
    # it): "" their default; the CPU's "threads", beside the convolutions on numba's threads
    gemm: str = ""

    def __repr__(self) -> str:
        ins = ", ".join(f"%{i}" for i in self.inputs)
        outs = ", ".join(f"%{o}" for o in self.outputs)
        return f"{outs} = {self.op.name}[{self.name}]({ins})"


@dataclasses.dataclass
class Graph:
    """A program: values, ops in schedule order, and how it binds to the executor's arrays."""

    values: dict[int, Value] = dataclasses.field(default_factory=dict)
    ops: list[OpNode] = dataclasses.field(default_factory=list)
    args: dict[str, int] = dataclasses.field(default_factory=dict)        # argument name -> value
    aux: dict[str, int] = dataclasses.field(default_factory=dict)         # aux name -> value
    outputs: list[int] = dataclasses.field(default_factory=list)          # head values, in order
    output_names: list[str] = dataclasses.field(default_factory=list)
    grads: dict[str, int] = dataclasses.field(default_factory=dict)       # argument -> grad value
    head_grads: dict[int, int] = dataclasses.field(default_factory=dict)  # output index -> value
    is_train: bool = False
    # value -> the name a monitor reports it under: ``fc1_output`` for a forward op's output,
    # ``fc1_backward_weight`` for the gradient an op's rule computes for one of its inputs (MXNet's
    # names for the outputs of the backward node ``fc1_backward``)
    watch: dict[int, str] = dataclasses.field(default_factory=dict)

    def producer(self) -> dict[int, OpNode]:
        """value id -> the op writing it."""
        return {o: op for op in self.ops for o in op.outputs}

    def consumers(self) -> dict[int, list[OpNode]]:
        """value id -> the ops reading it, in schedule order."""
        out: dict[int, list[OpNode]] = {v: [] for v in self.values}
        for op in self.ops:
            for i in op.inputs:
                out[i].append(op)
        return out

    def copy(self) -> Graph:
        return Graph(
            values={k: dataclasses.replace(v) for k, v in self.values.items()},
            ops=[dataclasses.replace(o, inputs=list(o.inputs), outputs=list(o.outputs),
                                     params=dict(o.params)) for o in self.ops],
            args=dict(self.args), aux=dict(self.aux), outputs=list(self.outputs),
            output_names=list(self.output_names), grads=dict(self.grads),
            head_grads=dict(self.head_grads), is_train=self.is_train, watch=dict(self.watch),
        )

    def dump(self) -> str:
        """A readable listing: one line per op with its values' shapes and dtypes."""
        lines = []
        for op in self.ops:
            ins = ", ".join(repr(self.values[i]) for i in op.inputs)
            outs = ", ".join(repr(self.values[o]) for o in op.outputs)
            lines.append(f"[{op.phase[0]}] {op.op.name} {op.name}: {ins} -> {outs}")
        return "\n".join(lines)

    def verify(self) -> None:
        """Check SSA and schedule order: every input is external or written earlier; each value
        is written once. Raises AssertionError (a compiler bug, not user error)."""
        written: set[int] = {v.id for v in self.values.values() if v.kind in
                             ("arg", "aux", "grad_in", "head_grad")}
        seen_out: set[int] = set()
        for op in self.ops:
            for i in op.inputs:
                assert i in written, f"{op!r} reads %{i} before it is written"
            for o in op.outputs:
                assert o not in seen_out, f"%{o} written twice"
                seen_out.add(o)
                written.add(o)
        for o in self.outputs + list(self.grads.values()):
            assert o in written, f"program output %{o} is never written"


class GraphBuilder:
    """Appends ops to a graph, inferring their output shapes and dtypes with the op rules."""

    def __init__(self, graph: Graph, phase: str = "forward", train: bool = False):
        self.g = graph
        self.phase = phase
        self.train = train
        self._next = max(graph.values, default=-1) + 1
        self._names: dict[str, int] = {}
        self.scope = ""   # a prefix of generated op names (a composite op's name while it expands)

    def new_value(self, name: str, shape: tuple, dtype: np.dtype, kind: str = "tmp",
                  ref: str | None = None) -> int:
        vid = self._next
        self._next += 1
        self.g.values[vid] = Value(vid, name, tuple(int(d) for d in shape), np.dtype(dtype), kind, ref)
        return vid

    def _fresh(self, hint: str) -> str:
        hint = f"{self.scope}_{hint}" if self.scope else hint
        n = self._names.get(hint, 0)
        self._names[hint] = n + 1
        return f"{hint}{n}" if n else hint

    def add(self, op: OpDef | str, inputs: list[int], name: str | None = None,
            params: dict | None = None, raw: bool = False, **kwparams: Any) -> list[int]:
        """Append ``op(inputs)``; returns the ids of all its outputs.

        ``params`` are already-parsed params (``raw=False``) or raw values to parse; ``kwparams``
        are raw values parsed by the op's schema.
        """
        opdef = get_op(op) if isinstance(op, str) else op
        if params is None or raw or kwparams:
            merged = dict(params or {})
            merged.update(kwparams)
            params = opdef.parse_params(merged)
        name = name or self._fresh(f"{opdef.name.lower()}")
        ins_s = [self.g.values[i].shape for i in inputs]
        ins_t = [self.g.values[i].dtype for i in inputs]
        n_args = len(opdef.list_arguments(params))
        out_names = opdef.list_outputs(params)
        shapes = self._rule(opdef, name, params, ins_s, n_args, "shape")
        dtypes = self._rule(opdef, name, params, ins_t, n_args, "dtype", len(out_names))
        expand = opdef.expansion(params)
        if expand is not None:
            return self._expand(opdef, expand, name, params, list(inputs), shapes, dtypes)
        outs = [self.new_value(f"{name}_{o}", s, t) for o, s, t in zip(out_names, shapes, dtypes)]
        self.g.ops.append(OpNode(opdef, name, params, list(inputs), outs, self.phase, self.train))
        return outs

    def _expand(self, op: OpDef, expand: Any, name: str, params: dict, ins: list[int], shapes: list,
                dtypes: list) -> list[int]:
        """A composite op's outputs, built from the ops its ``expand`` appends (named under
        ``name``); each must have the shape and dtype the op's own rules inferred (a copy when the
        expansion returns an input)."""
        outer, self.scope = self.scope, name
        try:
            outs = list(expand(self, ins, dict(params)))
        finally:
            self.scope = outer
        n_out = len(op.list_outputs(params))
        if len(outs) != n_out:
            raise MXNetError(f"{op.name} '{name}': its expansion gave {len(outs)} outputs, expected {n_out}")
        for i, vid in enumerate(outs):
            v = self.g.values[vid]
            if v.shape != tuple(shapes[i]) or v.dtype != np.dtype(dtypes[i]):
                raise MXNetError(f"{op.name} '{name}': output {i} of its expansion is {shape_str(v.shape)} "
                                 f"{v.dtype.name}, its rules say {shape_str(tuple(shapes[i]))} "
                                 f"{np.dtype(dtypes[i]).name}")
            if vid in ins or vid in outs[:i]:
                outs[i] = self.add("_copy", [vid], name=f"{name}_output{i}")[0]
        return outs

    def add1(self, op: OpDef | str, *inputs: int, name: str | None = None, **params: Any) -> int:
        """Append an op with raw params and return its first output."""
        return self.add(op, list(inputs), name=name, **params)[0] if params else \
            self.add(op, list(inputs), name=name, params={}, raw=True)[0]

    def _rule(self, op: OpDef, name: str, params: dict, ins: list, n_args: int, what: str,
              n_out: int = 1) -> list:
        rule = op.shape if what == "shape" else op.dtype
        try:
            if what == "dtype":
                op.check_dtypes(params, ins[:n_args])
            if rule is None:
                new_ins, outs, new_aux = same_dtype(params, ins[:n_args], ins[n_args:], n_out)
            else:
                new_ins, outs, new_aux = rule(params, ins[:n_args], ins[n_args:])
        except RuleError as exc:
            raise MXNetError(f"{op.name} '{name}': {exc}") from None
        fmt = shape_str if what == "shape" else dtype_name
        for slot, (given, want) in enumerate(zip(ins, list(new_ins) + list(new_aux))):
            if want is not None and given != want:
                raise MXNetError(f"{op.name} '{name}': input {slot} has {what} {fmt(given)}, "
                                 f"expected {fmt(want)}")
        if any(o is None for o in outs):
            raise MXNetError(f"{op.name} '{name}': could not infer the {what} of its outputs")
        return list(outs)
