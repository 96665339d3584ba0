"""Pass 2b: graph simplifications that enable fusion (Graph -> Graph).

``eliminate_dead_backward``: backward ops whose outputs nobody reads (the gradient of an input
whose grad_req is 'null', such as the data of the first layer) are removed.

``fold_batchnorm_inference``: a BatchNorm that normalises with its moving statistics (inference
mode, or ``use_global_stats``) and whose saved mean/var outputs nobody reads becomes the broadcast
elementwise op ``_BatchNorm_inference`` over the data and its per-channel parameters reshaped to
broadcast along the channel axis (those reshapes are views: no copies). The fusion pass can then put
it into the epilogue of the FullyConnected or Convolution that produces its input, together with
the activation after it.
"""
from __future__ import annotations

from ..graph import Graph, GraphBuilder, OpNode

__all__ = ["simplify", "fold_batchnorm_inference"]


def _foldable(g: Graph, op: OpNode, consumers: dict) -> bool:
    if op.op.name != "BatchNorm" or (op.train and not op.params["use_global_stats"]):
        return False
    if g.values[op.inputs[0]].dtype != g.values[op.inputs[1]].dtype:
        return False
    return all(not consumers[o] and g.values[o].kind == "tmp" for o in op.outputs[1:])


def fold_batchnorm_inference(g: Graph) -> Graph:
    """See the module docstring."""
    consumers = g.consumers()
    if not any(_foldable(g, op, consumers) for op in g.ops):
        return g
    g = g.copy()
    consumers = g.consumers()
    b = GraphBuilder(g, "forward", False)
    ops: list[OpNode] = []
    for op in g.ops:
        if not _foldable(g, op, consumers):
            ops.append(op)
            continue
        x, *per_channel = op.inputs
        nd = len(g.values[x].shape)
        axis = op.params["axis"] % nd
        shape = tuple(g.values[x].shape[axis] if d == axis else 1 for d in range(nd))
        saved, g.ops = g.ops, []
        views = [b.add1("Reshape", v, name=f"{op.name}_{i}_view", shape=shape)
                 for i, v in enumerate(per_channel)]
        y = b.add("_BatchNorm_inference", [x, *views], name=op.name,
                  eps=op.params["eps"], fix_gamma=op.params["fix_gamma"])[0]
        new, g.ops = g.ops, saved
        del g.values[y]
        new[-1].outputs = [op.outputs[0]]
        for hidden in op.outputs[1:]:
            del g.values[hidden]
        ops += new
    g.ops = ops
    return g


def eliminate_dead_backward(g: Graph) -> Graph:
    """Drop backward ops none of whose outputs is read or handed out (a gradient rule computes
    every input's gradient; those of arguments with grad_req 'null' are dead)."""
    keep = [True] * len(g.ops)
    changed = True
    while changed:
        read = {i for op, k in zip(g.ops, keep) if k for i in op.inputs}
        changed = False
        for j, op in enumerate(g.ops):
            if keep[j] and op.phase == "backward" and \
                    not any(o in read or g.values[o].kind != "tmp" for o in op.outputs):
                keep[j] = False
                changed = True
    if all(keep):
        return g
    g = g.copy()
    g.ops = [op for op, k in zip(g.ops, keep) if k]
    used = {v for op in g.ops for v in op.inputs + op.outputs}
    for vid in [v for v, val in g.values.items() if val.kind == "tmp" and v not in used]:
        del g.values[vid]
    return g


def simplify(g: Graph, fusion: bool = True) -> Graph:
    """All simplifications, in order (the fusion-enabling rewrite only when fusing)."""
    g = eliminate_dead_backward(g)
    return fold_batchnorm_inference(g) if fusion else g
