"""Pass 2: reverse-mode autodiff. Appends the backward program to a training Graph.

Walks the forward ops in reverse. Each op's gradient rule (``OpDef.grad``) receives a
:class:`GraphBuilder` in the backward phase, the forward :class:`OpNode` and the gradients of its
outputs (value ids, ``None`` where no gradient flows), and returns one gradient value (or ``None``)
per input, built as graph nodes from other ops. Loss heads (``OpDef.loss``) ignore incoming
gradients and supply their own; every other head takes a ``head_grad`` value that the executor
fills from ``backward(out_grads)``. Gradients reaching one value from several consumers are summed
in the order the consumers are differentiated: when the value's own op is differentiated (the
additions then fuse into one loop over all the parts), or as soon as :data:`SUM_CAP` parts wait,
so that a weight an unrolled loop reads at every step keeps at most that many gradients alive,
not one per step (MXNet sums at most 8 gradients at once too, then adds in place).

Only what some argument with ``grad_req != 'null'`` depends on is differentiated. For each such
argument the final gradient value becomes the user's gradient array: ``write`` stores it, ``add``
adds it to the array's old content (an ``elemwise_add`` reading a ``grad_in`` value that shares the
user's storage), and an argument no gradient reaches gets zeros under ``write``.
"""
from __future__ import annotations

from ...base import MXNetError
from ..graph import Graph, GraphBuilder

__all__ = ["autodiff", "GRAD_REQS"]

GRAD_REQS = ("null", "write", "add")


def _needs_grad(g: Graph, wanted: set[int]) -> set[int]:
    """Values through which a gradient must flow to reach a wanted argument. An op marked
    ``no_grad`` (comparisons, ``zeros_like``, rounding: zero gradient almost everywhere, as in
    MXNet) stops the flow: its outputs are constants of the backward pass."""
    need = set(wanted)
    for op in g.ops:
        if op.op.extra.get("no_grad"):
            continue
        if any(i in need for i in op.inputs):
            need.update(op.outputs)
    return need


def autodiff(g: Graph, grad_req: dict[str, str]) -> Graph:
    """Return a copy of the forward graph ``g`` with its backward program appended."""
    for name, req in grad_req.items():
        if req not in GRAD_REQS:
            raise MXNetError(f"grad_req for {name!r} must be one of {GRAD_REQS}, got {req!r}")
    g = g.copy()
    wanted = {g.args[n] for n, r in grad_req.items() if r != "null" and n in g.args}
    if not wanted:
        return g
    flows = _needs_grad(g, wanted)
    b = GraphBuilder(g, "backward", g.is_train)
    grads: dict[int, list[int]] = {}
    forward_ops = list(g.ops)
    head_ops = {o for op in forward_ops if op.op.loss for o in op.outputs}
    for idx, vid in enumerate(g.outputs):
        if vid in flows and vid not in head_ops:
            v = g.values[vid]
            hg = b.new_value(f"{v.ref}_head_grad", v.shape, v.dtype, "head_grad", v.ref)
            g.head_grads[idx] = hg
            _accumulate(b, grads, vid, hg)

    for op in reversed(forward_ops):
        if not any(i in flows for i in op.inputs):
            continue
        ograds = [_total(b, grads.get(o)) for o in op.outputs]
        if not op.op.loss and all(og is None for og in ograds):
            continue
        if op.op.grad is None:
            raise MXNetError(f"{op.op.name} '{op.name}': this operator has no gradient rule")
        in_grads = op.op.grad(b, op, ograds)
        if len(in_grads) != len(op.inputs):
            raise AssertionError(f"{op.op.name}: gradient rule returned {len(in_grads)} values "
                                 f"for {len(op.inputs)} inputs")
        names = op.op.list_arguments(op.params) + op.op.list_aux(op.params)
        for i, name, gv in zip(op.inputs, names, in_grads):
            if gv is not None and i in flows:
                g.watch.setdefault(gv, f"{op.name}_backward_{name}")
                _accumulate(b, grads, i, gv)

    for name, req in grad_req.items():
        if req == "null" or name not in g.args:
            continue
        _bind_grad(b, g, name, req, _total(b, grads.get(g.args[name])))
    return g


SUM_CAP = 8   # the most gradient parts of one value waiting to be summed


def _accumulate(b: GraphBuilder, grads: dict[int, list[int]], vid: int, part: int) -> None:
    """Keep one consumer's gradient ``part`` of ``vid``; sum the waiting parts into one when
    :data:`SUM_CAP` wait."""
    parts = grads.setdefault(vid, [])
    parts.append(part)
    if len(parts) == SUM_CAP:
        parts[:] = [_total(b, parts)]


def _total(b: GraphBuilder, parts: list[int] | None) -> int | None:
    """``((p0 + p1) + p2) + ...``, or None for no parts."""
    if not parts:
        return None
    total = parts[0]
    for p in parts[1:]:
        total = b.add("elemwise_add", [total, p], params={}, raw=True)[0]
    return total


def _bind_grad(b: GraphBuilder, g: Graph, name: str, req: str, gv: int | None) -> None:
    arg = g.values[g.args[name]]
    if req == "add":
        if gv is None:
            return
        old = b.new_value(f"{name}_grad_old", arg.shape, arg.dtype, "grad_in", name)
        gv = b.add("elemwise_add", [old, gv], name=f"{name}_grad_acc", params={}, raw=True)[0]
    elif gv is None:
        gv = b.add("zeros_like", [g.args[name]], name=f"{name}_grad_zero", params={}, raw=True)[0]
    elif g.values[gv].kind != "tmp" or gv in g.grads.values():
        gv = b.add("_copy", [gv], name=f"{name}_grad_copy", params={}, raw=True)[0]
    v = g.values[gv]
    v.kind, v.ref, v.name = "grad", name, f"{name}_grad"
    g.grads[name] = gv
