"""Pass 2b: graph simplifications that enable fusion (Graph -> Graph).

``eliminate_dead_backward``: backward ops whose outputs nobody reads (the gradient of an input
whose grad_req is 'null', such as the data of the first layer) are removed.

``fold_batchnorm_inference``: a BatchNorm that normalises with its moving statistics (inference
mode, or ``use_global_stats``) and whose saved mean/var outputs nobody reads becomes the broadcast
elementwise op ``_BatchNorm_inference`` over the data and its per-channel parameters reshaped to
broadcast along the channel axis (those reshapes are views: no copies). The fusion pass can then put
it into the epilogue of the FullyConnected or Convolution that produces its input, together with
the activation after it.

``fuse_batchnorm_relu_backward``: in training, ``_backward_BatchNorm(_backward_Activation(dy, r))``
where ``r = relu(BatchNorm(x))`` becomes ``_backward_BatchNorm_relu(dy, x, gamma, beta, ...)``,
which recomputes the relu mask from ``x`` and the saved statistics. The relu's output then dies
at its last forward-style reader (the next layer's weight gradient) instead of living through the
backward GEMM that produces ``dy``, so that GEMM's output can take its memory: the peak of a
FullyConnected+BatchNorm+relu stack drops by one activation.
"""
from __future__ import annotations

from ...ops.registry import get_op
from ..graph import Graph, GraphBuilder, OpNode

__all__ = ["simplify", "fold_batchnorm_inference", "fuse_batchnorm_relu_backward"]


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


def _bn_relu_pattern(g: Graph, op: OpNode, producer: dict, consumers: dict) -> OpNode | None:
    """The forward BatchNorm when ``op`` is the ``_backward_BatchNorm`` of a rewritable pattern."""
    if op.op.name != "_backward_BatchNorm":
        return None
    act = producer.get(op.inputs[0])
    if act is None or act.op.name != "_backward_Activation" or act.params["act_type"] != "relu" \
            or len(consumers[act.outputs[0]]) != 1 or g.values[act.outputs[0]].kind != "tmp":
        return None
    relu = producer.get(act.inputs[1])
    if relu is None or relu.op.name != "Activation" or relu.params["act_type"] != "relu":
        return None
    bn = producer.get(relu.inputs[0])
    if bn is None or bn.op.name != "BatchNorm" or relu.inputs[0] != bn.outputs[0] \
            or op.inputs[1:] != [bn.inputs[0], bn.inputs[1], bn.outputs[1], bn.outputs[2]]:
        return None
    return bn


def fuse_batchnorm_relu_backward(g: Graph) -> Graph:
    """See the module docstring."""
    producer, consumers = g.producer(), g.consumers()
    if not any(_bn_relu_pattern(g, op, producer, consumers) for op in g.ops):
        return g
    g = g.copy()
    producer, consumers = g.producer(), g.consumers()
    dropped: set[int] = set()
    for op in g.ops:
        bn = _bn_relu_pattern(g, op, producer, consumers)
        if bn is None:
            continue
        act = producer[op.inputs[0]]
        dropped.add(id(act))
        op.op = get_op("_backward_BatchNorm_relu")
        op.inputs = [act.inputs[0], bn.inputs[0], bn.inputs[1], bn.inputs[2], *op.inputs[3:]]
        del g.values[act.outputs[0]]
        g.watch.pop(act.outputs[0], None)
    g.ops = [op for op in g.ops if id(op) not in dropped]
    return g


def simplify(g: Graph, fusion: bool = True) -> Graph:
    """All simplifications, in order (the fusion-enabling rewrites only when fusing). The
    target's own scheduling marks come after them (:meth:`symjit.lower.target.Target.schedule`)."""
    g = eliminate_dead_backward(g)
    if fusion:
        g = fuse_batchnorm_relu_backward(fold_batchnorm_inference(g))
    return g
