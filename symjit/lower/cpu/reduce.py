"""CPU lowerings of the reductions (records in :mod:`symjit.ops.reduce`): a hand-written
``(A, R, B)`` kernel of :mod:`symjit.kernels.cpu.reduce` when the reduced axes form one block, else
one loop over the input accumulating into the keepdims-shaped view of the output. ``sum`` and
``mean`` may also run as reduction epilogues of the loop computing their input (``reduce=``).

In a light program (``KernelWriter.any_pattern``), a reduction whose output keeps the input's rank
(``keepdims``: a broadcast op's gradient) reads
its reduced axes from the shapes at run time (:func:`symjit.kernels.cpu.reduce.reduce_block`, and
the loop's axis steps, :func:`symjit.lower.emit.axis_steps`), so one kernel serves
every axis set of its rank, as the broadcast loops serve every broadcast pattern."""
from __future__ import annotations

import numpy as np

from ...ops.reduce import contiguous_block, reduced_axes
from ..accumulate import REDUCE_STEP, init_value, sce_row
from ..emit import KCPU, axis_steps, call, dims, open_loops, stepped_index
from ..rules import rule
from . import CPUTarget


def _open_loops(k, arr: str, ndim: int) -> list[str]:
    """Open one loop per axis of ``arr``; returns the index names (close with ``k.indent -= ndim``)."""
    return open_loops(k, [f"{arr}.shape[{d}]" for d in range(ndim)])


def _kept_view(k, like: str, arr: str, axes: tuple[int, ...], ndim: int) -> str:
    """A local view of ``arr`` (a reduction result) with ``like``'s rank, reduced axes of size 1."""
    name = k.tmp("o")
    kept = ", ".join("1" if d in axes else f"{like}.shape[{d}]" for d in range(ndim))
    k.line(f"{name} = {arr}.reshape(({kept},))")
    return name


def _kept_index(idx: list[str], axes: tuple[int, ...]) -> str:
    return ", ".join("0" if d in axes else i for d, i in enumerate(idx))


def _abr_view(k, x: str, out: str, ndim: int, lo: int, hi: int) -> tuple[str, str]:
    """``x`` as ``(A, R, B)`` (R = axes lo..hi-1) and ``out`` as ``(A, B)``."""
    a, r, b = dims(x, range(lo)), dims(x, range(lo, hi)), dims(x, range(hi, ndim))
    x3, o2 = k.tmp("x"), k.tmp("o")
    k.line(f"{x3} = {x}.reshape(({a}, {r}, {b}))")
    k.line(f"{o2} = {out}.reshape(({a}, {b}))")
    return x3, o2


_FAST = {"sum": "reduce_sum", "mean": "reduce_mean", "max": "reduce_max", "min": "reduce_min"}


def _fast_reduce(k, name: str, x: str, out: str, axes: tuple[int, ...]) -> bool:
    """Emit a call of the (A, R, B) kernel when the reduced axes form one block; else False."""
    val = k.info[x]
    shape = val.shape
    if name not in _FAST or val.dtype.kind != "f" or k.info[out].dtype != val.dtype:
        return False
    block = contiguous_block(shape, axes)
    if block is None:
        return False
    lo, hi = block
    count = 1
    for d in range(lo, hi):
        count *= shape[d]
    if count == 0 and name != "sum":   # mean/max/min of nothing: the generic loop's NaN/inf
        return False
    x3, o2 = _abr_view(k, x, out, len(shape), lo, hi)
    call(k, "reduce", _FAST[name], x3, o2)
    return True


def _loop_reduce(k, name: str, x: str, out: str, o: str, oidx) -> None:
    """One loop over ``x`` accumulating into ``o`` (``out`` or a view of it) at ``oidx(idx)``."""
    k.line(f"{out}.reshape(-1)[:] = {init_value(name, k.info[out].dtype)}")
    idx = _open_loops(k, x, len(k.info[x].shape))
    xv = k.tmp("x")
    k.line(f"{xv} = {x}[{', '.join(idx)}]")
    k.line(REDUCE_STEP[name].format(o=f"{o}[{oidx(idx)}]", x=xv))
    k.indent -= len(idx)


def _divide(k, out: str, n: str) -> None:
    """A mean's sums divided by the count ``n`` (integer means truncate toward zero, as MXNet's
    integer division)."""
    o1, j = k.tmp("o"), k.tmp("j")
    k.line(f"{o1} = {out}.reshape(-1)")
    k.line(f"for {j} in range({o1}.shape[0]):")
    k.line(f"    {o1}[{j}] = {o1}[{j}] / {n}")


def _stepped_reduce(k, name: str, x: str, out: str, nd: int) -> None:
    """One loop over ``x`` accumulating into ``out`` (the input's rank) indexed by axis steps; where
    the last axis is reduced, each run of it accumulates in a register (an accumulator in memory
    whose address the loop cannot know to be fixed costs a store and a load per element)."""
    steps = axis_steps(k, out, nd)
    k.line(f"{out}.reshape(-1)[:] = {init_value(name, k.info[out].dtype)}")
    idx = _open_loops(k, x, nd - 1)
    last, xv, acc = k.tmp("i"), k.tmp("x"), k.tmp("acc")
    head = stepped_index(idx, steps) + (", " if idx else "")
    k.line(f"if {steps[-1]} == 0:")
    k.line(f"    {acc} = {out}[{head}0]")
    k.line(f"    for {last} in range({x}.shape[{nd - 1}]):")
    k.line(f"        {xv} = {x}[{', '.join(idx + [last])}]")
    k.line("        " + REDUCE_STEP[name].format(o=acc, x=xv))
    k.line(f"    {out}[{head}0] = {acc}")
    k.line("else:")
    k.line(f"    for {last} in range({x}.shape[{nd - 1}]):")
    k.line(f"        {xv} = {x}[{', '.join(idx + [last])}]")
    k.line("        " + REDUCE_STEP[name].format(o=f"{out}[{head}{last}]", x=xv))
    k.indent -= len(idx)


def _kept_reduce(k, name: str, x: str, out: str) -> None:
    """A reduction to an output of the input's rank, for any axes: the (A, R, B) kernel when the
    axes the shapes reduce form one block, else the loop, indexing the output by axis steps."""
    nd = len(k.info[x].shape)
    val = k.info[x]
    fast = name in _FAST and val.dtype.kind == "f" and k.info[out].dtype == val.dtype
    if fast:
        ok, a, r, b = k.tmp("ok"), k.tmp("a"), k.tmp("r"), k.tmp("b")
        k.line(f"{ok}, {a}, {r}, {b} = {k.imp(f'{KCPU}.reduce', 'reduce_block')}({x}.shape, {out}.shape)")
        k.line(f"if {ok}:")
        k.indent += 1
        call(k, "reduce", _FAST[name], f"{x}.reshape(({a}, {r}, {b}))", f"{out}.reshape(({a}, {b}))")
        k.indent -= 1
        k.line("else:")
        k.indent += 1
    _stepped_reduce(k, name, x, out, nd)
    if name == "mean":
        n = k.tmp("n")
        k.line(f"{n} = {x}.size // {out}.size if {out}.size else 1")
        _divide(k, out, n)
    if fast:
        k.indent -= 1


def _reduce_lower(name: str):
    """The (A, R, B) kernel for a contiguous block of axes, else one loop over the input
    accumulating into the keepdims-shaped view of the output; for an output of the input's rank,
    one kernel for any axes (:func:`_kept_reduce`)."""
    def lower(k, node, ins, outs):
        x, out = ins[0], outs[0]
        shape = k.info[x].shape
        if k.any_pattern and shape and len(k.info[out].shape) == len(shape):
            _kept_reduce(k, name, x, out)
            return
        axes = reduced_axes(shape, node.params["axis"], node.params["exclude"])
        if _fast_reduce(k, name, x, out, axes):
            return
        o = _kept_view(k, x, out, axes, len(shape))
        _loop_reduce(k, name, x, out, o, lambda idx: _kept_index(idx, axes))
        if name == "mean":
            n = k.tmp("n")
            k.line(f"{n} = {dims(x, axes)}")
            _divide(k, out, n)
    return lower


def _prod_backward_lower(nan: bool):
    def lower(k, node, ins, outs):
        x, dy, dx = ins[0], ins[1], outs[0]
        shape = k.info[x].shape
        nd = len(shape)
        axes = reduced_axes(shape, node.params["axis"], node.params["exclude"])
        g = _kept_view(k, x, dy, axes, nd)
        nz, cnt, v, c, r = k.tmp("nz"), k.tmp("cnt"), k.tmp("v"), k.tmp("c"), k.tmp("r")
        k.line(f"{nz} = {k.workspace[0]}.reshape({g}.shape)")
        k.line(f"{nz}[...] = 1")
        k.line(f"{cnt} = {k.workspace[1]}.reshape({g}.shape)")
        k.line(f"{cnt}[...] = 0")
        idx = _open_loops(k, x, nd)
        xi, oi = ", ".join(idx), _kept_index(idx, axes)
        k.line(f"{v} = {x}[{xi}]")
        k.line(f"if {v} == 0:")
        k.line(f"    {cnt}[{oi}] += 1")
        k.line(f"elif {v} == {v}:" if nan else "else:")
        k.line(f"    {nz}[{oi}] *= {v}")
        k.indent -= nd
        idx = _open_loops(k, x, nd)
        xi, oi = ", ".join(idx), _kept_index(idx, axes)
        k.line(f"{v} = {x}[{xi}]")
        k.line(f"{c} = {cnt}[{oi}]")
        if nan:
            k.line(f"if {v} != {v}:")
            k.line(f"    {r} = 0.0")
        k.line(f"{'elif' if nan else 'if'} {c} == 0:")
        k.line(f"    {r} = {nz}[{oi}] / {v}")
        k.line(f"elif {c} == 1 and {v} == 0:")
        k.line(f"    {r} = {nz}[{oi}] * 1.0")
        k.line("else:")
        k.line(f"    {r} = 0.0")
        k.line(f"{dx}[{xi}] = {r} * {g}[{oi}]")
        k.indent -= nd
    return lower


def _norm_lower(k, node, ins, outs):
    """|x| or x*x summed in float64 into a keepdims-shaped accumulator, then (ord 2) its sqrt."""
    x, out = ins[0], outs[0]
    shape = k.info[x].shape
    nd = len(shape)
    axes = reduced_axes(shape, node.params["axis"], False)
    acc, v, a1, o1, j = k.tmp("acc"), k.tmp("v"), k.tmp("a"), k.tmp("o"), k.tmp("j")
    kept = ", ".join("1" if d in axes else f"{x}.shape[{d}]" for d in range(nd))
    k.line(f"{acc} = {k.workspace[0]}.reshape(({kept},))")
    k.line(f"{acc}[...] = 0")
    idx = _open_loops(k, x, nd)
    k.line(f"{v} = float({x}[{', '.join(idx)}])")
    step = f"abs({v})" if node.params["ord"] == 1 else f"{v} * {v}"
    k.line(f"{acc}[{_kept_index(idx, axes)}] += {step}")
    k.indent -= nd
    k.line(f"{a1} = {acc}.reshape(-1)")
    k.line(f"{o1} = {out}.reshape(-1)")
    k.line(f"for {j} in range({o1}.shape[0]):")
    k.line(f"    {o1}[{j}] = " + (f"{a1}[{j}]" if node.params["ord"] == 1 else f"math.sqrt({a1}[{j}])"))


def _arg_lower(name: str):
    """``reduce_argmax``/``reduce_argmin`` on the (A, R, B) view (R: the axis, or everything)."""
    def lower(k, node, ins, outs):
        x, out = ins[0], outs[0]
        nd = len(k.info[x].shape)
        axis = node.params["axis"]
        lo, hi = (0, nd) if axis is None else (axis % nd, axis % nd + 1)
        x3, o2 = _abr_view(k, x, out, nd, lo, hi)
        call(k, "reduce", f"reduce_{name}", x3, o2)
    return lower


def _sce_lower(k, node, ins, outs):
    x, label, out = ins[0], ins[1], outs[0]
    acc, i, n, lab = k.tmp("acc"), k.tmp("i"), k.tmp("n"), k.tmp("lab")
    k.line(f"{n} = {x}.shape[1]")
    k.line(f"{acc} = 0.0")
    k.line(f"for {i} in range({x}.shape[0]):")
    k.indent += 1
    m, s = sce_row(k, x, i, n)
    k.line(f"{lab} = {label}[{i}]")
    k.line(f"if {lab} > -1 and {lab} < {n}:")
    k.line(f"    {acc} += math.log({s}) + {m} - {x}[{i}, int({lab})]")
    k.line("else:")
    k.line(f"    {acc} = math.nan")
    k.indent -= 1
    k.line(f"{out}[0] = {acc}")


def _sce_backward_lower(k, node, ins, outs):
    """dx = (softmax(x) - one_hot(label)) * ograd[0], row by row."""
    x, label, dy, dx = ins[0], ins[1], ins[2], outs[0]
    i, j, n, lab, g, c = k.tmp("i"), k.tmp("j"), k.tmp("n"), k.tmp("lab"), k.tmp("g"), k.tmp("c")
    k.line(f"{n} = {x}.shape[1]")
    k.line(f"{g} = {dy}[0]")
    k.line(f"for {i} in range({x}.shape[0]):")
    k.indent += 1
    m, s = sce_row(k, x, i, n)
    k.line(f"{lab} = {label}[{i}]")
    k.line(f"{c} = int({lab}) if ({lab} > -1 and {lab} < {n}) else -1")
    k.line(f"for {j} in range({n}):")
    k.line(f"    if {c} < 0:")
    k.line(f"        {dx}[{i}, {j}] = math.nan")
    k.line("    else:")
    prob = f"math.exp({x}[{i}, {j}] - {m}) / {s}"
    k.line(f"        {dx}[{i}, {j}] = ({prob} - (1.0 if {j} == {c} else 0.0)) * {g}")
    k.indent -= 1


for _name in ("sum", "mean"):   # accumulate serially inside the loop computing their input
    rule(_name, CPUTarget, _reduce_lower(_name), reduce=_name)
for _name in ("nansum", "prod", "nanprod", "max", "min"):
    rule(_name, CPUTarget, _reduce_lower(_name))


def _prod_workspace(node, ins, outs):
    """The product of the non-zero entries and the count of zeros, per reduced position."""
    n = ins[1].nbytes // ins[1].dtype.itemsize
    return [((n,), ins[1].dtype), ((n,), np.int64)]


def _norm_workspace(node, ins, outs):
    """The float64 accumulator, one per output element."""
    return [((outs[0].nbytes // outs[0].dtype.itemsize,), np.float64)]


rule("_backward_prod", CPUTarget, _prod_backward_lower(False), workspace=_prod_workspace)
rule("_backward_nanprod", CPUTarget, _prod_backward_lower(True), workspace=_prod_workspace)
rule("norm", CPUTarget, _norm_lower, workspace=_norm_workspace)
rule("argmax", CPUTarget, _arg_lower("argmax"))
rule("argmin", CPUTarget, _arg_lower("argmin"))
rule("softmax_cross_entropy", CPUTarget, _sce_lower)
rule("_backward_softmax_cross_entropy", CPUTarget, _sce_backward_lower)
