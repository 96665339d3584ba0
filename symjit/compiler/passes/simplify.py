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

``join_slice_gradients``: the gradient of a value cut into pieces along one axis (``slice_axis``
or ``slice`` of disjoint ranges: an ``RNN``'s weights cut from its parameter vector) is a sum of
zero-padded copies of the value's size, one per piece; a sum of such copies (added together only)
becomes one ``Concat`` of the pieces' gradients along that axis, zeros where no piece lies. The
same values (a ``-0.0`` stays ``-0.0``); the work of one copy of the value, not one per piece.

``narrow_wide_ops``: a ``Concat`` or ``stack`` of more than :data:`WIDE` inputs, or a
``SliceChannel`` of more than :data:`WIDE` outputs (an unrolled loop's steps joined or cut apart:
an ``RNN`` over 300 steps, and the gradients of those ops), becomes a tree of such ops of at most
:data:`WIDE` each (``slice_axis`` cuts the pieces of a wide split). A kernel takes one argument per
input and output and copies each in its own loop: numba's compile time grows faster than the
kernel (minutes at 300), a GPU kernel's parameters are limited, and every loop count would be a
kernel form of its own. The values are the same; each element is copied once more per level.
"""
from __future__ import annotations

from ...ops.registry import get_op
from ...ops.rules import norm_axis, norm_insert_axis
from ...ops.shape_grad import slice_bounds
from ..graph import Graph, GraphBuilder, OpNode

__all__ = ["simplify", "fold_batchnorm_inference", "fuse_batchnorm_relu_backward", "narrow_wide_ops",
           "join_slice_gradients", "WIDE"]

WIDE = 16   # the most inputs of a Concat or stack, outputs of a SliceChannel, after narrow_wide_ops


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


def _wide(op: OpNode) -> bool:
    name = op.op.name
    return (name in ("Concat", "stack") and len(op.inputs) > WIDE) or \
        (name == "SliceChannel" and len(op.outputs) > WIDE)


def _chunks(items: list[int]) -> list[list[int]]:
    return [items[i:i + WIDE] for i in range(0, len(items), WIDE)]


def _join(b: GraphBuilder, name: str, ins: list[int], dim: int) -> int:
    """``Concat`` of ``ins`` along ``dim``, as a tree of at most :data:`WIDE` inputs per op."""
    level = 0
    while len(ins) > WIDE:
        ins = [part[0] if len(part) == 1 else
               b.add("Concat", part, name=f"{name}_join{level}_{j}", dim=dim, num_args=len(part))[0]
               for j, part in enumerate(_chunks(ins))]
        level += 1
    return b.add("Concat", ins, name=name, dim=dim, num_args=len(ins))[0]


def _narrow(g: Graph, b: GraphBuilder, op: OpNode) -> list[OpNode]:
    """The ops that compute ``op``'s outputs (same value ids) with no op wider than WIDE."""
    saved, g.ops = g.ops, []
    b.phase, b.train = op.phase, op.train
    name, p = op.op.name, op.params
    if name == "SliceChannel":
        x = op.inputs[0]
        rank = len(g.values[x].shape)
        ax = norm_axis(p["axis"], rank)
        piece = g.values[x].shape[ax] // len(op.outputs)
        made = []
        for j, outs in enumerate(_chunks(op.outputs)):
            lo = j * WIDE * piece
            part = b.add1("slice_axis", x, name=f"{op.name}_cut{j}", axis=ax, begin=lo,
                          end=lo + len(outs) * piece)
            made += b.add("SliceChannel", [part], name=f"{op.name}_{j}", num_outputs=len(outs), axis=ax,
                          squeeze_axis=p["squeeze_axis"])
    else:
        if name == "stack":
            dim = norm_insert_axis(p["axis"], len(g.values[op.inputs[0]].shape))
            parts = [b.add("stack", part, name=f"{op.name}_{j}", axis=dim, num_args=len(part))[0]
                     for j, part in enumerate(_chunks(op.inputs))]
        else:
            dim, parts = norm_axis(p["dim"], len(g.values[op.inputs[0]].shape), "dim"), list(op.inputs)
        made = [_join(b, op.name, parts, dim)]
    new, g.ops = g.ops, saved
    wanted = iter(op.outputs)
    for node in new:
        node.outputs = [next(wanted) if v in made else v for v in node.outputs]
    for v in made:
        del g.values[v]
    return new


def narrow_wide_ops(g: Graph) -> Graph:
    """See the module docstring."""
    if not any(_wide(op) for op in g.ops):
        return g
    g = g.copy()
    b = GraphBuilder(g)
    ops: list[OpNode] = []
    for op in g.ops:
        ops += _narrow(g, b, op) if _wide(op) else [op]
    g.ops = ops
    return g


def _slice_piece(g: Graph, op: OpNode | None) -> tuple[tuple, int, int, int] | None:
    """``(shape, axis, start, head)`` of a ``_backward_slice`` whose head fills the value along
    every axis but ``axis``, from ``start``, in steps of 1; None for any other op."""
    if op is None or op.op.name != "_backward_slice":
        return None
    full, head = tuple(op.params["shape"]), op.inputs[0]
    hs = g.values[head].shape
    bounds = slice_bounds(op.params)
    cut = [d for d in range(len(full)) if d >= len(hs) or hs[d] != full[d]]
    if len(hs) != len(full) or len(cut) != 1 or any(step != 1 for _, step in bounds):
        return None
    ax = cut[0]
    start = slice(bounds[ax][0], None, 1).indices(full[ax])[0] if ax < len(bounds) else 0
    return full, ax, start, head


def _slice_sum(g: Graph, root: OpNode, producer: dict, readers: dict) -> tuple[list[OpNode], list] | None:
    """The adds under ``root`` (itself first) and the ``_slice_piece`` leaves when ``root`` sums
    padded slices of one value along one axis over disjoint ranges, else None."""
    adds, leaves, todo = [root], [], list(reversed(root.inputs))
    while todo:
        v = todo.pop()
        op = producer.get(v)
        if g.values[v].kind != "tmp" or readers.get(v) != 1 or op is None:
            return None
        if op.op.name == "elemwise_add" and op.phase == "backward":
            adds.append(op)
            todo += reversed(op.inputs)
            continue
        piece = _slice_piece(g, op)
        if piece is None or g.values[v].dtype != g.values[root.outputs[0]].dtype:
            return None
        leaves.append((piece, op))
    if len({(full, ax) for (full, ax, _, _), _ in leaves}) != 1:
        return None
    spans = sorted((start, start + g.values[head].shape[ax]) for (_, ax, start, head), _ in leaves)
    if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
        return None
    return adds, leaves


def _concat_pieces(g: Graph, b: GraphBuilder, root: OpNode, leaves: list) -> list[OpNode]:
    """The ops writing ``root``'s output as one Concat of the leaves' heads and zeros."""
    (full, ax, _, _), _ = leaves[0]
    dtype = g.values[root.outputs[0]].dtype
    saved, g.ops = g.ops, []
    b.phase, b.train = root.phase, root.train
    parts, at = [], 0
    for (_, _, start, head), _ in sorted(leaves, key=lambda leaf: leaf[0][2]):
        if start > at:
            parts.append(b.add1("_zeros", shape=full[:ax] + (start - at,) + full[ax + 1:], dtype=dtype.name))
        parts.append(head)
        at = start + g.values[head].shape[ax]
    if at < full[ax]:
        parts.append(b.add1("_zeros", shape=full[:ax] + (full[ax] - at,) + full[ax + 1:], dtype=dtype.name))
    made = b.add("Concat", parts, name=root.name, dim=ax, num_args=len(parts))[0]
    new, g.ops = g.ops, saved
    new[-1].outputs = [root.outputs[0]]
    del g.values[made]
    return new


def join_slice_gradients(g: Graph) -> Graph:
    """See the module docstring."""
    if not any(op.op.name == "_backward_slice" for op in g.ops):
        return g
    g = g.copy()
    producer = g.producer()
    readers: dict[int, int] = {}
    for op in g.ops:
        for i in op.inputs:
            readers[i] = readers.get(i, 0) + 1
    found: dict[int, list] = {}
    gone: set[int] = set()
    for op in reversed(g.ops):
        if op.op.name != "elemwise_add" or op.phase != "backward" or id(op) in gone:
            continue
        hit = _slice_sum(g, op, producer, readers)
        if hit is not None:
            adds, leaves = hit
            found[id(op)] = leaves
            gone.update(id(o) for o in adds[1:])
            gone.update(id(o) for _, o in leaves)
    if not found:
        return g
    b = GraphBuilder(g)
    ops: list[OpNode] = []
    for op in g.ops:
        if id(op) in found:
            ops += _concat_pieces(g, b, op, found[id(op)])
        elif id(op) not in gone:
            ops.append(op)
        else:
            for o in op.outputs:
                del g.values[o]
                g.watch.pop(o, None)
    g.ops = ops
    return g


def simplify(g: Graph, fusion: bool = True) -> Graph:
    """All simplifications, in order (the fusion-enabling rewrites only when fusing). The
    target's own scheduling marks come after them (:meth:`symjit.lower.target.Target.schedule`)."""
    g = eliminate_dead_backward(g)
    if fusion:
        g = fuse_batchnorm_relu_backward(fold_batchnorm_inference(join_slice_gradients(g)))
    return narrow_wide_ops(g)
