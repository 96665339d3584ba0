"""CPU lowerings of the shape-manipulation ops (records in :mod:`symjit.ops.shape`).

Every lowering emits loops over runtime shapes (``arr.shape[d]``), so a kernel serves any batch
size; static shapes (``k.info``) only decide ranks and axes. An op that moves data along one axis
views its arrays as ``(A, D, B)``: ``A`` the product of the axes before it, ``B`` of those after.

Index rules of the gathers (MXNet 1.x): an index value is truncated toward zero; ``clip`` clamps
it to ``[0, D - 1]`` (NaN reads 0), ``wrap`` takes it modulo ``D`` (Python's sign rule, so -1 is the
last entry), ``raise`` (take only) stops with an MXNetError when one falls outside ``[0, D)``.
one_hot writes ``off_value`` for a whole row whose index falls outside ``[0, depth)``.

>>> import symjit as mx
>>> x = mx.sym.Variable('x')
>>> ex = mx.sym.transpose(x).simple_bind(mx.cpu(), x=(2, 3))
>>> ex.forward(x=mx.nd.array([[1, 2, 3], [4, 5, 6]]))[0].asnumpy().tolist()
[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
"""
from __future__ import annotations

from ...ops.rules import norm_axis, norm_insert_axis
from ...ops.shape_grad import slice_bounds
from ..emit import KCPU, axis_view3, literal
from ..emit import close_loops as _close
from ..emit import ndim as _ndim
from ..emit import open_loops as _open
from ..gather import slice_index, slice_starts
from ..rules import rule
from . import CPUTarget


def _abd(k, arr: str, ax: int, mid: str | None = None) -> str:
    """A local ``(A, D, B)`` view of ``arr`` around axis ``ax`` (``mid`` overrides ``D``)."""
    return axis_view3(k, arr, ax, _ndim(k, arr), mid)


def _copy3(k, dst: str, dst_mid: str, src: str, src_mid: str, over: str) -> None:
    """``dst[a, dst_mid(j), b] = src[a, src_mid(j), b]`` for ``j`` over the middle axis of ``over``
    (``dst`` or ``src``; all are 3-D views)."""
    a, j, b = _open(k, [f"{over}.shape[0]", f"{over}.shape[1]", f"{over}.shape[2]"])
    k.line(f"{dst}[{a}, {dst_mid.format(j=j)}, {b}] = {src}[{a}, {src_mid.format(j=j)}, {b}]")
    _close(k, [a, j, b])


def _zero(k, arr: str) -> None:
    k.line(f"{arr}.reshape(-1)[:] = 0")


# --- reshape-like copies ---------------------------------------------------------------------------


def _copy_lower(k, node, ins, outs) -> None:
    """Reshape-like ops copy the flat buffer (the planner aliases them where it can)."""
    k.line(f"{outs[0]}.reshape(-1)[:] = {ins[0]}.reshape(-1)")


# --- Concat, stack, SliceChannel ------------------------------------------------------------------
# Each input (output) is one block copy into (out of) a run of the axis, a kernel of its own before
# the group's that is symjit.kernels.cpu.copy_axis's function itself (KernelWriter.direct): none
# is compiled per number of inputs, axis or shapes. Arrays the group's kernel only has as views
# keep the copy loops in the kernel.

COPY_AXIS = f"{KCPU}.copy_axis"


def _program_arrays(k, arrays: list[str]) -> bool:
    return all(a in k.info for a in arrays)


def _block_copies(k, fn: str, big: str, others: list[str], ax: int, lengths: list[int]) -> None:
    """Queue one call of ``fn`` (``into_axis`` or ``from_axis``) per array of ``others``, the runs
    of ``lengths`` along ``big``'s axis ``ax`` in order, each a kernel of its own."""
    offset = 0
    for x, n in zip(others, lengths):
        def emit(pk, x=x, offset=offset) -> None:
            pk.call(COPY_AXIS, fn, [big, x, pk.const(ax), pk.const(offset)])
        k.prior.append(([big, x], emit))
        offset += n


def _concat_lower(k, node, ins, outs) -> None:
    out = outs[0]
    ax = norm_axis(node.params["dim"], _ndim(k, out), "dim")
    if _program_arrays(k, [out, *ins]):
        return _block_copies(k, "into_axis", out, ins, ax, [k.info[x].shape[ax] for x in ins])
    o3 = _abd(k, out, ax)
    off = k.tmp("off")
    k.line(f"{off} = 0")
    for x in ins:
        x3 = _abd(k, x, ax)
        _copy3(k, o3, f"{off} + {{j}}", x3, "{j}", x3)
        k.line(f"{off} += {x3}.shape[1]")


def _stack_lower(k, node, ins, outs) -> None:
    out = outs[0]
    ax = norm_insert_axis(node.params["axis"], _ndim(k, ins[0]))
    if _program_arrays(k, [out, *ins]):
        return _block_copies(k, "into_axis", out, ins, ax, [1] * len(ins))
    o3 = _abd(k, out, ax)
    for n, x in enumerate(ins):
        x3 = k.tmp("v")
        k.line(f"{x3} = {x}.reshape(({o3}.shape[0], 1, {o3}.shape[2]))")
        _copy3(k, o3, str(n), x3, "0", x3)


def _split_lower(k, node, ins, outs) -> None:
    x = ins[0]
    ax = norm_axis(node.params["axis"], _ndim(k, x))
    if _program_arrays(k, [x, *outs]):
        return _block_copies(k, "from_axis", x, outs, ax, [k.info[x].shape[ax] // len(outs)] * len(outs))
    x3 = _abd(k, x, ax)
    piece = k.tmp("d")
    k.line(f"{piece} = {x3}.shape[1] // {len(outs)}")
    for n, out in enumerate(outs):
        o3 = k.tmp("v")
        k.line(f"{o3} = {out}.reshape(({x3}.shape[0], {piece}, {x3}.shape[2]))")
        _copy3(k, o3, "{j}", x3, f"{n} * {piece} + {{j}}", o3)


# --- _backward_slice ---------------------------------------------------------------------------------


def _backward_slice_lower(k, node, ins, outs) -> None:
    """Zero ``dx``, then write the head gradient into the sliced positions."""
    g, dx = ins[0], outs[0]
    _zero(k, dx)
    starts = slice_starts(k, dx, slice_bounds(node.params))
    idx = _open(k, [f"{g}.shape[{d}]" for d in range(_ndim(k, g))])
    k.line(f"{dx}[{', '.join(slice_index(starts, idx))}] = {g}[{', '.join(idx)}]")
    _close(k, idx)


# --- take, pick, one_hot and their scatters ---------------------------------------------------------


def _index_expr(k, mode: str, v: str, n: str) -> str:
    """Source of the row an index value ``v`` selects from ``n`` rows (``raise`` checked apart)."""
    if mode == "wrap":
        return f"int({v}) % {n}"
    clip = k.imp(f"{KCPU}.embed", "clip_index")
    return f"{clip}({v}, {n})"


def _check_range(k, ii: str, n: str, what: str) -> None:
    """mode='raise': stop with an MXNetError when an index (truncated) falls outside [0, n)."""
    (j,) = _open(k, [f"{ii}.shape[0]"])
    k.target.emit_check(k, f"not ({ii}[{j}] > -1 and {ii}[{j}] < {n})", what)
    _close(k, [j])


def _take_views(k, node, a: str, idx: str, big: str) -> tuple[str, str, str]:
    """``a`` (or its gradient) as (A, D, B), the flat indices, the output (or its gradient) as
    (A, M, B)."""
    ax = norm_axis(node.params["axis"], _ndim(k, a))
    a3 = _abd(k, a, ax)
    ii = k.tmp("ix")
    k.line(f"{ii} = {idx}.reshape(-1)")
    o3 = k.tmp("v")
    k.line(f"{o3} = {big}.reshape(({a3}.shape[0], {ii}.shape[0], {a3}.shape[2]))")
    return a3, ii, o3


def _take_lower(k, node, ins, outs) -> None:
    a3, ii, o3 = _take_views(k, node, ins[0], ins[1], outs[0])
    mode = node.params["mode"]
    if mode == "raise":
        shape = tuple(k.info[ins[0]].shape)
        _check_range(k, ii, f"{a3}.shape[1]", f"take '{node.name}': argument 'indices' has a value "
                     f"outside [0, {shape[norm_axis(node.params['axis'], len(shape))]}) for axis "
                     f"{node.params['axis']} of 'a' with shape {shape} (mode='raise')")
    j, r = k.tmp("j"), k.tmp("r")
    k.line(f"for {j} in range({ii}.shape[0]):")
    k.indent += 1
    k.line(f"{r} = {_index_expr(k, mode, f'{ii}[{j}]', f'{a3}.shape[1]')}")
    a, b = _open(k, [f"{a3}.shape[0]", f"{a3}.shape[2]"])
    k.line(f"{o3}[{a}, {j}, {b}] = {a3}[{a}, {r}, {b}]")
    _close(k, [a, b])
    k.indent -= 1


def _backward_take_lower(k, node, ins, outs) -> None:
    """Scatter-add the head gradient into zeros at the rows the forward read."""
    g, idx, da = ins[0], ins[1], outs[0]
    _zero(k, da)
    d3, ii, g3 = _take_views(k, node, da, idx, g)
    mode = "wrap" if node.params["mode"] == "wrap" else "clip"
    j, r = k.tmp("j"), k.tmp("r")
    k.line(f"for {j} in range({ii}.shape[0]):")
    k.indent += 1
    k.line(f"{r} = {_index_expr(k, mode, f'{ii}[{j}]', f'{d3}.shape[1]')}")
    a, b = _open(k, [f"{d3}.shape[0]", f"{d3}.shape[2]"])
    k.line(f"{d3}[{a}, {r}, {b}] += {g3}[{a}, {j}, {b}]")
    _close(k, [a, b])
    k.indent -= 1


def _pick_loop(k, node, data: str, idx: str, small: str, backward: bool) -> None:
    ax = norm_axis(node.params["axis"], _ndim(k, data))
    x3 = _abd(k, data, ax)
    i2, o2 = k.tmp("ix"), k.tmp("v")
    k.line(f"{i2} = {idx}.reshape(({x3}.shape[0], {x3}.shape[2]))")
    k.line(f"{o2} = {small}.reshape(({x3}.shape[0], {x3}.shape[2]))")
    a, b = _open(k, [f"{x3}.shape[0]", f"{x3}.shape[2]"])
    r = _index_expr(k, node.params["mode"], f"{i2}[{a}, {b}]", f"{x3}.shape[1]")
    if backward:
        k.line(f"{x3}[{a}, {r}, {b}] = {o2}[{a}, {b}]")
    else:
        k.line(f"{o2}[{a}, {b}] = {x3}[{a}, {r}, {b}]")
    _close(k, [a, b])


def _pick_lower(k, node, ins, outs) -> None:
    _pick_loop(k, node, ins[0], ins[1], outs[0], backward=False)


def _backward_pick_lower(k, node, ins, outs) -> None:
    _zero(k, outs[0])
    _pick_loop(k, node, outs[0], ins[1], ins[0], backward=True)


def _one_hot_lower(k, node, ins, outs) -> None:
    idx, out = ins[0], outs[0]
    dt = k.info[out].dtype
    on, off = literal(node.params["on_value"], dt), literal(node.params["off_value"], dt)
    ii, o2 = k.tmp("ix"), k.tmp("v")
    k.line(f"{ii} = {idx}.reshape(-1)")
    k.line(f"{o2} = {out}.reshape(({ii}.shape[0], {out}.shape[{_ndim(k, out) - 1}]))")
    k.line(f"{out}.reshape(-1)[:] = {off}")
    (i,) = _open(k, [f"{ii}.shape[0]"])
    v = k.tmp("x")
    k.line(f"{v} = {ii}[{i}]")
    k.line(f"if {v} > -1 and {v} < {o2}.shape[1]:")
    k.line(f"    {o2}[{i}, int({v})] = {on}")
    _close(k, [i])


# transpose, SwapAxis, reverse, tile, repeat, slice and slice_axis are index maps: the
# target-neutral rules of symjit.lower.gather serve the CPU too. These are block copies and
# scatters, faster on the CPU than an element-wise gather.
_LOWER = {
    "Concat": _concat_lower, "stack": _stack_lower, "SliceChannel": _split_lower,
    "_backward_slice": _backward_slice_lower,
    "take": _take_lower, "_backward_take": _backward_take_lower, "pick": _pick_lower,
    "_backward_pick": _backward_pick_lower, "one_hot": _one_hot_lower,
}
for _name, _emit in _LOWER.items():
    rule(_name, CPUTarget, _emit)
# reshape-like ops copy when they cannot be a view (the copy reads element i before writing it)
for _name in ("Flatten", "Reshape", "expand_dims", "squeeze"):
    rule(_name, CPUTarget, _copy_lower, inplace=((0, 0),))
