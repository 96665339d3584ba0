"""Target-neutral lowerings that compute each output element by a serial accumulation: the
reductions, norm, the matrix products (FullyConnected, dot, batch_dot), Embedding's row lookup,
softmax/log_softmax and their gradients (each element recomputes its row's statistics), and the
regression heads.

Each rule returns the element function of its output; called inside the target's loop over the
output (a ``range`` nest on the CPU, a grid-stride loop on CUDA, one thread per element), it emits
the accumulation loop at the loop's indentation and returns the accumulator. No thread writes
another's element, so no atomics are needed. The CPU keeps its own rules (BLAS GEMMs, block
reduction kernels, reduction epilogues); these serve every other target. FullyConnected's element
includes its bias and is an epilogue: elementwise consumers fuse into the same loop.

>>> _REDUCE_STEP['max'].format(o='acc', x='v')
'acc = v if (v > acc or v != v) else acc'
"""
from __future__ import annotations

import numpy as np

from ..ops.loss import label_class
from ..ops.reduce import reduced_axes
from ..ops.shape_grad import clip_index
from .emit import dims, flat_index, open_loops
from .rules import ANY, ElemExpr, rule

__all__ = ["init_value", "REDUCE_STEP", "makeloss_scale", "sce_row", "matrix_view", "dot_elements",
           "fc_elements",
           "reduce_elements", "input_index", "SOFTMAX_ELEMENTS", "inv_temperature",
           "softmax_output_axes"]


_REDUCE_INIT = {"sum": "0", "mean": "0", "nansum": "0", "prod": "1", "nanprod": "1",
                "max": "-np.inf", "min": "np.inf"}
_REDUCE_STEP = {
    "sum": "{o} += {x}", "mean": "{o} += {x}", "prod": "{o} *= {x}",
    "nansum": "{o} += 0 if {x} != {x} else {x}", "nanprod": "{o} *= 1 if {x} != {x} else {x}",
    "max": "{o} = {x} if ({x} > {o} or {x} != {x}) else {o}",
    "min": "{o} = {x} if ({x} < {o} or {x} != {x}) else {o}",
}
REDUCE_STEP = _REDUCE_STEP


def init_value(name: str, dtype: np.dtype) -> str:
    """The accumulator's start value; max/min of integers start at the dtype's limits."""
    if name in ("max", "min") and dtype.kind in "iub":
        info = np.iinfo(dtype) if dtype.kind != "b" else np.iinfo(np.uint8)
        return str(int(info.min if name == "max" else info.max))
    return _REDUCE_INIT[name]


def input_index(idx: list[str], axes: tuple[int, ...], nd: int, keepdims: bool, red: list[str]) -> str:
    """The input index of output index ``idx`` (kept axes) and reduction indices ``red``."""
    kept = [d for d in range(nd) if d not in axes]
    at = {d: idx[d] for d in kept} if keepdims else {d: idx[j] for j, d in enumerate(kept)}
    at.update(zip(axes, red))
    return ", ".join(at[d] for d in range(nd))


def reduce_elements(name: str):
    def emit(k, node, ins, outs) -> ElemExpr:
        x, out = ins[0], outs[0]
        nd = len(k.info[x].shape)
        p = node.params
        axes = reduced_axes(k.info[x].shape, p["axis"], p["exclude"])
        init = init_value(name, k.info[out].dtype)

        def expr(idx: list[str]) -> str:
            acc, v = k.tmp("acc"), k.tmp("x")
            k.line(f"{acc} = {init}")
            red = open_loops(k, [f"{x}.shape[{d}]" for d in axes], "r")
            k.line(f"{v} = {x}[{input_index(idx, axes, nd, p['keepdims'], red)}]")
            k.line(_REDUCE_STEP[name].format(o=acc, x=v))
            k.indent -= len(red)
            if name == "mean":   # integer means truncate toward zero (the store casts)
                k.line(f"{acc} = {acc} / ({dims(x, axes)})")
            return acc
        return expr
    return emit


def _arg(name: str):
    """argmax/argmin: the first extreme along the axis (or of everything); a NaN wins, as on the
    CPU kernels; the index is written as a float."""
    better = ">" if name == "argmax" else "<"

    def emit(k, node, ins, outs) -> ElemExpr:
        x = ins[0]
        nd = len(k.info[x].shape)
        axis = node.params["axis"]
        axes = tuple(range(nd)) if axis is None else (axis % nd,)

        keep = node.params["keepdims"] and axis is not None

        def expr(idx: list[str]) -> str:
            best, arg, pos, v = k.tmp("b"), k.tmp("a"), k.tmp("p"), k.tmp("x")
            k.line(f"{best} = {x}[{input_index(idx, axes, nd, keep, ['0'] * len(axes))}]")
            k.line(f"{arg} = 0")
            k.line(f"{pos} = 0")
            red = open_loops(k, [f"{x}.shape[{d}]" for d in axes], "r")
            k.line(f"{v} = {x}[{input_index(idx, axes, nd, keep, red)}]")
            k.line(f"if {best} == {best} and ({v} {better} {best} or {v} != {v}):")
            k.line(f"    {best} = {v}")
            k.line(f"    {arg} = {pos}")
            k.line(f"{pos} += 1")
            k.indent -= len(red)
            return f"float({arg})"
        return expr
    return emit


def _norm(k, node, ins, outs) -> ElemExpr:
    x = ins[0]
    nd = len(k.info[x].shape)
    axes = reduced_axes(k.info[x].shape, node.params["axis"], False)

    def expr(idx: list[str]) -> str:
        acc, v = k.tmp("acc"), k.tmp("x")
        k.line(f"{acc} = 0.0")
        red = open_loops(k, [f"{x}.shape[{d}]" for d in axes], "r")
        k.line(f"{v} = float({x}[{input_index(idx, axes, nd, node.params['keepdims'], red)}])")
        k.line(f"{acc} += abs({v})" if node.params["ord"] == 1 else f"{acc} += {v} * {v}")
        k.indent -= len(red)
        return acc if node.params["ord"] == 1 else f"math.sqrt({acc})"
    return expr


# --- matrix products -------------------------------------------------------------------------------


def _dot_terms(k, a: str, b: str, i: str, j: str, ta: bool, tb: bool, kk: str) -> str:
    return f"{a}[{f'{kk}, {i}' if ta else f'{i}, {kk}'}] * {b}[{f'{j}, {kk}' if tb else f'{kk}, {j}'}]"


def _product(k, out: str, a: str, b: str, row_axes: int, ta: bool, tb: bool, extent: str,
             bias: str | None = None) -> ElemExpr:
    """Element ``idx`` of ``out``: sum over ``extent`` of row ``flat(idx[:row_axes])`` of ``a``
    times column ``flat(idx[row_axes:])`` of ``b`` (2-D views), plus ``bias[col]``."""
    def expr(idx: list[str]) -> str:
        i, j = flat_index(idx[:row_axes], out), flat_index(idx[row_axes:], out, row_axes)
        acc, kk = k.tmp("acc"), k.tmp("k")
        k.line(f"{acc} = 0.0")
        k.line(f"for {kk} in range({extent}):")
        k.line(f"    {acc} += {_dot_terms(k, a, b, i, j, ta, tb, kk)}")
        return acc if bias is None else f"{acc} + {bias}[{j}]"
    return expr


def matrix_view(k, arr: str, split: int) -> str:
    """A 2-D view of ``arr``: its axes before ``split`` as rows, the rest as columns (explicit
    sizes: no ``-1`` in a kernel's reshape, which numba-cuda's simulator rejects)."""
    nd, name = len(k.info[arr].shape), k.tmp("m")
    k.line(f"{name} = {arr}.reshape({dims(arr, range(split))}, {dims(arr, range(split, nd))})")
    return name


def fc_elements(k, node, ins, outs) -> ElemExpr:
    x, w, out = ins[0], ins[1], outs[0]
    flat = node.params["flatten"]
    x2 = matrix_view(k, x, 1 if flat else len(k.info[x].shape) - 1)
    rows = 1 if flat else len(k.info[out].shape) - 1
    bias = None if node.params["no_bias"] else ins[2]
    return _product(k, out, x2, w, rows, False, True, f"{w}.shape[1]", bias)


def dot_elements(k, node, ins, outs) -> ElemExpr:
    lhs, rhs, out = ins[0], ins[1], outs[0]
    ta, tb = node.params["transpose_a"], node.params["transpose_b"]
    nl = len(k.info[lhs].shape)
    if nl == 1 and len(k.info[rhs].shape) == 1:
        def vec(idx: list[str]) -> str:
            acc, kk = k.tmp("acc"), k.tmp("k")
            k.line(f"{acc} = 0.0")
            k.line(f"for {kk} in range({lhs}.shape[0]):")
            k.line(f"    {acc} += {lhs}[{kk}] * {rhs}[{kk}]")
            return acc
        return vec
    nr = len(k.info[rhs].shape)
    a = matrix_view(k, lhs, 1 if ta else nl - 1)
    b = matrix_view(k, rhs, nr - 1 if tb else 1)
    return _product(k, out, a, b, nl - 1, ta, tb, f"{a}.shape[{0 if ta else 1}]")


def _batch_dot(k, node, ins, outs) -> ElemExpr:
    lhs, rhs = ins[0], ins[1]
    ta, tb = node.params["transpose_a"], node.params["transpose_b"]
    nd = len(k.info[lhs].shape)

    def expr(idx: list[str]) -> str:
        lead = idx[:nd - 2]
        i, j = idx[nd - 2], idx[nd - 1]
        acc, kk = k.tmp("acc"), k.tmp("k")
        ai = [*lead, kk, i] if ta else [*lead, i, kk]
        bi = [*lead, j, kk] if tb else [*lead, kk, j]
        k.line(f"{acc} = 0.0")
        k.line(f"for {kk} in range({lhs}.shape[{nd - 2 if ta else nd - 1}]):")
        k.line(f"    {acc} += {lhs}[{', '.join(ai)}] * {rhs}[{', '.join(bi)}]")
        return acc
    return expr


def _embedding(k, node, ins, outs) -> ElemExpr:
    """``out[..., d] = weight[clip(data[...]), d]`` (indices truncated, then clipped)."""
    data, w = ins
    clip = k.module.body(clip_index)
    return lambda idx: f"{w}[{clip}({data}[{', '.join(idx[:-1])}], {w}.shape[0]), {idx[-1]}]"


# --- softmax family and regression heads --------------------------------------------------------


def _length(k, node, length: str, idx: list[str], ax: int, extent: str) -> str:
    """Emit the valid length of element ``idx``'s softmax (``length`` has data's shape without
    ``ax``): a value outside [0, extent] is the target's data check, then clipped; return its name."""
    n = k.tmp("n")
    at = ", ".join(i for d, i in enumerate(idx) if d != ax) or "0"
    k.line(f"{n} = int({length}[{at}])")
    k.target.emit_check(
        k, f"{n} < 0 or {n} > {extent}",
        f"{node.op.name} '{node.name}': argument 'length' holds a value outside "
        "[0, length of the softmax axis]")
    k.line(f"{n} = min(max({n}, 0), {extent})")
    return n


def inv_temperature(k, node) -> str:
    """The kernel parameter holding 1 / the softmax's temperature (``KernelWriter.const``): kernels
    differing only in their temperature share one form."""
    t = node.params["temperature"]
    return k.const(1.0 / (1.0 if t is None else float(t)))


def _along(idx: list[str], ax: int, kk: str) -> str:
    return ", ".join(kk if d == ax else i for d, i in enumerate(idx))


def _softmax(log: bool):
    """Each element recomputes its row's max and sum of exponentials along the axis (exp in the
    array's dtype, the sum in float64, as the CPU kernels do); with ``use_length`` over the first
    ``length`` entries of the row only, the others giving 0."""
    def emit(k, node, ins, outs) -> ElemExpr:
        x = ins[0]
        ax = node.params["axis"] % len(k.info[x].shape)
        it, dt = inv_temperature(k, node), k.info[x].dtype.name

        def expr(idx: list[str]) -> str:
            m, s, kk = k.tmp("m"), k.tmp("s"), k.tmp("k")
            n = f"{x}.shape[{ax}]"
            if node.params["use_length"]:
                n = _length(k, node, ins[1], idx, ax, n)
            k.line(f"{m} = -np.inf")
            k.line(f"for {kk} in range({n}):")
            k.line(f"    {m} = max({m}, {x}[{_along(idx, ax, kk)}] * np.{dt}({it}))")
            k.line(f"{s} = 0.0")
            k.line(f"for {kk} in range({n}):")
            k.line(f"    {s} += math.exp({x}[{_along(idx, ax, kk)}] * np.{dt}({it}) - {m})")
            own = f"{x}[{', '.join(idx)}] * np.{dt}({it}) - {m}"
            value = f"{own} - math.log({s})" if log else f"math.exp({own}) / {s}"
            return f"({value} if {idx[ax]} < {n} else 0.0)" if node.params["use_length"] else value
        return expr
    return emit


def _softmax_backward(log: bool):
    """``dx = y * (dout - sum(dout * y)) / T`` (softmax) or ``(dout - exp(y) * sum(dout)) / T``
    (log_softmax), the sum along the axis recomputed per element (over the first ``length``
    entries with ``use_length``, 0 for the others)."""
    def emit(k, node, ins, outs) -> ElemExpr:
        g, y = ins[0], ins[1]
        ax = node.params["axis"] % len(k.info[y].shape)
        it = inv_temperature(k, node)

        def expr(idx: list[str]) -> str:
            s, kk = k.tmp("s"), k.tmp("k")
            at, along = ", ".join(idx), _along(idx, ax, kk)
            n = f"{y}.shape[{ax}]"
            if node.params["use_length"]:
                n = _length(k, node, ins[2], idx, ax, n)
            k.line(f"{s} = 0.0")
            k.line(f"for {kk} in range({n}):")
            k.line(f"    {s} += {g}[{along}]" + ("" if log else f" * {y}[{along}]"))
            if log:
                value = f"({g}[{at}] - math.exp({y}[{at}]) * {s}) * {it}"
            else:
                value = f"{y}[{at}] * ({g}[{at}] - {s}) * {it}"
            return f"({value} if {idx[ax]} < {n} else 0.0)" if node.params["use_length"] else value
        return expr
    return emit


def softmax_output_axes(node, nd: int) -> tuple[int, ...]:
    """The axes SoftmaxOutput normalises over: axis 1 (multi_output), the last (preserve_shape),
    or every axis but the first."""
    p = node.params
    return (1,) if p["multi_output"] else (nd - 1,) if p["preserve_shape"] else tuple(range(1, nd))


def _softmax_output(k, node, ins, outs) -> ElemExpr:
    x = ins[0]
    nd = len(k.info[x].shape)
    axes = softmax_output_axes(node, nd)

    def expr(idx: list[str]) -> str:
        m, s, v = k.tmp("m"), k.tmp("s"), k.tmp("x")
        k.line(f"{m} = -np.inf")
        red = open_loops(k, [f"{x}.shape[{d}]" for d in axes], "r")
        k.line(f"{m} = max({m}, {x}[{input_index(idx, axes, nd, True, red)}])")
        k.indent -= len(red)
        k.line(f"{s} = 0.0")
        red = open_loops(k, [f"{x}.shape[{d}]" for d in axes], "r")
        k.line(f"{s} += math.exp({x}[{input_index(idx, axes, nd, True, red)}] - {m})")
        k.indent -= len(red)
        k.line(f"{v} = math.exp({x}[{', '.join(idx)}] - {m}) / {s}")
        return v
    return expr


def _softmax_output_backward(k, node, ins, outs) -> ElemExpr:
    """``(prob - target) * grad_scale / norm`` per element (see the CPU kernels of
    :mod:`symjit.kernels.cpu.softmax` for the rules: label smoothing, ignore_label, and the
    null/batch/valid normalisations, which multi_output scales by positions too)."""
    p = node.params
    prob, label = ins
    nd = len(k.info[prob].shape)
    gs = repr(float(p["grad_scale"]))
    if k.info[label].shape == k.info[prob].shape:   # probabilities as labels: no normalisation
        return lambda idx: f"({prob}[{', '.join(idx)}] - {label}[{', '.join(idx)}]) * {gs}"
    cls = k.module.body(label_class)
    lab, scale, ig, on, off = (k.tmp(t) for t in ("l", "c", "ig", "on", "off"))
    multi, keep = p["multi_output"], p["preserve_shape"]
    if multi:
        k.line(f"{lab} = {label}.reshape({prob}.shape[0], {dims(prob, range(2, nd))})")
        classes, rows = f"{prob}.shape[1]", f"{dims(prob, range(2, nd))}"
    elif keep:
        k.line(f"{lab} = {label}.reshape({dims(prob, range(nd - 1))})")
        classes, rows = f"{prob}.shape[{nd - 1}]", "1"
    else:
        k.line(f"{lab} = {label}.reshape({prob}.shape[0])")
        classes, rows = dims(prob, range(1, nd)), "1"
    k.line(f"{ig} = {cls}({p['ignore_label']!r})")
    norm = p["normalization"]
    if norm == "valid":
        flat, cnt, j = k.tmp("lf"), k.tmp("n"), k.tmp("j")
        k.line(f"{flat} = {lab}.reshape({lab}.size)")
        k.line(f"{cnt} = 0")
        k.line(f"for {j} in range({flat}.shape[0]):")
        k.line(f"    if {cls}({flat}[{j}]) != {ig}:")
        k.line(f"        {cnt} += 1")
        k.line(f"{scale} = {gs} / max({cnt}, 1)")
    elif norm == "batch":
        n = dims(prob, range(nd - 1)) if keep else f"{prob}.shape[0]"
        k.line(f"{scale} = {gs} / max({rows}, 1) / max({n}, 1)")
    else:
        k.line(f"{scale} = {gs} / max({rows}, 1)")
    a = float(p["smooth_alpha"])
    k.line(f"{on} = {1.0 - a!r}")
    k.line(f"{off} = {a!r} / ({classes} - 1) if {a!r} != 0.0 and {classes} >= 2 else 0.0")

    def expr(idx: list[str]) -> str:
        if multi:
            at, q = f"{idx[0]}, {flat_index(idx[2:], prob, 2)}", idx[1]
        elif keep:
            at, q = flat_index(idx[:-1], prob), idx[-1]
        else:
            at, q = idx[0], flat_index(idx[1:], prob, 1)
        c = k.tmp("cl")
        k.line(f"{c} = {cls}({lab}[{at}])")
        value = f"({prob}[{', '.join(idx)}] - ({on} if {q} == {c} else {off})) * {scale}"
        return f"(0.0 if {c} == {ig} else {value})" if p["use_ignore"] else value
    return expr


def _regression(k, node, ins, outs) -> ElemExpr:
    """Identity (linear, MAE, SVMOutput) or the logistic sigmoid."""
    x = ins[0]
    if node.op.name == "LogisticRegressionOutput":
        return lambda idx: f"1.0 / (1.0 + math.exp(-{x}[{', '.join(idx)}]))"
    return lambda idx: f"{x}[{', '.join(idx)}]"


def _regression_backward(k, node, ins, outs) -> ElemExpr:
    """``grad_scale / M * (out - label)`` (``sign`` of it for MAE), ``M`` the outputs per sample."""
    out, label = ins
    lab, scale = k.tmp("l"), k.tmp("c")
    k.line(f"{lab} = {label}.reshape({out}.shape)")
    k.line(f"{scale} = {node.params['grad_scale']!r} / max({dims(out, range(1, len(k.info[out].shape)))}, 1)")
    mae = node.op.extra["backward_of"] == "MAERegressionOutput"

    def expr(idx: list[str]) -> str:
        d = f"({out}[{', '.join(idx)}] - {lab}[{', '.join(idx)}])"
        return f"((1.0 if {d} > 0 else (-1.0 if {d} < 0 else 0.0)) * {scale})" if mae else f"{d} * {scale}"
    return expr



# -- helpers emitting serial code every target runs (CPU kernels call them too) -----------------

def makeloss_scale(k, node, x: str, xf: str) -> str:
    """Emit the gradient value: grad_scale / (1, batch size, or count of x > valid_thresh)."""
    p = node.params
    gs, scale = repr(p["grad_scale"]), k.tmp("s")
    if p["normalization"] == "batch":
        n = f"{x}.shape[0]" if k.info[x].shape else "1"
        k.line(f"{scale} = {gs} / max({n}, 1)")
    elif p["normalization"] == "valid":
        cnt, i = k.tmp("c"), k.tmp("i")
        k.line(f"{cnt} = 0")
        k.line(f"for {i} in range({xf}.shape[0]):")
        k.line(f"    if {xf}[{i}] > {p['valid_thresh']!r}:")
        k.line(f"        {cnt} += 1")
        k.line(f"{scale} = {gs} / max({cnt}, 1)")
    else:
        k.line(f"{scale} = {gs}")
    return scale


def sce_row(k, x: str, i: str, n: str) -> tuple[str, str]:
    """Emit the max ``m`` and ``s = sum(exp(x[i] - m))`` of row ``i``; returns (m, s)."""
    m, s, j = k.tmp("m"), k.tmp("s"), k.tmp("j")
    k.line(f"{m} = {x}[{i}, 0]")
    k.line(f"for {j} in range(1, {n}):")
    k.line(f"    if {x}[{i}, {j}] > {m}:")
    k.line(f"        {m} = {x}[{i}, {j}]")
    k.line(f"{s} = 0.0")
    k.line(f"for {j} in range({n}):")
    k.line(f"    {s} += math.exp({x}[{i}, {j}] - {m})")
    return m, s


# -- loss heads and products whose gradient needs the whole row or group -------------------------


def _makeloss_backward(k, node, ins, outs) -> ElemExpr:
    """Every element of MakeLoss's gradient is ``grad_scale`` over the normalisation (computed
    once per thread before the loop)."""
    xf = k.tmp("x")
    k.line(f"{xf} = {ins[0]}.reshape({ins[0]}.size)")
    scale = makeloss_scale(k, node, ins[0], xf)
    return lambda idx: scale


def _sce(k, node, ins, outs) -> ElemExpr:
    """The summed cross-entropy of softmax(x) rows against integer labels: one output element,
    a serial sum over the rows (NaN for a label outside ``[0, classes)``, as on the CPU)."""
    x, label = ins[0], ins[1]

    def expr(idx: list[str]) -> str:
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
        return acc
    return expr


def _sce_backward(k, node, ins, outs) -> ElemExpr:
    """``dx = (softmax(x) - one_hot(label)) * ograd[0]``, each element recomputing its row."""
    x, label, dy = ins[0], ins[1], ins[2]

    def expr(idx: list[str]) -> str:
        i, j = idx
        n, lab, c = k.tmp("n"), k.tmp("lab"), k.tmp("c")
        k.line(f"{n} = {x}.shape[1]")
        m, s = sce_row(k, x, i, n)
        k.line(f"{lab} = {label}[{i}]")
        k.line(f"{c} = int({lab}) if ({lab} > -1 and {lab} < {n}) else -1")
        value = f"(math.exp({x}[{i}, {j}] - {m}) / {s} - (1.0 if {j} == {c} else 0.0)) * {dy}[0]"
        return f"(math.nan if {c} < 0 else {value})"
    return expr


def _prod_backward(nan: bool):
    """d prod / d x_i: the product of the other elements of x_i's group, recomputed per element
    (exact at zeros); nanprod treats NaN as 1 and gives NaN positions no gradient."""
    def emit(k, node, ins, outs) -> ElemExpr:
        x, g = ins
        p = node.params
        nd = len(k.info[x].shape)
        axes = reduced_axes(k.info[x].shape, p["axis"], p["exclude"])

        def expr(idx: list[str]) -> str:
            acc, v = k.tmp("acc"), k.tmp("x")
            k.line(f"{acc} = 1.0")
            red = open_loops(k, [f"{x}.shape[{d}]" for d in axes], "r")
            pos = dict(zip(axes, red))
            at = [pos.get(d, idx[d]) for d in range(nd)]
            own = " and ".join(f"{red[j]} == {idx[d]}" for j, d in enumerate(axes)) or "True"
            k.line(f"{v} = {x}[{', '.join(at)}]")
            k.line(f"if not ({own}){f' and {v} == {v}' if nan else ''}:")
            k.line(f"    {acc} *= {v}")
            k.indent -= len(red)
            kept = [d for d in range(nd) if d not in axes]
            gi = ", ".join("0" if d in axes else idx[d] for d in range(nd)) if p["keepdims"] else \
                ", ".join(idx[d] for d in kept) or "0"
            value = f"{acc} * {g}[{gi}]"
            if nan:
                own_v = f"{x}[{', '.join(idx)}]"
                return f"(0.0 if {own_v} != {own_v} else {value})"
            return value
        return expr
    return emit


for _name in ("sum", "mean", "max", "min", "nansum", "prod", "nanprod"):
    rule(_name, ANY, reduce_elements(_name))
rule("argmax", ANY, _arg("argmax"))
rule("argmin", ANY, _arg("argmin"))
rule("norm", ANY, _norm)
rule("FullyConnected", ANY, fc_elements, epilogue=True, gathers=True)
rule("dot", ANY, dot_elements, epilogue=True, gathers=True)
rule("batch_dot", ANY, _batch_dot, epilogue=True, gathers=True)
rule("Embedding", ANY, _embedding)
# the per-element softmax emitters, which targets with a faster form for long rows fall back to
SOFTMAX_ELEMENTS = {("forward", False): _softmax(False), ("forward", True): _softmax(True),
                    ("backward", False): _softmax_backward(False),
                    ("backward", True): _softmax_backward(True), "SoftmaxOutput": _softmax_output}
rule("SoftmaxOutput", ANY, _softmax_output)
rule("_backward_SoftmaxOutput", ANY, _softmax_output_backward)
rule("softmax", ANY, SOFTMAX_ELEMENTS[("forward", False)])
rule("log_softmax", ANY, SOFTMAX_ELEMENTS[("forward", True)])
rule("_backward_softmax", ANY, SOFTMAX_ELEMENTS[("backward", False)])
rule("_backward_log_softmax", ANY, SOFTMAX_ELEMENTS[("backward", True)])
for _name in ("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"):
    rule(_name, ANY, _regression)
    rule(f"_backward_{_name}", ANY, _regression_backward)
rule("SVMOutput", ANY, _regression)
rule("_backward_MakeLoss", ANY, _makeloss_backward)
rule("softmax_cross_entropy", ANY, _sce)
rule("_backward_softmax_cross_entropy", ANY, _sce_backward)
rule("_backward_prod", ANY, _prod_backward(False))
rule("_backward_nanprod", ANY, _prod_backward(True))
