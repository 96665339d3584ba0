"""The loop generator every target shares: one loop over a group's loop shape that composes the
elementwise ops' scalar bodies.

An anchor's element function (its rule's ``emit`` result) is called inside the loop, at the loop's
indentation: it may emit statements there (an accumulation loop over a reduced axis) before it
returns the element's value. Every element an op reads is loaded first (operands broadcast
right-aligned read index 0 on their size-1 axes; inputs a rule marks ``shape_only`` are never
loaded), the bodies are composed in registers, and every materialized value is stored last, which is
what makes in-place reuse of loop inputs safe. Reduction epilogues (rules with ``reduce=``, only
offered by targets whose loops run serially) accumulate into a keepdims view of their output inside
the same loop. How the loop opens is the target's (:meth:`symjit.lower.Target.open_loop`).

In a light program (:attr:`KernelWriter.any_pattern <symjit.lower.writer.KernelWriter>`: no GEMM or
convolution) a broadcast group's loop is written for every broadcast pattern of its ranks: each operand
it loads, and each reduction epilogue's output of the loop's rank (in any group of such a program:
the gradient of a broadcast reduced to a stretched input), is indexed ``i * s`` per axis,
where ``s`` (1, or 0 on a size-1 axis) is read from the array's runtime shape before the loop
(:func:`symjit.lower.emit.axis_steps`). So the kernel's source names no pattern, and a new pattern (MXNet's
broadcast tests bind one op over dozens) reuses the kernel compiled for the first: ~0.4-0.7 s of
numba per kernel otherwise. LLVM versions the loop on those steps; a forward pass runs as fast
as the pattern's own kernel, a gradient's fused sum up to 3x slower where the innermost axis is
short, and each such kernel takes LLVM 2-3x as long to compile
(``benchmarks/bench_bind_sweep.py --steps``), so a model's program (with GEMMs or convolutions,
bound once per shape) keeps a kernel per pattern. The target's map loops in such kernels are
written for any extents too: the CPU gives one of two or more axes a form that does not depend
on its size (a run of its leading iterations, split into parts when it is big), which costs LLVM
a fraction of a nest of five loops. The scalar bodies' constants are, in those
kernels, kernel arguments (:func:`_const`), so a sweep over a scalar op's scalar shares a kernel too.
"""
from __future__ import annotations

import numpy as np

from ...lower.emit import axis_steps, literal, stepped_index
from ...lower.rules import ElemExpr, Rule
from ...lower.target import Target
from ...lower.writer import KernelWriter
from ...ops.registry import Kind
from ..graph import Graph, OpNode
from ..passes.fuse import Group

__all__ = ["emit_loop", "loop_dims", "vname", "broadcast_index"]


def vname(vid: int) -> str:
    """The local name of value ``vid`` in generated code."""
    return f"v{vid}"


def broadcast_index(shape: tuple, loop_shape: tuple, idx: list[str], steps: list[str] | None = None) -> str:
    """Index expression of an operand broadcast (right-aligned) against the loop shape; with
    ``steps`` (the operand's :func:`~symjit.lower.emit.axis_steps`), the same for any broadcast pattern.

    >>> broadcast_index((1, 3), (2, 4, 3), ['i0', 'i1', 'i2'])
    '0, i2'
    >>> broadcast_index((1, 3), (2, 4, 3), ['i0', 'i1', 'i2'], ['_s1', '_s2'])
    'i1 * _s1, i2 * _s2'
    """
    off = len(loop_shape) - len(shape)
    if steps is not None and shape:
        return stepped_index(idx[off:], steps)
    parts = []
    for d, n in enumerate(shape):
        parts.append("0" if n == 1 and loop_shape[d + off] != 1 else idx[d + off])
    return ", ".join(parts) if parts else "0"


def loop_dims(g: Graph, grp: Group) -> list[str]:
    """Source for each loop dimension: a runtime shape of an array with the loop shape (keeps the
    kernel shape-generic), or the static size when no such array exists."""
    arrays = [v for v in grp.outputs + grp.inputs if g.values[v].shape == grp.loop_shape]
    if arrays:
        return [f"{vname(arrays[0])}.shape[{d}]" for d in range(len(grp.loop_shape))]
    return [str(n) for n in grp.loop_shape]


def _reduce_views(k: KernelWriter, g: Graph, grp: Group, reds: list[OpNode],
                  generic: bool) -> dict[int, tuple[str, tuple | list[str]]]:
    """Zero each reduction epilogue's output, viewed with the loop's rank (kept dims): the view
    and its reduced axes, or (``generic``, an output of the loop's rank) the output itself and its
    :func:`~symjit.lower.emit.axis_steps`."""
    from ...ops.reduce import reduced_axes
    views = {}
    ldims = loop_dims(g, grp)
    for op in reds:
        src = g.values[op.inputs[0]].shape
        out = vname(op.outputs[0])
        if generic and len(g.values[op.outputs[0]].shape) == len(src):
            views[op.outputs[0]] = (out, axis_steps(k, out, len(src)))
        else:
            axes = reduced_axes(src, op.params["axis"], op.params["exclude"])
            view = k.tmp("r")
            kept = ", ".join("1" if d in axes else ldims[d] for d in range(len(src)))
            k.line(f"{view} = {out}.reshape(({kept},))")
            views[op.outputs[0]] = (view, axes)
        k.line(f"{out}.reshape(-1)[:] = 0")
    return views


def _const(k: KernelWriter, value, dtype) -> str:
    """A body's constant (a scalar op's scalar, an epsilon): a literal typed like the arrays it
    meets, or in a light program's kernel (``KernelWriter.any_pattern``) a kernel argument
    (``KernelWriter.const``) typed so, so kernels differing only in it share one form."""
    if not k.any_pattern:
        return literal(value, dtype)
    if isinstance(value, (bool, np.bool_)):
        value = float(value)
    name = k.const(int(value) if isinstance(value, (int, np.integer)) else float(value))
    return f"np.{np.dtype(dtype).name}({name})" if np.dtype(dtype).kind == "f" else name


def _loaded(op: OpNode, rule: Rule) -> list[int]:
    """The inputs of a loop op that its body reads (shape-only inputs are not)."""
    return [i for slot, i in enumerate(op.inputs) if slot not in rule.shape_only]


def _loads(ops: list[tuple[OpNode, Rule]], elem: dict[int, ElemExpr]) -> list[int]:
    """The values the loop reads from arrays, in load order."""
    computed = {o for op, _ in ops for o in op.outputs}
    return list(dict.fromkeys(i for op, r in ops for i in _loaded(op, r)
                              if i not in computed and i not in elem))


def _any_pattern(k: KernelWriter, grp: Group) -> bool:
    """Whether the group's loop is written for every broadcast pattern (a broadcast group of a
    light program, ``KernelWriter.any_pattern``); other groups' operands have the loop's shape."""
    return k.any_pattern and grp.kind == Kind.BROADCAST


def _operand_steps(k: KernelWriter, g: Graph, grp: Group, ops, elem) -> dict[int, list[str]]:
    """The :func:`~symjit.lower.emit.axis_steps` of every array a broadcast group's loop loads,
    when one of them is stretched (none for other groups, whose operands all have the loop's
    shape). A broadcast group whose operands all have the loop's shape (a broadcast op on arrays
    of one shape, the elementwise gradients, a lazy queue's chains) keeps a plain loop: steps
    would share nothing there and cost LLVM compile time."""
    if not _any_pattern(k, grp):
        return {}
    loads = [i for i in _loads(ops, elem) if g.values[i].shape]
    if all(g.values[i].shape == grp.loop_shape for i in loads):
        return {}
    return {i: axis_steps(k, vname(i), len(g.values[i].shape)) for i in loads}


def emit_loop(target: Target, k: KernelWriter, g: Graph, grp: Group, ops: list[tuple[OpNode, Rule]],
              elem: dict[int, ElemExpr]) -> None:
    """Emit the group's loop: ``ops`` (with their rules) after the anchor, whose element
    expressions are ``elem``."""
    shape = grp.loop_shape
    reds = [(op, r) for op, r in ops if r.reduce is not None]
    ops = [(op, r) for op, r in ops if r.reduce is None]
    steps = _operand_steps(k, g, grp, ops + reds, elem)
    rviews = _reduce_views(k, g, grp, [op for op, _ in reds], k.any_pattern)
    # anchor values first: a loop output may share the anchor output's buffer (in-place)
    store = [o for o in elem if o in grp.needed or not (ops or reds)]
    store += [o for op, _ in ops for o in op.outputs if o in grp.outputs]
    ldims = loop_dims(g, grp)
    if k.loop is None and not reds:   # a map: the target may spread it over threads
        saved = (len(k.lines), len(k.consts), len(k.prior), k.parts, k.whole, k.indent, list(k.loop_indents))
        emitted = _body(k, g, grp, ops, elem, store, ldims, steps,
                        lambda k, dims: target.open_map_loop(k, dims, shape), target.close_loop)
        if not (emitted and k.parts and not saved[3]):
            return
        # the anchor emitted statements into the loop (an accumulation): keep it a plain loop
        del k.lines[saved[0]:], k.consts[saved[1]:], k.prior[saved[2]:]
        k.parts, k.whole, k.indent, k.loop_indents = saved[3:]
    open_loop, close_loop = k.loop or (target.open_loop, target.close_loop)
    _body(k, g, grp, ops, elem, store, ldims, steps, open_loop, close_loop, reds, rviews)


def _body(k: KernelWriter, g: Graph, grp: Group, ops, elem: dict[int, ElemExpr], store: list[int],
          ldims: list[str], steps: dict[int, list[str]], open_loop, close_loop, reds: list | None = None,
          rviews=None) -> bool:
    """The loop itself: loads, the anchor's element expressions, the bodies, the stores, and the
    reduction epilogues' sums. Says whether an element expression emitted statements of its own."""
    shape, reds = grp.loop_shape, reds or []
    idx = open_loop(k, ldims)
    regs: dict[int, str] = {}
    for i in _loads(ops + reds, elem):   # loads first
        regs[i] = k.tmp("a")
        k.line(f"{regs[i]} = {vname(i)}[{broadcast_index(g.values[i].shape, shape, idx, steps.get(i))}]")
    emitted = False
    for vid, expr in elem.items():
        regs[vid] = k.tmp("e")
        before = len(k.lines)
        value = expr(idx)
        emitted |= len(k.lines) > before
        k.line(f"{regs[vid]} = {value}")
    # a value another op of this loop reads is rounded to its dtype first, as its store would
    # round it: a fused chain computes what the unfused kernels compute (a body may return a
    # wider float than its dtype: 1.0 / x of a float32 is a float64 in numba)
    read_here = {i for op, r in ops for i in _loaded(op, r)} | {op.inputs[0] for op, _ in reds}
    for op, r in ops:
        fn, consts = op.op.body(op.params)
        dtype = g.values[op.outputs[0]].dtype
        args = [regs[i] for i in _loaded(op, r)] + [_const(k, c, dtype) for c in consts]
        regs[op.outputs[0]] = k.tmp("t")
        call = f"{k.module.body(fn)}({', '.join(args)})"
        if op.outputs[0] in read_here and dtype.kind == "f":
            call = f"np.{dtype.name}({call})"
        k.line(f"{regs[op.outputs[0]]} = {call}")
    for o in store:   # stores last
        k.line(f"{vname(o)}[{', '.join(idx)}] = {regs[o]}")
    for op, _ in reds:
        view, axes = rviews[op.outputs[0]]
        if isinstance(axes, list):   # the axis steps of a generic view
            ridx = stepped_index(idx, axes)
        else:
            ridx = ", ".join("0" if d in axes else i for d, i in enumerate(idx))
        k.line(f"{view}[{ridx}] += {regs[op.inputs[0]]}")
    close_loop(k, idx)
    for op, r in reds:
        if r.reduce == "mean":
            out, axes = vname(op.outputs[0]), rviews[op.outputs[0]][1]
            if isinstance(axes, list):   # the loop's elements per output element
                count = f"(({' * '.join(ldims)}) // {out}.size if {out}.size else 1)"
            else:
                count = " * ".join(ldims[d] for d in axes) or "1"
            k.line(f"{out}.reshape(-1)[:] /= {count}")
    return emitted
