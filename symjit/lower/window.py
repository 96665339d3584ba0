"""Target-neutral lowerings of the windowed layers, one output element at a time: Pooling (max,
avg, sum, lp; global) and Convolution (grouped, strided, padded, dilated), forward and gradients.

Every gradient is a gather: each element of ``dx`` (or ``dweight``, ``dbias``) sums the output
positions whose window covers it, so no two threads write one element and no atomics are needed.
Max pooling's gradient recomputes each covering window's argmax (the first maximum; the first NaN
where the window holds one), as the CPU kernels do. Layers are ``NCW`` or ``NCHW``; geometry is
baked in as constants. These serve CUDA for pooling and grouped convolutions (its tiled implicit
GEMM, :mod:`symjit.lower.cuda.gemm`, takes the others); the CPU runs its im2col/BLAS and pooling
kernels.
"""
from __future__ import annotations

from ..ops.deconv import conv_view
from ..ops.rules import window_params
from .emit import literal, open_loops
from .rules import ANY, ElemExpr, rule


def _geometry(k, node, x: str) -> tuple[list[str], list[int], list[int], list[int]]:
    """(kernel extents as source, stride, dilate, pad) per spatial axis of ``x``."""
    p = node.params
    nsp = len(k.info[x].shape) - 2
    if p.get("global_pool"):
        return [f"{x}.shape[{2 + d}]" for d in range(nsp)], [1] * nsp, [1] * nsp, [0] * nsp
    stride, dilate, pad = window_params(p, nsp)
    return [str(v) for v in p["kernel"]], list(stride), list(dilate), list(pad)


def _window_bounds(k, o: str, s: int, p: int, kern: str, size: str) -> tuple[str, str, str]:
    """Emit the clipped window ``[lo, hi)`` of output index ``o`` and its padded extent."""
    lo, hi, padded = k.tmp("lo"), k.tmp("hi"), k.tmp("pe")
    k.line(f"{lo} = {o} * {s} - {p}")
    k.line(f"{hi} = min({lo} + {kern}, {size} + {p})")
    k.line(f"{padded} = {hi} - {lo}")
    k.line(f"{lo} = max({lo}, 0)")
    k.line(f"{hi} = min({hi}, {size})")
    return lo, hi, padded


# --- pooling -----------------------------------------------------------------------------------------


def _pool_window(k, node, x: str, o: list[str]) -> tuple[list[tuple[str, str]], str]:
    """Emit the clipped window of output position ``o``; return its (lo, hi) per axis and the
    source of its padded size (avg's divisor with count_include_pad)."""
    kern, stride, _, pad = _geometry(k, node, x)
    bounds, padded = [], []
    for d, od in enumerate(o):
        lo, hi, pe = _window_bounds(k, od, stride[d], pad[d], kern[d], f"{x}.shape[{2 + d}]")
        bounds.append((lo, hi))
        padded.append(pe)
    return bounds, " * ".join(padded)


def _over_window(k, bounds: list[tuple[str, str]]) -> list[str]:
    idx = [k.tmp("w") for _ in bounds]
    for i, (lo, hi) in zip(idx, bounds):
        k.line(f"for {i} in range({lo}, {hi}):")
        k.indent += 1
    return idx


def _pool_value(k, node, x: str, n: str, c: str, o: list[str]) -> str:
    """Emit the pooled value of output ``(n, c, *o)``; return its local name."""
    p = node.params
    kind = p["pool_type"]
    bounds, padded = _pool_window(k, node, x, o)
    acc, nan, cnt = k.tmp("acc"), k.tmp("nan"), k.tmp("cnt")
    k.line(f"{acc} = {'-np.inf' if kind == 'max' else '0.0'}")
    k.line(f"{nan} = False")
    k.line(f"{cnt} = 0")
    w = _over_window(k, bounds)
    v = k.tmp("v")
    k.line(f"{v} = {x}[{n}, {c}, {', '.join(w)}]")
    if kind == "max":
        k.line(f"if {v} != {v}:")
        k.line(f"    {nan} = True")
        k.line(f"elif {v} > {acc}:")
        k.line(f"    {acc} = {v}")
    elif kind == "lp":
        k.line(f"{acc} += {v} ** {p['p_value']}")
    else:
        k.line(f"{acc} += {v}")
    k.line(f"{cnt} += 1")
    k.indent -= len(w)
    if kind == "max":
        k.line(f"{acc} = math.nan if {nan} else {acc}")
    elif kind == "avg":
        cip = p["count_include_pad"]
        k.line(f"{acc} = {acc} / ({padded if cip is None or cip else cnt})")
    elif kind == "lp" and p["p_value"] != 1:
        k.line(f"{acc} = math.copysign(abs({acc}) ** (1.0 / {p['p_value']}), {acc})")
    return acc


def _pool(k, node, ins, outs) -> ElemExpr:
    x = ins[0]
    return lambda idx: _pool_value(k, node, x, idx[0], idx[1], idx[2:])


def _covering(k, i: str, s: int, p: int, kern: str, o_size: str) -> tuple[str, str]:
    """Emit the range ``[first, last)`` of output indices whose window covers input index ``i``."""
    first, last = k.tmp("of"), k.tmp("ol")
    k.line(f"{first} = max(({i} + {p} - {kern}) // {s} + 1, 0)")
    k.line(f"{last} = min(({i} + {p}) // {s} + 1, {o_size})")
    return first, last


def _argmax_at(k, x: str, n: str, c: str, bounds: list[tuple[str, str]]) -> list[str]:
    """Emit the search of a window's first maximum (first NaN if any); return its position."""
    best, pos, found = k.tmp("b"), [k.tmp("am") for _ in bounds], k.tmp("f")
    k.line(f"{best} = -np.inf")
    k.line(f"{found} = False")
    for a, (lo, _) in zip(pos, bounds):
        k.line(f"{a} = {lo}")
    w = _over_window(k, bounds)
    v = k.tmp("v")
    k.line(f"{v} = {x}[{n}, {c}, {', '.join(w)}]")
    k.line(f"if not {found} and ({v} != {v} or {v} > {best}):")
    k.indent += 1
    for a, wi in zip(pos, w):
        k.line(f"{a} = {wi}")
    k.line(f"{best} = {v}")
    k.line(f"{found} = {v} != {v}")
    k.indent -= 1 + len(w)
    return pos


def _pool_backward(k, node, ins, outs) -> ElemExpr:
    """``dx[n, c, i]``: the sum over the covering windows of each window's share of ``dout``."""
    p = node.params
    kind = p["pool_type"]
    dout, x = ins[0], ins[1]
    kern, stride, _, pad = _geometry(k, node, x)
    pv = p["p_value"]

    def expr(idx: list[str]) -> str:
        n, c, i = idx[0], idx[1], idx[2:]
        acc = k.tmp("acc")
        k.line(f"{acc} = 0.0")
        ranges = [_covering(k, i[d], stride[d], pad[d], kern[d], f"{dout}.shape[{2 + d}]")
                  for d in range(len(i))]
        o = [k.tmp("o") for _ in i]
        for od, (first, last) in zip(o, ranges):
            k.line(f"for {od} in range({first}, {last}):")
            k.indent += 1
        g = f"{dout}[{n}, {c}, {', '.join(o)}]"
        if kind == "max":
            bounds, _ = _pool_window(k, node, x, o)
            pos = _argmax_at(k, x, n, c, bounds)
            k.line(f"if {' and '.join(f'{a} == {b}' for a, b in zip(pos, i))}:")
            k.line(f"    {acc} += {g}")
        elif kind == "avg":
            bounds, padded = _pool_window(k, node, x, o)
            cip = p["count_include_pad"]
            div = padded if cip is None or cip else " * ".join(f"({hi} - {lo})" for lo, hi in bounds)
            k.line(f"{acc} += {g} / ({div})")
        elif kind == "lp" and pv != 1:
            y = f"{ins[2]}[{n}, {c}, {', '.join(o)}]"
            k.line(f"{acc} += 0.0 if {y} == 0 else {g} * abs({y}) ** {1 - pv}")
        else:   # sum, lp with p = 1
            k.line(f"{acc} += {g}")
        k.indent -= len(o)
        if kind == "lp" and pv != 1:
            return f"{acc} * {x}[{', '.join(idx)}] ** {pv - 1}"
        return acc
    return expr


# --- convolution -------------------------------------------------------------------------------------


def _conv_geometry(k, node, x: str):
    p = node.params
    stride, dilate, pad = window_params(p, len(k.info[x].shape) - 2)
    return list(p["kernel"]), stride, dilate, pad, p["num_group"]


def conv_elements(k, node, ins, outs) -> ElemExpr:
    """``out[n, f, o] = bias[f] + sum over the group's channels and the kernel of x * w``."""
    x, w = ins[0], ins[1]
    kern, stride, dilate, pad, groups = _conv_geometry(k, node, x)
    bias = None if node.params["no_bias"] else ins[2]

    def expr(idx: list[str]) -> str:
        n, f, o = idx[0], idx[1], idx[2:]
        acc, cg, c0 = k.tmp("acc"), k.tmp("c"), k.tmp("c0")
        k.line(f"{acc} = 0.0")
        k.line(f"{c0} = ({f} // ({w}.shape[0] // {groups})) * {w}.shape[1]")
        k.line(f"for {cg} in range({w}.shape[1]):")
        k.indent += 1
        kk = open_loops(k, [str(v) for v in kern], "kk")
        pos = [k.tmp("q") for _ in o]
        for d, (q, od) in enumerate(zip(pos, o)):
            k.line(f"{q} = {od} * {stride[d]} - {pad[d]} + {kk[d]} * {dilate[d]}")
        inside = " and ".join(f"0 <= {q} < {x}.shape[{2 + d}]" for d, q in enumerate(pos))
        k.line(f"if {inside}:")
        k.line(f"    {acc} += {x}[{n}, {c0} + {cg}, {', '.join(pos)}] * {w}[{f}, {cg}, {', '.join(kk)}]")
        k.indent -= 1 + len(kk)
        return acc if bias is None else f"{acc} + {bias}[{f}]"
    return expr


def conv_data_elements(k, node, ins, outs) -> ElemExpr:
    """``dx[n, c, i]``: over the group's filters and the kernel offsets that map an output
    position onto ``i``, ``dout * w``."""
    dout, w, dx = ins[0], ins[2], outs[0]
    kern, stride, dilate, pad, groups = _conv_geometry(k, node, dx)

    def expr(idx: list[str]) -> str:
        n, c, i = idx[0], idx[1], idx[2:]
        acc, f, f0, fg, cg = k.tmp("acc"), k.tmp("f"), k.tmp("f0"), k.tmp("fg"), k.tmp("cg")
        k.line(f"{acc} = 0.0")
        k.line(f"{fg} = {w}.shape[0] // {groups}")
        k.line(f"{f0} = ({c} // {w}.shape[1]) * {fg}")
        k.line(f"{cg} = {c} % {w}.shape[1]")
        k.line(f"for {f} in range({f0}, {f0} + {fg}):")
        k.indent += 1
        kk = open_loops(k, [str(v) for v in kern], "kk")
        num, o = [k.tmp("t") for _ in i], [k.tmp("o") for _ in i]
        for d in range(len(i)):
            k.line(f"{num[d]} = {i[d]} + {pad[d]} - {kk[d]} * {dilate[d]}")
            k.line(f"{o[d]} = {num[d]} // {stride[d]}")
        ok = " and ".join(f"{num[d]} % {stride[d]} == 0 and 0 <= {o[d]} < {dout}.shape[{2 + d}]"
                          for d in range(len(i)))
        k.line(f"if {ok}:")
        k.line(f"    {acc} += {dout}[{n}, {f}, {', '.join(o)}] * {w}[{f}, {cg}, {', '.join(kk)}]")
        k.indent -= 1 + len(kk)
        return acc
    return expr


def with_bias(expr: ElemExpr, node, ins: list[str]) -> ElemExpr:
    """``expr + bias[c]`` (channel axis 1) unless the node has ``no_bias``."""
    if node.params["no_bias"]:
        return expr
    return lambda idx: f"({expr(idx)} + {ins[2]}[{idx[1]}])"


def deconv_elements(k, node, ins, outs) -> ElemExpr:
    """Deconvolution: the data gradient of the convolution it is the adjoint of, plus the bias."""
    view = conv_view(node, k.info[ins[0]].shape)
    return with_bias(conv_data_elements(k, view, [ins[0], outs[0], ins[1]], outs), node, ins)


def conv_weight_elements(k, node, ins, outs) -> ElemExpr:
    """``dw[f, cg, kk]``: over images and output positions, ``x * dout``."""
    dout, x, dw = ins[0], ins[1], outs[0]
    _, stride, dilate, pad, groups = _conv_geometry(k, node, x)

    def expr(idx: list[str]) -> str:
        f, cg, kk = idx[0], idx[1], idx[2:]
        acc, c = k.tmp("acc"), k.tmp("c")
        k.line(f"{acc} = 0.0")
        k.line(f"{c} = ({f} // ({dw}.shape[0] // {groups})) * {dw}.shape[1] + {cg}")
        n = open_loops(k, [f"{dout}.shape[0]"], "n")[0]
        o = open_loops(k, [f"{dout}.shape[{2 + d}]" for d in range(len(kk))], "o")
        pos = [k.tmp("q") for _ in kk]
        for d, q in enumerate(pos):
            k.line(f"{q} = {o[d]} * {stride[d]} - {pad[d]} + {kk[d]} * {dilate[d]}")
        inside = " and ".join(f"0 <= {q} < {x}.shape[{2 + d}]" for d, q in enumerate(pos))
        k.line(f"if {inside}:")
        k.line(f"    {acc} += {x}[{n}, {c}, {', '.join(pos)}] * {dout}[{n}, {f}, {', '.join(o)}]")
        k.indent -= 1 + len(o)
        return acc
    return expr


def _conv_bias(k, node, ins, outs) -> ElemExpr:
    """``db[f]``: the head gradient summed over every axis but 1."""
    dout = ins[0]
    nsp = len(k.info[dout].shape) - 2

    def expr(idx: list[str]) -> str:
        acc = k.tmp("acc")
        k.line(f"{acc} = {literal(0.0, k.info[outs[0]].dtype)}")
        rest = open_loops(k, [f"{dout}.shape[{d}]" for d in (0, *range(2, 2 + nsp))], "r")
        k.line(f"{acc} += {dout}[{rest[0]}, {idx[0]}, {', '.join(rest[1:])}]")
        k.indent -= len(rest)
        return acc
    return expr


rule("Pooling", ANY, _pool)
rule("_backward_Pooling", ANY, _pool_backward)
rule("Convolution", ANY, conv_elements, epilogue=True, gathers=True)
rule("_backward_Convolution_data", ANY, conv_data_elements)
rule("Deconvolution", ANY, deconv_elements)
rule("_backward_Convolution_weight", ANY, conv_weight_elements)
rule("_backward_Convolution_bias", ANY, _conv_bias)
