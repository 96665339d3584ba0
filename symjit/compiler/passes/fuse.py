"""Pass 3: fusion. Partition the schedule into groups; each group becomes one kernel.

How groups form (after TVM's ``fuse_ops``, simplified to a single walk in schedule order):

* Every op has a pattern kind (``OpDef.kind``): ELEMWISE, BROADCAST, INJECTIVE, REDUCTION,
  OUT_ELEMWISE_FUSABLE (GEMM/convolution, whose output elements can feed an epilogue) or OPAQUE,
  and, on the target being compiled for, a lowering rule (:func:`symjit.lower.lookup`) whose facts
  say what may fuse: ``epilogue``, ``reduce``, ``host``. The pass reads only those facts.
* An op that is ELEMWISE or BROADCAST joins the group that produced one of its inputs when
  (1) that group is *open*: made of elementwise/broadcast ops, or anchored by an
  OUT_ELEMWISE_FUSABLE op whose rule declares an epilogue;
  (2) the op's output has the group's loop shape (the anchor's output shape), so one loop nest
  covers both; (3) every other input of the op is ready when the group runs (written by an earlier
  group or inside this one); (4) same phase (forward ops never fuse with backward ops); (5) the
  group holds fewer than :data:`MAX_GROUP_OPS` ops (compile time). An op whose inputs are all
  external (arguments...) may join the latest group on the same terms. Otherwise it starts a new
  group.
* An op whose rule declares ``reduce`` (``sum``/``mean`` on the CPU) and whose input is computed by
  an open group's loop (full loop shape) joins that group as a *reduction epilogue*: it
  accumulates inside the same loop (bias-gradient sums over the elementwise gradient chain), and
  closes the group.
* Every other op starts (and, unless it is an epilogue-capable anchor, closes) its own group.
  A reshape-like op (``extra['view']``) whose output is a temporary becomes a *view* group: no
  kernel runs, its output aliases its input's buffer (the planner unions them).
* A host op (rule ``host=True``: ``Custom``, whose code is Python) is a group of its own that
  nothing joins; all its outputs are materialized. Code generation splits the program there.
* An anchor whose rule declares a ``workspace`` gets its scratch buffers as temporaries of the
  graph written by its group (``<node>_workspace<i>``): the planner places them like any value.
* A value written inside a group is *materialized* (gets a buffer) when something outside the group
  reads it, when it is a program output or gradient, or when it is an anchor's output (the GEMM
  target); other values live in registers inside the kernel's loop.

With fusion off (``Config.fusion = False``) every op is its own group. An op the target has no rule
for forms a group of its own; code generation reports it by name. The result is visible in
``symjit compile`` and tested by counting groups without running anything.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...lower.rules import FUSABLE_INTO, Rule, lookup
from ...lower.target import Target
from ...ops.registry import Kind
from ..graph import Graph, OpNode, Value

__all__ = ["Group", "fuse", "FUSABLE_INTO", "MAX_GROUP_OPS"]

# The most ops an elementwise or broadcast op joins: numba's passes (SSA reconstruction, type
# inference) grow faster than the function, so one huge loop body compiles slower than a few
# smaller ones. 75 same-shaped chains of 3 ops (a lazy queue of many calls) compiled in 7.4-8.2 s
# as one kernel, 6.1-7.5 s cut at 64 ops, 4.8-5.3 s at 32, 3.2-3.7 s at 16 (three runs each,
# benchmarks/bench_group_limit.py, docs/performance.md). A dependent chain materializes one value
# where it splits (one more memory pass); the training programs of the seed networks and of an
# unrolled LSTM have groups of at most 13 ops.
MAX_GROUP_OPS = 32


@dataclasses.dataclass
class Group:
    """One kernel: ops in order (with their rules), external inputs, materialized values."""

    id: int
    ops: list[OpNode]
    rules: list[Rule | None]   # each op's lowering rule on the target (None: the target has none)
    phase: str
    kind: Kind
    loop_shape: tuple[int, ...] | None = None
    inputs: list[int] = dataclasses.field(default_factory=list)
    outputs: list[int] = dataclasses.field(default_factory=list)
    locals: list[int] = dataclasses.field(default_factory=list)
    needed: set[int] = dataclasses.field(default_factory=set)   # outputs read after the group
    workspace: list[int] = dataclasses.field(default_factory=list)  # the anchor rule's scratch values
    view: bool = False   # a reshape-like op whose output aliases its input: no kernel at all
    closed: bool = False  # a reduction epilogue ends the group's loop
    host: bool = False   # a Python callback (Custom op): no kernel, the executor calls it

    @property
    def anchor(self) -> OpNode | None:
        """The non-elementwise op whose output the elementwise ops extend, if any."""
        first = self.ops[0]
        return first if first.op.kind not in FUSABLE_INTO else None

    @property
    def anchor_rule(self) -> Rule | None:
        return self.rules[0] if self.anchor is not None else None

    @property
    def open(self) -> bool:
        if self.closed or self.host:
            return False
        anchor, rule = self.anchor, self.anchor_rule
        return anchor is None or (anchor.op.kind == Kind.OUT_ELEMWISE_FUSABLE and rule is not None
                                  and rule.epilogue)

    @property
    def kind_label(self) -> str:
        """What the group is, in the words of ``symjit compile``'s text report and its Graphviz
        picture alike: ``view, no kernel``, ``host call``, or the fusion kind (``elemwise``, ...)."""
        return "view, no kernel" if self.view else "host call" if self.host else self.kind.name.lower()

    @property
    def heading(self) -> str:
        """``group3[elemwise]``: how the text report and the picture name the group."""
        return f"group{self.id}[{self.kind_label}]"

    def describe(self) -> str:
        return f"{self.heading}: " + " + ".join(o.name for o in self.ops)


def is_view(g: Graph, node: OpNode) -> bool:
    """A reshape-like op (``extra['view']``) whose output can alias its input: same bytes, and
    the output is a temporary (outputs and gradients handed to the user need their own array)."""
    if not node.op.extra.get("view") or len(node.inputs) != 1 or len(node.outputs) != 1:
        return False
    src, dst = g.values[node.inputs[0]], g.values[node.outputs[0]]
    return dst.kind == "tmp" and src.nbytes == dst.nbytes and src.dtype == dst.dtype


def fuse(g: Graph, target: Target, enabled: bool = True) -> list[Group]:
    """Partition ``g.ops`` into kernel groups for ``target`` (a
    :class:`~symjit.lower.target.Target`; see the module docstring)."""
    groups: list[Group] = []
    group_of: dict[int, int] = {}   # value id -> id of the group that writes it
    for node in g.ops:
        rule = lookup(node.op, target)
        grp = _join_group(g, node, rule, groups, group_of) if enabled else None
        if grp is None:
            shape = g.values[node.outputs[0]].shape if node.outputs else None
            grp = Group(len(groups), [], [], node.phase, node.op.kind, shape,
                        view=enabled and is_view(g, node), host=rule is not None and rule.host)
            groups.append(grp)
        grp.ops.append(node)
        grp.rules.append(rule)
        if node.op.kind == Kind.BROADCAST and grp.kind == Kind.ELEMWISE:
            grp.kind = Kind.BROADCAST
        if grp.view and node.inputs[0] not in group_of:
            continue   # a view of an external array runs nothing: its value is ready anytime
        for o in node.outputs:
            group_of[o] = grp.id
    _assign_io(g, groups, group_of)
    _add_workspaces(g, groups)
    return groups


def _join_group(g: Graph, node: OpNode, rule: Rule | None, groups: list[Group],
                group_of: dict[int, int]) -> Group | None:
    """The existing group ``node`` fuses into, or None when it starts a new one."""
    if rule is None or rule.host:
        return None
    if rule.reduce is not None and len(node.inputs) == 1:
        src = node.inputs[0]
        grp = groups[group_of[src]] if src in group_of else None
        if grp is not None and grp.open and grp.phase == node.phase and \
                grp.loop_shape == g.values[src].shape and not grp.view and \
                (grp.anchor is None or len(grp.ops) > 1 or grp.anchor.outputs[0] == src):
            grp.closed = True
            return grp
        return None
    if rule.emit is not None or node.op.kind not in FUSABLE_INTO:
        return None
    out_shape = g.values[node.outputs[0]].shape
    candidates = sorted({group_of[i] for i in node.inputs if i in group_of}, reverse=True)
    if not candidates and groups:
        candidates = [groups[-1].id]   # only external inputs: join the latest group if it fits
    for gid in candidates:
        grp = groups[gid]
        if not grp.open or grp.phase != node.phase or grp.loop_shape != out_shape \
                or len(grp.ops) >= MAX_GROUP_OPS:
            continue
        if all(group_of.get(i, -1) <= gid for i in node.inputs):
            return grp
    return None


def _assign_io(g: Graph, groups: list[Group], group_of: dict[int, int]) -> None:
    consumers = g.consumers()
    op_group = {id(op): grp.id for grp in groups for op in grp.ops}
    for grp in groups:
        written = {o for op in grp.ops for o in op.outputs}
        seen_in: list[int] = []
        for op, rule in zip(grp.ops, grp.rules):
            for slot, i in enumerate(op.inputs):
                shape_only = rule is not None and rule.emit is None and slot in rule.shape_only
                if i not in written and i not in seen_in and not shape_only:
                    seen_in.append(i)
        grp.inputs = seen_in
        anchor = grp.anchor
        for op in grp.ops:
            for o in op.outputs:
                outside = any(op_group[id(c)] != grp.id for c in consumers[o])
                if outside or g.values[o].kind != "tmp":
                    grp.needed.add(o)
                if outside or g.values[o].kind != "tmp" or grp.host or \
                        (anchor is not None and op is anchor):
                    grp.outputs.append(o)
                else:
                    grp.locals.append(o)


def _add_workspaces(g: Graph, groups: list[Group]) -> None:
    """Give each anchor whose rule needs scratch space its workspace values: temporaries of the
    graph (so the memory planner places them, alive only while the group runs) that the group
    writes, named ``<node>_workspace<i>``."""
    next_id = max(g.values, default=-1) + 1
    for grp in groups:
        rule = grp.anchor_rule
        if grp.view or rule is None or rule.workspace is None:
            continue
        node = grp.anchor
        ins, outs = [g.values[i] for i in node.inputs], [g.values[o] for o in node.outputs]
        for j, (shape, dtype) in enumerate(rule.workspace(node, ins, outs)):
            g.values[next_id] = Value(next_id, f"{node.name}_workspace{j}", tuple(int(d) for d in shape),
                                      np.dtype(dtype), "tmp")
            grp.workspace.append(next_id)
            grp.outputs.append(next_id)
            next_id += 1
