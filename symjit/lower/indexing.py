"""Target-neutral lowerings of the index-map ops of :mod:`symjit.ops.indexing` (and the gathers
of their gradients): each returns the element expression of its output, which the target's loop
evaluates (a ``range`` nest on the CPU, a grid-stride loop on CUDA). Sums over the positions that
read an element (the Pad, gather_nd and SequenceLast gradients, scatter_nd, cumsum) are loops the
rule emits inside the element loop: one thread per output element, no atomics.

Index values read from data go through :func:`~symjit.ops.shape_grad.clip_index` or
:func:`~symjit.ops.indexing.nd_index` (plain scalar functions wrapped per target), so no kernel
reads out of bounds whatever the data holds.

>>> import symjit as mx
>>> x = mx.sym.Variable('x')
>>> ex = mx.sym.Pad(x, mode='edge', pad_width=(0, 0, 1, 1)).simple_bind(mx.cpu(), x=(1, 3))
>>> ex.forward(x=mx.nd.array([[1, 2, 3]]))[0].asnumpy().tolist()
[[1.0, 1.0, 2.0, 3.0, 3.0]]
"""
from __future__ import annotations

from ..ops.indexing import diag_geometry, nd_index, pad_widths, seq_axes, window_geometry
from ..ops.rules import norm_axis
from ..ops.shape_grad import clip_index
from .emit import flat_index, literal
from .emit import ndim as _ndim
from .rules import ANY, ElemExpr, rule

__all__: list[str] = []


def _at(x: str, idx: list[str]) -> str:
    return f"{x}[{', '.join(idx)}]"


def _zero(k, out: str) -> str:
    return literal(0.0, k.info[out].dtype)


# --- sequences ---------------------------------------------------------------------------------


def _sequence_mask(k, node, ins, outs) -> ElemExpr:
    x, p = ins[0], node.params
    if not p["use_sequence_length"]:
        return lambda idx: _at(x, idx)
    t, b = seq_axes(p)
    value = literal(p["value"], k.info[outs[0]].dtype)
    clip = k.module.body(clip_index)
    return lambda idx: (f"({_at(x, idx)} if {idx[t]} < {clip}({ins[1]}[{idx[b]}], {x}.shape[{t}] + 1) "
                        f"else {value})")


def _sequence_reverse(k, node, ins, outs) -> ElemExpr:
    x = ins[0]
    if not node.params["use_sequence_length"]:
        return lambda idx: _at(x, [f"{x}.shape[0] - 1 - {idx[0]}", *idx[1:]])
    clip = k.module.body(clip_index)

    def expr(idx: list[str]) -> str:
        n = k.tmp("n")
        k.line(f"{n} = {clip}({ins[1]}[{idx[1]}], {x}.shape[0] + 1)")
        return _at(x, [f"({n} - 1 - {idx[0]} if {idx[0]} < {n} else {idx[0]})", *idx[1:]])
    return expr


def _last_position(k, p: dict, ins: list[str], steps: str, batch: str) -> str:
    if not p["use_sequence_length"]:
        return f"{steps} - 1"
    return f"{k.module.body(clip_index)}({ins[-1]}[{batch}] - 1, {steps})"


def _sequence_last(k, node, ins, outs) -> ElemExpr:
    x, p = ins[0], node.params
    t, _ = seq_axes(p)

    def expr(idx: list[str]) -> str:
        pos = _last_position(k, p, ins, f"{x}.shape[{t}]", idx[0])
        return _at(x, [*idx[:t], pos, *idx[t:]])
    return expr


def _backward_sequence_last(k, node, ins, outs) -> ElemExpr:
    g, dx, p = ins[0], outs[0], node.params
    t, b = seq_axes(p)
    zero = _zero(k, dx)

    def expr(idx: list[str]) -> str:
        pos = _last_position(k, p, ins, f"{dx}.shape[{t}]", idx[b])
        return f"({_at(g, idx[:t] + idx[t + 1:])} if {idx[t]} == {pos} else {zero})"
    return expr


# --- Pad ---------------------------------------------------------------------------------------------


def _pad_source(mode: str, j: str, n: str) -> str:
    """The input position output offset ``j`` (= position - before) reads, edge or reflect."""
    if mode == "edge":
        return f"min(max({j}, 0), {n} - 1)"
    return f"(-({j}) if {j} < 0 else (2 * ({n} - 1) - ({j}) if {j} >= {n} else {j}))"


def _pad(k, node, ins, outs) -> ElemExpr:
    x, p = ins[0], node.params
    widths = pad_widths(p, _ndim(k, x))
    if p["mode"] == "constant":
        value = literal(p["constant_value"], k.info[outs[0]].dtype)

        def expr(idx: list[str]) -> str:
            src = [f"{i} - {bw}" if bw else i for i, (bw, _) in zip(idx, widths)]
            conds = [f"0 <= {s} < {x}.shape[{d}]" for d, (s, (bw, aw)) in enumerate(zip(src,
                                                                                        widths)) if bw or aw]
            return f"({_at(x, src)} if {' and '.join(conds) or 'True'} else {value})"
        return expr
    return lambda idx: _at(x, [_pad_source(p["mode"], f"{i} - {bw}", f"{x}.shape[{d}]") if bw or aw else i
                               for d, (i, (bw, aw)) in enumerate(zip(idx, widths))])


def _backward_pad(k, node, ins, outs) -> ElemExpr:
    """``dx[j]``: the head gradient summed over the output positions whose source is ``j``: per
    padded axis the interior position and the pad positions that map to ``j``."""
    g, dx, p = ins[0], outs[0], node.params
    widths = pad_widths(p, _ndim(k, dx))

    def expr(idx: list[str]) -> str:
        acc = k.tmp("acc")
        k.line(f"{acc} = {_zero(k, dx)}")
        pos, opened = list(idx), 0
        for d, (bw, aw) in enumerate(widths):
            if not (bw or aw):
                continue
            c, o, n = k.tmp("c"), k.tmp("o"), f"{dx}.shape[{d}]"
            k.line(f"for {c} in range({bw + aw + 1}):")
            k.indent += 1
            k.line(f"{o} = {c} if {c} < {bw} else ({idx[d]} + {bw} if {c} == {bw} else {n} + {c} - 1)")
            k.line(f"if {_pad_source(p['mode'], f'{o} - {bw}', n)} == {idx[d]}:")
            k.indent += 1
            pos[d], opened = o, opened + 2
        k.line(f"{acc} += {_at(g, pos)}")
        k.indent -= opened
        return acc
    return expr


# --- diag ----------------------------------------------------------------------------------------


def _diag(k, node, ins, outs) -> ElemExpr:
    x, kk = ins[0], node.params["k"]
    if _ndim(k, x) == 1:
        zero = _zero(k, outs[0])
        return lambda idx: f"({x}[min({idx[0]}, {idx[1]})] if {idx[1]} - {idx[0]} == {kk} else {zero})"
    a1, a2, _ = diag_geometry(node.params, tuple(k.info[x].shape))
    nd = _ndim(k, x)

    def expr(idx: list[str]) -> str:
        rest, at = iter(idx[:-1]), []
        for d in range(nd):
            if d == a1:
                at.append(f"{idx[-1]} + {max(-kk, 0)}")
            elif d == a2:
                at.append(f"{idx[-1]} + {max(kk, 0)}")
            else:
                at.append(next(rest))
        return _at(x, at)
    return expr


def _backward_diag(k, node, ins, outs) -> ElemExpr:
    g, dx, kk = ins[0], outs[0], node.params["k"]
    a1, a2, _ = diag_geometry(node.params, tuple(k.info[dx].shape))
    zero = _zero(k, dx)

    def expr(idx: list[str]) -> str:
        rest = [i for d, i in enumerate(idx) if d not in (a1, a2)]
        src = _at(g, [*rest, f"{idx[a1]} - {max(-kk, 0)}"])
        return f"({src} if {idx[a2]} - {idx[a1]} == {kk} else {zero})"
    return expr


# --- gather_nd / scatter_nd -----------------------------------------------------------------------


def _nd_positions(k, ind: str, y: list[str], axes_of: str) -> list[str]:
    """The positions indices column ``y`` addresses on the first M axes of ``axes_of``."""
    m = k.info[ind].shape[0]
    at = k.module.body(nd_index)
    return [f"{at}({_at(ind, [str(j), *y])}, {axes_of}.shape[{j}])" for j in range(m)]


def _gather_nd(k, node, ins, outs) -> ElemExpr:
    data, ind = ins
    ny = _ndim(k, ind) - 1
    shape = tuple(k.info[data].shape)

    def expr(idx: list[str]) -> str:
        # an index outside [-n, n) of its axis stops the program (IndexError, as MXNet), then reads clipped
        for j in range(k.info[ind].shape[0]):
            v = _at(ind, [str(j), *idx[:ny]])
            k.target.emit_check(
                k, f"not ({v} > -{shape[j] + 1} and {v} < {shape[j]})",
                f"IndexError: gather_nd '{node.name}': argument 'indices' has a value outside "
                f"[-{shape[j]}, {shape[j]}) for axis {j} of 'data' with shape {shape}")
        return _at(data, _nd_positions(k, ind, idx[:ny], data) + idx[ny:])
    return expr


def _loop_indices(k, ind: str) -> list[str]:
    """Open a loop over every column y of ``ind`` (shape (M, Y...)); return y's variables."""
    ys = [k.tmp("y") for _ in range(_ndim(k, ind) - 1)]
    for d, y in enumerate(ys):
        k.line(f"for {y} in range({ind}.shape[{d + 1}]):")
        k.indent += 1
    return ys


def _matches(positions: list[str], idx: list[str]) -> str:
    return " and ".join(f"{p} == {i}" for p, i in zip(positions, idx)) or "True"


def _backward_gather_nd(k, node, ins, outs) -> ElemExpr:
    g, ind, dx = ins[0], ins[1], outs[0]
    m = k.info[ind].shape[0]

    def expr(idx: list[str]) -> str:
        acc = k.tmp("acc")
        k.line(f"{acc} = {_zero(k, dx)}")
        ys = _loop_indices(k, ind)
        k.line(f"if {_matches(_nd_positions(k, ind, ys, dx), idx[:m])}:")
        k.line(f"    {acc} += {_at(g, ys + idx[m:])}")
        k.indent -= len(ys)
        return acc
    return expr


def _scatter_nd(k, node, ins, outs) -> ElemExpr:
    data, ind = ins
    out = outs[0]
    m = k.info[ind].shape[0]

    def expr(idx: list[str]) -> str:
        v = k.tmp("v")
        k.line(f"{v} = {_zero(k, out)}")
        ys = _loop_indices(k, ind)
        k.line(f"if {_matches(_nd_positions(k, ind, ys, out), idx[:m])}:")
        k.line(f"    {v} = {_at(data, ys + idx[m:])}")
        k.indent -= len(ys)
        return v
    return expr


# --- cumsum, shape_array, size_array ------------------------------------------------------------------


def _cumsum(k, node, ins, outs) -> ElemExpr:
    a, out = ins[0], outs[0]
    axis = node.params["axis"]
    src = a
    if axis is None:
        src = k.tmp("flat")
        k.line(f"{src} = {a}.reshape(-1)")

    def expr(idx: list[str]) -> str:
        ax = 0 if axis is None else norm_axis(axis, _ndim(k, a))
        acc, j = k.tmp("acc"), k.tmp("j")
        k.line(f"{acc} = {_zero(k, out)}")
        k.line(f"for {j} in range({idx[ax]} + 1):")
        k.line(f"    {acc} += {_at(src, [j if d == ax else i for d, i in enumerate(idx)])}")
        return acc
    return expr


def _shape_array(k, node, ins, outs) -> ElemExpr:
    x = ins[0]
    nd = _ndim(k, x)

    def expr(idx: list[str]) -> str:
        out = f"{x}.shape[{nd - 1}]" if nd else "0"
        for d in range(nd - 2, -1, -1):
            out = f"({x}.shape[{d}] if {idx[0]} == {d} else {out})"
        return out
    return expr


def _size_array(k, node, ins, outs) -> ElemExpr:
    return lambda idx: f"{ins[0]}.size"


# --- contrib index maps: arange_like, index_array, index_copy ------------------------------------


def _arange_like(k, node, ins, outs) -> ElemExpr:
    p, out = node.params, outs[0]
    return lambda idx: (f"({float(p['start'])!r} + (({flat_index(idx, out)}) // {p['repeat']}) * "
                        f"{float(p['step'])!r})")


def _index_array(k, node, ins, outs) -> ElemExpr:
    nd = _ndim(k, ins[0])
    axes = tuple(range(nd)) if node.params["axes"] is None else \
        tuple(norm_axis(a, nd, "axes") for a in node.params["axes"])   # in the given order

    def expr(idx: list[str]) -> str:
        out = idx[axes[-1]]
        for j in range(len(axes) - 2, -1, -1):
            out = f"({idx[axes[j]]} if {idx[-1]} == {j} else {out})"
        return out
    return expr


def _index_copy(k, node, ins, outs) -> ElemExpr:
    old, ind, new = ins

    def expr(idx: list[str]) -> str:
        v, j = k.tmp("v"), k.tmp("j")
        k.line(f"{v} = {_at(old, idx)}")
        k.line(f"for {j} in range({ind}.shape[0]):")
        k.line(f"    if {k.module.body(nd_index)}({ind}[{j}], {old}.shape[0]) == {idx[0]}:")
        k.line(f"        {v} = {_at(new, [j, *idx[1:]])}")
        return v
    return expr


def _ravel(k, node, ins, outs) -> ElemExpr:
    data, shape = ins[0], tuple(node.params["shape"])
    nd = _ndim(k, data)

    def expr(idx: list[str]) -> str:
        rest = idx if nd > 1 else []
        flat = "0"
        for j, n in enumerate(shape):
            flat = f"({flat}) * {n} + int({_at(data, [str(j), *rest])})"
        return flat
    return expr


def _unravel(k, node, ins, outs) -> ElemExpr:
    data, shape = ins[0], tuple(node.params["shape"])

    def expr(idx: list[str]) -> str:
        v, j = k.tmp("v"), idx[0]
        k.line(f"{v} = int({_at(data, idx[1:])})")
        out = "0"
        stride = 1
        for d in range(len(shape) - 1, -1, -1):
            # the leading row keeps the whole quotient (as MXNet): shape[0] may be -1
            out_d = f"({v} // {stride})" if d == 0 else f"({v} // {stride}) % {shape[d]}"
            out = out_d if d == len(shape) - 1 else f"({out_d} if {j} == {d} else {out})"
            stride *= shape[d]
        return out
    return expr


def _fill_element(k, node, ins, outs) -> ElemExpr:
    lhs, mhs, rhs = ins
    clip = k.module.body(clip_index)
    return lambda idx: (f"({mhs}[{idx[0]}] if {clip}({rhs}[{idx[0]}], {lhs}.shape[1]) == {idx[1]} "
                        f"else {lhs}[{idx[0]}, {idx[1]}])")


def _im2col(k, node, ins, outs) -> ElemExpr:
    x, out = ins[0], outs[0]
    kern, stride, dilate, pad = window_geometry(node.params)

    def expr(idx: list[str]) -> str:
        n, r, l = idx
        c, i, j, oh, ow, h, w = (k.tmp(v) for v in ("c", "i", "j", "oh", "ow", "h", "w"))
        k.line(f"{c} = {r} // {kern[0] * kern[1]}")
        k.line(f"{i} = ({r} // {kern[1]}) % {kern[0]}")
        k.line(f"{j} = {r} % {kern[1]}")
        k.line(f"{ow} = {out}.shape[2] // {_cols_oh(x, kern, stride, dilate, pad)}")
        k.line(f"{oh} = {l} // {ow}")
        k.line(f"{ow} = {l} % {ow}")
        k.line(f"{h} = {oh} * {stride[0]} - {pad[0]} + {i} * {dilate[0]}")
        k.line(f"{w} = {ow} * {stride[1]} - {pad[1]} + {j} * {dilate[1]}")
        zero = literal(0.0, k.info[out].dtype)
        return f"({x}[{n}, {c}, {h}, {w}] if 0 <= {h} < {x}.shape[2] and 0 <= {w} < {x}.shape[3] else {zero})"
    return expr


def _cols_oh(x: str, kern, stride, dilate, pad) -> str:
    return f"(({x}.shape[2] + {2 * pad[0]} - {dilate[0] * (kern[0] - 1) + 1}) // {stride[0]} + 1)"


def _col2im(k, node, ins, outs) -> ElemExpr:
    cols, img = ins[0], outs[0]
    kern, stride, dilate, pad = window_geometry(node.params)

    def expr(idx: list[str]) -> str:
        n, c, h, w = idx
        acc, i, j, th, tw, ohn, own = (k.tmp(v) for v in ("acc", "i", "j", "th", "tw", "ohn", "own"))
        k.line(f"{ohn} = {_cols_oh(img, kern, stride, dilate, pad)}")
        k.line(f"{own} = {cols}.shape[2] // {ohn}")
        k.line(f"{acc} = {literal(0.0, k.info[img].dtype)}")
        k.line(f"for {i} in range({kern[0]}):")
        k.line(f"    {th} = {h} + {pad[0]} - {i} * {dilate[0]}")
        k.line(f"    if {th} % {stride[0]} == 0 and 0 <= {th} // {stride[0]} < {ohn}:")
        k.line(f"        for {j} in range({kern[1]}):")
        k.line(f"            {tw} = {w} + {pad[1]} - {j} * {dilate[1]}")
        k.line(f"            if {tw} % {stride[1]} == 0 and 0 <= {tw} // {stride[1]} < {own}:")
        k.line(f"                {acc} += {cols}[{n}, ({c} * {kern[0]} + {i}) * {kern[1]} + {j}, "
               f"({th} // {stride[0]}) * {own} + {tw} // {stride[1]}]")
        return acc
    return expr


def _histogram_counts(k, node, ins, outs) -> ElemExpr:
    data, edges = ins

    def expr(idx: list[str]) -> str:
        flat, acc, q, lo, hi, v = (k.tmp(n) for n in ("flat", "acc", "q", "lo", "hi", "v"))
        k.line(f"{flat} = {data}.reshape(-1)")
        k.line(f"{lo} = {edges}[{idx[0]}]")
        k.line(f"{hi} = {edges}[{idx[0]} + 1]")
        k.line(f"{acc} = 0")
        k.line(f"for {q} in range({flat}.shape[0]):")
        k.line(f"    {v} = {flat}[{q}]")
        k.line(f"    if {lo} <= {v} and ({v} < {hi} or ({v} == {hi} and {idx[0]} == {edges}.shape[0] - 2)):")
        k.line(f"        {acc} += 1")
        return acc
    return expr


for _name, _emit, _facts in (
    ("_histogram_counts", _histogram_counts, {}),
    ("im2col", _im2col, {}), ("col2im", _col2im, {}),
    ("_ravel_multi_index", _ravel, {}), ("_unravel_index", _unravel, {}),
    ("fill_element_0index", _fill_element, {}),
    ("_contrib_arange_like", _arange_like, {"shape_only": (0,)}), ("_contrib_index_array", _index_array, {}),
    ("_contrib_index_copy", _index_copy, {}),
    ("SequenceMask", _sequence_mask, {}), ("SequenceReverse", _sequence_reverse, {}),
    ("SequenceLast", _sequence_last, {}),
    ("_backward_SequenceLast", _backward_sequence_last, {"shape_only": (1,)}),
    ("Pad", _pad, {}), ("_backward_Pad", _backward_pad, {"shape_only": (1,)}),
    ("diag", _diag, {}), ("_backward_diag", _backward_diag, {"shape_only": (1,)}),
    ("gather_nd", _gather_nd, {}), ("_backward_gather_nd", _backward_gather_nd, {"shape_only": (2,)}),
    ("scatter_nd", _scatter_nd, {}), ("cumsum", _cumsum, {}),
    ("shape_array", _shape_array, {}), ("size_array", _size_array, {}),
):
    rule(_name, ANY, _emit, **_facts)
