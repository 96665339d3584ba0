"""CPU lowerings of the loss heads and softmax family (records in :mod:`symjit.ops.loss`): the
kernels of :mod:`symjit.kernels.cpu.softmax` on 2-D (rows, classes) or 3-D (A, K, B) views;
softmax and log_softmax through :mod:`symjit.kernels.cpu.softmax_axis`, on arrays of any rank."""
from __future__ import annotations

from ..accumulate import inv_temperature, makeloss_scale
from ..emit import KCPU, axis_view3, call, rows_view, view2d
from ..rules import rule
from . import CPUTarget

_NORM_CODES = {"null": 0, "batch": 1, "valid": 2}   # symjit.kernels.cpu.softmax.NORM_*


def _so_views(k, node, data: str, other: str, label: str | None = None):
    """(layout, data view, other view, label view) for SoftmaxOutput's kernels."""
    p = node.params
    if p["multi_output"]:
        v = [k.tmp("v") for _ in range(2)]
        for name, arr in zip(v, (data, other)):
            k.line(f"{name} = {arr}.reshape({arr}.shape[0], {arr}.shape[1], -1)")
        return "3d", v[0], v[1]
    view = rows_view if p["preserve_shape"] else view2d
    return "2d", view(k, data), view(k, other)


def _so_lower(k, node, ins, outs):
    layout, x, prob = _so_views(k, node, ins[0], outs[0])
    call(k, "softmax", "softmax_output_forward" + ("_3d" if layout == "3d" else ""), x, prob)


def _so_backward_lower(k, node, ins, outs):
    p = node.params
    prob, label, dx = ins[0], ins[1], outs[0]
    if k.info[label].shape == k.info[prob].shape:   # labels are probabilities
        pv, lv, dv = view2d(k, prob), view2d(k, label), view2d(k, dx)
        call(k, "softmax", "softmax_output_backward_prob", pv, lv, dv, p["grad_scale"])
        return
    layout, pv, dv = _so_views(k, node, prob, dx)
    lab = k.tmp("l")
    args = (p["grad_scale"], p["ignore_label"], p["use_ignore"], _NORM_CODES[p["normalization"]],
            p["smooth_alpha"])
    if layout == "3d":
        k.line(f"{lab} = {label}.reshape({pv}.shape[0], {pv}.shape[2])")
        call(k, "softmax", "softmax_output_backward_3d", pv, lab, dv, *args)
    else:
        k.line(f"{lab} = {label}.reshape({pv}.shape[0])")
        call(k, "softmax", "softmax_output_backward", pv, lab, dv, *args)


def _temperature(k, node) -> str:
    """The kernel parameter holding the softmax's temperature (``KernelWriter.const``)."""
    t = node.params["temperature"]
    return k.const(1.0 if t is None else float(t))


def _length_loop(k, node, x3: str, length: str) -> tuple[str, str, str, str]:
    """Open loops over (A, B) of an (A, K, B) view reading the valid length of each position; the
    kernel raises MXNetError for a length outside [0, K]. Returns (a, b, n, length view)."""
    a, b, n, lv = k.tmp("a"), k.tmp("b"), k.tmp("n"), k.tmp("l")
    msg = (f"{node.op.name} '{node.name}': argument 'length' holds a value outside "
           "[0, length of the softmax axis]")
    k.line(f"{lv} = {length}.reshape({x3}.shape[0], {x3}.shape[2])")
    k.line(f"for {a} in range({x3}.shape[0]):")
    k.line(f"    for {b} in range({x3}.shape[2]):")
    k.indent += 2
    k.line(f"{n} = {lv}[{a}, {b}]")
    k.target.emit_check(k, f"{n} < 0 or {n} > {x3}.shape[1]", msg)
    return a, b, n, lv


def _emit_length_forward(k, node, x3: str, o3: str, length: str, log: bool) -> None:
    """(log-)softmax over the first ``length`` entries of the middle axis; the rest is 0."""
    a, b, n, _ = _length_loop(k, node, x3, length)
    it, m, s, q = inv_temperature(k, node), k.tmp("m"), k.tmp("s"), k.tmp("q")
    x = f"{x3}[{a}, {q}, {b}] * {it}"
    k.line(f"{m} = -np.inf")
    k.line(f"for {q} in range({n}):")
    k.line(f"    {m} = max({m}, {x})")
    k.line(f"{s} = 0.0")
    k.line(f"for {q} in range({n}):")
    k.line(f"    {s} += math.exp({x} - {m})")
    val = f"{x} - {m} - math.log({s})" if log else f"math.exp({x} - {m}) / {s}"
    k.line(f"for {q} in range({x3}.shape[1]):")
    k.line(f"    {o3}[{a}, {q}, {b}] = {val} if {q} < {n} else 0.0")
    k.indent -= 2


def _emit_length_backward(k, node, g3: str, y3: str, d3: str, length: str, log: bool) -> None:
    """(log-)softmax gradient over the first ``length`` entries; 0 for the rest."""
    a, b, n, _ = _length_loop(k, node, y3, length)
    it, s, q = inv_temperature(k, node), k.tmp("s"), k.tmp("q")
    g, y = f"{g3}[{a}, {q}, {b}]", f"{y3}[{a}, {q}, {b}]"
    k.line(f"{s} = 0.0")
    k.line(f"for {q} in range({n}):")
    k.line(f"    {s} += {g}" + ("" if log else f" * {y}"))
    val = f"({g} - math.exp({y}) * {s}) * {it}" if log else f"{y} * ({g} - {s}) * {it}"
    k.line(f"for {q} in range({y3}.shape[1]):")
    k.line(f"    {d3}[{a}, {q}, {b}] = {val} if {q} < {n} else 0.0")
    k.indent -= 2


def _length_views(k, node, arrays: list[str], like: str) -> list[str]:
    """(A, K, B) views of ``arrays`` around the axis (the layout of the length-masked loops)."""
    nd = len(k.info[like].shape)
    return [axis_view3(k, a, node.params["axis"] % nd, nd) for a in arrays]


def _axis_call(k, node, fn: str, arrays: list[str]) -> None:
    """A call of :mod:`symjit.kernels.cpu.softmax_axis`'s ``fn`` on the program's arrays of any
    rank, the temperature and the axis as kernel arguments: a kernel that is only this call is the
    building block itself (``KernelWriter.direct``), none compiled per rank and axis."""
    ax = node.params["axis"] % len(k.info[arrays[-1]].shape)
    k.call(f"{KCPU}.softmax_axis", fn, [*arrays, _temperature(k, node), k.const(ax)])


def _softmax_lower(log: bool):
    fn = "log_softmax_forward" if log else "softmax_forward"

    def lower(k, node, ins, outs):
        if node.params["use_length"]:
            x, o = _length_views(k, node, [ins[0], outs[0]], ins[0])
            _emit_length_forward(k, node, x, o, ins[1], log)
            return
        _axis_call(k, node, fn, [ins[0], outs[0]])
    return lower


def _softmax_backward_lower(log: bool):
    fn = "log_softmax_backward" if log else "softmax_backward"

    def lower(k, node, ins, outs):
        if node.params["use_length"]:
            g, y, d = _length_views(k, node, [ins[0], ins[1], outs[0]], ins[1])
            _emit_length_backward(k, node, g, y, d, ins[2], log)
            return
        _axis_call(k, node, fn, [ins[0], ins[1], outs[0]])
    return lower


_REG_CODES = {"LinearRegressionOutput": 0, "LogisticRegressionOutput": 1,   # kernels' REG_*
              "MAERegressionOutput": 2}


def _reg_lower(k, node, ins, outs):
    call(k, "softmax", "regression_forward", view2d(k, ins[0]), view2d(k, outs[0]),
         _REG_CODES[node.op.name])


def _reg_backward_lower(k, node, ins, outs):
    out, label = ins
    o2, lab, dx = view2d(k, out), k.tmp("l"), view2d(k, outs[0])
    k.line(f"{lab} = {label}.reshape({o2}.shape[0], {o2}.shape[1])")
    call(k, "softmax", "regression_backward", o2, lab, dx, repr(node.params["grad_scale"]),
         _REG_CODES[node.op.extra["backward_of"]])


def _makeloss_backward_lower(k, node, ins, outs):
    xf, df, i = k.tmp("x"), k.tmp("d"), k.tmp("i")
    k.line(f"{xf} = {ins[0]}.reshape(-1)")
    k.line(f"{df} = {outs[0]}.reshape(-1)")
    scale = makeloss_scale(k, node, ins[0], xf)
    k.line(f"for {i} in range({df}.shape[0]):")
    k.line(f"    {df}[{i}] = {scale}")


rule("SoftmaxOutput", CPUTarget, _so_lower)
rule("_backward_SoftmaxOutput", CPUTarget, _so_backward_lower)
rule("softmax", CPUTarget, _softmax_lower(False))
rule("_backward_softmax", CPUTarget, _softmax_backward_lower(False))
rule("log_softmax", CPUTarget, _softmax_lower(True))
rule("_backward_log_softmax", CPUTarget, _softmax_backward_lower(True))
for _name in ("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"):
    rule(_name, CPUTarget, _reg_lower)
    rule(f"_backward_{_name}", CPUTarget, _reg_backward_lower)
rule("_backward_MakeLoss", CPUTarget, _makeloss_backward_lower)
