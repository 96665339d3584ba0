"""The fused graph of ``symjit compile`` as a Graphviz picture (``--format dot``, ``--dot FILE``).

One ``subgraph cluster_g<N>`` per kernel (fused group ``N``): a row holding the kernel's label
(``groupN[kind]``, in the words of the text report: ``Group.heading``) and its operators, the
rows top to bottom as data flows, edges between kernels from cluster to cluster. Parameters and
aux states (weights, biases, BatchNorm's gamma, beta and moving statistics) and the views
(reshapes without a kernel) of them are listed, with their shapes, in the label of the operator
that reads them; ``params_as_nodes=True`` draws them as nodes of their own, in the row of their
first reader. A view of a computed value is a small dashed node (``group7[view, no kernel]``).
An operator of the backward pass lists what it reads from the forward pass (``saved: ...``)
instead of an edge across the picture.

>>> import numpy as np, symjit as mx
>>> from symjit.compiler.pipeline import compile_symbol
>>> from symjit.config import Config
>>> net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc")
>>> c = compile_symbol(net, {"data": (2, 3), "fc_weight": (4, 3), "fc_bias": (4,)},
...                    {n: np.float32 for n in ("data", "fc_weight", "fc_bias")}, {}, False,
...                    Config.from_env(), load=False)
>>> src = fused_dot(c, params={"fc_weight", "fc_bias"})
>>> src.count("subgraph cluster_"), "weight (4,3), bias (4,)" in src
(1, True)
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .base import shape_str
from .compiler.graph import OpNode
from .compiler.passes.fuse import Group
from .compiler.pipeline import Compiled

__all__ = ["fused_dot"]

_FILL = {"forward": "#e3eef9", "backward": "#fbe5e5"}   # kernel rows by phase
_GRAPH = {"rankdir": "TB", "ranksep": "0.18", "nodesep": "0.12", "fontsize": "9", "newrank": "true",
          "compound": "true"}
_NODE = {"shape": "box", "style": "rounded,filled", "fillcolor": "white", "fontsize": "9",
         "height": "0.2", "margin": "0.05,0.02"}
_VIEW = {"style": "dashed", "fontsize": "8"}
_PARAM = {"shape": "ellipse", "style": "", "fontsize": "8", "height": "0.15"}


def _esc(name: str) -> str:
    """A name as label text: a backslash is an escape in Graphviz labels (``\\n``), so double it."""
    return name.replace("\\", "\\\\")


def _short(param: str, op: OpNode) -> str:
    """A parameter's name without its operator's (``s1_conv_weight`` of ``s1_conv``: ``weight``)."""
    prefix = op.name + "_"
    return param[len(prefix):] if param.startswith(prefix) and len(param) > len(prefix) else param


def _param_line(items: list[tuple[str, tuple[int, ...]]]) -> str:
    """``weight (64,3,7,7), gamma, beta (64,)``: parameters of one shape share it."""
    parts: list[str] = []
    for i, (name, shape) in enumerate(items):
        last = i + 1 == len(items) or items[i + 1][1] != shape
        parts.append(f"{name} {shape_str(shape)}" if last else name)
    return ", ".join(parts)


class _Picture:
    """One rendering: who writes each value, which values are parameters, what is drawn."""

    def __init__(self, c: Compiled, params: Collection[str], params_as_nodes: bool):
        self.g, self.params, self.as_nodes = c.graph, set(params), params_as_nodes
        self.index = {id(op): i for i, op in enumerate(self.g.ops)}
        self.writer: dict[int, int] = {}          # value -> index of the op writing it
        self.group_of: dict[int, Group] = {}      # op index -> its group
        for grp in c.groups:
            for op in grp.ops:
                i = self.index[id(op)]
                self.group_of[i] = grp
                self.writer.update((o, i) for o in op.outputs)
        self.forward_reads = {v for op in self.g.ops if op.phase == "forward" for v in op.inputs}
        self.placed: set[str] = set()             # parameter and view nodes drawn already
        self.edges: set[tuple[str, str]] = set()

    def is_param(self, vid: int) -> bool:
        v = self.g.values[vid]
        return v.kind == "aux" or (v.kind == "arg" and (v.ref or v.name) in self.params)

    def param_chain(self, vid: int) -> tuple[int, list[int]] | None:
        """``(parameter, views)`` when ``vid`` is a parameter or a view of one (the view ops'
        indices, from the parameter on); else None."""
        views: list[int] = []
        while vid in self.writer and len(views) <= len(self.g.ops):
            i = self.writer[vid]
            if not self.group_of[i].view:
                return None
            views.insert(0, i)
            vid = self.g.ops[i].inputs[0]
        return (vid, views) if vid not in self.writer and self.is_param(vid) else None

    def of_param(self, grp: Group) -> bool:
        """Whether ``grp`` is a view of a parameter (drawn where it is read, if at all)."""
        return grp.view and all(self.param_chain(o) is not None for o in grp.outputs)

    def saved(self, vid: int, op: OpNode) -> bool:
        """Whether ``op`` (of the backward pass) reads ``vid`` from the forward pass (a value it
        writes, or an input it reads too)."""
        if op.phase != "backward":
            return False
        return self.g.ops[self.writer[vid]].phase == "forward" if vid in self.writer \
            else vid in self.forward_reads

    def op_label(self, op: OpNode, folded: list[int], saved: list[int]) -> str:
        auto = op.name.rstrip("0123456789") == op.op.name.lower()   # a name made from the op's
        label = _esc(op.name) if auto else f"{_esc(op.name)}: {op.op.name}"
        if folded:
            items = [(_esc(_short(self.g.values[p].name, op)), self.g.values[p].shape) for p in folded]
            label += "\\n" + _param_line(items)
        if saved:
            names = ", ".join(_esc(self.g.values[v].name) for v in saved)
            label += ("; " if folded else "\\n") + "saved: " + names
        return label

    def edge(self, dot: Any, tail: str, head: str, **attrs: str) -> None:
        if (tail, head) not in self.edges:
            self.edges.add((tail, head))
            dot.edge(tail, head, **attrs)

    def link(self, dot: Any, vid: int, dst: int) -> None:
        """The edge of value ``vid`` into op ``dst``: inside a kernel from op to op; between
        kernels from cluster to cluster (once per pair), drawn between the kernels' label nodes
        so that kernels stack straight down the page."""
        head = self.group_of[dst]
        tail = self.group_of[self.writer[vid]] if vid in self.writer else None
        ends = [f"o{self.writer[vid]}" if tail is not None else f"v{vid}", f"o{dst}"]
        if head is tail:
            self.edge(dot, *ends)
            return
        attrs = {}
        if tail is not None and not tail.view:
            attrs["ltail"], ends[0] = f"cluster_g{tail.id}", f"k{tail.id}"
        if not head.view:
            attrs["lhead"], ends[1] = f"cluster_g{head.id}", f"k{head.id}"
        self.edge(dot, *ends, **attrs)

    def op_nodes(self, op: OpNode, row: Any, dot: Any) -> str:
        """Draw ``op`` (and, with ``params_as_nodes``, the parameters it is the first to read) in
        ``row``; return its label. Edges of its other inputs are drawn by :meth:`link` later."""
        i = self.index[id(op)]
        folded, saved = [], []
        for vid in dict.fromkeys(op.inputs):
            chain = self.param_chain(vid)
            if chain is not None and (not self.as_nodes or op.phase == "backward"):
                folded.append(chain[0])
            elif chain is None and self.saved(vid, op):
                saved.append(vid)
            elif chain is not None:
                self.param_nodes(chain, f"o{i}", row, dot)
        return self.op_label(op, list(dict.fromkeys(folded)), saved)

    def param_nodes(self, chain: tuple[int, list[int]], reader: str, row: Any, dot: Any) -> None:
        param, views = chain
        names = [f"v{param}"] + [f"o{j}" for j in views]
        for name, j in zip(names, [None, *views]):
            if name in self.placed:
                continue
            self.placed.add(name)
            if j is None:
                v = self.g.values[param]
                row.node(name, f"{_esc(v.name)} {shape_str(v.shape)}", **_PARAM)
            else:
                grp = self.group_of[j]
                row.node(name, f"{_esc(self.g.ops[j].name)}\\n{grp.heading}", **_VIEW)
        for tail, head in zip(names, [*names[1:], reader]):
            self.edge(dot, tail, head)


def fused_dot(c: Compiled, params: Collection[str] = (), params_as_nodes: bool = False) -> str:
    """The Graphviz (DOT) source of the fused graph of ``c``; ``params`` names the arguments that
    are parameters (aux states always are), ``params_as_nodes`` draws them as nodes.

    Each kernel is a cluster, its operators boxes labelled ``name: Op`` over the parameters they
    read; a value read from outside the program (data, labels, head gradients) is an ellipse
    with its shape.
    """
    import graphviz
    pic = _Picture(c, params, params_as_nodes)
    dot = graphviz.Digraph("fused", graph_attr=_GRAPH, node_attr=_NODE, edge_attr={"arrowsize": "0.5"})
    kernel_of = c.program.kernel_of
    for grp in c.groups:
        if pic.of_param(grp):
            continue   # a view of a parameter: where its reader is
        if grp.view:
            for op in grp.ops:
                dot.node(f"o{pic.index[id(op)]}", f"{pic.op_nodes(op, dot, dot)}\\n{grp.heading}", **_VIEW)
            continue
        fn = kernel_of.get(f"k{grp.id}")
        shared = f"\\n(kernel {fn})" if fn is not None and fn != f"k{grp.id}" else ""
        with dot.subgraph(name=f"cluster_g{grp.id}") as row:   # its label a node: one row per kernel
            row.attr(style="filled", color="#9aa7b4", fillcolor=_FILL.get(grp.phase, "#eeeeee"),
                     margin="2", rank="same")
            row.node(f"k{grp.id}", f"{grp.heading}{shared}", shape="plaintext",
                     style="", fontsize="8", margin="0")
            row.edge(f"k{grp.id}", f"o{pic.index[id(grp.ops[0])]}", style="invis")
            for op in grp.ops:
                row.node(f"o{pic.index[id(op)]}", pic.op_nodes(op, row, dot))
    for i, op in enumerate(pic.g.ops):
        if pic.of_param(pic.group_of[i]):
            continue
        for vid in dict.fromkeys(op.inputs):
            if pic.param_chain(vid) is not None or pic.saved(vid, op):
                continue   # listed in the label, or drawn in the row
            if vid not in pic.writer and f"v{vid}" not in pic.placed:
                pic.placed.add(f"v{vid}")
                v = pic.g.values[vid]
                dot.node(f"v{vid}", f"{_esc(v.name)} {shape_str(v.shape)}", shape="ellipse", style="")
            pic.link(dot, vid, i)
    return dot.source

