"""Target-neutral lowerings of AdaptiveAvgPooling2D and BilinearResize2D (records in
:mod:`symjit.ops.contrib`) and of their gradients: each output element computed by its own loop
(a window average, two interpolated rows), each gradient element summing over the few output
positions that read it (no atomics). The interpolation weights come from plain scalar helpers
(:func:`~symjit.ops.contrib.resize_source`, :func:`~symjit.ops.contrib.resize_weight`) wrapped
per target.

>>> import symjit as mx
>>> x = mx.sym.Variable('x')
>>> ex = mx.sym.contrib.BilinearResize2D(x, height=1, width=3).simple_bind(mx.cpu(), x=(1, 1, 1, 2))
>>> ex.forward(x=mx.nd.array([[[[0, 2]]]]))[0].asnumpy().tolist()
[[[[0.0, 1.0, 2.0]]]]
"""
from __future__ import annotations

from ..ops.contrib import resize_source, resize_weight
from .rules import ANY, ElemExpr, rule

__all__: list[str] = []


def _window(k, i: str, n_in: str, n_out: str) -> tuple[str, str]:
    lo, hi = k.tmp("lo"), k.tmp("hi")
    k.line(f"{lo} = ({i} * {n_in}) // {n_out}")
    k.line(f"{hi} = -((-({i} + 1) * {n_in}) // {n_out})")
    return lo, hi


def _adaptive(k, node, ins, outs) -> ElemExpr:
    x, out = ins[0], outs[0]

    def expr(idx: list[str]) -> str:
        n, c, i, j = idx
        h0, h1 = _window(k, i, f"{x}.shape[2]", f"{out}.shape[2]")
        w0, w1 = _window(k, j, f"{x}.shape[3]", f"{out}.shape[3]")
        acc, h, w = k.tmp("acc"), k.tmp("h"), k.tmp("w")
        k.line(f"{acc} = 0.0")
        k.line(f"for {h} in range({h0}, {h1}):")
        k.line(f"    for {w} in range({w0}, {w1}):")
        k.line(f"        {acc} += {x}[{n}, {c}, {h}, {w}]")
        return f"{acc} / (({h1} - {h0}) * ({w1} - {w0}))"
    return expr


def _candidates(k, h: str, n_in: str, n_out: str) -> tuple[str, str]:
    """A range of output rows that contains every row whose window (or interpolation) reads input
    row ``h``: two rows around h's image, clamped."""
    lo, hi = k.tmp("lo"), k.tmp("hi")
    k.line(f"{lo} = max(({h} * {n_out}) // {n_in} - 2, 0)")
    k.line(f"{hi} = min((({h} + 1) * {n_out}) // {n_in} + 2, {n_out} - 1)")
    return lo, hi


def _resize_candidates(k, h: str, n_in: str, n_out: str, align: bool) -> tuple[str, str]:
    """A range of output rows containing every row that interpolates input row ``h`` (its source
    row lies in (h - 1, h + 1)), from the inverse of :func:`resize_source` widened by one row each
    side, clamped: the scale is (n_out - 1) / (n_in - 1) with align_corners, else n_out / n_in."""
    lo, hi, r = k.tmp("lo"), k.tmp("hi"), k.tmp("r")
    if align:
        k.line(f"{r} = ({n_out} - 1) / ({n_in} - 1) if {n_in} > 1 else float({n_out})")
        k.line(f"{lo} = max(int(({h} - 1) * {r}) - 1, 0)")
        k.line(f"{hi} = min(int(({h} + 1) * {r}) + 1, {n_out} - 1)")
    else:
        k.line(f"{r} = {n_out} / {n_in}")
        k.line(f"{lo} = max(int(({h} - 0.5) * {r} - 0.5) - 1, 0)")
        k.line(f"{hi} = min(int(({h} + 1.5) * {r} - 0.5) + 1, {n_out} - 1)")
    return lo, hi


def _backward_adaptive(k, node, ins, outs) -> ElemExpr:
    g, dx = ins[0], outs[0]

    def expr(idx: list[str]) -> str:
        n, c, h, w = idx
        acc, i, j = k.tmp("acc"), k.tmp("i"), k.tmp("j")
        ilo, ihi = _candidates(k, h, f"{dx}.shape[2]", f"{g}.shape[2]")
        jlo, jhi = _candidates(k, w, f"{dx}.shape[3]", f"{g}.shape[3]")
        k.line(f"{acc} = 0.0")
        k.line(f"for {i} in range({ilo}, {ihi} + 1):")
        k.indent += 1
        h0, h1 = _window(k, i, f"{dx}.shape[2]", f"{g}.shape[2]")
        k.line(f"if {h0} <= {h} < {h1}:")
        k.indent += 1
        k.line(f"for {j} in range({jlo}, {jhi} + 1):")
        k.indent += 1
        w0, w1 = _window(k, j, f"{dx}.shape[3]", f"{g}.shape[3]")
        k.line(f"if {w0} <= {w} < {w1}:")
        k.line(f"    {acc} += {g}[{n}, {c}, {i}, {j}] / (({h1} - {h0}) * ({w1} - {w0}))")
        k.indent -= 3
        return acc
    return expr


def _resize(k, node, ins, outs) -> ElemExpr:
    x, out = ins[0], outs[0]
    align = bool(node.params["align_corners"])
    src = k.module.body(resize_source)

    def expr(idx: list[str]) -> str:
        n, c, i, j = idx
        v = {}
        for axis, o in ((2, i), (3, j)):
            s, a, b_, d = k.tmp("s"), k.tmp("a"), k.tmp("b"), k.tmp("d")
            k.line(f"{s} = {src}({o}, {x}.shape[{axis}], {out}.shape[{axis}], {align})")
            k.line(f"{a} = int({s})")
            k.line(f"{b_} = min({a} + 1, {x}.shape[{axis}] - 1)")
            k.line(f"{d} = {s} - {a}")
            v[axis] = (a, b_, d)
        (y0, y1, dy), (x0, x1, dx_) = v[2], v[3]
        top = f"((1.0 - {dx_}) * {x}[{n}, {c}, {y0}, {x0}] + {dx_} * {x}[{n}, {c}, {y0}, {x1}])"
        bottom = f"((1.0 - {dx_}) * {x}[{n}, {c}, {y1}, {x0}] + {dx_} * {x}[{n}, {c}, {y1}, {x1}])"
        return f"((1.0 - {dy}) * {top} + {dy} * {bottom})"
    return expr


def _backward_resize(k, node, ins, outs) -> ElemExpr:
    g, dx = ins[0], outs[0]
    align = bool(node.params["align_corners"])
    weight = k.module.body(resize_weight)

    def expr(idx: list[str]) -> str:
        n, c, h, w = idx
        acc, i, j, wy = k.tmp("acc"), k.tmp("i"), k.tmp("j"), k.tmp("wy")
        ilo, ihi = _resize_candidates(k, h, f"{dx}.shape[2]", f"{g}.shape[2]", align)
        jlo, jhi = _resize_candidates(k, w, f"{dx}.shape[3]", f"{g}.shape[3]", align)
        k.line(f"{acc} = 0.0")
        k.line(f"for {i} in range({ilo}, {ihi} + 1):")
        k.line(f"    {wy} = {weight}({i}, {h}, {dx}.shape[2], {g}.shape[2], {align})")
        k.line(f"    if {wy} != 0.0:")
        k.line(f"        for {j} in range({jlo}, {jhi} + 1):")
        k.line(f"            {acc} += {wy} * {weight}({j}, {w}, {dx}.shape[3], {g}.shape[3], {align}) * "
               f"{g}[{n}, {c}, {i}, {j}]")
        return acc
    return expr


# --- BilinearSampler ---------------------------------------------------------------------------------


def _sample_point(k, grid: str, n: str, i: str, j: str, data: str) -> tuple[str, str, str, str, str, str]:
    """Emit the source point of output (i, j): (y0, x0, dy, dx, sy, sx) with sy, sx the pixel
    units per normalised unit."""
    y, x, y0, x0, dy, dx, sy, sx = (k.tmp(v) for v in ("y", "x", "y0", "x0", "dy", "dx", "sy", "sx"))
    k.line(f"{sx} = ({data}.shape[3] - 1) * 0.5")
    k.line(f"{sy} = ({data}.shape[2] - 1) * 0.5")
    k.line(f"{x} = ({grid}[{n}, 0, {i}, {j}] + 1.0) * {sx}")
    k.line(f"{y} = ({grid}[{n}, 1, {i}, {j}] + 1.0) * {sy}")
    k.line(f"{x0} = int(math.floor({x}))")
    k.line(f"{y0} = int(math.floor({y}))")
    k.line(f"{dx} = {x} - {x0}")
    k.line(f"{dy} = {y} - {y0}")
    return y0, x0, dy, dx, sy, sx


def _corner(data: str, n: str, c: str, yy: str, xx: str) -> str:
    return (f"({data}[{n}, {c}, {yy}, {xx}] if 0 <= {yy} < {data}.shape[2] and 0 <= {xx} < {data}.shape[3] "
            f"else 0.0)")


def _corners(data: str, n: str, c: str, y0: str, x0: str) -> tuple[str, str, str, str]:
    return (_corner(data, n, c, y0, x0), _corner(data, n, c, y0, f"{x0} + 1"),
            _corner(data, n, c, f"{y0} + 1", x0), _corner(data, n, c, f"{y0} + 1", f"{x0} + 1"))


def _sampler(k, node, ins, outs) -> ElemExpr:
    data, grid = ins

    def expr(idx: list[str]) -> str:
        n, c, i, j = idx
        y0, x0, dy, dx, _, _ = _sample_point(k, grid, n, i, j, data)
        v00, v01, v10, v11 = _corners(data, n, c, y0, x0)
        return (f"((1.0 - {dy}) * ((1.0 - {dx}) * {v00} + {dx} * {v01}) + "
                f"{dy} * ((1.0 - {dx}) * {v10} + {dx} * {v11}))")
    return expr


def _sampler_data_grad(k, node, ins, outs) -> ElemExpr:
    g, grid, dd = ins[0], ins[1], outs[0]

    def expr(idx: list[str]) -> str:
        n, c, h, w = idx
        acc, i, j, wy, wx = k.tmp("acc"), k.tmp("i"), k.tmp("j"), k.tmp("wy"), k.tmp("wx")
        k.line(f"{acc} = 0.0")
        k.line(f"for {i} in range({g}.shape[2]):")
        k.line(f"    for {j} in range({g}.shape[3]):")
        k.indent += 2
        x = f"(({grid}[{n}, 0, {i}, {j}] + 1.0) * ({dd}.shape[3] - 1) * 0.5)"
        y = f"(({grid}[{n}, 1, {i}, {j}] + 1.0) * ({dd}.shape[2] - 1) * 0.5)"
        k.line(f"{wx} = 1.0 - abs({x} - {w})")
        k.line(f"{wy} = 1.0 - abs({y} - {h})")
        k.line(f"if {wx} > 0.0 and {wy} > 0.0:")
        k.line(f"    {acc} += {wx} * {wy} * {g}[{n}, {c}, {i}, {j}]")
        k.indent -= 2
        return acc
    return expr


def _sampler_grid_grad(k, node, ins, outs) -> ElemExpr:
    g, grid, data = ins

    def expr(idx: list[str]) -> str:
        n, axis, i, j = idx
        y0, x0, dy, dx, sy, sx = _sample_point(k, grid, n, i, j, data)
        acc, c = k.tmp("acc"), k.tmp("c")
        k.line(f"{acc} = 0.0")
        k.line(f"for {c} in range({data}.shape[1]):")
        v00, v01, v10, v11 = _corners(data, n, c, y0, x0)
        ddx = f"((1.0 - {dy}) * ({v01} - {v00}) + {dy} * ({v11} - {v10})) * {sx}"
        ddy = f"((1.0 - {dx}) * ({v10} - {v00}) + {dx} * ({v11} - {v01})) * {sy}"
        k.line(f"    {acc} += {g}[{n}, {c}, {i}, {j}] * ({ddx} if {axis} == 0 else {ddy})")
        return acc
    return expr


rule("BilinearSampler", ANY, _sampler)
rule("_backward_BilinearSampler_data", ANY, _sampler_data_grad, shape_only=(2,))
rule("_backward_BilinearSampler_grid", ANY, _sampler_grid_grad)
rule("_contrib_AdaptiveAvgPooling2D", ANY, _adaptive)
rule("_backward_AdaptiveAvgPooling2D", ANY, _backward_adaptive, shape_only=(1,))
rule("_contrib_BilinearResize2D", ANY, _resize, shape_only=(1,))
rule("_backward_BilinearResize2D", ANY, _backward_resize, shape_only=(1,))
