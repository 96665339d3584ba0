"""Target-neutral index-map lowerings: each output element read from a computed position.

A gather rule returns the element expression of its output (``expr(idx) -> str``, see
:mod:`symjit.lower.rules`), and the target's loop over the output evaluates it: a ``range`` nest
on the CPU, a grid-stride loop on CUDA. Statements a rule emits before the loop are scalar
(slice starts, offsets) or views (``reshape`` of a contiguous array), valid on every target. The
CPU keeps its own copy/scatter rules where a block copy is faster (Concat, stack, reshape copies,
take, pick, one_hot, where, the slice and pick gradients); these serve every other target.

Index rules (MXNet 1.x): an index value is truncated toward zero; ``clip`` clamps it to
``[0, D - 1]`` (NaN reads 0), ``wrap`` takes it modulo ``D``. take's ``mode='raise'`` emits the
target's data check (:meth:`symjit.lower.Target.emit_check`: a raise on the CPU, the error flag on
CUDA) and reads the clipped index, so the program stops with a clear error and never reads out of
bounds.

>>> import symjit as mx
>>> x = mx.sym.Variable('x')
>>> ex = mx.sym.reverse(x, axis=1).simple_bind(mx.cpu(), x=(2, 3))
>>> ex.forward(x=mx.nd.array([[1, 2, 3], [4, 5, 6]]))[0].asnumpy().tolist()
[[3.0, 2.0, 1.0], [6.0, 5.0, 4.0]]
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ops.rules import norm_axes, norm_axis, norm_insert_axis
from ..ops.shape_grad import clip_index, slice_bounds, swap_perm, transpose_perm
from .emit import flat_index, literal
from .emit import ndim as _ndim
from .rules import ANY, ElemExpr, rule

__all__ = ["gather", "slice_starts", "slice_index"]



def gather(src: str, src_index: Callable[[list[str]], list[str]]) -> ElemExpr:
    """The element expression ``src[src_index(idx)]``."""
    return lambda idx: f"{src}[{', '.join(src_index(idx))}]"


# --- permutations, flips, tile, repeat ------------------------------------------------------------


def _permute(x: str, perm: tuple[int, ...]) -> ElemExpr:
    def src(idx: list[str]) -> list[str]:
        xi = [""] * len(perm)
        for d, a in enumerate(perm):
            xi[a] = idx[d]
        return xi
    return gather(x, src)


def _transpose(k, node, ins, outs) -> ElemExpr:
    return _permute(ins[0], transpose_perm(node.params["axes"], _ndim(k, ins[0])))


def _swap(k, node, ins, outs) -> ElemExpr:
    return _permute(ins[0], swap_perm(node.params, _ndim(k, ins[0])))


def _reverse(k, node, ins, outs) -> ElemExpr:
    x = ins[0]
    axes = set(norm_axes(node.params["axis"], _ndim(k, x)))
    return gather(x, lambda idx: [f"{x}.shape[{d}] - 1 - {i}" if d in axes else i for d, i in enumerate(idx)])


def _tile(k, node, ins, outs) -> ElemExpr:
    x, out = ins[0], outs[0]
    off = _ndim(k, out) - _ndim(k, x)
    return gather(x, lambda idx: [f"{idx[j + off]} % {x}.shape[{j}]" for j in range(_ndim(k, x))])


def _repeat(k, node, ins, outs) -> ElemExpr:
    x, r = ins[0], node.params["repeats"]
    if node.params["axis"] is None:   # the flattened input, each element r times
        xf = k.tmp("v")
        k.line(f"{xf} = {x}.reshape(-1)")
        return gather(xf, lambda idx: [f"{idx[0]} // {r}"])
    ax = norm_axis(node.params["axis"], _ndim(k, x))
    return gather(x, lambda idx: [f"{i} // {r}" if d == ax else i for d, i in enumerate(idx)])


# --- slices ----------------------------------------------------------------------------------------


def slice_starts(k, x: str, bounds: list[tuple[int | None, int]]) -> list[tuple[str, int]]:
    """Emit the runtime start of each sliced axis of ``x`` (Python's slice rules); returns
    ``(start variable, step)`` per axis."""
    starts = []
    for d, (b, s) in enumerate(bounds):
        v, n = k.tmp("s"), f"{x}.shape[{d}]"
        if b is None:
            k.line(f"{v} = {'0' if s > 0 else f'{n} - 1'}")
        else:
            c = k.const(b)      # an argument: slices at other offsets share the kernel
            k.line(f"{v} = {c} + {n} if {c} < 0 else {c}")
            lo, hi = ("0", n) if s > 0 else ("-1", f"{n} - 1")
            k.line(f"{v} = min(max({v}, {lo}), {hi})")
        starts.append((v, s))
    return starts


def slice_index(starts: list[tuple[str, int]], idx: list[str]) -> list[str]:
    """The input index of output index ``idx`` of a slice with these starts."""
    out = []
    for d, i in enumerate(idx):
        if d < len(starts):
            v, s = starts[d]
            out.append(f"{v} + {i}" if s == 1 else f"{v} + {i} * {s}")
        else:
            out.append(i)
    return out


def _slice(k, node, ins, outs) -> ElemExpr:
    starts = slice_starts(k, ins[0], slice_bounds(node.params))
    return gather(ins[0], lambda idx: slice_index(starts, idx))


def _slice_axis(k, node, ins, outs) -> ElemExpr:
    x = ins[0]
    ax = norm_axis(node.params["axis"], _ndim(k, x))
    s, b = k.tmp("s"), k.const(node.params["begin"])
    k.line(f"{s} = {b} + {x}.shape[{ax}] if {b} < 0 else {b}")
    return gather(x, lambda idx: [f"{s} + {i}" if d == ax else i for d, i in enumerate(idx)])


def _backward_slice(k, node, ins, outs) -> ElemExpr:
    """``dx[i]``: the head gradient where ``i`` was sliced (on every axis), else 0."""
    g, dx = ins[0], outs[0]
    starts = slice_starts(k, dx, slice_bounds(node.params))
    zero = literal(0.0, k.info[dx].dtype)

    def expr(idx: list[str]) -> str:
        conds, gi = [], []
        for d, i in enumerate(idx):
            if d < len(starts):
                v, s = starts[d]
                conds.append(f"({i} - {v}) % {s} == 0 and 0 <= ({i} - {v}) // {s} < {g}.shape[{d}]")
                gi.append(f"({i} - {v}) // {s}")
            else:
                gi.append(i)
        return f"({g}[{', '.join(gi)}] if {' and '.join(conds) or 'True'} else {zero})"
    return expr


# --- joins and copies -----------------------------------------------------------------------------


def _chain(cases: list[tuple[str, str]], last: str) -> str:
    """Nested conditional expressions: the first ``value`` whose ``cond`` holds, else ``last``."""
    out = last
    for cond, value in reversed(cases):
        out = f"({value} if {cond} else {out})"
    return out


def _concat(k, node, ins, outs) -> ElemExpr:
    ax = norm_axis(node.params["dim"], _ndim(k, outs[0]), "dim")
    ends = []
    for n, x in enumerate(ins[:-1]):
        e = k.tmp("e")
        k.line(f"{e} = {x}.shape[{ax}]" + (f" + {ends[-1]}" if n else ""))
        ends.append(e)

    def expr(idx: list[str]) -> str:
        def at(n: int) -> str:
            shifted = idx[ax] if n == 0 else f"{idx[ax]} - {ends[n - 1]}"
            return f"{ins[n]}[{', '.join(shifted if d == ax else i for d, i in enumerate(idx))}]"
        return _chain([(f"{idx[ax]} < {ends[n]}", at(n)) for n in range(len(ins) - 1)], at(len(ins) - 1))
    return expr


def _stack(k, node, ins, outs) -> ElemExpr:
    ax = norm_insert_axis(node.params["axis"], _ndim(k, ins[0]))

    def expr(idx: list[str]) -> str:
        rest = ", ".join(i for d, i in enumerate(idx) if d != ax)
        return _chain([(f"{idx[ax]} == {n}", f"{x}[{rest}]") for n, x in enumerate(ins[:-1])],
                      f"{ins[-1]}[{rest}]")
    return expr


def _copy(k, node, ins, outs) -> ElemExpr:
    """Reshape-like ops that cannot be views: element ``idx`` of the output is the flat element
    of the same (row-major) position of the input."""
    out, xf = outs[0], k.tmp("v")
    k.line(f"{xf} = {ins[0]}.reshape(-1)")

    return lambda idx: f"{xf}[{flat_index(idx, out)}]"


def _where(k, node, ins, outs) -> ElemExpr:
    c, x, y = ins
    rows = _ndim(k, c) == 1 and _ndim(k, x) > 1   # a 1-D condition picks whole rows

    def expr(idx: list[str]) -> str:
        at = ", ".join(idx)
        return f"({x}[{at}] if {c}[{idx[0] if rows else at}] != 0 else {y}[{at}])"
    return expr


# --- gathers by index arrays -------------------------------------------------------------------------


def _index(k, mode: str, v: str, n: str) -> str:
    """Source of the position an index value ``v`` selects from ``n`` (clip or wrap)."""
    if mode == "wrap":
        return f"int({v}) % {n}"
    return f"{k.module.body(clip_index)}({v}, {n})"


def _take(k, node, ins, outs) -> ElemExpr:
    a, ind = ins
    mode = node.params["mode"]
    ax, ni = norm_axis(node.params["axis"], _ndim(k, a)), _ndim(k, ind)
    shape = tuple(k.info[a].shape)

    def expr(idx: list[str]) -> str:
        v = f"{ind}[{', '.join(idx[ax:ax + ni])}]"
        if mode == "raise":   # flag an index outside the axis, then read a clipped one
            k.target.emit_check(
                k, f"not ({v} > -1 and {v} < {a}.shape[{ax}])",
                f"take '{node.name}': argument 'indices' has a value outside [0, {shape[ax]}) for "
                f"axis {node.params['axis']} of 'a' with shape {shape} (mode='raise')")
        r = _index(k, "clip" if mode == "raise" else mode, v, f"{a}.shape[{ax}]")
        return f"{a}[{', '.join([*idx[:ax], r, *idx[ax + ni:]])}]"
    return expr


def _pick_positions(node, nd: int) -> tuple[int, bool]:
    """(axis, keepdims) of a pick over ``nd`` dims."""
    return norm_axis(node.params["axis"], nd), node.params["keepdims"]


def _pick_index_at(k, ind: str, small: list[str], nd: int, ax: int, keep: bool) -> str:
    """The index array read at the output position ``small``: the index has the output's shape,
    or (without ``keepdims``) ``axis`` kept as size 1."""
    if not keep and nd > 1 and _ndim(k, ind) == nd:
        small = [*small[:ax], "0", *small[ax:]]
    return f"{ind}[{', '.join(small)}]"


def _pick(k, node, ins, outs) -> ElemExpr:
    data, ind = ins
    nd = _ndim(k, data)
    ax, keep = _pick_positions(node, nd)

    def expr(idx: list[str]) -> str:
        r = _index(k, node.params["mode"], _pick_index_at(k, ind, idx, nd, ax, keep), f"{data}.shape[{ax}]")
        at = [*idx[:ax], r, *idx[ax + 1:]] if keep else [*idx[:ax], r, *idx[ax:]] if nd > 1 else [r]
        return f"{data}[{', '.join(at)}]"
    return expr


def _backward_pick(k, node, ins, outs) -> ElemExpr:
    """``dx[..., j, ...]``: the head gradient where pick read position ``j``, else 0."""
    g, ind, dx = ins[0], ins[1], outs[0]
    nd = _ndim(k, dx)
    ax, keep = _pick_positions(node, nd)
    zero = literal(0.0, k.info[dx].dtype)

    def expr(idx: list[str]) -> str:
        small = [*idx[:ax], "0", *idx[ax + 1:]] if keep else [*idx[:ax], *idx[ax + 1:]] if nd > 1 else ["0"]
        r = _index(k, node.params["mode"], _pick_index_at(k, ind, small, nd, ax, keep), f"{dx}.shape[{ax}]")
        return f"({g}[{', '.join(small)}] if {r} == {idx[ax]} else {zero})"
    return expr


def _one_hot(k, node, ins, outs) -> ElemExpr:
    ind, out = ins[0], outs[0]
    dt = k.info[out].dtype
    on, off = literal(node.params["on_value"], dt), literal(node.params["off_value"], dt)

    def expr(idx: list[str]) -> str:
        v, depth = f"{ind}[{', '.join(idx[:-1])}]", f"{out}.shape[{len(idx) - 1}]"
        return f"({on} if {v} > -1 and {v} < {depth} and int({v}) == {idx[-1]} else {off})"
    return expr


def _split(k, node, ins, outs) -> dict[int, ElemExpr]:
    """SliceChannel: every output (all of one shape) is a piece of ``x`` along the axis, written by
    one loop over the output shape (``squeeze_axis`` outputs lack the axis)."""
    x = ins[0]
    ax = norm_axis(node.params["axis"], _ndim(k, x))
    squeeze, piece = node.params["squeeze_axis"], k.tmp("d")
    k.line(f"{piece} = {x}.shape[{ax}] // {len(outs)}")

    nd = _ndim(k, x)

    def piece_of(n: int) -> ElemExpr:
        def expr(idx: list[str]) -> str:
            rest = idx if nd > 1 else []   # a squeezed 1-D input gives (1,)-shaped outputs
            at = [*rest[:ax], str(n), *rest[ax:]] if squeeze else \
                [f"{n} * {piece} + {i}" if d == ax else i for d, i in enumerate(idx)]
            return f"{x}[{', '.join(at)}]"
        return expr
    return {n: piece_of(n) for n in range(len(outs))}


def _scatter_rows(k, g: str, ind: str, table: str, ax: int, mode: str, lead: int) -> ElemExpr:
    """Element ``idx`` of a gradient ``table`` of a row gather along ``ax``: the sum of the head
    gradient ``g`` over the index positions that selected row ``idx[ax]`` (``lead`` axes before
    the index axes in ``g``). A gather over the indices: no atomics."""
    ni = _ndim(k, ind)

    def expr(idx: list[str]) -> str:
        acc = k.tmp("acc")
        k.line(f"{acc} = 0.0")
        pos = [k.tmp("j") for _ in range(ni)]
        for d, j in enumerate(pos):
            k.line(f"for {j} in range({ind}.shape[{d}]):")
            k.indent += 1
        r = _index(k, mode, f"{ind}[{', '.join(pos)}]", f"{table}.shape[{ax}]")
        k.line(f"if {r} == {idx[ax]}:")
        k.line(f"    {acc} += {g}[{', '.join([*idx[:lead], *pos, *idx[ax + 1:]])}]")
        k.indent -= ni
        return acc
    return expr


def _backward_take(k, node, ins, outs) -> ElemExpr:
    g, ind, da = ins[0], ins[1], outs[0]
    ax = norm_axis(node.params["axis"], _ndim(k, da))
    mode = "wrap" if node.params["mode"] == "wrap" else "clip"
    return _scatter_rows(k, g, ind, da, ax, mode, ax)


def _backward_embedding(k, node, ins, outs) -> ElemExpr:
    """``dweight[v, d]``: the head gradient summed over the positions whose index reads row v."""
    g, ind, dw = ins[0], ins[1], outs[0]
    return _scatter_rows(k, g, ind, dw, 0, "clip", 0)


# --- index maps without inputs (symjit/ops/source.py) ------------------------------------------------


def _arange(k, node, ins, outs) -> ElemExpr:
    """``start + (i // repeat) * step``; for an integer dtype ``start`` and ``step`` are that
    integer first (truncated toward zero, as MXNet casts them: ``arange(1.3, 5.3, 1.3)`` as int32 is
    1, 2, 3, 4), the length still ``ceil((stop - start) / step)`` of the given values."""
    p = node.params
    start, step = (0.0, p["step"]) if p["stop"] is None else (p["start"], p["step"])
    if np.dtype(k.info[outs[0]].dtype).kind in "iu":
        start, step = int(start), int(step)
    else:
        start, step = float(start), float(step)
    return lambda idx: f"({start!r} + ({idx[0]} // {p['repeat']}) * {step!r})"


def _eye(k, node, ins, outs) -> ElemExpr:
    dt = k.info[outs[0]].dtype
    one, zero = literal(1.0, dt), literal(0.0, dt)
    return lambda idx: f"({one} if {idx[1]} - {idx[0]} == {node.params['k']} else {zero})"


def _eye_tri(k, node, ins, outs) -> ElemExpr:
    dt = k.info[outs[0]].dtype
    one, zero = literal(1.0, dt), literal(0.0, dt)
    cmp = "<=" if node.params["lower"] else ">="
    return lambda idx: f"({one} if {idx[1]} {cmp} {idx[0]} else {zero})"


def _linspace(k, node, ins, outs) -> ElemExpr:
    p = node.params
    parts = max(p["num"] - 1 if p["endpoint"] else p["num"], 1)
    step = (p["stop"] - p["start"]) / parts
    return lambda idx: f"({float(p['start'])!r} + {idx[0]} * {step!r})"


for _name, _emit in {
    "_arange": _arange, "_eye": _eye, "_eye_tri": _eye_tri, "_linspace": _linspace,
    "transpose": _transpose, "SwapAxis": _swap, "reverse": _reverse, "tile": _tile, "repeat": _repeat,
    "slice": _slice, "slice_axis": _slice_axis, "_backward_slice": _backward_slice,
    "Concat": _concat, "stack": _stack, "where": _where, "take": _take, "pick": _pick,
    "_backward_pick": _backward_pick, "one_hot": _one_hot,
    "Flatten": _copy, "Reshape": _copy, "expand_dims": _copy, "squeeze": _copy,
    "SliceChannel": _split, "_backward_take": _backward_take, "_backward_Embedding": _backward_embedding,
}.items():
    rule(_name, ANY, _emit)
