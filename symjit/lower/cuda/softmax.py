"""CUDA lowering of softmax, log_softmax, their gradients and SoftmaxOutput's forward: a block per
row when rows are long, else a thread per element.

The target-neutral rules (:mod:`symjit.lower.accumulate`) let every element recompute its row's
max and sum: O(K) work per element, O(K^2) per row of K classes. With rows of at least
:data:`MIN_ROW` entries, a block takes a row instead (blocks stride over the rows): its threads
stride over the row for the max, combine it in shared memory
(:func:`symjit.kernels.cuda.reduce.block_reduce`), do the same for the sum of exponentials (float64,
as the CPU kernels), then each writes its entries. The gradients sum ``dout * y`` (or ``dout``) over
the row the same way. softmax over valid lengths (``use_length``) keeps the per-element rule.
"""
from __future__ import annotations

from ...kernels.cuda import MAX_SHARED
from ...ops.rules import prod
from ..accumulate import SOFTMAX_ELEMENTS, inv_temperature, softmax_output_axes
from ..emit import dims
from ..rules import rule
from . import CUDATarget

MIN_ROW = 32   # rows at least this long get a block each


def _view(k, arr: str, before: str, mid: str, after: str) -> str:
    name = k.tmp("v")
    k.line(f"{name} = {arr}.reshape({before}, {mid}, {after})")
    return name


def _row_views(k, arrays: list[str], like: str, axes: tuple[int, ...]) -> tuple[list[str], str, int]:
    """(A, K, B) views of ``arrays`` (shaped like ``like``) with K the product of the contiguous
    ``axes``; returns the views, the source of the row count A * B, and its static value."""
    shape = k.info[like].shape
    nd, lo, hi = len(shape), axes[0], axes[-1] + 1
    before, mid, after = dims(like, range(lo)), dims(like, range(lo, hi)), dims(like, range(hi, nd))
    static = prod(shape[:lo]) * prod(shape[hi:])
    return [_view(k, a, before, mid, after) for a in arrays], f"({before}) * ({after})", static


def _row_extent(k, like: str, axes: tuple[int, ...]) -> int:
    return prod(k.info[like].shape[d] for d in axes)


def _open_rows(k, count: str, static: int, v3: str) -> tuple[str, str, str]:
    """Open this block's loop over rows; returns (a, b, buffer)."""
    buf = k.tmp("sh")
    k.line(f"{buf} = cuda.shared.array({MAX_SHARED}, numba.float64)")
    k.per_block = (count, static)
    r, a, b = k.tmp("r"), k.tmp("a"), k.tmp("b")
    k.line(f"for {r} in range(cuda.blockIdx.x, {count}, cuda.gridDim.x):")
    k.indent += 1
    k.line(f"{a} = {r} // {v3}.shape[2]")
    k.line(f"{b} = {r} % {v3}.shape[2]")
    return a, b, buf


def _each(k, v3: str) -> str:
    q = k.tmp("q")
    k.line(f"for {q} in range(cuda.threadIdx.x, {v3}.shape[1], cuda.blockDim.x):")
    k.indent += 1
    return q


def _reduce(k, buf: str, value: str, kind: str) -> None:
    fn = k.imp("symjit.kernels.cuda.reduce", "block_reduce")
    k.line(f"{value} = {fn}({buf}, {value}, {k.imp('symjit.kernels.cuda.reduce', kind)})")


def _forward_rows(k, x: str, out: str, axes: tuple[int, ...], scale: str, log: bool) -> None:
    (x3, o3), count, static = _row_views(k, [x, out], x, axes)
    a, b, buf = _open_rows(k, count, static, x3)
    m, s = k.tmp("m"), k.tmp("s")
    dt = k.info[x].dtype.name
    val = f"{x3}[{a}, {{q}}, {b}] * np.{dt}({scale})"
    k.line(f"{m} = -np.inf")
    q = _each(k, x3)
    k.line(f"{m} = max({m}, {val.format(q=q)})")
    k.indent -= 1
    _reduce(k, buf, m, "MAX")
    k.line(f"{s} = 0.0")
    q = _each(k, x3)
    k.line(f"{s} += math.exp({val.format(q=q)} - {m})")
    k.indent -= 1
    _reduce(k, buf, s, "SUM")
    q = _each(k, x3)
    own = f"{val.format(q=q)} - {m}"
    k.line(f"{o3}[{a}, {q}, {b}] = " + (f"{own} - math.log({s})" if log else f"math.exp({own}) / {s}"))
    k.indent -= 2


def _softmax_block(log: bool):
    fallback = SOFTMAX_ELEMENTS[("forward", log)]

    def emit(k, node, ins, outs):
        x = ins[0]
        ax = node.params["axis"] % len(k.info[x].shape)
        if node.params["use_length"] or _row_extent(k, x, (ax,)) < MIN_ROW:
            return fallback(k, node, ins, outs)
        _forward_rows(k, x, outs[0], (ax,), inv_temperature(k, node), log)
        return None
    return emit


def _softmax_backward_block(log: bool):
    fallback = SOFTMAX_ELEMENTS[("backward", log)]

    def emit(k, node, ins, outs):
        g, y = ins[0], ins[1]
        ax = node.params["axis"] % len(k.info[y].shape)
        if node.params["use_length"] or _row_extent(k, y, (ax,)) < MIN_ROW:
            return fallback(k, node, ins, outs)
        (g3, y3, d3), count, static = _row_views(k, [g, y, outs[0]], y, (ax,))
        a, b, buf = _open_rows(k, count, static, y3)
        s, it = k.tmp("s"), inv_temperature(k, node)
        k.line(f"{s} = 0.0")
        q = _each(k, y3)
        k.line(f"{s} += {g3}[{a}, {q}, {b}]" + ("" if log else f" * {y3}[{a}, {q}, {b}]"))
        k.indent -= 1
        _reduce(k, buf, s, "SUM")
        q = _each(k, y3)
        gv, yv = f"{g3}[{a}, {q}, {b}]", f"{y3}[{a}, {q}, {b}]"
        value = f"({gv} - math.exp({yv}) * {s}) * {it}" if log else f"{yv} * ({gv} - {s}) * {it}"
        k.line(f"{d3}[{a}, {q}, {b}] = {value}")
        k.indent -= 2
        return None
    return emit


def _softmax_output_block(k, node, ins, outs):
    x = ins[0]
    axes = softmax_output_axes(node, len(k.info[x].shape))
    if _row_extent(k, x, axes) < MIN_ROW:
        return SOFTMAX_ELEMENTS["SoftmaxOutput"](k, node, ins, outs)
    _forward_rows(k, x, outs[0], axes, "1.0", False)
    return None


rule("softmax", CUDATarget, _softmax_block(False))
rule("log_softmax", CUDATarget, _softmax_block(True))
rule("_backward_softmax", CUDATarget, _softmax_backward_block(False))
rule("_backward_log_softmax", CUDATarget, _softmax_backward_block(True))
rule("SoftmaxOutput", CUDATarget, _softmax_output_block)
