"""Pass 1: lower a Symbol with bound shapes and dtypes to a forward :class:`Graph`."""
from __future__ import annotations

import numpy as np

from ...base import MXNetError, shape_str
from ...ops.partial_shape import fixed, is_complete
from ...symbol.infer import infer_graph
from ...symbol.symbol import Symbol, aux_variable_ids, topo_order
from ..graph import Graph, GraphBuilder, OpNode

__all__ = ["build_forward"]


def _infer(sym: Symbol, shapes: dict, dtypes: dict) -> tuple[dict, dict]:
    # the partial engine: a source op's ``shape`` may leave sizes to the ops reading it
    known_s = {k: v for k, v in infer_graph(sym._outputs, "shape", shapes, partial_dims=True).items()
               if is_complete(v)}
    known_t = infer_graph(sym._outputs, "dtype", dtypes)
    return known_s, known_t


def build_forward(sym: Symbol, shapes: dict[str, tuple], dtypes: dict[str, np.dtype],
                  is_train: bool) -> Graph:
    """The forward program of ``sym`` for the given argument/aux shapes and dtypes.

    Every value must have a known shape and dtype; an unknown one raises an error naming the
    node and what is missing.
    """
    known_s, known_t = _infer(sym, shapes, dtypes)
    g = Graph(is_train=is_train)
    b = GraphBuilder(g, "forward", is_train)
    nodes = topo_order(sym._outputs)
    aux_ids = aux_variable_ids(nodes)
    entry_value: dict[tuple[int, int], int] = {}

    def kind_of(node, i):
        return f"variable '{node.name}'" if node.is_variable else f"{node.op.name} '{node.name}' output {i}"

    def need(node, i, what, table):
        v = table.get((id(node), i))
        if v is None:
            kind = kind_of(node, i)
            raise MXNetError(f"cannot bind: the {what} of {kind} is unknown; give it to bind/simple_bind")
        if what == "shape" and v == ():    # (NumPy shape semantics make 0-d arrays)
            raise MXNetError(f"cannot bind: {kind_of(node, i)} is 0-d (shape ()), which symjit's compiled "
                             "operators do not take yet; reshape it to (1,)")
        return v

    for node in nodes:
        if node.is_variable:
            kind = "aux" if id(node) in aux_ids else "arg"
            vid = b.new_value(node.name, need(node, 0, "shape", known_s), need(node, 0, "dtype", known_t),
                              kind, node.name)
            (g.aux if kind == "aux" else g.args)[node.name] = vid
            entry_value[(id(node), 0)] = vid
            continue
        ins = [entry_value[(id(src), i)] for src, i in node.inputs]
        if node.op.expansion(node.params) is not None:   # a composite: the ops it expands to (b.add)
            outs = b.add(node.op, ins, name=node.name, params=dict(node.params))
        else:
            outs = [b.new_value(node.output_name(i), need(node, i, "shape", known_s),
                                need(node, i, "dtype", known_t)) for i in range(node.num_outputs)]
            params = dict(node.params)
            if node.op.shape_partial is fixed:   # a filled source: the shape it was inferred to have
                params["shape"] = g.values[outs[0]].shape
            g.ops.append(OpNode(node.op, node.name, params, ins, outs, "forward", is_train))
        for i, vid in enumerate(outs):
            g.watch[vid] = node.output_name(i)
            entry_value[(id(node), i)] = vid

    for node, i in sym._outputs:
        vid = entry_value[(id(node), i)]
        if g.values[vid].kind != "tmp" or vid in g.outputs:
            src = vid   # a variable or a repeated head: the output is a copy of it
            vid = b.add("_copy", [src], name=f"{node.output_name(i)}_copy")[0]
        g.values[vid].kind = "out"
        g.values[vid].ref = node.output_name(i)
        g.outputs.append(vid)
        g.output_names.append(node.output_name(i))
    return g


def describe_shapes(g: Graph) -> str:
    """``name shape dtype`` per argument, for error messages and listings."""
    return ", ".join(f"{n}={shape_str(g.values[v].shape)}" for n, v in g.args.items())
