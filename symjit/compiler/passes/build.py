"""Pass 1: lower a Symbol with bound shapes and dtypes to a forward :class:`Graph`.

A ``slice_axis`` that takes whole inputs of a ``Concat`` along the Concat's axis reads those
inputs instead (the one input itself, or a Concat of them), and a Concat only such slices read is
not built: the steps of a loop stacked with padding to ``max_iterations`` rows and cut back to
the steps that ran (``contrib.while_loop`` on NDArrays, recorded for autograd) never make the
padded array, nor its gradient. The values are the same."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...base import MXNetError, shape_str
from ...ops.partial_shape import fixed, is_complete
from ...ops.rules import norm_axis
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

    bypass, unbuilt = _concat_slices(sym, nodes, known_s)
    for node in nodes:
        if id(node) in unbuilt:
            continue
        if id(node) in bypass:
            outs = _read_pieces(b, node, [entry_value[(id(s), j)] for s, j in bypass[id(node)]])
        elif node.is_variable:
            kind = "aux" if id(node) in aux_ids else "arg"
            vid = b.new_value(node.name, need(node, 0, "shape", known_s), need(node, 0, "dtype", known_t),
                              kind, node.name)
            (g.aux if kind == "aux" else g.args)[node.name] = vid
            entry_value[(id(node), 0)] = vid
            continue
        else:
            outs = _add_node(g, b, node, [entry_value[(id(src), i)] for src, i in node.inputs], known_s,
                             known_t, need, is_train)
        for i, vid in enumerate(outs):
            if vid not in g.watch and g.values[vid].kind == "tmp":   # (a bypassing slice: its piece)
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


def _add_node(g: Graph, b: GraphBuilder, node: Any, ins: list[int], known_s: dict, known_t: dict,
              need: Any, is_train: bool) -> list[int]:
    if node.op.expansion(node.params) is not None:   # a composite: the ops it expands to (b.add)
        return b.add(node.op, ins, name=node.name, params=dict(node.params))
    outs = [b.new_value(node.output_name(i), need(node, i, "shape", known_s),
                        need(node, i, "dtype", known_t)) for i in range(node.num_outputs)]
    params = dict(node.params)
    if node.op.shape_partial is fixed:   # a filled source: the shape it was inferred to have
        params["shape"] = g.values[outs[0]].shape
    g.ops.append(OpNode(node.op, node.name, params, ins, outs, "forward", is_train))
    return outs


def _pieces(node: Any, known_s: dict) -> list[tuple[Any, int]] | None:
    """The inputs of the Concat that ``node`` (a ``slice_axis``) takes whole, or None."""
    if node.is_variable or node.op.name != "slice_axis":
        return None
    src, i = node.inputs[0]
    if src.is_variable or src.op.name != "Concat":
        return None
    sizes = [known_s.get((id(s), j)) for s, j in src.inputs]
    full = known_s.get((id(src), i))
    if full is None or any(s is None for s in sizes):
        return None
    p = node.params
    ax = norm_axis(p["axis"], len(full))
    if ax != norm_axis(src.params["dim"], len(full)):
        return None
    d = full[ax]
    begin = p["begin"] % d if p["begin"] < 0 else p["begin"]
    end = d if p["end"] is None else p["end"] % d if p["end"] < 0 else p["end"]
    edges = [0]
    for s in sizes:
        edges.append(edges[-1] + s[ax])
    if begin not in edges or end not in edges or end <= begin:
        return None
    return list(src.inputs[edges.index(begin):edges.index(end)])


def _concat_slices(sym: Symbol, nodes: list, known_s: dict) -> tuple[dict[int, list], set[int]]:
    """The ``slice_axis`` nodes that take whole inputs of a Concat (id -> those inputs), and the
    Concats only such slices read (not built)."""
    bypass = {}
    for node in nodes:
        pieces = _pieces(node, known_s)
        if pieces is not None:
            bypass[id(node)] = pieces
    if not bypass:
        return bypass, set()
    other_reads = {id(src) for node in nodes if not node.is_variable and id(node) not in bypass
                   for src, _ in node.inputs} | {id(n) for n, _ in sym._outputs}
    concats = {id(node.inputs[0][0]) for node in nodes if id(node) in bypass}
    return bypass, concats - other_reads


def _read_pieces(b: GraphBuilder, node: Any, vids: list[int]) -> list[int]:
    if len(vids) == 1:
        return vids
    ax = norm_axis(node.params["axis"], len(b.g.values[vids[0]].shape))
    return b.add("Concat", vids, name=node.name, dim=ax, num_args=len(vids))


def describe_shapes(g: Graph) -> str:
    """``name shape dtype`` per argument, for error messages and listings."""
    return ", ".join(f"{n}={shape_str(g.values[v].shape)}" for n, v in g.args.items())
