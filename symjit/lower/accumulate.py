"""Target-neutral lowerings that compute each output element by a serial accumulation: the
reductions, norm, the matrix products (FullyConnected, dot, batch_dot) and Embedding's row lookup.

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

from ..ops.reduce import reduced_axes
from ..ops.shape_grad import clip_index
from .emit import dims, flat_index, open_loops
from .rules import ANY, ElemExpr, rule

__all__ = ["init_value", "REDUCE_STEP"]


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


def _input_index(idx: list[str], axes: tuple[int, ...], nd: int, keepdims: bool, red: list[str]) -> str:
    """The input index of output index ``idx`` (kept axes) and reduction indices ``red``."""
    kept = [d for d in range(nd) if d not in axes]
    at = {d: idx[d] for d in kept} if keepdims else {d: idx[j] for j, d in enumerate(kept)}
    at.update(zip(axes, red))
    return ", ".join(at[d] for d in range(nd))


def _reduce(name: str):
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
            k.line(f"{v} = {x}[{_input_index(idx, axes, nd, p['keepdims'], red)}]")
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
            k.line(f"{best} = {x}[{_input_index(idx, axes, nd, keep, ['0'] * len(axes))}]")
            k.line(f"{arg} = 0")
            k.line(f"{pos} = 0")
            red = open_loops(k, [f"{x}.shape[{d}]" for d in axes], "r")
            k.line(f"{v} = {x}[{_input_index(idx, axes, nd, keep, red)}]")
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
        k.line(f"{v} = float({x}[{_input_index(idx, axes, nd, node.params['keepdims'], red)}])")
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


def _fc(k, node, ins, outs) -> ElemExpr:
    x, w, out = ins[0], ins[1], outs[0]
    x2 = k.tmp("x")
    flat = node.params["flatten"]
    k.line(f"{x2} = {x}.reshape({x}.shape[0], -1)" if flat else f"{x2} = {x}.reshape(-1, {x}.shape[-1])")
    rows = 1 if flat else len(k.info[out].shape) - 1
    bias = None if node.params["no_bias"] else ins[2]
    return _product(k, out, x2, w, rows, False, True, f"{w}.shape[1]", bias)


def _dot(k, node, ins, outs) -> ElemExpr:
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
    a, b = k.tmp("a"), k.tmp("b")
    k.line(f"{a} = {lhs}.reshape({lhs}.shape[0], -1)" if ta else f"{a} = {lhs}.reshape(-1, {lhs}.shape[-1])")
    k.line(f"{b} = {rhs}.reshape(-1, {rhs}.shape[-1])" if tb else f"{b} = {rhs}.reshape({rhs}.shape[0], -1)")
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


for _name in ("sum", "mean", "max", "min", "nansum", "prod", "nanprod"):
    rule(_name, ANY, _reduce(_name))
rule("argmax", ANY, _arg("argmax"))
rule("argmin", ANY, _arg("argmin"))
rule("norm", ANY, _norm)
rule("FullyConnected", ANY, _fc, epilogue=True)
rule("dot", ANY, _dot, epilogue=True)
rule("batch_dot", ANY, _batch_dot, epilogue=True)
rule("Embedding", ANY, _embedding)
