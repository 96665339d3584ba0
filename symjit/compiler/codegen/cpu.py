"""Pass 5 (CPU): generate one ``numba.njit`` kernel per fused group, and one program function per
phase (forward, backward) that calls the group kernels in schedule order on the planned buffers.

A group kernel runs its anchor's lowering (GEMM, convolution, a hand-written kernel from
``symjit.kernels.cpu``...), then one loop nest over the group's loop shape that evaluates the
elementwise ops' scalar bodies: every element is loaded first, the bodies are composed in registers,
and every materialized value is stored last, which is what makes in-place reuse of loop inputs safe.
An anchor whose lowering returns an element expression (FullyConnected's ``acc + bias``) has that
expression evaluated in the same loop, so bias and activation cost no extra pass.

Kernels index arrays with their runtime shapes: nothing but ranks, dtypes and broadcast patterns is
baked in, so a new batch size reuses the compiled code.

A phase is a list of :class:`Segment` s run in order: a compiled program function, or a host call
(a ``Custom`` op's Python code, which compiled code cannot call). A phase without host ops is one
compiled function named after the phase (``forward``/``backward``, listed in ``entries`` too); a
host op splits it into ``forward_0``, host call, ``forward_1``...
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ...base import MXNetError
from ..graph import Graph, OpNode
from ..passes.fuse import FUSABLE_INTO, Group
from .writer import KernelWriter, ModuleWriter, literal

__all__ = ["generate_cpu", "Program", "Segment"]

ElemExpr = Callable[[list[str]], str]


@dataclasses.dataclass
class Segment:
    """One step of a phase: a compiled function (``name``, called on the arrays of ``vids``), or a
    host call of ``node`` (``kind='host'``) on its inputs then outputs, with one req per output."""

    kind: str   # "njit" | "host"
    name: str
    vids: list[int]
    node: OpNode | None = None
    reqs: list[str] = dataclasses.field(default_factory=list)


class Program:
    """What the generated module exports: per phase, its segments (see the module docstring);
    ``entries`` maps each phase that is a single compiled function to (name, value ids)."""

    def __init__(self, source: str, entries: dict[str, tuple[str, list[int]]],
                 segments: dict[str, list[Segment]] | None = None):
        self.source = source
        self.entries = entries
        self.segments = segments if segments is not None else \
            {phase: [Segment("njit", name, vids)] for phase, (name, vids) in entries.items()}


def _vname(vid: int) -> str:
    return f"v{vid}"


def _index(shape: tuple, loop_shape: tuple, idx: list[str]) -> str:
    """Index expression of an operand broadcast (right-aligned) against the loop shape."""
    off = len(loop_shape) - len(shape)
    parts = []
    for d, n in enumerate(shape):
        parts.append("0" if n == 1 and loop_shape[d + off] != 1 else idx[d + off])
    return ", ".join(parts) if parts else "0"


def _lowering(node: OpNode, target: str):
    lower = node.op.lower or {}
    fn = lower.get(target) if isinstance(lower, dict) else None
    if fn is None:
        raise MXNetError(f"{node.op.name} '{node.name}': no {target} lowering for this operator")
    return fn


def _group_kernel(mw: ModuleWriter, g: Graph, grp: Group) -> tuple[str, list[int]]:
    params = list(dict.fromkeys(grp.inputs + grp.outputs))
    k = KernelWriter(mw, f"k{grp.id}", [_vname(v) for v in params], {_vname(v): g.values[v] for v in params})
    anchor = grp.anchor
    elem: dict[int, ElemExpr] = {}
    if anchor is not None:
        fn = _lowering(anchor, "cpu")
        res = fn(k, anchor, [_vname(i) for i in anchor.inputs], [_vname(o) for o in anchor.outputs])
        if res is not None:
            elem[anchor.outputs[0]] = res
    loop_ops = [op for op in grp.ops if op is not anchor]
    if loop_ops or elem:
        _loop(k, g, grp, loop_ops, elem)
    mw.functions.append(k.finish())
    return k.name, params


def _loop_dims(g: Graph, grp: Group) -> list[str]:
    """Source for each loop dimension: a runtime shape of an array with the loop shape (keeps the
    kernel shape-generic), or the static size when no such array exists."""
    arrays = [v for v in grp.outputs + grp.inputs if g.values[v].shape == grp.loop_shape]
    if arrays:
        return [f"{_vname(arrays[0])}.shape[{d}]" for d in range(len(grp.loop_shape))]
    return [str(n) for n in grp.loop_shape]


def _reduce_views(k: KernelWriter, g: Graph, grp: Group, reds: list[OpNode]) -> dict[int, tuple[str, tuple]]:
    """Zero each reduction epilogue's output, viewed with the loop's rank (kept dims)."""
    from ...ops.reduce import reduced_axes
    views = {}
    dims = _loop_dims(g, grp)
    for op in reds:
        src = g.values[op.inputs[0]].shape
        axes = reduced_axes(src, op.params["axis"], op.params["exclude"])
        out = _vname(op.outputs[0])
        view = k.tmp("r")
        kept = ", ".join("1" if d in axes else dims[d] for d in range(len(src)))
        k.line(f"{view} = {out}.reshape(({kept},))")
        k.line(f"{out}.reshape(-1)[:] = 0")
        views[op.outputs[0]] = (view, axes)
    return views


def _loop(k: KernelWriter, g: Graph, grp: Group, ops: list[OpNode], elem: dict[int, ElemExpr]) -> None:
    shape = grp.loop_shape
    reds = [op for op in ops if op.op.kind not in FUSABLE_INTO]
    ops = [op for op in ops if op.op.kind in FUSABLE_INTO]
    rviews = _reduce_views(k, g, grp, reds)
    # anchor values first: a loop output may share the anchor output's buffer (in-place)
    store = [o for o in elem if o in grp.needed or not (ops or reds)]
    store += [o for op in ops for o in op.outputs if o in grp.outputs]
    dims = _loop_dims(g, grp)
    idx = [f"i{d}" for d in range(len(shape))]
    for d, i in enumerate(idx):
        k.line(f"for {i} in range({dims[d]}):")
        k.indent += 1
    regs: dict[int, str] = {}
    computed = {o for op in ops for o in op.outputs}
    for op in ops + reds:   # loads first
        for i in op.inputs:
            if i not in regs and i not in computed and i not in elem:
                regs[i] = k.tmp("a")
                k.line(f"{regs[i]} = {_vname(i)}[{_index(g.values[i].shape, shape, idx)}]")
    for vid, expr in elem.items():
        regs[vid] = k.tmp("e")
        k.line(f"{regs[vid]} = {expr(idx)}")
    for op in ops:
        fn, consts = op.op.body(op.params)
        dtype = g.values[op.outputs[0]].dtype
        args = [regs[i] for i in op.inputs] + [literal(c, dtype) for c in consts]
        regs[op.outputs[0]] = k.tmp("t")
        k.line(f"{regs[op.outputs[0]]} = {k.module.body(fn)}({', '.join(args)})")
    for o in store:   # stores last
        k.line(f"{_vname(o)}[{', '.join(idx)}] = {regs[o]}")
    for op in reds:
        view, axes = rviews[op.outputs[0]]
        ridx = ", ".join("0" if d in axes else i for d, i in enumerate(idx))
        k.line(f"{view}[{ridx}] += {regs[op.inputs[0]]}")
    k.indent -= len(idx)
    for op in reds:
        if op.op.name == "mean":
            count = " * ".join(dims[d] for d in rviews[op.outputs[0]][1]) or "1"
            k.line(f"{_vname(op.outputs[0])}.reshape(-1)[:] /= {count}")


def _program(mw: ModuleWriter, name: str, calls: list[tuple[str, list[int]]]) -> list[int]:
    params = list(dict.fromkeys(v for _, vs in calls for v in vs))
    k = KernelWriter(mw, name, [_vname(v) for v in params])
    for fn, vs in calls:
        k.line(f"{fn}({', '.join(_vname(v) for v in vs)})")
    mw.functions.append(k.finish())
    return params


def _host_segment(g: Graph, grp: Group) -> Segment:
    node = grp.ops[0]
    read = {i for op in g.ops for i in op.inputs}
    reqs = ["write" if node.phase == "forward" or o in read or g.values[o].kind != "tmp" else "null"
            for o in node.outputs]
    return Segment("host", node.name, list(node.inputs) + list(node.outputs), node, reqs)


def generate_cpu(g: Graph, groups: list[Group], fastmath: bool = False, cache: bool = True) -> Program:
    """Generate the module source for a program: group kernels plus ``forward``/``backward``
    (or, around host ops, numbered segments of them)."""
    flags = f"cache={cache}, nogil=True, error_model='numpy'" + (", fastmath=True" if fastmath else "")
    mw = ModuleWriter(f"@numba.njit({flags})", "numba.njit(inline='always', error_model='numpy')")
    runs: dict[str, list] = {"forward": [], "backward": []}   # host Segments and lists of calls
    for grp in groups:
        steps = runs[grp.phase]
        if grp.host:
            steps.append(_host_segment(g, grp))
        elif not grp.view:   # a view group is only an alias in the memory plan
            if not steps or isinstance(steps[-1], Segment):
                steps.append([])
            steps[-1].append(_group_kernel(mw, g, grp))
    entries, segments = {}, {}
    for phase, steps in runs.items():
        if not steps:
            continue
        if len(steps) == 1 and not isinstance(steps[0], Segment):   # the fast path: one call
            entries[phase] = (phase, _program(mw, phase, steps[0]))
            segments[phase] = [Segment("njit", phase, entries[phase][1])]
            continue
        segments[phase] = []
        for step in steps:
            if isinstance(step, Segment):
                segments[phase].append(step)
            else:
                name = f"{phase}_{len(segments[phase])}"
                segments[phase].append(Segment("njit", name, _program(mw, name, step)))
    return Program(mw.source("Generated by symjit: one kernel per fused group."), entries, segments)


def is_elementwise(node: OpNode) -> bool:
    return node.op.kind in FUSABLE_INTO and node.op.body is not None
